// For tools: a node's object-store status over its Unix socket, without
// mapping any region (`quiver status`).
#pragma once

#include "quiver/memory/cluster_config.h"
#include "quiver/store.h"

namespace quiver::store {

Result<StoreStats> QueryStoreStats(const memory::NodeConfig& node, int timeout_ms);

}  // namespace quiver::store
