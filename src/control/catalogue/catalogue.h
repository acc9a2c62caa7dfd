// Catalogue: the one owner of every object's life in a node's region.
//
// The node's daemon allocates every object in its region through the
// catalogue, for a session (one client connection). An object is held by
// its creator's session until that session lets go (Free) or ends, by every
// publication that names it, and by every pin a reader holds; it is freed
// when none remains, never before. Sessions carry the quotas and rate limits
// of their authenticated identity. What must outlive the daemon process
// (sealed bit, creator node, "some reader pinned it", chunk records) is in
// the allocator's tags (control/catalogue/object_tag.h), from which Recover
// rebuilds the object table when a restarted daemon takes its region over.
// docs/control-plane.md states the rules; docs/security.md why.
//
// Thread-safe: one mutex; every method is short (no I/O, no peer).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "control/tls/credentials.h"
#include "quiver/control/descriptor.h"
#include "quiver/memory/region_allocator.h"
#include "quiver/util/result.h"

namespace quiver::control {

// A session's number at one daemon; never reused while the daemon runs.
using SessionId = uint64_t;

// An unguessable capability (pins): 128 random bits.
struct Handle {
  uint64_t hi = 0, lo = 0;
  static Handle Random();
  std::string Bytes() const;  // 16 bytes
  static Result<Handle> FromBytes(std::string_view bytes);
  bool operator==(const Handle&) const = default;
};
struct HandleHash {
  size_t operator()(const Handle& h) const {
    return h.hi ^ (h.lo * 0x9E3779B97F4A7C15ULL);
  }
};

// Who a session belongs to.
struct SessionInfo {
  PeerIdentity identity;  // from the certificate, or this node's client (Unix)
  bool local = false;     // over the node's Unix socket
  int32_t pid = 0;        // informational
  std::string address;    // informational
  // A service of this daemon acting for the cluster (the object store
  // reading a spilled object back): no quota or rate applies, and what it
  // allocates is charged to no node's clients.
  bool system = false;
};

// The limits of one region, resolved to bytes (memory::ClusterLimits).
struct CatalogueLimits {
  uint64_t session_quota = ~0ULL;
  uint64_t node_quota = ~0ULL;
  uint64_t max_malloc = ~0ULL;
  uint64_t malloc_rate = 20000;        // per second per session
  uint64_t node_malloc_rate = 100000;  // per second per node identity
  uint32_t max_sessions_per_node = 256;
  uint32_t max_pins_per_session = 65536;  // pin handles one session holds
};

struct Allocation {
  uint64_t address = 0;
  uint64_t size = 0;  // granule-padded
};

// A chunk record found in the region at take-over.
struct FoundRecord {
  uint64_t address = 0;
  std::string bytes;
};

struct CatalogueStats {
  uint64_t objects = 0, sealed = 0, records = 0, recovered = 0;
  uint64_t pinned_objects = 0, published_objects = 0;
  uint64_t sessions = 0, pins = 0;
  uint64_t bytes = 0;  // in objects and records
  bool recovering = false;
};

class Catalogue {
 public:
  using Clock = std::chrono::steady_clock;

  // `allocator` (the node's own region) must outlive the catalogue.
  Catalogue(memory::RegionAllocator* allocator, uint32_t node, uint64_t granule,
            CatalogueLimits limits);

  // For tests of rate limits: the clock the token buckets read.
  void SetClockForTesting(std::function<Clock::time_point()> now);

  // --- Take-over -----------------------------------------------------------
  // Rebuilds the object table from a region a previous daemon left: every
  // allocation becomes a *recovered* object held by nobody. Returns the
  // chunk records found, for the directory. Until EndRecovery, nothing
  // recovered is freed; a publication or a reclaimed pin claims an object.
  Result<std::vector<FoundRecord>> Recover();
  // Frees every recovered object nothing claimed. Returns the bytes freed.
  uint64_t EndRecovery();
  bool recovering() const;

  // --- Sessions ------------------------------------------------------------
  // CapacityError when the identity's node already has the most sessions.
  Result<SessionId> OpenSession(const SessionInfo& info);
  struct Released {
    uint32_t objects_freed = 0;
    uint64_t bytes_freed = 0;
    uint32_t pins_released = 0;
  };
  // Everything the session held goes: its unsealed allocations are freed,
  // its creator references and pins dropped (objects nothing else holds
  // are freed). Unknown ids are ignored.
  Released CloseSession(SessionId session);
  bool HasSession(SessionId session) const;

