// The store's request handlers. Creates reserve their id at its directory
// node (here, or one daemon-to-daemon call) before allocating; everything
// else acts on this node's ObjectTable or IdDirectory. Removed ids are
// un-reserved at their directory nodes as they go, and retried while a
// directory node is unreachable; a periodic pass reconciles homes and
// directory nodes after either restarted.
#include "store/daemon/store_service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "control/daemon/log.h"
#include "control/daemon/node.h"
#include "control/rpc/wire.h"
#include "quiver/coherence/flush.h"
#include "quiver/memory/region.h"
#include "quiver/store.h"
#include "quiver_rpc/store.pb.h"
#include "store/id_directory.h"
#include "store/store_record.h"

namespace quiver::store {

namespace {

using control::ParseMessage;
using control::daemon::CallPtr;
using control::daemon::Log;
using control::daemon::Node;
using control::rpc::Method;

// Events one StoreEvents reply carries at most.
constexpr size_t kMaxEventsPerReply = 4096;

Result<std::vector<ObjectId>> IdsOf(
    const google::protobuf::RepeatedPtrField<std::string>& in) {
  std::vector<ObjectId> ids;
  ids.reserve(static_cast<size_t>(in.size()));
  for (int i = 0; i < in.size(); ++i) {
    auto id = ObjectId::FromBinary(in[i]);
    if (!id.ok()) return id.status().WithContext("object id #" + std::to_string(i));
    if (id->nil())
      return Status::Invalid("object id #", i, " is nil: it names no object");
    ids.push_back(*id);
  }
  return ids;
}

Status Exists(const ObjectId& id, uint32_t home) {
  return Status::AlreadyExists("object ", id.Hex(), " exists (homed at node ", home, ")");
}

class StoreService final : public control::daemon::Service {
 public:
  StoreService(Node& node, const StoreServiceOptions& o, std::optional<SpillDir> spill)
      : node_(node),
        options_(o),
        table_(node.catalogue.get(), node.id, node.map->local_region()->data_size(),
               o.limits, std::move(spill)) {
    // One host's shared memory is coherent: nothing to flush before reuse.
    coherent_ = node.config.AllCoherent();
    table_.SetCoherent(coherent_);
    table_.SetEpochWord(
        reinterpret_cast<uint64_t*>(node.self->base + memory::kStoreEpochOffset));
    if (table_.spill() != nullptr) {
      control::SessionInfo self;
      self.identity.cluster = node.config.name;
      self.identity.role = control::PeerRole::kClient;
      self.identity.node = node.id;
      self.local = true;
      self.system = true;
      auto session = node.catalogue->OpenSession(self);
      if (session.ok()) table_.UseSessionForRestores(*session);
    }
    ScheduleResync();
  }

  void SessionClosed(control::SessionId session) override {
    table_.SessionClosed(session);
    ForgetRemoved();
  }
  void Stopping() override { stopping_ = true; }

  // A restarted daemon: the objects sealed here before come back, and the
  // ids this node is the directory node of are registered again (peers'
  // directories learn the rest at the next reconciliation).
  void ClaimRecords(std::vector<control::FoundRecord>* records) override {
    std::vector<ObjectId> adopted;
    std::vector<std::string> problems;
    table_.Adopt(records, &adopted, &problems);
    if (const SpillDir* spill = table_.spill()) {
      // Files of spilled objects no record names any more cannot be reached.
      std::set<ObjectId> keep;
      for (const auto& l : table_.List()) {
        if (l.state == ObjectState::kSpilled) keep.insert(l.id);
      }
      const size_t removed = spill->RemoveExcept(keep);
      if (removed > 0) {
        Log("store: removed %zu spill files no record names, from %s", removed,
            spill->path().c_str());
      }
    }
    for (const auto& id : adopted) {
      if (DirectoryNodeOf(id, node_.config) == node_.id) {
        (void)ids_.Reserve(id, node_.id, node_.generation);
      }
    }
    if (!adopted.empty() || !problems.empty()) {
      Log("store: %zu objects came back from the region; %zu records unusable%s%s",
          adopted.size(), problems.size(), problems.empty() ? "" : ", first: ",
          problems.empty() ? "" : problems.front().c_str());
    }
  }

