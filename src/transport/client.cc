#include "quiver/transport/client.h"

#include <poll.h>
#include <sys/random.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "quiver/util/little_endian.h"
#include "transport/address.h"
#include "transport/client_internal.h"

namespace quiver::transport {

namespace dis = ipc::dissociated;

namespace {

BodyMode ModeFromEnvironment(BodyMode fallback) {
  const char* v = std::getenv("QUIVER_TRANSPORT_BODIES");
  if (v == nullptr) return fallback;
  const std::string s(v);
  if (s == "packed") return BodyMode::kPacked;
  if (s == "addresses") return BodyMode::kAddresses;
  return s == "measure" ? BodyMode::kMeasure : fallback;
}

}  // namespace

void Client::Impl::OnFrame(uint8_t kind, uint64_t word, std::string_view body,
                           std::shared_ptr<Buffer> placed) {
  auto frame = wire::MakeFrame(kind, word, body);
  if (!frame.ok()) {
    connection_error_ = frame.status().ToString();
    return;
  }
  // A scan's window bounds what an honest server sends ahead of the reader.
  constexpr size_t kMaxAhead = 1 << 12;
  switch (frame->kind) {
    case wire::Kind::kMetadata:
      if (metadata_[word].size() >= 4 * kMaxAhead) {
        connection_error_ = "the server sent more metadata than any window allows";
        return;
      }
      metadata_[word].emplace_back(body);
      return;
    case wire::Kind::kBody:
      if (placed == nullptr || stream_bodies_.size() >= kMaxAhead) {
        connection_error_ = "the server sent more bodies than any window allows";
        return;
      }
      stream_bodies_.emplace_back(word, std::move(placed));
      return;
    case wire::Kind::kError:
      if (word == 0) {
        auto e = wire::DecodeError(body);
        if (!e.ok()) {
          connection_error_ = e.status().ToString();
        } else if (e->scan != 0) {
          scan_errors_[e->scan] = e->message;
        } else {
          connection_error_ = e->message;
        }
        return;
      }
      break;
    default:
      break;
  }
  replies_[word] = wire::EncodeFrame(frame->kind, word, body);
}

bool Client::Impl::PumpStream() {
  if (!failed_.empty() || !connection_error_.empty()) return false;
  TlsStream::Sink sink;
  // Bodies go straight into the client's memory; the rest is small.
  sink.max_frame = std::min<uint64_t>(
      std::max<uint64_t>(options_.max_body_bytes, 1 << 20), UINT32_MAX - 64);
  sink.place = [this](uint8_t kind, uint64_t,
                      uint64_t length) -> Result<std::shared_ptr<Buffer>> {
    if (kind != static_cast<uint8_t>(wire::Kind::kBody)) return nullptr;
    if (length > options_.max_body_bytes) {
      return Status::Invalid("a body of ", length, " bytes exceeds the limit of ",
                             options_.max_body_bytes);
    }
    return AllocateBuffer(static_cast<int64_t>(length), options_.pool);
  };
  sink.frame = [this](uint8_t kind, uint64_t word, std::string_view body,
                      std::shared_ptr<Buffer> placed) {
    OnFrame(kind, word, body, std::move(placed));
    return Status::OK();
  };
  auto frames = tls_->Read(sink);
  auto written = tls_->Flush();
  Status st = !frames.ok() ? frames.status() : written.status();
  if (!st.ok()) {
    if (st.IsInvalid()) {
      connection_error_ = st.message();
    } else {
      failed_ = "the connection to " + address_ + " failed: " + st.message();
    }
    return true;
  }
  return *frames > 0 || *written > 0;
}

ucs_status_t Client::Impl::OnMetadata(void* arg, const void* header, size_t header_length,
                                      void* data, size_t length,
                                      const ucp_am_recv_param_t* param) {
  auto* self = static_cast<Impl*>(arg);
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) || header_length != 8) {
    self->connection_error_ = "the server sent a malformed metadata message";
    return UCS_OK;
  }
  uint64_t scan;
  std::memcpy(&scan, header, 8);
  self->metadata_[scan].emplace_back(static_cast<const char*>(data), length);
  return UCS_OK;
}

