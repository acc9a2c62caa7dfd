#include "control/client/admin.h"

#include <unistd.h>

#include "control/rpc/channel.h"
#include "control/rpc/methods.h"

namespace quiver::control::client {

TableInfo FromWire(const wire::TableInfo& w) {
  TableInfo t;
  t.name = w.name();
  t.chunks = w.chunks();
  t.rows = w.num_rows();
  t.publishers.assign(w.publishers().begin(), w.publishers().end());
  t.nodes.assign(w.nodes().begin(), w.nodes().end());
  t.lost = w.lost();
  t.lost_reason = w.lost_reason();
  t.pins = w.pins();
  t.orphaned = w.orphaned();
  t.local_only = w.local_only();
  t.incomplete = !w.incomplete().empty();
  t.incomplete_reason = w.incomplete();
  return t;
}

NodeStatus FromWire(const wire::NodeStatus& w) {
  NodeStatus s;
  s.node = w.node();
  s.online = w.online();
  s.control = w.control();
  s.region_base = w.region_base();
  s.region_size = w.region_size();
  s.used = w.used();
  s.free = w.free();
  s.largest_free = w.largest_free();
  s.live_allocations = w.live_allocations();
  s.flags = w.flags();
  s.generation = w.generation();
  s.backing = w.backing();
  s.sessions = w.sessions();
  s.waiting_calls = w.waiting_calls();
  s.recovering = w.recovering();
  return s;
}

ClusterStatus FromWire(const wire::StatusReply& reply) {
  ClusterStatus out;
  for (const auto& n : reply.nodes()) out.nodes.push_back(FromWire(n));
  for (const auto& t : reply.tables()) out.tables.push_back(FromWire(t));
  return out;
}

Result<std::unique_ptr<rpc::Channel>> DialAdmin(const memory::NodeConfig& node,
                                                int timeout_ms,
                                                const std::string& program) {
  if (node.socket.empty()) {
    return Status::Invalid("node ", node.id, " has no local socket to ask");
  }
  QUIVER_ASSIGN_OR_RAISE(auto channel, rpc::DialUnix(node.socket, timeout_ms));
  wire::OpenSessionRequest open;
  open.set_pid(static_cast<int32_t>(getpid()));
  open.set_program(program);
  QUIVER_RETURN_NOT_OK(channel
                           ->Call(rpc::MethodByte(rpc::Method::kOpenSession),
                                  open.SerializeAsString(), timeout_ms)
                           .status());
  return channel;
}

Result<ClusterStatus> QueryClusterStatus(const memory::NodeConfig& node, int timeout_ms) {
  QUIVER_ASSIGN_OR_RAISE(auto channel, DialAdmin(node, timeout_ms, "quiver status"));
  wire::StatusRequest req;
  QUIVER_ASSIGN_OR_RAISE(std::string bytes,
                         channel->Call(rpc::MethodByte(rpc::Method::kStatus),
                                       req.SerializeAsString(), timeout_ms));
  wire::StatusReply rep;
  if (!rep.ParseFromString(bytes)) {
    return Status::IOError("node ", node.id, " sent a malformed status");
  }
  return FromWire(rep);
}

int64_t UsedBytesOf(const memory::NodeConfig& node, int timeout_ms) {
  auto st = QueryClusterStatus(node, timeout_ms);
  if (!st.ok()) return -1;
  for (const auto& n : st->nodes) {
    if (n.node == node.id && n.online) return static_cast<int64_t>(n.used);
  }
  return -1;
}

std::optional<bool> RecoveringOf(const memory::NodeConfig& node, int timeout_ms) {
  auto st = QueryClusterStatus(node, timeout_ms);
  if (!st.ok()) return std::nullopt;
  for (const auto& n : st->nodes) {
    if (n.node == node.id) return n.recovering;
  }
  return std::nullopt;
}

}  // namespace quiver::control::client
