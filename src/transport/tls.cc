#include "transport/tls.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "quiver/util/little_endian.h"
#include "transport/address.h"

namespace quiver::transport {

namespace {

constexpr std::string_view kTokenIdentity = "quiver-transport-token-v1";
// TLS_AES_128_GCM_SHA256, by its IANA number.
constexpr unsigned char kSuite[2] = {0x13, 0x01};

// OpenSSL's error queue as text (emptied).
std::string SslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

std::string RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) !=
      1) {
    std::abort();  // no randomness: no key may be made
  }
  return out;
}

// A TLS 1.3 session carrying `key` as its PSK, for the suite above.
SSL_SESSION* PskSession(SSL* ssl, const std::string& key) {
  const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, kSuite);
  SSL_SESSION* s = SSL_SESSION_new();
  if (s == nullptr || cipher == nullptr ||
      SSL_SESSION_set1_master_key(s, reinterpret_cast<const unsigned char*>(key.data()),
                                  key.size()) != 1 ||
      SSL_SESSION_set_cipher(s, cipher) != 1 ||
      SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION) != 1) {
    SSL_SESSION_free(s);
    return nullptr;
  }
  return s;
}

Result<SSL_CTX*> BaseContext(bool server) {
  SSL_CTX* ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (ctx == nullptr) return Status::IOError("TLS: ", SslErrors());
  const bool ok = SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) == 1 &&
                  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) == 1 &&
                  SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256") == 1 &&
                  SSL_CTX_set_num_tickets(ctx, 0) == 1;
  if (!ok) {
    SSL_CTX_free(ctx);
    return Status::IOError("TLS: setting up a context: ", SslErrors());
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_mode(ctx,
                   SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Whole socket reads at once (several records), not a record at a time.
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_default_read_buffer_len(ctx, 256 * 1024);
  return ctx;
}

}  // namespace

// OpenSSL calls these inside its calls, on the thread making them.
struct TlsCallbacks {
  // The socket BIO: never raises SIGPIPE (send with MSG_NOSIGNAL), and
  // counts what it read (a handshake's progress).
  static int BioWrite(BIO* bio, const char* data, size_t length, size_t* written) {
    auto* stream = static_cast<TlsStream*>(BIO_get_data(bio));
    BIO_clear_retry_flags(bio);
    const ssize_t n = send(stream->fd_, data, length, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        BIO_set_retry_write(bio);
      }
      return 0;
    }
    *written = static_cast<size_t>(n);
    return 1;
  }
  static int BioRead(BIO* bio, char* data, size_t length, size_t* read) {
    auto* stream = static_cast<TlsStream*>(BIO_get_data(bio));
    BIO_clear_retry_flags(bio);
    const ssize_t n = recv(stream->fd_, data, length, 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        BIO_set_retry_read(bio);
      }
      return 0;
    }
    if (n == 0) return 0;  // end of stream
    stream->bytes_read_ += static_cast<uint64_t>(n);
    *read = static_cast<size_t>(n);
    return 1;
  }
  static long BioCtrl(BIO*, int cmd, long, void*) {
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
  }
  static BIO_METHOD* SocketMethod() {
    static BIO_METHOD* method = [] {
      BIO_METHOD* m =
          BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "quiver transport");
      BIO_meth_set_write_ex(m, BioWrite);
      BIO_meth_set_read_ex(m, BioRead);
      BIO_meth_set_ctrl(m, BioCtrl);
      return m;
    }();
    return method;
  }

  static int Find(SSL* ssl, const unsigned char* identity, size_t length,
                  SSL_SESSION** session) {
    *session = nullptr;
    auto* stream = static_cast<TlsStream*>(SSL_get_app_data(ssl));
    if (stream == nullptr) return 0;
    auto found = stream->context_->finder()(
        std::string_view(reinterpret_cast<const char*>(identity), length));
    if (!found) return 1;  // unknown: no PSK, so no handshake
    *session = PskSession(ssl, found->key);
    if (*session == nullptr) return 0;
    stream->owner_ = found->owner;
    stream->identity_.assign(reinterpret_cast<const char*>(identity), length);
    return 1;
  }
  static int Use(SSL* ssl, const EVP_MD* md, const unsigned char** identity,
                 size_t* length, SSL_SESSION** session) {
    *session = nullptr;
    auto* stream = static_cast<TlsStream*>(SSL_get_app_data(ssl));
    if (stream == nullptr || !stream->psk_) return 0;
    if (md != nullptr && md != EVP_sha256()) return 1;
    *session = PskSession(ssl, stream->psk_->key);
    if (*session == nullptr) return 0;
    *identity = reinterpret_cast<const unsigned char*>(stream->psk_->identity.data());
    *length = stream->psk_->identity.size();
    return 1;
  }
};

