#include "control/client/link.h"

#include <google/protobuf/message_lite.h>
#include <unistd.h>

#include "control/tls/tls_context.h"
#include "quiver_rpc/control.pb.h"

namespace quiver::control::client {

Link::Link(const memory::ClusterConfig* config, const memory::NodeConfig* target,
           uint32_t self_node, const TlsContext* tls, int connect_timeout_ms)
    : config_(config),
      target_(target),
      self_node_(self_node),
      tls_(tls),
      connect_timeout_ms_(connect_timeout_ms) {
  const bool local = target_->id == self_node_ && !target_->socket.empty();
  where_ = "node " + std::to_string(target_->id) + " (" +
           (local ? "unix:" + target_->socket : target_->control) + ")";
}

Link::~Link() { Close(); }

Status Link::ConnectLocked() {
  std::unique_ptr<rpc::Channel> ch;
  if (target_->id == self_node_ && !target_->socket.empty()) {
    QUIVER_ASSIGN_OR_RAISE(ch, rpc::DialUnix(target_->socket, connect_timeout_ms_));
  } else {
    if (tls_ == nullptr) {
      return Status::Unauthenticated("no client certificate to reach ", where_);
    }
    const PeerIdentity expected{config_->name, PeerRole::kDaemon, target_->id};
    QUIVER_ASSIGN_OR_RAISE(ch, rpc::DialTls(target_->control, *tls_, config_->name,
                                            expected, connect_timeout_ms_));
  }
  wire::OpenSessionRequest req;
  req.set_pid(static_cast<int32_t>(getpid()));
  req.set_program("quiver client");
  QUIVER_ASSIGN_OR_RAISE(std::string bytes,
                         ch->Call(rpc::MethodByte(rpc::Method::kOpenSession),
                                  req.SerializeAsString(), connect_timeout_ms_));
  wire::OpenSessionReply rep;
  if (!rep.ParseFromString(bytes)) {
    return Status::IOError(where_, " sent a malformed OpenSession reply");
  }
  view_.epoch += 1;
  view_.generation = rep.generation();
  view_.session = rep.session();
  view_.lease_ms = rep.lease_ms();
  view_.session_quota = rep.session_quota();
  view_.max_malloc = rep.max_malloc();
  view_.recovering = rep.recovering();
  channel_ = std::move(ch);
  return Status::OK();
}

Result<std::shared_ptr<rpc::Channel>> Link::Open() {
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_) return Status::Cancelled("the client closed its link to ", where_);
  if (channel_ && channel_->status().ok()) return channel_;
  channel_.reset();
  Status st = ConnectLocked();
  if (!st.ok()) return st.WithContext("connecting to " + where_);
  return channel_;
}

bool Link::connected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return channel_ && channel_->status().ok();
}

bool Link::Probe() {
  std::shared_ptr<rpc::Channel> ch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ch = channel_;
  }
  return ch && ch->Probe().ok();
}

SessionView Link::view() const {
  std::lock_guard<std::mutex> lock(mu_);
  return view_;
}

bool Link::LastSend(rpc::Channel::Clock::time_point* when) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!channel_ || !channel_->status().ok()) return false;
  *when = channel_->last_send();
  return true;
}

Link::Pending Link::Start(rpc::Method method,
                          const google::protobuf::MessageLite& request) {
  return StartEncoded(method, request.SerializeAsString(), {});
}

Link::Pending Link::StartEncoded(rpc::Method method, std::string_view head,
                                 std::string_view tail) {
  Pending p;
  p.method = rpc::MethodByte(method);
  auto ch = Open();
  if (!ch.ok()) {
    p.error = ch.status();
    return p;
  }
  p.channel = *ch;
  auto id = p.channel->Send(p.method, head, tail);
  if (!id.ok()) {
    p.error = id.status();
  } else {
    p.id = *id;
  }
  return p;
}

Status Link::Finish(Pending* p, google::protobuf::MessageLite* reply, int timeout_ms) {
  const std::string what = std::string(rpc::MethodName(p->method)) + " at " + where_;
  if (!p->error.ok()) return p->error.WithContext(what);
  auto bytes = p->channel->Wait(p->id, timeout_ms);
  if (!bytes.ok()) return bytes.status().WithContext(what);
  if (reply != nullptr && !reply->ParseFromString(*bytes)) {
    return Status::IOError(what, ": malformed reply");
  }
  return Status::OK();
}

Status Link::Call(rpc::Method method, const google::protobuf::MessageLite& request,
                  google::protobuf::MessageLite* reply, int timeout_ms) {
  Pending p = Start(method, request);
  return Finish(&p, reply, timeout_ms);
}

void Link::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  shut_ = true;
  if (channel_) channel_->Close();
}

}  // namespace quiver::control::client
