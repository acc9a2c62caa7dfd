#include "control/rpc/engine.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <unordered_set>

#include "control/tls/tls_context.h"

namespace quiver::control::rpc {

namespace {

constexpr int kMaxEvents = 64;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             Connection::Clock::now().time_since_epoch())
      .count();
}

}  // namespace

// One I/O thread: an epoll set, a wake-up eventfd and a task queue.
class IoThread {
 public:
  // What an epoll entry stands for (connections use their own pointer).
  // A member, not file-local: IoThread has external linkage (engine.h
  // names it), and its members' types must have it too.
  struct Watch {
    enum Kind { kWakeup, kListener } kind;
    int fd;
    const TlsContext* tls;
  };

  explicit IoThread(Engine* engine) : engine_(engine) {}
  ~IoThread() { Stop(); }

  Status Init() {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) return Status::FromErrno(errno, "epoll_create1");
    wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_ < 0) return Status::FromErrno(errno, "eventfd");
    wake_watch_ = {Watch::kWakeup, wake_, nullptr};
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &wake_watch_;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev) != 0) {
      return Status::FromErrno(errno, "epoll_ctl(eventfd)");
    }
    return Status::OK();
  }
  void Start() {
    thread_ = std::thread([this] { Loop(); });
  }
  void Stop() {
    if (thread_.joinable()) {
      stopping_ = true;
      Wake();
      thread_.join();
    }
    conns_.clear();
    if (epoll_ >= 0) close(epoll_);
    if (wake_ >= 0) close(wake_);
    epoll_ = wake_ = -1;
  }

  Status AddListener(Watch* w) {
    listeners_.insert(w);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = w;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, w->fd, &ev) != 0) {
      return Status::FromErrno(errno, "epoll_ctl(listener)");
    }
    return Status::OK();
  }

  // Takes the connection into this thread's epoll set; `kick` runs its
  // handler once (a plain stream's handshake completes without input).
  void Add(const ConnectionPtr& c, bool kick) {
    Post([this, c, kick] {
      if (c->closed()) return;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.ptr = c.get();
      if (epoll_ctl(epoll_, EPOLL_CTL_ADD, c->stream_->fd(), &ev) != 0) {
        c->Close(Status::FromErrno(errno, "epoll_ctl(connection)"));
        return;
      }
      conns_.emplace(c.get(), c);
      if (kick) Handle(c.get(), EPOLLIN);
    });
  }
  void Remove(const ConnectionPtr& c) {
    Post([this, c] {
      epoll_ctl(epoll_, EPOLL_CTL_DEL, c->stream_->fd(), nullptr);
      conns_.erase(c.get());
    });
  }
  void SetWriteInterest(Connection* c, bool want) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (want ? static_cast<uint32_t>(EPOLLOUT) : 0u);
    ev.data.ptr = c;
    epoll_ctl(epoll_, EPOLL_CTL_MOD, c->stream_->fd(), &ev);
  }
  // Outgoing calls of this thread's connections now awaiting a reply.
  void Awaiting(int64_t delta) { awaiting_.fetch_add(delta, std::memory_order_relaxed); }
  void Post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(task));
    }
    Wake();
  }

 private:
  void Wake() {
    uint64_t one = 1;
    ssize_t n = write(wake_, &one, sizeof(one));
    (void)n;
  }

  void Loop() {
    epoll_event events[kMaxEvents];
    using Clock = std::chrono::steady_clock;
    const auto spin = std::chrono::microseconds(engine_->options_.spin_us);
    Clock::time_point last_event = Clock::now();
    while (!stopping_) {
      // Polls without sleeping while replies are due and the last event is
      // recent; sleeps otherwise.
      const bool poll = spin.count() > 0 &&
                        awaiting_.load(std::memory_order_relaxed) > 0 &&
                        Clock::now() - last_event < spin;
      busy_since_ns_.store(0, std::memory_order_relaxed);  // listening
      const int n = epoll_wait(epoll_, events, kMaxEvents, poll ? 0 : -1);
      if (n == 0) continue;
      if (n < 0 && errno != EINTR) break;
      if (n > 0) {
        last_event = Clock::now();
        busy_since_ns_.store(NowNs(), std::memory_order_relaxed);
      }
      bool woken = false;
      for (int i = 0; i < n; ++i) {
        void* p = events[i].data.ptr;
        if (p == &wake_watch_) {
          uint64_t v;
          while (read(wake_, &v, sizeof(v)) > 0) {
          }
          woken = true;
          continue;
        }
        if (listeners_.count(p) != 0) {
          auto* w = static_cast<Watch*>(p);
          engine_->Accept(w->fd, w->tls);
          continue;
        }
        // A connection closed since epoll_wait returned is still in conns_
        // (tasks, removals included, run after the whole batch).
        auto it = conns_.find(static_cast<Connection*>(p));
        if (it != conns_.end()) {
          ConnectionPtr hold = it->second;  // alive through the handler
          Handle(hold.get(), events[i].events);
        }
      }
      if (woken) RunTasks();
    }
  }

  void RunTasks() {
    std::deque<std::function<void()>> tasks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks.swap(tasks_);
    }
    for (auto& t : tasks) t();
  }

  void Handle(Connection* c, uint32_t events);
  Status FinishHandshake(Connection* c);

  Engine* engine_;
  int epoll_ = -1, wake_ = -1;
  Watch wake_watch_{};
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> awaiting_{0};
  // When the thread stopped listening to handle what epoll_wait returned (0
  // while it waits): its connections' silence is counted up to then only.
  std::atomic<int64_t> busy_since_ns_{0};

 public:
  int64_t busy_since_ns() const { return busy_since_ns_.load(std::memory_order_relaxed); }
  std::mutex mu_;
  std::deque<std::function<void()>> tasks_;
  std::unordered_map<Connection*, ConnectionPtr> conns_;  // this thread only
  std::unordered_set<void*> listeners_;                   // set before the thread starts
};