Psk TokenPsk(std::string_view token) {
  static constexpr std::string_view kSalt = "quiver transport: the key of a token";
  Psk psk;
  psk.identity = std::string(kTokenIdentity);
  psk.key.assign(32, '\0');
  size_t length = psk.key.size();
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  const bool ok =
      ctx != nullptr && EVP_PKEY_derive_init(ctx) == 1 &&
      EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) == 1 &&
      EVP_PKEY_CTX_set1_hkdf_salt(ctx,
                                  reinterpret_cast<const unsigned char*>(kSalt.data()),
                                  static_cast<int>(kSalt.size())) == 1 &&
      EVP_PKEY_CTX_set1_hkdf_key(ctx,
                                 reinterpret_cast<const unsigned char*>(token.data()),
                                 static_cast<int>(token.size())) == 1 &&
      EVP_PKEY_derive(ctx, reinterpret_cast<unsigned char*>(psk.key.data()), &length) ==
          1;
  EVP_PKEY_CTX_free(ctx);
  if (!ok || length != psk.key.size()) std::abort();  // no key: nothing may connect
  return psk;
}

Psk RandomPsk() { return Psk{RandomBytes(16), RandomBytes(32)}; }

Result<std::shared_ptr<PskContext>> PskContext::Server(Finder find) {
  std::shared_ptr<PskContext> c(new PskContext());
  QUIVER_ASSIGN_OR_RAISE(c->ctx_, BaseContext(true));
  c->find_ = std::move(find);
  SSL_CTX_set_psk_find_session_callback(c->ctx_, &TlsCallbacks::Find);
  return c;
}

Result<std::shared_ptr<PskContext>> PskContext::Client() {
  std::shared_ptr<PskContext> c(new PskContext());
  QUIVER_ASSIGN_OR_RAISE(c->ctx_, BaseContext(false));
  SSL_CTX_set_psk_use_session_callback(c->ctx_, &TlsCallbacks::Use);
  return c;
}

PskContext::~PskContext() {
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

Result<std::unique_ptr<TlsStream>> TlsStream::Make(std::shared_ptr<PskContext> context,
                                                   int fd, bool server,
                                                   std::optional<Psk> psk) {
  std::unique_ptr<TlsStream> s(new TlsStream());
  s->fd_ = fd;  // closed by ~TlsStream from here on
  s->context_ = std::move(context);
  s->psk_ = std::move(psk);
  s->ssl_ = SSL_new(s->context_->get());
  BIO* bio = BIO_new(TlsCallbacks::SocketMethod());
  if (s->ssl_ == nullptr || bio == nullptr) {
    BIO_free(bio);
    return Status::IOError("TLS: ", SslErrors());
  }
  BIO_set_data(bio, s.get());
  BIO_set_init(bio, 1);
  SSL_set_bio(s->ssl_, bio, bio);
  SSL_set_app_data(s->ssl_, s.get());
  if (server) {
    SSL_set_accept_state(s->ssl_);
  } else {
    SSL_set_connect_state(s->ssl_);
  }
  return s;
}

TlsStream::~TlsStream() {
  if (ssl_ != nullptr) SSL_free(ssl_);  // frees the BIO
  if (fd_ >= 0) close(fd_);
}

Status TlsStream::SslError(int rc, std::string_view what) {
  const int e = SSL_get_error(ssl_, rc);
  const int saved = errno;
  if (e == SSL_ERROR_ZERO_RETURN) {
    ERR_clear_error();
    return Status::IOError("the peer closed the connection");
  }
  if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
    return Status::IOError(
        what, ": ", saved == 0 ? "the peer closed the connection" : std::strerror(saved));
  }
  return Status::IOError(what, ": ", SslErrors());
}

