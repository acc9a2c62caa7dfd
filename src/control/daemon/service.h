// Services: request handlers a higher layer adds to the daemon (the object
// store, src/store/daemon/) without the control plane depending on it. A
// service is made once the node is up, routes methods of its own to
// handlers, hears when a client session ends, and adds lines to the node's
// status. Its handlers follow the same rules as the control plane's: who
// calls comes from the connection, never from the request.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "control/catalogue/catalogue.h"
#include "control/daemon/call.h"
#include "control/rpc/methods.h"
#include "quiver/util/result.h"

namespace quiver::control::daemon {

struct Node;
using Handler = void (*)(Node&, const CallPtr&, std::string_view payload);

// Who may call a method (bits).
enum Role : uint8_t { kLocalClient = 1, kRemoteClient = 2, kDaemon = 4 };
constexpr uint8_t kClients = kLocalClient | kRemoteClient;
constexpr uint8_t kAnyone = kClients | kDaemon;

class Service {
 public:
  virtual ~Service() = default;
  // A client session ended; the catalogue has already released what it
  // held. Runs on an I/O thread: no waiting on peers.
  virtual void SessionClosed(SessionId /*session*/) {}
  // Called before the engine stops (timers and peers still up).
  virtual void Stopping() {}
  // After a take-over: the region's records that are not chunk records.
  // The service removes from `records` those it keeps (they are its own);
  // the daemon frees what no service kept. Runs before the first request.
  virtual void ClaimRecords(std::vector<FoundRecord>* /*records*/) {}
};

struct ServiceRoute {
  rpc::Method method;
  Handler handler = nullptr;
  uint8_t roles = 0;
};

struct ServiceSpec {
  std::string name;
  std::vector<ServiceRoute> routes;
  // Made after the node's catalogue, engine and peers exist, before the
  // node serves its first request.
  std::function<Result<std::unique_ptr<Service>>(Node&)> make;
};

}  // namespace quiver::control::daemon