  Node& node() { return node_; }
  ObjectTable& table() { return table_; }
  IdDirectory& ids() { return ids_; }
  bool coherent() const { return coherent_; }

  // Reserves `id` for this node at its directory node, then `done` with
  // whether the reservation is new (false: this node held it already, so
  // a failed Create must leave it).
  using Reserved = std::function<void(Status, bool fresh)>;
  void Reserve(const ObjectId& id, Reserved done) {
    const uint32_t dir = DirectoryNodeOf(id, node_.config);
    const uint32_t self = node_.id;
    if (dir == self) {
      auto holder = ids_.Reserve(id, self, node_.generation);
      if (holder && *holder != self) return done(Exists(id, *holder), false);
      node_.Changed();
      return done(Status::OK(), !holder);
    }
    wire::StoreReserveRequest req;
    req.add_ids(id.Binary());
    req.set_generation(node_.generation);
    CallPeer(
        dir, Method::kStoreReserve, req.SerializeAsString(),
        [id, dir, self, done = std::move(done)](Result<std::string> r) {
          if (!r.ok()) {
            return done(
                Status::Unavailable("the directory node of object ", id.Hex(), ", node ",
                                    dir, ", cannot be reached: ", r.status().message()),
                false);
          }
          auto rep = ParseMessage<wire::StoreReserveReply>(*r);
          if (!rep.ok() || rep->holder_plus_one_size() != 1) {
            return done(Status::IOError("node ", dir,
                                        " answered a reservation with a malformed reply"),
                        false);
          }
          const uint32_t holder = rep->holder_plus_one(0);
          if (holder == 0) return done(Status::OK(), true);
          if (holder - 1 == self) return done(Status::OK(), false);
          done(Exists(id, holder - 1), false);
        });
  }

  // One call to a peer; one whose link is still being made gets it once
  // the link is up, one declared offline fails at once.
  void CallPeer(uint32_t peer, Method method, const std::string& payload,
                control::rpc::CallDone done) {
    const std::vector<uint32_t> only{peer};
    node_.peers->CallAll(
        method, payload,
        [peer, done = std::move(done)](control::daemon::Peers::Results results) {
          auto it = results.find(peer);
          if (it == results.end()) {
            return done(Status::Unavailable("node ", peer, " is offline"));
          }
          done(std::move(it->second));
        },
        &only);
  }

