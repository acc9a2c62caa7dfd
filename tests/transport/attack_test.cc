// A peer that holds the key but speaks the protocol by hand and sends what
// no Client would: every malformed or forged message gets an error naming
// what is wrong, the offender loses its connection where the protocol says
// so, and the server goes on serving everyone else.
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <deque>
#include <map>
#include <thread>

#include "common/eventually.h"
#include "common/status_macros.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/ipc/dissociated.h"
#include "quiver/transport/client.h"
#include "quiver/transport/server.h"
#include "quiver/util/little_endian.h"
#include "transport/tls.h"
#include "transport/ucx.h"
#include "transport/wire.h"

namespace quiver::transport {
namespace {

using ::quiver::testing::Eventually;

std::shared_ptr<RecordBatchReader> SomeRows() {
  Int64Builder b;
  for (int64_t i = 0; i < 100000; ++i) (void)b.Append(i);
  auto array = b.Finish().ValueOrDie();
  auto batch = RecordBatch::FromArrays({"x"}, {array}).ValueOrDie();
  return RecordBatchReader::FromBatches(batch->schema(), {batch});
}

std::unique_ptr<Server> StartServer() {
  ServerOptions o;
  o.hello_timeout_ms = 1000;
  o.listen = "127.0.0.1:0";
  o.token = "secret";
  o.pool_size = 16 << 20;
  o.max_scans_per_connection = 4;
  return Server::Start(
             o,
             [](const std::string&, const std::string&)
                 -> Result<std::shared_ptr<RecordBatchReader>> { return SomeRows(); })
      .ValueOrDie();
}

// A peer of the server with the token's key: frames written by hand on the
// TLS stream, and (after a Hello with its worker address) tagged messages
// on a UCX endpoint to the server's worker.
class RawPeer {
 public:
  explicit RawPeer(uint16_t port) {
    context_ = UcxContext::ForPeers("", /*rma=*/true).ValueOrDie();
    worker_ = UcxWorker::Make(context_).ValueOrDie();
    auto tls = PskContext::Client().ValueOrDie();
    const int fd = ConnectTcp("127.0.0.1:" + std::to_string(port), 5000).ValueOrDie();
    tls_ = TlsStream::Make(tls, fd, /*server=*/false, TokenPsk("secret")).ValueOrDie();
    for (int i = 0; i < 500; ++i) {
      auto done = tls_->Handshake();
      EXPECT_TRUE(done.ok()) << done.status().ToString();
      if (!done.ok() || *done) break;
      WaitReadable(10);
    }
  }
  ~RawPeer() {
    if (rkey_ != nullptr) ucp_rkey_destroy(rkey_);
    CloseByForce(worker_.get(), {data_ep_});
  }

  // Sends a frame; returns the answer to `request` (or an unsolicited
  // error), "" if none came within 5 s.
  std::string Send(wire::Kind kind, uint64_t request, std::string_view body) {
    Post(kind, request, body);
    return Await(request);
  }
  void Post(wire::Kind kind, uint64_t request, std::string_view body) {
    tls_->Queue(static_cast<uint8_t>(kind), request, body);
    (void)tls_->Flush();
  }
  void PostRaw(std::string bytes) {
    tls_->QueueRaw(std::move(bytes));
    (void)tls_->Flush();
  }
  std::string Await(uint64_t request) {
    Pump([&] { return answers_.count(request) != 0 || answers_.count(0) != 0; });
    auto it = answers_.count(request) ? answers_.find(request) : answers_.find(0);
    if (it == answers_.end()) return "";
    std::string a = it->second;
    answers_.erase(it);
    return a;
  }
  // The message of an Error frame, or "" if `frame` is not one.
  static std::string ErrorOf(const std::string& frame) {
    auto f = wire::DecodeFrame(frame);
    if (!f.ok() || f->kind != wire::Kind::kError) return "";
    auto e = wire::DecodeError(f->body);
    return e.ok() ? e->message : "";
  }
  // Hello with this peer's worker address, and the data path over UCX.
  wire::HelloReply Hello() {
    wire::Hello h;
    h.worker_address = worker_->Address().ValueOrDie();
    const std::string a = Send(wire::Kind::kHello, 1, wire::Encode(h));
    auto f = wire::DecodeFrame(a).ValueOrDie();
    EXPECT_EQ(f.kind, wire::Kind::kHelloReply) << ErrorOf(a);
    auto r = wire::DecodeHelloReply(f.body).ValueOrDie();
    EXPECT_FALSE(r.worker_address.empty());
    data_ep_ = worker_->ConnectTo(r.worker_address).ValueOrDie();
    EXPECT_EQ(ucp_ep_rkey_unpack(data_ep_, r.rkey.data(), &rkey_), UCS_OK);
    Post(wire::Kind::kDataPath, 0, wire::Encode(wire::DataPath{1}));
    return r;
  }
  void SendTagged(uint64_t tag, std::string bytes) {
    bytes_.push_back(std::move(bytes));
    ucp_request_param_t p{};
    sends_.emplace_back(worker_->get(), ucp_tag_send_nbx(data_ep_, bytes_.back().data(),
                                                         bytes_.back().size(), tag, &p));
  }
  // A one-sided read of `length` bytes at `address` of the server with
  // `rkey`: the bytes, or "" if it failed or did not finish within 2 s.
  std::string Get(uint64_t address, size_t length, ucp_rkey_h rkey) {
    std::string out(length, '\0');
    ucp_request_param_t p{};
    UcxRequest get(worker_->get(),
                   ucp_get_nbx(data_ep_, out.data(), length, address, rkey, &p));
    return WaitFor(worker_.get(), &get, 2000, "a read").ok() ? out : "";
  }
  ucp_rkey_h pool_key() const { return rkey_; }
  ucp_context_h context() const { return context_->get(); }
  ucp_ep_h data_ep() const { return data_ep_; }
  bool WaitClosed() {
    Pump([&] { return closed_; });
    return closed_;
  }

