// Tables of nodes outside a client's memory group: read over the transport
// from their home's daemon (control/daemon/transfer.cc); that daemon's
// transport attacked with every malformed request a ticket holder can make,
// and its ports with what anyone without one can send.
#include "control/client/far.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <optional>

#include "cluster/cluster_util.h"
#include "common/status_macros.h"
#include "control/client/link.h"
#include "control/local_cluster.h"
#include "control/tls/tls_context.h"
#include "quiver/client.h"
#include "quiver/columnar/array.h"
#include "quiver/transport/client.h"
#include "quiver_rpc/control.pb.h"
#include "transport/front_door.h"

namespace quiver {
namespace {

using testing::BinaryPath;
using testing::Child;
using testing::Eventually;

class FarCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    control::LocalClusterOptions o;
    o.nodes = 2;
    o.region_size = 128ULL << 20;
    o.quiverd = BinaryPath("quiverd");
    o.name_prefix = "far";
    o.memory_groups = {"a", "b"};
    o.transport = true;
    auto c = control::LocalCluster::Start(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cluster_ = std::move(*c);
  }
  void TearDown() override {
    if (cluster_) {
      EXPECT_TRUE(cluster_->Stop().ok());
    }
  }

  // A client process of node 0 publishing `rows` int64 values 0..rows-1.
  Child Publisher(const std::string& name, int rows) {
    Child c =
        Child::Start({BinaryPath("cluster_actor"), "--config", cluster_->config_path(),
                      "--node", "0", "--publish", name, "--rows", std::to_string(rows)});
    EXPECT_NE(c.WaitForLine("ready", 60000), "") << c.output();
    return c;
  }
  static int64_t Sum(const Table& t) {
    int64_t s = 0;
    for (const auto& chunk : t.column(0)->chunks()) {
      const auto& a = static_cast<const Int64Array&>(*chunk);
      for (int64_t i = 0; i < a.length(); ++i) s += a.Value(i);
    }
    return s;
  }
  std::unique_ptr<control::LocalCluster> cluster_;
};

// A session with node `node`'s daemon as a client of node 1 (mutual TLS),
// and a connection to its transport with a ticket that session asked for.
struct HomeTransport {
  std::optional<control::TlsContext> tls;
  std::unique_ptr<control::client::Link> link;
  std::unique_ptr<transport::Client> client;
  transport::Client* operator->() const { return client.get(); }
  transport::Client* get() const { return client.get(); }
};

Result<std::unique_ptr<HomeTransport>> ConnectHome(
    const control::LocalCluster& c, uint32_t node,
    transport::ClientOptions co = transport::ClientOptions()) {
  const auto& cfg = c.config();
  auto home = std::make_unique<HomeTransport>();
  QUIVER_ASSIGN_OR_RAISE(auto tls, control::TlsContext::Make(cfg.credentials, cfg.name,
                                                             control::PeerRole::kClient,
                                                             1, /*server=*/false));
  home->tls.emplace(std::move(tls));
  home->link = std::make_unique<control::client::Link>(&cfg, cfg.FindNode(node), 1,
                                                       &*home->tls, 10000);
  co.bodies = transport::BodyMode::kPacked;  // no measuring: only Stats is asked
  QUIVER_ASSIGN_OR_RAISE(home->client,
                         control::client::ConnectToHomeTransport(
                             home->link.get(), cfg.FindNode(node)->transport, co, 10000));
  return home;
}

// A transport server's counts once it holds no scan and no pool block, or
// after `tries` polls 20 ms apart.
Result<transport::ServerStats> SettledStats(transport::Client* server, int tries) {
  transport::ServerStats stats;
  for (int i = 0; i < tries; ++i) {
    QUIVER_ASSIGN_OR_RAISE(stats, server->Stats());
    if (stats.scans == 0 && stats.pool_bytes_in_use == 0) break;
    usleep(20000);
  }
  return stats;
}

// Both ways a chunk travels from the home's pool, where it is copied (no
// region of the home is registered with UCX: no reader gets a key to it):
// as the addresses a reader of this host reads, and in packed bodies. The
// rows are the same.
TEST_F(FarCluster, ChunksGoToReadersOfAddressesAndOfPackedBodiesAlike) {
  const int rows = 1 << 20;
  Child publisher = Publisher("both", rows);
  ASSERT_OK_AND_ASSIGN(auto home, ConnectHome(*cluster_, 0));
  struct Unset {
    ~Unset() { unsetenv("QUIVER_TRANSPORT_BODIES"); }
  } unset;  // also when an assertion ends the test early
  for (const char* bodies : {"addresses", "packed"}) {
    SCOPED_TRACE(bodies);
    ASSERT_EQ(setenv("QUIVER_TRANSPORT_BODIES", bodies, 1), 0);
    {
      ASSERT_OK_AND_ASSIGN(auto client, Client::Connect({cluster_->config_path(), 1}));
      ASSERT_OK_AND_ASSIGN(auto table, client->Get("both"));
      EXPECT_EQ(Sum(*table), int64_t{rows} * (rows - 1) / 2);
    }
  }
  // Nothing held at the home once the readers are done: no scan, no pool
  // block, and the chunk's pin gone (the publisher may unpublish at once).
  ASSERT_OK_AND_ASSIGN(auto stats, SettledStats(home->get(), 200));
  EXPECT_EQ(stats.scans, 0u);
  EXPECT_EQ(stats.pool_bytes_in_use, 0u);
  publisher.Kill(SIGKILL);
}

TEST_F(FarCluster, AClientOfAnotherMemoryGroupGetsTheRowsIntoItsOwnRegion) {
  const int rows = 1 << 20;  // 8 MiB: several bodies of the home's transport
  Child publisher = Publisher("far", rows);
  ASSERT_OK_AND_ASSIGN(auto client, Client::Connect({cluster_->config_path(), 1}));
  // Node 0's region is not mapped here at all.
  EXPECT_EQ(client->cluster()->region(0), nullptr);
  ASSERT_OK_AND_ASSIGN(auto table, client->Get("far"));
  ASSERT_EQ(table->num_rows(), rows);
  EXPECT_TRUE(table->ValidateFull().ok());
  EXPECT_EQ(Sum(*table), int64_t{rows} * (rows - 1) / 2);
  const auto* own = client->config().FindNode(1);
  for (const auto& chunk : table->column(0)->chunks()) {
    const auto& values = chunk->data()->buffers[1];
    EXPECT_TRUE(own->Contains(reinterpret_cast<uint64_t>(values->data()), values->size()))
        << "a far chunk's values are not in node 1's region";
  }
  // Allocating in node 0's region is refused by name, before any call.
  auto refused = client->RemoteAllocate(0, 64, 64);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("different memory groups"), std::string::npos)
      << refused.status().ToString();

