// The Quiver object store: Apache Arrow Plasma's API across every node of a
// cluster (docs/store.md).
//
//   auto client = quiver::Client::Connect({.config_path = "cluster.toml", .node = 0});
//   quiver::store::ObjectStore store(**client);
//   auto id = quiver::store::ObjectId::FromName("features");
//   auto buf = store.Create(id, 1 << 20);          // in cluster memory, writable
//   std::memset((*buf)->mutable_data(), 7, 1 << 20);
//   store.Seal(id);                                 // immutable, readable everywhere
//   // any process, any node:
//   auto got = store.Get({id}, /*timeout_ms=*/1000);  // zero-copy, pinned
//   ... (*got)[0].data ...
//   store.Release(id);
//
// An id exists once in the whole cluster. Objects live in one node's region,
// their *home*: this node's by default, another node's when this one is full
// (after evicting what it can), or the one CreateOptions names. Readers on
// any node read the home's memory directly; what they hold stays pinned at
// the home, so eviction and Delete never take bytes from under a reader.
// Everything the ObjectStore holds belongs to the Client's sessions: a
// process that dies leaves no half-created object and no pin behind.
//
// Thread-safe. The Client must outlive the ObjectStore; buffers returned
// keep what they need alive on their own.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "quiver/client.h"
#include "quiver/columnar/buffer.h"
#include "quiver/columnar/table.h"
#include "quiver/store/object_id.h"
#include "quiver/store/object_state.h"

namespace quiver::store {

struct CreateOptions {
  // Place the object in this node's region only (default: this node's,
  // else the others' in turn when it is full).
  std::optional<uint32_t> node;
};

struct TableOptions {
  // The whole table in this node's region, as one object.
  std::optional<uint32_t> node;
  // A table that fits no node's free memory is stored in parts of about
  // this many bytes (0: an eighth of the largest store's capacity, at most
  // 64 MiB), spread over the nodes with the most room.
  uint64_t part_bytes = 0;
};

// CreateAndSeal sends objects of at most this many bytes (data and metadata)
// with its request, so that their home writes and seals them in one round
// trip; bigger ones are created, written here and sealed (two).
constexpr uint64_t kMaxInlineObject = 64 << 10;

struct StoreOptions {
  // Pins kept on objects this store got and released, so that getting them
  // again needs no round trip (docs/store.md, "Repeated Gets"); they hold
  // their objects' memory like any reader's pin. 0: none kept.
  uint64_t pin_cache_bytes = 16ULL << 20;
  // Objects bigger than this are not kept: beside reading them, a round
  // trip is small.
  uint64_t pin_cache_max_object = 1ULL << 20;
  // Region memory this process maps in ahead of its writes, on a background
  // thread (memory/prefault.h): the start of the local region when the store
  // opens, and this many bytes past the end of each object it creates, so
  // that the next objects are written without page faults. Populating backs
  // those bytes of the region with memory. 0: none (every first write to a
  // page then faults). Only for regions in this host's shared memory.
  uint64_t prefault_ahead = 256ULL << 20;
};

// How PutTable stored a table.
struct TableLayout {
  uint64_t bytes = 0;                // the table's IPC stream(s)
  std::vector<ObjectId> parts;       // empty: one object
  std::vector<uint32_t> part_homes;  // per part
};

// One object a Get asked for.
struct ObjectBuffer {
  ObjectId id;
  // OK; NotFound (no such object when the time ran out); DeadlineExceeded
  // (still being created); ObjectLost (its home node is down: the message
  // names it).
  Status status;
  uint32_t home = 0;
  // Read-only views of cluster memory (no copy); the object stays pinned at
  // its home while either lives or until Release, whichever is later.
  std::shared_ptr<Buffer> data, metadata;
};

struct ObjectInfo {
  ObjectId id;
  ObjectState state = ObjectState::kCreating;
  uint32_t home = 0;
  uint64_t data_size = 0, metadata_size = 0;
  uint32_t pins = 0;  // readers holding it, cluster-wide
  std::chrono::system_clock::time_point last_use{};
};

struct ObjectEvent {
  enum class Kind : uint8_t { kSealed = 1, kDeleted = 2, kEvicted = 3 };
  Kind kind = Kind::kSealed;
  ObjectId id;
  uint32_t home = 0;
  uint64_t seq = 0;  // per home: 1, 2, ... in the order they happened there
  uint64_t data_size = 0, metadata_size = 0;
};

// Where a subscription stands: the last event seen from each home. Save it
// (ToString) to resume later.
struct EventCursor {
  std::map<uint32_t, uint64_t> last;  // home -> seq
  std::string ToString() const;       // "0:12,1:7"
  static Result<EventCursor> FromString(std::string_view text);
};

// The store's numbers at one node (the daemon's counters).
struct StoreStats {
  uint32_t node = 0;
  uint64_t creates = 0, seals = 0, aborts = 0, deletes = 0;
  uint64_t hits = 0, misses = 0, evictions = 0, evicted_bytes = 0;
  uint64_t spills = 0, spilled_bytes = 0, restores = 0, restored_bytes = 0;
  uint64_t spill_failures = 0;
  uint64_t objects_creating = 0, bytes_creating = 0;
  uint64_t objects_sealed = 0, bytes_sealed = 0;
  uint64_t objects_spilled = 0, bytes_spilled = 0;  // on disk now
  uint64_t capacity = 0, region_used = 0, directory_entries = 0;
  std::string spill_dir;         // empty: eviction drops objects
  std::string last_spill_error;  // why the last failed spill failed
};

class Subscription;

class ObjectStore {
 public:
  explicit ObjectStore(Client& client, const StoreOptions& options = {});
  ~ObjectStore();

