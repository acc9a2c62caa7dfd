#include "quiver/transport/client.h"

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

ucs_status_t Client::Impl::OnControl(void* arg, const void*, size_t, void* data,
                                     size_t length, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<Impl*>(arg);
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
    self->connection_error_ = "the server sent a control message too large to be one";
    return UCS_OK;
  }
  std::string_view bytes(static_cast<const char*>(data), length);
  auto frame = wire::DecodeFrame(bytes);
  if (!frame.ok()) {
    self->connection_error_ = frame.status().ToString();
    return UCS_OK;
  }
  if (frame->kind == wire::Kind::kError && frame->request == 0) {
    auto e = wire::DecodeError(frame->body);
    if (!e.ok()) {
      self->connection_error_ = e.status().ToString();
    } else if (e->scan != 0) {
      self->scan_errors_[e->scan] = e->message;
    } else {
      self->connection_error_ = e->message;
    }
    return UCS_OK;
  }
  self->replies_[frame->request] = std::string(bytes);
  return UCS_OK;
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
  for (ucp_rkey_h k : in_place_rkeys_) ucp_rkey_destroy(k);
  CloseByForce(worker_.get(), {data_ep_, ep_});
  sends_.clear();
}

Status Client::Impl::Until(const std::function<bool()>& done, std::string_view what) {
  QUIVER_RETURN_NOT_OK(worker_->ProgressUntil(
      [&] { return done() || !failed_.empty() || !connection_error_.empty(); },
      options_.timeout_ms, what));
  PollSends();
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

// Receives and drops `bodies` tagged messages of a finalized scan.
Status Client::Impl::Drain(uint64_t bodies) {
  std::vector<uint8_t> scratch;
  for (uint64_t i = 0; i < bodies; ++i) {
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
  send_bytes_.push_back(wire::EncodeFrame(kind, id, body));
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
  sends_.emplace_back(worker_->get(), ucp_am_send_nbx(ep_, wire::kAmControl, nullptr, 0,
                                                      send_bytes_.back().data(),
                                                      send_bytes_.back().size(), &p));
  const ucs_status_t st = sends_.back().Check();
  if (st != UCS_OK && st != UCS_INPROGRESS)
    return UcxError(st, "sending a control message");
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
  QUIVER_ASSIGN_OR_RAISE(auto sockaddr, ResolveAddress(address, /*passive=*/false));
  QUIVER_ASSIGN_OR_RAISE(context_, UcxContext::Make(options_.ucx_transports));
  QUIVER_ASSIGN_OR_RAISE(worker_, UcxWorker::Make(context_));
  for (auto [id, cb] :
       {std::pair<unsigned, ucp_am_recv_callback_t>{wire::kAmControl, &OnControl},
        {wire::kAmMetadata, &OnMetadata}}) {
    ucp_am_handler_param_t am{};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG;
    am.id = id;
    am.cb = cb;
    am.arg = this;
    ucs_status_t st = ucp_worker_set_am_recv_handler(worker_->get(), &am);
    if (st != UCS_OK) return UcxError(st, "setting a message handler");
  }
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  params.sockaddr.addr = sockaddr.get();
  params.sockaddr.addrlen = sockaddr.length;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &OnError;
  params.err_handler.arg = this;
  ucs_status_t st = ucp_ep_create(worker_->get(), &params, &ep_);
  if (st != UCS_OK) return UcxError(st, "connecting to " + address);

  wire::Hello hello;
  hello.token = options_.token;
  QUIVER_ASSIGN_OR_RAISE(hello.worker_address, worker_->Address());
  std::string storage;
  QUIVER_ASSIGN_OR_RAISE(auto f, Call(wire::Kind::kHello, wire::Encode(hello),
                                      wire::Kind::kHelloReply, &storage));
  QUIVER_ASSIGN_OR_RAISE(hello_, wire::DecodeHelloReply(f.body));
  if (hello_.version != wire::kVersion) {
    return Status::IOError("transport server at ", address, " speaks version ",
                           hello_.version, ", this client ", wire::kVersion);
  }
  QUIVER_ASSIGN_OR_RAISE(data_ep_, worker_->ConnectTo(hello_.worker_address));
  st = ucp_ep_rkey_unpack(data_ep_, hello_.rkey.data(), &rkey_);
  if (st != UCS_OK) return UcxError(st, "unpacking the server's remote key");
  for (const auto& range : hello_.in_place) {
    ucp_rkey_h key = nullptr;
    st = ucp_ep_rkey_unpack(data_ep_, range.rkey.data(), &key);
    if (st != UCS_OK) return UcxError(st, "unpacking a remote key of the server");
    in_place_rkeys_.push_back(key);
  }
  switch (ModeFromEnvironment(options_.bodies)) {
    case BodyMode::kPacked:
      return Status::OK();
    case BodyMode::kAddresses:
      addresses_from_ = in_place_from_ = 0;
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
  // Reads of the pool and reads of memory served in place need not cost the
  // same: UCX allocated the pool (on one host, peers map it and copy), the
  // ranges in place are the owner's (its progress thread may have to answer
  // each read). Each decision times reads of the memory it is about; the
  // in-place one reads the start of the largest range.
  const wire::HelloReply::Range* in_place = nullptr;
  for (const auto& r : hello_.in_place) {
    if (in_place == nullptr || r.length > in_place->length) in_place = &r;
  }
  const ucp_rkey_h in_place_rkey =
      in_place == nullptr
          ? nullptr
          : RkeyOf(static_cast<size_t>(in_place - hello_.in_place.data()) + 1);
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
  std::vector<bool> read_wins, read_viable;
  for (uint64_t size : sizes) {
    double best_read = 1e30, best_send = 1e30, best_in_place = 1e30;
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
      if (in_place != nullptr && size <= in_place->length) {
        QUIVER_ASSIGN_OR_RAISE(double r, reads(size, in_place->address, in_place_rkey));
        best_in_place = std::min(best_in_place, r);
      }
      auto t0 = Clock::now();
      QUIVER_RETURN_NOT_OK(probes(size, [](int) { return Status::OK(); }));
      best_send = std::min(best_send, seconds_since(t0));
    }
    // A clear win only: below the margin the two are a coin toss on a busy
    // machine, and a read costs the server memory held until free_data.
    read_wins.push_back(best_read < 0.8 * best_send);
    // Where the server holds the bytes in place, the alternative to a read
    // of them is a copy into its pool, then the send or read from there:
    // reads in place win if they beat both (the copy timed here, as the
    // server would make it).
    double best_copy = 1e30;
    std::vector<uint8_t> copy(size);
    for (int round = 0; round < kRounds; ++round) {
      auto t0 = Clock::now();
      for (int j = 0; j < kInFlight; ++j) {
        std::memcpy(copy.data(), buffers[j].data(), size);
      }
      best_copy = std::min(best_copy, seconds_since(t0));
    }
    read_viable.push_back((in_place != nullptr ? best_in_place : best_read) <
                          best_copy + std::min(best_send, best_read));
  }
  for (size_t i = sizes.size(); i-- > 0;) {
    if (!read_wins[i]) break;
    addresses_from_ = sizes[i];
  }
  for (size_t i = sizes.size(); i-- > 0;) {
    if (!read_viable[i]) break;
    in_place_from_ = sizes[i];
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
uint64_t Client::in_place_from() const { return impl_->in_place_from_; }

Result<uint64_t> Client::InitScan(const std::string& sql, const ScanOptions& options) {
  wire::InitScan m;
  m.sql = sql;
  m.dataset = options.dataset;
  m.min_rows = options.min_rows;
  m.window_batches = options.window_batches;
  m.window_bytes = options.window_bytes;
  m.addresses_from = impl_->addresses_from_;
  m.in_place_from = impl_->in_place_from_;
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
  s.bodies_in_place = r.bodies_in_place;
  return s;
}

}  // namespace quiver::transport
