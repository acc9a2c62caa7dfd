#include "quiver/columnar/buffer.h"

#include <cstdlib>
#include <new>

namespace quiver {

namespace {
// A Buffer subclass with a public constructor, for the static factories.
class ViewBuffer final : public Buffer {
 public:
  ViewBuffer(const uint8_t* data, int64_t size, bool is_mutable,
             std::shared_ptr<const void> owner)
      : Buffer(data, size, is_mutable, std::move(owner)) {}
};

// The views of one WrapAll, in one allocation.
class ViewBlock {
 public:
  explicit ViewBlock(size_t n)
      : views_(static_cast<ViewBuffer*>(::operator new(n * sizeof(ViewBuffer)))) {}
  ~ViewBlock() {
    for (size_t i = made_; i-- > 0;) views_[i].~ViewBuffer();
    ::operator delete(views_);
  }
  ViewBlock(const ViewBlock&) = delete;
  ViewBlock& operator=(const ViewBlock&) = delete;
  ViewBuffer* Add(const uint8_t* data, int64_t size,
                  const std::shared_ptr<const void>& owner) {
    return new (&views_[made_++]) ViewBuffer(data, size, false, owner);
  }

 private:
  ViewBuffer* views_;
  size_t made_ = 0;
};
}  // namespace

std::shared_ptr<Buffer> Buffer::Wrap(const uint8_t* data, int64_t size,
                                     std::shared_ptr<const void> owner) {
  return std::make_shared<ViewBuffer>(data, size, false, std::move(owner));
}

std::vector<std::shared_ptr<Buffer>> Buffer::WrapAll(
    const std::vector<std::pair<const uint8_t*, int64_t>>& views,
    const std::shared_ptr<const void>& owner) {
  std::vector<std::shared_ptr<Buffer>> out;
  if (views.empty()) return out;
  out.reserve(views.size());
  auto block = std::make_shared<ViewBlock>(views.size());
  for (const auto& [data, size] : views) {
    out.emplace_back(block, block->Add(data, size, owner));
  }
  return out;
}

std::shared_ptr<Buffer> Buffer::WrapMutable(uint8_t* data, int64_t size,
                                            std::shared_ptr<const void> owner) {
  return std::make_shared<ViewBuffer>(data, size, true, std::move(owner));
}

std::shared_ptr<Buffer> Buffer::Slice(const std::shared_ptr<Buffer>& parent,
                                      int64_t offset, int64_t length) {
  auto r = SliceSafe(parent, offset, length);
  r.status().Abort("Buffer::Slice");
  return r.MoveValueUnsafe();
}

Result<std::shared_ptr<Buffer>> Buffer::SliceSafe(const std::shared_ptr<Buffer>& parent,
                                                  int64_t offset, int64_t length) {
  if (parent == nullptr) return Status::Invalid("slice of a null buffer");
  if (offset < 0 || length < 0 || offset > parent->size() ||
      length > parent->size() - offset) {
    return Status::IndexError("buffer slice [", offset, ", +", length,
                              ") is outside a buffer of ", parent->size(), " bytes");
  }
  return std::shared_ptr<Buffer>(std::make_shared<ViewBuffer>(
      parent->data() + offset, length, parent->is_mutable(), parent));
}

std::shared_ptr<Buffer> Buffer::FromString(std::string data) {
  auto holder = std::make_shared<std::string>(std::move(data));
  const auto* p = reinterpret_cast<const uint8_t*>(holder->data());
  int64_t n = static_cast<int64_t>(holder->size());
  return Wrap(p, n, std::move(holder));
}

bool Buffer::Equals(const Buffer& other) const {
  return size_ == other.size_ && Equals(other, size_);
}

bool Buffer::Equals(const Buffer& other, int64_t nbytes) const {
  if (nbytes > size_ || nbytes > other.size_) return false;
  if (data_ == other.data_ || nbytes == 0) return true;
  return std::memcmp(data_, other.data_, static_cast<size_t>(nbytes)) == 0;
}

ResizableBuffer::ResizableBuffer(MemoryPool* pool)
    : Buffer(ZeroSizeArea(), 0, true, nullptr), pool_(pool) {
  capacity_ = 0;
}

ResizableBuffer::~ResizableBuffer() {
  if (data_ != ZeroSizeArea()) {
    pool_->Free(const_cast<uint8_t*>(data_), capacity_, kDefaultBufferAlignment);
  }
}

Status ResizableBuffer::Reserve(int64_t new_capacity) {
  if (new_capacity < 0) return Status::Invalid("negative buffer capacity");
  if (new_capacity <= capacity_) return Status::OK();
  int64_t rounded = RoundUpToMultipleOf64(new_capacity);
  uint8_t* p = const_cast<uint8_t*>(data_);
  if (capacity_ == 0) {
    QUIVER_RETURN_NOT_OK(pool_->Allocate(rounded, kDefaultBufferAlignment, &p));
  } else {
    QUIVER_RETURN_NOT_OK(
        pool_->Reallocate(capacity_, rounded, kDefaultBufferAlignment, &p));
  }
  data_ = p;
  capacity_ = rounded;
  return Status::OK();
}

Status ResizableBuffer::Resize(int64_t new_size, bool shrink_to_fit) {
  if (new_size < 0) return Status::Invalid("negative buffer size");
  if (new_size > capacity_) {
    QUIVER_RETURN_NOT_OK(Reserve(new_size));
  } else if (shrink_to_fit && RoundUpToMultipleOf64(new_size) < capacity_) {
    int64_t rounded = RoundUpToMultipleOf64(new_size);
    uint8_t* p = const_cast<uint8_t*>(data_);
    QUIVER_RETURN_NOT_OK(
        pool_->Reallocate(capacity_, rounded, kDefaultBufferAlignment, &p));
    data_ = p;
    capacity_ = rounded;
  }
  size_ = new_size;
  return Status::OK();
}

void ResizableBuffer::ZeroPadding() {
  if (capacity_ > size_) {
    std::memset(const_cast<uint8_t*>(data_) + size_, 0,
                static_cast<size_t>(capacity_ - size_));
  }
}

Result<std::shared_ptr<ResizableBuffer>> AllocateResizableBuffer(int64_t size,
                                                                 MemoryPool* pool) {
  if (pool == nullptr) pool = default_memory_pool();
  std::shared_ptr<ResizableBuffer> buf(new ResizableBuffer(pool));
  QUIVER_RETURN_NOT_OK(buf->Resize(size));
  return buf;
}

Result<std::shared_ptr<Buffer>> AllocateBuffer(int64_t size, MemoryPool* pool) {
  QUIVER_ASSIGN_OR_RAISE(auto buf, AllocateResizableBuffer(size, pool));
  return std::shared_ptr<Buffer>(std::move(buf));
}

Result<std::shared_ptr<Buffer>> AllocateZeroedBuffer(int64_t size, MemoryPool* pool) {
  QUIVER_ASSIGN_OR_RAISE(auto buf, AllocateResizableBuffer(size, pool));
  if (buf->capacity() > 0) {
    std::memset(buf->mutable_data(), 0, static_cast<size_t>(buf->capacity()));
  }
  return std::shared_ptr<Buffer>(std::move(buf));
}

Result<std::shared_ptr<Buffer>> CopyBuffer(const uint8_t* data, int64_t size,
                                           MemoryPool* pool) {
  QUIVER_ASSIGN_OR_RAISE(auto buf, AllocateResizableBuffer(size, pool));
  if (size > 0) std::memcpy(buf->mutable_data(), data, static_cast<size_t>(size));
  buf->ZeroPadding();
  return std::shared_ptr<Buffer>(std::move(buf));
}

}  // namespace quiver