  // The home's daemon dies: a Get is an error, not a hang; once it is back
  // (and has taken its region over), Get works again on a new connection.
  table.reset();
  ASSERT_TRUE(cluster_->Kill(0, SIGKILL).ok());
  auto lost = client->Get("far");
  EXPECT_FALSE(lost.ok());
  ASSERT_TRUE(cluster_->Restart(0).ok());
  Result<TablePtr> again = Status::UnknownError("not tried");
  for (int i = 0; i < 100 && !again.ok(); ++i) {
    again = client->Get("far");
    if (!again.ok()) usleep(100000);
  }
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(Sum(**again), int64_t{rows} * (rows - 1) / 2);
  publisher.Kill(SIGKILL);
}

// Readers killed at any moment of a far Get (connecting, mid-transfer,
// holding the copy): the home's transport ends their scans and gives every
// body and pin back; the reader's node frees the copies.
TEST_F(FarCluster, ReadersKilledMidTransferLeaveBothNodesAtTheirBaseline) {
  const int rows = 4 << 20;  // 32 MiB
  Child publisher = Publisher("big", rows);
  ASSERT_OK_AND_ASSIGN(auto client, Client::Connect({cluster_->config_path(), 1}));
  ASSERT_OK_AND_ASSIGN(auto home, ConnectHome(*cluster_, 0));
  auto usage = [&](uint32_t node) -> std::pair<uint64_t, uint64_t> {
    auto status = client->GetClusterStatus();
    EXPECT_TRUE(status.ok()) << status.status().ToString();
    if (!status.ok()) return {0, 0};
    for (const auto& n : status->nodes) {
      if (n.node == node) return {n.used, n.live_allocations};
    }
    return {0, 0};
  };
  const auto before0 = usage(0), before1 = usage(1);
  for (int delay_ms : {0, 5, 15, 30, 60, 2000}) {
    SCOPED_TRACE(delay_ms);
    Child reader = Child::Start({BinaryPath("cluster_actor"), "--config",
                                 cluster_->config_path(), "--node", "1", "--get", "big"});
    ASSERT_TRUE(reader.started());
    usleep(static_cast<useconds_t>(delay_ms) * 1000);
    reader.Kill(SIGKILL);
    reader.Finish();
  }
  // Back to the baselines (the sessions' ends reach the daemons quickly;
  // allow them a few seconds under load).
  transport::ServerStats stats;
  std::pair<uint64_t, uint64_t> after0, after1;
  for (int i = 0; i < 200; ++i) {
    ASSERT_OK_AND_ASSIGN(stats, home->client->Stats());
    after0 = usage(0);
    after1 = usage(1);
    if (stats.scans == 0 && stats.pool_bytes_in_use == 0 && stats.sends == 0 &&
        after0 == before0 && after1 == before1) {
      break;
    }
    usleep(50000);
  }
  EXPECT_EQ(stats.scans, 0u);
  EXPECT_EQ(stats.pool_bytes_in_use, 0u);
  EXPECT_EQ(stats.sends, 0u);
  EXPECT_EQ(after0, before0);
  EXPECT_EQ(after1, before1);
  // And the table is still whole for the next reader.
  ASSERT_OK_AND_ASSIGN(auto table, client->Get("big"));
  EXPECT_EQ(Sum(*table), int64_t{rows} * (rows - 1) / 2);
  publisher.Kill(SIGKILL);
}