// Buffers above this are released once empty: a connection that once
// carried a big frame does not keep its memory.
constexpr size_t kKeepBufferBytes = 256u << 10;

// ---------------------------------------------------------------------------
// Connection

Connection::Connection(Engine* engine, IoThread* io, std::unique_ptr<Stream> stream,
                       bool outgoing)
    : engine_(engine),
      io_(io),
      id_(engine->next_conn_id_.fetch_add(1)),
      outgoing_(outgoing),
      stream_(std::move(stream)) {
  last_receive_ns_.store(NowNs());
}

std::chrono::nanoseconds Connection::Silence() const {
  const int64_t busy = io_->busy_since_ns();
  const int64_t horizon = busy != 0 ? busy : NowNs();
  return std::chrono::nanoseconds(
      std::max<int64_t>(0, horizon - last_receive_ns_.load(std::memory_order_relaxed)));
}

Connection::Clock::time_point Connection::last_receive() const {
  return Clock::time_point(std::chrono::nanoseconds(last_receive_ns_.load()));
}

void Connection::UpdateInterest(bool want_write) {
  if (want_write == write_armed_) return;
  write_armed_ = want_write;
  io_->SetWriteInterest(this, want_write);
}

Status Connection::FlushLocked() {
  while (outbox_sent_ < outbox_.size()) {
    QUIVER_ASSIGN_OR_RAISE(
        size_t n,
        stream_->Write(reinterpret_cast<const uint8_t*>(outbox_.data()) + outbox_sent_,
                       outbox_.size() - outbox_sent_));
    if (n == 0) break;
    outbox_sent_ += n;
  }
  if (outbox_sent_ == outbox_.size()) {
    // A big reply's buffer is not kept for the connection's life.
    if (outbox_.capacity() > kKeepBufferBytes) {
      std::string().swap(outbox_);
    } else {
      outbox_.clear();
    }
    outbox_sent_ = 0;
  } else if (outbox_sent_ > (1u << 20)) {
    outbox_.erase(0, outbox_sent_);
    outbox_sent_ = 0;
  }
  UpdateInterest(!outbox_.empty() || stream_->wants_write());
  return Status::OK();
}

