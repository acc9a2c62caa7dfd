// The server's progress thread: the TCP listener, TLS handshakes, the
// connections' streams, UCX progress, and the end of connections and scans.
// Frames and sends are in server_frames.cc; producers (server_scan.cc) hand
// it messages through each scan's outbox.
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "transport/server_internal.h"

namespace quiver::transport {

using Clock = std::chrono::steady_clock;

namespace {
constexpr size_t kMaxQueuedFrames = 1 << 16;
}  // namespace

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;
uint16_t Server::port() const { return impl_->port(); }
ServerStats Server::stats() const { return impl_->stats(); }
Ticket Server::AddTicket(uint64_t owner, int64_t ttl_ms) {
  return impl_->AddTicket(owner, ttl_ms);
}
void Server::DropOwner(uint64_t owner) { impl_->DropOwner(owner); }

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options, QueryRunner runner) {
  if (!runner) return Status::Invalid("transport server without a query runner");
  return Start(std::move(options), [runner = std::move(runner)](
                                       const std::string& sql, const std::string& dataset,
                                       uint64_t) { return runner(sql, dataset); });
}

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options,
                                              OwnedQueryRunner runner) {
  if (!runner) return Status::Invalid("transport server without a query runner");
  auto impl = std::make_unique<Impl>(std::move(options), std::move(runner));
  QUIVER_RETURN_NOT_OK(impl->Start());
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Status Server::Impl::Start() {
  if (options_.auth == ServerOptions::Auth::kToken) token_key_ = TokenPsk(options_.token);
  QUIVER_ASSIGN_OR_RAISE(tls_, PskContext::Server([this](std::string_view identity) {
                           return FindKey(identity);
                         }));
  // UCX for clients of this host only; none at all if no such transport.
  QUIVER_ASSIGN_OR_RAISE(context_,
                         UcxContext::ForPeers(options_.ucx_transports, /*rma=*/false));
  if (context_ != nullptr) {
    QUIVER_ASSIGN_OR_RAISE(worker_, UcxWorker::Make(context_));
  }
  QUIVER_ASSIGN_OR_RAISE(
      pool_, BodyPool::Make(context_, std::max(options_.pool_size, 2 * kProbeBytes)));
  // The probe area: the first MiB, filled once, read by clients measuring
  // one-sided reads against tagged sends when they connect.
  QUIVER_ASSIGN_OR_RAISE(uint8_t * probe,
                         pool_->Allocate(kProbeBytes, [] { return true; }));
  for (uint64_t i = 0; i < kProbeBytes; ++i) probe[i] = static_cast<uint8_t>(i * 131 + 7);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return Status::IOError("eventfd: ", std::strerror(errno));
  // Listening last: a server that failed to start leaves no port open.
  QUIVER_ASSIGN_OR_RAISE(listen_fd_, ListenTcp(options_.listen, &port_));
  thread_ = std::thread([this] { Loop(); });
  return Status::OK();
}

Server::Impl::~Impl() {
  stop_ = true;
  if (wake_fd_ >= 0) Wake();
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void Server::Impl::Wake() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

ServerStats Server::Impl::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  ServerStats s = stats_;
  s.pool_bytes_in_use = pool_ ? pool_->bytes_in_use() - kProbeBytes : 0;
  return s;
}

void Server::Impl::UpdateStats() {
  ServerStats s;
  s.connections = connections_.size();
  s.handshakes = handshakes_.size();
  s.scans = scans_.size() + ending_.size();
  s.sends = sends_.size();
  for (const auto& [id, c] : connections_) s.sends += c->tls->queued();
  for (const auto& [id, scan] : scans_) {
    std::lock_guard<std::mutex> lock(scan->mu);
    s.bodies_in_flight += scan->in_flight;
  }
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_ = s;
}

Ticket Server::Impl::AddTicket(uint64_t owner, int64_t ttl_ms) {
  const Psk key = RandomPsk();
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(tickets_mu_);
  for (auto it = tickets_.begin(); it != tickets_.end();) {
    it = it->second.expires < now ? tickets_.erase(it) : std::next(it);
  }
  tickets_[key.identity] = {key.key, owner, now + std::chrono::milliseconds(ttl_ms)};
  return Ticket{key.identity, key.key};
}

void Server::Impl::DropOwner(uint64_t owner) {
  {
    std::lock_guard<std::mutex> lock(tickets_mu_);
    for (auto it = tickets_.begin(); it != tickets_.end();) {
      it = it->second.owner == owner ? tickets_.erase(it) : std::next(it);
    }
    dropped_.push_back(owner);
  }
  Wake();
}

// On the progress thread, inside a handshake. A ticket is used up when its
// connection is made (StepHandshakes), not here: a handshake may ask twice.
std::optional<PskContext::Found> Server::Impl::FindKey(std::string_view identity) {
  if (options_.auth == ServerOptions::Auth::kToken) {
    if (identity != token_key_.identity) return std::nullopt;
    return PskContext::Found{token_key_.key, 0};
  }
  std::lock_guard<std::mutex> lock(tickets_mu_);
  auto it = tickets_.find(std::string(identity));
  if (it == tickets_.end() || it->second.expires < Clock::now()) return std::nullopt;
  return PskContext::Found{it->second.secret, it->second.owner};
}

void Server::Impl::Loop() {
  auto last_busy = Clock::now();
  auto last_poll = last_busy;
  while (!stop_) {
    bool busy = worker_ != nullptr && worker_->Progress();
    const auto now = Clock::now();
    const bool spin = busy || now - last_busy < std::chrono::microseconds(50);
    // While UCX keeps it busy, the sockets are looked at every 250 µs (a
    // system call each time), not on every round of progress.
    if (!spin || now - last_poll >= std::chrono::microseconds(250) ||
        worker_ == nullptr) {
      busy |= PollSockets(spin ? 0 : 50);
      last_poll = Clock::now();
    }
    busy |= StepHandshakes();
    busy |= HandleDrops();
    if (worker_ != nullptr) busy |= PollReceives();
    busy |= PumpScans();
    busy |= PollSends();
    busy |= FlushAll();
    busy |= Reap();
    UpdateStats();
    if (busy) last_busy = Clock::now();
  }
  // Shutting down: every connection and scan goes, then what they held.
  for (auto& [id, c] : connections_) c->closing = "the server is stopping";
  Reap();
  handshakes_.clear();
  for (auto& [id, scan] : scans_) scan->cancelled = true;
  while (!scans_.empty()) EndScan(scans_.begin()->second.get());
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while ((!ending_.empty() || !sends_.empty() || !closing_eps_.empty()) &&
         Clock::now() < deadline) {
    if (worker_ != nullptr) worker_->Progress();
    PollSends();
    Reap();
  }
  for (auto& s : ending_) {
    if (s->producer.joinable()) s->producer.join();
  }
  ending_.clear();
  sends_.clear();
  closing_eps_.clear();
}

bool Server::Impl::PollSockets(int timeout_ms) {
  std::vector<pollfd> fds;
  fds.push_back({wake_fd_, POLLIN, 0});
  const bool accepting = Clock::now() >= accept_paused_until;
  fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
  for (const Handshake& h : handshakes_) {
    fds.push_back({h.tls->fd(),
                   static_cast<short>(POLLIN | (h.tls->wants_write() ? POLLOUT : 0)), 0});
  }
  std::vector<Connection*> open;
  for (auto& [id, c] : connections_) {
    if (c->peer_failed) continue;
    open.push_back(c.get());
    fds.push_back({c->tls->fd(),
                   static_cast<short>(POLLIN | (c->tls->wants_write() ? POLLOUT : 0)),
                   0});
    // Frames OpenSSL read ahead, which no poll reports.
    if (c->closing.empty() && c->tls->has_pending()) timeout_ms = 0;
  }
  if (timeout_ms > 0 && worker_ != nullptr) {
    if (worker_->Arm()) {
      fds.push_back({worker_->efd(), POLLIN, 0});
    } else {
      timeout_ms = 0;
    }
  }
  const int n = poll(fds.data(), fds.size(), timeout_ms);
  if (n < 0) return false;
  if (fds[0].revents != 0) {
    uint64_t v;
    (void)!read(wake_fd_, &v, sizeof(v));
  }
  size_t at = 2;
  for (Handshake& h : handshakes_) h.ready = fds[at++].revents != 0;
  for (Connection* c : open) {
    const short revents = fds[at++].revents;
    if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0 ||
        (c->closing.empty() && c->tls->has_pending())) {
      ReadFrames(c);
    }
  }
  if ((fds[1].revents & POLLIN) != 0) AcceptAll();
  return n > 0;
}

