// RegionAllocator: the owner's allocator for one node's region.
//
// The allocator's metadata lives in the region it manages (see
// docs/region-format.md), out of line from the data: block descriptors in a
// table, an AVL tree of all blocks by address (for Free and Realloc
// look-ups) and an AVL tree of free blocks by (size, address) (best fit in
// O(log n)). Every allocation starts on a coherence granule and is padded to
// whole granules, so no two objects ever share a cache line, and no
// allocator metadata shares a line with data.
//
// Only processes of the owner node may use an allocator: its metadata must
// stay coherent. Any number of them may allocate concurrently: a
// process-shared robust mutex guards the metadata, and a process killed
// while holding it leaves an undo log from which the next locker repairs
// the metadata (see Recover). Every method is thread-safe.
#pragma once

#include <pthread.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "quiver/util/result.h"

namespace quiver::memory {

struct AllocatorStats {
  uint64_t capacity = 0;      // bytes of the data area
  uint64_t used = 0;          // bytes in live allocations (granule-padded)
  uint64_t free = 0;          // bytes in free blocks
  uint64_t largest_free = 0;  // largest free block
  uint64_t live_allocations = 0;
  uint64_t free_blocks = 0;
  uint64_t total_allocations = 0;  // ever made
  uint64_t recoveries = 0;         // repairs after a holder died
  uint64_t descriptors_capacity = 0;
};

// Information about a live allocation.
struct AllocationInfo {
  uint64_t address = 0;
  uint64_t size = 0;       // padded size
  uint64_t requested = 0;  // size asked for
  int32_t owner_pid = 0;   // process that allocated it
  uint64_t tag = 0;        // caller's tag (Allocate or SetTag)
};

class RegionAllocator {
 public:
  // Bytes of metadata needed to manage `data_size` bytes with `granule`.
  static uint64_t MetadataSize(uint64_t data_size, uint64_t granule);

  // Formats fresh metadata at `metadata` (MetadataSize bytes, page aligned)
  // managing [data, data + data_size). `data` must be granule-aligned.
  static Result<RegionAllocator> Format(void* metadata, uint64_t metadata_size,
                                        uint8_t* data, uint64_t data_size,
                                        uint64_t granule);
  // Attaches to metadata formatted earlier (by this or another process of
  // the owner node); checks its magic, version and geometry.
  static Result<RegionAllocator> Attach(void* metadata, uint64_t metadata_size,
                                        uint8_t* data, uint64_t data_size);

  RegionAllocator() = default;

  // Allocates at least `size` bytes aligned to max(alignment, granule);
  // size 0 allocates one granule. Returns the address. OutOfMemory when no
  // free block fits or the descriptor table is full.
  Result<uint8_t*> Allocate(uint64_t size, uint64_t alignment = 0);
  // The same, with the allocation's tag set in the same critical section:
  // a process killed right after allocating never leaves an untagged block
  // (which would look like nobody's and could not be reclaimed by owner).
  Result<uint8_t*> Allocate(uint64_t size, uint64_t alignment, uint64_t tag);
  // Resizes in place when the block is large enough or the next block is
  // free and big enough; otherwise allocates, copies, frees. The block
  // keeps its tag either way. The old pointer is invalid after success;
  // unchanged on failure.
  Result<uint8_t*> Reallocate(uint8_t* ptr, uint64_t new_size, uint64_t alignment = 0);
  // Frees a live allocation. A pointer that is not the start of a live
  // allocation is an error (naming what it points into), never corruption.
  Status Free(uint8_t* ptr);
  // The live allocation starting at ptr, or the one containing
  // [ptr, ptr + len) when `containing` is true.
  Result<AllocationInfo> Lookup(const uint8_t* ptr, uint64_t len = 0,
                                bool containing = false);
  // Attaches a caller-defined tag to a live allocation.
  Status SetTag(uint8_t* ptr, uint64_t tag);
  // Under the lock: finds the live allocation starting at `ptr` (or, with
  // `containing`, the one holding [ptr, ptr + len)), lets `update` change
  // its tag, and returns the allocation as it is afterwards. A non-OK status
  // from `update` leaves the tag unchanged and is returned.
  using TagUpdate = std::function<Status(const AllocationInfo& info, uint64_t* tag)>;
  Result<AllocationInfo> UpdateTag(const uint8_t* ptr, uint64_t len, bool containing,
                                   const TagUpdate& update);
  // UpdateTag for many allocations under one hold of the lock: for each
  // addresses[k] (the start of a live allocation), `update(k, info, &tag)`
  // may change its tag. Each change is whole on its own (a crash keeps
  // every earlier one); the first error stops the walk and is returned.
  // Addresses in ascending order are found by walking the block chain.
  using TagUpdates =
      std::function<Status(size_t k, const AllocationInfo& info, uint64_t* tag)>;
  Status UpdateTags(const std::vector<uint64_t>& addresses, const TagUpdates& update);
  // Frees the live allocation starting at `ptr` if `check` (called under
  // the lock; may be empty) accepts it; otherwise returns check's error and
  // frees nothing.
  using FreeCheck = std::function<Status(const AllocationInfo& info)>;
  Status FreeIf(uint8_t* ptr, const FreeCheck& check);

  // Calls `fn` for every live allocation in address order, all under the
  // lock, so the list is one consistent snapshot. `fn` must not call this
  // allocator (or any allocator of the same region): the lock is not
  // recursive and the call would deadlock. Other processes' allocator calls
  // wait until ForEach returns, so keep `fn` short. Fails only if the lock
  // cannot be taken or the metadata is corrupt.
  using AllocationVisitor = std::function<void(const AllocationInfo& info)>;
  Status ForEach(const AllocationVisitor& fn);

  AllocatorStats Stats();
  // Full consistency check of the metadata (block tiling, both trees,
  // counters). O(n). For tests, recovery and `quiver status`.
  Status CheckConsistency();

  uint64_t granule() const;
  uint8_t* data() const { return data_; }
  uint64_t data_size() const { return data_size_; }
  bool valid() const { return meta_ != nullptr; }

  // Test hook: called at named points inside the critical section, with the
  // lock held, so a test can kill the process mid-operation.
  using CrashHook = void (*)(const char* point);
  static void SetCrashHookForTesting(CrashHook hook);

  struct Meta;  // the shared-memory layout (src/memory/region_allocator.cc)

 private:
  RegionAllocator(Meta* meta, uint8_t* data, uint64_t data_size)
      : meta_(meta), data_(data), data_size_(data_size) {}

  Meta* meta_ = nullptr;
  uint8_t* data_ = nullptr;
  uint64_t data_size_ = 0;
};

}  // namespace quiver::memory