TEST_F(FarCluster, TheNodesTransportRefusesWhatIsNotAChunkRequest) {
  Child publisher = Publisher("t", 1000);
  const auto* node0 = cluster_->config().FindNode(0);
  // Without a ticket of its session no one gets past the handshake: not
  // with a guessed key, a forged secret, or a ticket used once already.
  {
    transport::ClientOptions guess;
    guess.token = std::string(64, '0');
    guess.timeout_ms = 5000;
    auto c = transport::Client::Connect(node0->transport, guess);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kUnauthenticated) << c.status().ToString();
    ASSERT_OK_AND_ASSIGN(
        auto tls,
        control::TlsContext::Make(cluster_->config().credentials, cluster_->config().name,
                                  control::PeerRole::kClient, 1, false));
    control::client::Link link(&cluster_->config(), node0, 1, &tls, 10000);
    wire::TransferConnectReply ticket;
    ASSERT_OK(link.Call(control::rpc::Method::kTransferConnect,
                        wire::TransferConnectRequest(), &ticket, 10000));
    EXPECT_EQ(ticket.secret().size(), 32u);
    transport::ClientOptions forged;
    forged.ticket_identity = ticket.identity();
    forged.ticket_secret = ticket.secret();
    forged.ticket_secret[5] ^= 1;
    forged.timeout_ms = 5000;
    c = transport::Client::Connect(node0->transport, forged);
    EXPECT_EQ(c.status().code(), StatusCode::kUnauthenticated) << c.status().ToString();
    transport::ClientOptions used = forged;
    used.ticket_secret = ticket.secret();
    ASSERT_OK(transport::Client::Connect(node0->transport, used).status());
    c = transport::Client::Connect(node0->transport, used);
    EXPECT_EQ(c.status().code(), StatusCode::kUnauthenticated) << c.status().ToString();
  }
  ASSERT_OK_AND_ASSIGN(auto home, ConnectHome(*cluster_, 0));
  transport::Client* c = home->get();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"SELECT 1", "runs no queries"},
      {"", "serves datasets 'chunk:<id>'"},
  };
  for (const auto& [sql, want] : bad) {
    auto st = c->InitScan(sql, {.dataset = sql.empty() ? "table:t" : "chunk:1"}).status();
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find(want), std::string::npos) << st.ToString();
  }
  const std::vector<std::string> datasets = {"chunk:",   "chunk:12x",
                                             "chunk:-1", "chunk:18446744073709551616",
                                             "chunk: 1", std::string("chunk:1\0", 8)};
  for (const auto& dataset : datasets) {
    auto st = c->InitScan("", {.dataset = dataset}).status();
    EXPECT_NE(st.message().find("serves datasets 'chunk:<id>'"), std::string::npos)
        << dataset << ": " << st.ToString();
  }
  auto missing = c->InitScan("", {.dataset = "chunk:12345"}).status();
  EXPECT_NE(missing.message().find("is not published"), std::string::npos)
      << missing.ToString();
  // After all that, the server holds nothing (a scan whose init failed is
  // gone: its client has no id to finalize it with) and still serves.
  // (A scan that ended is counted until its producer thread is joined.)
  ASSERT_OK_AND_ASSIGN(auto stats, SettledStats(c, 100));
  EXPECT_EQ(stats.scans, 0u);
  EXPECT_EQ(stats.pool_bytes_in_use, 0u);
  ASSERT_OK_AND_ASSIGN(auto client, Client::Connect({cluster_->config_path(), 1}));
  ASSERT_OK_AND_ASSIGN(auto table, client->Get("t"));
  EXPECT_EQ(Sum(*table), 999 * 1000 / 2);
  publisher.Kill(SIGKILL);
}

