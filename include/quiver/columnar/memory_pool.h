// MemoryPool: where every Arrow buffer of Quiver comes from.
//
// A MemoryPool hands out aligned memory and keeps statistics. Builders, IPC
// readers that must copy (decompression, dictionary deltas) and the C Data
// import path all allocate through the pool they are given, so that a pool
// placed in cluster shared memory makes Arrow data land there directly.
// Implementations must be safe for concurrent use from several threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "quiver/util/status.h"

namespace quiver {

// Buffers are 64-byte aligned and padded to a multiple of 64 bytes, as the
// Arrow columnar format recommends.
constexpr int64_t kDefaultBufferAlignment = 64;

// Counters every pool keeps. All fields are updated atomically.
class MemoryPoolStats {
 public:
  void DidAllocate(int64_t size) {
    int64_t now = bytes_allocated_.fetch_add(size, std::memory_order_relaxed) + size;
    total_bytes_allocated_.fetch_add(size, std::memory_order_relaxed);
    num_allocations_.fetch_add(1, std::memory_order_relaxed);
    int64_t peak = max_memory_.load(std::memory_order_relaxed);
    while (now > peak &&
           !max_memory_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  void DidReallocate(int64_t old_size, int64_t new_size) {
    int64_t diff = new_size - old_size;
    int64_t now = bytes_allocated_.fetch_add(diff, std::memory_order_relaxed) + diff;
    if (diff > 0) total_bytes_allocated_.fetch_add(diff, std::memory_order_relaxed);
    int64_t peak = max_memory_.load(std::memory_order_relaxed);
    while (now > peak &&
           !max_memory_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  void DidFree(int64_t size) {
    bytes_allocated_.fetch_sub(size, std::memory_order_relaxed);
    num_frees_.fetch_add(1, std::memory_order_relaxed);
  }
  int64_t bytes_allocated() const { return bytes_allocated_.load(); }
  int64_t max_memory() const { return max_memory_.load(); }
  int64_t total_bytes_allocated() const { return total_bytes_allocated_.load(); }
  int64_t num_allocations() const { return num_allocations_.load(); }
  int64_t num_frees() const { return num_frees_.load(); }

 private:
  std::atomic<int64_t> bytes_allocated_{0};
  std::atomic<int64_t> max_memory_{0};
  std::atomic<int64_t> total_bytes_allocated_{0};
  std::atomic<int64_t> num_allocations_{0};
  std::atomic<int64_t> num_frees_{0};
};

class MemoryPool {
 public:
  virtual ~MemoryPool() = default;

  // Allocates `size` bytes aligned to `alignment` (a power of two). On success
  // *out points to memory the caller owns until it calls Free with the same
  // size and alignment. A zero-size allocation returns a valid, aligned,
  // non-null pointer. On failure *out is untouched.
  virtual Status Allocate(int64_t size, int64_t alignment, uint8_t** out) = 0;
  Status Allocate(int64_t size, uint8_t** out) {
    return Allocate(size, kDefaultBufferAlignment, out);
  }

  // Resizes an allocation made by this pool, keeping the first
  // min(old_size, new_size) bytes. On success *ptr may have moved; on failure
  // *ptr and its memory are unchanged and still owned by the caller.
  virtual Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                            uint8_t** ptr) = 0;
  Status Reallocate(int64_t old_size, int64_t new_size, uint8_t** ptr) {
    return Reallocate(old_size, new_size, kDefaultBufferAlignment, ptr);
  }

  // Returns memory obtained from Allocate/Reallocate of this pool.
  virtual void Free(uint8_t* buffer, int64_t size, int64_t alignment) = 0;
  void Free(uint8_t* buffer, int64_t size) {
    Free(buffer, size, kDefaultBufferAlignment);
  }

  // Bytes currently allocated through this pool.
  virtual int64_t bytes_allocated() const = 0;
  // Peak of bytes_allocated().
  virtual int64_t max_memory() const = 0;
  // Sum of all allocation sizes ever made.
  virtual int64_t total_bytes_allocated() const = 0;
  virtual int64_t num_allocations() const = 0;
  // Short name of the backend ("system", "region:2", ...).
  virtual std::string backend_name() const = 0;
};

// The process-wide heap pool: 64-byte aligned memory from the C library,
// zero-filled padding is the caller's duty (builders do it). Never destroyed.
MemoryPool* default_memory_pool();

// A pool on the C heap with its own statistics (for tests and tools that want
// separate accounting). Thread-safe.
class SystemMemoryPool final : public MemoryPool {
 public:
  using MemoryPool::Allocate;
  using MemoryPool::Free;
  using MemoryPool::Reallocate;
  Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override;
  Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                    uint8_t** ptr) override;
  void Free(uint8_t* buffer, int64_t size, int64_t alignment) override;
  int64_t bytes_allocated() const override { return stats_.bytes_allocated(); }
  int64_t max_memory() const override { return stats_.max_memory(); }
  int64_t total_bytes_allocated() const override {
    return stats_.total_bytes_allocated();
  }
  int64_t num_allocations() const override { return stats_.num_allocations(); }
  std::string backend_name() const override { return "system"; }

 private:
  MemoryPoolStats stats_;
};

// The address every zero-size allocation returns (never written).
uint8_t* ZeroSizeArea();

}  // namespace quiver
