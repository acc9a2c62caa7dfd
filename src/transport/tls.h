// The transport's front door: TLS 1.3 over a plain TCP connection,
// authenticated by an external pre-shared key (docs/transport.md#connections).
//
// Every transport connection starts here, and nothing a peer sends reaches
// UCX before this handshake has proved that it holds the key: UCX 1.13's own
// listeners and its TCP transport parse unauthenticated bytes with
// assertions, and its TCP transport writes where a peer tells it to. The key
// is either derived from `quiver serve`'s token (TokenPsk: the token never
// crosses the network) or a ticket a daemon minted for one client session
// over the control plane's mutual TLS (control/daemon/transfer.cc). The only
// suite is TLS_AES_128_GCM_SHA256 with an ephemeral (EC)DHE exchange (PSK
// with DHE: forward secrecy); no certificates, no session tickets, no
// resumption.
//
// After the handshake the connection carries frames: a u32 length, then a
// control frame of wire.h (kind, a u64 word, the body). The length counts
// the frame, not itself.
//
// Threads: a TlsStream is used by one thread at a time (the server's
// progress thread, or the client's caller). A PskContext is immutable after
// Make and may be shared; its lookup function runs on the thread driving a
// handshake.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "quiver/columnar/buffer.h"
#include "quiver/util/result.h"

namespace quiver::transport {

// A pre-shared key and the identity that names it in the ClientHello.
struct Psk {
  std::string identity;
  std::string key;  // 32 bytes
};

// The key of a token: HKDF-SHA256 of the token under a fixed label, named
// by a fixed identity. Only a peer with the same token derives it.
Psk TokenPsk(std::string_view token);
// A fresh random key (32 bytes) with a random identity (16 bytes).
Psk RandomPsk();

// Frames on the stream: u32 length, u8 kind, u64 word, body.
constexpr size_t kFrameHeader = 4 + 1 + 8;

// An SSL_CTX for one side, set up for PSK-only TLS 1.3. For a server,
// `find` resolves an identity to its key and an owner tag (nullopt: unknown
// identity, and the handshake fails); it runs inside TlsStream::Handshake,
// on that caller's thread. Made by Server()/Client() (an error leaves
// nothing behind), owned by whoever holds the shared_ptr, every stream made
// from it included; immutable, so any thread may use it.
class PskContext {
 public:
  struct Found {
    std::string key;
    uint64_t owner = 0;
  };
  using Finder = std::function<std::optional<Found>(std::string_view identity)>;
  static Result<std::shared_ptr<PskContext>> Server(Finder find);
  static Result<std::shared_ptr<PskContext>> Client();
  ~PskContext();
  PskContext(const PskContext&) = delete;
  PskContext& operator=(const PskContext&) = delete;
  SSL_CTX* get() const { return ctx_; }
  const Finder& finder() const { return find_; }

 private:
  PskContext() = default;
  SSL_CTX* ctx_ = nullptr;
  Finder find_;
};

// One TLS connection over a non-blocking socket it owns (closed with it).
// Handshake() until done; then Queue() frames and Flush() them, and Read()
// what arrived. Any failure is final: the caller drops the stream.
class TlsStream {
 public:
  // Takes `fd` (closed on failure too). `psk` for a client only.
  static Result<std::unique_ptr<TlsStream>> Make(std::shared_ptr<PskContext> context,
                                                 int fd, bool server,
                                                 std::optional<Psk> psk = {});
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  int fd() const { return fd_; }
  // One step of the handshake: true once complete; false while it waits
  // for the socket (wants_write() says which way). Unauthenticated for a
  // handshake that failed (a wrong key among other reasons), naming why.
  Result<bool> Handshake();
  // Server side, after the handshake: the owner the key was found with,
  // and the identity that named it.
  uint64_t owner() const { return owner_; }
  const std::string& identity() const { return identity_; }
  // Bytes the peer sent so far (a handshake's progress).
  uint64_t bytes_read() const { return bytes_read_; }

  // Appends a frame to the output: the header and `body`, the body written
  // from where it is when `keep` is given (which holds it until written),
  // else copied.
  void Queue(uint8_t kind, uint64_t word, std::string_view body,
             std::shared_ptr<const void> keep = nullptr);
  // Appends bytes as they are, no header (tests: frames no peer sends).
  void QueueRaw(std::string bytes);
  // Writes what the socket takes now; returns the bytes written. IOError
  // once the connection broke.
  Result<uint64_t> Flush();
  bool wants_write() const { return want_write_ || !out_.empty(); }
  size_t queued() const { return out_.size(); }

  // Where a frame's body goes: `place` may give a buffer of exactly
  // `length` bytes for it (null: the stream keeps it in a string of its
  // own). `frame` gets each complete frame, its body as bytes and, if
  // placed, the buffer.
  struct Sink {
    uint64_t max_frame = 0;
    std::function<Result<std::shared_ptr<Buffer>>(uint8_t kind, uint64_t word,
                                                  uint64_t length)>
        place;
    std::function<Status(uint8_t kind, uint64_t word, std::string_view body,
                         std::shared_ptr<Buffer> placed)>
        frame;
  };
  // Reads every complete frame available now (at most `budget` of them).
  // Returns how many; IOError when the peer closed or broke the stream,
  // Invalid for a frame shorter than its header or over max_frame, or what
  // `frame` returned. Any failure but a Cancelled from `frame` (which stops
  // between frames) ends reading for good: every later Read returns it
  // again (writing goes on, for the answer that says why).
  Result<int> Read(const Sink& sink, int budget = 64);
  // Read() may find data without waiting for the socket: it stopped at its
  // budget, or has not run since the handshake (whose last read may have
  // taken the first frames along).
  bool has_pending() const;

 private:
  TlsStream() = default;
  Status SslError(int rc, std::string_view what);
  Result<int> ReadFrames(const Sink& sink, int budget);

  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::shared_ptr<PskContext> context_;
  std::optional<Psk> psk_;
  uint64_t owner_ = 0;
  std::string identity_;
  uint64_t bytes_read_ = 0;
  bool want_write_ = false;
  bool more_ = true;                   // see has_pending()
  Status read_broken_, write_broken_;  // once a read or a write failed
  friend struct TlsCallbacks;

  struct Out {
    std::string head;
    std::string_view body;
    std::string owned;
    std::shared_ptr<const void> keep;
    size_t at = 0;  // bytes of head + body written
  };
  std::deque<Out> out_;

  // The frame being read: its header, then its body.
  uint8_t header_[kFrameHeader] = {};
  size_t header_at_ = 0;
  uint64_t body_length_ = 0, body_at_ = 0;
  std::string body_;
  std::shared_ptr<Buffer> placed_;
};

// A listening TCP socket (non-blocking) on host:port; port 0 picks one.
Result<int> ListenTcp(const std::string& host_port, uint16_t* port);
// A connected non-blocking TCP socket to host:port, within `timeout_ms`.
Result<int> ConnectTcp(const std::string& host_port, int64_t timeout_ms);
// Options every transport socket gets: no Nagle, 4 MiB buffers, non-blocking.
void TuneSocket(int fd);

}  // namespace quiver::transport