  // Ids between a Create's arrival and its entry in the table (while their
  // reservation travels): a Get here waits for them as for objects being
  // created, since their directory node may already name this node.
  void AddPending(const ObjectId& id) {
    std::lock_guard<std::mutex> lock(mu_);
    ++pending_[id];
  }
  void RemovePending(const ObjectId& id) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pending_.find(id);
      if (it != pending_.end() && --it->second == 0) pending_.erase(it);
    }
    node_.Changed();
  }
  bool IsPending(const ObjectId& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_.count(id) != 0;
  }
  bool AnyPending(const std::vector<ObjectId>& ids) {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.empty()) return false;
    return std::any_of(ids.begin(), ids.end(),
                       [this](const ObjectId& id) { return pending_.count(id) != 0; });
  }

  // Un-reserves `id` (reserved here for a Create that failed), then `then`,
  // once its directory node has answered (or failed to: the un-reservation
  // is then retried with the others).
  void UnreserveThen(const ObjectId& id, std::function<void()> then) {
    const uint32_t dir = DirectoryNodeOf(id, node_.config);
    if (dir == node_.id) {
      ids_.Remove(id, node_.id);
      return then();
    }
    wire::StoreIdsRequest req;
    req.add_ids(id.Binary());
    CallPeer(dir, Method::kStoreUnreserve, req.SerializeAsString(),
             [this, dir, id, then = std::move(then)](Result<std::string> r) {
               if (!r.ok()) {
                 std::lock_guard<std::mutex> lock(mu_);
                 retry_[dir].push_back(id);
               }
               then();
             });
  }

  // Un-reserves what left the table at the ids' directory nodes.
  void ForgetRemoved() { Unreserve(table_.TakeRemoved()); }

  void Unreserve(const std::vector<ObjectId>& removed) {
    std::map<uint32_t, std::vector<ObjectId>> by_dir;
    for (const auto& id : removed) {
      const uint32_t dir = DirectoryNodeOf(id, node_.config);
      if (dir == node_.id) {
        ids_.Remove(id, node_.id);
      } else {
        by_dir[dir].push_back(id);
      }
    }
    for (auto& entry : by_dir) {
      const uint32_t dir = entry.first;
      const std::vector<ObjectId> list = entry.second;
      wire::StoreIdsRequest req;
      for (const auto& id : list) req.add_ids(id.Binary());
      CallPeer(dir, Method::kStoreUnreserve, req.SerializeAsString(),
               [this, dir, list](Result<std::string> r) {
                 if (r.ok()) return;
                 // Kept until the directory node answers.
                 std::lock_guard<std::mutex> lock(mu_);
                 auto& retry = retry_[dir];
                 retry.insert(retry.end(), list.begin(), list.end());
               });
    }
  }

 private:
  void ScheduleResync() {
    node_.engine->timers().After(options_.resync_ms, [this] {
      if (stopping_ || node_.stopping) return;
      Resync();
      ScheduleResync();
    });
  }

  // Retries failed un-reservations; after a peer restarted, re-registers
  // what this node holds there (as a home: a restarted directory node knows
  // nothing). What the peer reserved here before is dropped only when its
  // own re-registration arrives (HandleReserve): until then its ids stay
  // taken, so no one can create a second object under an id it restores.
  void Resync() {
    std::map<uint32_t, std::vector<ObjectId>> retry;
    {
      std::lock_guard<std::mutex> lock(mu_);
      retry.swap(retry_);
    }
    for (auto& [dir, list] : retry) Unreserve(list);
    for (const auto& view : node_.peers->views()) {
      if (view.node == node_.id || !view.online) continue;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = seen_.find(view.node);
        if (it != seen_.end() && it->second == view.generation) continue;
        if (resyncing_.count(view.node) != 0) continue;
        resyncing_.insert(view.node);
      }
      wire::StoreReserveRequest req;
      req.set_generation(node_.generation);
      req.set_resync(true);
      std::vector<ObjectId> mine;
      for (const auto& l : table_.List()) {
        if (DirectoryNodeOf(l.id, node_.config) == view.node) {
          req.add_ids(l.id.Binary());
          mine.push_back(l.id);
        }
      }
      const uint32_t peer = view.node;
      const uint64_t generation = view.generation;
      auto done = [this, peer, generation, mine](Result<std::string> r) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          resyncing_.erase(peer);
          if (!r.ok()) return;  // again on the next pass
          seen_[peer] = generation;
          auto rep = ParseMessage<wire::StoreReserveReply>(*r);
          if (!rep.ok()) return;
          for (int i = 0;
               i < rep->holder_plus_one_size() && i < static_cast<int>(mine.size());
               ++i) {
            const uint32_t holder = rep->holder_plus_one(i);
            if (holder != 0 && holder - 1 != node_.id) {
              Log("store: object %s is held here and at node %u: two objects share an "
                  "id",
                  mine[i].Hex().c_str(), rep->holder_plus_one(i) - 1);
            }
          }
        }
        // An object deleted while the list travelled: its un-reservation may
        // have reached the directory node before the list did and been
        // undone by it. Un-reserved again (a no-op if it was not), unless
        // a new Create of the id is under way here.
        std::set<ObjectId> now;
        for (const auto& l : table_.List()) now.insert(l.id);
        std::vector<ObjectId> gone;
        for (const auto& id : mine) {
          if (now.count(id) == 0 && !IsPending(id)) gone.push_back(id);
        }
        if (!gone.empty()) Unreserve(gone);
      };
      CallPeer(peer, Method::kStoreReserve, req.SerializeAsString(), done);
    }
  }

  Node& node_;
  const StoreServiceOptions options_;
  ObjectTable table_;
  IdDirectory ids_;
  bool coherent_ = false;
  std::atomic<bool> stopping_{false};

  std::mutex mu_;
  std::map<uint32_t, std::vector<ObjectId>> retry_;  // directory node -> ids
  std::map<uint32_t, uint64_t> seen_;                // peer -> generation reconciled
  std::set<uint32_t> resyncing_;
  std::map<ObjectId, int> pending_;  // Creates in flight per id
};

