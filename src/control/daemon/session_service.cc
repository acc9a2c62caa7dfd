// Sessions, liveness and barriers: opening a session (the first call of a
// connection), its end (everything it held is released), silent sessions
// (dropped after their lease), ping, status, the nodes' state words and the
// waits on them, and the daemon-to-daemon heartbeat.
#include <algorithm>

#include "control/daemon/log.h"
#include "control/daemon/node.h"
#include "control/rpc/wire.h"

namespace quiver::control::daemon {

namespace {

using util::Hex;

std::string Who(const ConnectionState& s) {
  std::string w = s.info.identity.ToString();
  if (s.info.pid != 0) w += " pid " + std::to_string(s.info.pid);
  return w + (s.info.local ? " (local)" : " (" + s.info.address + ")");
}

wire::NodeStatus OwnStatus(Node& node) {
  wire::NodeStatus s;
  s.set_node(node.id);
  s.set_online(true);
  s.set_control(node.self->control);
  s.set_region_base(node.self->base);
  s.set_region_size(node.self->size);
  const auto st = node.allocator()->Stats();
  s.set_used(st.used);
  s.set_free(st.free);
  s.set_largest_free(st.largest_free);
  s.set_live_allocations(st.live_allocations);
  s.set_generation(node.generation);
  s.set_backing(memory::BackingKindName(node.self->backing));
  s.set_flags(node.flags.load());
  const auto cs = node.catalogue->Stats();
  s.set_sessions(static_cast<uint32_t>(cs.sessions));
  s.set_waiting_calls(static_cast<uint32_t>(node.waiters->size()));
  s.set_recovering(cs.recovering);
  return s;
}

}  // namespace

std::string Node::LostReason(const std::vector<uint32_t>& nodes) const {
  for (uint32_t n : nodes) {
    if (n == id) continue;
    std::string why = peers->OfflineReason(n);
    if (!why.empty()) return why;
  }
  return "";
}

void HandleOpenSession(Node& node, const CallPtr& call, std::string_view payload) {
  ConnectionState& st = call->state();
  if (st.opened) {
    return call->Fail(Status::FailedPrecondition("this connection's session is open"));
  }
  auto req = ParseMessage<wire::OpenSessionRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  // The kernel's word for local peers; a TLS peer's pid is informational.
  if (!st.info.local) st.info.pid = req->pid();
  if (st.info.identity.role == PeerRole::kClient) {
    auto session = node.catalogue->OpenSession(st.info);
    if (!session.ok()) return call->Fail(session.status());
    st.session = *session;
  }
  st.opened = true;
  call->connection()->Established();
  wire::OpenSessionReply rep;
  rep.set_node(node.id);
  rep.set_generation(node.generation);
  rep.set_session(st.session);
  rep.set_lease_ms(node.lease_ms);
  rep.set_session_quota(node.limits.session_quota);
  rep.set_max_malloc(node.limits.max_malloc);
  rep.set_recovering(node.catalogue->recovering());
  call->Reply(rep);
}

void CloseSession(Node& node, const rpc::ConnectionPtr& conn, const Status& why) {
  auto* st = conn->context<ConnectionState>();
  if (st == nullptr || !st->opened) return;
  node.waiters->DropConnection(conn->id());
  // A stopping daemon leaves what sessions held in the region: the next
  // daemon recovers it (readers may still be reading).
  if (node.stopping || st->session == 0) return;
  DropUploads(node, *st);
  node.directory->SessionEnded(st->session);
  const auto released = node.catalogue->CloseSession(st->session);
  for (auto& s : node.services) s->SessionClosed(st->session);
  if (released.objects_freed || released.pins_released) {
    Log("session of %s ended (%s): freed %u objects (%llu bytes), released %u pins",
        Who(*st).c_str(), why.ok() ? "closed" : why.message().c_str(),
        released.objects_freed, static_cast<unsigned long long>(released.bytes_freed),
        released.pins_released);
  }
  node.Changed();
}

void ExpireSilentSessions(Node& node) {
  const auto lease = std::chrono::milliseconds(node.lease_ms);
  node.engine->ForEachConnection([&](const rpc::ConnectionPtr& c) {
    if (c->outgoing()) return;
    auto* st = c->context<ConnectionState>();
    if (st == nullptr) return;
    // A session with parked calls is no exception: a live client library
    // pings while its calls wait, and parked calls must not outlive a
    // client that died or went silent (they end with the connection).
    if (c->Silence() > lease) {
      c->Close(Status::DeadlineExceeded("session silent for more than ", node.lease_ms,
                                        " ms (its lease)"));
    }
  });
}

void HandlePing(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::PingRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  wire::PingReply rep;
  rep.set_node(node.id);
  rep.set_generation(node.generation);
  rep.set_payload(req->payload());
  call->Reply(rep);
}

void HandleSetState(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::SetStateRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  if (call->state().info.identity.node != node.id) {
    return call->Fail(Status::PermissionDenied(
        call->state().info.identity.ToString(),
        " sets its own node's state word, through its own daemon"));
  }
  uint64_t old = node.flags.load(), next;
  do {
    next = (old & ~req->mask()) | (req->flags() & req->mask());
  } while (!node.flags.compare_exchange_weak(old, next));
  node.Changed();
  wire::StateUpdate update;
  update.set_flags(next);
  node.peers->CallAll(rpc::Method::kStateUpdate, update.SerializeAsString(),
                      [call](Peers::Results) { call->ReplyEmpty(); });
}

void HandleGetState(Node& node, const CallPtr& call, std::string_view) {
  wire::StateReply rep;
  rep.set_node(node.id);
  rep.set_flags(node.flags.load());
  call->Reply(rep);
}

void HandleSyncWait(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::SyncWaitRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  std::vector<uint32_t> nodes(req->nodes().begin(), req->nodes().end());
  if (nodes.empty()) {
    for (const auto& n : node.config.nodes) nodes.push_back(n.id);
  }
  for (uint32_t n : nodes) {
    if (node.config.FindNode(n) == nullptr) {
      return call->Fail(
          Status::Invalid("SyncWait on node ", n, " which is not in the cluster"));
    }
  }
  const uint64_t mask = req->mask(), want = req->flags() & req->mask();
  const uint32_t timeout = req->timeout_ms();
  auto check = [&node, nodes, mask, want, timeout](const CallPtr& c, bool expired) {
    std::string missing;
    for (uint32_t n : nodes) {
      const uint64_t f = n == node.id ? node.flags.load() : node.peers->view(n).flags;
      if ((f & mask) != want) missing += " " + std::to_string(n);
    }
    if (missing.empty()) {
      c->ReplyEmpty();
      return true;
    }
    if (!expired) return false;
    c->Fail(Status::DeadlineExceeded("SyncWait(flags ", Hex(want), ", mask ", Hex(mask),
                                     "): nodes not there after ", timeout,
                                     " ms:", missing));
    return true;
  };
  Status st = node.waiters->Park(call, timeout, check);
  if (!st.ok()) call->Fail(st);
}

void HandleWaitAllOnline(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::WaitAllOnlineRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  const uint32_t timeout = req->timeout_ms();
  auto check = [&node, timeout](const CallPtr& c, bool expired) {
    std::string missing;
    for (const auto& v : node.peers->views()) {
      if (!v.online) missing += " " + std::to_string(v.node);
    }
    if (missing.empty()) {
      c->ReplyEmpty();
      return true;
    }
    if (!expired) return false;
    c->Fail(
        Status::DeadlineExceeded("nodes not online after ", timeout, " ms:", missing));
    return true;
  };
  Status st = node.waiters->Park(call, timeout, check);
  if (!st.ok()) call->Fail(st);
}

void HandleStatus(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::StatusRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  auto rep = std::make_shared<wire::StatusReply>();
  *rep->add_nodes() = OwnStatus(node);
  auto finish = [&node, call, rep] {
    FillTables(node, rep->mutable_tables());
    call->Reply(*rep);
  };
  if (req->local_only()) return finish();
  wire::StatusRequest local;
  local.set_local_only(true);
  node.peers->CallAll(
      rpc::Method::kStatus, local.SerializeAsString(),
      [&node, rep, finish](Peers::Results results) {
        for (const auto& n : node.config.nodes) {
          if (n.id == node.id) continue;
          auto it = results.find(n.id);
          if (it != results.end() && it->second.ok()) {
            auto s = ParseMessage<wire::StatusReply>(*it->second);
            if (s.ok() && s->nodes_size() == 1) {
              *rep->add_nodes() = s->nodes(0);
              continue;
            }
          }
          auto* s = rep->add_nodes();
          s->set_node(n.id);
          s->set_online(false);
          s->set_control(n.control);
          s->set_region_base(n.base);
          s->set_region_size(n.size);
          s->set_backing(memory::BackingKindName(n.backing));
        }
        std::sort(rep->mutable_nodes()->begin(), rep->mutable_nodes()->end(),
                  [](const auto& a, const auto& b) { return a.node() < b.node(); });
        finish();
      });
}

void HandleHeartbeat(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::HeartbeatRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  node.peers->SetFlags(call->state().info.identity.node, req->flags());
  wire::HeartbeatReply rep;
  rep.set_generation(node.generation);
  rep.set_version(node.directory->version());
  rep.set_flags(node.flags.load());
  call->Reply(rep);
}

void HandleStateUpdate(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::StateUpdate>(payload);
  if (!req.ok()) return call->Fail(req.status());
  node.peers->SetFlags(call->state().info.identity.node, req->flags());
  call->ReplyEmpty();
}

}  // namespace quiver::control::daemon
