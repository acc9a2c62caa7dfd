#include "control/rpc/stream.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "control/tls/tls_context.h"

namespace quiver::control::rpc {

namespace {

using Clock = std::chrono::steady_clock;

std::string AddressOf(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
  } else {
    return "unix";
  }
  return std::string(host) + ":" + std::to_string(port);
}

int MsLeft(Clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

// Waits until fd is readable (or writable); false on timeout.
bool WaitFd(int fd, bool write, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    int rc = poll(&p, 1, MsLeft(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return true;  // let the next operation report it
  }
}

class PlainStream final : public Stream {
 public:
  explicit PlainStream(int fd) : Stream(fd) {}
  ~PlainStream() override { close(fd_); }

  Result<bool> Handshake() override { return true; }

  Result<size_t> Read(uint8_t* buf, size_t cap) override {
    for (;;) {
      ssize_t n = ::recv(fd_, buf, cap, 0);
      if (n > 0) return static_cast<size_t>(n);
      if (n == 0) return Status::Unavailable("connection closed by the peer");
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return size_t{0};
      if (errno == ECONNRESET) return Status::Unavailable("connection reset by the peer");
      return Status::FromErrno(errno, "reading from the connection");
    }
  }

  Result<size_t> Write(const uint8_t* buf, size_t len) override {
    for (;;) {
      ssize_t n = ::send(fd_, buf, len, MSG_NOSIGNAL);
      if (n >= 0) {
        wants_write_ = static_cast<size_t>(n) < len;
        return static_cast<size_t>(n);
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        wants_write_ = true;
        return size_t{0};
      }
      if (errno == EPIPE || errno == ECONNRESET) {
        return Status::Unavailable("connection closed by the peer");
      }
      return Status::FromErrno(errno, "writing to the connection");
    }
  }

  Result<PeerInfo> Peer(const std::string&) override {
    PeerInfo info;
    info.unix_socket = true;
    info.address = "unix";
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd_, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      return Status::FromErrno(errno, "reading the peer's credentials (SO_PEERCRED)");
    }
    info.pid = cred.pid;
    info.uid = cred.uid;
    return info;
  }
};

class TlsStream final : public Stream {
 public:
  TlsStream(int fd, SSL* ssl) : Stream(fd), ssl_(ssl) {}
  ~TlsStream() override {
    SSL_free(ssl_);
    close(fd_);
  }

  Result<bool> Handshake() override {
    ERR_clear_error();
    const int rc = SSL_do_handshake(ssl_);
    if (rc == 1) {
      wants_write_ = false;
      return true;
    }
    QUIVER_ASSIGN_OR_RAISE(size_t moved, Progress(rc, "TLS handshake"));
    (void)moved;
    return false;
  }

  Result<size_t> Read(uint8_t* buf, size_t cap) override {
    ERR_clear_error();
    size_t n = 0;
    const int rc = SSL_read_ex(ssl_, buf, cap, &n);
    if (rc == 1) {
      wants_write_ = false;
      return n;
    }
    return Progress(rc, "reading (TLS)");
  }

  Result<size_t> Write(const uint8_t* buf, size_t len) override {
    ERR_clear_error();
    size_t n = 0;
    const int rc = SSL_write_ex(ssl_, buf, len, &n);
    if (rc == 1) {
      wants_write_ = n < len;
      return n;
    }
    return Progress(rc, "writing (TLS)");
  }

  // Decrypted bytes not read yet, or received bytes not decrypted yet:
  // either way the socket may be empty while a read would return data.
  bool HasPendingInput() const override { return SSL_has_pending(ssl_) == 1; }

  Result<PeerInfo> Peer(const std::string& cluster) override {
    PeerInfo info;
    info.address = AddressOf(fd_);
    QUIVER_ASSIGN_OR_RAISE(info.identity, PeerIdentityOf(ssl_, cluster));
    return info;
  }

 private:
  // After a failed SSL call: 0 (try again when the socket is ready) or the
  // error. The error code is read once: SSL_get_error consumes nothing, but
  // the error queue text is drained into the message.
  Result<size_t> Progress(int rc, const char* what) {
    const int err = SSL_get_error(ssl_, rc);
    switch (err) {
      case SSL_ERROR_WANT_READ:
        wants_write_ = false;
        return size_t{0};
      case SSL_ERROR_WANT_WRITE:
        wants_write_ = true;
        return size_t{0};
      case SSL_ERROR_ZERO_RETURN:
        return Status::Unavailable("connection closed by the peer");
      case SSL_ERROR_SYSCALL:
        if (errno == 0 || errno == EPIPE || errno == ECONNRESET) {
          ERR_clear_error();
          return Status::Unavailable("connection closed by the peer");
        }
        return Status::FromErrno(errno, what);
      default:
        // A peer that went away without closing TLS (it died, or its host
        // did) is gone, not an impostor.
        if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
          ERR_clear_error();
          return Status::Unavailable("connection closed by the peer (no TLS close)");
        }
        return Status::Unauthenticated(TlsErrorText(what));
    }
  }

  SSL* ssl_;
};

}  // namespace

