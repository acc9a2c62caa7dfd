// PinCache: pins an ObjectStore keeps on objects it got and released, so
// that getting them again needs no daemon round trip (docs/store.md,
// "Repeated Gets"), as Plasma's client kept recently released objects.
//
// An entry is good while three things hold for its home: the link's session
// is the one that took the pin (the daemon drops a dead session's pins),
// the link is up (a dead home's objects are ObjectLost, not cached), and
// the home's store epoch (memory::kStoreEpochOffset in its region's header
// page, incremented whenever an object there stops being readable) is the
// value read before the Get that took the pin. A delete, eviction or spill
// anywhere at that home makes every entry of that home stale. A pin kept
// here holds its object's memory like any reader's: the cache keeps at most
// `limit_bytes` of objects, least recently used out first, and drops its
// entries of a home soon after that home's epoch moves (the ObjectStore
// looks every 100 ms), so memory of deleted objects comes back and a home
// short of memory (it moves the epoch then too) gets its pins back.
//
// Thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "quiver/columnar/buffer.h"
#include "quiver/store/object_id.h"

namespace quiver::store {

struct PinRef;

class PinCache {
 public:
  struct Entry {
    uint32_t home = 0;
    uint64_t link_epoch = 0;   // the home session's epoch that holds the pin
    uint64_t store_epoch = 0;  // the home's store epoch read before the Get
    std::shared_ptr<PinRef> ref;
    std::shared_ptr<Buffer> data, metadata;
  };

  PinCache(uint64_t limit_bytes, uint64_t max_object)
      : limit_(limit_bytes), max_object_(std::min(max_object, limit_bytes)) {}
  bool enabled() const { return limit_ > 0; }

  // The entry of `id` (made the most recently used), unchecked.
  std::optional<Entry> Find(const ObjectId& id);
  // Find of each id, under one hold of the lock.
  std::vector<std::optional<Entry>> FindAll(const std::vector<ObjectId>& ids);
  // Keeps `e` for `id`, replacing what was there; drops the least recently
  // used entries past the limit (an object bigger than `max_object` is
  // not kept).
  void Put(const ObjectId& id, Entry e);
  // Put of each, under one hold of the lock.
  void PutAll(std::vector<std::pair<ObjectId, Entry>> entries);
  void Erase(const std::vector<ObjectId>& ids);
  // Drops every entry of `home` not taken under these epochs.
  void DropStale(uint32_t home, uint64_t store_epoch, uint64_t link_epoch);
  void Clear();
  // The homes entries are kept for.
  std::vector<uint32_t> Homes() const;
  uint64_t bytes() const;
  size_t size() const;

 private:
  // The LRU order runs through the slots themselves (a map's values do not
  // move): no second allocation per entry.
  struct Slot {
    Entry entry;
    uint64_t bytes = 0;
    const ObjectId* id = nullptr;  // its key
    Slot* newer = nullptr;
    Slot* older = nullptr;
  };
  void UnlinkLocked(Slot* s);
  void PushNewestLocked(Slot* s);
  // Removes `id`'s slot; its pin goes when `out` is destroyed (outside the
  // lock).
  void EraseLocked(const ObjectId& id, std::vector<Entry>* out);
  // How many entries each home has under each pair of epochs (store, link):
  // DropStale looks at the slots only when a home has entries under other
  // epochs than the ones it is given (a Get calls it for every home it
  // answers from the cache).
  using Epochs = std::pair<uint64_t, uint64_t>;
  void CountLocked(const Entry& e, int64_t delta);

  const uint64_t limit_, max_object_;
  mutable std::mutex mu_;
  std::unordered_map<ObjectId, Slot, ObjectIdHash> slots_;
  Slot* newest_ = nullptr;
  Slot* oldest_ = nullptr;
  uint64_t bytes_ = 0;
  std::unordered_map<uint32_t, std::map<Epochs, size_t>> epochs_;
};

}  // namespace quiver::store
