// Growable buffers that builders write into, allocated from a MemoryPool.
// Not thread-safe: one builder, one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "quiver/columnar/bit_util.h"
#include "quiver/columnar/buffer.h"

namespace quiver {

// Bytes appended at the end of a pool buffer that grows geometrically.
class BufferBuilder {
 public:
  explicit BufferBuilder(MemoryPool* pool) : pool_(pool) {}

  // Ensures capacity for `additional` more bytes.
  Status Reserve(int64_t additional) {
    int64_t needed = size_ + additional;
    if (QUIVER_PREDICT_TRUE(needed <= capacity_)) return Status::OK();
    if (additional < 0) return Status::Invalid("negative reservation");
    return Grow(needed);
  }
  Status Append(const void* data, int64_t n) {
    QUIVER_RETURN_NOT_OK(Reserve(n));
    UnsafeAppend(data, n);
    return Status::OK();
  }
  Status AppendZeros(int64_t n) {
    QUIVER_RETURN_NOT_OK(Reserve(n));
    if (n > 0) std::memset(data_ + size_, 0, static_cast<size_t>(n));
    size_ += n;
    return Status::OK();
  }
  void UnsafeAppend(const void* data, int64_t n) {
    if (n > 0) std::memcpy(data_ + size_, data, static_cast<size_t>(n));
    size_ += n;
  }
  // Sets size (must be <= capacity); new bytes are unspecified.
  void UnsafeSetSize(int64_t n) { size_ = n; }
  // Hands the bytes over as a buffer (shrunk to fit, padding zeroed) and
  // resets this builder to empty.
  Result<std::shared_ptr<Buffer>> Finish(bool shrink_to_fit = true);
  void Reset() {
    buffer_.reset();
    data_ = nullptr;
    size_ = capacity_ = 0;
  }

  int64_t size() const { return size_; }
  int64_t capacity() const { return capacity_; }
  uint8_t* mutable_data() { return data_; }
  const uint8_t* data() const { return data_; }
  MemoryPool* pool() const { return pool_; }

 private:
  Status Grow(int64_t needed);

  MemoryPool* pool_;
  std::shared_ptr<ResizableBuffer> buffer_;
  uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  int64_t capacity_ = 0;
};

// A BufferBuilder of fixed-width values of type T.
template <typename T>
class TypedBufferBuilder {
 public:
  explicit TypedBufferBuilder(MemoryPool* pool) : bytes_(pool) {}

  Status Reserve(int64_t additional) {
    return bytes_.Reserve(additional * static_cast<int64_t>(sizeof(T)));
  }
  Status Append(T v) {
    QUIVER_RETURN_NOT_OK(Reserve(1));
    UnsafeAppend(v);
    return Status::OK();
  }
  Status Append(const T* values, int64_t n) {
    return bytes_.Append(values, n * static_cast<int64_t>(sizeof(T)));
  }
  Status AppendZeros(int64_t n) { return bytes_.AppendZeros(n * sizeof(T)); }
  void UnsafeAppend(T v) {
    std::memcpy(bytes_.mutable_data() + bytes_.size(), &v, sizeof(T));
    bytes_.UnsafeSetSize(bytes_.size() + static_cast<int64_t>(sizeof(T)));
  }
  T* mutable_data() { return reinterpret_cast<T*>(bytes_.mutable_data()); }
  const T* data() const { return reinterpret_cast<const T*>(bytes_.data()); }
  int64_t length() const { return bytes_.size() / static_cast<int64_t>(sizeof(T)); }
  int64_t capacity() const { return bytes_.capacity() / static_cast<int64_t>(sizeof(T)); }
  void UnsafeSetLength(int64_t n) { bytes_.UnsafeSetSize(n * sizeof(T)); }
  Result<std::shared_ptr<Buffer>> Finish(bool shrink_to_fit = true) {
    return bytes_.Finish(shrink_to_fit);
  }
  void Reset() { bytes_.Reset(); }

 private:
  BufferBuilder bytes_;
};

// A growing bitmap (validity or boolean values).
class BitmapBuilder {
 public:
  explicit BitmapBuilder(MemoryPool* pool) : bytes_(pool) {}

  Status Reserve(int64_t additional_bits) {
    int64_t need = bit_util::BytesForBits(length_ + additional_bits);
    if (need <= bytes_.size()) return Status::OK();
    int64_t old = bytes_.size();
    QUIVER_RETURN_NOT_OK(bytes_.Reserve(need - old));
    // Keep every reserved byte zeroed so appends only set bits.
    std::memset(bytes_.mutable_data() + old, 0,
                static_cast<size_t>(bytes_.capacity() - old));
    bytes_.UnsafeSetSize(bytes_.capacity());
    return Status::OK();
  }
  void UnsafeAppend(bool v) {
    if (v) bit_util::SetBit(bytes_.mutable_data(), length_);
    ++length_;
  }
  void UnsafeAppend(int64_t n, bool v) {
    if (v) bit_util::SetBitsTo(bytes_.mutable_data(), length_, n, true);
    length_ += n;
  }
  Status Append(bool v) {
    QUIVER_RETURN_NOT_OK(Reserve(1));
    UnsafeAppend(v);
    return Status::OK();
  }
  int64_t length() const { return length_; }
  const uint8_t* data() const { return bytes_.data(); }
  uint8_t* mutable_data() { return bytes_.mutable_data(); }
  Result<std::shared_ptr<Buffer>> Finish() {
    bytes_.UnsafeSetSize(bit_util::BytesForBits(length_));
    length_ = 0;
    return bytes_.Finish();
  }
  void Reset() {
    bytes_.Reset();
    length_ = 0;
  }

 private:
  BufferBuilder bytes_;
  int64_t length_ = 0;
};

}  // namespace quiver