StoreService* Svc(Node& node) { return node.service<StoreService>(); }

// --- At an object's home ----------------------------------------------------

// CreateAndSeal's second half at the home: the contents into the object's
// memory (flushed where memory is not coherent: protocol step 4), then the
// seal. The object is aborted if either fails.
Status WriteAndSeal(StoreService& svc, control::SessionId session, const ObjectId& id,
                    uint64_t address, const std::string& contents) {
  auto* p = reinterpret_cast<uint8_t*>(address);
  if (!contents.empty()) std::memcpy(p, contents.data(), contents.size());
  Status st;
  if (!svc.coherent() && !contents.empty())
    st = coherence::FlushRange(p, contents.size());
  if (st.ok()) st = svc.table().Seal(session, id);
  if (!st.ok()) (void)svc.table().Abort(session, id);
  svc.ForgetRemoved();
  svc.node().Changed();
  return st;
}

void HandleCreate(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::StoreCreateRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  auto id = ObjectId::FromBinary(req->id());
  if (!id.ok()) return call->Fail(id.status().WithContext("Create"));
  if (id->nil()) return call->Fail(Status::Invalid("Create of the nil object id"));
  const uint64_t data_size = req->data_size(), metadata_size = req->metadata_size();
  if (data_size > UINT64_MAX - metadata_size) {
    return call->Fail(Status::Invalid("Create of object ", id->Hex(),
                                      ": data and metadata sizes overflow"));
  }
  const bool seal = req->seal();
  if (seal && (req->contents().size() > kMaxInlineObject ||
               req->contents().size() != data_size + metadata_size)) {
    return call->Fail(Status::Invalid(
        "CreateAndSeal of object ", id->Hex(), ": ", req->contents().size(),
        " bytes of contents for ", data_size, " bytes of data and ", metadata_size,
        " of metadata (at most ", kMaxInlineObject, " bytes travel in the request)"));
  }
  if (!seal && !req->contents().empty()) {
    return call->Fail(Status::Invalid("Create of object ", id->Hex(),
                                      ": contents are only for CreateAndSeal"));
  }
  StoreService* svc = Svc(node);
  auto contents = std::make_shared<std::string>(std::move(*req->mutable_contents()));
  svc->AddPending(*id);
  svc->Reserve(*id, [svc, call, id = *id, data_size, metadata_size, seal, contents](
                        Status st, bool fresh) {
    if (!st.ok()) {
      svc->RemovePending(id);
      return call->Fail(st);
    }
    const control::SessionId session = call->state().session;
    auto made = svc->table().Create(session, id, data_size, metadata_size);
    svc->RemovePending(id);
    svc->ForgetRemoved();  // what eviction made room from
    if (!made.ok()) {
      if (!fresh) return call->Fail(made.status());
      // The caller tries the next node at once (placement): the id must be
      // free at its directory node before the caller hears of the failure.
      return svc->UnreserveThen(id, [call, st = made.status()] { call->Fail(st); });
    }
    const uint64_t address = made->address;
    auto reply = [svc, call, id, session, address, seal, contents](Status flushed) {
      if (!flushed.ok()) return call->Fail(flushed.WithContext("preparing the object"));
      if (seal) {
        Status written = WriteAndSeal(*svc, session, id, address, *contents);
        if (!written.ok()) return call->Fail(written);
      }
      wire::StoreCreateReply rep;
      rep.set_address(address);
      call->Reply(rep);
    };
    const uint64_t size = data_size + metadata_size;
    if (svc->coherent() || size == 0) return reply(Status::OK());
    // Protocol step 2: no node may keep stale lines of reused memory.
    svc->node().FlushEverywhere({address, size}, call->state().info.identity.node,
                                [svc, session, id, reply](Status flushed) {
                                  if (!flushed.ok()) {
                                    (void)svc->table().Abort(session, id);
                                    svc->ForgetRemoved();
                                  }
                                  reply(flushed);
                                });
  });
}

