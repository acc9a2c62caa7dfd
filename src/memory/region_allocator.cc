#include "quiver/memory/region_allocator.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <vector>

#include "memory/avl_tree.h"
#include "memory/region_allocator_layout.h"
#include "quiver/util/string_builder.h"
#include "util/round_up.h"

namespace quiver::memory {

using internal::AvlLinks;
using internal::AvlTree;
using internal::kNil;
using namespace allocator_layout;  // NOLINT(build/namespaces)

namespace {

std::atomic<RegionAllocator::CrashHook> g_crash_hook{nullptr};

// getpid() is a system call; allocations record the owner on every call, so
// cache it (refreshed in the child after fork).
std::atomic<int32_t> g_pid{0};
int32_t CurrentPid() {
  int32_t pid = g_pid.load(std::memory_order_relaxed);
  if (pid == 0) {
    static const bool registered = [] {
      pthread_atfork(nullptr, nullptr, [] { g_pid.store(0); });
      return true;
    }();
    (void)registered;
    pid = static_cast<int32_t>(getpid());
    g_pid.store(pid, std::memory_order_relaxed);
  }
  return pid;
}

void CrashPoint(const char* name) {
  if (auto hook = g_crash_hook.load(std::memory_order_relaxed)) hook(name);
}

using util::RoundUp;

using util::Hex;

}  // namespace

namespace {

using Meta = RegionAllocator::Meta;

uint64_t DescriptorCapacity(uint64_t data_size, uint64_t granule) {
  uint64_t by_granule = data_size / granule;
  uint64_t wanted = std::max<uint64_t>(4096, data_size / 4096);
  return std::min<uint64_t>({by_granule, wanted, uint64_t{1} << 24});
}

// Holds the allocator lock; repairs the metadata if the last holder died.
class LockedOp {
 public:
  explicit LockedOp(Meta* m) : m_(m) {}
  ~LockedOp() {
    if (locked_) {
      std::atomic_thread_fence(std::memory_order_release);
      __atomic_store_n(&m_->undo_active, 0, __ATOMIC_RELEASE);
      pthread_mutex_unlock(&m_->lock);
    }
  }
  Status Lock();
  // Ends one step of a batch: what it changed is whole, so a crash after
  // this point must not undo it.
  void Commit() {
    std::atomic_thread_fence(std::memory_order_release);
    __atomic_store_n(&m_->undo_count, 0, __ATOMIC_RELEASE);
  }
  // Saves the core of descriptor i in the undo log (once per operation).
  void Touch(uint32_t i) {
    for (uint32_t k = 0; k < m_->undo_count; ++k) {
      if (m_->undo[k].index == i) return;
    }
    if (m_->undo_count == kUndoEntries) {
      // Every operation touches at most 10 descriptors; more is a bug.
      Status::UnknownError("region allocator undo log overflow").Abort();
    }
    UndoEntry& e = m_->undo[m_->undo_count];
    e.index = i;
    e.core = m_->descs[i].core;
    __atomic_store_n(&m_->undo_count, m_->undo_count + 1, __ATOMIC_RELEASE);
  }

 private:
  Meta* m_;
  bool locked_ = false;
};

Status LockedOp::Lock() {
  int rc = pthread_mutex_lock(&m_->lock);
  if (rc == EOWNERDEAD) {
    // The previous holder died inside an operation: repair, then continue.
    Status st = Recover(m_);
    pthread_mutex_consistent(&m_->lock);
    if (!st.ok()) {
      pthread_mutex_unlock(&m_->lock);
      return st;
    }
  } else if (rc != 0) {
    return Status::FromErrno(rc, "region allocator lock");
  }
  locked_ = true;
  m_->undo_count = 0;
  __atomic_store_n(&m_->undo_active, 1, __ATOMIC_RELEASE);
  return Status::OK();
}

// The operations, run with the lock held.
class Ops {
 public:
  Ops(Meta* m, LockedOp* op, uint8_t* data)
      : m_(m),
        d_(m->descs),
        op_(op),
        data_(data),
        by_addr_(d_, &m->addr_root),
        by_size_(d_, &m->size_root) {}

