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
// With a spill directory, eviction writes each object it takes to a file
// there instead of dropping it; the object stays in the store (spilled) and
// the next Get that asks for it reads it back into the region.
//
// Every seal, delete and eviction (not a spill) is an event with a sequence
// number, kept in a bounded log that subscribers read from where they
// stopped.
//
// Thread-safe: one mutex, taken before the catalogue's (the catalogue never
// calls back). No method waits for a peer. Eviction for a Create or an
// Evict writes its spill files without the mutex: victims are chosen and
// marked under it, written, then committed under it again only if no one
// deleted or pinned them meanwhile (else the file is dropped and the object
// stays as it is). A Get reads spilled objects back the same way (the
// eviction that makes room for them holds the mutex); other Gets of those
// objects wait for it, a Delete meanwhile wins.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "control/catalogue/catalogue.h"
#include "quiver/store/object_id.h"
#include "quiver/store/object_state.h"
#include "store/spill_dir.h"
#include "store/store_record.h"

namespace quiver::store {

using control::Handle;
using control::SessionId;

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
using ObjectView = StoreRecord;  // an object where it lies

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
  uint64_t hits = 0;                          // ids a Get found sealed here
  uint64_t misses = 0;                        // ids a Get did not find here
  uint64_t evictions = 0, evicted_bytes = 0;  // dropped from the store
  uint64_t spills = 0, spilled_bytes = 0;     // written to the spill directory
  uint64_t restores = 0, restored_bytes = 0;  // read back by a Get
  uint64_t spill_failures = 0;                // objects kept: their spill failed
  uint64_t objects_creating = 0, bytes_creating = 0;
  uint64_t objects_sealed = 0, bytes_sealed = 0;
  uint64_t objects_spilled = 0, bytes_spilled = 0;  // on disk now
};

