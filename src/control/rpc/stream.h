// Streams: the bytes of one control connection, over a non-blocking socket,
// plain (the node's Unix socket) or inside TLS 1.3 (TCP between nodes).
//
// A Stream never blocks: Read and Write move what they can and report 0
// when the socket would block; Handshake advances a TLS handshake. The
// caller decides whether to poll (blocking clients) or wait for epoll
// (the daemon's event loop). A Stream owns its socket. Not thread-safe: the
// caller serialises every call on one stream (one mutex per connection).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "control/tls/credentials.h"
#include "quiver/util/result.h"

namespace quiver::control {
class TlsContext;
}

namespace quiver::control::rpc {

// What the other end of a connection is.
struct PeerInfo {
  bool unix_socket = false;  // the node's local socket (identity from the kernel)
  PeerIdentity identity;     // TLS: from its certificate; Unix: this node's client
  pid_t pid = 0;             // Unix: the peer process, as the kernel reports it
  uid_t uid = 0;             // Unix: the peer's user
  std::string address;       // for messages: "unix" or "127.0.0.1:4321"
};

class Stream {
 public:
  virtual ~Stream() = default;
  int fd() const { return fd_; }

  // Advances the handshake: OK(true) once done, OK(false) while it needs
  // the socket to become readable (wants_write() false) or writable.
  virtual Result<bool> Handshake() = 0;
  // Reads up to `cap` bytes: the count, 0 if nothing is available now, an
  // error when the peer closed the connection or it failed.
  virtual Result<size_t> Read(uint8_t* buf, size_t cap) = 0;
  // Writes up to `len` bytes: the count (possibly 0 if the socket is full).
  virtual Result<size_t> Write(const uint8_t* buf, size_t len) = 0;
  // Bytes already decrypted and waiting (poll() would not see them).
  virtual bool HasPendingInput() const { return false; }
  // The last Read/Write/Handshake needs the socket writable to go on.
  bool wants_write() const { return wants_write_; }
  // Who the peer is; valid once Handshake() returned true.
  virtual Result<PeerInfo> Peer(const std::string& cluster) = 0;

  // A plain stream over a connected socket (takes ownership of fd).
  static std::unique_ptr<Stream> Plain(int fd);
  // A TLS stream over a connected socket (takes ownership of fd); `server`
  // selects the side. `context` must outlive the stream.
  static Result<std::unique_ptr<Stream>> Tls(int fd, const TlsContext& context,
                                             bool server);

 protected:
  explicit Stream(int fd) : fd_(fd) {}
  int fd_;
  bool wants_write_ = false;
};

// Sets O_NONBLOCK (and FD_CLOEXEC) on fd.
Status SetNonBlocking(int fd);

// Blocking helpers for clients: connect with a timeout (the socket is left
// non-blocking), then run a stream's handshake to completion.
Result<int> ConnectTcp(const std::string& host_port, int timeout_ms);
Result<int> ConnectUnix(const std::string& path, int timeout_ms);
Status HandshakeBlocking(Stream* stream, int timeout_ms);

// Splits "host:port" / "[v6]:port"; the port must be 1..65535.
Status SplitHostPort(const std::string& host_port, std::string* host, int* port);

}  // namespace quiver::control::rpc
