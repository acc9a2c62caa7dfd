#include "store/object_table.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "quiver/coherence/flush.h"

namespace quiver::store {

namespace {

constexpr uint64_t kAlignment = 64;

std::string Describe(const ObjectId& id) { return "object " + id.Hex(); }

}  // namespace

const char* StateName(ObjectState state) {
  switch (state) {
    case ObjectState::kCreating:
      return "creating";
    case ObjectState::kSealed:
      return "sealed";
    case ObjectState::kSpilled:
      return "spilled";
  }
  return "unknown";
}

ObjectTable::ObjectTable(control::Catalogue* catalogue, uint32_t node,
                         uint64_t region_bytes, StoreLimits limits,
                         std::optional<SpillDir> spill)
    : catalogue_(catalogue),
      node_(node),
      limits_(limits),
      capacity_(limits.capacity == 0 ? region_bytes
                                     : std::min(limits.capacity, region_bytes)),
      spill_(std::move(spill)) {}

void ObjectTable::SetEpochWord(uint64_t* word) {
  std::lock_guard<std::mutex> lock(mu_);
  epoch_ = word;
  BumpEpochLocked();
}

void ObjectTable::BumpEpochLocked() {
  if (epoch_ == nullptr) return;
  std::atomic_ref<uint64_t>(*epoch_).fetch_add(1, std::memory_order_acq_rel);
  // Readers on other nodes must see it in memory, not in this node's cache.
  if (!coherent_) (void)coherence::FlushRange(epoch_, sizeof(*epoch_));
}

uint64_t ObjectTable::SizeOf(const Entry& e) const {
  return e.data_size + e.metadata_size;
}

uint64_t ObjectTable::UsedLocked() const { return catalogue_->Bytes(); }

void ObjectTable::TouchLocked(const ObjectId& id, Entry* e,
                              std::chrono::system_clock::time_point now) {
  e->last_use = now;
  if (e->state != ObjectState::kSealed) return;
  if (e->in_lru) {
    lru_.splice(lru_.end(), lru_, e->lru);
  } else {
    e->lru = lru_.insert(lru_.end(), id);
    e->in_lru = true;
  }
}

void ObjectTable::DropLruLocked(Entry* e) {
  if (e->in_lru) lru_.erase(e->lru);
  e->in_lru = false;
}

void ObjectTable::EventLocked(StoreEvent::Kind kind, const ObjectId& id, const Entry& e) {
  StoreEvent ev;
  ev.seq = next_seq_++;
  ev.kind = kind;
  ev.id = id;
  ev.data_size = e.data_size;
  ev.metadata_size = e.metadata_size;
  events_.push_back(ev);
  while (events_.size() > std::max<size_t>(limits_.event_log, 1)) events_.pop_front();
}

Result<ObjectView> ObjectTable::Create(SessionId session, const ObjectId& id,
                                       uint64_t data_size, uint64_t metadata_size) {
  if (id.nil()) return Status::Invalid("the nil object id names no object");
  if (data_size > UINT64_MAX - metadata_size) {
    return Status::Invalid(Describe(id), ": data and metadata sizes overflow");
  }
  const uint64_t size = data_size + metadata_size;
  std::unique_lock<std::mutex> lock(mu_);
  if (entries_.count(id) != 0) {
    return Status::AlreadyExists(Describe(id), " exists at node ", node_);
  }
  if (size > capacity_) {
    // Evicting everything would not make room: keep what is here.
    return Status::OutOfMemory("Create of ", Describe(id), ": ", size,
                               " bytes is more than the store's capacity at node ", node_,
                               " (", capacity_, " bytes)");
  }
  auto a = AllocateLocked(session, size, &lock);
  if (!a.ok()) return a.status().WithContext("Create of " + Describe(id));
  if (entries_.count(id) != 0) {  // created while eviction wrote its spills
    (void)catalogue_->Free(session, {a->address});
    return Status::AlreadyExists(Describe(id), " exists at node ", node_);
  }
  Entry e;
  e.address = a->address;
  e.data_size = data_size;
  e.metadata_size = metadata_size;
  e.creator = session;
  e.last_use = std::chrono::system_clock::now();
  entries_.emplace(id, e);
  ++counters_.creates;
  return ObjectView{id, e.address, data_size, metadata_size};
}

Result<control::Allocation> ObjectTable::AllocateLocked(
    SessionId session, uint64_t size, std::unique_lock<std::mutex>* lock) {
  // Room first: past the high watermark, evict down to the low one.
  const uint64_t used = UsedLocked();
  const auto high = static_cast<uint64_t>(limits_.high_watermark * capacity_);
  if (used + size > high) {
    const auto low = static_cast<uint64_t>(limits_.low_watermark * capacity_);
    const uint64_t target = size > low ? 0 : low - size;
    if (used > target) EvictLocked(used - target, lock);
  }
  auto a = catalogue_->Allocate(session, size, kAlignment);
  if (!a.ok() && a.status().IsOutOfMemory()) {
    // The region had no hole big enough: evict what the request needs and
    // try once more (quota and rate refusals stay refusals).
    if (EvictLocked(size, lock) > 0) a = catalogue_->Allocate(session, size, kAlignment);
  }
  return a;
}

Status ObjectTable::PublishLocked(SessionId session, const ObjectId& id, Entry* e) {
  const std::vector<control::BufferRange> range{
      {e->address, std::max<uint64_t>(SizeOf(*e), 1)}};
  QUIVER_RETURN_NOT_OK(catalogue_->Seal(session, range));
  // The store holds it from now on; the session lets go.
  QUIVER_RETURN_NOT_OK(catalogue_->AddPublication(range).status());
  QUIVER_RETURN_NOT_OK(catalogue_->Free(session, {e->address}));
  e->state = ObjectState::kSealed;
  e->creator = 0;
  TouchLocked(id, e, std::chrono::system_clock::now());
  // So that a daemon restarted on this region finds it again. Without room
  // for the record the object still lives, only not past a restart.
  auto record = catalogue_->WriteRecord(
      node_, EncodeStoreRecord({id, e->address, e->data_size, e->metadata_size}));
  e->record = record.ok() ? *record : 0;
  return Status::OK();
}

void ObjectTable::Adopt(std::vector<control::FoundRecord>* records,
                        std::vector<ObjectId>* adopted,
                        std::vector<std::string>* problems) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = records->begin(); it != records->end();) {
    if (!IsStoreRecord(it->bytes)) {
      ++it;
      continue;
    }
    auto r = DecodeStoreRecord(it->bytes);
    Status st = r.status();
    if (st.ok() && entries_.count(r->id) != 0) {
      st = Status::AlreadyExists(Describe(r->id), " has two records");
    }
    const bool spilled = st.ok() && r->address == 0;
    if (spilled && (!spill_ || !spill_->Exists(r->id))) {
      st = Status::NotFound(Describe(r->id), " was spilled, but its file is gone");
    } else if (st.ok() && !spilled) {
      const uint64_t size = r->data_size + r->metadata_size;
      st = catalogue_->AddPublication({{r->address, std::max<uint64_t>(size, 1)}})
               .status();
    }
    if (!st.ok()) {
      problems->push_back("record at " + std::to_string(it->address) + ": " +
                          st.message());
      ++it;
      continue;
    }
    Entry e;
    e.state = spilled ? ObjectState::kSpilled : ObjectState::kSealed;
    e.address = r->address;
    e.data_size = r->data_size;
    e.metadata_size = r->metadata_size;
    e.record = it->address;
    auto [pos, inserted] = entries_.emplace(r->id, e);
    if (!spilled) TouchLocked(r->id, &pos->second, std::chrono::system_clock::now());
    adopted->push_back(r->id);
    it = records->erase(it);
  }
}

