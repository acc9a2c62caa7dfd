// Byte sinks and sources for the IPC writer and reader.
//
// OutputStream is where serialised bytes go: a growing pool buffer
// (BufferOutputStream), caller-provided memory (FixedSizeBufferWriter), a
// file descriptor (FileOutputStream) or nowhere at all, only counting
// (CountingOutputStream, to size an output before allocating it).
// InputStream is a sequential source read in pieces: a file descriptor such as
// a pipe or stdin (FileInputStream, which copies) or a Buffer
// (BufferInputStream, which slices without copying). MemoryMapFile maps a
// whole file read-only as one Buffer, the zero-copy way to read IPC files.
//
// Streams are not thread-safe: one writer or reader at a time. Errors from
// the operating system carry errno (Status::FromErrno).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "quiver/columnar/buffer.h"
#include "quiver/util/result.h"

namespace quiver::io {

// ---------------------------------------------------------------------------
// Output

class OutputStream {
 public:
  virtual ~OutputStream() = default;
  // Appends `nbytes` bytes from `data`. All or nothing is not guaranteed for
  // files: after an error the stream's contents are unspecified.
  virtual Status Write(const void* data, int64_t nbytes) = 0;
  Status Write(const Buffer& buffer) { return Write(buffer.data(), buffer.size()); }
  Status Write(const std::shared_ptr<Buffer>& buffer) { return Write(*buffer); }
  // Bytes written since the stream was opened.
  virtual Result<int64_t> Tell() const = 0;
  // Flushes and releases the sink; later writes fail. Idempotent.
  virtual Status Close() = 0;
  virtual bool closed() const = 0;
};

// Writes into a growing ResizableBuffer from a MemoryPool; Finish() hands the
// buffer over.
class BufferOutputStream final : public OutputStream {
 public:
  // `pool` null means default_memory_pool().
  static Result<std::unique_ptr<BufferOutputStream>> Create(
      int64_t initial_capacity = 4096, MemoryPool* pool = nullptr);
  using OutputStream::Write;
  Status Write(const void* data, int64_t nbytes) override;
  Result<int64_t> Tell() const override { return position_; }
  // Same as Finish() with the result dropped.
  Status Close() override;
  bool closed() const override { return buffer_ == nullptr; }
  // The bytes written so far as one Buffer (capacity padding zeroed); the
  // stream is closed afterwards.
  Result<std::shared_ptr<Buffer>> Finish();
  int64_t capacity() const { return buffer_ ? buffer_->capacity() : 0; }

 private:
  explicit BufferOutputStream(std::shared_ptr<ResizableBuffer> buffer)
      : buffer_(std::move(buffer)) {}
  Status Reserve(int64_t nbytes);

  std::shared_ptr<ResizableBuffer> buffer_;
  int64_t position_ = 0;
};

// Writes into memory that the caller provides and keeps alive; Write is a
// bounds check and a memcpy, so serialising into preallocated (possibly
// shared) memory costs what copying costs. Writing past the end fails with
// CapacityError and writes nothing.
class FixedSizeBufferWriter final : public OutputStream {
 public:
  FixedSizeBufferWriter(uint8_t* data, int64_t size) : data_(data), size_(size) {}
  // `buffer` must be mutable; it is kept alive by the writer.
  explicit FixedSizeBufferWriter(std::shared_ptr<Buffer> buffer);

  using OutputStream::Write;
  Status Write(const void* data, int64_t nbytes) override;
  Result<int64_t> Tell() const override { return position_; }
  Status Close() override {
    closed_ = true;
    return Status::OK();
  }
  bool closed() const override { return closed_; }
  int64_t size() const { return size_; }

 private:
  std::shared_ptr<Buffer> keep_alive_;
  uint8_t* data_;
  int64_t size_;
  int64_t position_ = 0;
  bool closed_ = false;
};

// Writes to a file descriptor. Open() creates or truncates a file (mode 0644);
// FromFd() wraps an existing descriptor such as stdout.
class FileOutputStream final : public OutputStream {
 public:
  static Result<std::unique_ptr<FileOutputStream>> Open(const std::string& path,
                                                        bool append = false);
  // With `owns_fd` the descriptor is closed by Close() and the destructor.
  static Result<std::unique_ptr<FileOutputStream>> FromFd(int fd, bool owns_fd = false);
  ~FileOutputStream() override;

