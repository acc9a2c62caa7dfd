// Buffer: a contiguous range of bytes that keeps its memory alive.
//
// A Buffer never copies. It either owns memory from a MemoryPool
// (PoolBuffer, returned by AllocateBuffer) or views memory that belongs to an
// `owner` object which the Buffer keeps alive through a shared_ptr: a parent
// Buffer for a slice, a mapped region, an imported C Data array, an IPC input
// buffer. Buffers are immutable after construction except for the bytes of a
// mutable buffer; concurrent reads are safe, concurrent writes are the
// caller's business.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quiver/columnar/memory_pool.h"
#include "quiver/util/result.h"

namespace quiver {

class Buffer {
 public:
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // A read-only view of [data, data + size). `owner` (may be null) is kept
  // alive for as long as this Buffer lives.
  static std::shared_ptr<Buffer> Wrap(const uint8_t* data, int64_t size,
                                      std::shared_ptr<const void> owner = nullptr);
  // Read-only views of many ranges, made with one allocation for all of
  // them (a batch of objects read at once): each keeps every view of the
  // batch, and `owner`, alive.
  static std::vector<std::shared_ptr<Buffer>> WrapAll(
      const std::vector<std::pair<const uint8_t*, int64_t>>& views,
      const std::shared_ptr<const void>& owner);
  // A writable view of foreign memory; same lifetime rule as Wrap.
  static std::shared_ptr<Buffer> WrapMutable(uint8_t* data, int64_t size,
                                             std::shared_ptr<const void> owner = nullptr);
  // Zero-copy slice of `parent`, which it keeps alive. The range must lie
  // inside the parent (checked; use SliceSafe for untrusted ranges).
  static std::shared_ptr<Buffer> Slice(const std::shared_ptr<Buffer>& parent,
                                       int64_t offset, int64_t length);
  static Result<std::shared_ptr<Buffer>> SliceSafe(const std::shared_ptr<Buffer>& parent,
                                                   int64_t offset, int64_t length);
  // A buffer that owns a std::string's bytes (moved in, not copied).
  static std::shared_ptr<Buffer> FromString(std::string data);

  const uint8_t* data() const { return data_; }
  uint8_t* mutable_data() { return is_mutable_ ? const_cast<uint8_t*>(data_) : nullptr; }
  int64_t size() const { return size_; }
  int64_t capacity() const { return capacity_; }
  bool is_mutable() const { return is_mutable_; }
  std::string_view view() const {
    return {reinterpret_cast<const char*>(data_), static_cast<size_t>(size_)};
  }
  std::string ToString() const { return std::string(view()); }
  // Byte-wise equality of the first size() bytes.
  bool Equals(const Buffer& other) const;
  bool Equals(const Buffer& other, int64_t nbytes) const;
  const std::shared_ptr<const void>& owner() const { return owner_; }

  template <typename T>
  const T* data_as() const {
    return reinterpret_cast<const T*>(data_);
  }
  template <typename T>
  T* mutable_data_as() {
    return reinterpret_cast<T*>(mutable_data());
  }

 protected:
  Buffer(const uint8_t* data, int64_t size, bool is_mutable,
         std::shared_ptr<const void> owner)
      : data_(data),
        size_(size),
        capacity_(size),
        is_mutable_(is_mutable),
        owner_(std::move(owner)) {}

  const uint8_t* data_;
  int64_t size_;
  int64_t capacity_;
  bool is_mutable_;
  std::shared_ptr<const void> owner_;
};

// A mutable buffer whose memory comes from a MemoryPool and can grow.
// Capacity is always a multiple of 64 bytes; bytes beyond size() up to
// capacity() are zeroed by ZeroPadding() (the IPC writer and builders call it).
class ResizableBuffer : public Buffer {
 public:
  ~ResizableBuffer() override;

  // Sets size(), growing capacity if needed. Newly exposed bytes are
  // unspecified. With shrink_to_fit, a smaller size returns memory.
  Status Resize(int64_t new_size, bool shrink_to_fit = true);
  // Grows capacity to at least `new_capacity` without changing size().
  Status Reserve(int64_t new_capacity);
  // Zeroes the bytes in [size(), capacity()).
  void ZeroPadding();
  MemoryPool* pool() const { return pool_; }

 private:
  friend Result<std::shared_ptr<ResizableBuffer>> AllocateResizableBuffer(int64_t,
                                                                          MemoryPool*);
  explicit ResizableBuffer(MemoryPool* pool);
  MemoryPool* pool_;
};

// A resizable buffer of `size` bytes from `pool` (default pool if null).
Result<std::shared_ptr<ResizableBuffer>> AllocateResizableBuffer(
    int64_t size, MemoryPool* pool = nullptr);
// Same, returned as a plain Buffer.
Result<std::shared_ptr<Buffer>> AllocateBuffer(int64_t size, MemoryPool* pool = nullptr);
// A buffer of `size` bytes, all zero.
Result<std::shared_ptr<Buffer>> AllocateZeroedBuffer(int64_t size,
                                                     MemoryPool* pool = nullptr);
// A copy of `size` bytes at `data` in memory from `pool`.
Result<std::shared_ptr<Buffer>> CopyBuffer(const uint8_t* data, int64_t size,
                                           MemoryPool* pool = nullptr);

// Rounds up to a multiple of 64 (the padding the Arrow format recommends).
constexpr int64_t RoundUpToMultipleOf64(int64_t n) { return (n + 63) & ~int64_t{63}; }
constexpr int64_t RoundUpToMultipleOf8(int64_t n) { return (n + 7) & ~int64_t{7}; }

}  // namespace quiver