Result<ObjectTable::Entries::iterator> ObjectTable::CreatingLocked(
    SessionId session, const ObjectId& id, const char* verb, const char* if_sealed) {
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    return Status::NotFound(Describe(id), " is not at node ", node_);
  }
  if (it->second.state != ObjectState::kCreating) {
    return Status::Invalid(Describe(id), if_sealed);
  }
  if (it->second.creator != session) {
    return Status::PermissionDenied(Describe(id),
                                    " is being created by another session: only its "
                                    "creator ",
                                    verb, " it");
  }
  return it;
}

Status ObjectTable::Seal(SessionId session, const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  QUIVER_ASSIGN_OR_RAISE(auto it,
                         CreatingLocked(session, id, "seals", " is sealed already"));
  Entry& e = it->second;
  QUIVER_RETURN_NOT_OK(PublishLocked(session, id, &e));
  EventLocked(StoreEvent::Kind::kSealed, id, e);
  ++counters_.seals;
  return Status::OK();
}

Status ObjectTable::Abort(SessionId session, const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  QUIVER_ASSIGN_OR_RAISE(
      auto it, CreatingLocked(session, id, "aborts", " is sealed: Delete it instead"));
  const Entry& e = it->second;
  QUIVER_RETURN_NOT_OK(catalogue_->Free(session, {e.address}));
  removed_.push_back(id);
  entries_.erase(it);
  ++counters_.aborts;
  return Status::OK();
}