class ObjectTable {
 public:
  // `catalogue` (this node's, over a region of `region_bytes` bytes of
  // data) must outlive the table. With `spill`, eviction spills.
  ObjectTable(control::Catalogue* catalogue, uint32_t node, uint64_t region_bytes,
              StoreLimits limits, std::optional<SpillDir> spill = std::nullopt);
  ~ObjectTable() { DropRetired(); }

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
    // Spilled, but unreadable (why): forgotten, like a deleted object.
    std::vector<std::pair<ObjectId, std::string>> lost;
    Handle pin;            // valid when `found` is not empty
    bool waiting = false;  // `unless_creating` and one is: nothing else set
  };
  // Pins every sealed object of `ids` for the session, under one handle,
  // restoring spilled ones first. OutOfMemory when a spilled one finds no
  // room (it stays spilled); one whose file is unreadable or corrupt is
  // `lost` (the store forgets it). With `unless_creating`, a batch of which
  // one object is still being created here pins nothing and answers only
  // `waiting` (the caller waits for the seal and asks again).
  Result<GetReply> Get(SessionId session, const std::vector<ObjectId>& ids,
                       bool unless_creating = false);
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
  // Evicts (or spills) least recently used sealed objects no one pins until
  // `bytes` are freed or none is left to evict. Returns the bytes freed.
  uint64_t Evict(uint64_t bytes);

  // After a take-over: the objects whose records (store/store_record.h)
  // are among `records` come back sealed, as the previous daemon left them;
  // their records are removed from `records` and their ids appended to
  // `adopted`. A record that is corrupt, names memory that is not a live
  // sealed object, or repeats an id is left in `records` (the daemon frees
  // it) and described in `problems`.
  void Adopt(std::vector<control::FoundRecord>* records, std::vector<ObjectId>* adopted,
             std::vector<std::string>* problems);

  // After the catalogue closed `session`: forgets the objects it was
  // creating (the catalogue has freed them).
  void SessionClosed(SessionId session);
  // The ids that left the table (aborted, deleted, evicted, their creator
  // gone) since the last call: the cluster's id directory forgets them.
  std::vector<ObjectId> TakeRemoved();
  // Removes the spill files of objects Get restored, which it only renamed
  // out of the way: call after answering the Get (and on the way down).
  void DropRetired();

  // Events after `after`, at most `max`. `*lost` is set when events after
  // `after` have left the log (the subscriber must List to resync).
  std::vector<StoreEvent> EventsSince(uint64_t after, size_t max, bool* lost) const;
  uint64_t last_event() const;
  StoreCounters Counters() const;
  // Why the last spill that failed did (empty if none has).
  std::string LastSpillError() const;
  uint64_t capacity() const { return capacity_; }
  const SpillDir* spill() const { return spill_ ? &*spill_ : nullptr; }
  // Restores allocate under `session` (a system session of the catalogue:
  // no client's quota pays for the store's own work); 0: the getter's.
  void UseSessionForRestores(SessionId session) { restore_session_ = session; }
  // Every node's cache is coherent with this region (one host's shared
  // memory): spills and restores need not flush.
  void SetCoherent(bool coherent) { coherent_ = coherent; }
  // The region's store epoch (memory::kStoreEpochOffset): incremented, and
  // once now, whenever an object stops being readable here.
  void SetEpochWord(uint64_t* word);
  // Tests: called while spill files are written or read without the mutex.
  void SetSpillHookForTesting(std::function<void()> hook) {
    spill_hook_ = std::move(hook);
  }

 private:
  struct Entry {
    ObjectState state = ObjectState::kCreating;
    uint64_t address = 0, data_size = 0, metadata_size = 0;
    SessionId creator = 0;
    bool in_lru = false;  // sealed, in memory: `lru` is its place in lru_
    std::list<ObjectId>::iterator lru;
    uint64_t record = 0;     // its record in the region (sealed only; 0: none)
    uint64_t spilling = 0;   // the ticket of its spill being written (0: none)
    uint64_t restoring = 0;  // the ticket of its file being read back (0: none)
    std::chrono::system_clock::time_point last_use{};
  };
  using Entries = std::unordered_map<ObjectId, Entry, ObjectIdHash>;

  uint64_t SizeOf(const Entry& e) const;
  // The entry of an object `session` is creating; NotFound, Invalid (with
  // `if_sealed`) or PermissionDenied ("only its creator <verb> it") else.
  Result<Entries::iterator> CreatingLocked(SessionId session, const ObjectId& id,
                                           const char* verb, const char* if_sealed);
  // Marks the object used at `now`: the newest in the LRU order.
  void TouchLocked(const ObjectId& id, Entry* e,
                   std::chrono::system_clock::time_point now);
  void DropLruLocked(Entry* e);
  // `size` bytes for `session`, evicting first past the high watermark and
  // once more when the region has no hole big enough.
  // With `lock`, spill files are written without it (see the top).
  Result<control::Allocation> AllocateLocked(SessionId session, uint64_t size,
                                             std::unique_lock<std::mutex>* lock);
  // Hands an entry `session` wrote to the store: sealed, held by the store.
  Status PublishLocked(SessionId session, const ObjectId& id, Entry* e);
  // Reads the spilled objects of `ids` back into the region, the files
  // without the mutex (`lock` is released meanwhile). One whose file is
  // unreadable or corrupt is forgotten and described in `lost`.
  Status RestoreAll(SessionId getter, const std::vector<ObjectId>& ids,
                    std::unique_lock<std::mutex>* lock,
                    std::map<ObjectId, std::string>* lost);
  // One object eviction writes to the spill directory.
  struct SpillJob {
    ObjectId id;
    uint64_t ticket = 0, address = 0, size = 0;
    Status written;
  };
  // Least recently used sealed objects no one pins, worth `bytes`: without
  // a spill directory dropped at once (their bytes added to *freed), with
  // one marked and appended to *jobs.
  void ChooseVictimsLocked(uint64_t bytes, uint64_t* freed, std::vector<SpillJob>* jobs);
  void WriteSpills(std::vector<SpillJob>* jobs) const;  // needs no mutex
  // The written spills whose objects are still unpinned and the same: their
  // memory goes. Returns the bytes freed.
  uint64_t CommitSpillsLocked(std::vector<SpillJob>* jobs);
  void EventLocked(StoreEvent::Kind kind, const ObjectId& id, const Entry& e);
  // Drops the store's reference of a sealed entry and erases it.
  void DropSealedLocked(Entries::iterator it, StoreEvent::Kind why);
  // With `lock`, spill files are written without it.
  uint64_t EvictLocked(uint64_t bytes, std::unique_lock<std::mutex>* lock);
  uint64_t UsedLocked() const;

  control::Catalogue* catalogue_;
  const uint32_t node_;
  const StoreLimits limits_;
  const uint64_t capacity_;
  const std::optional<SpillDir> spill_;
  SessionId restore_session_ = 0;
  bool coherent_ = false;
  uint64_t* epoch_ = nullptr;
  void BumpEpochLocked();

  mutable std::mutex mu_;
  // The ids of the Get making room for its restores: eviction leaves them.
  std::unordered_set<ObjectId, ObjectIdHash> batch_;
  // Signalled when restores finish (Gets of the same objects wait).
  std::condition_variable restored_cv_;
  std::string last_spill_error_;
  uint64_t next_ticket_ = 1;
  std::function<void()> spill_hook_;
  Entries entries_;
  std::list<ObjectId> lru_;  // oldest use first
  std::deque<StoreEvent> events_;
  uint64_t next_seq_ = 1;
  StoreCounters counters_;
  std::vector<ObjectId> removed_;
  std::vector<std::pair<ObjectId, uint64_t>> retired_;  // spill files: id, ticket
};

}  // namespace quiver::store
