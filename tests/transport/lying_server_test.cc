// A server that lies, speaking UCX directly to a real Client: bad tags,
// address lists pointing outside the memory it registered, bodies past the
// client's limit, garbage metadata. The client refuses each with an error
// that names it; nothing crashes or hangs.
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <thread>

#include "common/status_macros.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/ipc/dissociated.h"
#include "quiver/transport/client.h"
#include "transport/address.h"
#include "transport/ucx.h"
#include "transport/wire.h"

namespace quiver::transport {
namespace {

namespace dis = ipc::dissociated;

enum class Lie {
  kReservedTagBits,
  kAddressOutsideThePool,
  kAddressPastAnInPlaceRange,  // starts inside a range it serves in place
  kBodyPastTheLimit,
  kGarbageMetadata
};

class LyingServer {
 public:
  explicit LyingServer(Lie lie) : lie_(lie) {
    context_ = UcxContext::Make().ValueOrDie();
    worker_ = UcxWorker::Make(context_).ValueOrDie();
    pool_.resize(1 << 20);
    memory_ = UcxMemory::Map(context_, pool_.data(), pool_.size()).ValueOrDie();
    region_.resize(4096);
    region_memory_ =
        UcxMemory::Map(context_, region_.data(), region_.size()).ValueOrDie();
    ucp_am_handler_param_t am{};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG;
    am.id = wire::kAmControl;
    am.cb = [](void* arg, const void*, size_t, void* data, size_t length,
               const ucp_am_recv_param_t*) {
      static_cast<LyingServer*>(arg)->frames_.emplace_back(static_cast<const char*>(data),
                                                           length);
      return UCS_OK;
    };
    am.arg = this;
    EXPECT_EQ(ucp_worker_set_am_recv_handler(worker_->get(), &am), UCS_OK);
    auto address = ResolveAddress("127.0.0.1:0", true).ValueOrDie();
    ucp_listener_params_t lp{};
    lp.field_mask =
        UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lp.sockaddr.addr = address.get();
    lp.sockaddr.addrlen = address.length;
    lp.conn_handler.cb = [](ucp_conn_request_h r, void* arg) {
      static_cast<LyingServer*>(arg)->requests_.push_back(r);
    };
    lp.conn_handler.arg = this;
    EXPECT_EQ(ucp_listener_create(worker_->get(), &lp, &listener_), UCS_OK);
    ucp_listener_attr_t attr{};
    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    EXPECT_EQ(ucp_listener_query(listener_, &attr), UCS_OK);
    port_ = PortOf(attr.sockaddr);
    thread_ = std::thread([this] { Loop(); });
  }
  ~LyingServer() {
    stop_ = true;
    thread_.join();
    sends_.clear();
    CloseByForce(worker_.get(), {data_ep_, ep_});
    ucp_listener_destroy(listener_);
  }
  uint16_t port() const { return port_; }