// Applies `op` to each id; the first failure is the answer.
template <typename Op>
void ForEachId(Node& node, const CallPtr& call, std::string_view payload, Op op) {
  auto req = ParseMessage<wire::StoreIdsRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  auto ids = IdsOf(req->ids());
  if (!ids.ok()) return call->Fail(ids.status());
  StoreService* svc = Svc(node);
  Status first;
  for (const auto& id : *ids) {
    Status st = op(*svc, call->state().session, id);
    if (!st.ok() && first.ok()) first = st;
  }
  svc->ForgetRemoved();
  node.Changed();
  call->Finish(first);
}

void HandleSeal(Node& node, const CallPtr& call, std::string_view payload) {
  ForEachId(node, call, payload,
            [](StoreService& s, control::SessionId session, const ObjectId& id) {
              return s.table().Seal(session, id);
            });
}

void HandleAbort(Node& node, const CallPtr& call, std::string_view payload) {
  ForEachId(node, call, payload,
            [](StoreService& s, control::SessionId session, const ObjectId& id) {
              return s.table().Abort(session, id);
            });
}

void HandleGet(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::StoreGetRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  auto parsed = DecodePackedIds(req->ids());
  if (!parsed.ok()) return call->Fail(parsed.status());
  StoreService* svc = Svc(node);
  auto check = [svc, ids = std::move(*parsed)](const CallPtr& c, bool expired) {
    if (!expired && svc->AnyPending(ids)) return false;
    auto got = svc->table().Get(c->state().session, ids, /*unless_creating=*/!expired);
    if (!got.ok()) {
      c->Fail(got.status());
      return true;
    }
    if (got->waiting) return false;
    // Still on their way into the table: being created, not missing.
    auto& missing = got->missing;
    for (auto it = missing.begin(); it != missing.end();) {
      if (svc->IsPending(*it)) {
        got->creating.push_back(*it);
        it = missing.erase(it);
      } else {
        ++it;
      }
    }
    wire::StoreGetReply rep;
    std::string* found = rep.mutable_found();
    found->reserve(got->found.size() * kFoundRecordSize);
    for (const auto& v : got->found) AppendFoundRecord(found, v);
    if (!got->found.empty()) rep.set_pin(got->pin.Bytes());
    for (const auto& id : got->creating) rep.add_creating(id.Binary());
    for (const auto& id : got->missing) rep.add_missing(id.Binary());
    for (const auto& [id, why] : got->lost) {
      rep.add_lost(id.Binary());
      rep.add_lost_reasons(why);
    }
    if (!got->lost.empty()) {
      svc->ForgetRemoved();
      Log("store: %s", got->lost.front().second.c_str());
    }
    c->Reply(rep);
    svc->table().DropRetired();  // the files of what it restored, once answered
    return true;
  };
  // Most Gets find their objects sealed: answered without the waiters' lock.
  if (check(call, req->timeout_ms() == 0)) return;
  Status st = node.waiters->Park(call, req->timeout_ms(), check);
  if (!st.ok()) call->Fail(st);
}

void HandleRelease(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::StoreReleaseRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  auto pin = control::Handle::FromBytes(req->pin());
  if (!pin.ok()) return call->Fail(pin.status().WithContext("Release"));
  call->Finish(Svc(node)->table().Release(call->state().session, *pin));
}

void HandleDelete(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::StoreIdsRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  auto ids = IdsOf(req->ids());
  if (!ids.ok()) return call->Fail(ids.status());
  StoreService* svc = Svc(node);
  auto d = svc->table().Delete(*ids);
  svc->ForgetRemoved();
  node.Changed();
  wire::StoreDeleteReply rep;
  rep.set_deleted(d.deleted);
  rep.set_deferred(d.deferred);
  for (const auto& id : d.missing) rep.add_missing(id.Binary());
  for (const auto& id : d.creating) rep.add_creating(id.Binary());
  call->Reply(rep);
}

void HandleContains(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::StoreIdsRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  auto ids = IdsOf(req->ids());
  if (!ids.ok()) return call->Fail(ids.status());
  wire::StoreContainsReply rep;
  for (const auto& id : *ids) rep.add_sealed(Svc(node)->table().Contains(id));
  call->Reply(rep);
}

