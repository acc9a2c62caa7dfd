// Engine: the daemon's side of the control protocol. A fixed set of I/O
// threads (epoll) drives every connection: clients and peers that connect
// in (over TLS on TCP, or the node's Unix socket) and the links this daemon
// opens to its peers. On each connection both sides may call: a request is
// handed to the service's handler on the I/O thread, which replies at once
// or later from any thread; outgoing calls complete through a callback.
// Nothing here blocks per call, so thousands of waiting calls cost memory,
// not threads (docs/protocol.md).
//
// Connection and Engine are thread-safe. Callbacks run on I/O threads (or
// the timer thread for time-outs) and must not block.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "control/rpc/frame.h"
#include "control/rpc/stream.h"
#include "control/rpc/timers.h"

namespace quiver::control::rpc {

class Engine;
class IoThread;

// The outcome of an outgoing call: the reply's payload or the error.
using CallDone = std::function<void(Result<std::string> reply)>;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Clock = std::chrono::steady_clock;

  uint64_t id() const { return id_; }
  // Who is at the other end; set once the handshake is done.
  const PeerInfo& peer() const { return peer_; }
  bool outgoing() const { return outgoing_; }

  // Answers the incoming call `call_id`. Any thread; once per call.
  void Reply(uint64_t call_id, uint8_t method, std::string_view payload);
  void Fail(uint64_t call_id, uint8_t method, const Status& status);

  // Calls `method` on the peer. `done` runs exactly once: with the reply,
  // the peer's error, DeadlineExceeded after `timeout_ms`, or Unavailable
  // when the connection closes first.
  void Call(uint8_t method, std::string_view payload, int timeout_ms, CallDone done);

  // Closes the connection (idempotent, any thread): outgoing calls fail
  // with `why`, and the engine's on_close handler runs once.
  void Close(const Status& why);
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  // What the service attaches (its session).
  void set_context(std::shared_ptr<void> context) { context_ = std::move(context); }
  template <typename T>
  T* context() const {
    return static_cast<T*>(context_.get());
  }
  // When the last frame arrived.
  Clock::time_point last_receive() const;
  // How long the peer has been silent while this side was listening (leases
  // of silent sessions): time this connection's I/O thread spent busy with
  // other work (a long handler of any of its connections) is not counted,
  // since what the peer sent meanwhile is not read yet.
  std::chrono::nanoseconds Silence() const;

  // With EngineOptions::sessions, the service says that an incoming
  // connection has opened its session: it leaves the unestablished pool of
  // its listener, the time limit on setting up stops, and frames up to the
  // protocol's limit are accepted. Called from a request handler (which
  // runs on the connection's I/O thread); idempotent.
  void Established();
  bool established() const { return established_.load(std::memory_order_acquire); }

 private:
  friend class Engine;
  friend class IoThread;
  struct PendingCall {
    CallDone done;
    TimerQueue::TimerId timer = 0;
  };

  Connection(Engine* engine, IoThread* io, std::unique_ptr<Stream> stream, bool outgoing);
  // Under mu_: writes what the outbox holds; arms or disarms EPOLLOUT.
  Status FlushLocked();
  void Enqueue(FrameKind kind, uint8_t method, uint64_t call_id,
               std::string_view payload);
  void UpdateInterest(bool want_write);

  Engine* engine_;
  IoThread* io_;
  const uint64_t id_;
  const bool outgoing_;
  bool unix_ = false;  // accepted on the Unix socket (set before Register)
  std::atomic<bool> established_{false};
  PeerInfo peer_;
  std::shared_ptr<void> context_;

  std::mutex mu_;  // stream_, outbox_, pending_, state below
  std::unique_ptr<Stream> stream_;
  std::string outbox_;
  size_t outbox_sent_ = 0;
  bool write_armed_ = false;
  bool handshaking_ = true;
  std::unordered_map<uint64_t, PendingCall> pending_;
  uint64_t next_call_id_ = 1;
  TimerQueue::TimerId handshake_timer_ = 0;

  std::atomic<bool> closed_{false};
  std::atomic<bool> close_reported_{false};
  std::atomic<int64_t> last_receive_ns_{0};
  FrameDecoder decoder_;  // the I/O thread only
};
using ConnectionPtr = std::shared_ptr<Connection>;