void Connection::Enqueue(FrameKind kind, uint8_t method, uint64_t call_id,
                         std::string_view payload) {
  Status st;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed()) return;
    if (outbox_.size() - outbox_sent_ + payload.size() >
        engine_->options_.max_outbox_bytes) {
      st = Status::CapacityError("the peer is not reading: more than ",
                                 engine_->options_.max_outbox_bytes,
                                 " bytes of output wait");
    } else {
      AppendFrame(kind, method, call_id, payload, &outbox_);
      if (!handshaking_) st = FlushLocked();
    }
  }
  // Closed from the I/O thread, not here: the caller may hold locks that
  // the close handlers take.
  if (!st.ok()) {
    ConnectionPtr self = shared_from_this();
    io_->Post([self, st] { self->Close(st); });
  }
}

void Connection::Reply(uint64_t call_id, uint8_t method, std::string_view payload) {
  if (payload.size() > kMaxFramePayload) {
    // The peer would drop the connection for it: an error says why instead.
    Fail(call_id, method,
         Status::CapacityError("the reply of ", payload.size(),
                               " bytes exceeds the protocol's frame limit of ",
                               kMaxFramePayload));
    return;
  }
  Enqueue(FrameKind::kReply, method, call_id, payload);
}

void Connection::Fail(uint64_t call_id, uint8_t method, const Status& status) {
  Enqueue(FrameKind::kError, method, call_id, EncodeError(status));
}

void Connection::Call(uint8_t method, std::string_view payload, int timeout_ms,
                      CallDone done) {
  if (payload.size() > kMaxFramePayload) {
    done(Status::CapacityError("a request of ", payload.size(),
                               " bytes exceeds the protocol's frame limit of ",
                               kMaxFramePayload));
    return;
  }
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed()) {
      id = 0;
    } else {
      id = next_call_id_++;
      pending_.emplace(id, PendingCall{std::move(done), 0});
      io_->Awaiting(1);
    }
  }
  if (id == 0) {
    done(Status::Unavailable("connection to ", peer_.address, " is closed"));
    return;
  }
  std::weak_ptr<Connection> weak = shared_from_this();
  auto timer = engine_->timers_.After(timeout_ms, [weak, id, timeout_ms] {
    auto self = weak.lock();
    if (!self) return;
    CallDone expired;
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      auto it = self->pending_.find(id);
      if (it == self->pending_.end()) return;
      expired = std::move(it->second.done);
      self->pending_.erase(it);
      self->io_->Awaiting(-1);
    }
    expired(Status::DeadlineExceeded("no reply from ", self->peer_.identity.ToString(),
                                     " within ", timeout_ms, " ms"));
  });
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(id);
    if (it != pending_.end()) it->second.timer = timer;
  }
  Enqueue(FrameKind::kRequest, method, id, payload);
}

void Connection::Close(const Status& why) {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  std::unordered_map<uint64_t, PendingCall> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending.swap(pending_);
    io_->Awaiting(-static_cast<int64_t>(pending.size()));
    if (handshake_timer_ != 0) engine_->timers_.Cancel(handshake_timer_);
    // Let the peer see the end at once; the descriptor closes with the
    // stream once the I/O thread has let go of it.
    shutdown(stream_->fd(), SHUT_RDWR);
  }
  ConnectionPtr self = shared_from_this();
  io_->Remove(self);
  for (auto& [id, p] : pending) {
    engine_->timers_.Cancel(p.timer);
    p.done(Status::Unavailable("connection to ", peer_.address,
                               " closed: ", why.ok() ? "" : why.message()));
  }
  engine_->Forget(self, why);
}

// ---------------------------------------------------------------------------
// The I/O thread's handling of one connection's events

Status IoThread::FinishHandshake(Connection* c) {
  // Called with c->mu_ held, after the stream's handshake completed. With
  // sessions, the setup timer runs on until the session is opened.
  QUIVER_ASSIGN_OR_RAISE(c->peer_, c->stream_->Peer(engine_->options_.cluster));
  c->handshaking_ = false;
  if (!engine_->options_.sessions) {
    if (c->handshake_timer_ != 0) engine_->timers_.Cancel(c->handshake_timer_);
    c->handshake_timer_ = 0;
    engine_->CountEstablished(c);
  }
  return Status::OK();
}