 private:
  void Pump(const std::function<bool()>& done) {
    TlsStream::Sink sink;
    sink.max_frame = 1 << 20;
    sink.frame = [&](uint8_t kind, uint64_t word, std::string_view body,
                     std::shared_ptr<Buffer>) {
      answers_[word] = wire::EncodeFrame(static_cast<wire::Kind>(kind), word, body);
      return Status::OK();
    };
    for (int i = 0; i < 500 && !done(); ++i) {
      worker_->Progress();
      if (!closed_ && !tls_->Read(sink).ok()) closed_ = true;
      if (!done()) WaitReadable(10);
    }
  }
  // Waits until the server sends something (or `ms` pass: UCX's side is
  // progressed by the caller between waits).
  void WaitReadable(int ms) {
    pollfd p{tls_->fd(), POLLIN, 0};
    (void)poll(&p, 1, ms);
  }
  std::shared_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;
  std::unique_ptr<TlsStream> tls_;
  ucp_ep_h data_ep_ = nullptr;
  ucp_rkey_h rkey_ = nullptr;
  bool closed_ = false;
  std::map<uint64_t, std::string> answers_;
  std::deque<std::string> bytes_;
  std::deque<UcxRequest> sends_;
};

// The server still answers an honest client in full.
void ExpectServing(const Server& server) {
  ClientOptions o;
  o.token = "secret";
  o.bodies = BodyMode::kAddresses;
  ASSERT_OK_AND_ASSIGN(auto client,
                       Client::Connect("127.0.0.1:" + std::to_string(server.port()), o));
  ASSERT_OK_AND_ASSIGN(uint64_t scan, client->InitScan("x"));
  ASSERT_OK_AND_ASSIGN(auto reader, client->Iterate(scan));
  ASSERT_OK_AND_ASSIGN(auto batches, reader->ReadAll());
  int64_t rows = 0;
  for (const auto& b : batches) rows += b->num_rows();
  EXPECT_EQ(rows, 100000);
  ASSERT_OK(client->Finalize(scan));
}

struct Case {
  const char* name;
  std::string raw;  // bytes as they are, inside TLS
  const char* says;
};

std::string RawFrame(uint32_t length, wire::Kind kind, uint64_t word,
                     std::string_view body) {
  std::string out;
  util::AppendLE(&out, length);
  util::AppendLE(&out, static_cast<uint8_t>(kind));
  util::AppendLE(&out, word);
  out.append(body);
  return out;
}
std::string Framed(wire::Kind kind, uint64_t word, std::string_view body) {
  return RawFrame(static_cast<uint32_t>(9 + body.size()), kind, word, body);
}

TEST(TransportAttack, MalformedControlFramesAreRefusedByName) {
  auto server = StartServer();
  std::string hello_bad_length;
  util::AppendLE<uint32_t>(&hello_bad_length, wire::kVersion);
  util::AppendLE<uint32_t>(&hello_bad_length, 1u << 30);  // an address of 1 GiB
  wire::Hello old;
  old.version = 99;
  const std::vector<Case> cases = {
      {"short", RawFrame(2, wire::Kind::kHello, 7, {}), "shorter than its header"},
      {"oversized", RawFrame(64 << 20, wire::Kind::kHello, 7, {}),
       "exceeds the limit of"},
      {"unknown kind", Framed(static_cast<wire::Kind>(99), 7, {}), "unknown kind 99"},
      {"before hello", Framed(wire::Kind::kInitScan, 7, {}),
       "first message must be Hello"},
      {"huge address", Framed(wire::Kind::kHello, 7, hello_bad_length),
       "exceeds the limit"},
      {"old version", Framed(wire::Kind::kHello, 7, wire::Encode(old)),
       "speaks transport version 99"},
      {"trailing bytes",
       Framed(wire::Kind::kHello, 7, wire::Encode(wire::Hello{}) + "xx"),
       "bytes after its last field"},
      {"no data path",
       Framed(wire::Kind::kHello, 1, wire::Encode(wire::Hello{})) +
           Framed(wire::Kind::kInitScan, 7, {}),
       "DataPath must follow HelloReply"},
      {"a server's frame",
       Framed(wire::Kind::kHello, 1, wire::Encode(wire::Hello{})) +
           Framed(wire::Kind::kDataPath, 0, wire::Encode(wire::DataPath{0})) +
           Framed(wire::Kind::kBody, 7, "x"),
       "a client may not send Body"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RawPeer peer(server->port());
    peer.PostRaw(c.raw);
    const std::string answer = RawPeer::ErrorOf(peer.Await(7));
    EXPECT_NE(answer.find(c.says), std::string::npos) << answer;
    EXPECT_TRUE(peer.WaitClosed());
  }
  ExpectServing(*server);
  EXPECT_EQ(server->stats().pool_bytes_in_use, 0u);
}

TEST(TransportAttack, AConnectionThatNeverSaysHelloLosesItsSlot) {
  auto server = StartServer();
  RawPeer idle(server->port());
  const std::string a = idle.Await(0);  // nothing sent: the server speaks first
  EXPECT_NE(RawPeer::ErrorOf(a).find("no Hello and DataPath within 1000 ms"),
            std::string::npos)
      << RawPeer::ErrorOf(a);
  EXPECT_TRUE(idle.WaitClosed());
  EXPECT_TRUE(Eventually([&] { return server->stats().connections == 0; }));
  EXPECT_EQ(server->stats().connections, 0u);
  ExpectServing(*server);
}

TEST(TransportAttack, ForgedIdsAddressesAndCreditsAreRefused) {
  auto server = StartServer();
  {
    RawPeer peer(server->port());
    auto hello = peer.Hello();
    // A finalize and a credit for scans that are not this connection's.
    std::string a =
        peer.Send(wire::Kind::kFinalize, 2, wire::Encode(wire::ScanId{12345}));
    EXPECT_NE(RawPeer::ErrorOf(a).find("no scan 12345 on this connection"),
              std::string::npos)
        << RawPeer::ErrorOf(a);
    // Too many scans.
    wire::InitScan init;
    init.sql = "x";
    init.window_batches = 1;
    init.window_bytes = 1 << 20;
    init.addresses_from = 0;
    uint64_t scan = 0;
    for (uint64_t r = 10; r < 15; ++r) {
      a = peer.Send(wire::Kind::kInitScan, r, wire::Encode(init));
      auto f = wire::DecodeFrame(a).ValueOrDie();
      if (r < 14) {
        ASSERT_EQ(f.kind, wire::Kind::kScanReply) << RawPeer::ErrorOf(a);
        scan = wire::DecodeScanId(f.body).ValueOrDie().scan;
      } else {
        EXPECT_NE(RawPeer::ErrorOf(a).find("already has 4 scans open"), std::string::npos)
            << RawPeer::ErrorOf(a);
      }
    }
    a = peer.Send(wire::Kind::kFinalize, 20, wire::Encode(wire::ScanId{scan}));
    EXPECT_EQ(wire::DecodeFrame(a).ValueOrDie().kind, wire::Kind::kFinalized);
    // want_data for a scan that is not ours: an error, the connection stays.
    std::string id;
    util::AppendLE<uint64_t>(&id, 999999);
    peer.SendTagged(hello.want_data, id);
    a = peer.Await(0);
    EXPECT_NE(RawPeer::ErrorOf(a).find("which this connection does not have"),
              std::string::npos)
        << RawPeer::ErrorOf(a);
    // free_data of an address inside the pool that this connection does not
    // hold (as late frees of a finalized scan are) changes nothing; of one
    // outside it, the connection goes.
    peer.SendTagged(hello.free_data,
                    ipc::dissociated::EncodeFreeData({hello.pool_address + 64}));
    peer.SendTagged(hello.free_data,
                    ipc::dissociated::EncodeFreeData({hello.pool_address - 4096}));
    a = peer.Await(0);
    EXPECT_NE(RawPeer::ErrorOf(a).find("not in this server's memory"), std::string::npos)
        << RawPeer::ErrorOf(a);
    EXPECT_TRUE(peer.WaitClosed());
  }
  {
    RawPeer peer(server->port());
    auto hello = peer.Hello();
    peer.SendTagged(hello.free_data, "12345");  // not whole addresses
    std::string a = peer.Await(0);
    EXPECT_NE(RawPeer::ErrorOf(a).find("8-byte addresses"), std::string::npos)
        << RawPeer::ErrorOf(a);
    EXPECT_TRUE(peer.WaitClosed());
  }
  {
    RawPeer peer(server->port());
    peer.Hello();
    // Credit of a scan this connection does not have is ignored; of one it
    // has but more than was sent, refused.
    peer.Post(wire::Kind::kCredit, 3, wire::Encode(wire::Credit{1, 5}));
    wire::InitScan init;
    init.sql = "x";
    init.window_batches = 1;
    init.window_bytes = 1;
    std::string a = peer.Send(wire::Kind::kInitScan, 4, wire::Encode(init));
    auto f = wire::DecodeFrame(a).ValueOrDie();
    ASSERT_EQ(f.kind, wire::Kind::kScanReply) << RawPeer::ErrorOf(a);
    const uint64_t scan = wire::DecodeScanId(f.body).ValueOrDie().scan;
    a = peer.Send(wire::Kind::kCredit, 5, wire::Encode(wire::Credit{scan, 1000}));
    EXPECT_NE(RawPeer::ErrorOf(a).find("only 0 were sent"), std::string::npos)
        << RawPeer::ErrorOf(a);
    EXPECT_TRUE(peer.WaitClosed());
  }
  ExpectServing(*server);
  EXPECT_TRUE(Eventually([&] { return server->stats().scans == 0; }));
  EXPECT_EQ(server->stats().scans, 0u);
  EXPECT_EQ(server->stats().pool_bytes_in_use, 0u);
}

// One-sided reads reach only what the server registered and gave this
// connection a key for (its pool). UCX emulates a read it has no transport
// for with a message the owner answers by copying from the address asked,
// whatever key came with it: a server with one-sided reads enabled (as
// before) returned any of its memory to a forged key. Its context has them
// disabled now, so such a read is never answered.
TEST(TransportAttack, AReaderCannotReadMemoryItWasNotGiven) {
  auto server = StartServer();
  std::vector<uint8_t> secret(4096, 0x5a);  // memory of the server's process
  auto peer = std::make_unique<RawPeer>(server->port());
  auto hello = peer->Hello();
  // What it was given: the pool, probe area first.
  const std::string probe = peer->Get(hello.probe_address, 64, peer->pool_key());
  ASSERT_EQ(probe.size(), 64u);
  for (size_t i = 0; i < probe.size(); ++i) {
    ASSERT_EQ(static_cast<uint8_t>(probe[i]), static_cast<uint8_t>(i * 131 + 7)) << i;
  }
  // A key it made for memory of its own, used on the server's memory.
  std::vector<uint8_t> mine(4096);
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  mp.address = mine.data();
  mp.length = mine.size();
  ucp_mem_h memh = nullptr;
  ASSERT_EQ(ucp_mem_map(peer->context(), &mp, &memh), UCS_OK);
  void* packed = nullptr;
  size_t size = 0;
  ASSERT_EQ(ucp_rkey_pack(peer->context(), memh, &packed, &size), UCS_OK);
  ucp_rkey_h forged = nullptr;
  ASSERT_EQ(ucp_ep_rkey_unpack(peer->data_ep(), packed, &forged), UCS_OK);
  ucp_rkey_buffer_release(packed);
  const std::string stolen =
      peer->Get(reinterpret_cast<uint64_t>(secret.data()), secret.size(), forged);
  EXPECT_NE(stolen, std::string(secret.size(), '\x5a'))
      << "a forged key read the server's memory";
  EXPECT_EQ(stolen, "");
  ucp_rkey_destroy(forged);
  ucp_mem_unmap(peer->context(), memh);
  peer.reset();  // its unanswered read goes with its endpoint
  ExpectServing(*server);
}

}  // namespace
}  // namespace quiver::transport