  // --- Memory --------------------------------------------------------------
  // A new object of `size` bytes held by `session`, within its quotas and
  // rate limits (OutOfMemory names the limit that refused it).
  Result<Allocation> Allocate(SessionId session, uint64_t size, uint64_t alignment);
  // Resizes an unsealed object the session holds (in place or moved).
  Result<Allocation> Reallocate(SessionId session, uint64_t address, uint64_t new_size,
                                uint64_t alignment);
  // The session lets go of objects it created: unsealed ones are freed at
  // once, sealed ones when no publication or pin holds them. `deferred`
  // counts the latter. An object the session does not hold is refused
  // (PermissionDenied or NotFound) and nothing is let go.
  Status Free(SessionId session, const std::vector<uint64_t>& addresses,
              uint32_t* freed = nullptr, uint32_t* deferred = nullptr);
  // Seals the objects holding `ranges`; only their creator may (an object
  // already sealed is accepted from anyone: sealing is idempotent).
  Status Seal(SessionId session, const std::vector<BufferRange>& ranges);

  // --- Publications ----------------------------------------------------------
  // Every range (in this region) must lie inside one live, sealed object;
  // each distinct object gets one more publication reference. Returns them.
  Result<std::vector<uint64_t>> AddPublication(const std::vector<BufferRange>& ranges);
  // Takes one publication reference from each (frees what is then unheld).
  void DropPublication(const std::vector<uint64_t>& objects);
  // A chunk record (daemon-made, sealed, never pinned), charged to `node`.
  Result<uint64_t> WriteRecord(uint32_t node, std::string_view bytes);
  void FreeRecord(uint64_t address);

  // --- Pins ------------------------------------------------------------------
  // Pins live sealed objects for `session`; the handle releases them.
  Result<Handle> Pin(SessionId session, const std::vector<uint64_t>& objects);
  // After a take-over, a reader re-pins what it held: only while
  // recovering, and only objects that are published or were pinned when
  // the previous daemon stopped.
  Result<Handle> Reclaim(SessionId session, const std::vector<BufferRange>& ranges);
  // Only the session that took the pin may release it (NotFound otherwise,
  // whether or not the handle exists elsewhere).
  Status Release(SessionId session, const Handle& handle);

  // --- Views -----------------------------------------------------------------
  CatalogueStats Stats() const;  // walks every object
  // Bytes of the region the catalogue's objects hold (Stats().bytes), kept
  // as they come and go: for callers on every allocation.
  uint64_t Bytes() const;
  // Pins (handles) holding this object; publications naming it.
  uint32_t PinsOf(uint64_t object) const;
  uint32_t PublicationsOf(uint64_t object) const;
  // Bytes held by a session (quota use).
  uint64_t HeldBy(SessionId session) const;
  const CatalogueLimits& limits() const { return limits_; }

 private:
  struct Object {
    uint64_t size = 0;
    uint32_t creator_node = 0;
    bool charged = true;    // counted in creator_node's account
    SessionId creator = 0;  // 0: nobody holds the creator reference
    bool sealed = false;
    bool record = false;
    bool recovered = false;
    uint16_t tag_pins = 0;  // what the region said at take-over
    uint32_t publications = 0;
    uint32_t pins = 0;
  };
  struct Bucket {
    double tokens = 0;
    Clock::time_point last{};
    bool Take(double rate, Clock::time_point now);
  };
  struct Session {
    SessionInfo info;
    std::unordered_set<uint64_t> created;
    std::unordered_map<Handle, std::vector<uint64_t>, HandleHash> pins;
    uint64_t held = 0;
    Bucket bucket;
  };
  struct NodeAccount {
    uint64_t bytes = 0;
    uint32_t sessions = 0;
    Bucket bucket;
  };

  // The object whose allocation holds [address, address + length).
  Result<std::pair<uint64_t, Object*>> FindLocked(uint64_t address, uint64_t length);
  Session* SessionLocked(SessionId id);
  Status SetTagLocked(uint64_t address, uint64_t tag_bits, uint64_t mask);
  // Writes each object's pin count into its region tag (what a restarted
  // daemon reads), all under one hold of the allocator's lock; `found[k]`
  // is the object at `objects[k]`.
  void SyncPinsLocked(const std::vector<uint64_t>& objects,
                      const std::vector<Object*>& found);
  // Frees the object if nothing holds it any more.
  void MaybeFreeLocked(uint64_t address);
  void FreeLocked(uint64_t address);
  Status PinLocked(Session* s, std::vector<uint64_t> objects, Handle* out);
  // Lets go of one pin's hold on each of `objects`, freeing what that frees.
  void UnpinLocked(const std::vector<uint64_t>& objects);

  memory::RegionAllocator* allocator_;
  const uint32_t node_;
  const uint64_t granule_;
  const CatalogueLimits limits_;
  std::function<Clock::time_point()> now_;

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Object> objects_;  // by address
  std::unordered_map<SessionId, Session> sessions_;
  std::unordered_map<uint32_t, NodeAccount> nodes_;
  SessionId next_session_ = 1;
  bool recovering_ = false;
  uint64_t freed_bytes_ = 0;  // ever freed (for reports)
  uint64_t bytes_ = 0;        // held now: the sum of objects_' sizes
};

}  // namespace quiver::control