void Connection::Established() {
  if (established()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (handshake_timer_ != 0) engine_->timers_.Cancel(handshake_timer_);
    handshake_timer_ = 0;
  }
  // Handlers run on this connection's I/O thread: the decoder is its own.
  decoder_.set_max_payload(kMaxFramePayload);
  engine_->CountEstablished(this);
}

void IoThread::Handle(Connection* c, uint32_t events) {
  if (c->closed()) return;
  ConnectionPtr self = c->shared_from_this();
  bool opened = false;
  {
    std::unique_lock<std::mutex> lock(c->mu_);
    if (c->handshaking_) {
      auto done = c->stream_->Handshake();
      Status why = done.ok() ? Status::OK() : done.status();
      if (why.ok() && *done) why = FinishHandshake(c);
      if (!why.ok()) {
        lock.unlock();
        c->Close(why.WithContext("handshake"));
        return;
      }
      if (!*done) {
        c->UpdateInterest(c->stream_->wants_write());
        return;
      }
      opened = true;
    }
  }
  if (opened) {
    engine_->OnOpened(self);
    if (c->closed()) return;
    Status st;
    {
      std::lock_guard<std::mutex> lock(c->mu_);
      st = c->FlushLocked();  // replies queued during the handshake
    }
    if (!st.ok()) {
      c->Close(st);
      return;
    }
  }
  // Read and dispatch until the socket is drained (frames are handled as
  // they arrive, so a flood never accumulates unbounded input).
  for (bool drained = false; !drained;) {
    Status st;
    size_t got = 0;
    {
      std::lock_guard<std::mutex> lock(c->mu_);
      if (c->closed()) return;
      uint8_t* p = c->decoder_.WritePointer(kFrameReadChunk);
      const size_t room = c->decoder_.WriteRoom();
      auto n = c->stream_->Read(p, room);
      if (!n.ok()) {
        st = n.status();
      } else {
        got = *n;
        c->decoder_.Commit(got);
        // A short read drained the socket: epoll (level-triggered) says
        // when more comes, so no read just to hear "would block".
        drained = got < room && !c->stream_->HasPendingInput();
        if ((events & EPOLLOUT) || c->stream_->wants_write()) st = c->FlushLocked();
      }
    }
    if (!st.ok()) {
      c->Close(st);
      return;
    }
    if (got == 0) break;
    c->last_receive_ns_.store(NowNs(), std::memory_order_relaxed);
    FrameHeader h;
    std::string_view payload;
    for (;;) {
      auto more = c->decoder_.Next(&h, &payload);
      if (!more.ok()) {
        c->Close(more.status());
        return;
      }
      if (!*more) break;
      engine_->OnFrame(self, h, payload);
      if (c->closed()) return;
    }
    c->decoder_.Trim();  // a big frame's buffer is not kept once it is handled
  }
  if (events & EPOLLOUT) {
    Status st;
    {
      std::lock_guard<std::mutex> lock(c->mu_);
      if (!c->closed()) st = c->FlushLocked();
    }
    if (!st.ok()) c->Close(st);
  }
}

// ---------------------------------------------------------------------------
// Engine

Engine::Engine(EngineOptions options, EngineHandlers handlers)
    : options_(std::move(options)), handlers_(std::move(handlers)) {
  // OpenSSL writes to sockets with write(): a peer that goes away while we
  // send must give an error, not end the process with SIGPIPE.
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
}

Engine::~Engine() { Stop(); }

Status Engine::ListenTcp(const std::string& host_port, const TlsContext* tls) {
  std::string host;
  int port = 0;
  QUIVER_RETURN_NOT_OK(SplitHostPort(host_port, &host, &port));
  const bool v6 = host.find(':') != std::string::npos;
  int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage ss{};
  socklen_t len;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET6, host.c_str(), &a->sin6_addr) != 1) {
      close(fd);
      return Status::Invalid("'", host, "' is not an IPv6 address");
    }
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &a->sin_addr) != 1) {
      close(fd);
      return Status::Invalid("'", host, "' is not an IPv4 address");
    }
    len = sizeof(*a);
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || listen(fd, 512) != 0) {
    const int err = errno;
    close(fd);
    return Status::FromErrno(err, "listening on " + host_port);
  }
  listeners_.push_back({fd, tls, ""});
  return Status::OK();
}

