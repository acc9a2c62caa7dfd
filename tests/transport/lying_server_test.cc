// A server that lies, behind a real TLS front door, to a real Client: bad
// tags, address lists pointing outside the memory it registered, bodies
// past the client's limit, garbage metadata, over UCX and on the stream.
// The client refuses each with an error that names it; nothing crashes or
// hangs.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <deque>
#include <thread>

#include "common/status_macros.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/ipc/dissociated.h"
#include "quiver/transport/client.h"
#include "transport/tls.h"
#include "transport/ucx.h"
#include "transport/wire.h"

namespace quiver::transport {
namespace {

namespace dis = ipc::dissociated;

enum class Lie {
  kReservedTagBits,
  kAddressOutsideThePool,
  kAddressPastThePoolsEnd,  // starts inside the pool
  kBodyPastTheLimit,
  kGarbageMetadata,
  kAddressesOnTheStream,  // a type-1 body where no read is possible
};

class LyingServer {
 public:
  LyingServer(Lie lie, bool ucx) : lie_(lie), ucx_(ucx) {
    context_ = UcxContext::ForPeers("", /*rma=*/false).ValueOrDie();
    worker_ = UcxWorker::Make(context_).ValueOrDie();
    pool_ = UcxMemory::Allocate(context_, 1 << 20).ValueOrDie();
    tls_ = PskContext::Server([](std::string_view identity)
                                  -> std::optional<PskContext::Found> {
             const Psk key = TokenPsk("");
             if (identity != key.identity) return std::nullopt;
             return PskContext::Found{key.key, 0};
           }).ValueOrDie();
    listen_fd_ = ListenTcp("127.0.0.1:0", &port_).ValueOrDie();
    thread_ = std::thread([this] { Loop(); });
  }
  ~LyingServer() {
    stop_ = true;
    thread_.join();
    sends_.clear();
    CloseByForce(worker_.get(), {data_ep_});
    close(listen_fd_);
  }
  uint16_t port() const { return port_; }