void HandleList(Node& node, const CallPtr& call, std::string_view) {
  wire::StoreListReply rep;
  for (const auto& l : Svc(node)->table().List()) {
    auto* o = rep.add_objects();
    o->set_id(l.id.Binary());
    o->set_state(static_cast<uint32_t>(l.state));
    o->set_home(node.id);
    o->set_address(l.address);
    o->set_data_size(l.data_size);
    o->set_metadata_size(l.metadata_size);
    o->set_pins(l.pins);
    o->set_last_use_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                           l.last_use.time_since_epoch())
                           .count());
  }
  call->Reply(rep);
}

void HandleEvents(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::StoreEventsRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  StoreService* svc = Svc(node);
  const uint64_t after = req->after();
  const size_t max = req->max() == 0 ? kMaxEventsPerReply
                                     : std::min<size_t>(req->max(), kMaxEventsPerReply);
  auto check = [svc, &node, after, max](const CallPtr& c, bool expired) {
    if (!expired && svc->table().last_event() <= after) return false;
    wire::StoreEventsReply rep;
    bool lost = false;
    for (const auto& e : svc->table().EventsSince(after, max, &lost)) {
      auto* w = rep.add_events();
      w->set_seq(e.seq);
      w->set_kind(static_cast<uint32_t>(e.kind));
      w->set_id(e.id.Binary());
      w->set_data_size(e.data_size);
      w->set_metadata_size(e.metadata_size);
    }
    rep.set_lost(lost);
    rep.set_last(svc->table().last_event());
    rep.set_generation(node.generation);
    c->Reply(rep);
    return true;
  };
  if (check(call, req->wait_ms() == 0)) return;
  Status st = node.waiters->Park(call, req->wait_ms(), check);
  if (!st.ok()) call->Fail(st);
}

void HandleEvict(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::StoreEvictRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  StoreService* svc = Svc(node);
  wire::StoreEvictReply rep;
  rep.set_freed(svc->table().Evict(req->bytes()));
  svc->ForgetRemoved();
  node.Changed();
  call->Reply(rep);
}

void HandleStatus(Node& node, const CallPtr& call, std::string_view) {
  StoreService* svc = Svc(node);
  const StoreCounters c = svc->table().Counters();
  wire::StoreStatusReply rep;
  rep.set_node(node.id);
  auto* w = rep.mutable_counters();
  w->set_creates(c.creates);
  w->set_seals(c.seals);
  w->set_aborts(c.aborts);
  w->set_deletes(c.deletes);
  w->set_hits(c.hits);
  w->set_misses(c.misses);
  w->set_evictions(c.evictions);
  w->set_evicted_bytes(c.evicted_bytes);
  w->set_objects_creating(c.objects_creating);
  w->set_bytes_creating(c.bytes_creating);
  w->set_objects_sealed(c.objects_sealed);
  w->set_bytes_sealed(c.bytes_sealed);
  w->set_spills(c.spills);
  w->set_spilled_bytes(c.spilled_bytes);
  w->set_restores(c.restores);
  w->set_restored_bytes(c.restored_bytes);
  w->set_spill_failures(c.spill_failures);
  w->set_objects_spilled(c.objects_spilled);
  w->set_bytes_spilled(c.bytes_spilled);
  if (const SpillDir* dir = svc->table().spill()) w->set_spill_dir(dir->path());
  w->set_last_spill_error(svc->table().LastSpillError());
  w->set_capacity(svc->table().capacity());
  w->set_region_used(node.catalogue->Bytes());
  w->set_directory_entries(svc->ids().size());
  w->set_last_event(svc->table().last_event());
  call->Reply(rep);
}

// --- At an id's directory node --------------------------------------------------

void HandleLocate(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::StoreLocateRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  auto parsed = IdsOf(req->ids());
  if (!parsed.ok()) return call->Fail(parsed.status());
  for (const auto& id : *parsed) {
    const uint32_t dir = DirectoryNodeOf(id, node.config);
    if (dir != node.id) {
      return call->Fail(Status::Invalid("object ", id.Hex(), " has node ", dir,
                                        " as its directory node, not node ", node.id));
    }
  }
  StoreService* svc = Svc(node);
  auto check = [svc, &node, ids = std::move(*parsed)](const CallPtr& c, bool expired) {
    std::vector<std::optional<uint32_t>> homes;
    homes.reserve(ids.size());
    for (const auto& id : ids) {
      homes.push_back(svc->ids().Find(id));
      if (!homes.back() && !expired) return false;
    }
    wire::StoreLocateReply rep;
    for (const auto& h : homes) {
      rep.add_home_plus_one(h ? *h + 1 : 0);
      rep.add_lost(h && *h != node.id ? node.peers->OfflineReason(*h) : std::string());
    }
    c->Reply(rep);
    return true;
  };
  if (check(call, req->timeout_ms() == 0)) return;
  Status st = node.waiters->Park(call, req->timeout_ms(), check);
  if (!st.ok()) call->Fail(st);
}