void Server::Impl::AcceptAll() {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: stop listening a moment rather than spin.
        accept_paused_until = Clock::now() + std::chrono::milliseconds(100);
      }
      return;
    }
    if (connections_.size() >= options_.max_connections) {
      close(fd);
      continue;
    }
    // Handshakes are bounded: a new one takes the place of the oldest, so
    // sockets held silent cannot keep an honest client (whose handshake
    // takes a round trip) out for longer than it takes to open as many.
    if (handshakes_.size() >= std::max<size_t>(options_.max_handshakes, 1)) {
      handshakes_.pop_front();
    }
    TuneSocket(fd);
    auto tls = TlsStream::Make(tls_, fd, /*server=*/true);
    if (!tls.ok()) continue;  // the stream closed the socket
    Handshake h;
    h.tls = std::move(*tls);
    h.started = h.progressed = Clock::now();
    handshakes_.push_back(std::move(h));
  }
}

bool Server::Impl::StepHandshakes() {
  bool busy = false;
  const auto now = Clock::now();
  const auto quiet = std::chrono::milliseconds(options_.handshake_timeout_ms);
  for (auto it = handshakes_.begin(); it != handshakes_.end();) {
    Handshake& h = *it;
    if (h.ready) {
      h.ready = false;
      busy = true;
      auto done = h.tls->Handshake();
      if (h.tls->bytes_read() != h.bytes) {
        h.bytes = h.tls->bytes_read();
        h.progressed = now;
      }
      if (!done.ok()) {        // a wrong key, garbage, a closed socket: gone
        (void)h.tls->Flush();  // the alert saying why, if the socket takes it
        it = handshakes_.erase(it);
        continue;
      }
      if (*done) {
        bool fresh = true;  // a ticket makes one connection
        if (options_.auth == ServerOptions::Auth::kTickets) {
          std::lock_guard<std::mutex> lock(tickets_mu_);
          fresh = tickets_.erase(h.tls->identity()) == 1;
        }
        if (fresh && connections_.size() < options_.max_connections) {
          auto c = std::make_unique<Connection>();
          c->id = next_connection_++;
          c->owner = h.tls->owner();
          c->tls = std::move(h.tls);
          c->accepted_at = now;
          connections_[c->id] = std::move(c);
        }
        it = handshakes_.erase(it);
        continue;
      }
    }
    // No byte from the peer for a while, or too long in all: closed, so
    // silent or trickling sockets cannot hold the handshake slots.
    if (now - h.progressed > quiet || now - h.started > 5 * quiet) {
      it = handshakes_.erase(it);
      busy = true;
      continue;
    }
    ++it;
  }
  return busy;
}

