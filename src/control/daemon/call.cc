#include "control/daemon/call.h"

#include <google/protobuf/message_lite.h>

namespace quiver::control::daemon {

Call::~Call() {
  // Every path answers; this catches a handler that forgot, so the caller
  // gets an error instead of waiting for its deadline.
  if (Claim()) {
    conn_->Fail(id_, method_, Status::UnknownError("the daemon dropped the call"));
  }
}

void Call::Reply(const google::protobuf::MessageLite& reply) {
  if (Claim()) conn_->Reply(id_, method_, reply.SerializeAsString());
}

void Call::ReplyEmpty() {
  if (Claim()) conn_->Reply(id_, method_, std::string_view());
}

void Call::Fail(const Status& status) {
  if (Claim()) conn_->Fail(id_, method_, status);
}

void Call::Finish(const Status& status) {
  if (status.ok()) {
    ReplyEmpty();
  } else {
    Fail(status);
  }
}

}  // namespace quiver::control::daemon
