// Tables: publishing at a chunk's home (one round trip from the client; the
// home registers the chunk on every peer in parallel), unpublishing there,
// lookups at the reader's own daemon, pins at owners, and the replicas'
// side of the homes' pushes and pulls.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "control/catalogue/catalogue.h"
#include "control/daemon/log.h"
#include "control/daemon/node.h"
#include "control/rpc/wire.h"

namespace quiver::control::daemon {

namespace {

using util::Hex;

constexpr int kMaxChunksPerCall = 65536;
// A page of a home's chunk list stays well below the frame limit.
constexpr size_t kSyncPageBytes = 4u << 20;

bool PeerUnreachable(const Status& st) {
  return st.code() == StatusCode::kUnavailable ||
         st.code() == StatusCode::kDeadlineExceeded;
}

uint64_t NewChunkId() {
  uint64_t id = 0;
  while (id == 0) id = Handle::Random().lo;
  return id;
}

// Tells every peer that chunks homed here went (after an unpublish or a
// rolled-back publish); `done` once all answered.
void PushRemove(Node& node, const std::vector<uint64_t>& ids,
                const Directory::VersionStep& step, std::function<void()> done) {
  wire::ReplicaRemoveRequest req;
  req.set_generation(node.generation);
  req.set_prev_version(step.before);
  req.set_version(step.after);
  for (uint64_t id : ids) req.add_chunk_ids(id);
  node.peers->CallAll(rpc::Method::kReplicaRemove, req.SerializeAsString(),
                      [done = std::move(done)](Peers::Results) { done(); });
}

// The first refusal among the peers' answers to a registration. A peer that
// cannot be reached is none (it pulls the chunks when it is back), unless
// its region holds buffers of the chunks (`owners`): an owner checks them
// against its allocations and keeps their publication references, and a
// publish it has not accepted is not acknowledged.
Status FirstRefusal(const Peers::Results& results, const std::set<uint32_t>& owners) {
  for (const auto& [peer, r] : results) {
    if (!r.ok() && !PeerUnreachable(r.status())) {
      return r.status().WithContext("node " + std::to_string(peer) + " refused");
    }
  }
  for (uint32_t o : owners) {
    auto it = results.find(o);
    if (it == results.end()) {
      return Status::Unavailable(
          "node ", o,
          ", which holds buffers of the chunks, is down: it cannot "
          "accept them");
    }
    if (!it->second.ok()) {
      return it->second.status().WithContext(
          "node " + std::to_string(o) +
          ", which holds buffers of the chunks, did not accept them");
    }
  }
  return Status::OK();
}

// The nodes other than `self` whose regions hold the chunks' buffers
// (`owners`, as Directory::Insert parsed them).
std::set<uint32_t> OtherOwners(const std::vector<ChunkMeta>& chunks, uint32_t self) {
  std::set<uint32_t> out;
  for (const auto& c : chunks) {
    for (uint32_t o : c.owners) {
      if (o != self) out.insert(o);
    }
  }
  return out;
}

// Takes back a publish everywhere (here and on every peer), then `done`
// gets `why`.
void Undo(Node& node, const std::vector<uint64_t>& ids,
          std::function<void(Result<std::vector<uint64_t>>)> done, Status why) {
  Directory::VersionStep undo;
  node.directory->Remove(ids, &undo);
  node.Changed();
  PushRemove(node, ids, undo, [done = std::move(done), why] { done(why); });
}

// What the nodes of a chunk set must all be up for.
std::vector<uint32_t> NodesOf(const std::vector<ChunkMeta>& chunks) {
  std::set<uint32_t> nodes;
  for (const auto& c : chunks) {
    nodes.insert(c.home);
    nodes.insert(c.owners.begin(), c.owners.end());
  }
  return {nodes.begin(), nodes.end()};
}

}  // namespace

namespace {

// Registers chunks here (validated, records kept), then tells the nodes in
// `only` (every peer if null); undoes everything if anyone refuses.
void PublishInOrder(Node& node, std::vector<ChunkMeta> chunks,
                    const Directory::InsertOptions& options, bool local_only,
                    std::function<void(Result<std::vector<uint64_t>>)> done) {
  Directory::VersionStep step;
  Status st = node.directory->Insert(&chunks, options, &step);
  if (!st.ok()) return done(st);
  std::vector<uint64_t> ids;
  for (const auto& c : chunks) ids.push_back(c.id);
  const std::set<uint32_t> owners = OtherOwners(chunks, node.id);
  node.Changed();
  // A local-only table is registered here alone; the nodes whose memory it
  // uses keep its shadow (their references and records).
  if (local_only && owners.empty()) return done(ids);
  std::vector<uint32_t> only(owners.begin(), owners.end());
  wire::ReplicaPutRequest put;
  put.set_generation(node.generation);
  put.set_prev_version(step.before);
  put.set_version(step.after);
  for (const auto& c : chunks) *put.add_chunks() = ToWire(c);
  node.peers->CallAll(
      rpc::Method::kReplicaPut, put.SerializeAsString(),
      [&node, ids, owners, done = std::move(done)](Peers::Results results) {
        Status refused = FirstRefusal(results, owners);
        if (refused.ok()) return done(ids);
        Undo(node, ids, std::move(done), refused);
      },
      local_only ? &only : nullptr);
}

}  // namespace

void PublishChunks(Node& node, std::vector<ChunkMeta> chunks, SessionId publisher,
                   SessionId seal_as,
                   std::function<void(Result<std::vector<uint64_t>>)> done) {
  bool local_only = false;
  for (auto& c : chunks) {
    c.id = NewChunkId();
    c.home = node.id;
    local_only = local_only || c.local_only;
  }
  Directory::InsertOptions options;
  options.publisher = publisher;
  options.seal_as = seal_as;
  options.as_home = true;
  if (local_only) return PublishInOrder(node, std::move(chunks), options, true, done);
  // Every peer registers the chunks while this node does its own share
  // (checks, seal, record): the two round trips overlap. The version step
  // is reserved first, so the peers stay in step with it either way.
  std::vector<uint64_t> ids;
  for (const auto& c : chunks) ids.push_back(c.id);
  options.version = node.directory->ReserveVersions(chunks.size());
  wire::ReplicaPutRequest put;
  put.set_generation(node.generation);
  put.set_prev_version(options.version.before);
  put.set_version(options.version.after);
  for (const auto& c : chunks) *put.add_chunks() = ToWire(c);
  // Whichever of the two ends last decides: the owners are known once this
  // node has parsed the chunks.
  struct Both {
    std::mutex mu;
    int left = 2;
    Status local;
    Peers::Results peers;
    std::set<uint32_t> owners;
  };
  auto both = std::make_shared<Both>();
  auto finish = [&node, ids, both, done = std::move(done)] {
    Status st = both->local.ok() ? FirstRefusal(both->peers, both->owners) : both->local;
    if (st.ok()) return done(ids);
    Undo(node, ids, done, st);
  };
  auto last = [both] {
    std::lock_guard<std::mutex> lock(both->mu);
    return --both->left == 0;
  };
  node.peers->CallAll(rpc::Method::kReplicaPut, put.SerializeAsString(),
                      [both, last, finish](Peers::Results results) {
                        {
                          std::lock_guard<std::mutex> lock(both->mu);
                          both->peers = std::move(results);
                        }
                        if (last()) finish();
                      });
  Status st = node.directory->Insert(&chunks, options);
  node.directory->Settle();
  if (st.ok()) node.Changed();
  {
    std::lock_guard<std::mutex> lock(both->mu);
    both->local = st;
    both->owners = OtherOwners(chunks, node.id);
  }
  if (last()) finish();
}

void HandlePublish(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::PublishRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  if (req->chunks_size() == 0) return call->Fail(Status::Invalid("Publish of no chunks"));
  if (req->chunks_size() > kMaxChunksPerCall) {
    return call->Fail(Status::Invalid("Publish of ", req->chunks_size(),
                                      " chunks at once exceeds ", kMaxChunksPerCall));
  }
  const ConnectionState& who = call->state();
  std::vector<ChunkMeta> chunks;
  std::map<uint64_t, uint32_t> in_group;
  const uint64_t own_group = NewChunkId();  // for chunks that name none
  for (const auto& w : req->chunks()) {
    ChunkMeta c = FromWire(w);
    c.name = req->name();
    c.publisher = who.info.identity.node;
    c.publisher_pid = who.info.pid;
    c.owners.clear();  // the home parses them from the descriptor
    if (c.group == 0) {
      c.group = own_group;
      c.group_chunks = static_cast<uint32_t>(req->chunks_size());
    }
    if (++in_group[c.group] > c.group_chunks) {
      return call->Fail(Status::Invalid("Publish of '", req->name(),
                                        "': more chunks of one "
                                        "publish than the ",
                                        c.group_chunks, " it says it made"));
    }
    chunks.push_back(std::move(c));
  }
  PublishChunks(node, std::move(chunks), who.session, req->seal() ? who.session : 0,
                [call](Result<std::vector<uint64_t>> ids) {
                  if (!ids.ok()) return call->Fail(ids.status());
                  wire::PublishReply rep;
                  for (uint64_t id : *ids) rep.add_chunk_ids(id);
                  call->Reply(rep);
                });
}

void HandleUnpublish(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::UnpublishRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  Status name_ok = CheckTableName(req->name());
  if (!name_ok.ok()) return call->Fail(name_ok);
  const SessionId session = call->state().session;
  std::vector<uint64_t> wanted(req->chunk_ids().begin(), req->chunk_ids().end());
  const bool all = wanted.empty();
  if (all) {
    for (const auto& c : node.directory->Lookup(req->name())) {
      if (c.home == node.id) wanted.push_back(c.id);
    }
    if (wanted.empty()) {
      return call->Fail(Status::NotFound("no table '", req->name(),
                                         "' has chunks homed at node ", node.id));
    }
  }
  wire::UnpublishReply rep;
  std::vector<uint64_t> ids;
  Status refused;
  for (uint64_t id : wanted) {
    Status st = node.directory->MayRemove(session, id);
    auto chunk = node.directory->Find(id);
    if (st.ok()) {
      ids.push_back(id);
      rep.add_chunk_ids(id);
      rep.add_groups(chunk.ok() ? chunk->group : 0);
    } else {
      if (chunk.ok()) rep.add_refused_groups(chunk->group);
      if (refused.ok()) refused = st;
    }
  }
  // Named chunks: all or nothing. The whole table: what the caller may (a
  // check says what it may not, too).
  if (!refused.ok() && (!all || (ids.empty() && !req->check()))) {
    return call->Fail(refused);
  }
  if (!refused.ok()) rep.set_refused(refused.message());
  if (req->check()) {
    rep.set_removed(static_cast<uint32_t>(ids.size()));
    return call->Reply(rep);
  }
  Directory::VersionStep step;
  auto removed = node.directory->Remove(ids, &step);
  node.Changed();
  rep.set_removed(static_cast<uint32_t>(removed.size()));
  PushRemove(node, ids, step, [call, rep = std::move(rep)] { call->Reply(rep); });
}

void HandleLookup(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::LookupRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  Status name_ok = CheckTableName(req->name());
  if (!name_ok.ok()) return call->Fail(name_ok);
  const std::string name = req->name();
  const uint32_t min_chunks = std::max<uint32_t>(1, req->min_chunks());
  const uint32_t wait_ms = req->wait_ms();
  const bool want_pin = req->pin();
  auto answer = [&node, name, min_chunks, wait_ms, want_pin](const CallPtr& c,
                                                             bool expired) {
    auto chunks = node.directory->Lookup(name);
    if (chunks.size() < min_chunks && !expired) return false;
    if (chunks.empty()) {
      c->Fail(Status::NotFound(
          "no table '", name, "' is published",
          wait_ms ? " (waited " + std::to_string(wait_ms) + " ms)" : std::string()));
      return true;
    }
    if (chunks.size() < min_chunks) {
      c->Fail(Status::DeadlineExceeded("table '", name, "' has ", chunks.size(), " of ",
                                       min_chunks, " chunks after ", wait_ms, " ms"));
      return true;
    }
    // A reader cannot use a table a down node holds, nor part of a publish
    // (the rest is still coming, or its home is down, or an unpublish got
    // half-way); an unpublisher still learns its chunks (and is told by each
    // home whether it can remove them).
    const std::string lost = want_pin ? node.LostReason(NodesOf(chunks)) : "";
    if (!lost.empty()) {
      c->Fail(Status::Unavailable("table '", name, "' is lost: ", lost));
      return true;
    }
    const std::string partial = want_pin ? IncompleteGroups(chunks) : "";
    if (!partial.empty()) {
      if (!expired) return false;  // the rest of a publish under way may come
      c->Fail(Status::Unavailable(
          "table '", name, "' is incomplete: ", partial,
          " (a publish or unpublish is under way or failed half-way, or a home is "
          "unreachable; unpublish it to remove what is left)"));
      return true;
    }
    std::vector<uint64_t> ids;
    std::set<uint32_t> others;
    for (const auto& ch : chunks) {
      ids.push_back(ch.id);
      for (uint32_t o : ch.owners) {
        if (o != node.id) others.insert(o);
      }
    }
    wire::LookupReply rep;
    auto objects = node.directory->ObjectsOf(ids);
    if (want_pin && objects.ok() && !objects->empty()) {
      auto pin = node.catalogue->Pin(c->state().session, *objects);
      if (!pin.ok()) {
        c->Fail(pin.status().WithContext("pinning '" + name + "'"));
        return true;
      }
      rep.set_pin(pin->Bytes());
    }
    for (const auto& ch : chunks) *rep.add_chunks() = ToWire(ch);
    for (uint32_t o : others) rep.add_pin_owners(o);
    c->Reply(rep);
    return true;
  };
  if (wait_ms == 0) {
    answer(call, /*expired=*/true);
    return;
  }
  Status st = node.waiters->Park(call, wait_ms, answer);
  if (!st.ok()) call->Fail(st);
}

void HandlePin(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::PinRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  const SessionId session = call->state().session;
  Result<Handle> pin = Status::Invalid("Pin of nothing");
  if (req->reclaim_size() > 0) {
    pin = node.catalogue->Reclaim(session, FromWire(req->reclaim()));
  } else if (req->chunk_ids_size() > 0) {
    std::vector<uint64_t> ids(req->chunk_ids().begin(), req->chunk_ids().end());
    auto objects = node.directory->ObjectsOf(ids);
    pin = objects.ok() ? node.catalogue->Pin(session, *objects)
                       : Result<Handle>(objects.status());
  }
  if (!pin.ok()) return call->Fail(pin.status());
  wire::PinReply rep;
  rep.set_pin(pin->Bytes());
  call->Reply(rep);
}

void HandleRelease(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::ReleaseRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  Status first;
  for (const auto& bytes : req->pins()) {
    auto h = Handle::FromBytes(bytes);
    Status st = h.ok() ? node.catalogue->Release(call->state().session, *h) : h.status();
    if (!st.ok() && first.ok()) first = st;
  }
  call->Finish(first);
}

void FillTables(Node& node, google::protobuf::RepeatedPtrField<wire::TableInfo>* out) {
  for (const auto& t : node.directory->List()) {
    auto* w = out->Add();
    w->set_name(t.name);
    w->set_chunks(t.chunks);
    w->set_num_rows(t.rows);
    for (uint32_t p : t.publishers) w->add_publishers(p);
    for (uint32_t n : t.nodes) w->add_nodes(n);
    const std::string lost = node.LostReason(t.nodes);
    w->set_lost(!lost.empty());
    w->set_lost_reason(lost);
    w->set_pins(t.pins);
    w->set_orphaned(t.orphaned);
    w->set_local_only(t.local_only);
    w->set_incomplete(t.incomplete);
    w->set_homed_chunks(t.homed_chunks);
  }
}

void HandleList(Node& node, const CallPtr& call, std::string_view) {
  wire::ListReply rep;
  FillTables(node, rep.mutable_tables());
  call->Reply(rep);
}

// ---------------------------------------------------------------------------
// Replicas: a home's pushes and pulls

namespace {

// Notes what this node now holds of `home`'s chunks: in step with it, or
// behind (a push missed or out of order), which the next heartbeat repairs.
void Advance(Node& node, uint32_t home, uint64_t generation, uint64_t before,
             uint64_t after) {
  auto view = node.directory->home_view(home);
  if (view.synced && view.generation == generation && view.version == before) {
    node.directory->set_home_view(home, {generation, after, true});
  } else {
    view.synced = false;
    node.directory->set_home_view(home, view);
  }
}

}  // namespace

void HandleReplicaPut(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::ReplicaPutRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  const uint32_t home = call->state().info.identity.node;
  std::vector<ChunkMeta> chunks;
  for (const auto& w : req->chunks()) {
    ChunkMeta c = FromWire(w);
    if (c.home != home) {
      return call->Fail(Status::PermissionDenied(
          "node ", home, " may only register chunks homed at itself"));
    }
    chunks.push_back(std::move(c));
  }
  std::vector<uint64_t> ids;
  for (const auto& c : chunks) ids.push_back(c.id);
  node.directory->NotePush(home, ids);
  Status st = node.directory->Insert(&chunks, {});
  if (st.ok())
    Advance(node, home, req->generation(), req->prev_version(), req->version());
  node.Changed();
  call->Finish(st);
}

void HandleReplicaRemove(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::ReplicaRemoveRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  const uint32_t home = call->state().info.identity.node;
  // Every id it names, held here or not, and before looking: a pull under
  // way must not bring one back.
  node.directory->NotePush(
      home, std::vector<uint64_t>(req->chunk_ids().begin(), req->chunk_ids().end()));
  std::set<uint64_t> theirs;
  for (const auto& c : node.directory->HomedAt(home)) theirs.insert(c.id);
  std::vector<uint64_t> ids;
  for (uint64_t id : req->chunk_ids()) {
    if (theirs.count(id)) ids.push_back(id);  // a node removes only its own chunks
  }
  node.directory->Remove(ids);
  Advance(node, home, req->generation(), req->prev_version(), req->version());
  node.Changed();
  call->ReplyEmpty();
}

void HandleReplicaSync(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::ReplicaSyncRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  wire::ReplicaSyncReply rep;
  rep.set_generation(node.generation);
  // Version and chunks of one instant; while a publish is still being
  // registered here its version is counted but its chunks may be missing,
  // so the puller is told to come back (its next heartbeat).
  auto listing = node.directory->Homed();  // local-only chunks too: shadows
  rep.set_version(listing.version);
  rep.set_unsettled(!listing.settled);
  const auto& chunks = listing.chunks;
  size_t bytes = 0;
  for (const auto& c : chunks) {
    if (c.id <= req->after()) continue;
    if (bytes > kSyncPageBytes) {
      rep.set_more(true);
      break;
    }
    *rep.add_chunks() = ToWire(c);
    bytes += c.descriptor.size() + c.name.size() + 64;
  }
  call->Reply(rep);
}

}  // namespace quiver::control::daemon
