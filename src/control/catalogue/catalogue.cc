#include "control/catalogue/catalogue.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "control/catalogue/object_tag.h"
#include "quiver/util/string_builder.h"
#include "util/round_up.h"

namespace quiver::control {

using util::Hex;

namespace {

using util::RoundUp;

std::string Who(const SessionInfo& info) {
  std::string s = info.identity.ToString();
  if (info.pid != 0) s += " (pid " + std::to_string(info.pid) + ")";
  return s;
}

}  // namespace

namespace {

// Kernel randomness, fetched 4 KiB at a time: handles stay unpredictable
// without a system call each.
uint64_t SecureRandom64() {
  thread_local uint64_t pool[512];
  thread_local size_t next = sizeof(pool) / sizeof(pool[0]);
  if (next == sizeof(pool) / sizeof(pool[0])) {
    size_t got = 0;
    while (got < sizeof(pool)) {
      const ssize_t n =
          getrandom(reinterpret_cast<char*>(pool) + got, sizeof(pool) - got, 0);
      if (n > 0) {
        got += static_cast<size_t>(n);
      } else if (errno != EINTR) {
        Status::IOError("getrandom failed: ", std::strerror(errno)).Abort();
      }
    }
    next = 0;
  }
  const uint64_t v = pool[next];
  pool[next++] = 0;  // used words do not linger
  return v;
}

}  // namespace

Handle Handle::Random() {
  Handle h;
  h.hi = SecureRandom64();
  h.lo = SecureRandom64();
  return h;
}

std::string Handle::Bytes() const {
  std::string out(16, '\0');
  std::memcpy(out.data(), &hi, 8);
  std::memcpy(out.data() + 8, &lo, 8);
  return out;
}

Result<Handle> Handle::FromBytes(std::string_view bytes) {
  if (bytes.size() != 16) {
    return Status::Invalid("a handle has 16 bytes, not ", bytes.size());
  }
  Handle h;
  std::memcpy(&h.hi, bytes.data(), 8);
  std::memcpy(&h.lo, bytes.data() + 8, 8);
  return h;
}

bool Catalogue::Bucket::Take(double rate, Clock::time_point now) {
  if (last == Clock::time_point{}) {
    tokens = rate;  // a full bucket to start with: bursts up to one second's worth
  } else {
    tokens =
        std::min(rate, tokens + rate * std::chrono::duration<double>(now - last).count());
  }
  last = now;
  if (tokens < 1.0) return false;
  tokens -= 1.0;
  return true;
}

Catalogue::Catalogue(memory::RegionAllocator* allocator, uint32_t node, uint64_t granule,
                     CatalogueLimits limits)
    : allocator_(allocator), node_(node), granule_(granule), limits_(limits), now_([] {
        return Clock::now();
      }) {}

void Catalogue::SetClockForTesting(std::function<Clock::time_point()> now) {
  std::lock_guard<std::mutex> lock(mu_);
  now_ = std::move(now);
}

// ---------------------------------------------------------------------------
// Take-over

Result<std::vector<FoundRecord>> Catalogue::Recover() {
  std::vector<memory::AllocationInfo> all;
  QUIVER_RETURN_NOT_OK(allocator_->ForEach(
      [&](const memory::AllocationInfo& info) { all.push_back(info); }));
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FoundRecord> records;
  for (const auto& info : all) {
    Object o;
    o.size = info.size;
    o.creator_node = tag::Creator(info.tag);
    o.sealed = tag::Sealed(info.tag);
    o.record = tag::Record(info.tag);
    o.recovered = true;
    o.tag_pins = static_cast<uint16_t>(tag::Pins(info.tag));
    objects_[info.address] = o;
    bytes_ += o.size;
    nodes_[o.creator_node].bytes += o.size;
    if (o.record && o.sealed && info.requested <= info.size) {
      const auto* p = reinterpret_cast<const char*>(info.address);
      records.push_back({info.address, std::string(p, info.requested)});
    }
  }
  recovering_ = true;
  return records;
}

uint64_t Catalogue::EndRecovery() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t before = freed_bytes_;
  std::vector<uint64_t> unclaimed;
  for (auto& [address, o] : objects_) {
    if (o.recovered && !o.record) unclaimed.push_back(address);
  }
  for (uint64_t a : unclaimed) {
    // Nobody claimed it: no record publishes it, no reader re-pinned it.
    objects_[a].recovered = false;
    MaybeFreeLocked(a);
  }
  recovering_ = false;
  return freed_bytes_ - before;
}

