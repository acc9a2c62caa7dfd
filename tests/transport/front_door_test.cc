// The transport's only port is a TLS 1.3 front door: whatever a peer
// without the key sends to any TCP port of the server's process (garbage,
// the 17 zero bytes that aborted UCX's socket-address listener, the bytes
// that abort or write through UCX's TCP transport, handshakes cut short or
// oversized, sockets held silent) closes only its own connection, and the
// server goes on serving.
#include "transport/front_door.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/eventually.h"
#include "common/status_macros.h"
#include "quiver/columnar/builder.h"
#include "quiver/transport/client.h"
#include "quiver/transport/server.h"

namespace quiver::transport {
namespace {

using ::quiver::testing::Eventually;

using quiver::testing::AttackerBytes;
using quiver::testing::ClosedByPeer;
using quiver::testing::Dial;
using quiver::testing::ListeningTcpPorts;
using quiver::testing::SendGarbage;

std::unique_ptr<Server> StartServer(ServerOptions o = {}) {
  o.listen = "127.0.0.1:0";
  o.token = "front-door-token";
  o.pool_size = 16 << 20;
  Int64Builder b;
  for (int64_t i = 0; i < 50000; ++i) (void)b.Append(i);
  auto batch = RecordBatch::FromArrays({"x"}, {b.Finish().ValueOrDie()}).ValueOrDie();
  return Server::Start(
             o,
             [batch](const std::string&,
                     const std::string&) -> Result<std::shared_ptr<RecordBatchReader>> {
               return RecordBatchReader::FromBatches(batch->schema(), {batch});
             })
      .ValueOrDie();
}

// An honest client scans it in full, over UCX and on the stream.
void ExpectServing(const Server& server) {
  for (const char* transports : {"", "tcp"}) {
    ClientOptions o;
    o.token = "front-door-token";
    o.ucx_transports = transports;
    o.timeout_ms = 20000;
    ASSERT_OK_AND_ASSIGN(
        auto client, Client::Connect("127.0.0.1:" + std::to_string(server.port()), o));
    ASSERT_OK_AND_ASSIGN(uint64_t scan, client->InitScan("x"));
    ASSERT_OK_AND_ASSIGN(auto reader, client->Iterate(scan));
    ASSERT_OK_AND_ASSIGN(auto batches, reader->ReadAll());
    int64_t rows = 0;
    for (const auto& b : batches) rows += b->num_rows();
    EXPECT_EQ(rows, 50000);
    ASSERT_OK(client->Finalize(scan));
  }
}

TEST(TransportFrontDoor, GarbageToEveryPortClosesOnlyItsOwnConnection) {
  auto server = StartServer();
  ExpectServing(*server);  // UCX up, clients connected once
  const auto ports = ListeningTcpPorts(getpid());
  // The front door and nothing else: UCX opens no port of its own.
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_EQ(ports[0].port, server->port());
  for (const auto& port : ports) {
    for (const auto& g : AttackerBytes()) {
      SCOPED_TRACE(g.name + " to port " + std::to_string(port.port));
      ASSERT_TRUE(SendGarbage(port, g.bytes, 200));
      // Again, many times over, a few at once.
      std::vector<std::thread> burst;
      for (int t = 0; t < 4; ++t) {
        burst.emplace_back([&] {
          for (int i = 0; i < 10; ++i) (void)SendGarbage(port, g.bytes, 0);
        });
      }
      for (auto& t : burst) t.join();
    }
  }
  ExpectServing(*server);
  EXPECT_TRUE(Eventually([&] { return server->stats().handshakes == 0; }));
  EXPECT_EQ(server->stats().handshakes, 0u);
  EXPECT_EQ(server->stats().pool_bytes_in_use, 0u);
}

// Sockets that connect and say nothing (or stop mid-handshake) are closed
// within about a second, and while more of them are held than the server
// has handshake slots an honest client still gets in.
TEST(TransportFrontDoor, SilentAndStalledHandshakesAreClosedWithinASecond) {
  ServerOptions o;
  o.max_handshakes = 16;
  o.handshake_timeout_ms = 1000;
  auto server = StartServer(o);
  const quiver::testing::ListeningPort door{"127.0.0.1", server->port()};
  std::vector<int> silent;
  for (int i = 0; i < 100; ++i) {
    const int fd = Dial(door);
    ASSERT_GE(fd, 0);
    if (i % 2 == 1) {  // half stop after the first bytes of a ClientHello
      (void)send(fd, "\x16\x03\x01\x02\x00\x01", 6, MSG_NOSIGNAL);
    }
    silent.push_back(fd);
  }
  ExpectServing(*server);
  EXPECT_LE(server->stats().handshakes, 16u);
  // Every one of them is closed by the server, the last within ~1 s of
  // its last byte (the oldest were closed to make room already).
  for (int fd : silent) {
    EXPECT_TRUE(ClosedByPeer(fd, 3000)) << "a silent socket was kept open";
    close(fd);
  }
  EXPECT_TRUE(Eventually([&] { return server->stats().handshakes == 0; }));
  EXPECT_EQ(server->stats().handshakes, 0u);
  EXPECT_EQ(server->stats().connections, 0u);
  ExpectServing(*server);
}

}  // namespace
}  // namespace quiver::transport
