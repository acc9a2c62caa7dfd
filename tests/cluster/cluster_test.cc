// Several daemons and clients as separate processes: the demo on shm and on
// the non-coherent emulator, remote allocation, the writer's flush, the
// command lines, and the lifetime of what readers hold.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>

#include "cluster/cluster_util.h"
#include "quiver/client.h"
#include "quiver/columnar/builder.h"
#include "quiver/control/descriptor.h"

namespace quiver {
namespace {

using control::LocalCluster;
using testing::BinaryPath;
using testing::Child;
using testing::ClusterSpec;
using testing::Eventually;
using testing::StartCluster;
using testing::UsedBytes;

std::unique_ptr<LocalCluster> Start(memory::BackingKind backing, int nodes = 3) {
  ClusterSpec spec;
  spec.nodes = nodes;
  spec.backing = backing;
  return StartCluster(spec);
}

// A client of node `node` once its daemon sees every peer online; null (with
// the reason reported) if that does not happen.
std::unique_ptr<Client> Connect(LocalCluster* cluster, uint32_t node = 0,
                                int skip_protocol_step = 0) {
  ClientOptions options;
  options.config_path = cluster->config_path();
  options.node = node;
  options.skip_protocol_step_for_testing = skip_protocol_step;
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  if (!client.ok()) return nullptr;
  Status online = (*client)->WaitAllOnline(30000);
  EXPECT_TRUE(online.ok()) << online.ToString();
  return online.ok() ? std::move(*client) : nullptr;
}

// Runs `quiver demo-node` on every node at once; every one must succeed.
void RunDemoNodes(LocalCluster* cluster, uint64_t rows, bool remote_owner) {
  const int n = static_cast<int>(cluster->config().nodes.size());
  std::vector<Child> workers;
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> argv = {BinaryPath("quiver"),
                                     "demo-node",
                                     "--config",
                                     cluster->config_path(),
                                     "--node",
                                     std::to_string(i),
                                     "--rows",
                                     std::to_string(rows)};
    if (remote_owner) {
      argv.push_back("--owner");
      argv.push_back(std::to_string((i + 1) % n));
    }
    workers.push_back(Child::Start(argv));
    ASSERT_TRUE(workers.back().started());
  }
  for (int i = 0; i < n; ++i) {
    const int code = workers[i].Finish(300000);
    const std::string& out = workers[i].output();
    EXPECT_EQ(code, 0) << "node " << i << ":\n" << out;
    for (const char* want :
         {"sums_ok=1", "zero_copy=1", "full_sums_ok=1", "full_local=1", "ok=1"}) {
      EXPECT_NE(out.find(want), std::string::npos) << want << " in\n" << out;
    }
  }
}

TEST(ClusterTest, DemoNodesAgreeOnShm) {
  auto cluster = Start(memory::BackingKind::kShm);
  ASSERT_NE(cluster, nullptr);
  RunDemoNodes(cluster.get(), 600000, false);
}

TEST(ClusterTest, DemoNodesAgreeOnIncoherentBackings) {
  auto cluster = Start(memory::BackingKind::kIncoherent);
  ASSERT_NE(cluster, nullptr);
  RunDemoNodes(cluster.get(), 300000, false);
}

// Every node builds its slice in the next node's memory: remote malloc,
// the owner's flush of the new range everywhere and the writer's flush
// before sealing must make the data visible through the emulator's caches.
TEST(ClusterTest, RemoteOwnersOnIncoherentBackings) {
  auto cluster = Start(memory::BackingKind::kIncoherent);
  ASSERT_NE(cluster, nullptr);
  RunDemoNodes(cluster.get(), 300000, true);
}

TEST(ClusterTest, QuiverDemoCommandPasses) {
  Child demo = Child::Start({BinaryPath("quiver"), "demo", "--rows", "300000"});
  ASSERT_TRUE(demo.started());
  EXPECT_EQ(demo.Finish(300000), 0) << demo.output();
  EXPECT_NE(demo.output().find("quiver demo: OK"), std::string::npos) << demo.output();
  EXPECT_NE(demo.output().find("faster than SendTableFull"), std::string::npos);
}

// ---------------------------------------------------------------------------

Result<RecordBatchPtr> Int64Batch(MemoryPool* pool, int64_t n, int64_t start = 0) {
  Int64Builder b(pool);
  QUIVER_RETURN_NOT_OK(b.Reserve(n));
  for (int64_t i = 0; i < n; ++i) b.UnsafeAppend(start + i);
  QUIVER_ASSIGN_OR_RAISE(auto a, b.Finish());
  return RecordBatch::FromArrays({"v"}, {a});
}

int64_t SumInt64(const Table& t) {
  int64_t s = 0;
  for (const auto& c : t.column(0)->chunks()) {
    auto a = std::static_pointer_cast<Int64Array>(c);
    for (int64_t i = 0; i < a->length(); ++i) s += a->Value(i);
  }
  return s;
}

// Without the writer's flush (protocol step 4), what a process writes into
// another node's memory stays in its private cache on incoherent backings:
// a reader on a third node sums zeros. This is what the incoherent tests
// above guard. The buffer is allocated once at its final size and written
// with plain stores, so no other flush can carry the data out by chance.
TEST(ClusterTest, SkippingTheWriterFlushLosesWritesOnIncoherentBackings) {
  auto cluster = Start(memory::BackingKind::kIncoherent);
  ASSERT_NE(cluster, nullptr);
  auto c = Connect(cluster.get(), 0, /*skip_protocol_step=*/4);
  ASSERT_NE(c, nullptr);
  const int64_t n = 100000;
  uint8_t* p = nullptr;
  ASSERT_TRUE(c->pool(1)->Allocate(n * 8, 64, &p).ok());
  auto* v = reinterpret_cast<int64_t*>(p);
  for (int64_t i = 0; i < n; ++i) v[i] = i + 1;
  auto data = ArrayData::Make(int64(), n, {nullptr, Buffer::Wrap(p, n * 8)}, 0);
  auto batch = RecordBatch::Make(schema({field("v", int64(), false)}), n, {data});
  EXPECT_EQ(SumInt64(*Table::FromRecordBatches({batch}).ValueOrDie()), n * (n + 1) / 2);
  ASSERT_TRUE(c->Publish(batch, "unflushed").ok());
  Child reader =
      Child::Start({BinaryPath("quiver"), "demo-read", "--config", cluster->config_path(),
                    "--node", "2", "--name", "unflushed"});
  reader.Finish();
  EXPECT_NE(reader.output().find("rows=100000"), std::string::npos) << reader.output();
  EXPECT_EQ(reader.output().find("sums=" + std::to_string(n * (n + 1) / 2) + " "),
            std::string::npos)
      << "the reader saw the data although the writer never flushed it:\n"
      << reader.output();
}

TEST(ClusterTest, DaemonCommandLineErrors) {
  Child bad_id =
      Child::Start({BinaryPath("quiver"), "node", "--config", "x.toml", "--id", "x"});
  EXPECT_EQ(bad_id.Finish(), 2);
  Child big_id =
      Child::Start({BinaryPath("quiverd"), "--config", "x.toml", "--id", "65535"});
  EXPECT_EQ(big_id.Finish(), 2);
  Child no_config = Child::Start(
      {BinaryPath("quiverd"), "--config", "/nonexistent/cluster.toml", "--id", "0"});
  EXPECT_EQ(no_config.Finish(), 1);
  Child unknown = Child::Start({BinaryPath("quiverd"), "--frobnicate"});
  EXPECT_EQ(unknown.Finish(), 2);
  Child missing = Child::Start({BinaryPath("quiverd"), "--config"});
  EXPECT_EQ(missing.Finish(), 2);
  // The demo's numbers are checked before anything starts.
  for (const char* rows : {"abc", "-5", "99999999999999999999999"}) {
    Child demo = Child::Start({BinaryPath("quiver"), "demo", "--rows", rows});
    EXPECT_EQ(demo.Finish(), 2) << rows;
  }
  Child nodes = Child::Start({BinaryPath("quiver"), "demo", "--nodes", "99"});
  EXPECT_EQ(nodes.Finish(), 2);
  Child backing = Child::Start({BinaryPath("quiver"), "demo", "--backing", "floppy"});
  EXPECT_EQ(backing.Finish(), 2);
}

// A reader holds a table; unpublishing takes the name away at once, the
// memory stays until the reader goes, then it comes back.
TEST(ClusterTest, UnpublishedMemoryStaysUntilTheLastReaderGoes) {
  auto cluster = Start(memory::BackingKind::kShm, 2);
  ASSERT_NE(cluster, nullptr);
  auto c = Connect(cluster.get());
  ASSERT_NE(c, nullptr);
  const int64_t baseline = UsedBytes(*cluster, 0);
  ASSERT_GE(baseline, 0);
  {
    const int64_t n = 100000;
    auto batch = Int64Batch(c->local_pool(), n);
    ASSERT_TRUE(batch.ok());
    ASSERT_TRUE(c->Publish(*batch, "pinned").ok());
    // The name is taken: publishing again is refused, the table untouched.
    Status again = c->Publish(*batch, "pinned");
    EXPECT_EQ(again.code(), StatusCode::kAlreadyExists) << again.ToString();
  }
  Child reader = testing::StartReader(*cluster, 1, "pinned");
  const std::string first = reader.WaitForLine("sums=", 30000);
  ASSERT_FALSE(first.empty()) << reader.output();
  ASSERT_FALSE(reader.WaitForLine("pinned", 30000).empty()) << reader.output();
  ASSERT_TRUE(c->Drain().ok());  // our own arrays are gone: our frees are sent
  const int64_t held = UsedBytes(*cluster, 0);
  EXPECT_GT(held, baseline);
  ASSERT_TRUE(c->Unpublish("pinned").ok());
  EXPECT_TRUE(c->Get("pinned").status().IsNotFound());
  // Still there for the reader, with the same values (only the chunk's
  // record, a few hundred bytes, went with the name).
  EXPECT_GE(UsedBytes(*cluster, 0), baseline + 100000 * 8);
  const std::string again = testing::ResumReader(&reader);
  EXPECT_NE(again.find(first.substr(first.find("sums="), 30)), std::string::npos)
      << first << "\n"
      << again;
  // The reader dies without releasing: its session ends, the memory returns.
  reader.Kill(SIGKILL);
  reader.Finish();
  EXPECT_TRUE(Eventually([&] { return UsedBytes(*cluster, 0) == baseline; }, 5000))
      << UsedBytes(*cluster, 0) << " vs " << baseline;
}

// Two publishers of one name on two nodes at the same instant: each home
// registers its own chunk while telling the other, so each may find the
// rival's first and both lose. They back off and try again: every round has
// exactly one winner, whole, and the loser learns the name is taken.
TEST(ClusterTest, RacingPublishersOfOneNameHaveExactlyOneWinner) {
  auto cluster = Start(memory::BackingKind::kShm, 3);
  ASSERT_NE(cluster, nullptr);
  auto reader = Connect(cluster.get(), 2);
  ASSERT_NE(reader, nullptr);
  std::vector<Child> actors;
  for (uint32_t node : {0u, 1u}) {
    actors.push_back(testing::StartActor(*cluster, node, {}));
    ASSERT_FALSE(actors.back().WaitForLine("ready", 30000).empty())
        << actors.back().output();
  }
  for (int round = 0; round < 30; ++round) {
    const auto at = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count() +
                    50;
    // Both commands go out before either answer is awaited.
    ASSERT_TRUE(actors[0].Send("publish contested 1000 " + std::to_string(at)));
    ASSERT_TRUE(actors[1].Send("publish contested 2000 " + std::to_string(at)));
    const std::string ra = testing::ActorReply(actors[0]),
                      rb = testing::ActorReply(actors[1]);
    ASSERT_EQ((ra == "ok") + (rb == "ok"), 1)
        << "round " << round << ": " << ra << " / " << rb;
    const std::string& lost = ra == "ok" ? rb : ra;
    EXPECT_EQ(lost.rfind("err Already exists", 0), 0u) << lost;
    {
      auto got = reader->Get("contested");
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ((*got)->num_rows(), ra == "ok" ? 1000 : 2000);
    }
    Child& winner = ra == "ok" ? actors[0] : actors[1];
    ASSERT_EQ(testing::ActorDo(winner, "unpublish contested"), "ok");
  }
}

TEST(ClusterTest, ZeroCopyGetInTheSameProcessPinsUntilArraysGo) {
  auto cluster = Start(memory::BackingKind::kShm, 2);
  ASSERT_NE(cluster, nullptr);
  auto c = Connect(cluster.get());
  ASSERT_NE(c, nullptr);
  const int64_t baseline = UsedBytes(*cluster, 1);
  const uint8_t* values = nullptr;
  {
    // Built in node 1's memory by remote allocation.
    auto batch = Int64Batch(c->pool(1), 5000, 10);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    values = (*batch)->column(0)->data()->buffers[1]->data();
    EXPECT_TRUE(
        cluster->config().nodes[1].Contains(reinterpret_cast<uint64_t>(values), 8));
    ASSERT_TRUE(c->Publish(*batch, "remote").ok());
  }
  auto t = c->Get("remote");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->column(0)->chunk(0)->data()->buffers[1]->data(), values);
  EXPECT_EQ(SumInt64(**t), 5000 * 10 + 5000 * 4999 / 2);
  ASSERT_TRUE(c->Unpublish("remote").ok());
  ASSERT_TRUE(c->Drain().ok());
  EXPECT_GT(UsedBytes(*cluster, 1), baseline);  // our Get holds it
  EXPECT_EQ(SumInt64(**t), 5000 * 10 + 5000 * 4999 / 2);
  t = Status::Cancelled("let go");
  ASSERT_TRUE(c->Drain().ok());  // the release is sent
  EXPECT_TRUE(Eventually([&] { return UsedBytes(*cluster, 1) == baseline; }, 5000));
}

