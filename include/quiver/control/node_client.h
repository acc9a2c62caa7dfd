// NodeClient: one connection to one node daemon's gRPC service.
//
// Targets are "unix:/path/to.sock" (a client and its own node's daemon) or
// "host:port" (peers, and clients talking straight to another node's owner
// for remote allocation). Every call carries the cluster token and the
// caller's identity, has a deadline, and turns gRPC errors into Status
// values that name the node and the operation. Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "quiver/control/descriptor.h"
#include "quiver/memory/cluster_config.h"
#include "quiver/util/result.h"
#include "quiver_rpc/node.grpc.pb.h"

namespace quiver::control {

// Metadata key every call carries the cluster token in.
constexpr const char* kTokenMetadataKey = "x-quiver-token";

// gRPC <-> Status, keeping the code's meaning.
grpc::Status ToGrpcStatus(const Status& status);
Status FromGrpcStatus(const grpc::Status& status, const std::string& context);

class NodeClient {
 public:
  // Does not wait for the connection; the first call does.
  static std::unique_ptr<NodeClient> Make(const std::string& target, std::string token,
                                          uint32_t target_node, uint32_t caller_node,
                                          int32_t caller_pid);

  uint32_t node() const { return target_node_; }
  const std::string& target() const { return target_; }
  rpc::Node::Stub* stub() { return stub_.get(); }

  // Calls `method` with the caller set in `request` and the token attached.
  // `what` names the operation in errors. With `wait_for_ready` a call
  // waits (up to its deadline) for the connection instead of failing at
  // once while the target is unreachable.
  template <typename Req, typename Rep>
  Status Call(grpc::Status (rpc::Node::Stub::*method)(grpc::ClientContext*, const Req&,
                                                      Rep*),
              Req* request, Rep* reply, int timeout_ms, const char* what,
              bool wait_for_ready = true) {
    request->mutable_caller()->set_node(caller_node_);
    request->mutable_caller()->set_pid(caller_pid_);
    grpc::ClientContext ctx;
    Prepare(&ctx, timeout_ms);
    ctx.set_wait_for_ready(wait_for_ready);
    return Check((stub_.get()->*method)(&ctx, *request, reply), what);
  }

  // Sets the token and a deadline on a context for a hand-written call
  // (streams).
  void Prepare(grpc::ClientContext* ctx, int timeout_ms) const;
  Status Check(const grpc::Status& status, const char* what) const;
  void FillCaller(rpc::Caller* caller) const {
    caller->set_node(caller_node_);
    caller->set_pid(caller_pid_);
  }

 private:
  NodeClient() = default;
  std::string target_, token_;
  uint32_t target_node_ = 0, caller_node_ = 0;
  int32_t caller_pid_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<rpc::Node::Stub> stub_;
};

// Appends `ranges` to a request's repeated Range field.
void AddRanges(const std::vector<BufferRange>& ranges,
               google::protobuf::RepeatedPtrField<rpc::Range>* out);

// Non-empty `ranges` grouped by the node whose region holds each; Invalid
// names the first range that lies in no region (or across two).
using RangesByNode = std::map<uint32_t, std::vector<BufferRange>>;
Result<RangesByNode> GroupByOwner(const memory::ClusterConfig& config,
                                  const std::vector<BufferRange>& ranges);

// The gRPC target of a node: its Unix socket for a process of the same node
// (when the socket is configured), otherwise its TCP control address.
std::string NodeTarget(const memory::NodeConfig& node, bool same_node);

}  // namespace quiver::control