Result<ObjectTable::GetReply> ObjectTable::Get(SessionId session,
                                               const std::vector<ObjectId>& ids,
                                               bool unless_creating) {
  std::unique_lock<std::mutex> lock(mu_);
  std::map<ObjectId, std::string> lost;
  // One look-up per id: `at` keeps what it found (nullptr: not here) while
  // the mutex is held. Spilled objects come back first, their files read
  // without the mutex; an eviction meanwhile may take one of the others:
  // then again.
  std::vector<Entry*> at(ids.size());
  bool creating = false;
  for (int restores = 0;;) {
    bool restoring = false, spilled = false;
    creating = false;
    for (size_t k = 0; k < ids.size(); ++k) {
      auto it = entries_.find(ids[k]);
      Entry* e = it == entries_.end() ? nullptr : &it->second;
      at[k] = e;
      if (e == nullptr) continue;
      restoring = restoring || e->restoring != 0;
      spilled = spilled || e->state == ObjectState::kSpilled;
      creating = creating || e->state == ObjectState::kCreating;
    }
    if (restoring) {
      restored_cv_.wait(lock);
      continue;
    }
    if (!spilled) break;
    if (restores++ == 8) {
      return Status::OutOfMemory("Get at node ", node_, ": objects it restored were ",
                                 "evicted again before it could pin them; the store "
                                 "is too full for this batch");
    }
    QUIVER_RETURN_NOT_OK(RestoreAll(session, ids, &lock, &lost));
  }
  GetReply reply;
  if (creating && unless_creating) {
    reply.waiting = true;
    return reply;
  }
  std::vector<uint64_t> objects;
  std::vector<Entry*> pinned;
  objects.reserve(ids.size());
  pinned.reserve(ids.size());
  reply.found.reserve(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) {
    const ObjectId& id = ids[k];
    Entry* e = at[k];
    if (e == nullptr) {
      auto l = lost.find(id);
      if (l != lost.end()) {
        reply.lost.emplace_back(id, l->second);
      } else {
        reply.missing.push_back(id);
      }
      continue;
    }
    if (e->state == ObjectState::kCreating) {
      reply.creating.push_back(id);
      continue;
    }
    reply.found.push_back({id, e->address, e->data_size, e->metadata_size});
    objects.push_back(e->address);
    pinned.push_back(e);
  }
  if (!objects.empty()) {
    QUIVER_ASSIGN_OR_RAISE(reply.pin, catalogue_->Pin(session, objects));
    const auto now = std::chrono::system_clock::now();
    for (size_t k = 0; k < pinned.size(); ++k) {
      TouchLocked(reply.found[k].id, pinned[k], now);
    }
  }
  counters_.hits += reply.found.size();
  counters_.misses += reply.missing.size();
  return reply;
}

Status ObjectTable::Release(SessionId session, const Handle& pin) {
  return catalogue_->Release(session, pin);
}

Status ObjectTable::RestoreAll(SessionId getter, const std::vector<ObjectId>& ids,
                               std::unique_lock<std::mutex>* lock,
                               std::map<ObjectId, std::string>* lost) {
  const SessionId session = restore_session_ != 0 ? restore_session_ : getter;
  struct Job {
    ObjectId id;
    uint64_t ticket = 0, address = 0, size = 0;
    Status read;
  };
  std::vector<Job> jobs;
  // Room for each (evicting others, never one of this batch), and marks:
  // other Gets of them wait, Delete may still take them.
  batch_.insert(ids.begin(), ids.end());
  struct Unprotect {
    std::unordered_set<ObjectId, ObjectIdHash>* set;
    ~Unprotect() { set->clear(); }
  } unprotect{&batch_};
  for (const ObjectId& id : ids) {
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.state != ObjectState::kSpilled ||
        it->second.restoring != 0) {
      continue;  // not spilled, or twice in the batch
    }
    const uint64_t size = SizeOf(it->second);
    auto a = AllocateLocked(session, size, nullptr);
    if (!a.ok()) {
      for (const Job& job : jobs) {
        entries_[job.id].restoring = 0;
        (void)catalogue_->Free(session, {job.address});
      }
      restored_cv_.notify_all();
      return a.status().WithContext("restoring spilled " + Describe(id) + " at node " +
                                    std::to_string(node_));
    }
    it->second.restoring = next_ticket_++;
    jobs.push_back({id, it->second.restoring, a->address, size, {}});
  }
  batch_.clear();
  lock->unlock();
  if (spill_hook_ && !jobs.empty()) spill_hook_();
  for (Job& job : jobs) {
    auto* p = reinterpret_cast<uint8_t*>(job.address);
    job.read = spill_->Read(job.id, p, job.size);
    // Readers on other nodes must find the bytes in memory, not in this
    // node's caches.
    if (job.read.ok() && !coherent_) job.read = coherence::FlushRange(p, job.size);
  }
  lock->lock();
  for (Job& job : jobs) {
    auto it = entries_.find(job.id);
    if (it == entries_.end() || it->second.restoring != job.ticket) {
      // Deleted meanwhile (its file with it): the room goes back.
      (void)catalogue_->Free(session, {job.address});
      continue;
    }
    Entry& e = it->second;
    e.restoring = 0;
    const uint64_t spilled_record = e.record;
    Status st = job.read;
    if (st.ok()) {
      e.address = job.address;
      st = PublishLocked(session, job.id, &e);
    }
    if (spilled_record != 0) catalogue_->FreeRecord(spilled_record);
    spill_->Retire(job.id, job.ticket);
    retired_.emplace_back(job.id, job.ticket);
    if (!st.ok()) {
      // The object cannot come back: the store forgets it.
      (void)catalogue_->Free(session, {job.address});
      EventLocked(StoreEvent::Kind::kDeleted, job.id, e);
      removed_.push_back(job.id);
      entries_.erase(it);
      (*lost)[job.id] = "spilled " + Describe(job.id) + " is lost: " + st.message();
      continue;
    }
    ++counters_.restores;
    counters_.restored_bytes += job.size;
  }
  restored_cv_.notify_all();
  return Status::OK();
}