Status Engine::ListenUnix(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status::Invalid("socket path '", path, "' is too long");
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    // Only a socket (a previous daemon's) is replaced, never another file.
    if (!S_ISSOCK(st.st_mode)) {
      return Status::AlreadyExists("'", path, "' exists and is not a socket");
    }
    unlink(path.c_str());
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "socket");
  // Created 0600 from the start: no moment where others may connect.
  const mode_t old = umask(0177);
  const int rc = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  umask(old);
  if (rc != 0 || listen(fd, 512) != 0) {
    const int err = errno;
    close(fd);
    return Status::FromErrno(err, "listening on unix:" + path);
  }
  listeners_.push_back({fd, nullptr, path});
  return Status::OK();
}

Status Engine::Start() {
  if (started_) return Status::Invalid("engine already started");
  for (int i = 0; i < std::max(1, options_.io_threads); ++i) {
    auto io = std::make_unique<IoThread>(this);
    QUIVER_RETURN_NOT_OK(io->Init());
    io_.push_back(std::move(io));
  }
  for (auto& l : listeners_) {
    using Watch = IoThread::Watch;
    auto w = std::make_shared<Watch>(Watch{Watch::kListener, l.fd, l.tls});
    // Listeners live as long as the engine; io_[0] accepts.
    QUIVER_RETURN_NOT_OK(io_[0]->AddListener(w.get()));
    watches_.push_back(std::move(w));
  }
  for (auto& io : io_) io->Start();
  started_ = true;
  return Status::OK();
}

void Engine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  for (auto& l : listeners_) {
    close(l.fd);
    if (!l.unix_path.empty()) unlink(l.unix_path.c_str());
  }
  std::vector<ConnectionPtr> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, c] : connections_) all.push_back(c);
  }
  for (auto& c : all) c->Close(Status::Unavailable("the daemon is stopping"));
  for (auto& io : io_) io->Stop();
  timers_.Stop();
}

size_t Engine::connection_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return connections_.size();
}

void Engine::ForEachConnection(
    const std::function<void(const ConnectionPtr&)>& fn) const {
  std::vector<ConnectionPtr> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, c] : connections_) all.push_back(c);
  }
  for (const auto& c : all) fn(c);
}

void Engine::Register(const ConnectionPtr& c) {
  std::lock_guard<std::mutex> lock(mu_);
  connections_.emplace(c->id(), c);
  if (c->outgoing()) {
    c->established_.store(true, std::memory_order_release);
    ++established_;
  } else {
    ++unestablished_[c->unix_ ? 1 : 0];
  }
}

void Engine::CountEstablished(Connection* c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (c->established() || connections_.count(c->id()) == 0) return;
  c->established_.store(true, std::memory_order_release);
  --unestablished_[c->unix_ ? 1 : 0];
  ++established_;
}

void Engine::MakeRoomForUnestablished(bool unix_socket) {
  ConnectionPtr oldest;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (unestablished_[unix_socket ? 1 : 0] < options_.max_unestablished) return;
    for (const auto& [id, c] : connections_) {
      if (c->outgoing() || c->established() || c->unix_ != unix_socket) continue;
      if (oldest == nullptr || id < oldest->id()) oldest = c;
    }
  }
  if (oldest != nullptr) {
    oldest->Close(Status::CapacityError(
        "closed to make room: ", options_.max_unestablished,
        " connections were still setting up on this ", unix_socket ? "socket" : "port"));
  }
}

void Engine::Forget(const ConnectionPtr& c, const Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (connections_.erase(c->id()) != 0) {
      if (c->established()) {
        --established_;
      } else if (!c->outgoing()) {
        --unestablished_[c->unix_ ? 1 : 0];
      }
    }
  }
  // on_close runs for connections whose peer was known (opened).
  bool opened;
  {
    std::lock_guard<std::mutex> lock(c->mu_);
    opened = !c->handshaking_;
  }
  if (opened && !c->close_reported_.exchange(true) && handlers_.on_close) {
    handlers_.on_close(c, why);
  }
}