  Result<uint8_t*> Allocate(uint64_t size, uint64_t alignment, uint64_t tag);
  Status Free(uint64_t offset);
  void FreeBlock(uint32_t i);  // i: a live allocation
  Result<uint8_t*> Reallocate(uint64_t offset, uint64_t new_size, uint64_t alignment);
  // The allocated block starting at `offset`, or an error describing what
  // the pointer refers to.
  Result<uint32_t> FindAllocated(uint64_t offset) const;
  uint32_t FindContaining(uint64_t offset) const {
    BlockDesc probe{};
    probe.core.offset = offset;
    return by_addr_.Floor(probe);
  }
  const AvlTree<BlockDesc, SizeTraits>& by_size() const { return by_size_; }
  const AvlTree<BlockDesc, AddrTraits>& by_addr() const { return by_addr_; }

 private:
  uint32_t TakeSlot() {
    uint32_t i = m_->free_slot_head;
    op_->Touch(i);
    m_->free_slot_head = d_[i].by_size.parent;
    --m_->free_slots;
    return i;
  }
  void ReleaseSlot(uint32_t i) {
    d_[i].core.state = kUnused;
    d_[i].by_size.parent = m_->free_slot_head;
    m_->free_slot_head = i;
    ++m_->free_slots;
  }
  // Splits free-or-allocated block i at `at` bytes into i and a new free
  // block above it, which is returned (inserted in both trees).
  uint32_t SplitOff(uint32_t i, uint64_t at);
  // Merges block `hi` (just above `lo`) into `lo`; `hi` leaves both trees.
  void Absorb(uint32_t lo, uint32_t hi);
  void MarkFree(uint32_t i) {
    d_[i].core.state = kFree;
    by_size_.Insert(i);
  }
  uint32_t Coalesce(uint32_t i);  // i is free and in no size tree yet