std::unique_ptr<Stream> Stream::Plain(int fd) {
  return std::make_unique<PlainStream>(fd);
}

Result<std::unique_ptr<Stream>> Stream::Tls(int fd, const TlsContext& context,
                                            bool server) {
  SSL* ssl = SSL_new(context.get());
  if (ssl == nullptr) {
    close(fd);
    return Status::IOError(TlsErrorText("creating a TLS connection"));
  }
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // One read() takes whatever has arrived, not a record's 5-byte header and
  // then its body: half the system calls per message (HasPendingInput
  // reports what was read ahead).
  SSL_set_read_ahead(ssl, 1);
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    close(fd);
    return Status::IOError(TlsErrorText("attaching TLS to the socket"));
  }
  if (server) {
    SSL_set_accept_state(ssl);
  } else {
    SSL_set_connect_state(ssl);
  }
  return std::unique_ptr<Stream>(new TlsStream(fd, ssl));
}

Status SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return Status::FromErrno(errno, "setting O_NONBLOCK");
  }
  if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return Status::FromErrno(errno, "FD_CLOEXEC");
  return Status::OK();
}

Status SplitHostPort(const std::string& host_port, std::string* host, int* port) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == host_port.size()) {
    return Status::Invalid("'", host_port, "' is not host:port");
  }
  std::string h = host_port.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  const std::string p = host_port.substr(colon + 1);
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(p.c_str(), &end, 10);
  if (errno != 0 || *end != 0 || v < 1 || v > 65535) {
    return Status::Invalid("'", host_port, "': port '", p, "' is not in 1..65535");
  }
  *host = h;
  *port = static_cast<int>(v);
  return Status::OK();
}

Result<int> ConnectTcp(const std::string& host_port, int timeout_ms) {
  std::string host;
  int port = 0;
  QUIVER_RETURN_NOT_OK(SplitHostPort(host_port, &host, &port));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (gai != 0) {
    return Status::Unavailable("resolving '", host, "': ", gai_strerror(gai));
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  Status last = Status::Unavailable("no address for '", host_port, "'");
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = Status::FromErrno(errno, "socket");
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      if (!WaitFd(fd, true, deadline)) {
        close(fd);
        last = Status::Unavailable("connecting to ", host_port, ": timed out after ",
                                   timeout_ms, " ms");
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc == 0) {
      freeaddrinfo(res);
      return fd;
    }
    last = Status::Unavailable("connecting to ", host_port, ": ", std::strerror(errno));
    close(fd);
  }
  freeaddrinfo(res);
  return last;
}

Result<int> ConnectUnix(const std::string& path, int timeout_ms) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status::Invalid("socket path '", path, "' is too long");
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "socket");
  // A Unix connect either succeeds, is refused or finds no socket at once;
  // the timeout bounds a full accept queue.
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    return Status::Unavailable("connecting to unix:", path, ": ", std::strerror(err));
  }
  Status st = SetNonBlocking(fd);
  if (!st.ok()) {
    close(fd);
    return st;
  }
  return fd;
}

Status HandshakeBlocking(Stream* stream, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    QUIVER_ASSIGN_OR_RAISE(bool done, stream->Handshake());
    if (done) return Status::OK();
    if (!WaitFd(stream->fd(), stream->wants_write(), deadline)) {
      return Status::DeadlineExceeded("TLS handshake did not finish within ", timeout_ms,
                                      " ms");
    }
  }
}

}  // namespace quiver::control::rpc