bool Catalogue::recovering() const {
  std::lock_guard<std::mutex> lock(mu_);
  return recovering_;
}

// ---------------------------------------------------------------------------
// Sessions

Result<SessionId> Catalogue::OpenSession(const SessionInfo& info) {
  std::lock_guard<std::mutex> lock(mu_);
  NodeAccount& node = nodes_[info.identity.node];
  if (node.sessions >= limits_.max_sessions_per_node) {
    return Status::CapacityError(info.identity.ToString(), " already has ", node.sessions,
                                 " sessions at node ", node_, ", the most allowed");
  }
  ++node.sessions;
  const SessionId id = next_session_++;
  sessions_[id].info = info;
  return id;
}

bool Catalogue::HasSession(SessionId session) const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.count(session) != 0;
}

Catalogue::Released Catalogue::CloseSession(SessionId id) {
  std::lock_guard<std::mutex> lock(mu_);
  Released r;
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return r;
  Session s = std::move(it->second);
  sessions_.erase(it);
  NodeAccount& node = nodes_[s.info.identity.node];
  if (node.sessions > 0) --node.sessions;
  const uint64_t before = freed_bytes_;
  for (auto& [handle, objects] : s.pins) {
    ++r.pins_released;
    UnpinLocked(objects);
  }
  for (uint64_t a : s.created) {
    auto o = objects_.find(a);
    if (o == objects_.end()) continue;
    o->second.creator = 0;
    const size_t had = objects_.size();
    if (!o->second.sealed) {
      FreeLocked(a);  // nobody else can hold memory that is not sealed
    } else {
      MaybeFreeLocked(a);
    }
    r.objects_freed += had != objects_.size();
  }
  r.bytes_freed = freed_bytes_ - before;
  return r;
}

Catalogue::Session* Catalogue::SessionLocked(SessionId id) {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : &it->second;
}

// ---------------------------------------------------------------------------
// Memory

Result<Allocation> Catalogue::Allocate(SessionId session, uint64_t size,
                                       uint64_t alignment) {
  if (alignment != 0 && (alignment & (alignment - 1)) != 0) {
    return Status::Invalid("alignment ", alignment, " is not a power of two");
  }
  std::lock_guard<std::mutex> lock(mu_);
  Session* s = SessionLocked(session);
  if (s == nullptr) return Status::NotFound("no session ", session, " at node ", node_);
  if (s->info.identity.role != PeerRole::kClient) {
    return Status::PermissionDenied(s->info.identity.ToString(),
                                    " does not allocate; clients do");
  }
  if (size > limits_.max_malloc) {
    return Status::OutOfMemory("an allocation of ", size, " bytes exceeds node ", node_,
                               "'s limit of ", limits_.max_malloc, " bytes");
  }
  const uint64_t padded = RoundUp(std::max<uint64_t>(size, 1), granule_);
  const uint32_t who = s->info.identity.node;
  NodeAccount& account = nodes_[who];
  const auto now = now_();
  const bool system = s->info.system;
  if (system) {
    // No quota or rate: only the region's own size limits it.
  } else if (!s->bucket.Take(static_cast<double>(limits_.malloc_rate), now)) {
    return Status::OutOfMemory("session of ", Who(s->info),
                               " exceeds the allocation rate limit of ",
                               limits_.malloc_rate, " per second");
  }
  if (system) {
  } else if (!account.bucket.Take(static_cast<double>(limits_.node_malloc_rate), now)) {
    return Status::OutOfMemory("clients of node ", who,
                               " exceed the allocation rate limit of ",
                               limits_.node_malloc_rate, " per second");
  } else if (s->held + padded > limits_.session_quota) {
    return Status::OutOfMemory("session of ", Who(s->info), " holds ", s->held,
                               " bytes at node ", node_, "; ", padded,
                               " more would exceed its quota of ", limits_.session_quota);
  } else if (account.bytes + padded > limits_.node_quota) {
    return Status::OutOfMemory(
        "clients of node ", who, " hold ", account.bytes, " bytes at node ", node_, "; ",
        padded, " more would exceed the node quota of ", limits_.node_quota);
  }
  QUIVER_ASSIGN_OR_RAISE(uint8_t * p,
                         allocator_->Allocate(size, alignment, tag::Make(who)));
  const auto address = reinterpret_cast<uint64_t>(p);
  Object& o = objects_[address];
  o = Object{};
  o.size = padded;
  bytes_ += padded;
  o.creator_node = who;
  o.charged = !system;
  o.creator = session;
  s->created.insert(address);
  s->held += padded;
  if (o.charged) account.bytes += padded;
  return Allocation{address, padded};
}

