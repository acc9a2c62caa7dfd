// The server's progress thread: the listener, connections, control frames,
// want_data / free_data, and every send. Producers (server_scan.cc) hand
// it messages through each scan's outbox.
#include <openssl/crypto.h>
#include <sys/random.h>

#include <chrono>
#include <cstring>

#include "quiver/util/little_endian.h"
#include "transport/address.h"
#include "transport/server_internal.h"

namespace quiver::transport {

namespace dis = ipc::dissociated;

namespace {

constexpr size_t kFreeDataBytes = 64 * 1024;  // 8192 addresses per free_data
constexpr uint64_t kProbeBytes = 1 << 20;     // the connect-time probe area

uint64_t RandomTag() {
  uint64_t v = 0;
  while (getrandom(&v, sizeof(v), 0) != sizeof(v)) {
  }
  return v;
}

}  // namespace

// UCX calls these during ucp_worker_progress on the progress thread; they
// only queue what happened.
struct Callbacks {
  static void OnConnRequest(ucp_conn_request_h request, void* arg) {
    static_cast<Server::Impl*>(arg)->accepts_.push_back(request);
  }
  static void OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t) {
    static_cast<Server::Impl*>(arg)->failed_eps_.push_back(ep);
  }
  static ucs_status_t OnControl(void* arg, const void*, size_t, void* data, size_t length,
                                const ucp_am_recv_param_t* param) {
    auto* self = static_cast<Server::Impl*>(arg);
    ucp_ep_h ep =
        (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ? param->reply_ep : nullptr;
    if (ep == nullptr) return UCS_OK;  // no way to answer: not our client
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
        length > wire::kMaxSql + 8192) {
      self->inbox_.push_back({ep, std::nullopt});
      return UCS_OK;  // dropped: UCX releases a rendezvous we do not take
    }
    self->inbox_.push_back({ep, std::string(static_cast<const char*>(data), length)});
    return UCS_OK;
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;
uint16_t Server::port() const { return impl_->port(); }
ServerStats Server::stats() const { return impl_->stats(); }

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options, QueryRunner runner) {
  if (!runner) return Status::Invalid("transport server without a query runner");
  auto impl = std::make_unique<Impl>(std::move(options), std::move(runner));
  QUIVER_RETURN_NOT_OK(impl->Start());
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Status Server::Impl::Start() {
  QUIVER_ASSIGN_OR_RAISE(auto address, ResolveAddress(options_.listen, /*passive=*/true));
  QUIVER_ASSIGN_OR_RAISE(context_, UcxContext::Make(options_.ucx_transports));
  QUIVER_ASSIGN_OR_RAISE(worker_, UcxWorker::Make(context_));
  QUIVER_ASSIGN_OR_RAISE(
      pool_, BodyPool::Make(context_, std::max(options_.pool_size, 2 * kProbeBytes)));
  // The probe area: the first MiB, filled once, read by clients measuring
  // one-sided reads against tagged sends when they connect.
  QUIVER_ASSIGN_OR_RAISE(uint8_t * probe,
                         pool_->Allocate(kProbeBytes, [] { return true; }));
  for (uint64_t i = 0; i < kProbeBytes; ++i) probe[i] = static_cast<uint8_t>(i * 131 + 7);
  if (options_.in_place.size() > wire::kMaxInPlaceRanges) {
    return Status::Invalid("transport server: ", options_.in_place.size(),
                           " ranges served in place, over the limit of ",
                           wire::kMaxInPlaceRanges);
  }
  for (const auto& r : options_.in_place) {
    QUIVER_ASSIGN_OR_RAISE(
        auto m, UcxMemory::Map(context_, const_cast<void*>(r.address), r.length));
    in_place_.push_back(std::move(m));
  }

  ucp_am_handler_param_t am{};
  am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG;
  am.id = wire::kAmControl;
  am.cb = &Callbacks::OnControl;
  am.arg = this;
  ucs_status_t st = ucp_worker_set_am_recv_handler(worker_->get(), &am);
  if (st != UCS_OK) return UcxError(st, "setting the control message handler");

  ucp_listener_params_t params{};
  params.field_mask =
      UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr.addr = address.get();
  params.sockaddr.addrlen = address.length;
  params.conn_handler.cb = &Callbacks::OnConnRequest;
  params.conn_handler.arg = this;
  st = ucp_listener_create(worker_->get(), &params, &listener_);
  if (st != UCS_OK) return UcxError(st, "listening on " + options_.listen);
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  st = ucp_listener_query(listener_, &attr);
  if (st != UCS_OK) return UcxError(st, "querying the listener");
  port_ = PortOf(attr.sockaddr);
  thread_ = std::thread([this] { Loop(); });
  return Status::OK();
}

Server::Impl::~Impl() {
  stop_ = true;
  if (worker_) worker_->Wake();
  if (thread_.joinable()) thread_.join();
}

ServerStats Server::Impl::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  ServerStats s = stats_;
  s.pool_bytes_in_use = pool_ ? pool_->bytes_in_use() - kProbeBytes : 0;
  s.bodies_in_place = bodies_in_place_.load();
  return s;
}

void Server::Impl::UpdateStats() {
  ServerStats s;
  s.connections = connections_.size();
  s.scans = scans_.size() + ending_.size();
  s.sends = sends_.size();
  for (const auto& [id, scan] : scans_) {
    std::lock_guard<std::mutex> lock(scan->mu);
    s.bodies_in_flight += scan->in_flight;
  }
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_ = s;
}

void Server::Impl::Loop() {
  using Clock = std::chrono::steady_clock;
  auto last_busy = Clock::now();
  while (!stop_) {
    bool busy = worker_->Progress();
    for (ucp_conn_request_h r : std::exchange(accepts_, {})) Accept(r);
    for (ucp_ep_h ep : std::exchange(failed_eps_, {})) {
      auto it = by_ep_.find(ep);
      if (it != by_ep_.end()) {
        Connection* c = connections_[it->second].get();
        c->closing = "the client went away";
        c->peer_failed = true;
      }
    }
    busy |= HandleInbox();
    busy |= PollReceives();
    busy |= PumpScans();
    busy |= PollSends();
    busy |= Reap();
    UpdateStats();
    if (busy) {
      last_busy = Clock::now();
    } else if (Clock::now() - last_busy > std::chrono::microseconds(50)) {
      worker_->Sleep(50);
      last_busy = Clock::now();
    }
  }
  // Shutting down: every connection and scan goes, then what they held.
  for (auto& [id, c] : connections_) c->closing = "the server is stopping";
  Reap();
  for (auto& [id, scan] : scans_) scan->cancelled = true;
  while (!scans_.empty()) EndScan(scans_.begin()->second.get());
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while ((!ending_.empty() || !sends_.empty() || !closing_eps_.empty()) &&
         Clock::now() < deadline) {
    worker_->Progress();
    PollSends();
    Reap();
  }
  for (auto& s : ending_) {
    if (s->producer.joinable()) s->producer.join();
  }
  ending_.clear();
  sends_.clear();
  closing_eps_.clear();
  if (listener_ != nullptr) ucp_listener_destroy(listener_);
}

void Server::Impl::Accept(ucp_conn_request_h request) {
  if (connections_.size() >= options_.max_connections) {
    ucp_listener_reject(listener_, request);
    return;
  }
  auto c = std::make_unique<Connection>();
  c->id = next_connection_++;
  c->accepted_at = std::chrono::steady_clock::now();
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.conn_request = request;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &Callbacks::OnEndpointError;
  params.err_handler.arg = this;
  if (ucp_ep_create(worker_->get(), &params, &c->ep) != UCS_OK) return;
  by_ep_[c->ep] = c->id;
  connections_[c->id] = std::move(c);
}

bool Server::Impl::HandleInbox() {
  if (inbox_.empty()) return false;
  for (Inbound& in : std::exchange(inbox_, {})) {
    auto it = by_ep_.find(in.ep);
    if (it == by_ep_.end()) continue;
    Connection* c = connections_[it->second].get();
    if (!c->closing.empty()) continue;
    if (!in.frame) {
      Close(c, "sent a control message too large to be one");
      continue;
    }
    HandleFrame(c, *in.frame);
  }
  return true;
}

void Server::Impl::Answer(Connection* c, wire::Kind kind, uint64_t request,
                          std::string body) {
  auto s = std::make_unique<PendingSend>();
  s->bytes = wire::EncodeFrame(kind, request, body);
  s->connection = c->id;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_AM_SEND_FLAG_EAGER;
  s->request =
      UcxRequest(worker_->get(), ucp_am_send_nbx(c->ep, wire::kAmControl, nullptr, 0,
                                                 s->bytes.data(), s->bytes.size(), &p));
  sends_.push_back(std::move(s));
}

void Server::Impl::AnswerError(Connection* c, uint64_t request, uint64_t scan,
                               const Status& st) {
  wire::Error e;
  e.scan = scan;
  e.message = st.ToString().substr(0, wire::kMaxMessage);
  Answer(c, wire::Kind::kError, request, wire::Encode(e));
}

void Server::Impl::HandleFrame(Connection* c, std::string_view bytes) {
  auto frame = wire::DecodeFrame(bytes);
  if (!frame.ok()) {
    AnswerError(c, 0, 0, frame.status());
    Close(c, frame.status().ToString());
    return;
  }
  const wire::Frame& f = *frame;
  if (!c->authenticated && f.kind != wire::Kind::kHello) {
    AnswerError(
        c, f.request, 0,
        Status::Unauthenticated("the first message must be Hello with the token"));
    Close(c, "spoke before Hello");
    return;
  }
  // A malformed message answers its request with the decoder's words and
  // ends the connection: a client that sends one is broken or hostile.
  auto refuse = [&](const Status& st) {
    AnswerError(c, f.request, 0, st);
    Close(c, st.ToString());
  };
  switch (f.kind) {
    case wire::Kind::kHello: {
      auto hello = wire::DecodeHello(f.body);
      if (!hello.ok()) return refuse(hello.status());
      if (c->authenticated) return refuse(Status::Invalid("Hello sent twice"));
      if (hello->version != wire::kVersion) {
        return refuse(Status::Invalid("client speaks transport version ", hello->version,
                                      ", this server ", wire::kVersion));
      }
      if (hello->token.size() != options_.token.size() ||
          CRYPTO_memcmp(hello->token.data(), options_.token.data(),
                        hello->token.size()) != 0) {
        return refuse(Status::Unauthenticated("wrong token"));
      }
      auto data_ep = worker_->ConnectTo(hello->worker_address);
      if (!data_ep.ok()) return refuse(data_ep.status());
      c->data_ep = *data_ep;
      by_ep_[c->data_ep] = c->id;
      auto own_address = worker_->Address();
      if (!own_address.ok()) return refuse(own_address.status());
      c->authenticated = true;
      c->want_tag = RandomTag();
      c->free_tag = RandomTag();
      while (c->free_tag == c->want_tag) c->free_tag = RandomTag();
      PostReceive(c, /*want=*/true);
      PostReceive(c, /*want=*/false);
      wire::HelloReply r;
      r.want_data = c->want_tag;
      r.free_data = c->free_tag;
      r.pool_address = pool_->registration().address();
      r.pool_length = pool_->registration().length();
      r.probe_address = r.pool_address;
      r.probe_length = kProbeBytes;
      r.rkey = pool_->registration().packed_rkey();
      r.worker_address = std::move(*own_address);
      for (const auto& m : in_place_) {
        r.in_place.push_back({m->address(), m->length(), m->packed_rkey()});
      }
      return Answer(c, wire::Kind::kHelloReply, f.request, wire::Encode(r));
    }
    case wire::Kind::kInitScan: {
      auto init = wire::DecodeInitScan(f.body);
      if (!init.ok()) return refuse(init.status());
      if (c->scans.size() >= options_.max_scans_per_connection) {
        return AnswerError(c, f.request, 0,
                           Status::CapacityError("this connection already has ",
                                                 c->scans.size(), " scans open (limit ",
                                                 options_.max_scans_per_connection, ")"));
      }
      auto scan = std::make_unique<Scan>();
      scan->id = next_scan_++;
      scan->connection = c->id;
      scan->init_request = f.request;
      scan->request = std::move(*init);
      Scan* s = scan.get();
      c->scans.insert(s->id);
      scans_[s->id] = std::move(scan);
      s->producer = std::thread([this, s] { Produce(s); });
      return;
    }
    case wire::Kind::kFinalize: {
      auto id = wire::DecodeScanId(f.body);
      if (!id.ok()) return refuse(id.status());
      if (c->scans.count(id->scan) == 0) {
        return AnswerError(c, f.request, id->scan,
                           Status::NotFound("no scan ", id->scan, " on this connection"));
      }
      Scan* s = scans_[id->scan].get();
      const wire::Finalized done{s->id, s->bodies_sent};
      EndScan(s);
      return Answer(c, wire::Kind::kFinalized, f.request, wire::Encode(done));
    }
    case wire::Kind::kCredit: {
      auto credit = wire::DecodeCredit(f.body);
      if (!credit.ok()) return refuse(credit.status());
      if (c->scans.count(credit->scan) == 0) return;  // finalized meanwhile
      Scan* s = scans_[credit->scan].get();
      uint64_t bytes = 0;
      uint32_t n = 0;
      {
        std::lock_guard<std::mutex> lock(s->mu);
        for (; n < credit->bodies && !s->packed_sizes.empty(); ++n) {
          bytes += s->packed_sizes.front();
          s->packed_sizes.pop_front();
        }
      }
      if (n != credit->bodies) {
        return refuse(Status::Invalid("Credit for ", credit->bodies, " bodies of scan ",
                                      credit->scan, " but only ", n, " were sent"));
      }
      s->Release(n, bytes);
      return;
    }
    case wire::Kind::kStats: {
      const ServerStats st = stats();
      wire::StatsReply r;
      r.connections = st.connections;
      r.scans = st.scans;
      r.pool_bytes_in_use = st.pool_bytes_in_use;
      r.bodies_in_flight = st.bodies_in_flight;
      r.sends = st.sends;
      r.bodies_in_place = st.bodies_in_place;
      return Answer(c, wire::Kind::kStatsReply, f.request, wire::Encode(r));
    }
    case wire::Kind::kProbe: {
      auto probe = wire::DecodeProbe(f.body);
      if (!probe.ok()) return refuse(probe.status());
      return OnProbe(c, *probe);
    }
    default:
      return refuse(Status::Invalid("a client may not send ", wire::KindName(f.kind)));
  }
}

void Server::Impl::OnProbe(Connection* c, const wire::Probe& probe) {
  if (probe.length > kProbeBytes) {
    AnswerError(
        c, 0, 0,
        Status::Invalid("probe of ", probe.length, " bytes exceeds ", kProbeBytes));
    return;
  }
  SendTagged(c, probe.tag,
             std::string_view(reinterpret_cast<const char*>(pool_->base()), probe.length),
             {}, nullptr);
}

void Server::Impl::PostReceive(Connection* c, bool want) {
  if (want) {
    c->want_buf.resize(64);
    c->want_recv = TagRecv(worker_->get(), c->want_buf.data(), c->want_buf.size(),
                           c->want_tag, ~uint64_t{0});
  } else {
    c->free_buf.resize(kFreeDataBytes);
    c->free_recv = TagRecv(worker_->get(), c->free_buf.data(), c->free_buf.size(),
                           c->free_tag, ~uint64_t{0});
  }
}

bool Server::Impl::PollReceives() {
  bool busy = false;
  for (auto& [id, cp] : connections_) {
    Connection* c = cp.get();
    if (!c->authenticated || !c->closing.empty()) continue;
    for (bool want : {true, false}) {
      UcxRequest& r = want ? c->want_recv : c->free_recv;
      const ucs_status_t st = r.Check();
      if (st == UCS_INPROGRESS) continue;
      busy = true;
      if (st != UCS_OK) {
        Close(c, std::string(want ? "want_data" : "free_data") +
                     " could not be received: " + ucs_status_string(st));
        break;
      }
      const auto& buf = want ? c->want_buf : c->free_buf;
      std::string_view body(reinterpret_cast<const char*>(buf.data()), r.info().length);
      if (want) {
        OnWantData(c, body);
      } else {
        OnFreeData(c, body);
      }
      if (!c->closing.empty()) break;
      PostReceive(c, want);
    }
  }
  return busy;
}

void Server::Impl::OnWantData(Connection* c, std::string_view body) {
  if (body.size() != 8) {
    AnswerError(c, 0, 0,
                Status::Invalid("want_data of ", body.size(),
                                " bytes: its body must be the 8-byte scan id"));
    return Close(c, "malformed want_data");
  }
  const uint64_t id = util::LoadLE<uint64_t>(body, 0);
  if (c->scans.count(id) == 0) {
    return AnswerError(c, 0, id,
                       Status::NotFound("want_data for scan ", id,
                                        ", which this connection does not have"));
  }
  Scan* s = scans_[id].get();
  if (s->started) {
    return AnswerError(c, 0, id, Status::Invalid("want_data for scan ", id, " twice"));
  }
  s->started = true;
}

void Server::Impl::OnFreeData(Connection* c, std::string_view body) {
  auto addresses = dis::DecodeFreeData(body);
  if (!addresses.ok()) {
    AnswerError(c, 0, 0, addresses.status());
    return Close(c, addresses.status().ToString());
  }
  const uint64_t base = pool_->registration().address();
  for (uint64_t a : *addresses) {
    auto it = c->addresses.find(a);
    if (it == c->addresses.end()) {
      // An address of this server's memory no longer held is a late free
      // of a scan already finalized (free_data and Finalize travel apart
      // and may cross): nothing to do. Anything else was never given.
      if (a >= base && a - base < pool_->capacity()) continue;
      if (InPlace(a, 1)) continue;
      AnswerError(c, 0, 0,
                  Status::Invalid("free_data names address 0x", std::hex, a,
                                  ", which is not in this server's memory"));
      return Close(c, "free_data of an address it was not given");
    }
    std::shared_ptr<AddressedBody> body_rec = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) c->addresses.erase(it);
    if (--body_rec->remaining == 0) {
      auto s = scans_.find(body_rec->scan);
      if (s != scans_.end()) s->second->Release(1, body_rec->bytes);
    }
  }
}