void Engine::OnOpened(const ConnectionPtr& c) {
  if (!handlers_.on_open) return;
  Status st = handlers_.on_open(c);
  if (!st.ok()) c->Close(st);
}

void Engine::OnFrame(const ConnectionPtr& c, const FrameHeader& h,
                     std::string_view payload) {
  if (h.kind == FrameKind::kRequest) {
    handlers_.on_request(c, h, payload);
    return;
  }
  Connection::PendingCall call;
  {
    std::lock_guard<std::mutex> lock(c->mu_);
    auto it = c->pending_.find(h.call_id);
    if (it == c->pending_.end()) return;  // timed out earlier: dropped
    call = std::move(it->second);
    c->pending_.erase(it);
    c->io_->Awaiting(-1);
  }
  timers_.Cancel(call.timer);
  if (h.kind == FrameKind::kReply) {
    call.done(std::string(payload));
  } else {
    call.done(DecodeError(payload));
  }
}

void Engine::Accept(int listen_fd, const TlsContext* tls) {
  for (;;) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or a transient error; epoll calls again
    const bool unix_socket = tls == nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (established_ >= options_.max_connections) {
        close(fd);  // over the cap: refused before any work is done
        continue;
      }
    }
    // Connections that never finish setting up take no one's place for
    // long: the newest one pushes the oldest out.
    MakeRoomForUnestablished(unix_socket);
    if (tls != nullptr) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    std::unique_ptr<Stream> stream;
    if (tls != nullptr) {
      auto s = Stream::Tls(fd, *tls, /*server=*/true);
      if (!s.ok()) continue;
      stream = std::move(*s);
    } else {
      stream = Stream::Plain(fd);
    }
    IoThread* io = io_[next_io_.fetch_add(1) % io_.size()].get();
    ConnectionPtr c(new Connection(this, io, std::move(stream), /*outgoing=*/false));
    c->unix_ = unix_socket;
    if (options_.sessions) c->decoder_.set_max_payload(options_.setup_payload);
    {
      std::lock_guard<std::mutex> lock(c->mu_);
      std::weak_ptr<Connection> weak = c;
      c->handshake_timer_ = timers_.After(options_.handshake_timeout_ms, [weak, this] {
        auto self = weak.lock();
        if (!self || self->established()) return;
        bool handshaking;
        {
          std::lock_guard<std::mutex> lock2(self->mu_);
          handshaking = self->handshaking_;
        }
        self->Close(Status::DeadlineExceeded(handshaking ? "no handshake" : "no session",
                                             " within ", options_.handshake_timeout_ms,
                                             " ms"));
      });
    }
    Register(c);
    io->Add(c, /*kick=*/tls == nullptr);
  }
}

Result<ConnectionPtr> Engine::Connect(const std::string& host_port, const TlsContext& tls,
                                      const PeerIdentity& expected, int timeout_ms) {
  QUIVER_ASSIGN_OR_RAISE(int fd, ConnectTcp(host_port, timeout_ms));
  QUIVER_ASSIGN_OR_RAISE(auto stream, Stream::Tls(fd, tls, /*server=*/false));
  QUIVER_RETURN_NOT_OK(HandshakeBlocking(stream.get(), timeout_ms)
                           .WithContext("TLS handshake with " + host_port));
  QUIVER_ASSIGN_OR_RAISE(PeerInfo peer, stream->Peer(options_.cluster));
  if (!(peer.identity == expected)) {
    return Status::Unauthenticated(host_port, " presented the certificate of ",
                                   peer.identity.ToString(), ", not of ",
                                   expected.ToString());
  }
  IoThread* io = io_[next_io_.fetch_add(1) % io_.size()].get();
  ConnectionPtr c(new Connection(this, io, std::move(stream), /*outgoing=*/true));
  c->peer_ = std::move(peer);
  c->handshaking_ = false;
  Register(c);
  io->Add(c, /*kick=*/true);
  return c;
}

}  // namespace quiver::control::rpc