Result<bool> TlsStream::Handshake() {
  want_write_ = false;
  ERR_clear_error();  // the queue is the thread's: another stream's leftovers
  const int rc = SSL_do_handshake(ssl_);
  if (rc == 1) return true;
  const int e = SSL_get_error(ssl_, rc);
  if (e == SSL_ERROR_WANT_READ) return false;
  if (e == SSL_ERROR_WANT_WRITE) {
    want_write_ = true;
    return false;
  }
  Status st = SslError(rc, "TLS handshake");
  return Status::Unauthenticated(
      st.message(), " (the transport's key is the token or ticket both sides must hold)");
}

void TlsStream::Queue(uint8_t kind, uint64_t word, std::string_view body,
                      std::shared_ptr<const void> keep) {
  Out o;
  std::string& head = keep ? o.head : o.owned;
  util::AppendLE(&head, static_cast<uint32_t>(1 + 8 + body.size()));
  util::AppendLE(&head, kind);
  util::AppendLE(&head, word);
  if (keep) {
    o.body = body;
    o.keep = std::move(keep);
  } else {
    o.owned.append(body);
  }
  out_.push_back(std::move(o));
}

void TlsStream::QueueRaw(std::string bytes) {
  Out o;
  o.owned = std::move(bytes);
  out_.push_back(std::move(o));
}

Result<uint64_t> TlsStream::Flush() {
  want_write_ = false;
  uint64_t total = 0;
  if (!write_broken_.ok()) return write_broken_;
  while (!out_.empty()) {
    Out& o = out_.front();
    std::string_view piece;
    if (!o.keep) {
      piece = std::string_view(o.owned).substr(o.at);
    } else if (o.at < o.head.size()) {
      piece = std::string_view(o.head).substr(o.at);
    } else {
      piece = o.body.substr(o.at - o.head.size());
    }
    if (piece.empty()) {
      out_.pop_front();
      continue;
    }
    size_t written = 0;
    ERR_clear_error();
    const int rc = SSL_write_ex(ssl_, piece.data(), piece.size(), &written);
    if (rc <= 0) {
      const int e = SSL_get_error(ssl_, rc);
      if (e == SSL_ERROR_WANT_WRITE) {
        want_write_ = true;
        return total;
      }
      if (e == SSL_ERROR_WANT_READ) return total;
      write_broken_ = SslError(rc, "writing to the connection");
      return write_broken_;
    }
    o.at += written;
    total += written;
  }
  return total;
}

bool TlsStream::has_pending() const { return more_ || SSL_pending(ssl_) > 0; }

Result<int> TlsStream::Read(const Sink& sink, int budget) {
  if (!read_broken_.ok()) return read_broken_;  // mid-frame: nothing more to read
  auto frames = ReadFrames(sink, budget);
  if (!frames.ok() && frames.status().code() != StatusCode::kCancelled) {
    read_broken_ = frames.status();
    more_ = false;
  }
  return frames;
}

