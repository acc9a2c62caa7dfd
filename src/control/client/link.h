// Link: a client's session with one daemon. Its own node's daemon is
// reached over the node's Unix socket, others over mutual TLS with the
// client certificate of this node. The link connects on first use, opens a
// session, and when the connection has broken (the daemon restarted, say)
// the next call connects again: a new session, a new epoch. What the old
// session held the daemon released; Core re-claims the pins.
//
// Thread-safe. Calls block the calling thread only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "control/rpc/channel.h"
#include "control/rpc/methods.h"
#include "quiver/memory/cluster_config.h"

namespace google::protobuf {
class MessageLite;
}

namespace quiver::control {
class TlsContext;
}

namespace quiver::control::client {

// The timeout of a call that waits `wait_ms` at the daemon: the call's own
// timeout on top, at most what an int holds (a wait may be any 32-bit value).
inline int WithWait(int call_timeout_ms, int64_t wait_ms) {
  const int64_t sum = int64_t{call_timeout_ms} + std::max<int64_t>(0, wait_ms);
  return static_cast<int>(std::min<int64_t>(sum, 0x7fffffff));
}

// What the daemon said when the current session opened.
struct SessionView {
  uint64_t epoch = 0;  // +1 per session this link opened (0: none yet)
  uint64_t generation = 0;
  uint64_t session = 0;
  uint32_t lease_ms = 0;
  uint64_t session_quota = 0;
  uint64_t max_malloc = 0;
  bool recovering = false;
};

class Link {
 public:
  Link(const memory::ClusterConfig* config, const memory::NodeConfig* target,
       uint32_t self_node, const TlsContext* tls, int connect_timeout_ms);
  ~Link();

  uint32_t node() const { return target_->id; }
  // The channel of a working session, connecting first if needed.
  Result<std::shared_ptr<rpc::Channel>> Open();
  bool connected() const;
  // Checks, without blocking, that the connection is still up (a daemon
  // that died closed it); false if there is none or it broke.
  bool Probe();
  SessionView view() const;
  // When the current channel last sent (for keep-alives); false if none.
  bool LastSend(rpc::Channel::Clock::time_point* when) const;

  // A call in flight (Start), finished by Finish.
  struct Pending {
    std::shared_ptr<rpc::Channel> channel;
    uint64_t id = 0;
    uint8_t method = 0;
    Status error;  // Start failed
  };
  Pending Start(rpc::Method method, const google::protobuf::MessageLite& request);
  // A request already encoded: `head`, then `tail` sent without being copied.
  Pending StartEncoded(rpc::Method method, std::string_view head, std::string_view tail);
  // Waits for the reply and parses it into `reply` (null: ignore the body).
  // Errors carry "<Method> at node N".
  Status Finish(Pending* pending, google::protobuf::MessageLite* reply, int timeout_ms);
  Status Call(rpc::Method method, const google::protobuf::MessageLite& request,
              google::protobuf::MessageLite* reply, int timeout_ms);

  // Closes the channel for good; a waiting call fails at once and later
  // calls fail (Cancelled).
  void Close();

 private:
  Status ConnectLocked();

  const memory::ClusterConfig* config_;
  const memory::NodeConfig* target_;
  const uint32_t self_node_;
  const TlsContext* tls_;
  const int connect_timeout_ms_;

  mutable std::mutex mu_;
  std::shared_ptr<rpc::Channel> channel_;
  SessionView view_;
  bool shut_ = false;
  std::string where_;  // "node 2 (unix:/tmp/x.sock)" for messages
};

}  // namespace quiver::control::client