void Server::Impl::ReadFrames(Connection* c) {
  if (!c->closing.empty()) return;
  TlsStream::Sink sink;
  sink.max_frame = wire::kMaxClientFrame;
  sink.frame = [&](uint8_t kind, uint64_t word, std::string_view body,
                   std::shared_ptr<Buffer>) -> Status {
    auto f = wire::MakeFrame(kind, word, body);
    if (!f.ok()) {
      AnswerError(c, 0, 0, f.status());
      Close(c, f.status().ToString());
    } else {
      HandleFrame(c, *f);
    }
    return c->closing.empty() ? Status::OK() : Status::Cancelled("closing");
  };
  auto n = c->tls->Read(sink);
  // A client asking without reading the answers would grow its queue
  // without end (bodies are bounded by the pool, answers are not).
  if (c->closing.empty() && c->tls->queued() > kMaxQueuedFrames) {
    return Close(c, "it does not read what it is sent");
  }
  if (n.ok() || !c->closing.empty()) return;
  if (n.status().IsInvalid()) {  // a frame the stream itself refused
    AnswerError(c, 0, 0, n.status());
    return Close(c, n.status().ToString());
  }
  Close(c, "the client went away (" + n.status().message() + ")");
  c->peer_failed = true;
}

bool Server::Impl::FlushAll() {
  bool busy = false;
  for (auto& [id, c] : connections_) {
    if (c->peer_failed || !c->tls->wants_write()) continue;
    auto written = c->tls->Flush();
    if (!written.ok()) {
      Close(c.get(), "the client went away (" + written.status().message() + ")");
      c->peer_failed = true;
      continue;
    }
    busy |= *written > 0;
  }
  return busy;
}