void ObjectTable::WriteSpills(std::vector<SpillJob>* jobs) const {
  for (SpillJob& job : *jobs) {
    const auto* p = reinterpret_cast<const uint8_t*>(job.address);
    // The writer may have been another node: read memory, not stale lines.
    job.written = coherent_ ? Status::OK() : coherence::FlushRange(p, job.size);
    if (job.written.ok())
      job.written = spill_->WritePart(job.id, job.ticket, p, job.size);
  }
}

uint64_t ObjectTable::CommitSpillsLocked(std::vector<SpillJob>* jobs) {
  uint64_t freed = 0;
  for (SpillJob& job : *jobs) {
    auto it = entries_.find(job.id);
    // Deleted meanwhile (perhaps created again): not this object any more.
    const bool same = it != entries_.end() && it->second.spilling == job.ticket;
    if (same) it->second.spilling = 0;
    Status st = job.written;
    if (st.ok() && (!same || catalogue_->PinsOf(job.address) > 0)) {
      spill_->Discard(job.id, job.ticket);  // gone, or a Get took it: it stays
      continue;
    }
    if (st.ok()) st = spill_->Commit(job.id, job.ticket);
    if (!st.ok()) {
      ++counters_.spill_failures;
      last_spill_error_ = st.message();
      continue;
    }
    Entry& e = it->second;
    DropLruLocked(&e);
    // Its record now says "spilled", so a restarted daemon finds it there.
    auto spilled = catalogue_->WriteRecord(
        node_, EncodeStoreRecord({job.id, 0, e.data_size, e.metadata_size}));
    if (e.record != 0) catalogue_->FreeRecord(e.record);
    e.record = spilled.ok() ? *spilled : 0;
    BumpEpochLocked();
    catalogue_->DropPublication({e.address});
    e.address = 0;
    e.state = ObjectState::kSpilled;
    ++counters_.spills;
    counters_.spilled_bytes += job.size;
    freed += job.size;
  }
  return freed;
}

void ObjectTable::DropSealedLocked(Entries::iterator it, StoreEvent::Kind why) {
  BumpEpochLocked();
  Entry& e = it->second;
  DropLruLocked(&e);
  EventLocked(why, it->first, e);
  if (e.state == ObjectState::kSpilled) {
    spill_->Remove(it->first);
    if (e.record != 0) catalogue_->FreeRecord(e.record);
  } else {
    if (e.record != 0) catalogue_->FreeRecord(e.record);
    catalogue_->DropPublication({e.address});
  }
  removed_.push_back(it->first);
  entries_.erase(it);
}

ObjectTable::DeleteReply ObjectTable::Delete(const std::vector<ObjectId>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  DeleteReply reply;
  for (const ObjectId& id : ids) {
    auto it = entries_.find(id);
    if (it == entries_.end()) {
      reply.missing.push_back(id);
      continue;
    }
    if (it->second.state == ObjectState::kCreating) {
      reply.creating.push_back(id);
      continue;
    }
    if (it->second.state == ObjectState::kSealed &&
        catalogue_->PinsOf(it->second.address) > 0) {
      ++reply.deferred;
    }
    DropSealedLocked(it, StoreEvent::Kind::kDeleted);
    ++reply.deleted;
    ++counters_.deletes;
  }
  return reply;
}

