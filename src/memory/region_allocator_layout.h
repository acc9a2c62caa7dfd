// The region allocator's shared-memory layout (RegionAllocator::Meta and
// the block descriptors after it; docs/region-format.md), and the crash
// recovery that rebuilds it: shared by src/memory/region_allocator.cc (the
// operations) and src/memory/region_allocator_recovery.cc. Internal.
#pragma once

#include <pthread.h>

#include <cstdint>

#include "memory/avl_tree.h"
#include "quiver/memory/region_allocator.h"
#include "quiver/util/status.h"

namespace quiver::memory {
namespace allocator_layout {

using internal::AvlLinks;

constexpr uint64_t kMetaMagic = 0x314F4C4C41525651ULL;  // "QVRALLO1" little-endian
constexpr uint32_t kMetaVersion = 1;
constexpr int kUndoEntries = 16;

enum BlockState : uint32_t { kUnused = 0, kFree = 1, kAllocated = 2 };

// The fields that define the block layout. Everything else in a descriptor
// (tree links, the free-slot chain) is derived and rebuilt after a crash.
struct BlockCore {
  uint64_t offset;     // from the start of the data area
  uint64_t size;       // multiple of the granule
  uint64_t requested;  // bytes asked for (allocated blocks)
  uint64_t tag;
  uint32_t prev;  // block just below, by address
  uint32_t next;  // block just above, by address
  uint32_t state;
  int32_t owner_pid;
};
static_assert(sizeof(BlockCore) == 48);

struct BlockDesc {
  BlockCore core;
  AvlLinks by_addr;  // all blocks, keyed by offset
  AvlLinks by_size;  // free blocks, keyed by (size, offset); free-slot chain in .parent
};
static_assert(sizeof(BlockDesc) == 80);

struct UndoEntry {
  uint32_t index;
  uint32_t reserved;
  BlockCore core;
};

struct AddrTraits {
  static AvlLinks& links(BlockDesc& d) { return d.by_addr; }
  static bool less(const BlockDesc& a, const BlockDesc& b) {
    return a.core.offset < b.core.offset;
  }
};
struct SizeTraits {
  static AvlLinks& links(BlockDesc& d) { return d.by_size; }
  static bool less(const BlockDesc& a, const BlockDesc& b) {
    return a.core.size != b.core.size ? a.core.size < b.core.size
                                      : a.core.offset < b.core.offset;
  }
};

}  // namespace allocator_layout

struct RegionAllocator::Meta {
  uint64_t magic;
  uint32_t version;
  uint32_t capacity;  // descriptors
  uint64_t granule;
  uint64_t data_size;
  uint64_t metadata_size;
  uint32_t addr_root;
  uint32_t size_root;
  uint32_t free_slot_head;
  uint32_t free_slots;
  uint64_t used;
  uint64_t free_bytes;
  uint64_t live;
  uint64_t free_blocks;
  uint64_t total_allocations;
  uint64_t recoveries;
  alignas(64) pthread_mutex_t lock;
  // Undo log of the operation in progress: core fields of every descriptor
  // it touched, saved before the first change. `active` is set while an
  // operation runs.
  alignas(64) uint32_t undo_active;
  uint32_t undo_count;
  allocator_layout::UndoEntry undo[allocator_layout::kUndoEntries];
  alignas(64) allocator_layout::BlockDesc descs[1];  // `capacity` entries
};

namespace allocator_layout {

// Rebuilds everything derived from the block cores: both trees, the free
// slot chain and the counters. Fails if the cores do not tile the data area.
Status Rebuild(RegionAllocator::Meta* m);
// Undoes a half-done operation from the undo log, then rebuilds.
Status Recover(RegionAllocator::Meta* m);

}  // namespace allocator_layout
}  // namespace quiver::memory