struct EngineOptions {
  int io_threads = 2;
  std::string cluster;  // peers' certificates must name it
  // Established connections (and, with `sessions`, every connection).
  uint32_t max_connections = 1024;
  // Incoming connections not established yet, per listener kind (TCP, the
  // Unix socket): when a new one comes and the pool is full, the oldest is
  // closed, so connections that never speak cannot lock anyone out.
  uint32_t max_unestablished = 128;
  // A TLS handshake (and, with `sessions`, the session) must complete
  // within this.
  int handshake_timeout_ms = 1000;
  // Incoming connections are established only when the service calls
  // Connection::Established (its session opened); until then each frame's
  // payload is limited to `setup_payload` bytes. Without it a connection is
  // established once its handshake is done.
  bool sessions = false;
  size_t setup_payload = 64u << 10;
  // A peer that stops reading is disconnected once this much output waits.
  size_t max_outbox_bytes = 256u << 20;
  // While calls this engine made are awaiting replies, an idle I/O thread
  // polls for this long before it sleeps (0: never): a reply then finds it
  // awake instead of paying a wake-up (docs/protocol.md).
  int spin_us = 0;
};

struct EngineHandlers {
  // After the handshake, with peer() known. An error closes the connection.
  std::function<Status(const ConnectionPtr&)> on_open;
  // A request. The payload view is valid during the call only.
  std::function<void(const ConnectionPtr&, const FrameHeader&, std::string_view)>
      on_request;
  // Once per opened connection, when it closes for any reason.
  std::function<void(const ConnectionPtr&, const Status& why)> on_close;
};

class Engine {
 public:
  Engine(EngineOptions options, EngineHandlers handlers);
  ~Engine();  // Stop()

  // Listening sockets, before Start. TLS on TCP; the Unix socket is created
  // with mode 0600 (an existing socket file at the path is replaced).
  Status ListenTcp(const std::string& host_port, const TlsContext* tls);
  Status ListenUnix(const std::string& path);
  Status Start();
  // Closes every connection and stops the threads.
  void Stop();

  // Opens a TLS link to a peer (blocking up to `timeout_ms`: connect and
  // handshake), checks its certificate names `expected`, and hands it to
  // the I/O threads. The engine's on_open does not run for outgoing links.
  Result<ConnectionPtr> Connect(const std::string& host_port, const TlsContext& tls,
                                const PeerIdentity& expected, int timeout_ms);

  TimerQueue& timers() { return timers_; }
  size_t connection_count() const;
  // Every open connection (a snapshot; `fn` runs without the engine's lock).
  void ForEachConnection(const std::function<void(const ConnectionPtr&)>& fn) const;
  const EngineOptions& options() const { return options_; }

 private:
  friend class Connection;
  friend class IoThread;
  void Accept(int listen_fd, const TlsContext* tls);
  void Register(const ConnectionPtr& c);
  void Forget(const ConnectionPtr& c, const Status& why);
  void OnOpened(const ConnectionPtr& c);
  void OnFrame(const ConnectionPtr& c, const FrameHeader& h, std::string_view payload);

  EngineOptions options_;
  EngineHandlers handlers_;
  TimerQueue timers_;
  std::vector<std::unique_ptr<IoThread>> io_;
  std::atomic<size_t> next_io_{0};
  std::atomic<uint64_t> next_conn_id_{1};
  struct Listener {
    int fd;
    const TlsContext* tls;
    std::string unix_path;
  };
  std::vector<Listener> listeners_;
  std::vector<std::shared_ptr<void>> watches_;  // what listeners' epoll entries point to
  // Closes the oldest unestablished incoming connection of that kind when
  // its pool is full.
  void MakeRoomForUnestablished(bool unix_socket);
  void CountEstablished(Connection* c);

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, ConnectionPtr> connections_;
  uint32_t unestablished_[2] = {0, 0};  // incoming, by kind: [0] TCP, [1] Unix
  uint32_t established_ = 0;
  bool started_ = false, stopped_ = false;
};

}  // namespace quiver::control::rpc