// A transport connection lives as long as the session whose ticket opened
// it: the session's end closes it (and its scans, and their pins).
TEST_F(FarCluster, ATransportConnectionEndsWithItsSession) {
  ASSERT_OK_AND_ASSIGN(auto home, ConnectHome(*cluster_, 0));
  ASSERT_OK(home->client->Stats().status());
  home->link->Close();  // the session at node 0 ends
  EXPECT_TRUE(Eventually([&] { return !home->client->Stats().ok(); }))
      << "the connection outlived its session";
}

// Anything sent to any port of a quiverd with `transport` set, by a peer
// without its credentials, closes only its own connection: its control
// port (mutual TLS) and its transport (TLS with tickets); UCX opens none.
TEST_F(FarCluster, GarbageToEveryPortOfTheDaemonLeavesItServing) {
  const int rows = 100000;
  Child publisher = Publisher("g", rows);
  const pid_t daemon = cluster_->pid(0);
  const auto ports = quiver::testing::ListeningTcpPorts(daemon);
  const auto* node0 = cluster_->config().FindNode(0);
  ASSERT_EQ(ports.size(), 2u) << "control and transport, and nothing else";
  for (const auto& port : ports) {
    for (const auto& g : quiver::testing::AttackerBytes()) {
      SCOPED_TRACE(g.name + " to port " + std::to_string(port.port));
      ASSERT_TRUE(quiver::testing::SendGarbage(port, g.bytes, 200));
      ASSERT_EQ(kill(daemon, 0), 0) << "node 0's daemon died";
    }
  }
  // Silent sockets held on both ports while a reader gets the table.
  std::vector<int> silent;
  for (const auto& port : ports) {
    for (int i = 0; i < 80; ++i) silent.push_back(quiver::testing::Dial(port));
  }
  {
    ASSERT_OK_AND_ASSIGN(auto client, Client::Connect({cluster_->config_path(), 1}));
    ASSERT_OK_AND_ASSIGN(auto table, client->Get("g"));
    EXPECT_EQ(Sum(*table), int64_t{rows} * (rows - 1) / 2);
  }
  const std::string transport_port =
      node0->transport.substr(node0->transport.rfind(':') + 1);
  for (size_t i = 0; i < silent.size(); ++i) {
    // The transport closes its own within about a second.
    if (std::to_string(ports[i / 80].port) == transport_port) {
      EXPECT_TRUE(quiver::testing::ClosedByPeer(silent[i], 3000)) << i;
    }
    if (silent[i] >= 0) close(silent[i]);
  }
  EXPECT_EQ(kill(daemon, 0), 0);
  ASSERT_OK_AND_ASSIGN(auto client, Client::Connect({cluster_->config_path(), 1}));
  ASSERT_OK_AND_ASSIGN(auto table, client->Get("g"));
  EXPECT_EQ(Sum(*table), int64_t{rows} * (rows - 1) / 2);
  publisher.Kill(SIGKILL);
}

}  // namespace
}  // namespace quiver
