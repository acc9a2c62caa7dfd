// Crash recovery of the region allocator: a process that dies holding the
// lock leaves an undo log (region_allocator_layout.h); the next locker
// undoes the half-done operation and rebuilds everything derived.
#include <vector>

#include "memory/region_allocator_layout.h"

namespace quiver::memory::allocator_layout {

using internal::AvlTree;
using internal::kNil;
using Meta = RegionAllocator::Meta;

// Rebuilds everything derived from the block cores: both trees, the free
// slot chain and the counters. Fails if the cores do not tile the data area.
Status Rebuild(Meta* m) {
  BlockDesc* d = m->descs;
  std::vector<bool> reachable(m->capacity, false);
  m->addr_root = m->size_root = kNil;
  m->used = m->free_bytes = m->live = m->free_blocks = 0;
  AvlTree<BlockDesc, AddrTraits> by_addr(d, &m->addr_root);
  AvlTree<BlockDesc, SizeTraits> by_size(d, &m->size_root);
  uint64_t expected = 0;
  uint32_t prev = kNil;
  for (uint32_t i = 0; i != kNil; i = d[i].core.next) {
    if (i >= m->capacity || reachable[i]) {
      return Status::IOError(
          "allocator metadata is corrupt: block chain loops or leaves "
          "the descriptor table at slot ",
          i);
    }
    const BlockCore& c = d[i].core;
    if (c.offset != expected || c.prev != prev || c.size == 0 ||
        c.size % m->granule != 0 || (c.state != kFree && c.state != kAllocated)) {
      return Status::IOError("allocator metadata is corrupt at slot ", i, " (offset ",
                             c.offset, ", expected ", expected, ")");
    }
    reachable[i] = true;
    by_addr.Insert(i);
    if (c.state == kFree) {
      by_size.Insert(i);
      m->free_bytes += c.size;
      ++m->free_blocks;
    } else {
      m->used += c.size;
      ++m->live;
    }
    expected += c.size;
    prev = i;
  }
  if (expected != m->data_size) {
    return Status::IOError("allocator metadata is corrupt: blocks cover ", expected,
                           " of ", m->data_size, " bytes");
  }
  m->free_slot_head = kNil;
  m->free_slots = 0;
  for (uint32_t i = m->capacity; i-- > 0;) {
    if (reachable[i]) continue;
    d[i].core.state = kUnused;
    d[i].by_size.parent = m->free_slot_head;
    m->free_slot_head = i;
    ++m->free_slots;
  }
  return Status::OK();
}

// Undoes a half-done operation from the undo log, then rebuilds.
Status Recover(Meta* m) {
  if (__atomic_load_n(&m->undo_active, __ATOMIC_ACQUIRE)) {
    for (uint32_t k = m->undo_count; k-- > 0;) {
      const UndoEntry& e = m->undo[k];
      if (e.index < m->capacity) m->descs[e.index].core = e.core;
    }
  }
  m->undo_active = 0;
  m->undo_count = 0;
  ++m->recoveries;
  return Rebuild(m);
}

}  // namespace quiver::memory::allocator_layout
