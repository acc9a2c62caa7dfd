// Output streams: pool buffer, fixed memory, file descriptor, counter.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "quiver/columnar/io.h"

namespace quiver::io {

namespace {

Status CheckWrite(bool closed, const void* data, int64_t nbytes) {
  if (closed) return Status::Invalid("write to a closed output stream");
  if (nbytes < 0) return Status::Invalid("negative write size ", nbytes);
  if (nbytes > 0 && data == nullptr) return Status::Invalid("write from a null pointer");
  return Status::OK();
}

}  // namespace

// ---------------------------------------------------------------------------
// BufferOutputStream

Result<std::unique_ptr<BufferOutputStream>> BufferOutputStream::Create(
    int64_t initial_capacity, MemoryPool* pool) {
  if (initial_capacity < 0) {
    return Status::Invalid("negative initial capacity ", initial_capacity);
  }
  QUIVER_ASSIGN_OR_RAISE(auto buffer, AllocateResizableBuffer(0, pool));
  QUIVER_RETURN_NOT_OK(buffer->Reserve(initial_capacity));
  return std::unique_ptr<BufferOutputStream>(new BufferOutputStream(std::move(buffer)));
}

Status BufferOutputStream::Reserve(int64_t nbytes) {
  if (nbytes > std::numeric_limits<int64_t>::max() / 2 - position_) {
    return Status::CapacityError("buffer output stream of ", position_,
                                 " bytes cannot grow by ", nbytes);
  }
  int64_t needed = position_ + nbytes;
  if (needed <= buffer_->capacity()) return Status::OK();
  // Doubling keeps the total copy cost of growth linear.
  return buffer_->Reserve(std::max(needed, buffer_->capacity() * 2));
}

Status BufferOutputStream::Write(const void* data, int64_t nbytes) {
  QUIVER_RETURN_NOT_OK(CheckWrite(closed(), data, nbytes));
  if (nbytes == 0) return Status::OK();
  QUIVER_RETURN_NOT_OK(Reserve(nbytes));
  std::memcpy(buffer_->mutable_data() + position_, data, static_cast<size_t>(nbytes));
  position_ += nbytes;
  return Status::OK();
}

Result<std::shared_ptr<Buffer>> BufferOutputStream::Finish() {
  if (closed()) return Status::Invalid("BufferOutputStream::Finish on a closed stream");
  // No shrink: that would copy everything once more.
  QUIVER_RETURN_NOT_OK(buffer_->Resize(position_, /*shrink_to_fit=*/false));
  buffer_->ZeroPadding();
  std::shared_ptr<Buffer> out = std::move(buffer_);
  buffer_ = nullptr;
  return out;
}

Status BufferOutputStream::Close() {
  if (closed()) return Status::OK();
  return Finish().status();
}

// ---------------------------------------------------------------------------
// FixedSizeBufferWriter

FixedSizeBufferWriter::FixedSizeBufferWriter(std::shared_ptr<Buffer> buffer)
    : keep_alive_(std::move(buffer)),
      data_(keep_alive_ ? keep_alive_->mutable_data() : nullptr),
      size_(data_ ? keep_alive_->size() : 0) {}

Status FixedSizeBufferWriter::Write(const void* data, int64_t nbytes) {
  QUIVER_RETURN_NOT_OK(CheckWrite(closed_, data, nbytes));
  if (QUIVER_PREDICT_FALSE(nbytes > size_ - position_)) {
    return Status::CapacityError("write of ", nbytes, " bytes at position ", position_,
                                 " overflows a fixed buffer of ", size_, " bytes");
  }
  if (nbytes > 0) std::memcpy(data_ + position_, data, static_cast<size_t>(nbytes));
  position_ += nbytes;
  return Status::OK();
}

// ---------------------------------------------------------------------------
// FileOutputStream

Result<std::unique_ptr<FileOutputStream>> FileOutputStream::Open(const std::string& path,
                                                                 bool append) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) return Status::FromErrno(errno, "open '" + path + "' for writing");
  return std::unique_ptr<FileOutputStream>(new FileOutputStream(fd, true, path));
}

Result<std::unique_ptr<FileOutputStream>> FileOutputStream::FromFd(int fd, bool owns_fd) {
  if (fd < 0) return Status::Invalid("invalid file descriptor ", fd);
  return std::unique_ptr<FileOutputStream>(
      new FileOutputStream(fd, owns_fd, "fd " + std::to_string(fd)));
}

FileOutputStream::~FileOutputStream() {
  if (fd_ >= 0 && owns_fd_) ::close(fd_);
}

Status FileOutputStream::Write(const void* data, int64_t nbytes) {
  QUIVER_RETURN_NOT_OK(CheckWrite(closed(), data, nbytes));
  const auto* p = static_cast<const uint8_t*>(data);
  while (nbytes > 0) {
    // Linux writes at most ~2 GiB per call; loop for partial writes too.
    size_t chunk = static_cast<size_t>(std::min<int64_t>(nbytes, int64_t{1} << 30));
    ssize_t n = ::write(fd_, p, chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "write to '" + name_ + "'");
    }
    p += n;
    nbytes -= n;
    position_ += n;
  }
  return Status::OK();
}

Status FileOutputStream::Close() {
  if (fd_ < 0) return Status::OK();
  int fd = fd_;
  fd_ = -1;
  if (owns_fd_ && ::close(fd) != 0) {
    return Status::FromErrno(errno, "close '" + name_ + "'");
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// CountingOutputStream

Status CountingOutputStream::Write(const void*, int64_t nbytes) {
  if (closed_) return Status::Invalid("write to a closed output stream");
  if (nbytes < 0) return Status::Invalid("negative write size ", nbytes);
  position_ += nbytes;
  return Status::OK();
}

}  // namespace quiver::io
