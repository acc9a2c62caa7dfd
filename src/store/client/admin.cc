#include "store/client/admin.h"

#include "control/client/admin.h"
#include "control/rpc/methods.h"
#include "quiver_rpc/store.pb.h"
#include "store/client/store_impl.h"

namespace quiver::store {

Result<StoreStats> QueryStoreStats(const memory::NodeConfig& node, int timeout_ms) {
  QUIVER_ASSIGN_OR_RAISE(auto channel,
                         control::client::DialAdmin(node, timeout_ms, "quiver status"));
  QUIVER_ASSIGN_OR_RAISE(
      std::string bytes,
      channel->Call(control::rpc::MethodByte(control::rpc::Method::kStoreStatus), "",
                    timeout_ms));
  wire::StoreStatusReply rep;
  if (!rep.ParseFromString(bytes)) {
    return Status::IOError("node ", node.id, " sent a malformed store status");
  }
  return StoreStatsFromWire(rep);
}

}  // namespace quiver::store