void HandleReserve(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::StoreReserveRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  auto ids = IdsOf(req->ids());
  if (!ids.ok()) return call->Fail(ids.status());
  const uint32_t home = call->state().info.identity.node;
  wire::StoreReserveReply rep;
  for (const auto& id : *ids) {
    if (DirectoryNodeOf(id, node.config) != node.id) {
      return call->Fail(
          Status::Invalid("node ", node.id, " is not the directory node of ", id.Hex()));
    }
  }
  for (const auto& id : *ids) {
    // Already the caller's: the caller's own +1 (it knows it is itself).
    auto holder = Svc(node)->ids().Reserve(id, home, req->generation());
    rep.add_holder_plus_one(holder ? *holder + 1 : 0);
  }
  if (req->resync()) {
    // The caller's whole list for this directory node in its generation:
    // what it reserved in an earlier life and no longer holds is free now.
    const size_t dropped = Svc(node)->ids().DropOlder(home, req->generation());
    if (dropped > 0) {
      Log("store: node %u (generation %llu) no longer holds %zu ids it reserved "
          "before: freed",
          home, static_cast<unsigned long long>(req->generation()), dropped);
    }
  }
  node.Changed();
  call->Reply(rep);
}

void HandleUnreserve(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::StoreIdsRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  auto ids = IdsOf(req->ids());
  if (!ids.ok()) return call->Fail(ids.status());
  const uint32_t home = call->state().info.identity.node;
  for (const auto& id : *ids) Svc(node)->ids().Remove(id, home);
  call->ReplyEmpty();
}

}  // namespace

control::daemon::ServiceSpec StoreServiceSpec(StoreServiceOptions options) {
  using namespace control::daemon;  // NOLINT: the role bits
  ServiceSpec spec;
  spec.name = "object store";
  spec.routes = {
      {Method::kStoreCreate, HandleCreate, kClients},
      {Method::kStoreSeal, HandleSeal, kClients},
      {Method::kStoreAbort, HandleAbort, kClients},
      {Method::kStoreGet, HandleGet, kClients},
      {Method::kStoreRelease, HandleRelease, kClients},
      {Method::kStoreDelete, HandleDelete, kClients},
      {Method::kStoreContains, HandleContains, kAnyone},
      {Method::kStoreList, HandleList, kAnyone},
      {Method::kStoreEvents, HandleEvents, kClients},
      {Method::kStoreEvict, HandleEvict, kClients},
      {Method::kStoreLocate, HandleLocate, kAnyone},
      {Method::kStoreStatus, HandleStatus, kAnyone},
      {Method::kStoreReserve, HandleReserve, kDaemon},
      {Method::kStoreUnreserve, HandleUnreserve, kDaemon},
  };
  spec.make = [options](Node& node) -> Result<std::unique_ptr<Service>> {
    if (options.limits.low_watermark > options.limits.high_watermark ||
        options.limits.high_watermark > 1.0 || options.limits.low_watermark < 0.0) {
      return Status::Invalid("store watermarks: need 0 <= low (",
                             options.limits.low_watermark, ") <= high (",
                             options.limits.high_watermark, ") <= 1");
    }
    std::optional<SpillDir> spill;
    if (!options.spill_dir.empty()) {
      auto dir = SpillDir::Open(options.spill_dir);
      if (!dir.ok()) return dir.status().WithContext("--store-spill");
      Log("store: evicted objects spill to %s", options.spill_dir.c_str());
      spill = std::move(*dir);
    }
    return std::unique_ptr<Service>(new StoreService(node, options, std::move(spill)));
  };
  return spec;
}

}  // namespace quiver::store
