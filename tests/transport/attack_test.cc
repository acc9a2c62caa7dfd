// A peer that speaks UCX directly and sends what no Client would: every
// malformed or forged message gets an error naming what is wrong, the
// offender loses its connection where the protocol says so, and the server
// goes on serving everyone else.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <map>
#include <thread>

#include "common/status_macros.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/ipc/dissociated.h"
#include "quiver/transport/client.h"
#include "quiver/transport/server.h"
#include "quiver/util/little_endian.h"
#include "transport/address.h"
#include "transport/ucx.h"
#include "transport/wire.h"

namespace quiver::transport {
namespace {

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

// A raw UCX peer of the server: control frames on an endpoint to the
// listener, tagged messages on one to the server's worker address.
class RawPeer {
 public:
  explicit RawPeer(uint16_t port) {
    context_ = UcxContext::Make().ValueOrDie();
    worker_ = UcxWorker::Make(context_).ValueOrDie();
    ucp_am_handler_param_t am{};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG;
    am.id = wire::kAmControl;
    am.cb = &OnControl;
    am.arg = this;
    EXPECT_EQ(ucp_worker_set_am_recv_handler(worker_->get(), &am), UCS_OK);
    auto address =
        ResolveAddress("127.0.0.1:" + std::to_string(port), false).ValueOrDie();
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr = address.get();
    params.sockaddr.addrlen = address.length;
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = [](void* arg, ucp_ep_h, ucs_status_t) {
      static_cast<RawPeer*>(arg)->closed_ = true;
    };
    params.err_handler.arg = this;
    EXPECT_EQ(ucp_ep_create(worker_->get(), &params, &ep_), UCS_OK);
  }
  ~RawPeer() { CloseByForce(worker_.get(), {data_ep_, ep_}); }