void Server::Impl::SendTagged(Connection* c, uint64_t tag, std::string_view bytes,
                              std::string owned, std::shared_ptr<Block> block) {
  auto s = std::make_unique<PendingSend>();
  s->bytes = std::move(owned);
  s->block = std::move(block);
  s->connection = c->id;
  s->on_data_ep = true;
  const void* data = s->bytes.empty() ? bytes.data() : s->bytes.data();
  const size_t size = s->bytes.empty() ? bytes.size() : s->bytes.size();
  ucp_request_param_t p{};
  s->request =
      UcxRequest(worker_->get(), ucp_tag_send_nbx(c->data_ep, data, size, tag, &p));
  sends_.push_back(std::move(s));
}

void Server::Impl::SendMetadata(Connection* c, uint64_t scan, std::string bytes) {
  auto s = std::make_unique<PendingSend>();
  s->header = scan;
  s->bytes = std::move(bytes);
  s->connection = c->id;
  s->on_data_ep = true;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_AM_SEND_FLAG_EAGER;
  s->request =
      UcxRequest(worker_->get(), ucp_am_send_nbx(c->data_ep, wire::kAmMetadata,
                                                 &s->header, sizeof(s->header),
                                                 s->bytes.data(), s->bytes.size(), &p));
  sends_.push_back(std::move(s));
}

