// Where the server's batch bodies live: one span of memory, faulted in and
// registered with UCX once when the server starts (never per batch), carved
// into one block per body. Without UCX (every client's data on its TLS
// stream) the span is ordinary memory, registered with nothing. A block is filled by
// Concatenate through an ArenaPool, so a batch's buffers are contiguous and one remote
// read fetches the whole body.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "quiver/columnar/memory_pool.h"
#include "transport/ucx.h"

namespace quiver::transport {

class BodyPool {
 public:
  // `size` bytes (rounded up to pages) that UCX allocates and registers
  // with `context` (UcxMemory::Allocate: shared memory peers on this host
  // map, where there is room), every page written once; a null `context`:
  // anonymous memory.
  static Result<std::unique_ptr<BodyPool>> Make(std::shared_ptr<UcxContext> context,
                                                uint64_t size);
  ~BodyPool();
  BodyPool(const BodyPool&) = delete;
  BodyPool& operator=(const BodyPool&) = delete;

  // A block of at least `size` bytes, 64-byte aligned; waits while the pool
  // is too full, until `cancelled()` (checked on every Free and every
  // 100 ms) says to give up: Cancelled. CapacityError at once for a block
  // larger than the whole pool.
  Result<uint8_t*> Allocate(uint64_t size, const std::function<bool()>& cancelled);
  // Returns a block from Allocate. Thread-safe, like Allocate.
  void Free(uint8_t* block);

  uint64_t bytes_in_use() const;
  uint64_t capacity() const { return size_; }
  bool registered() const { return memory_ != nullptr; }
  const UcxMemory& registration() const { return *memory_; }  // if registered()
  uint8_t* base() const { return base_; }

 private:
  BodyPool() = default;
  uint8_t* TryAllocateLocked(uint64_t size);

  uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  std::unique_ptr<UcxMemory> memory_;
  bool mapped_ = false;  // base_ is an anonymous mapping of ours
  mutable std::mutex mu_;
  std::condition_variable freed_;
  std::map<uint64_t, uint64_t> free_;  // offset -> length, coalesced
  std::map<uint64_t, uint64_t> used_;  // offset -> length
  uint64_t in_use_ = 0;
};

// A MemoryPool inside one block: allocations follow one another (64-byte
// aligned); Free gives memory back only if it was the last allocation.
// For one thread filling one body.
class ArenaPool final : public MemoryPool {
 public:
  ArenaPool(uint8_t* begin, uint64_t size)
      : begin_(begin), cursor_(begin), end_(begin + size) {}
  using MemoryPool::Allocate;
  using MemoryPool::Free;
  using MemoryPool::Reallocate;
  Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override;
  Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                    uint8_t** ptr) override;
  void Free(uint8_t* buffer, int64_t size, int64_t alignment) override;
  int64_t bytes_allocated() const override { return cursor_ - begin_; }
  int64_t max_memory() const override { return peak_; }
  int64_t total_bytes_allocated() const override { return total_; }
  int64_t num_allocations() const override { return count_; }
  std::string backend_name() const override { return "transport-arena"; }
  // Bytes from the block's start to the end of the last allocation.
  uint64_t used() const { return static_cast<uint64_t>(cursor_ - begin_); }

 private:
  uint8_t* begin_;
  uint8_t* cursor_;
  uint8_t* end_;
  uint8_t* last_ = nullptr;  // start of the last allocation
  int64_t peak_ = 0, total_ = 0, count_ = 0;
};

}  // namespace quiver::transport
