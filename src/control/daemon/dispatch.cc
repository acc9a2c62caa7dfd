// The request table: which handler serves each method and who may call it.
// Identity comes from the connection (certificate or kernel), never from a
// request: a peer daemon can act only as its own node, a client only as a
// client of its node.
#include "control/daemon/dispatch.h"

#include <unistd.h>

#include <array>

#include "control/daemon/log.h"
#include "control/daemon/node.h"
#include "control/daemon/transfer.h"

namespace quiver::control::daemon {

namespace {

using rpc::Method;

struct Route {
  Handler handler = nullptr;
  uint8_t roles = 0;
};

using Routes = std::array<Route, 256>;

// The control plane's methods, then the services' (which may not take one).
Result<std::shared_ptr<const Routes>> MakeRoutes(
    const std::vector<ServiceSpec>& services) {
  auto routes = std::make_shared<Routes>();
  Routes& r = *routes;
  auto add = [&](Method m, Handler h, uint8_t roles) {
    r[rpc::MethodByte(m)] = {h, roles};
  };
  add(Method::kOpenSession, HandleOpenSession, kAnyone);
  add(Method::kPing, HandlePing, kAnyone);
  add(Method::kMalloc, HandleMalloc, kClients);
  add(Method::kRealloc, HandleRealloc, kClients);
  add(Method::kFree, HandleFree, kClients);
  add(Method::kSeal, HandleSeal, kClients);
  add(Method::kPublish, HandlePublish, kClients);
  add(Method::kUnpublish, HandleUnpublish, kClients);
  add(Method::kLookup, HandleLookup, kClients);
  add(Method::kPin, HandlePin, kClients);
  add(Method::kRelease, HandleRelease, kClients);
  add(Method::kList, HandleList, kAnyone);
  add(Method::kStatus, HandleStatus, kAnyone);
  add(Method::kUploadBegin, HandleUploadBegin, kClients);
  add(Method::kUploadPiece, HandleUploadPiece, kClients);
  add(Method::kUploadCommit, HandleUploadCommit, kClients);
  add(Method::kSetState, HandleSetState, kClients);
  add(Method::kGetState, HandleGetState, kAnyone);
  add(Method::kSyncWait, HandleSyncWait, kClients);
  add(Method::kWaitAllOnline, HandleWaitAllOnline, kClients);
  add(Method::kTransferConnect, HandleTransferConnect, kClients);
  add(Method::kHeartbeat, HandleHeartbeat, kDaemon);
  add(Method::kFlush, HandleFlush, kDaemon);
  add(Method::kReplicaPut, HandleReplicaPut, kDaemon);
  add(Method::kReplicaRemove, HandleReplicaRemove, kDaemon);
  add(Method::kReplicaSync, HandleReplicaSync, kDaemon);
  add(Method::kStateUpdate, HandleStateUpdate, kDaemon);
  for (const auto& s : services) {
    for (const auto& route : s.routes) {
      if (r[rpc::MethodByte(route.method)].handler != nullptr) {
        return Status::Invalid("service ", s.name, " routes method ",
                               int{rpc::MethodByte(route.method)}, ", which is taken");
      }
      add(route.method, route.handler, route.roles);
    }
  }
  return std::shared_ptr<const Routes>(std::move(routes));
}

uint8_t RoleOf(const ConnectionState& st) {
  if (st.info.identity.role == PeerRole::kDaemon) return kDaemon;
  return st.info.local ? kLocalClient : kRemoteClient;
}

}  // namespace
}  // namespace quiver::control::daemon