  using OutputStream::Write;
  Status Write(const void* data, int64_t nbytes) override;
  Result<int64_t> Tell() const override { return position_; }
  Status Close() override;
  bool closed() const override { return fd_ < 0; }
  int fd() const { return fd_; }

 private:
  FileOutputStream(int fd, bool owns_fd, std::string name)
      : fd_(fd), owns_fd_(owns_fd), name_(std::move(name)) {}

  int fd_;
  bool owns_fd_;
  std::string name_;
  int64_t position_ = 0;
};

// Discards the bytes and counts them: the exact size of an output, computed
// without allocating it.
class CountingOutputStream final : public OutputStream {
 public:
  using OutputStream::Write;
  Status Write(const void*, int64_t nbytes) override;
  Result<int64_t> Tell() const override { return position_; }
  Status Close() override {
    closed_ = true;
    return Status::OK();
  }
  bool closed() const override { return closed_; }

 private:
  int64_t position_ = 0;
  bool closed_ = false;
};

// ---------------------------------------------------------------------------
// Input

class InputStream {
 public:
  virtual ~InputStream() = default;
  // Reads up to `nbytes` bytes; fewer only at the end of the stream (an empty
  // Buffer once the end is reached). Blocks until the bytes arrive.
  virtual Result<std::shared_ptr<Buffer>> Read(int64_t nbytes) = 0;
  // Same, into `out`; returns the number of bytes read.
  virtual Result<int64_t> Read(int64_t nbytes, void* out) = 0;
  // Bytes consumed since the stream was opened.
  virtual Result<int64_t> Tell() const = 0;
  virtual Status Close() = 0;
  virtual bool closed() const = 0;
};

// Reads a file descriptor: a regular file, a pipe, a socket or stdin. Buffers
// returned by Read() are fresh copies from the pool. A Read() of a huge size
// grows its buffer as bytes arrive, so a lying length costs no more memory
// than the bytes actually present.
class FileInputStream final : public InputStream {
 public:
  static Result<std::unique_ptr<FileInputStream>> Open(const std::string& path,
                                                       MemoryPool* pool = nullptr);
  static Result<std::unique_ptr<FileInputStream>> FromFd(int fd, bool owns_fd = false,
                                                         MemoryPool* pool = nullptr);
  ~FileInputStream() override;

  using InputStream::Read;
  Result<std::shared_ptr<Buffer>> Read(int64_t nbytes) override;
  Result<int64_t> Read(int64_t nbytes, void* out) override;
  Result<int64_t> Tell() const override { return position_; }
  Status Close() override;
  bool closed() const override { return fd_ < 0; }

 private:
  FileInputStream(int fd, bool owns_fd, MemoryPool* pool, std::string name)
      : fd_(fd), owns_fd_(owns_fd), pool_(pool), name_(std::move(name)) {}

  int fd_;
  bool owns_fd_;
  MemoryPool* pool_;
  std::string name_;
  int64_t position_ = 0;
};

// Reads a Buffer sequentially; Read() returns zero-copy slices of it.
class BufferInputStream final : public InputStream {
 public:
  explicit BufferInputStream(std::shared_ptr<Buffer> buffer)
      : buffer_(std::move(buffer)) {}

  using InputStream::Read;
  Result<std::shared_ptr<Buffer>> Read(int64_t nbytes) override;
  Result<int64_t> Read(int64_t nbytes, void* out) override;
  Result<int64_t> Tell() const override { return position_; }
  Status Close() override {
    closed_ = true;
    return Status::OK();
  }
  bool closed() const override { return closed_; }

 private:
  std::shared_ptr<Buffer> buffer_;
  int64_t position_ = 0;
  bool closed_ = false;
};

// Maps the file at `path` read-only. The returned Buffer keeps the mapping
// alive (it is unmapped when the last reference goes); an empty file gives an
// empty Buffer. The file must not be truncated while mapped.
Result<std::shared_ptr<Buffer>> MemoryMapFile(const std::string& path);

// Reads a whole file into a pool buffer (for files that cannot be mapped).
Result<std::shared_ptr<Buffer>> ReadWholeFile(const std::string& path,
                                              MemoryPool* pool = nullptr);

}  // namespace quiver::io
