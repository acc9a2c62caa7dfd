// Memory pools over cluster memory, so builders write Arrow data straight
// into any node's region.
//
// RegionMemoryPool allocates in the node's own region through its
// RegionAllocator (only processes of the owner node may use it).
// RemoteMemoryPool allocates in another node's region by forwarding every
// call to that node through a RemoteAllocator, which the control plane
// implements (remote malloc/realloc/free over RPC). Both are thread-safe.
// MemoryPool::Free cannot report errors; a failed free is logged to stderr
// and counted in failed_frees().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "quiver/columnar/memory_pool.h"
#include "quiver/memory/region_allocator.h"

namespace quiver::memory {

class RegionMemoryPool final : public MemoryPool {
 public:
  using MemoryPool::Allocate;
  using MemoryPool::Free;
  using MemoryPool::Reallocate;
  // `allocator` must outlive the pool.
  RegionMemoryPool(RegionAllocator* allocator, uint32_t node_id)
      : allocator_(allocator), node_id_(node_id) {}

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
  std::string backend_name() const override;
  int64_t failed_frees() const { return failed_frees_.load(); }
  uint32_t node_id() const { return node_id_; }
  // Hooks for the control plane, set before the pool is shared: `on_alloc`
  // runs after every allocation and reallocation (tagging, the pre-write
  // flush); `free_check` can refuse a free (a pinned or published object),
  // which is then reported like any failed free.
  using AllocHook = std::function<Status(uint8_t* address, uint64_t size)>;
  void set_on_alloc(AllocHook hook) { on_alloc_ = std::move(hook); }
  void set_free_check(RegionAllocator::FreeCheck check) {
    free_check_ = std::move(check);
  }

 private:
  RegionAllocator* allocator_;
  uint32_t node_id_;
  AllocHook on_alloc_;
  RegionAllocator::FreeCheck free_check_;
  MemoryPoolStats stats_;
  std::atomic<int64_t> failed_frees_{0};
};

// Forwards allocation requests to the owner of a region. Addresses are
// absolute (valid in every process of the cluster).
class RemoteAllocator {
 public:
  virtual ~RemoteAllocator() = default;
  virtual Result<uint64_t> RemoteAllocate(uint32_t node, uint64_t size,
                                          uint64_t alignment) = 0;
  // The owner resizes in place or moves the data on its own memory bus.
  virtual Result<uint64_t> RemoteReallocate(uint32_t node, uint64_t address,
                                            uint64_t new_size, uint64_t alignment) = 0;
  virtual Status RemoteFree(uint32_t node, uint64_t address) = 0;
};

class RemoteMemoryPool final : public MemoryPool {
 public:
  using MemoryPool::Allocate;
  using MemoryPool::Free;
  using MemoryPool::Reallocate;
  // `forwarder` must outlive the pool.
  RemoteMemoryPool(uint32_t node_id, RemoteAllocator* forwarder)
      : node_id_(node_id), forwarder_(forwarder) {}

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
  std::string backend_name() const override;
  int64_t failed_frees() const { return failed_frees_.load(); }
  uint32_t node_id() const { return node_id_; }

 private:
  uint32_t node_id_;
  RemoteAllocator* forwarder_;
  MemoryPoolStats stats_;
  std::atomic<int64_t> failed_frees_{0};
};

}  // namespace quiver::memory
