// The node's tables for nodes outside its memory group (transfer.cc): the
// handler that gives a client session a key to this node's transport.
#pragma once

#include <string_view>

#include "control/daemon/call.h"

namespace quiver::control::daemon {

struct Node;

// TransferConnect: a ticket of the node's transport server (one connection,
// within a few seconds) for the calling client session; the connection's
// scans pin for that session and end when it ends. Clients only (the route
// says so); Unavailable where the node serves no transport. Runs on an I/O
// thread and never waits.
void HandleTransferConnect(Node& node, const CallPtr& call, std::string_view payload);

}  // namespace quiver::control::daemon