 private:
  void Loop() {
    bool shook = false;
    while (!stop_) {
      worker_->Progress();
      if (stream_ == nullptr) {
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK);
        if (fd >= 0) stream_ = TlsStream::Make(tls_, fd, /*server=*/true).ValueOrDie();
        continue;
      }
      if (!shook) {
        auto done = stream_->Handshake();
        if (!done.ok()) return;
        shook = *done;
        continue;
      }
      TlsStream::Sink sink;
      sink.max_frame = 1 << 20;
      sink.frame = [this](uint8_t kind, uint64_t word, std::string_view body,
                          std::shared_ptr<Buffer>) {
        Handle(wire::MakeFrame(kind, word, body).ValueOrDie());
        return Status::OK();
      };
      (void)stream_->Read(sink);
      (void)stream_->Flush();
      while (!sends_.empty() && sends_.front().Check() != UCS_INPROGRESS) {
        sends_.pop_front();
        bytes_.pop_front();
      }
    }
  }
  void Control(wire::Kind kind, uint64_t request, std::string body) {
    stream_->Queue(static_cast<uint8_t>(kind), request, body);
  }
  void Metadata(std::string bytes) {
    if (!ucx_) return Control(wire::Kind::kMetadata, kScan, std::move(bytes));
    bytes_.push_back(std::move(bytes));
    ucp_request_param_t p{};
    sends_.emplace_back(
        worker_->get(),
        ucp_am_send_nbx(data_ep_, wire::kAmMetadata, &kScan, sizeof(kScan),
                        bytes_.back().data(), bytes_.back().size(), &p));
  }
  void Tagged(uint64_t tag, std::string bytes) {
    if (!ucx_) return Control(wire::Kind::kBody, tag, std::move(bytes));
    bytes_.push_back(std::move(bytes));
    ucp_request_param_t p{};
    sends_.emplace_back(worker_->get(), ucp_tag_send_nbx(data_ep_, bytes_.back().data(),
                                                         bytes_.back().size(), tag, &p));
  }
  void Handle(const wire::Frame& f) {
    if (f.kind == wire::Kind::kHello) {
      auto hello = wire::DecodeHello(f.body).ValueOrDie();
      wire::HelloReply r;
      if (ucx_) {
        data_ep_ = worker_->ConnectTo(hello.worker_address).ValueOrDie();
        r.want_data = 1;
        r.free_data = 2;
        r.pool_address = pool_->address();
        r.pool_length = pool_->length();
        r.probe_address = r.pool_address;
        r.probe_length = 4096;
        r.rkey = pool_->packed_rkey();
        r.worker_address = worker_->Address().ValueOrDie();
      }
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
    const bool addresses = lie_ == Lie::kAddressOutsideThePool ||
                           lie_ == Lie::kAddressPastThePoolsEnd ||
                           lie_ == Lie::kAddressesOnTheStream;
    auto writer =
        dis::StreamWriter::Make(batch->schema(), addresses ? dis::BodyType::kAddresses
                                                           : dis::BodyType::kPacked)
            .ValueOrDie();
    Metadata(writer->Begin().ValueOrDie().metadata);
    auto messages = writer->Write(*batch).ValueOrDie();
    dis::Outgoing& m = messages.back();
    // The garbage takes the place of the batch's metadata.
    if (lie_ != Lie::kGarbageMetadata) Metadata(m.metadata);
    switch (lie_) {
      case Lie::kReservedTagBits:
        return Tagged(m.tag | (uint64_t{1} << 40), m.body);
      case Lie::kAddressOutsideThePool:
      case Lie::kAddressPastThePoolsEnd: {
        auto ranges = dis::DecodeAddressList(m.body).ValueOrDie();
        for (auto& r : ranges) {
          if (r.length == 0) continue;
          r.address = lie_ == Lie::kAddressOutsideThePool
                          ? pool_->address() + pool_->length() + 4096
                          : pool_->address() + pool_->length() - 8;
        }
        return Tagged(m.tag, dis::EncodeAddressList(ranges));
      }
      case Lie::kBodyPastTheLimit:
        return Tagged(m.tag, std::string(1 << 16, 'x'));
      case Lie::kGarbageMetadata:
        Metadata(std::string("\x01\x01\x00\x00\x00garbage", 12));
        return Tagged(m.tag, m.body);
      case Lie::kAddressesOnTheStream:
        return Tagged(m.tag, m.body);
    }
  }

  static constexpr uint64_t kScan = 1;
  Lie lie_;
  bool ucx_;
  std::shared_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;
  std::unique_ptr<UcxMemory> pool_;
  std::shared_ptr<PskContext> tls_;
  std::unique_ptr<TlsStream> stream_;
  int listen_fd_ = -1;
  ucp_ep_h data_ep_ = nullptr;
  uint16_t port_ = 0;
  std::deque<std::string> bytes_;
  std::deque<UcxRequest> sends_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct LieCase {
  Lie lie;
  bool ucx;
  const char* says;
};

TEST(TransportLyingServer, EveryLieIsAnErrorThatNamesIt) {
  for (const LieCase& c :
       {LieCase{Lie::kReservedTagBits, true, "reserved"},
        LieCase{Lie::kReservedTagBits, false, "reserved"},
        LieCase{Lie::kAddressOutsideThePool, true, "outside the memory it registered"},
        LieCase{Lie::kAddressPastThePoolsEnd, true, "outside the memory it registered"},
        LieCase{Lie::kAddressesOnTheStream, false, "on a connection without UCX"},
        LieCase{Lie::kBodyPastTheLimit, true, "exceeds the limit of 4096"},
        LieCase{Lie::kBodyPastTheLimit, false, "exceeds the limit of 4096"},
        LieCase{Lie::kGarbageMetadata, true, "too small for a flatbuffer"},
        LieCase{Lie::kGarbageMetadata, false, "too small for a flatbuffer"}}) {
    SCOPED_TRACE(std::string(c.says) + (c.ucx ? " (UCX)" : " (stream)"));
    LyingServer server(c.lie, c.ucx);
    ClientOptions o;
    o.bodies =
        c.lie == Lie::kAddressOutsideThePool || c.lie == Lie::kAddressPastThePoolsEnd
            ? BodyMode::kAddresses
            : BodyMode::kPacked;
    o.max_body_bytes = 4096;
    o.timeout_ms = 10000;
    ASSERT_OK_AND_ASSIGN(
        auto client, Client::Connect("127.0.0.1:" + std::to_string(server.port()), o));
    EXPECT_EQ(client->over_ucx(), c.ucx);
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
