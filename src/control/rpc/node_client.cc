#include "quiver/control/node_client.h"

#include <chrono>

namespace quiver::control {

grpc::Status ToGrpcStatus(const Status& st) {
  if (st.ok()) return grpc::Status::OK;
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  switch (st.code()) {
    case StatusCode::kInvalid:
    case StatusCode::kTypeError:
    case StatusCode::kSerializationError:
    case StatusCode::kIndexError:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case StatusCode::kOutOfMemory:
    case StatusCode::kCapacityError:
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      break;
    case StatusCode::kKeyError:
    case StatusCode::kNotFound:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    case StatusCode::kAlreadyExists:
      code = grpc::StatusCode::ALREADY_EXISTS;
      break;
    case StatusCode::kPermissionDenied:
      code = grpc::StatusCode::PERMISSION_DENIED;
      break;
    case StatusCode::kUnavailable:
    case StatusCode::kIOError:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case StatusCode::kFailedPrecondition:
      code = grpc::StatusCode::FAILED_PRECONDITION;
      break;
    case StatusCode::kDeadlineExceeded:
      code = grpc::StatusCode::DEADLINE_EXCEEDED;
      break;
    case StatusCode::kUnauthenticated:
      code = grpc::StatusCode::UNAUTHENTICATED;
      break;
    case StatusCode::kCancelled:
      code = grpc::StatusCode::CANCELLED;
      break;
    case StatusCode::kNotImplemented:
      code = grpc::StatusCode::UNIMPLEMENTED;
      break;
    default:
      break;
  }
  return grpc::Status(code, st.message());
}

Status FromGrpcStatus(const grpc::Status& st, const std::string& context) {
  if (st.ok()) return Status::OK();
  std::string msg = context + ": " + st.error_message();
  switch (st.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      return Status::Invalid(msg);
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return Status::OutOfMemory(msg);
    case grpc::StatusCode::NOT_FOUND:
      return Status::NotFound(msg);
    case grpc::StatusCode::ALREADY_EXISTS:
      return Status::AlreadyExists(msg);
    case grpc::StatusCode::PERMISSION_DENIED:
      return Status::PermissionDenied(msg);
    case grpc::StatusCode::UNAUTHENTICATED:
      return Status::Unauthenticated(msg);
    case grpc::StatusCode::FAILED_PRECONDITION:
      return Status::FailedPrecondition(msg);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status::DeadlineExceeded(msg);
    case grpc::StatusCode::UNAVAILABLE:
      return Status::Unavailable(msg);
    case grpc::StatusCode::CANCELLED:
      return Status::Cancelled(msg);
    case grpc::StatusCode::UNIMPLEMENTED:
      return Status::NotImplemented(msg);
    default:
      return Status::UnknownError(msg);
  }
}

std::unique_ptr<NodeClient> NodeClient::Make(const std::string& target, std::string token,
                                             uint32_t target_node, uint32_t caller_node,
                                             int32_t caller_pid) {
  std::unique_ptr<NodeClient> c(new NodeClient());
  c->target_ = target;
  c->token_ = std::move(token);
  c->target_node_ = target_node;
  c->caller_node_ = caller_node;
  c->caller_pid_ = caller_pid;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  // Reconnect quickly after a peer restarts (the default backoff reaches
  // two minutes).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // One connection per NodeClient, not shared with other clients of the
  // same target: a slow stream must not delay another client's pings.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  c->channel_ =
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  c->stub_ = rpc::Node::NewStub(c->channel_);
  return c;
}

void NodeClient::Prepare(grpc::ClientContext* ctx, int timeout_ms) const {
  ctx->AddMetadata(kTokenMetadataKey, token_);
  if (timeout_ms > 0) {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(timeout_ms));
  }
}

Status NodeClient::Check(const grpc::Status& status, const char* what) const {
  if (status.ok()) return Status::OK();
  return FromGrpcStatus(status, std::string(what) + " at node " +
                                    std::to_string(target_node_) + " (" + target_ + ")");
}

void AddRanges(const std::vector<BufferRange>& ranges,
               google::protobuf::RepeatedPtrField<rpc::Range>* out) {
  for (const auto& r : ranges) {
    auto* x = out->Add();
    x->set_address(r.address);
    x->set_length(r.length);
  }
}

Result<RangesByNode> GroupByOwner(const memory::ClusterConfig& config,
                                  const std::vector<BufferRange>& ranges) {
  RangesByNode out;
  for (const auto& r : ranges) {
    if (r.length == 0) continue;
    const auto* n = config.NodeOfAddress(r.address, r.length);
    if (n == nullptr) {
      return Status::Invalid("buffer [", util::Hex(r.address), ", +", r.length,
                             ") is not inside one region of the cluster");
    }
    out[n->id].push_back(r);
  }
  return out;
}

std::string NodeTarget(const memory::NodeConfig& node, bool same_node) {
  if (same_node && !node.socket.empty()) return "unix:" + node.socket;
  return node.control;
}

}  // namespace quiver::control
