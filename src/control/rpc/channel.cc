#include "control/rpc/channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "control/tls/tls_context.h"

namespace quiver::control::rpc {

namespace {

// How long a send may wait for room in the socket before the connection
// is declared broken (the daemon reads without pause; only a dead or
// wedged peer makes this happen).
constexpr int kSendStallMs = 30000;
// A request's tail up to this size is copied into its frame.
constexpr size_t kInlineTailBytes = 64u << 10;

int MsUntil(Channel::Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - Channel::Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

}  // namespace

Channel::Channel(std::unique_ptr<Stream> stream, PeerInfo peer)
    : peer_(std::move(peer)), stream_(std::move(stream)), last_send_(Clock::now()) {}

Channel::~Channel() { Close(); }

Status Channel::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return broken_;
}

Channel::Clock::time_point Channel::last_send() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_send_;
}

void Channel::Fail(const Status& st) {
  if (!broken_.ok()) return;
  broken_ = st;
  // Wakes a reader polling the socket; the descriptor itself is closed by
  // the destructor, when no thread can be using it.
  shutdown(stream_->fd(), SHUT_RDWR);
  cv_.notify_all();
}

Status Channel::Probe() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!broken_.ok() || reading_) return broken_;
  pollfd p{stream_->fd(), POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0 && !stream_->HasPendingInput()) return broken_;
  // Readable with no call waiting: an end of stream, an alert, or replies
  // to forgotten calls. Reading tells which.
  Status st = DrainLocked();
  if (!st.ok()) Fail(st);
  return broken_;
}

void Channel::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  Fail(Status::Cancelled("the connection to ", peer_.address, " was closed"));
}

Status Channel::WriteAllLocked(std::string_view bytes) {
  size_t sent = 0;
  const auto stall = Clock::now() + std::chrono::milliseconds(kSendStallMs);
  while (sent < bytes.size()) {
    auto n = stream_->Write(reinterpret_cast<const uint8_t*>(bytes.data()) + sent,
                            bytes.size() - sent);
    if (!n.ok()) {
      Fail(n.status());
      return n.status();
    }
    sent += *n;
    if (*n > 0) continue;
    pollfd p{stream_->fd(), static_cast<short>(stream_->wants_write() ? POLLOUT : POLLIN),
             0};
    if (poll(&p, 1, MsUntil(stall)) == 0) {
      Status st = Status::Unavailable("the daemon at ", peer_.address,
                                      " accepted no data for ", kSendStallMs, " ms");
      Fail(st);
      return st;
    }
  }
  return Status::OK();
}

Result<uint64_t> Channel::Send(uint8_t method, std::string_view payload,
                               std::string_view tail) {
  const size_t size = payload.size() + tail.size();
  if (size > kMaxFramePayload) {
    return Status::CapacityError("a request of ", size,
                                 " bytes exceeds the protocol's frame limit of ",
                                 kMaxFramePayload);
  }
  // A small frame goes out in one write (one syscall, one TLS record); a
  // large tail is written from where it is, not copied.
  const bool tail_inline = tail.size() <= kInlineTailBytes;
  std::string frame;
  frame.reserve(kFrameHeaderBytes + payload.size() + (tail_inline ? tail.size() : 0));
  std::lock_guard<std::mutex> lock(mu_);
  QUIVER_RETURN_NOT_OK(broken_);
  const uint64_t id = next_id_++;
  AppendFrameHeader(FrameKind::kRequest, method, id, size, &frame);
  frame.append(payload);
  if (tail_inline) frame.append(tail);
  QUIVER_RETURN_NOT_OK(WriteAllLocked(frame));
  if (!tail_inline) QUIVER_RETURN_NOT_OK(WriteAllLocked(tail));
  slots_.emplace(id, Slot{});
  last_send_ = Clock::now();
  return id;
}

Status Channel::ReadSome(std::unique_lock<std::mutex>* lock, Clock::time_point deadline) {
  if (!stream_->HasPendingInput() && decoder_.buffered() < kFrameHeaderBytes) {
    const int fd = stream_->fd();
    lock->unlock();
    pollfd p{fd, POLLIN, 0};
    const int rc = poll(&p, 1, MsUntil(deadline));
    lock->lock();
    if (!broken_.ok()) return broken_;
    if (rc == 0) return Status::OK();  // the caller checks its deadline
  }
  return DrainLocked();
}