Client::Impl::~Impl() {
  if (rkey_ != nullptr) ucp_rkey_destroy(rkey_);
  if (worker_ != nullptr) CloseByForce(worker_.get(), {data_ep_});
  sends_.clear();
}

Status Client::Impl::Until(const std::function<bool()>& done, std::string_view what) {
  using Clock = std::chrono::steady_clock;
  // Spinning this long after the last event catches the reply of a round
  // trip on shared memory without a sleep and wake-up (tens of µs each).
  constexpr auto kSpin = std::chrono::microseconds(50);
  const auto start = Clock::now();
  auto last_event = start;
  auto last_pump = start - std::chrono::seconds(1);
  for (;;) {
    bool busy = worker_ != nullptr && worker_->Progress();
    // The stream costs a system call to look at: every 250 µs while UCX
    // keeps this loop busy (at once if it said it has more).
    if (worker_ == nullptr || tls_->has_pending() || tls_->wants_write() ||
        Clock::now() - last_pump >= std::chrono::microseconds(250)) {
      busy |= PumpStream();
      last_pump = Clock::now();
    }
    PollSends();
    if (done() || !failed_.empty() || !connection_error_.empty()) break;
    const auto now = Clock::now();
    if (busy || now - last_event < kSpin) {
      if (busy) last_event = now;
      continue;
    }
    int wait_ms = 100;
    if (options_.timeout_ms >= 0) {
      const int64_t left =
          options_.timeout_ms -
          std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
      if (left <= 0) {
        return Status::DeadlineExceeded(what, " did not finish within ",
                                        options_.timeout_ms, " ms");
      }
      wait_ms = static_cast<int>(std::min<int64_t>(left, wait_ms));
    }
    pollfd fds[2];
    nfds_t n = 0;
    fds[n++] = {tls_->fd(),
                static_cast<short>(POLLIN | (tls_->wants_write() ? POLLOUT : 0)), 0};
    if (tls_->has_pending()) wait_ms = 0;
    if (worker_ != nullptr) {
      if (worker_->Arm()) {
        fds[n++] = {worker_->efd(), POLLIN, 0};
      } else {
        wait_ms = 0;
      }
    }
    (void)poll(fds, n, wait_ms);
    last_event = Clock::now();
  }
  if (!connection_error_.empty())
    return Status::IOError("transport server: ", connection_error_);
  if (!failed_.empty()) return Status::IOError(failed_);
  return Status::OK();
}

Result<wire::Frame> Client::Impl::Call(wire::Kind kind, std::string body,
                                       wire::Kind expect, std::string* storage) {
  uint64_t request = 0;
  QUIVER_RETURN_NOT_OK(Post(kind, std::move(body), &request));
  Status waited = Until([&] { return replies_.count(request) != 0; },
                        std::string("waiting for the answer to ") + wire::KindName(kind));
  // An answer that came before the connection ended (the server's reason
  // for ending it) says more than the end itself.
  if (!waited.ok() && replies_.count(request) == 0) return waited;
  *storage = std::move(replies_[request]);
  replies_.erase(request);
  QUIVER_ASSIGN_OR_RAISE(wire::Frame f, wire::DecodeFrame(*storage));
  if (f.kind == wire::Kind::kError) {
    QUIVER_ASSIGN_OR_RAISE(auto e, wire::DecodeError(f.body));
    return Status::IOError("transport server: ", e.message);
  }
  if (f.kind != expect) {
    return Status::IOError("transport server answered ", wire::KindName(kind), " with ",
                           wire::KindName(f.kind));
  }
  return f;
}

// Receives and drops `bodies` bodies of a finalized scan.
Status Client::Impl::Drain(uint64_t bodies) {
  std::vector<uint8_t> scratch;
  for (uint64_t i = 0; i < bodies; ++i) {
    if (!ucx_) {
      QUIVER_RETURN_NOT_OK(Until([&] { return !stream_bodies_.empty(); },
                                 "draining the bodies of a finalized scan"));
      stream_bodies_.pop_front();
      continue;
    }
    ucp_tag_message_h message = nullptr;
    ucp_tag_recv_info_t info{};
    QUIVER_RETURN_NOT_OK(Until(
        [&] {
          message = ucp_tag_probe_nb(worker_->get(), 0, 0, /*remove=*/1, &info);
          return message != nullptr;
        },
        "draining the bodies of a finalized scan"));
    if (info.length > options_.max_body_bytes) {
      return Status::IOError("transport server sent a body of ", info.length,
                             " bytes, over the limit of ", options_.max_body_bytes);
    }
    scratch.resize(info.length);
    UcxRequest recv =
        TagRecvMessage(worker_->get(), scratch.data(), info.length, message);
    QUIVER_RETURN_NOT_OK(WaitFor(worker_.get(), &recv, options_.timeout_ms,
                                 "draining a body of a finalized scan"));
  }
  return Status::OK();
}