TEST(ClusterTest, DaemonKilledWhileReadersHoldPins) {
  auto cluster = Start(memory::BackingKind::kShm, 3);
  ASSERT_NE(cluster, nullptr);
  auto c = Connect(cluster.get());
  ASSERT_NE(c, nullptr);
  {
    auto local = Int64Batch(c->local_pool(), 20000);
    auto on2 = Int64Batch(c->pool(2), 20000);
    ASSERT_TRUE(local.ok() && on2.ok());
    ASSERT_TRUE(c->Publish(*local, "on-node-0").ok());
    ASSERT_TRUE(c->Publish(*on2, "on-node-2").ok());
  }
  // Readers on node 1 hold both.
  Child r0 = testing::StartReader(*cluster, 1, "on-node-0");
  Child r2 = testing::StartReader(*cluster, 1, "on-node-2");
  ASSERT_FALSE(r0.WaitForLine("pinned", 30000).empty()) << r0.output();
  ASSERT_FALSE(r2.WaitForLine("pinned", 30000).empty()) << r2.output();
  ASSERT_TRUE(cluster->Kill(2, SIGKILL).ok());
  // The others report its table lost and keep working.
  EXPECT_TRUE(Eventually([&] {
    auto l = c->List();
    if (!l.ok()) return false;
    for (const auto& t : *l) {
      if (t.name == "on-node-2" && t.lost) {
        EXPECT_NE(t.lost_reason.find("node 2"), std::string::npos) << t.lost_reason;
        return true;
      }
    }
    return false;
  }));
  auto g2 = c->Get("on-node-2");
  EXPECT_EQ(g2.status().code(), StatusCode::kUnavailable) << g2.status().ToString();
  EXPECT_NE(g2.status().message().find("lost"), std::string::npos);
  auto g0 = c->Get("on-node-0");
  ASSERT_TRUE(g0.ok()) << g0.status().ToString();
  EXPECT_EQ(SumInt64(**g0), 20000LL * 19999 / 2);
  Child r1 = Child::Start({BinaryPath("quiver"), "demo-read", "--config",
                           cluster->config_path(), "--node", "1", "--name", "on-node-0"});
  EXPECT_EQ(r1.Finish(), 0) << r1.output();
  // New tables still go between the survivors.
  {
    auto fresh = Int64Batch(c->local_pool(), 1000);
    ASSERT_TRUE(fresh.ok());
    ASSERT_TRUE(c->Publish(*fresh, "after").ok());
  }
  Child r3 = Child::Start({BinaryPath("quiver"), "demo-read", "--config",
                           cluster->config_path(), "--node", "1", "--name", "after"});
  EXPECT_EQ(r3.Finish(), 0) << r3.output();
  // The killed daemon restarts on its region: its table is readable again
  // everywhere, with its values.
  ASSERT_TRUE(cluster->Restart(2).ok());
  EXPECT_TRUE(Eventually(
      [&] {
        auto g = c->Get("on-node-2");
        return g.ok() && SumInt64(**g) == 20000LL * 19999 / 2;
      },
      15000));
  Child r4 = Child::Start({BinaryPath("quiver"), "demo-read", "--config",
                           cluster->config_path(), "--node", "2", "--name", "on-node-2"});
  EXPECT_EQ(r4.Finish(), 0) << r4.output();
  EXPECT_EQ(r0.Finish(), 0) << r0.output();
  EXPECT_EQ(r2.Finish(), 0) << r2.output();
}

}  // namespace
}  // namespace quiver
