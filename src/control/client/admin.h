// For tools: the cluster's status from one node's daemon, over that node's
// Unix socket, without mapping any region (it works while nodes are down).
#pragma once

#include "control/rpc/wire.h"
#include "quiver/client.h"
#include "quiver/memory/cluster_config.h"

namespace quiver::control::client {

Result<ClusterStatus> QueryClusterStatus(const memory::NodeConfig& node, int timeout_ms);

// The public structs of the protocol's status messages.
TableInfo FromWire(const wire::TableInfo& table);
NodeStatus FromWire(const wire::NodeStatus& node);
ClusterStatus FromWire(const wire::StatusReply& reply);

}  // namespace quiver::control::client