  // A new object of `data_size` bytes (followed by `metadata`, written
  // here), writable through the returned buffer until Seal or Abort.
  // AlreadyExists if the id lives anywhere in the cluster.
  Result<std::shared_ptr<Buffer>> Create(const ObjectId& id, uint64_t data_size,
                                         std::string_view metadata = {},
                                         const CreateOptions& options = {});
  // Makes the object immutable and visible to every Get (only its creator).
  Status Seal(const ObjectId& id);
  // Drops an object this client is creating; its memory returns at once.
  Status Abort(const ObjectId& id);
  Status CreateAndSeal(const ObjectId& id, std::string_view data,
                       std::string_view metadata = {}, const CreateOptions& options = {});

  // Every object of `ids`, waiting up to `timeout_ms` for those not created
  // or not sealed yet (0: do not wait). One round trip per home for the
  // whole batch, plus one per directory node for ids whose home this client
  // has not seen yet. Each result has its own status.
  Result<std::vector<ObjectBuffer>> Get(const std::vector<ObjectId>& ids,
                                        int64_t timeout_ms = 0);
  // Lets go of one Get's reference to `id` (buffers still held stay valid).
  // The pin may stay in the store's cache for the next Get of it.
  Status Release(const ObjectId& id);
  // Lets go of every pin kept for repeated Gets.
  void DropCachedPins();
  // Removes sealed objects: new Gets miss them at once; their memory
  // returns when the last reader anywhere lets go. NotFound names ids that
  // do not exist; objects still being created are refused.
  Status Delete(const std::vector<ObjectId>& ids);
  // Sealed somewhere in the cluster.
  Result<bool> Contains(const ObjectId& id);
  // Every object of every reachable node, by id.
  Result<std::vector<ObjectInfo>> List();
  // Evicts least-recently-used sealed objects no one pins from `node`'s
  // region (default: this node's) until `bytes` are freed. Returns the
  // bytes freed.
  Result<uint64_t> Evict(uint64_t bytes, std::optional<uint32_t> node = std::nullopt);
  Result<StoreStats> Stats(uint32_t node);

  // Seal, delete and evict events of every node, after `from`.
  Result<std::unique_ptr<Subscription>> Subscribe(const EventCursor& from = {});

  // Arrow helpers. PutTable writes the table as an Arrow IPC stream
  // straight into cluster memory: one object when some node has room for
  // it, else parts of consecutive rows spread over several nodes (one
  // object each, created unsealed and sealed together, so a failure or a
  // crash leaves nothing) under a small object `id` listing them. A table
  // bigger than any node's region fits so. GetTable reads either back
  // zero-copy: its buffers point into the homes' memory and stay pinned
  // while referenced. DeleteTable deletes the object and its parts.
  Result<TableLayout> PutTable(const ObjectId& id, const Table& table,
                               const TableOptions& options = {});
  Result<TablePtr> GetTable(const ObjectId& id, int64_t timeout_ms = 0);
  Status DeleteTable(const ObjectId& id);

  struct Impl;  // internal (src/store/client/store_impl.h)

 private:
  std::unique_ptr<Impl> impl_;
};

class Subscription {
 public:
  ~Subscription();
  // The next events (from any home, each home's in order), waiting up to
  // `timeout_ms` for one. DataLoss-like gaps are reported by `lost()`.
  Result<std::vector<ObjectEvent>> Next(int64_t timeout_ms);
  const EventCursor& cursor() const { return cursor_; }
  // Homes whose log dropped events this subscription had not seen (List to
  // resync); cleared by the call.
  std::vector<uint32_t> TakeLost();

 private:
  friend class ObjectStore;
  struct State;
  explicit Subscription(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
  EventCursor cursor_;
};

}  // namespace quiver::store