bool ObjectTable::Contains(const ObjectId& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  return it != entries_.end() && it->second.state != ObjectState::kCreating;
}

void ObjectTable::DropRetired() {
  std::vector<std::pair<ObjectId, uint64_t>> files;
  {
    std::lock_guard<std::mutex> lock(mu_);
    files.swap(retired_);
  }
  for (const auto& [id, ticket] : files) spill_->Discard(id, ticket);
}

std::vector<ObjectId> ObjectTable::TakeRemoved() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(removed_, {});
}

std::vector<ObjectListing> ObjectTable::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ObjectListing> out;
  out.reserve(entries_.size());
  for (const auto& [id, e] : entries_) {
    ObjectListing l;
    l.id = id;
    l.state = e.state;
    l.address = e.address;
    l.data_size = e.data_size;
    l.metadata_size = e.metadata_size;
    l.pins = e.state == ObjectState::kSealed ? catalogue_->PinsOf(e.address) : 0;
    l.last_use = e.last_use;
    out.push_back(l);
  }
  std::sort(out.begin(), out.end(),
            [](const ObjectListing& a, const ObjectListing& b) { return a.id < b.id; });
  return out;
}

uint64_t ObjectTable::Evict(uint64_t bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  return EvictLocked(bytes, &lock);
}

void ObjectTable::ChooseVictimsLocked(uint64_t bytes, uint64_t* freed,
                                      std::vector<SpillJob>* jobs) {
  uint64_t chosen = 0;
  for (auto l = lru_.begin(); l != lru_.end() && chosen < bytes;) {
    auto it = entries_.find(*l);
    ++l;  // DropSealedLocked erases the current place
    if (it == entries_.end() || it->second.spilling != 0) continue;
    if (batch_.count(it->first) != 0) continue;  // a Get is restoring room for it
    // A pin anywhere in the cluster is a pin here: readers pin at the home.
    if (catalogue_->PinsOf(it->second.address) > 0) continue;
    const uint64_t size = SizeOf(it->second);
    if (spill_) {
      it->second.spilling = next_ticket_++;
      jobs->push_back({it->first, it->second.spilling, it->second.address, size, {}});
    } else {
      DropSealedLocked(it, StoreEvent::Kind::kEvicted);
      ++counters_.evictions;
      counters_.evicted_bytes += size;
      *freed += size;
    }
    chosen += size;
  }
}

uint64_t ObjectTable::EvictLocked(uint64_t bytes, std::unique_lock<std::mutex>* lock) {
  uint64_t freed = 0;
  std::vector<SpillJob> jobs;
  ChooseVictimsLocked(bytes, &freed, &jobs);
  if (!jobs.empty()) {
    if (lock != nullptr) lock->unlock();
    WriteSpills(&jobs);
    if (lock != nullptr && spill_hook_) spill_hook_();
    if (lock != nullptr) lock->lock();
    freed += CommitSpillsLocked(&jobs);
  }
  // Short of what was asked: clients' caches of pins (client/pin_cache.h)
  // drop theirs for this home when the epoch moves.
  if (freed < bytes) BumpEpochLocked();
  return freed;
}

void ObjectTable::SessionClosed(SessionId session) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.state == ObjectState::kCreating && it->second.creator == session) {
      removed_.push_back(it->first);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<StoreEvent> ObjectTable::EventsSince(uint64_t after, size_t max,
                                                 bool* lost) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StoreEvent> out;
  *lost = !events_.empty() && events_.front().seq > after + 1;
  if (events_.empty() || after >= events_.back().seq) return out;
  // Sequence numbers in the log are consecutive.
  const uint64_t first = events_.front().seq;
  size_t i = after + 1 > first ? static_cast<size_t>(after + 1 - first) : 0;
  for (; i < events_.size() && out.size() < max; ++i) out.push_back(events_[i]);
  return out;
}

uint64_t ObjectTable::last_event() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_seq_ - 1;
}

std::string ObjectTable::LastSpillError() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_spill_error_;
}

StoreCounters ObjectTable::Counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  StoreCounters c = counters_;
  for (const auto& [id, e] : entries_) {
    if (e.state == ObjectState::kCreating) {
      ++c.objects_creating;
      c.bytes_creating += SizeOf(e);
    } else if (e.state == ObjectState::kSpilled) {
      ++c.objects_spilled;
      c.bytes_spilled += SizeOf(e);
    } else {
      ++c.objects_sealed;
      c.bytes_sealed += SizeOf(e);
    }
  }
  return c;
}

}  // namespace quiver::store