namespace quiver::control::rpc {

const char* MethodName(uint8_t method) {
  switch (static_cast<Method>(method)) {
#define QUIVER_METHOD_NAME(name) \
  case Method::k##name:          \
    return #name;
    QUIVER_METHOD_NAME(OpenSession)
    QUIVER_METHOD_NAME(Ping)
    QUIVER_METHOD_NAME(Malloc)
    QUIVER_METHOD_NAME(Realloc)
    QUIVER_METHOD_NAME(Free)
    QUIVER_METHOD_NAME(Seal)
    QUIVER_METHOD_NAME(Publish)
    QUIVER_METHOD_NAME(Unpublish)
    QUIVER_METHOD_NAME(Lookup)
    QUIVER_METHOD_NAME(Pin)
    QUIVER_METHOD_NAME(Release)
    QUIVER_METHOD_NAME(List)
    QUIVER_METHOD_NAME(Status)
    QUIVER_METHOD_NAME(UploadBegin)
    QUIVER_METHOD_NAME(UploadPiece)
    QUIVER_METHOD_NAME(UploadCommit)
    QUIVER_METHOD_NAME(SetState)
    QUIVER_METHOD_NAME(GetState)
    QUIVER_METHOD_NAME(SyncWait)
    QUIVER_METHOD_NAME(WaitAllOnline)
    QUIVER_METHOD_NAME(TransferConnect)
    QUIVER_METHOD_NAME(Heartbeat)
    QUIVER_METHOD_NAME(Flush)
    QUIVER_METHOD_NAME(ReplicaPut)
    QUIVER_METHOD_NAME(ReplicaRemove)
    QUIVER_METHOD_NAME(ReplicaSync)
    QUIVER_METHOD_NAME(StateUpdate)
    QUIVER_METHOD_NAME(StoreReserve)
    QUIVER_METHOD_NAME(StoreUnreserve)
    QUIVER_METHOD_NAME(StoreCreate)
    QUIVER_METHOD_NAME(StoreSeal)
    QUIVER_METHOD_NAME(StoreAbort)
    QUIVER_METHOD_NAME(StoreGet)
    QUIVER_METHOD_NAME(StoreRelease)
    QUIVER_METHOD_NAME(StoreDelete)
    QUIVER_METHOD_NAME(StoreContains)
    QUIVER_METHOD_NAME(StoreList)
    QUIVER_METHOD_NAME(StoreEvents)
    QUIVER_METHOD_NAME(StoreEvict)
    QUIVER_METHOD_NAME(StoreLocate)
    QUIVER_METHOD_NAME(StoreStatus)
#undef QUIVER_METHOD_NAME
  }
  return nullptr;
}

}  // namespace quiver::control::rpc

namespace quiver::control::daemon {

Result<rpc::EngineHandlers> MakeHandlers(Node* node) {
  QUIVER_ASSIGN_OR_RAISE(auto routes, MakeRoutes(node->options.services));
  rpc::EngineHandlers h;
  h.on_open = [node](const rpc::ConnectionPtr& c) -> Status {
    auto st = std::make_shared<ConnectionState>();
    const rpc::PeerInfo& peer = c->peer();
    if (peer.unix_socket) {
      // The socket is 0600; the kernel's word on who connected is checked
      // too, so a socket file with looser permissions still admits no one.
      if (peer.uid != geteuid() && peer.uid != 0) {
        return Status::Unauthenticated("uid ", peer.uid, " may not use node ", node->id,
                                       "'s socket");
      }
      st->info.identity = {node->config.name, PeerRole::kClient, node->id};
      st->info.local = true;
      st->info.pid = peer.pid;
      st->info.address = "unix";
    } else {
      if (node->config.FindNode(peer.identity.node) == nullptr) {
        return Status::Unauthenticated(peer.identity.ToString(),
                                       " is not a node of this cluster");
      }
      st->info.identity = peer.identity;
      st->info.address = peer.address;
    }
    c->set_context(std::move(st));
    return Status::OK();
  };
  h.on_request = [node, routes](const rpc::ConnectionPtr& c, const rpc::FrameHeader& f,
                                std::string_view payload) {
    auto call = std::make_shared<Call>(c, f.call_id, f.method);
    auto* st = c->context<ConnectionState>();
    const Route& route = (*routes)[f.method];
    if (st == nullptr) {
      return call->Fail(Status::FailedPrecondition("this link serves no requests"));
    }
    if (route.handler == nullptr) {
      return call->Fail(Status::NotImplemented("unknown method ", int{f.method}));
    }
    if (!st->opened && f.method != rpc::MethodByte(Method::kOpenSession)) {
      return call->Fail(Status::FailedPrecondition(
          rpc::MethodName(f.method), " before OpenSession: open a session first"));
    }
    if ((route.roles & RoleOf(*st)) == 0) {
      return call->Fail(Status::PermissionDenied(rpc::MethodName(f.method),
                                                 " may not be called by ",
                                                 st->info.identity.ToString()));
    }
    route.handler(*node, call, payload);
  };
  h.on_close = [node](const rpc::ConnectionPtr& c, const Status& why) {
    CloseSession(*node, c, why);
  };
  return h;
}

}  // namespace quiver::control::daemon