  // Sends raw bytes as a control frame; returns the answer to `request`
  // (or an unsolicited error), "" if none came within 5 s.
  std::string Send(std::string bytes, uint64_t request) {
    Post(std::move(bytes));
    return Await(request);
  }
  void Post(std::string bytes) {
    bytes_.push_back(std::move(bytes));
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
    sends_.emplace_back(worker_->get(),
                        ucp_am_send_nbx(ep_, wire::kAmControl, nullptr, 0,
                                        bytes_.back().data(), bytes_.back().size(), &p));
  }
  std::string Await(uint64_t request) {
    (void)worker_->ProgressUntil(
        [&] { return answers_.count(request) != 0 || answers_.count(0) != 0; }, 5000,
        "answer");
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
  wire::HelloReply Hello() {
    wire::Hello h;
    h.token = "secret";
    h.worker_address = worker_->Address().ValueOrDie();
    const std::string a =
        Send(wire::EncodeFrame(wire::Kind::kHello, 1, wire::Encode(h)), 1);
    auto f = wire::DecodeFrame(a).ValueOrDie();
    EXPECT_EQ(f.kind, wire::Kind::kHelloReply) << ErrorOf(a);
    auto r = wire::DecodeHelloReply(f.body).ValueOrDie();
    data_ep_ = worker_->ConnectTo(r.worker_address).ValueOrDie();
    return r;
  }
  void SendTagged(uint64_t tag, std::string bytes) {
    bytes_.push_back(std::move(bytes));
    ucp_request_param_t p{};
    sends_.emplace_back(worker_->get(), ucp_tag_send_nbx(data_ep_, bytes_.back().data(),
                                                         bytes_.back().size(), tag, &p));
  }
  bool WaitClosed() {
    (void)worker_->ProgressUntil([&] { return closed_; }, 5000, "close");
    return closed_;
  }

 private:
  static ucs_status_t OnControl(void* arg, const void*, size_t, void* data, size_t length,
                                const ucp_am_recv_param_t*) {
    auto* self = static_cast<RawPeer*>(arg);
    std::string bytes(static_cast<const char*>(data), length);
    auto f = wire::DecodeFrame(bytes);
    self->answers_[f.ok() ? f->request : 0] = bytes;
    return UCS_OK;
  }
  std::shared_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;
  ucp_ep_h ep_ = nullptr, data_ep_ = nullptr;
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
  std::string frame;
  const char* says;
};

TEST(TransportAttack, MalformedControlFramesAreRefusedByName) {
  auto server = StartServer();
  std::string hello_bad_length = wire::EncodeFrame(wire::Kind::kHello, 7, {});
  util::AppendLE<uint32_t>(&hello_bad_length, wire::kVersion);
  util::AppendLE<uint32_t>(&hello_bad_length, 1u << 30);  // a token of 1 GiB
  wire::Hello old;
  old.version = 99;
  old.token = "secret";
  const std::vector<Case> cases = {
      {"short", std::string("\x01\x02", 2), "shorter than its 9-byte header"},
      {"unknown kind", wire::EncodeFrame(static_cast<wire::Kind>(99), 7, {}),
       "unknown kind 99"},
      {"before hello", wire::EncodeFrame(wire::Kind::kInitScan, 7, {}),
       "first message must be Hello"},
      {"huge token", hello_bad_length, "exceeds the limit"},
      {"old version", wire::EncodeFrame(wire::Kind::kHello, 7, wire::Encode(old)),
       "speaks transport version 99"},
      {"trailing bytes",
       wire::EncodeFrame(wire::Kind::kHello, 7, wire::Encode(wire::Hello{}) + "xx"),
       "bytes after its last field"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RawPeer peer(server->port());
    const std::string answer = RawPeer::ErrorOf(peer.Send(c.frame, 7));
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
  EXPECT_NE(RawPeer::ErrorOf(a).find("no Hello within 1000 ms"), std::string::npos)
      << RawPeer::ErrorOf(a);
  EXPECT_TRUE(idle.WaitClosed());
  for (int i = 0; i < 100 && server->stats().connections != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(server->stats().connections, 0u);
  ExpectServing(*server);
}

TEST(TransportAttack, ForgedIdsAddressesAndCreditsAreRefused) {
  auto server = StartServer();
  {
    RawPeer peer(server->port());
    auto hello = peer.Hello();
    // A finalize and a credit for scans that are not this connection's.
    std::string a = peer.Send(
        wire::EncodeFrame(wire::Kind::kFinalize, 2, wire::Encode(wire::ScanId{12345})),
        2);
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
      a = peer.Send(wire::EncodeFrame(wire::Kind::kInitScan, r, wire::Encode(init)), r);
      auto f = wire::DecodeFrame(a).ValueOrDie();
      if (r < 14) {
        ASSERT_EQ(f.kind, wire::Kind::kScanReply) << RawPeer::ErrorOf(a);
        scan = wire::DecodeScanId(f.body).ValueOrDie().scan;
      } else {
        EXPECT_NE(RawPeer::ErrorOf(a).find("already has 4 scans open"), std::string::npos)
            << RawPeer::ErrorOf(a);
      }
    }
    a = peer.Send(
        wire::EncodeFrame(wire::Kind::kFinalize, 20, wire::Encode(wire::ScanId{scan})),
        20);
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
    peer.Post(
        wire::EncodeFrame(wire::Kind::kCredit, 3, wire::Encode(wire::Credit{1, 5})));
    wire::InitScan init;
    init.sql = "x";
    init.window_batches = 1;
    init.window_bytes = 1;
    std::string a =
        peer.Send(wire::EncodeFrame(wire::Kind::kInitScan, 4, wire::Encode(init)), 4);
    auto f = wire::DecodeFrame(a).ValueOrDie();
    ASSERT_EQ(f.kind, wire::Kind::kScanReply) << RawPeer::ErrorOf(a);
    const uint64_t scan = wire::DecodeScanId(f.body).ValueOrDie().scan;
    a = peer.Send(
        wire::EncodeFrame(wire::Kind::kCredit, 5, wire::Encode(wire::Credit{scan, 1000})),
        5);
    EXPECT_NE(RawPeer::ErrorOf(a).find("only 0 were sent"), std::string::npos)
        << RawPeer::ErrorOf(a);
    EXPECT_TRUE(peer.WaitClosed());
  }
  ExpectServing(*server);
  for (int i = 0; i < 100 && server->stats().scans != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(server->stats().scans, 0u);
  EXPECT_EQ(server->stats().pool_bytes_in_use, 0u);
}

}  // namespace
}  // namespace quiver::transport
