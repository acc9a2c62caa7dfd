// For tools: the cluster's status from one node's daemon, over that node's
// Unix socket, without mapping any region (it works while nodes are down).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "control/rpc/channel.h"
#include "control/rpc/wire.h"
#include "quiver/client.h"
#include "quiver/memory/cluster_config.h"

namespace quiver::control::client {

Result<ClusterStatus> QueryClusterStatus(const memory::NodeConfig& node, int timeout_ms);

// Bytes in live allocations of `node`'s region as its daemon says (-1 if it
// does not answer, or says it is not online). Tests and soaks compare it
// with a baseline to find leaks.
int64_t UsedBytesOf(const memory::NodeConfig& node, int timeout_ms);
// Whether `node`'s daemon is recovering from a restart (nothing if it does
// not answer).
std::optional<bool> RecoveringOf(const memory::NodeConfig& node, int timeout_ms);

// A session with `node`'s daemon over its Unix socket, for a tool named
// `program` (it shows in the daemon's log); maps nothing.
Result<std::unique_ptr<rpc::Channel>> DialAdmin(const memory::NodeConfig& node,
                                                int timeout_ms,
                                                const std::string& program);

// The public structs of the protocol's status messages.
TableInfo FromWire(const wire::TableInfo& table);
NodeStatus FromWire(const wire::NodeStatus& node);
ClusterStatus FromWire(const wire::StatusReply& reply);

}  // namespace quiver::control::client