Result<Allocation> Catalogue::Reallocate(SessionId session, uint64_t address,
                                         uint64_t new_size, uint64_t alignment) {
  std::lock_guard<std::mutex> lock(mu_);
  Session* s = SessionLocked(session);
  if (s == nullptr) return Status::NotFound("no session ", session, " at node ", node_);
  auto it = objects_.find(address);
  if (it == objects_.end() || it->second.creator != session) {
    return Status::PermissionDenied("Realloc of ", Hex(address),
                                    ": no allocation this session holds starts there");
  }
  if (it->second.sealed) {
    return Status::FailedPrecondition("allocation ", Hex(address),
                                      " is sealed: it never changes again");
  }
  if (new_size > limits_.max_malloc) {
    return Status::OutOfMemory("Realloc to ", new_size, " bytes exceeds node ", node_,
                               "'s limit of ", limits_.max_malloc, " bytes");
  }
  const uint64_t old = it->second.size;
  const uint64_t padded = RoundUp(std::max<uint64_t>(new_size, 1), granule_);
  NodeAccount& account = nodes_[it->second.creator_node];
  if (padded > old) {
    if (s->held + padded - old > limits_.session_quota) {
      return Status::OutOfMemory("Realloc to ", new_size,
                                 " bytes would exceed the quota of ",
                                 limits_.session_quota, " bytes of ", Who(s->info));
    }
    if (account.bytes + padded - old > limits_.node_quota) {
      return Status::OutOfMemory("Realloc to ", new_size,
                                 " bytes would exceed the node quota of ",
                                 limits_.node_quota, " bytes");
    }
  }
  QUIVER_ASSIGN_OR_RAISE(
      uint8_t * q,
      allocator_->Reallocate(reinterpret_cast<uint8_t*>(address), new_size, alignment));
  const auto moved = reinterpret_cast<uint64_t>(q);
  Object o = it->second;
  o.size = padded;
  if (moved != address) {
    objects_.erase(it);
    s->created.erase(address);
    s->created.insert(moved);
    (void)allocator_->SetTag(q, tag::Make(o.creator_node));
  }
  objects_[moved] = o;
  bytes_ = bytes_ - old + padded;
  s->held = s->held - old + padded;
  if (o.charged) account.bytes = account.bytes - old + padded;
  return Allocation{moved, padded};
}

Status Catalogue::Free(SessionId session, const std::vector<uint64_t>& addresses,
                       uint32_t* freed, uint32_t* deferred) {
  std::lock_guard<std::mutex> lock(mu_);
  Session* s = SessionLocked(session);
  if (s == nullptr) return Status::NotFound("no session ", session, " at node ", node_);
  // Check everything first: a refused free lets go of nothing.
  for (uint64_t a : addresses) {
    auto it = objects_.find(a);
    if (it == objects_.end() || it->second.record) {
      return Status::NotFound("Free of ", Hex(a), ": no allocation starts there");
    }
    if (it->second.creator != session) {
      return Status::PermissionDenied("Free of ", Hex(a),
                                      ": this session does not hold that allocation "
                                      "(only its creator lets go of it)");
    }
  }
  uint32_t now = 0, later = 0;
  for (uint64_t a : addresses) {
    auto it = objects_.find(a);
    // Listed twice: the first let go already (the object may still be held
    // by a publication or a pin, and must not be let go of again).
    if (it == objects_.end() || it->second.creator != session) continue;
    Object& o = it->second;
    o.creator = 0;
    s->created.erase(a);
    s->held -= o.size;
    if (!o.sealed) {
      FreeLocked(a);
      ++now;
      continue;
    }
    const size_t had = objects_.size();
    MaybeFreeLocked(a);
    (had != objects_.size() ? now : later) += 1;
  }
  if (freed) *freed = now;
  if (deferred) *deferred = later;
  return Status::OK();
}