  Meta* m_;
  BlockDesc* d_;
  LockedOp* op_;
  uint8_t* data_;
  AvlTree<BlockDesc, AddrTraits> by_addr_;
  AvlTree<BlockDesc, SizeTraits> by_size_;
};

uint32_t Ops::SplitOff(uint32_t i, uint64_t at) {
  uint32_t n = TakeSlot();
  BlockCore& c = d_[i].core;
  uint32_t above = c.next;
  if (above != kNil) op_->Touch(above);
  d_[n].core = BlockCore{c.offset + at, c.size - at, 0, 0, i, above, kFree, 0};
  CrashPoint("split:linked-new");
  c.size = at;
  c.next = n;
  if (above != kNil) d_[above].core.prev = n;
  by_addr_.Insert(n);
  by_size_.Insert(n);
  ++m_->free_blocks;
  return n;
}

void Ops::Absorb(uint32_t lo, uint32_t hi) {
  op_->Touch(lo);
  op_->Touch(hi);
  uint32_t above = d_[hi].core.next;
  if (above != kNil) op_->Touch(above);
  by_addr_.Erase(hi);
  d_[lo].core.size += d_[hi].core.size;
  d_[lo].core.next = above;
  if (above != kNil) d_[above].core.prev = lo;
  CrashPoint("merge:linked");
  ReleaseSlot(hi);
}

uint32_t Ops::Coalesce(uint32_t i) {
  uint32_t next = d_[i].core.next;
  if (next != kNil && d_[next].core.state == kFree) {
    by_size_.Erase(next);
    --m_->free_blocks;
    Absorb(i, next);
  }
  uint32_t prev = d_[i].core.prev;
  if (prev != kNil && d_[prev].core.state == kFree) {
    by_size_.Erase(prev);
    --m_->free_blocks;
    Absorb(prev, i);
    i = prev;
  }
  MarkFree(i);
  ++m_->free_blocks;
  return i;
}

Result<uint8_t*> Ops::Allocate(uint64_t size, uint64_t alignment, uint64_t tag) {
  const uint64_t g = m_->granule;
  const uint64_t need = RoundUp(std::max<uint64_t>(size, 1), g);
  const uint64_t align = std::max(alignment, g);
  BlockDesc probe{};
  probe.core.size = need + (align - g);
  uint32_t i = by_size_.LowerBound(probe);
  if (i == kNil) {
    uint32_t last = by_size_.Last();
    return Status::OutOfMemory("region allocator: no free block of ", need,
                               " bytes (alignment ", align, "); largest free block is ",
                               last == kNil ? 0 : d_[last].core.size, " of ",
                               m_->free_bytes, " free bytes");
  }
  if (m_->free_slots < 2) {
    return Status::OutOfMemory("region allocator: descriptor table full (", m_->capacity,
                               " blocks)");
  }
  op_->Touch(i);
  by_size_.Erase(i);
  --m_->free_blocks;
  CrashPoint("allocate:unlinked");
  const uint64_t addr = reinterpret_cast<uint64_t>(data_) + d_[i].core.offset;
  const uint64_t front = RoundUp(addr, align) - addr;
  if (front > 0) {
    // Keep the padding below the aligned start as a free block.
    uint32_t above = SplitOff(i, front);
    by_size_.Erase(above);
    --m_->free_blocks;
    MarkFree(i);
    ++m_->free_blocks;
    i = above;
  }
  if (d_[i].core.size > need) SplitOff(i, need);
  CrashPoint("allocate:split");
  BlockCore& c = d_[i].core;
  c.state = kAllocated;
  c.requested = size;
  c.tag = tag;
  c.owner_pid = CurrentPid();
  m_->used += c.size;
  m_->free_bytes -= c.size;
  ++m_->live;
  ++m_->total_allocations;
  return data_ + c.offset;
}

Result<uint32_t> Ops::FindAllocated(uint64_t offset) const {
  BlockDesc probe{};
  probe.core.offset = offset;
  uint32_t i = by_addr_.Find(probe);
  if (i != kNil && d_[i].core.state == kAllocated) return i;
  uint32_t c = by_addr_.Floor(probe);
  const uint64_t addr = reinterpret_cast<uint64_t>(data_) + offset;
  if (c == kNil) {
    return Status::Invalid("address ", Hex(addr), " is below the region's data area");
  }
  const BlockCore& b = d_[c].core;
  const uint64_t start = reinterpret_cast<uint64_t>(data_) + b.offset;
  if (b.state == kFree) {
    return Status::Invalid("address ", Hex(addr),
                           " is not a live allocation (it lies in "
                           "a free block at ",
                           Hex(start), "; double free?)");
  }
  return Status::Invalid("address ", Hex(addr),
                         " is not the start of an allocation (it "
                         "lies ",
                         addr - start, " bytes into the allocation at ", Hex(start), ")");
}

Status Ops::Free(uint64_t offset) {
  QUIVER_ASSIGN_OR_RAISE(uint32_t i, FindAllocated(offset));
  FreeBlock(i);
  return Status::OK();
}

void Ops::FreeBlock(uint32_t i) {
  op_->Touch(i);
  BlockCore& c = d_[i].core;
  m_->used -= c.size;
  m_->free_bytes += c.size;
  --m_->live;
  c.state = kFree;
  c.requested = 0;
  c.owner_pid = 0;
  CrashPoint("free:marked");
  Coalesce(i);
}

Result<uint8_t*> Ops::Reallocate(uint64_t offset, uint64_t new_size, uint64_t alignment) {
  QUIVER_ASSIGN_OR_RAISE(uint32_t i, FindAllocated(offset));
  const uint64_t g = m_->granule;
  const uint64_t need = RoundUp(std::max<uint64_t>(new_size, 1), g);
  const uint64_t align = std::max(alignment, g);
  uint8_t* ptr = data_ + offset;
  const bool aligned = reinterpret_cast<uint64_t>(ptr) % align == 0;
  op_->Touch(i);
  if (aligned && need <= d_[i].core.size) {
    if (d_[i].core.size > need) {
      if (m_->free_slots < 1) return Status::OutOfMemory("descriptor table full");
      m_->used -= d_[i].core.size - need;
      m_->free_bytes += d_[i].core.size - need;
      uint32_t tail = SplitOff(i, need);
      by_size_.Erase(tail);
      --m_->free_blocks;
      Coalesce(tail);
    }
    d_[i].core.requested = new_size;
    return ptr;
  }
  uint32_t next = d_[i].core.next;
  if (aligned && next != kNil && d_[next].core.state == kFree &&
      d_[i].core.size + d_[next].core.size >= need) {
    // Grow in place into the free block above.
    const uint64_t take = need - d_[i].core.size;
    op_->Touch(next);
    by_size_.Erase(next);
    --m_->free_blocks;
    if (d_[next].core.size > take) {
      if (m_->free_slots < 1) {
        by_size_.Insert(next);
        ++m_->free_blocks;
        return Status::OutOfMemory("descriptor table full");
      }
      SplitOff(next, take);
    }
    Absorb(i, next);
    m_->used += take;
    m_->free_bytes -= take;
    d_[i].core.requested = new_size;
    return ptr;
  }
  // Move: the owner copies on its own memory bus. The new block gets the
  // tag at once, as an in-place resize keeps it.
  QUIVER_ASSIGN_OR_RAISE(uint8_t * fresh, Allocate(new_size, alignment, d_[i].core.tag));
  std::memcpy(fresh, ptr, std::min<uint64_t>(d_[i].core.size, need));
  CrashPoint("realloc:copied");
  QUIVER_RETURN_NOT_OK(Free(offset));
  return fresh;
}

}  // namespace

uint64_t RegionAllocator::MetadataSize(uint64_t data_size, uint64_t granule) {
  if (granule == 0) return 0;
  uint64_t cap = DescriptorCapacity(data_size, granule);
  uint64_t bytes = offsetof(Meta, descs) + cap * sizeof(BlockDesc);
  return RoundUp(bytes, 4096);
}

Result<RegionAllocator> RegionAllocator::Format(void* metadata, uint64_t metadata_size,
                                                uint8_t* data, uint64_t data_size,
                                                uint64_t granule) {
  if (!std::has_single_bit(granule) || granule < 8) {
    return Status::Invalid("granule ", granule, " is not a power of two >= 8");
  }
  if (reinterpret_cast<uint64_t>(data) % granule != 0) {
    return Status::Invalid("data area ", Hex(reinterpret_cast<uint64_t>(data)),
                           " is not aligned to the granule ", granule);
  }
  if (data_size < granule || data_size % granule != 0) {
    return Status::Invalid("data size ", data_size, " is not a positive multiple of ",
                           granule);
  }
  if (metadata_size < MetadataSize(data_size, granule)) {
    return Status::Invalid("allocator metadata needs ", MetadataSize(data_size, granule),
                           " bytes, got ", metadata_size);
  }
  auto* m = static_cast<Meta*>(metadata);
  std::memset(static_cast<void*>(m), 0, offsetof(Meta, descs));
  m->version = kMetaVersion;
  m->capacity = static_cast<uint32_t>(DescriptorCapacity(data_size, granule));
  m->granule = granule;
  m->data_size = data_size;
  m->metadata_size = metadata_size;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  int rc = pthread_mutex_init(&m->lock, &attr);
  pthread_mutexattr_destroy(&attr);
  if (rc != 0) return Status::FromErrno(rc, "region allocator: pthread_mutex_init");
  // One free block spanning the data area, in slot 0.
  m->descs[0].core = BlockCore{0, data_size, 0, 0, kNil, kNil, kFree, 0};
  QUIVER_RETURN_NOT_OK(Rebuild(m));
  m->total_allocations = 0;
  // The magic goes last: a crash while formatting leaves no valid allocator.
  __atomic_store_n(&m->magic, kMetaMagic, __ATOMIC_RELEASE);
  return RegionAllocator(m, data, data_size);
}

Result<RegionAllocator> RegionAllocator::Attach(void* metadata, uint64_t metadata_size,
                                                uint8_t* data, uint64_t data_size) {
  auto* m = static_cast<Meta*>(metadata);
  if (__atomic_load_n(&m->magic, __ATOMIC_ACQUIRE) != kMetaMagic) {
    return Status::Invalid("no region allocator metadata here (bad magic)");
  }
  if (m->version != kMetaVersion) {
    return Status::Invalid("region allocator metadata version ", m->version,
                           ", this build reads ", kMetaVersion);
  }
  if (m->data_size != data_size || m->metadata_size != metadata_size) {
    return Status::Invalid("region allocator geometry mismatch: metadata says ",
                           m->data_size, " data bytes / ", m->metadata_size,
                           " metadata bytes, the region has ", data_size, " / ",
                           metadata_size);
  }
  return RegionAllocator(m, data, data_size);
}

Result<uint8_t*> RegionAllocator::Allocate(uint64_t size, uint64_t alignment) {
  return Allocate(size, alignment, /*tag=*/0);
}

Result<uint8_t*> RegionAllocator::Allocate(uint64_t size, uint64_t alignment,
                                           uint64_t tag) {
  if (meta_ == nullptr) return Status::Invalid("allocator not attached");
  if (alignment != 0 && (!std::has_single_bit(alignment) || alignment > (64u << 20))) {
    return Status::Invalid("alignment ", alignment, " is not a power of two <= 64 MiB");
  }
  if (size > data_size_) {
    return Status::OutOfMemory("allocation of ", size, " bytes exceeds the region's ",
                               data_size_, " bytes");
  }
  LockedOp op(meta_);
  QUIVER_RETURN_NOT_OK(op.Lock());
  return Ops(meta_, &op, data_).Allocate(size, alignment, tag);
}

namespace {
Status CheckInDataArea(const void* meta, const uint8_t* ptr, const uint8_t* data,
                       uint64_t data_size) {
  if (meta == nullptr) return Status::Invalid("allocator not attached");
  if (ptr < data || ptr >= data + data_size) {
    return Status::Invalid("address ", Hex(reinterpret_cast<uint64_t>(ptr)),
                           " is outside this region's data area");
  }
  return Status::OK();
}

AllocationInfo InfoOf(const BlockCore& c, const uint8_t* data) {
  return AllocationInfo{reinterpret_cast<uint64_t>(data) + c.offset, c.size, c.requested,
                        c.owner_pid, c.tag};
}
}  // namespace

Result<uint8_t*> RegionAllocator::Reallocate(uint8_t* ptr, uint64_t new_size,
                                             uint64_t alignment) {
  QUIVER_RETURN_NOT_OK(CheckInDataArea(meta_, ptr, data_, data_size_));
  if (alignment != 0 && !std::has_single_bit(alignment)) {
    return Status::Invalid("alignment ", alignment, " is not a power of two");
  }
  if (new_size > data_size_) {
    return Status::OutOfMemory("reallocation to ", new_size, " bytes exceeds the region");
  }
  LockedOp op(meta_);
  QUIVER_RETURN_NOT_OK(op.Lock());
  return Ops(meta_, &op, data_)
      .Reallocate(static_cast<uint64_t>(ptr - data_), new_size, alignment);
}

Status RegionAllocator::Free(uint8_t* ptr) { return FreeIf(ptr, nullptr); }

// Lookup, SetTag and UpdateTag are one operation: find the allocation under
// the lock, then (maybe) change its tag.
Result<AllocationInfo> RegionAllocator::Lookup(const uint8_t* ptr, uint64_t len,
                                               bool containing) {
  return UpdateTag(ptr, len, containing,
                   [](const AllocationInfo&, uint64_t*) { return Status::OK(); });
}

Status RegionAllocator::SetTag(uint8_t* ptr, uint64_t tag) {
  return UpdateTag(ptr, 0, false,
                   [tag](const AllocationInfo&, uint64_t* t) {
                     *t = tag;
                     return Status::OK();
                   })
      .status();
}

Result<AllocationInfo> RegionAllocator::UpdateTag(const uint8_t* ptr, uint64_t len,
                                                  bool containing,
                                                  const TagUpdate& update) {
  QUIVER_RETURN_NOT_OK(CheckInDataArea(meta_, ptr, data_, data_size_));
  LockedOp op(meta_);
  QUIVER_RETURN_NOT_OK(op.Lock());
  Ops ops(meta_, &op, data_);
  const uint64_t off = static_cast<uint64_t>(ptr - data_);
  uint32_t i;
  if (containing) {
    i = ops.FindContaining(off);
    const BlockCore* c = i == kNil ? nullptr : &meta_->descs[i].core;
    if (c == nullptr || c->state != kAllocated || len > c->size ||
        off - c->offset > c->size - len) {
      return Status::Invalid("range [", Hex(reinterpret_cast<uint64_t>(ptr)), ", +", len,
                             ") is not inside one live allocation");
    }
  } else {
    QUIVER_ASSIGN_OR_RAISE(i, ops.FindAllocated(off));
  }
  BlockCore& c = meta_->descs[i].core;
  AllocationInfo info = InfoOf(c, data_);
  uint64_t tag = c.tag;
  QUIVER_RETURN_NOT_OK(update(info, &tag));
  if (tag != c.tag) {
    op.Touch(i);
    c.tag = tag;
  }
  info.tag = tag;
  return info;
}

Status RegionAllocator::UpdateTags(const std::vector<uint64_t>& addresses,
                                   const TagUpdates& update) {
  if (addresses.empty()) return Status::OK();
  LockedOp op(meta_);
  QUIVER_RETURN_NOT_OK(op.Lock());
  Ops ops(meta_, &op, data_);
  const BlockDesc* d = meta_->descs;
  uint32_t last = kNil;
  for (size_t k = 0; k < addresses.size(); ++k) {
    const auto* ptr = reinterpret_cast<const uint8_t*>(addresses[k]);
    QUIVER_RETURN_NOT_OK(CheckInDataArea(meta_, ptr, data_, data_size_));
    const uint64_t off = static_cast<uint64_t>(ptr - data_);
    // A few steps along the chain from the last block reach the next of a
    // sorted batch without a tree search.
    uint32_t i = kNil;
    for (uint32_t j = last, steps = 0; j != kNil && steps < 4;
         j = d[j].core.next, ++steps) {
      if (d[j].core.offset > off) break;
      if (d[j].core.offset == off) {
        if (d[j].core.state == kAllocated) i = j;
        break;
      }
    }
    if (i == kNil) {
      QUIVER_ASSIGN_OR_RAISE(i, ops.FindAllocated(off));
    }
    last = i;
    BlockCore& c = meta_->descs[i].core;
    uint64_t tag = c.tag;
    QUIVER_RETURN_NOT_OK(update(k, InfoOf(c, data_), &tag));
    if (tag != c.tag) {
      op.Touch(i);
      c.tag = tag;
      op.Commit();
    }
  }
  return Status::OK();
}

Status RegionAllocator::FreeIf(uint8_t* ptr, const FreeCheck& check) {
  QUIVER_RETURN_NOT_OK(CheckInDataArea(meta_, ptr, data_, data_size_));
  LockedOp op(meta_);
  QUIVER_RETURN_NOT_OK(op.Lock());
  Ops ops(meta_, &op, data_);
  const uint64_t off = static_cast<uint64_t>(ptr - data_);
  QUIVER_ASSIGN_OR_RAISE(uint32_t i, ops.FindAllocated(off));
  if (check) QUIVER_RETURN_NOT_OK(check(InfoOf(meta_->descs[i].core, data_)));
  ops.FreeBlock(i);
  return Status::OK();
}

Status RegionAllocator::ForEach(const AllocationVisitor& fn) {
  if (meta_ == nullptr) return Status::Invalid("allocator not attached");
  LockedOp op(meta_);
  QUIVER_RETURN_NOT_OK(op.Lock());
  // Slot 0 always holds the block at offset 0 (merges keep the lower
  // slot), so the address chain starts there.
  const BlockDesc* d = meta_->descs;
  uint64_t blocks = 0;
  for (uint32_t i = 0; i != kNil; i = d[i].core.next) {
    if (i >= meta_->capacity || ++blocks > meta_->capacity) {
      return Status::IOError("allocator metadata is corrupt: block chain loops");
    }
    if (d[i].core.state == kAllocated) fn(InfoOf(d[i].core, data_));
  }
  return Status::OK();
}

AllocatorStats RegionAllocator::Stats() {
  AllocatorStats s;
  if (meta_ == nullptr) return s;
  LockedOp op(meta_);
  if (!op.Lock().ok()) return s;
  Ops ops(meta_, &op, data_);
  s.capacity = meta_->data_size;
  s.used = meta_->used;
  s.free = meta_->free_bytes;
  uint32_t last = ops.by_size().Last();
  s.largest_free = last == kNil ? 0 : meta_->descs[last].core.size;
  s.live_allocations = meta_->live;
  s.free_blocks = meta_->free_blocks;
  s.total_allocations = meta_->total_allocations;
  s.recoveries = meta_->recoveries;
  s.descriptors_capacity = meta_->capacity;
  return s;
}

Status RegionAllocator::CheckConsistency() {
  if (meta_ == nullptr) return Status::Invalid("allocator not attached");
  LockedOp op(meta_);
  QUIVER_RETURN_NOT_OK(op.Lock());
  Ops ops(meta_, &op, data_);
  const BlockDesc* d = meta_->descs;
  uint64_t expected = 0, used = 0, free_bytes = 0, live = 0, free_blocks = 0, blocks = 0;
  uint32_t prev = kNil;
  for (uint32_t i = 0; i != kNil; i = d[i].core.next) {
    if (i >= meta_->capacity || ++blocks > meta_->capacity) {
      return Status::IOError("block chain leaves the table or loops");
    }
    const BlockCore& c = d[i].core;
    if (c.offset != expected || c.prev != prev) {
      return Status::IOError("block ", i, " at offset ", c.offset, " breaks the tiling");
    }
    if (c.state == kFree) {
      free_bytes += c.size;
      ++free_blocks;
      if (c.next != kNil && d[c.next].core.state == kFree) {
        return Status::IOError("adjacent free blocks ", i, " and ", c.next,
                               " were not coalesced");
      }
    } else if (c.state == kAllocated) {
      used += c.size;
      ++live;
    } else {
      return Status::IOError("block ", i, " in the chain is marked unused");
    }
    expected += c.size;
    prev = i;
  }
  if (expected != meta_->data_size)
    return Status::IOError("blocks do not cover the data");
  if (used != meta_->used || free_bytes != meta_->free_bytes || live != meta_->live ||
      free_blocks != meta_->free_blocks) {
    return Status::IOError("allocator counters disagree with the blocks");
  }
  if (ops.by_addr().Check() != static_cast<int64_t>(blocks)) {
    return Status::IOError("address tree is malformed");
  }
  if (ops.by_size().Check() != static_cast<int64_t>(free_blocks)) {
    return Status::IOError("size tree is malformed");
  }
  if (meta_->free_slots + blocks != meta_->capacity) {
    return Status::IOError("descriptor slots leak: ", meta_->free_slots, " free + ",
                           blocks, " used != ", meta_->capacity);
  }
  return Status::OK();
}

uint64_t RegionAllocator::granule() const { return meta_ ? meta_->granule : 0; }

void RegionAllocator::SetCrashHookForTesting(CrashHook hook) { g_crash_hook.store(hook); }

}  // namespace quiver::memory
