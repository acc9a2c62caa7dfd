// Call: one request a daemon received, answered exactly once (now, or later
// from any thread: a parked wait, a fan-out to peers, a worker). Fail() is
// the one place where a Status becomes an error frame on the wire.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "control/catalogue/catalogue.h"
#include "control/rpc/engine.h"

namespace google::protobuf {
class MessageLite;
}

namespace quiver::control::daemon {

// A SendTableFull upload in progress: memory held by the session.
struct Upload {
  uint64_t address = 0;
  uint64_t total = 0;
  uint64_t received = 0;
  std::string name;
  uint64_t first_row = 0;
  bool explicit_rows = false;
  bool committing = false;
};

// What a daemon keeps per connection (the engine's connection context).
struct ConnectionState {
  bool opened = false;               // OpenSession answered
  SessionInfo info;                  // who: role, node, local or not
  SessionId session = 0;             // the catalogue's session (clients only)
  std::atomic<uint32_t> waiting{0};  // parked calls of this connection
  std::mutex mu;                     // uploads
  std::map<uint64_t, Upload> uploads;
  uint64_t next_upload = 1;
};

class Call {
 public:
  Call(rpc::ConnectionPtr conn, uint64_t id, uint8_t method)
      : conn_(std::move(conn)), id_(id), method_(method) {}
  ~Call();

  void Reply(const google::protobuf::MessageLite& reply);
  void ReplyEmpty();
  void Fail(const Status& status);
  // Reply (empty) if OK, Fail otherwise.
  void Finish(const Status& status);
  bool answered() const { return answered_.load(); }

  ConnectionState& state() const { return *conn_->context<ConnectionState>(); }
  const rpc::ConnectionPtr& connection() const { return conn_; }
  uint8_t method() const { return method_; }

 private:
  bool Claim() { return !answered_.exchange(true); }
  rpc::ConnectionPtr conn_;
  uint64_t id_;
  uint8_t method_;
  std::atomic<bool> answered_{false};
};
using CallPtr = std::shared_ptr<Call>;

}  // namespace quiver::control::daemon