bool Server::Impl::HandleDrops() {
  std::vector<uint64_t> dropped;
  {
    std::lock_guard<std::mutex> lock(tickets_mu_);
    dropped.swap(dropped_);
  }
  if (dropped.empty()) return false;
  for (auto& [id, c] : connections_) {
    if (c->owner != 0 &&
        std::find(dropped.begin(), dropped.end(), c->owner) != dropped.end()) {
      Close(c.get(), "the session it was opened for ended");
    }
  }
  return true;
}

void Server::Impl::Close(Connection* c, std::string why) {
  if (c->closing.empty()) c->closing = std::move(why);
}

void Server::Impl::EndScan(Scan* s) {
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->cancelled = true;
    if (s->reader != nullptr) s->reader->Cancel();
  }
  s->cv.notify_all();
  auto c = connections_.find(s->connection);
  if (c != connections_.end()) {
    c->second->scans.erase(s->id);
    for (auto it = c->second->addresses.begin(); it != c->second->addresses.end();) {
      auto& bodies = it->second;
      for (auto b = bodies.begin(); b != bodies.end();) {
        b = (*b)->scan == s->id ? bodies.erase(b) : std::next(b);
      }
      it = bodies.empty() ? c->second->addresses.erase(it) : std::next(it);
    }
  }
  auto it = scans_.find(s->id);
  ending_.push_back(std::move(it->second));
  scans_.erase(it);
}

bool Server::Impl::Reap() {
  bool busy = false;
  const auto now = Clock::now();
  for (auto it = connections_.begin(); it != connections_.end();) {
    Connection* c = it->second.get();
    // A connection slot is not for keeping: Hello and DataPath in time.
    if (c->closing.empty() && !c->path_set &&
        now - c->accepted_at > std::chrono::milliseconds(options_.hello_timeout_ms)) {
      AnswerError(c, 0, 0,
                  Status::Unauthenticated("no Hello and DataPath within ",
                                          options_.hello_timeout_ms, " ms"));
      Close(c, "no Hello in time");
    }
    if (c->closing.empty()) {
      ++it;
      continue;
    }
    busy = true;
    if (!c->wound_down) {
      while (!c->scans.empty()) EndScan(scans_[*c->scans.begin()].get());
      c->addresses.clear();
      c->want_recv = UcxRequest();
      c->free_recv = UcxRequest();
      c->wound_down = true;
      c->closing_since = now;
    }
    // Let the last answers (the error that says why) reach a live client,
    // for a second at most, before the connection goes.
    bool sending = !c->peer_failed && c->tls->wants_write();
    for (auto& s : sends_) {
      sending =
          sending || (s->connection == c->id && s->request.Check() == UCS_INPROGRESS);
    }
    if (sending && now - c->closing_since < std::chrono::seconds(1) && !stop_) {
      ++it;
      continue;
    }
    // The data endpoint by force: what is still in flight on it is for a
    // scan that has ended, and without error handling UCX could not flush
    // it to a dead client.
    if (c->data_ep != nullptr) {
      ucp_request_param_t p{};
      p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = UCP_EP_CLOSE_FLAG_FORCE;
      closing_eps_.emplace_back(worker_->get(), ucp_ep_close_nbx(c->data_ep, &p));
    }
    it = connections_.erase(it);  // closes the stream's socket
  }
  for (auto it = closing_eps_.begin(); it != closing_eps_.end();) {
    it = it->Check() == UCS_INPROGRESS ? std::next(it) : closing_eps_.erase(it);
  }
  for (auto it = ending_.begin(); it != ending_.end();) {
    bool done;
    {
      std::lock_guard<std::mutex> lock((*it)->mu);
      done = (*it)->producer_done;
    }
    if (!done) {
      ++it;
      continue;
    }
    busy = true;
    (*it)->producer.join();
    it = ending_.erase(it);
  }
  return busy;
}

}  // namespace quiver::transport
