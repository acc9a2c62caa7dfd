// The engine handlers of a daemon: sessions opened on connect, requests
// routed by method and caller role, sessions released on close.
#pragma once

#include "control/rpc/engine.h"

namespace quiver::control::daemon {

struct Node;
// Fails if two services claim one method.
Result<rpc::EngineHandlers> MakeHandlers(Node* node);

}  // namespace quiver::control::daemon
