// Input streams and whole-file access: file descriptors, buffers, mmap.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "quiver/columnar/io.h"

namespace quiver::io {

namespace {

// The first allocation of a large Read(); later ones double. A stream that
// claims gigabytes but holds a few bytes therefore allocates little.
constexpr int64_t kInitialReadChunk = int64_t{1} << 20;

Status CheckRead(bool closed, int64_t nbytes) {
  if (closed) return Status::Invalid("read from a closed input stream");
  if (nbytes < 0) return Status::Invalid("negative read size ", nbytes);
  return Status::OK();
}

// Reads until `nbytes` bytes or end of file; returns the count.
Result<int64_t> ReadFully(int fd, const std::string& name, uint8_t* out, int64_t nbytes) {
  int64_t done = 0;
  while (done < nbytes) {
    size_t chunk =
        static_cast<size_t>(std::min<int64_t>(nbytes - done, int64_t{1} << 30));
    ssize_t n = ::read(fd, out + done, chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "read from '" + name + "'");
    }
    if (n == 0) break;
    done += n;
  }
  return done;
}

// Keeps a memory mapping alive for the Buffers that view it.
class Mapping {
 public:
  Mapping(void* addr, size_t length) : addr_(addr), length_(length) {}
  ~Mapping() { ::munmap(addr_, length_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

 private:
  void* addr_;
  size_t length_;
};

class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Result<int64_t> FileSize(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, "stat '" + path + "'");
  if (!S_ISREG(st.st_mode)) return Status::IOError("'", path, "' is not a regular file");
  return static_cast<int64_t>(st.st_size);
}

}  // namespace

// ---------------------------------------------------------------------------
// FileInputStream

Result<std::unique_ptr<FileInputStream>> FileInputStream::Open(const std::string& path,
                                                               MemoryPool* pool) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open '" + path + "' for reading");
  return std::unique_ptr<FileInputStream>(
      new FileInputStream(fd, true, pool ? pool : default_memory_pool(), path));
}

Result<std::unique_ptr<FileInputStream>> FileInputStream::FromFd(int fd, bool owns_fd,
                                                                 MemoryPool* pool) {
  if (fd < 0) return Status::Invalid("invalid file descriptor ", fd);
  return std::unique_ptr<FileInputStream>(new FileInputStream(
      fd, owns_fd, pool ? pool : default_memory_pool(), "fd " + std::to_string(fd)));
}

FileInputStream::~FileInputStream() {
  if (fd_ >= 0 && owns_fd_) ::close(fd_);
}

Result<int64_t> FileInputStream::Read(int64_t nbytes, void* out) {
  QUIVER_RETURN_NOT_OK(CheckRead(closed(), nbytes));
  QUIVER_ASSIGN_OR_RAISE(int64_t n,
                         ReadFully(fd_, name_, static_cast<uint8_t*>(out), nbytes));
  position_ += n;
  return n;
}

Result<std::shared_ptr<Buffer>> FileInputStream::Read(int64_t nbytes) {
  QUIVER_RETURN_NOT_OK(CheckRead(closed(), nbytes));
  QUIVER_ASSIGN_OR_RAISE(
      auto buffer, AllocateResizableBuffer(std::min(nbytes, kInitialReadChunk), pool_));
  int64_t done = 0;
  while (done < nbytes) {
    if (done == buffer->size()) {
      int64_t grown = std::min(nbytes, std::max(buffer->size() * 2, kInitialReadChunk));
      QUIVER_RETURN_NOT_OK(buffer->Resize(grown, /*shrink_to_fit=*/false));
    }
    QUIVER_ASSIGN_OR_RAISE(int64_t n, ReadFully(fd_, name_, buffer->mutable_data() + done,
                                                buffer->size() - done));
    done += n;
    position_ += n;
    if (done < buffer->size()) break;  // end of file
  }
  QUIVER_RETURN_NOT_OK(buffer->Resize(done, /*shrink_to_fit=*/false));
  buffer->ZeroPadding();
  return std::shared_ptr<Buffer>(std::move(buffer));
}

Status FileInputStream::Close() {
  if (fd_ < 0) return Status::OK();
  int fd = fd_;
  fd_ = -1;
  if (owns_fd_ && ::close(fd) != 0)
    return Status::FromErrno(errno, "close '" + name_ + "'");
  return Status::OK();
}

// ---------------------------------------------------------------------------
// BufferInputStream

Result<std::shared_ptr<Buffer>> BufferInputStream::Read(int64_t nbytes) {
  QUIVER_RETURN_NOT_OK(CheckRead(closed_, nbytes));
  int64_t n = std::min(nbytes, buffer_->size() - position_);
  QUIVER_ASSIGN_OR_RAISE(auto out, Buffer::SliceSafe(buffer_, position_, n));
  position_ += n;
  return out;
}

Result<int64_t> BufferInputStream::Read(int64_t nbytes, void* out) {
  QUIVER_RETURN_NOT_OK(CheckRead(closed_, nbytes));
  int64_t n = std::min(nbytes, buffer_->size() - position_);
  if (n > 0) std::memcpy(out, buffer_->data() + position_, static_cast<size_t>(n));
  position_ += n;
  return n;
}

// ---------------------------------------------------------------------------
// Whole files

Result<std::shared_ptr<Buffer>> MemoryMapFile(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return Status::FromErrno(errno, "open '" + path + "' for mapping");
  QUIVER_ASSIGN_OR_RAISE(int64_t size, FileSize(fd.get(), path));
  // mmap of length 0 fails with EINVAL, so empty files get an empty buffer.
  if (size == 0) return Buffer::Wrap(ZeroSizeArea(), 0);
  void* addr =
      ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, fd.get(), 0);
  if (addr == MAP_FAILED) return Status::FromErrno(errno, "mmap '" + path + "'");
  auto mapping = std::make_shared<Mapping>(addr, static_cast<size_t>(size));
  return Buffer::Wrap(static_cast<const uint8_t*>(addr), size, std::move(mapping));
}

Result<std::shared_ptr<Buffer>> ReadWholeFile(const std::string& path, MemoryPool* pool) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return Status::FromErrno(errno, "open '" + path + "' for reading");
  QUIVER_ASSIGN_OR_RAISE(int64_t size, FileSize(fd.get(), path));
  QUIVER_ASSIGN_OR_RAISE(auto buffer, AllocateResizableBuffer(size, pool));
  QUIVER_ASSIGN_OR_RAISE(int64_t n,
                         ReadFully(fd.get(), path, buffer->mutable_data(), size));
  if (n != size) {
    return Status::IOError("'", path, "' shrank while being read: ", n, " of ", size,
                           " bytes");
  }
  buffer->ZeroPadding();
  return std::shared_ptr<Buffer>(std::move(buffer));
}

}  // namespace quiver::io