Status Client::Impl::Post(wire::Kind kind, std::string body, uint64_t* request) {
  const uint64_t id = next_request_++;
  if (request != nullptr) *request = id;
  return Send(kind, id, body);
}

Status Client::Impl::Send(wire::Kind kind, uint64_t word, std::string_view body) {
  if (!failed_.empty()) return Status::IOError(failed_);
  tls_->Queue(static_cast<uint8_t>(kind), word, body);
  auto written = tls_->Flush();
  if (!written.ok()) {
    failed_ = "the connection to " + address_ + " failed: " + written.status().message();
    return Status::IOError(failed_);
  }
  return Status::OK();
}

Status Client::Impl::SendTagged(uint64_t tag, std::string bytes) {
  send_bytes_.push_back(std::move(bytes));
  ucp_request_param_t p{};
  sends_.emplace_back(worker_->get(),
                      ucp_tag_send_nbx(data_ep_, send_bytes_.back().data(),
                                       send_bytes_.back().size(), tag, &p));
  const ucs_status_t st = sends_.back().Check();
  if (st != UCS_OK && st != UCS_INPROGRESS)
    return UcxError(st, "sending a tagged message");
  return Status::OK();
}

Status Client::Impl::Connect(const std::string& address) {
  address_ = address;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  // The TLS handshake proves that both sides hold the key; nothing else
  // is sent before it.
  Psk key = options_.ticket_identity.empty()
                ? TokenPsk(options_.token)
                : Psk{options_.ticket_identity, options_.ticket_secret};
  QUIVER_ASSIGN_OR_RAISE(tls_context_, PskContext::Client());
  QUIVER_ASSIGN_OR_RAISE(const int fd, ConnectTcp(address, options_.timeout_ms));
  QUIVER_ASSIGN_OR_RAISE(
      tls_, TlsStream::Make(tls_context_, fd, /*server=*/false, std::move(key)));
  for (;;) {
    auto done = tls_->Handshake();
    if (!done.ok()) {
      return Status::Unauthenticated(
          "transport server at ", address, " refused the connection's key (wrong ",
          options_.ticket_identity.empty() ? "token" : "ticket",
          ", or not a Quiver transport): ", done.status().message());
    }
    if (*done) break;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return Status::DeadlineExceeded("transport server at ", address,
                                      ": no TLS handshake within ", options_.timeout_ms,
                                      " ms");
    }
    pollfd p{tls_->fd(), static_cast<short>(tls_->wants_write() ? POLLOUT : POLLIN), 0};
    (void)poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
  }
  // UCX where the server is a process of this host; the stream elsewhere.
  QUIVER_ASSIGN_OR_RAISE(context_,
                         UcxContext::ForPeers(options_.ucx_transports, /*rma=*/true));
  wire::Hello hello;
  if (context_ != nullptr) {
    QUIVER_ASSIGN_OR_RAISE(worker_, UcxWorker::Make(context_));
    ucp_am_handler_param_t am{};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG;
    am.id = wire::kAmMetadata;
    am.cb = &OnMetadata;
    am.arg = this;
    ucs_status_t st = ucp_worker_set_am_recv_handler(worker_->get(), &am);
    if (st != UCS_OK) return UcxError(st, "setting a message handler");
    QUIVER_ASSIGN_OR_RAISE(hello.worker_address, worker_->Address());
  }
  std::string storage;
  QUIVER_ASSIGN_OR_RAISE(auto f, Call(wire::Kind::kHello, wire::Encode(hello),
                                      wire::Kind::kHelloReply, &storage));
  QUIVER_ASSIGN_OR_RAISE(hello_, wire::DecodeHelloReply(f.body));
  if (hello_.version != wire::kVersion) {
    return Status::IOError("transport server at ", address, " speaks version ",
                           hello_.version, ", this client ", wire::kVersion);
  }
  if (worker_ != nullptr && !hello_.worker_address.empty()) {
    // Fails at once where this process may not reach the server's shared
    // memory (another user's): then the stream it is.
    auto ep = worker_->ConnectTo(hello_.worker_address);
    if (ep.ok()) {
      data_ep_ = *ep;
      ucx_ = true;
      if (hello_.pool_length > 0 &&
          ucp_ep_rkey_unpack(data_ep_, hello_.rkey.data(), &rkey_) != UCS_OK) {
        rkey_ = nullptr;  // no reads: every body packed
      }
    }
  }
  QUIVER_RETURN_NOT_OK(Post(wire::Kind::kDataPath, wire::Encode(wire::DataPath{
                                                       ucx_ ? uint8_t{1} : uint8_t{0}})));
  if (!ucx_ || rkey_ == nullptr) return Status::OK();
  switch (ModeFromEnvironment(options_.bodies)) {
    case BodyMode::kPacked:
      return Status::OK();
    case BodyMode::kAddresses:
      addresses_from_ = 0;
      return Status::OK();
    case BodyMode::kMeasure:
      return Measure();
  }
  return Status::OK();
}