Status Channel::DrainLocked() {
  for (;;) {
    uint8_t* p = decoder_.WritePointer(kFrameReadChunk);
    const size_t room = decoder_.WriteRoom();
    QUIVER_ASSIGN_OR_RAISE(size_t n, stream_->Read(p, room));
    decoder_.Commit(n);
    // A short read drained the socket (poll says when more comes).
    if (n < room && !stream_->HasPendingInput()) break;
  }
  FrameHeader h;
  std::string_view payload;
  for (;;) {
    QUIVER_ASSIGN_OR_RAISE(bool more, decoder_.Next(&h, &payload));
    if (!more) break;
    if (h.kind == FrameKind::kRequest) {
      return Status::IOError("the daemon at ", peer_.address,
                             " sent a request; clients serve none");
    }
    auto it = slots_.find(h.call_id);
    if (it == slots_.end()) continue;  // forgotten or timed out
    it->second.done = true;
    if (h.kind == FrameKind::kReply) {
      it->second.payload.assign(payload.data(), payload.size());
    } else {
      it->second.error = DecodeError(payload);
    }
  }
  cv_.notify_all();
  return Status::OK();
}

Result<std::string> Channel::Wait(uint64_t id, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    auto it = slots_.find(id);
    if (it == slots_.end()) return Status::Invalid("no call ", id, " is waiting");
    if (it->second.done) {
      Slot slot = std::move(it->second);
      slots_.erase(it);
      if (!slot.error.ok()) return slot.error;
      return std::move(slot.payload);
    }
    if (!broken_.ok()) {
      slots_.erase(it);
      return broken_;
    }
    if (Clock::now() >= deadline) {
      slots_.erase(it);
      return Status::DeadlineExceeded("no reply from ", peer_.address, " within ",
                                      timeout_ms, " ms");
    }
    if (!reading_) {
      reading_ = true;
      Status st = ReadSome(&lock, deadline);
      reading_ = false;
      cv_.notify_all();
      if (!st.ok()) Fail(st);
    } else {
      cv_.wait_until(lock, deadline);
    }
  }
}

Result<std::string> Channel::Call(uint8_t method, std::string_view payload,
                                  int timeout_ms) {
  QUIVER_ASSIGN_OR_RAISE(uint64_t id, Send(method, payload));
  return Wait(id, timeout_ms);
}

void Channel::Forget(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  slots_.erase(id);
}

Result<std::unique_ptr<Channel>> DialTls(const std::string& host_port,
                                         const TlsContext& tls,
                                         const std::string& cluster,
                                         const PeerIdentity& expected, int timeout_ms) {
  QUIVER_ASSIGN_OR_RAISE(int fd, ConnectTcp(host_port, timeout_ms));
  QUIVER_ASSIGN_OR_RAISE(auto stream, Stream::Tls(fd, tls, /*server=*/false));
  QUIVER_RETURN_NOT_OK(HandshakeBlocking(stream.get(), timeout_ms)
                           .WithContext("TLS handshake with " + host_port));
  QUIVER_ASSIGN_OR_RAISE(PeerInfo peer, stream->Peer(cluster));
  if (!(peer.identity == expected)) {
    return Status::Unauthenticated(host_port, " presented the certificate of ",
                                   peer.identity.ToString(), ", not of ",
                                   expected.ToString());
  }
  return std::make_unique<Channel>(std::move(stream), std::move(peer));
}

Result<std::unique_ptr<Channel>> DialUnix(const std::string& path, int timeout_ms) {
  QUIVER_ASSIGN_OR_RAISE(int fd, ConnectUnix(path, timeout_ms));
  auto stream = Stream::Plain(fd);
  QUIVER_ASSIGN_OR_RAISE(PeerInfo peer, stream->Peer(""));
  const uid_t me = geteuid();
  if (peer.uid != me && peer.uid != 0) {
    return Status::Unauthenticated("the socket unix:", path, " is served by uid ",
                                   peer.uid, ", not by this user (uid ", me,
                                   "): refusing to talk to it");
  }
  peer.address = "unix:" + path;
  return std::make_unique<Channel>(std::move(stream), std::move(peer));
}

}  // namespace quiver::control::rpc