Status Catalogue::Seal(SessionId session, const std::vector<BufferRange>& ranges) {
  std::lock_guard<std::mutex> lock(mu_);
  Session* s = SessionLocked(session);
  if (s == nullptr) return Status::NotFound("no session ", session, " at node ", node_);
  std::vector<uint64_t> to_seal;
  std::unordered_set<uint64_t> pinned;  // filled on first need
  bool pinned_known = false;
  for (const auto& r : ranges) {
    if (r.length == 0) continue;
    QUIVER_ASSIGN_OR_RAISE(auto found, FindLocked(r.address, r.length));
    Object* o = found.second;
    if (o->creator == session) {
      if (!o->sealed) to_seal.push_back(found.first);
      continue;
    }
    // Someone else's object: already sealed, it may be named again only by
    // a session that holds it by a pin (it re-publishes what it read). An
    // address alone proves nothing: after a restart or a free, the same
    // address may hold another client's object.
    if (o->sealed && !pinned_known) {
      for (const auto& [handle, objects] : s->pins) {
        pinned.insert(objects.begin(), objects.end());
      }
      pinned_known = true;
    }
    if (o->sealed && pinned.count(found.first) != 0) continue;
    return Status::PermissionDenied(
        "allocation ", Hex(found.first), " at node ", node_,
        " is not this session's: only its creator seals it, and only a reader that "
        "pins it may publish it again",
        o->creator == 0 && o->recovered
            ? " (it is from before node " + std::to_string(node_) + "'s daemon restarted)"
            : std::string());
  }
  for (uint64_t a : to_seal) {
    QUIVER_RETURN_NOT_OK(SetTagLocked(a, tag::kSealed, tag::kSealed));
    objects_[a].sealed = true;
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Publications and records

Result<std::vector<uint64_t>> Catalogue::AddPublication(
    const std::vector<BufferRange>& ranges) {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<uint64_t> distinct;
  for (const auto& r : ranges) {
    if (r.length == 0) continue;
    QUIVER_ASSIGN_OR_RAISE(auto found, FindLocked(r.address, r.length));
    const Object* o = found.second;
    if (!o->sealed) {
      return Status::FailedPrecondition("buffer [", Hex(r.address), ", +", r.length,
                                        ") lies in allocation ", Hex(found.first),
                                        " which is not sealed");
    }
    distinct.insert(found.first);
  }
  // A recovered object stays recovered: what held it before the restart
  // (a reader's pin not re-claimed yet) may still hold it, until EndRecovery.
  for (uint64_t a : distinct) ++objects_[a].publications;
  return std::vector<uint64_t>(distinct.begin(), distinct.end());
}

void Catalogue::DropPublication(const std::vector<uint64_t>& objects) {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t a : objects) {
    auto it = objects_.find(a);
    if (it == objects_.end() || it->second.publications == 0) continue;
    --it->second.publications;
    MaybeFreeLocked(a);
  }
}

Result<uint64_t> Catalogue::WriteRecord(uint32_t node, std::string_view bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  QUIVER_ASSIGN_OR_RAISE(
      uint8_t * p, allocator_->Allocate(bytes.size(), 0,
                                        tag::Make(node) | tag::kRecord | tag::kSealed));
  std::memcpy(p, bytes.data(), bytes.size());
  const auto address = reinterpret_cast<uint64_t>(p);
  Object& o = objects_[address];
  o = Object{};
  o.size = RoundUp(std::max<uint64_t>(bytes.size(), 1), granule_);
  bytes_ += o.size;
  o.creator_node = node;
  o.sealed = o.record = true;
  nodes_[node].bytes += o.size;
  return address;
}

void Catalogue::FreeRecord(uint64_t address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(address);
  if (it != objects_.end() && it->second.record) FreeLocked(address);
}

// ---------------------------------------------------------------------------
// Pins

Status Catalogue::PinLocked(Session* s, std::vector<uint64_t> objects, Handle* out) {
  if (s->pins.size() >= limits_.max_pins_per_session) {
    return Status::CapacityError(
        "this session of ", Who(s->info), " already holds ", s->pins.size(),
        " pins at node ", node_,
        ", the most one session may (limits.max_pins_per_session)");
  }
  // Batches come mostly in address order already (objects created in turn).
  if (!std::is_sorted(objects.begin(), objects.end())) {
    std::sort(objects.begin(), objects.end());
  }
  objects.erase(std::unique(objects.begin(), objects.end()), objects.end());
  std::vector<Object*> found;
  found.reserve(objects.size());
  for (uint64_t a : objects) {
    auto it = objects_.find(a);
    if (it == objects_.end() || it->second.record || !it->second.sealed) {
      return Status::NotFound("object ", Hex(a), " at node ", node_,
                              " is gone or not sealed");
    }
    found.push_back(&it->second);
  }
  for (Object* o : found) ++o->pins;
  SyncPinsLocked(objects, found);
  Handle h = Handle::Random();
  s->pins.emplace(h, std::move(objects));
  *out = h;
  return Status::OK();
}

Result<Handle> Catalogue::Pin(SessionId session, const std::vector<uint64_t>& objects) {
  std::lock_guard<std::mutex> lock(mu_);
  Session* s = SessionLocked(session);
  if (s == nullptr) return Status::NotFound("no session ", session, " at node ", node_);
  Handle h;
  QUIVER_RETURN_NOT_OK(PinLocked(s, objects, &h));
  return h;
}

Result<Handle> Catalogue::Reclaim(SessionId session,
                                  const std::vector<BufferRange>& ranges) {
  std::lock_guard<std::mutex> lock(mu_);
  Session* s = SessionLocked(session);
  if (s == nullptr) return Status::NotFound("no session ", session, " at node ", node_);
  if (!recovering_) {
    return Status::FailedPrecondition(
        "node ", node_, " is not recovering from a restart: pins are taken by chunk");
  }
  std::vector<uint64_t> objects;
  for (const auto& r : ranges) {
    if (r.length == 0) continue;
    QUIVER_ASSIGN_OR_RAISE(auto found, FindLocked(r.address, r.length));
    const Object* o = found.second;
    if (o->tag_pins == 0 && o->publications == 0 && o->pins == 0) {
      return Status::PermissionDenied("object ", Hex(found.first),
                                      " was neither pinned nor published before node ",
                                      node_, " restarted: it cannot be re-claimed");
    }
    objects.push_back(found.first);
  }
  Handle h;
  QUIVER_RETURN_NOT_OK(PinLocked(s, std::move(objects), &h));
  return h;
}

Status Catalogue::Release(SessionId session, const Handle& handle) {
  std::lock_guard<std::mutex> lock(mu_);
  Session* s = SessionLocked(session);
  auto it = s == nullptr ? decltype(s->pins)::iterator{} : s->pins.find(handle);
  if (s == nullptr || it == s->pins.end()) {
    return Status::NotFound("this session holds no such pin at node ", node_);
  }
  std::vector<uint64_t> objects = std::move(it->second);
  s->pins.erase(it);
  UnpinLocked(objects);
  return Status::OK();
}

void Catalogue::UnpinLocked(const std::vector<uint64_t>& objects) {
  std::vector<uint64_t> held;
  std::vector<Object*> found;
  held.reserve(objects.size());
  found.reserve(objects.size());
  for (uint64_t a : objects) {
    auto o = objects_.find(a);
    if (o == objects_.end()) continue;
    --o->second.pins;
    held.push_back(a);
    found.push_back(&o->second);
  }
  SyncPinsLocked(held, found);
  // Only unpinned ones may go; which, decided before any is freed.
  std::vector<uint64_t> unpinned;
  for (size_t k = 0; k < held.size(); ++k) {
    if (found[k]->pins == 0) unpinned.push_back(held[k]);
  }
  for (uint64_t a : unpinned) MaybeFreeLocked(a);
}

// ---------------------------------------------------------------------------
// Internals

Result<std::pair<uint64_t, Catalogue::Object*>> Catalogue::FindLocked(uint64_t address,
                                                                      uint64_t length) {
  auto info = allocator_->Lookup(reinterpret_cast<const uint8_t*>(address), length,
                                 /*containing=*/true);
  if (!info.ok()) {
    return Status::NotFound("[", Hex(address), ", +", length,
                            ") is not inside one live allocation of node ", node_);
  }
  auto it = objects_.find(info->address);
  if (it == objects_.end() || it->second.record) {
    return Status::NotFound("[", Hex(address), ", +", length,
                            ") is not inside an object of node ", node_);
  }
  return std::make_pair(info->address, &it->second);
}

Status Catalogue::SetTagLocked(uint64_t address, uint64_t bits, uint64_t mask) {
  return allocator_
      ->UpdateTag(reinterpret_cast<const uint8_t*>(address), 0, false,
                  [&](const memory::AllocationInfo&, uint64_t* t) {
                    *t = (*t & ~mask) | (bits & mask);
                    return Status::OK();
                  })
      .status();
}

void Catalogue::SyncPinsLocked(const std::vector<uint64_t>& objects,
                               const std::vector<Object*>& found) {
  constexpr uint64_t kMask = tag::kPinMax << tag::kPinShift;
  (void)allocator_->UpdateTags(objects,
                               [&](size_t k, const memory::AllocationInfo&, uint64_t* t) {
                                 const uint64_t bits = tag::WithPins(0, found[k]->pins);
                                 *t = (*t & ~kMask) | (bits & kMask);
                                 return Status::OK();
                               });
}

void Catalogue::MaybeFreeLocked(uint64_t address) {
  auto it = objects_.find(address);
  if (it == objects_.end()) return;
  const Object& o = it->second;
  if (o.recovered || o.record || o.creator != 0 || o.publications != 0 || o.pins != 0) {
    return;
  }
  FreeLocked(address);
}

void Catalogue::FreeLocked(uint64_t address) {
  auto it = objects_.find(address);
  if (it == objects_.end()) return;
  if (it->second.charged) {
    NodeAccount& account = nodes_[it->second.creator_node];
    account.bytes -= std::min(account.bytes, it->second.size);
  }
  freed_bytes_ += it->second.size;
  bytes_ -= it->second.size;
  objects_.erase(it);
  // The allocator refuses only pointers that are not live allocations,
  // which the object table rules out.
  (void)allocator_->Free(reinterpret_cast<uint8_t*>(address));
}

CatalogueStats Catalogue::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  CatalogueStats st;
  for (const auto& [a, o] : objects_) {
    ++(o.record ? st.records : st.objects);
    st.sealed += o.sealed && !o.record;
    st.recovered += o.recovered;
    st.pinned_objects += o.pins > 0;
    st.published_objects += o.publications > 0;
    st.bytes += o.size;
  }
  st.sessions = sessions_.size();
  for (const auto& [id, s] : sessions_) st.pins += s.pins.size();
  st.recovering = recovering_;
  return st;
}

uint64_t Catalogue::Bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

uint32_t Catalogue::PinsOf(uint64_t object) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(object);
  return it == objects_.end() ? 0 : it->second.pins;
}

uint32_t Catalogue::PublicationsOf(uint64_t object) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(object);
  return it == objects_.end() ? 0 : it->second.publications;
}

uint64_t Catalogue::HeldBy(SessionId session) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session);
  return it == sessions_.end() ? 0 : it->second.held;
}

}  // namespace quiver::control