// Times what each body type costs the reader at sizes from 16 KiB to 1 MiB,
// four bodies in flight as a scan's window keeps them (best of three): a
// type-1 body is a small tagged message (its address list) and then a
// one-sided read; a type-0 body is one tagged message of the whole size.
// The server sends probe messages from its probe area on request.
// Addresses from the smallest size where reads win clearly (by 20%) there
// and at every larger size.
Status Client::Impl::Measure() {
  using Clock = std::chrono::steady_clock;
  constexpr int kInFlight = 4;
  constexpr int kRounds = 5;  // best of: one busy moment must not decide
  const uint64_t largest = std::min<uint64_t>(hello_.probe_length, 1 << 20);
  std::vector<std::vector<uint8_t>> buffers(kInFlight, std::vector<uint8_t>(largest));
  const uint64_t base_tag = (uint64_t{0xFF} << 56) | (next_request_ << 32);
  // Four probes of `size` bytes, tags base_tag + j; `then(j)` as each lands.
  auto probes = [&](uint64_t size, const std::function<Status(int)>& then) -> Status {
    std::vector<UcxRequest> recvs;
    for (int j = 0; j < kInFlight; ++j) {
      recvs.push_back(
          TagRecv(worker_->get(), buffers[j].data(), size, base_tag + j, ~uint64_t{0}));
      QUIVER_RETURN_NOT_OK(
          Post(wire::Kind::kProbe, wire::Encode(wire::Probe{size, base_tag + j})));
    }
    std::vector<bool> landed(kInFlight, false);
    int left = kInFlight;
    Status st;
    QUIVER_RETURN_NOT_OK(Until(
        [&] {
          for (int j = 0; j < kInFlight && st.ok(); ++j) {
            if (landed[j] || recvs[j].Check() == UCS_INPROGRESS) continue;
            landed[j] = true;
            --left;
            st = recvs[j].Check() == UCS_OK
                     ? then(j)
                     : UcxError(recvs[j].Check(), "receiving a probe");
          }
          return left == 0 || !st.ok();
        },
        "receiving the probes"));
    return st;
  };
  auto seconds_since = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  // One round of four reads of `size` bytes from `address`, each announced
  // by a probe message as a list body would be; the seconds it took.
  auto reads = [&](uint64_t size, uint64_t address, ucp_rkey_h rkey) -> Result<double> {
    auto t0 = Clock::now();
    std::vector<UcxRequest> gets(kInFlight);
    QUIVER_RETURN_NOT_OK(probes(16 + 16 * 8, [&](int j) {  // lists of 8 buffers
      ucp_request_param_t p{};
      gets[j] = UcxRequest(worker_->get(), ucp_get_nbx(data_ep_, buffers[j].data(), size,
                                                       address, rkey, &p));
      return Status::OK();
    }));
    for (auto& get : gets) {
      QUIVER_RETURN_NOT_OK(
          WaitFor(worker_.get(), &get, options_.timeout_ms, "reading the probe area"));
    }
    return seconds_since(t0);
  };
  std::vector<uint64_t> sizes;
  for (uint64_t s = 16 << 10; s <= largest; s *= 2) sizes.push_back(s);
  std::vector<bool> read_wins;
  for (uint64_t size : sizes) {
    double best_read = 1e30, best_send = 1e30;
    for (int round = 0; round < kRounds; ++round) {
      QUIVER_ASSIGN_OR_RAISE(double read, reads(size, hello_.probe_address, rkey_));
      best_read = std::min(best_read, read);
      if (round == 0) {
        for (uint64_t i = 0; i < size; i += 4093) {
          if (buffers[0][i] != static_cast<uint8_t>(i * 131 + 7)) {
            return Status::IOError("one-sided reads from ", address_,
                                   " return wrong bytes (probe offset ", i, ")");
          }
        }
      }
      auto t0 = Clock::now();
      QUIVER_RETURN_NOT_OK(probes(size, [](int) { return Status::OK(); }));
      best_send = std::min(best_send, seconds_since(t0));
    }
    // A clear win only: below the margin the two are a coin toss on a busy
    // machine, and a read costs the server memory held until free_data.
    read_wins.push_back(best_read < 0.8 * best_send);
  }
  for (size_t i = sizes.size(); i-- > 0;) {
    if (!read_wins[i]) break;
    addresses_from_ = sizes[i];
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------

Result<std::unique_ptr<Client>> Client::Connect(const std::string& address,
                                                ClientOptions options) {
  auto impl = std::make_shared<Impl>(std::move(options));
  QUIVER_RETURN_NOT_OK(impl->Connect(address));
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::~Client() = default;

uint64_t Client::addresses_from() const { return impl_->addresses_from_; }
bool Client::over_ucx() const { return impl_->ucx_; }

Result<uint64_t> Client::InitScan(const std::string& sql, const ScanOptions& options) {
  wire::InitScan m;
  m.sql = sql;
  m.dataset = options.dataset;
  m.min_rows = options.min_rows;
  m.window_batches = options.window_batches;
  m.window_bytes = options.window_bytes;
  m.addresses_from = impl_->addresses_from_;
  std::string storage;
  QUIVER_ASSIGN_OR_RAISE(auto f, impl_->Call(wire::Kind::kInitScan, wire::Encode(m),
                                             wire::Kind::kScanReply, &storage));
  QUIVER_ASSIGN_OR_RAISE(auto id, wire::DecodeScanId(f.body));
  return id.scan;
}

Status Client::Finalize(uint64_t scan) {
  std::string storage;
  QUIVER_ASSIGN_OR_RAISE(
      auto f, impl_->Call(wire::Kind::kFinalize, wire::Encode(wire::ScanId{scan}),
                          wire::Kind::kFinalized, &storage));
  QUIVER_ASSIGN_OR_RAISE(auto done, wire::DecodeFinalized(f.body));
  impl_->metadata_.erase(scan);
  impl_->scan_errors_.erase(scan);
  if (impl_->active_scan_ == scan) {
    if (done.bodies_sent < impl_->bodies_taken_) {
      return Status::IOError("transport server says it sent ", done.bodies_sent,
                             " bodies of scan ", scan, " but ", impl_->bodies_taken_,
                             " arrived");
    }
    QUIVER_RETURN_NOT_OK(impl_->Drain(done.bodies_sent - impl_->bodies_taken_));
    impl_->active_scan_ = 0;
  }
  return Status::OK();
}

Result<ServerStats> Client::Stats() {
  std::string storage;
  QUIVER_ASSIGN_OR_RAISE(
      auto f, impl_->Call(wire::Kind::kStats, {}, wire::Kind::kStatsReply, &storage));
  QUIVER_ASSIGN_OR_RAISE(auto r, wire::DecodeStatsReply(f.body));
  ServerStats s;
  s.connections = r.connections;
  s.scans = r.scans;
  s.pool_bytes_in_use = r.pool_bytes_in_use;
  s.bodies_in_flight = r.bodies_in_flight;
  s.sends = r.sends;
  return s;
}

}  // namespace quiver::transport