 private:
  void Loop() {
    while (!stop_) {
      worker_->Progress();
      for (ucp_conn_request_h r : std::exchange(requests_, {})) {
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST;
        params.conn_request = r;
        EXPECT_EQ(ucp_ep_create(worker_->get(), &params, &ep_), UCS_OK);
      }
      for (std::string& bytes : std::exchange(frames_, {})) Handle(bytes);
      while (!sends_.empty() && sends_.front().Check() != UCS_INPROGRESS) {
        sends_.pop_front();
        bytes_.pop_front();
      }
    }
  }
  void Control(wire::Kind kind, uint64_t request, std::string body) {
    bytes_.push_back(wire::EncodeFrame(kind, request, body));
    ucp_request_param_t p{};
    sends_.emplace_back(worker_->get(),
                        ucp_am_send_nbx(ep_, wire::kAmControl, nullptr, 0,
                                        bytes_.back().data(), bytes_.back().size(), &p));
  }
  void Metadata(std::string bytes) {
    bytes_.push_back(std::move(bytes));
    ucp_request_param_t p{};
    sends_.emplace_back(
        worker_->get(),
        ucp_am_send_nbx(data_ep_, wire::kAmMetadata, &kScan, sizeof(kScan),
                        bytes_.back().data(), bytes_.back().size(), &p));
  }
  void Tagged(uint64_t tag, std::string bytes) {
    bytes_.push_back(std::move(bytes));
    ucp_request_param_t p{};
    sends_.emplace_back(worker_->get(), ucp_tag_send_nbx(data_ep_, bytes_.back().data(),
                                                         bytes_.back().size(), tag, &p));
  }
  void Handle(const std::string& bytes) {
    auto f = wire::DecodeFrame(bytes).ValueOrDie();
    if (f.kind == wire::Kind::kHello) {
      auto hello = wire::DecodeHello(f.body).ValueOrDie();
      data_ep_ = worker_->ConnectTo(hello.worker_address).ValueOrDie();
      wire::HelloReply r;
      r.want_data = 1;
      r.free_data = 2;
      r.pool_address = memory_->address();
      r.pool_length = memory_->length();
      r.probe_address = r.pool_address;
      r.probe_length = 4096;
      r.rkey = memory_->packed_rkey();
      r.worker_address = worker_->Address().ValueOrDie();
      r.in_place = {{region_memory_->address(), region_memory_->length(),
                     region_memory_->packed_rkey()}};
      return Control(wire::Kind::kHelloReply, f.request, wire::Encode(r));
    }
    if (f.kind == wire::Kind::kInitScan) {
      Control(wire::Kind::kScanReply, f.request, wire::Encode(wire::ScanId{kScan}));
      return Stream();
    }
    if (f.kind == wire::Kind::kFinalize) {
      Control(wire::Kind::kFinalized, f.request, wire::Encode(wire::Finalized{kScan, 1}));
    }
  }
  // A valid schema and batch metadata, then the lie.
  void Stream() {
    Int64Builder b;
    for (int64_t i = 0; i < 100; ++i) (void)b.Append(i);
    auto batch = RecordBatch::FromArrays({"x"}, {b.Finish().ValueOrDie()}).ValueOrDie();
    const dis::BodyType type =
        lie_ == Lie::kAddressOutsideThePool || lie_ == Lie::kAddressPastAnInPlaceRange
            ? dis::BodyType::kAddresses
            : dis::BodyType::kPacked;
    auto writer = dis::StreamWriter::Make(batch->schema(), type).ValueOrDie();
    Metadata(writer->Begin().ValueOrDie().metadata);
    auto messages = writer->Write(*batch).ValueOrDie();
    dis::Outgoing& m = messages.back();
    switch (lie_) {
      case Lie::kReservedTagBits:
        Metadata(m.metadata);
        return Tagged(m.tag | (uint64_t{1} << 40), m.body);
      case Lie::kAddressOutsideThePool: {
        Metadata(m.metadata);
        auto ranges = dis::DecodeAddressList(m.body).ValueOrDie();
        for (auto& r : ranges) {
          if (r.length != 0) r.address = memory_->address() + memory_->length() + 4096;
        }
        return Tagged(m.tag, dis::EncodeAddressList(ranges));
      }
      case Lie::kAddressPastAnInPlaceRange: {
        Metadata(m.metadata);
        auto ranges = dis::DecodeAddressList(m.body).ValueOrDie();
        for (auto& r : ranges) {
          if (r.length != 0) r.address = region_memory_->address() + 4096 - 8;
        }
        return Tagged(m.tag, dis::EncodeAddressList(ranges));
      }
      case Lie::kBodyPastTheLimit:
        Metadata(m.metadata);
        return Tagged(m.tag, std::string(1 << 16, 'x'));
      case Lie::kGarbageMetadata:
        Metadata(std::string("\x01\x01\x00\x00\x00garbage", 12));
        return Tagged(m.tag, m.body);
    }
  }

  static constexpr uint64_t kScan = 1;
  Lie lie_;
  std::shared_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;
  std::vector<uint8_t> pool_;
  std::unique_ptr<UcxMemory> memory_;
  std::vector<uint8_t> region_;  // served "in place"
  std::unique_ptr<UcxMemory> region_memory_;
  ucp_listener_h listener_ = nullptr;
  ucp_ep_h ep_ = nullptr, data_ep_ = nullptr;
  uint16_t port_ = 0;
  std::vector<ucp_conn_request_h> requests_;
  std::vector<std::string> frames_;
  std::deque<std::string> bytes_;
  std::deque<UcxRequest> sends_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct LieCase {
  Lie lie;
  const char* says;
};

TEST(TransportLyingServer, EveryLieIsAnErrorThatNamesIt) {
  for (const LieCase& c :
       {LieCase{Lie::kReservedTagBits, "reserved"},
        LieCase{Lie::kAddressOutsideThePool, "outside the memory it registered"},
        LieCase{Lie::kAddressPastAnInPlaceRange, "outside the memory it registered"},
        LieCase{Lie::kBodyPastTheLimit, "exceeds the limit of 4096"},
        LieCase{Lie::kGarbageMetadata, "too small for a flatbuffer"}}) {
    SCOPED_TRACE(c.says);
    LyingServer server(c.lie);
    ClientOptions o;
    o.bodies =
        c.lie == Lie::kAddressOutsideThePool || c.lie == Lie::kAddressPastAnInPlaceRange
            ? BodyMode::kAddresses
            : BodyMode::kPacked;
    o.max_body_bytes = 4096;
    o.timeout_ms = 10000;
    ASSERT_OK_AND_ASSIGN(
        auto client, Client::Connect("127.0.0.1:" + std::to_string(server.port()), o));
    ASSERT_OK_AND_ASSIGN(uint64_t scan, client->InitScan("anything"));
    Status st;
    auto reader = client->Iterate(scan);
    if (!reader.ok()) {
      st = reader.status();
    } else {
      auto batch = (*reader)->Next();
      ASSERT_FALSE(batch.ok()) << "a lie was taken for a batch";
      st = batch.status();
    }
    EXPECT_NE(st.ToString().find(c.says), std::string::npos) << st.ToString();
  }
}

}  // namespace
}  // namespace quiver::transport
