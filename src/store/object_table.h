// ObjectTable: the objects of the object store whose bytes live in this
// node's region (their *home*), over the node's catalogue.
//
// Each object is one catalogue allocation (data, then metadata). While it is
// being created it belongs to its creator's session, so a creator that dies
// or aborts leaves nothing. Seal hands it to the store: the store holds it
// by a publication reference in the catalogue, and every Get pins it there
// for the reading session. Delete and eviction drop the store's reference;
// the catalogue frees the memory when no pin remains anywhere, so a reader
// never loses bytes it holds. Eviction takes the least recently used sealed
// objects that no one pins.
//
// Every seal, delete and eviction is an event with a sequence number, kept
// in a bounded log that subscribers read from where they stopped.
//
// Thread-safe: one mutex, taken before the catalogue's (the catalogue never
// calls back); no method does I/O or waits for a peer.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "control/catalogue/catalogue.h"
#include "quiver/store/object_id.h"

namespace quiver::store {

using control::Handle;
using control::SessionId;

enum class ObjectState : uint8_t { kCreating = 1, kSealed = 2 };
const char* StateName(ObjectState state);

struct StoreLimits {
  // Bytes of the region the store counts as full (0: the whole region).
  uint64_t capacity = 0;
  // A Create that would take usage past high × capacity first evicts down
  // to low × capacity (or as far as unpinned objects allow).
  double high_watermark = 0.95;
  double low_watermark = 0.85;
  // Events kept for subscribers that fall behind.
  size_t event_log = 65536;
};

// One object as Get and Create return it.
struct ObjectView {
  ObjectId id;
  uint64_t address = 0;  // data; metadata follows at address + data_size
  uint64_t data_size = 0;
  uint64_t metadata_size = 0;
};

// One object as List shows it.
struct ObjectListing {
  ObjectId id;
  ObjectState state = ObjectState::kCreating;
  uint64_t address = 0, data_size = 0, metadata_size = 0;
  uint32_t pins = 0;                                 // at this node, by any reader
  std::chrono::system_clock::time_point last_use{};  // created, sealed or got
};

struct StoreEvent {
  enum class Kind : uint8_t { kSealed = 1, kDeleted = 2, kEvicted = 3 };
  uint64_t seq = 0;  // 1, 2, ... per home node
  Kind kind = Kind::kSealed;
  ObjectId id;
  uint64_t data_size = 0, metadata_size = 0;
};

struct StoreCounters {
  uint64_t creates = 0, seals = 0, aborts = 0, deletes = 0;
  uint64_t hits = 0;    // ids a Get found sealed here
  uint64_t misses = 0;  // ids a Get did not find here
  uint64_t evictions = 0, evicted_bytes = 0;
  uint64_t objects_creating = 0, bytes_creating = 0;
  uint64_t objects_sealed = 0, bytes_sealed = 0;
};

class ObjectTable {
 public:
  // `catalogue` (this node's, over a region of `region_bytes` bytes of
  // data) must outlive the table.
  ObjectTable(control::Catalogue* catalogue, uint32_t node, uint64_t region_bytes,
              StoreLimits limits);

  // A new object of data_size + metadata_size bytes, writable by the
  // creating session until it seals or aborts. AlreadyExists if the id
  // lives here; evicts first when the region is past its high watermark,
  // and once more if the allocation still finds no room.
  Result<ObjectView> Create(SessionId session, const ObjectId& id, uint64_t data_size,
                            uint64_t metadata_size);
  // Only the creator seals (PermissionDenied else); the object is
  // immutable and readable from then on. Sealing twice is Invalid.
  Status Seal(SessionId session, const ObjectId& id);
  // Only the creator aborts an unsealed object: its memory is freed at once.
  Status Abort(SessionId session, const ObjectId& id);

  struct GetReply {
    std::vector<ObjectView> found;   // sealed: pinned under `pin`
    std::vector<ObjectId> creating;  // not sealed yet
    std::vector<ObjectId> missing;   // not here
    Handle pin;                      // valid when `found` is not empty
  };
  // Pins every sealed object of `ids` for the session, under one handle.
  Result<GetReply> Get(SessionId session, const std::vector<ObjectId>& ids);
  // Lets go of a Get's pin (only the session that got it may).
  Status Release(SessionId session, const Handle& pin);

  struct DeleteReply {
    uint32_t deleted = 0;   // gone from the store
    uint32_t deferred = 0;  // of those, memory kept until readers release
    std::vector<ObjectId> missing, creating;
  };
  // Sealed objects leave the store at once (new Gets miss them); their
  // memory returns when the last pin on them goes.
  DeleteReply Delete(const std::vector<ObjectId>& ids);

  bool Contains(const ObjectId& id) const;  // sealed and here
  std::vector<ObjectListing> List() const;
  // Evicts least recently used sealed objects no one pins until `bytes`
  // are freed or none is left to evict. Returns the bytes freed.
  uint64_t Evict(uint64_t bytes);

  // After the catalogue closed `session`: forgets the objects it was
  // creating (the catalogue has freed them).
  void SessionClosed(SessionId session);

  // Events after `after`, at most `max`. `*lost` is set when events after
  // `after` have left the log (the subscriber must List to resync).
  std::vector<StoreEvent> EventsSince(uint64_t after, size_t max, bool* lost) const;
  uint64_t last_event() const;
  StoreCounters Counters() const;
  uint64_t capacity() const { return capacity_; }

 private:
  struct Entry {
    ObjectState state = ObjectState::kCreating;
    uint64_t address = 0, data_size = 0, metadata_size = 0;
    SessionId creator = 0;
    uint64_t lru = 0;  // key in lru_ (sealed only)
    std::chrono::system_clock::time_point last_use{};
  };
  using Entries = std::unordered_map<ObjectId, Entry, ObjectIdHash>;

  uint64_t SizeOf(const Entry& e) const;
  // The entry of an object `session` is creating; NotFound, Invalid (with
  // `if_sealed`) or PermissionDenied ("only its creator <verb> it") else.
  Result<Entries::iterator> CreatingLocked(SessionId session, const ObjectId& id,
                                           const char* verb, const char* if_sealed);
  void TouchLocked(const ObjectId& id, Entry* e);
  void EventLocked(StoreEvent::Kind kind, const ObjectId& id, const Entry& e);
  // Drops the store's reference of a sealed entry and erases it.
  void DropSealedLocked(Entries::iterator it, StoreEvent::Kind why);
  uint64_t EvictLocked(uint64_t bytes);
  uint64_t UsedLocked() const;

  control::Catalogue* catalogue_;
  const uint32_t node_;
  const StoreLimits limits_;
  const uint64_t capacity_;

  mutable std::mutex mu_;
  Entries entries_;
  std::map<uint64_t, ObjectId> lru_;  // oldest use first
  uint64_t next_lru_ = 1;
  std::deque<StoreEvent> events_;
  uint64_t next_seq_ = 1;
  StoreCounters counters_;
};

}  // namespace quiver::store
