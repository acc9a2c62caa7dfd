// Channel: a client's connection to one daemon, for blocking callers.
//
// Many calls may be in flight at once (Send, then Wait for each, in any
// order); replies are matched by call id. There is no reader thread: the
// first thread that waits reads the socket for everyone and hands other
// callers' replies over, so a lone caller reads its own reply with no
// thread hand-off (each one costs tens of microseconds on virtual machines).
// A Channel is thread-safe. Once the connection fails it stays failed:
// every call returns that error and the owner reconnects with a new Channel.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "control/rpc/frame.h"
#include "control/rpc/stream.h"

namespace quiver::control::rpc {

class Channel {
 public:
  using Clock = std::chrono::steady_clock;

  // Takes a connected stream whose handshake is done.
  Channel(std::unique_ptr<Stream> stream, PeerInfo peer);
  ~Channel();  // Close()

  // Sends a request; returns its call id for Wait. The payload is `payload`
  // followed by `tail`: a large tail goes from the caller's memory to the
  // stream without being copied into a frame first.
  Result<uint64_t> Send(uint8_t method, std::string_view payload,
                        std::string_view tail = {});
  // The reply of call `id`: its payload, the peer's error, DeadlineExceeded
  // after `timeout_ms` (the reply is then dropped when it comes), or the
  // connection's failure.
  Result<std::string> Wait(uint64_t id, int timeout_ms);
  Result<std::string> Call(uint8_t method, std::string_view payload, int timeout_ms);
  // No one will Wait for `id`: drop its reply.
  void Forget(uint64_t id);

  // OK while the connection works.
  Status status() const;
  // Notices, without blocking, a connection the daemon closed while no call
  // was waiting (the daemon never sends unasked). Returns status().
  Status Probe();
  const PeerInfo& peer() const { return peer_; }
  // When a frame was last sent (keep-alives go only to idle channels).
  Clock::time_point last_send() const;
  // Fails every waiting call and closes the socket. Idempotent.
  void Close();

 private:
  struct Slot {
    bool done = false;
    bool forgotten = false;
    Status error;
    std::string payload;
  };
  // Reads what the socket has (polling up to `deadline` when nothing is
  // buffered), with mu_ released while polling. Called by the reader.
  Status ReadSome(std::unique_lock<std::mutex>* lock, Clock::time_point deadline);
  // Writes all of `bytes`, waiting while the stream is full (mu_ held).
  Status WriteAllLocked(std::string_view bytes);
  // Under mu_: reads what the socket holds now and hands each reply to its
  // call.
  Status DrainLocked();
  void Fail(const Status& st);  // under mu_

  const PeerInfo peer_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<Stream> stream_;
  FrameDecoder decoder_;
  std::unordered_map<uint64_t, Slot> slots_;
  uint64_t next_id_ = 1;
  bool reading_ = false;
  Status broken_;
  Clock::time_point last_send_;
};

// Connects to a daemon's TLS port and checks it presents `expected`'s
// certificate.
Result<std::unique_ptr<Channel>> DialTls(const std::string& host_port,
                                         const TlsContext& tls,
                                         const std::string& cluster,
                                         const PeerIdentity& expected, int timeout_ms);
// Connects to a node's Unix socket and checks, through the kernel, that the
// process listening runs as this user (or root): a socket planted by
// another user at the path is refused.
Result<std::unique_ptr<Channel>> DialUnix(const std::string& path, int timeout_ms);

}  // namespace quiver::control::rpc
