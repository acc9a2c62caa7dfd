// The transport's control messages: round trips, and every truncation and
// overlong field refused by name.
#include "transport/wire.h"

#include <gtest/gtest.h>

#include "common/status_macros.h"

namespace quiver::transport::wire {
namespace {

TEST(TransportWire, EveryMessageRoundTripsAndEveryTruncationIsRefused) {
  HelloReply reply;
  reply.want_data = 11;
  reply.free_data = 12;
  reply.pool_address = 4096;
  reply.pool_length = 1 << 20;
  reply.probe_address = 8192;
  reply.probe_length = 4096;
  reply.rkey = "key";
  reply.worker_address = "addr";
  const std::string body = Encode(reply);
  ASSERT_OK_AND_ASSIGN(auto back, DecodeHelloReply(body));
  EXPECT_EQ(Encode(back), body);
  EXPECT_EQ(back.rkey, "key");
  EXPECT_EQ(back.worker_address, "addr");
  for (size_t n = 0; n < body.size(); ++n) {
    auto st = DecodeHelloReply(body.substr(0, n)).status();
    EXPECT_TRUE(st.IsInvalid()) << n;
    EXPECT_NE(st.message().find("HelloReply"), std::string::npos) << st.ToString();
  }
  EXPECT_TRUE(DecodeHelloReply(body + "x").status().IsInvalid());

  InitScan init;
  init.sql = "SELECT 1";
  init.window_batches = 4;
  init.window_bytes = 1 << 20;
  ASSERT_OK_AND_ASSIGN(auto init_back, DecodeInitScan(Encode(init)));
  EXPECT_EQ(init_back.sql, "SELECT 1");
  init.window_batches = 0;
  EXPECT_NE(DecodeInitScan(Encode(init)).status().message().find("lets nothing through"),
            std::string::npos);

  const std::string frame = EncodeFrame(Kind::kCredit, 77, "abc");
  ASSERT_OK_AND_ASSIGN(auto f, DecodeFrame(frame));  // f.body points into `frame`
  EXPECT_EQ(f.kind, Kind::kCredit);
  EXPECT_EQ(f.request, 77u);
  EXPECT_EQ(f.body, "abc");
  EXPECT_NE(DecodeFrame(std::string(9, '\0')).status().message().find("unknown kind 0"),
            std::string::npos);
  EXPECT_NE(MakeFrame(16, 0, {}).status().message().find("unknown kind 16"),
            std::string::npos);

  ASSERT_OK_AND_ASSIGN(auto path, DecodeDataPath(Encode(DataPath{1})));
  EXPECT_EQ(path.ucx, 1);
  EXPECT_TRUE(DecodeDataPath(Encode(DataPath{2})).status().IsInvalid());
  EXPECT_TRUE(DecodeDataPath("").status().IsInvalid());
}

TEST(TransportWire, AProbeAreaOutsideThePoolIsRefused) {
  HelloReply reply;
  reply.pool_address = 4096;
  reply.pool_length = 4096;
  reply.probe_address = 4096 + 4000;
  reply.probe_length = 200;  // past the pool's end
  EXPECT_NE(
      DecodeHelloReply(Encode(reply)).status().message().find("not inside the pool"),
      std::string::npos);
  reply.pool_address = ~uint64_t{0} - 10;  // wraps around
  reply.probe_address = reply.pool_address;
  reply.probe_length = 0;
  EXPECT_TRUE(DecodeHelloReply(Encode(reply)).status().IsInvalid());
}

TEST(TransportWire, StringsLongerThanTheirLimitAreRefusedBeforeAnyCopy) {
  Hello hello;
  hello.worker_address = std::string(kMaxWorkerAddress + 1, 'a');
  auto st = DecodeHello(Encode(hello)).status();
  EXPECT_NE(st.message().find("worker_address of 65537 bytes exceeds the limit of 65536"),
            std::string::npos)
      << st.ToString();
}

}  // namespace
}  // namespace quiver::transport::wire