bool Server::Impl::PumpScans() {
  bool busy = false;
  // Scans whose init failed: the client got no id to finalize them with.
  std::vector<Scan*> failed;
  for (auto& [id, sp] : scans_) {
    Scan* s = sp.get();
    Connection* c = connections_.at(s->connection).get();
    if (!c->closing.empty()) continue;
    std::deque<Message> ready;
    std::optional<Status> ready_status;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      if (!s->ready_reported && s->ready) ready_status = *s->ready;
      if (s->started) ready.swap(s->outbox);
    }
    if (ready_status) {
      s->ready_reported = true;
      busy = true;
      if (ready_status->ok()) {
        Answer(c, wire::Kind::kScanReply, s->init_request,
               wire::Encode(wire::ScanId{s->id}));
      } else {
        AnswerError(c, s->init_request, 0, *ready_status);
        failed.push_back(s);
        continue;
      }
    }
    for (Message& m : ready) {
      busy = true;
      if (m.is_error) {
        AnswerError(c, 0, s->id, Status::IOError(m.error));
        continue;
      }
      SendMetadata(c, s->id, std::move(m.out.metadata));
      if (!m.out.tagged) continue;
      ++s->bodies_sent;
      auto tag = dis::DecodeTag(m.out.tag);
      const std::string_view body = m.out.body_bytes();
      if (tag.ok() && tag->type == dis::BodyType::kAddresses) {
        auto ranges = dis::DecodeAddressList(body);
        auto rec = std::make_shared<AddressedBody>();
        rec->scan = s->id;
        rec->block = m.block;
        rec->bytes = WindowBytes(m.out);
        for (const auto& r : ranges.ValueOrDie()) {
          if (r.length == 0) continue;
          c->addresses[r.address].push_back(rec);
          ++rec->remaining;
        }
        if (rec->remaining == 0) s->Release(1, rec->bytes);
        SendTagged(c, m.out.tag, {}, std::move(m.out.body), nullptr);
      } else {
        {
          std::lock_guard<std::mutex> lock(s->mu);
          s->packed_sizes.push_back(WindowBytes(m.out));
        }
        if (m.out.in_place.data() != nullptr) {
          SendTagged(c, m.out.tag, body, {}, m.block);
        } else {
          SendTagged(c, m.out.tag, {}, std::move(m.out.body), nullptr);
        }
      }
    }
  }
  for (Scan* s : failed) EndScan(s);
  return busy;
}

