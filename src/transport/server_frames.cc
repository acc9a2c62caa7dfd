// The server's progress thread, continued: a connection's control frames,
// want_data / free_data, and every send, over UCX or on the TLS stream.
// Producers (server_scan.cc) hand it messages through each scan's outbox.
#include <sys/random.h>

#include <cstring>

#include "quiver/util/little_endian.h"
#include "transport/server_internal.h"

namespace quiver::transport {

namespace dis = ipc::dissociated;

namespace {

constexpr size_t kFreeDataBytes = 64 * 1024;  // 8192 addresses per free_data

uint64_t RandomTag() {
  uint64_t v = 0;
  while (getrandom(&v, sizeof(v), 0) != sizeof(v)) {
  }
  return v;
}

}  // namespace

void Server::Impl::Answer(Connection* c, wire::Kind kind, uint64_t request,
                          std::string body) {
  c->tls->Queue(static_cast<uint8_t>(kind), request, body);
}

void Server::Impl::AnswerError(Connection* c, uint64_t request, uint64_t scan,
                               const Status& st) {
  wire::Error e;
  e.scan = scan;
  e.message = st.ToString().substr(0, wire::kMaxMessage);
  Answer(c, wire::Kind::kError, request, wire::Encode(e));
}

// Hello: the data path. Over UCX if this server has UCX and reaches the
// client's worker (a process of this host); else on the stream. Either
// way the client says which in DataPath before anything else.
void Server::Impl::OnHello(Connection* c, const wire::Frame& f) {
  auto hello = wire::DecodeHello(f.body);
  Status st = hello.status();
  if (st.ok() && hello->version != wire::kVersion) {
    st = Status::Invalid("client speaks transport version ", hello->version,
                         ", this server ", wire::kVersion);
  }
  if (!st.ok()) {
    AnswerError(c, f.request, 0, st);
    return Close(c, st.ToString());
  }
  c->hello = true;
  wire::HelloReply r;
  if (worker_ != nullptr && !hello->worker_address.empty()) {
    auto data_ep = worker_->ConnectTo(hello->worker_address);
    auto own_address = worker_->Address();
    if (data_ep.ok() && own_address.ok()) {
      c->data_ep = *data_ep;
      c->want_tag = RandomTag();
      c->free_tag = RandomTag();
      while (c->free_tag == c->want_tag) c->free_tag = RandomTag();
      r.want_data = c->want_tag;
      r.free_data = c->free_tag;
      r.pool_address = pool_->registration().address();
      r.pool_length = pool_->registration().length();
      r.probe_address = r.pool_address;
      r.probe_length = kProbeBytes;
      r.rkey = pool_->registration().packed_rkey();
      r.worker_address = std::move(*own_address);
    } else if (data_ep.ok()) {
      CloseByForce(worker_.get(), {*data_ep});
    }
  }
  Answer(c, wire::Kind::kHelloReply, f.request, wire::Encode(r));
}

void Server::Impl::OnDataPath(Connection* c, const wire::Frame& f) {
  auto path = wire::DecodeDataPath(f.body);
  Status st = path.status();
  if (st.ok() && path->ucx == 1 && c->data_ep == nullptr) {
    st = Status::Invalid("DataPath: UCX, but this server offered none");
  }
  if (!st.ok()) {
    AnswerError(c, 0, 0, st);
    return Close(c, st.ToString());
  }
  c->path_set = true;
  c->ucx = path->ucx == 1;
  if (c->ucx) {
    PostReceive(c, /*want=*/true);
    PostReceive(c, /*want=*/false);
  } else if (c->data_ep != nullptr) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    closing_eps_.emplace_back(worker_->get(), ucp_ep_close_nbx(c->data_ep, &p));
    c->data_ep = nullptr;
  }
}

void Server::Impl::HandleFrame(Connection* c, const wire::Frame& f) {
  // A malformed message answers its request with the decoder's words and
  // ends the connection: a client that sends one is broken or hostile.
  auto refuse = [&](const Status& st) {
    AnswerError(c, f.request, 0, st);
    Close(c, st.ToString());
  };
  if (!c->hello && f.kind != wire::Kind::kHello) {
    return refuse(Status::Invalid("the first message must be Hello"));
  }
  if (c->hello && !c->path_set && f.kind != wire::Kind::kDataPath) {
    return refuse(Status::Invalid(f.kind == wire::Kind::kHello ? "Hello sent twice"
                                                               : "DataPath must follow "
                                                                 "HelloReply"));
  }
  switch (f.kind) {
    case wire::Kind::kHello:
      return OnHello(c, f);
    case wire::Kind::kDataPath:
      if (c->path_set) return refuse(Status::Invalid("DataPath sent twice"));
      return OnDataPath(c, f);
    case wire::Kind::kInitScan: {
      auto init = wire::DecodeInitScan(f.body);
      if (!init.ok()) return refuse(init.status());
      if (c->scans.size() >= options_.max_scans_per_connection) {
        return AnswerError(c, f.request, 0,
                           Status::CapacityError("this connection already has ",
                                                 c->scans.size(), " scans open (limit ",
                                                 options_.max_scans_per_connection, ")"));
      }
      // Addresses only where the client can read them: its pool mapping.
      if (!c->ucx) init->addresses_from = UINT64_MAX;
      auto scan = std::make_unique<Scan>();
      scan->id = next_scan_++;
      scan->connection = c->id;
      scan->owner = c->owner;
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
      return Answer(c, wire::Kind::kStatsReply, f.request, wire::Encode(r));
    }
    case wire::Kind::kProbe: {
      auto probe = wire::DecodeProbe(f.body);
      if (!probe.ok()) return refuse(probe.status());
      if (!c->ucx) return refuse(Status::Invalid("Probe on a connection without UCX"));
      return OnProbe(c, *probe);
    }
    case wire::Kind::kWantData: {
      if (c->ucx) return refuse(Status::Invalid("WantData frame on a UCX connection"));
      std::string id;
      util::AppendLE(&id, f.request);
      return OnWantData(c, id);
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
    if (!c->ucx || !c->closing.empty()) continue;
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
  const uint64_t base = reinterpret_cast<uint64_t>(pool_->base());
  for (uint64_t a : *addresses) {
    auto it = c->addresses.find(a);
    if (it == c->addresses.end()) {
      // An address of this server's memory no longer held is a late free
      // of a scan already finalized (free_data and Finalize travel apart
      // and may cross): nothing to do. Anything else was never given.
      if (a >= base && a - base < pool_->capacity()) continue;
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
  if (!c->ucx) {
    // On the stream: written from where the body is, kept alive meanwhile.
    if (!owned.empty()) {
      auto keep = std::make_shared<std::string>(std::move(owned));
      const std::string_view view(*keep);
      return c->tls->Queue(static_cast<uint8_t>(wire::Kind::kBody), tag, view,
                           std::move(keep));
    }
    if (block == nullptr) {
      return c->tls->Queue(static_cast<uint8_t>(wire::Kind::kBody), tag, bytes);
    }
    return c->tls->Queue(static_cast<uint8_t>(wire::Kind::kBody), tag, bytes,
                         std::move(block));
  }
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
  if (!c->ucx) {
    return c->tls->Queue(static_cast<uint8_t>(wire::Kind::kMetadata), scan, bytes);
  }
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

}  // namespace quiver::transport