Result<int> TlsStream::ReadFrames(const Sink& sink, int budget) {
  int frames = 0;
  // Until OpenSSL asks for the socket, what it has buffered (read ahead)
  // may hold whole frames that no poll would report.
  more_ = true;
  while (frames < budget) {
    uint8_t* into;
    size_t want;
    if (header_at_ < kFrameHeader) {
      into = header_ + header_at_;
      want = kFrameHeader - header_at_;
    } else {
      into =
          (placed_ ? placed_->mutable_data() : reinterpret_cast<uint8_t*>(body_.data())) +
          body_at_;
      want = body_length_ - body_at_;
    }
    if (want > 0) {
      size_t got = 0;
      ERR_clear_error();
      const int rc = SSL_read_ex(ssl_, into, want, &got);
      if (rc <= 0) {
        const int e = SSL_get_error(ssl_, rc);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
          more_ = false;
          want_write_ = want_write_ || e == SSL_ERROR_WANT_WRITE;
          return frames;
        }
        more_ = false;
        return SslError(rc, "reading from the connection");
      }
      if (header_at_ < kFrameHeader) {
        header_at_ += got;
        if (header_at_ < kFrameHeader) continue;
        const std::string_view h(reinterpret_cast<const char*>(header_), kFrameHeader);
        const uint32_t length = util::LoadLE<uint32_t>(h, 0);
        if (length < 9) {
          return Status::Invalid("a frame of ", length,
                                 " bytes: shorter than its header");
        }
        body_length_ = length - 9;
        body_at_ = 0;
        if (body_length_ > sink.max_frame) {
          return Status::Invalid("a frame of ", body_length_,
                                 " bytes exceeds the limit of ", sink.max_frame);
        }
        placed_ = nullptr;
        if (sink.place) {
          QUIVER_ASSIGN_OR_RAISE(
              placed_,
              sink.place(header_[4], util::LoadLE<uint64_t>(h, 5), body_length_));
        }
        if (!placed_) body_.resize(body_length_);
        if (body_length_ > 0) continue;
      } else {
        body_at_ += got;
        if (body_at_ < body_length_) continue;
      }
    }
    // A whole frame.
    const std::string_view h(reinterpret_cast<const char*>(header_), kFrameHeader);
    const uint8_t kind = header_[4];
    const uint64_t word = util::LoadLE<uint64_t>(h, 5);
    std::shared_ptr<Buffer> placed = std::move(placed_);
    const std::string_view body =
        placed ? placed->view() : std::string_view(body_.data(), body_length_);
    header_at_ = 0;
    ++frames;
    Status st = sink.frame(kind, word, body, std::move(placed));
    if (body_.capacity() > (size_t{1} << 20)) {
      std::string().swap(body_);
    } else {
      body_.clear();
    }
    QUIVER_RETURN_NOT_OK(st);
  }
  return frames;
}

void TuneSocket(int fd) {
  const int one = 1, buffer = 4 << 20;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) (void)fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

Result<int> ListenTcp(const std::string& host_port, uint16_t* port) {
  QUIVER_ASSIGN_OR_RAISE(auto address, ResolveAddress(host_port, /*passive=*/true));
  const int fd =
      socket(address.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IOError("socket: ", std::strerror(errno));
  const int one = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, address.get(), address.length) != 0 || listen(fd, 128) != 0) {
    const int e = errno;
    close(fd);
    return Status::IOError("listening on ", host_port, ": ", std::strerror(e));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    const int e = errno;
    close(fd);
    return Status::IOError("getsockname: ", std::strerror(e));
  }
  *port = PortOf(bound);
  return fd;
}

Result<int> ConnectTcp(const std::string& host_port, int64_t timeout_ms) {
  QUIVER_ASSIGN_OR_RAISE(auto address, ResolveAddress(host_port, /*passive=*/false));
  const int fd =
      socket(address.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IOError("socket: ", std::strerror(errno));
  TuneSocket(fd);
  if (connect(fd, address.get(), address.length) != 0 && errno != EINPROGRESS) {
    const int e = errno;
    close(fd);
    return Status::IOError("connecting to ", host_port, ": ", std::strerror(e));
  }
  pollfd p{fd, POLLOUT, 0};
  const int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(timeout_ms, 1 << 30)));
  int error = 0;
  socklen_t length = sizeof(error);
  if (n <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error) {
    close(fd);
    if (n <= 0) {
      return Status::IOError("connecting to ", host_port, ": no answer within ",
                             timeout_ms, " ms");
    }
    return Status::IOError("connecting to ", host_port, ": ", std::strerror(error));
  }
  return fd;
}

}  // namespace quiver::transport