bool Server::Impl::PollSends() {
  bool busy = false;
  const auto now = std::chrono::steady_clock::now();
  for (auto it = sends_.begin(); it != sends_.end();) {
    const ucs_status_t st = (*it)->request.Check();
    if (st == UCS_INPROGRESS && (*it)->on_data_ep &&
        connections_.count((*it)->connection) == 0) {
      // The data endpoint was closed by force (it has no error handling:
      // UCX cannot cancel what is in flight on it) and a body sent by
      // rendezvous to a dead client never completes. No one can read it
      // any more: its block goes back to the pool now (the pool stays
      // mapped, so a late read by UCX is harmless), the request and its
      // bytes after a grace period.
      PendingSend& s = **it;
      s.block.reset();
      if (!s.orphaned_since) s.orphaned_since = now;
      if (now - *s.orphaned_since > std::chrono::seconds(2)) {
        it = sends_.erase(it);
        continue;
      }
    }
    if (st == UCS_INPROGRESS) {
      ++it;
      continue;
    }
    busy = true;
    if (st != UCS_OK) {
      auto c = connections_.find((*it)->connection);
      if (c != connections_.end() && c->second->closing.empty()) {
        c->second->closing = std::string("a send failed: ") + ucs_status_string(st);
      }
    }
    it = sends_.erase(it);
  }
  return busy;
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
  const auto now = std::chrono::steady_clock::now();
  for (auto it = connections_.begin(); it != connections_.end();) {
    Connection* c = it->second.get();
    // A connection slot is not for keeping: Hello within the deadline.
    if (c->closing.empty() && !c->authenticated &&
        now - c->accepted_at > std::chrono::milliseconds(options_.hello_timeout_ms)) {
      AnswerError(
          c, 0, 0,
          Status::Unauthenticated("no Hello within ", options_.hello_timeout_ms, " ms"));
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
    // Let the last answers (the error that says why) reach the client,
    // for a second at most, before the endpoints go.
    bool sending = false;
    for (auto& s : sends_) {
      sending =
          sending || (s->connection == c->id && s->request.Check() == UCS_INPROGRESS);
    }
    if (sending && now - c->closing_since < std::chrono::seconds(1) && !stop_) {
      ++it;
      continue;
    }
    // A live client gets what was sent before the close (the error saying
    // why): a flushing close. A dead one: force.
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    // The data endpoint always by force: what is still in flight on it
    // is for a scan that has ended, and without error handling UCX could
    // not flush it to a dead client.
    for (ucp_ep_h ep : {c->ep, c->data_ep}) {
      if (ep == nullptr) continue;
      p.flags = c->peer_failed || stop_ || ep == c->data_ep ? UCP_EP_CLOSE_FLAG_FORCE : 0;
      closing_eps_.emplace_back(worker_->get(), ucp_ep_close_nbx(ep, &p));
      by_ep_.erase(ep);
    }
    it = connections_.erase(it);
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
