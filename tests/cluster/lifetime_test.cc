// Memory always comes back, and never while someone reads it: clients
// killed holding allocations and pins, readers in their own PID namespace,
// readers whose own daemon dies, publishers that exit, refused copies.
// Where memory must not have been reused, the test first fills every free
// byte of the region (Scribble) and then checks the reader's sums.
#include <gtest/gtest.h>
#include <signal.h>

#include "cluster/cluster_util.h"
#include "quiver/client.h"
#include "quiver/columnar/builder.h"

namespace quiver {
namespace {

using testing::Child;
using testing::ClusterSpec;
using testing::ConnectOnline;
using testing::Eventually;
using testing::StartCluster;
using testing::UsedBytes;

// Quotas of the whole region: the scribbler can reach every free byte.
ClusterSpec LifetimeSpec(int nodes = 3) {
  ClusterSpec spec;
  spec.nodes = nodes;
  spec.limits.session_quota = {1.0, 0};
  spec.limits.node_quota = {1.0, 0};
  return spec;
}

// Publishes "t": `rows` int64 values 0..rows-1 in `where`'s memory, by a
// client that then lets go of its own references.
void PublishTable(Client* c, uint32_t where, int64_t rows,
                  const std::string& name = "t") {
  Int64Builder b(c->pool(where));
  ASSERT_TRUE(b.Reserve(rows).ok());
  for (int64_t i = 0; i < rows; ++i) b.UnsafeAppend(i);
  auto batch = RecordBatch::FromArrays({"v"}, {b.Finish().ValueOrDie()}).ValueOrDie();
  ASSERT_TRUE(c->Publish(batch, name).ok());
  batch.reset();
  ASSERT_TRUE(c->Drain().ok());
}

using testing::SumsOf;

TEST(LifetimeTest, AClientKilledHoldingAllocationsAndPinsLeavesNothing) {
  auto cluster = StartCluster(LifetimeSpec());
  ASSERT_NE(cluster, nullptr);
  auto owner = ConnectOnline(*cluster, 0);
  ASSERT_NE(owner, nullptr);
  PublishTable(owner.get(), 0, 100000);
  int64_t base[3];
  for (uint32_t n = 0; n < 3; ++n) base[n] = UsedBytes(*cluster, n);
  // One actor with unsealed allocations on every node, one with sealed
  // ones, both holding the table.
  Child unsealed = testing::StartActor(*cluster, 2,
                                       {"--alloc", "0:4000000", "--alloc", "1:4000000",
                                        "--alloc", "2:1000000", "--get", "t"});
  Child sealed = testing::StartActor(
      *cluster, 1,
      {"--alloc", "0:3000000", "--alloc", "2:3000000", "--seal", "--get", "t"});
  ASSERT_FALSE(unsealed.WaitForLine("ready", 30000).empty()) << unsealed.output();
  ASSERT_FALSE(sealed.WaitForLine("ready", 30000).empty()) << sealed.output();
  EXPECT_GE(UsedBytes(*cluster, 0), base[0] + 7000000);
  auto pins = [&] {
    auto l = owner->List();
    uint32_t p = 0;
    if (l.ok()) {
      for (const auto& t : *l) p += t.name == "t" ? t.pins : 0;
    }
    return p;
  };
  EXPECT_EQ(pins(), 2u);
  unsealed.Kill(SIGKILL);
  sealed.Kill(SIGKILL);
  unsealed.Finish();
  sealed.Finish();
  // Back to the baseline on every node within 5 s.
  EXPECT_TRUE(Eventually(
      [&] {
        for (uint32_t n = 0; n < 3; ++n) {
          if (UsedBytes(*cluster, n) != base[n]) return false;
        }
        return true;
      },
      5000))
      << UsedBytes(*cluster, 0) << "/" << base[0] << " " << UsedBytes(*cluster, 1) << "/"
      << base[1] << " " << UsedBytes(*cluster, 2) << "/" << base[2];
  EXPECT_EQ(pins(), 0u);
}

TEST(LifetimeTest, AReaderInItsOwnPidNamespaceKeepsItsPin) {
  auto cluster = StartCluster(LifetimeSpec(2));
  ASSERT_NE(cluster, nullptr);
  auto owner = ConnectOnline(*cluster, 0);
  ASSERT_NE(owner, nullptr);
  const int64_t base = UsedBytes(*cluster, 0);
  PublishTable(owner.get(), 0, 200000);
  // pid 1 of a fresh PID namespace: the daemon cannot see it, and must not
  // need to.
  Child reader = testing::StartReader(*cluster, 1, "t",
                                      {"unshare", "--pid", "--fork", "--kill-child"});
  ASSERT_FALSE(reader.WaitForLine("pinned", 30000).empty()) << reader.output();
  ASSERT_TRUE(owner->Unpublish("t").ok());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_GT(testing::Scribble(owner.get(), 0), 0u);
  EXPECT_NE(testing::ResumReader(&reader).find(SumsOf(200000)), std::string::npos)
      << reader.output();
  // When it goes, so does its pin (no pid is watched: its session ends).
  reader.Kill(SIGKILL);
  reader.Finish();
  EXPECT_TRUE(Eventually([&] { return UsedBytes(*cluster, 0) == base; }, 5000))
      << UsedBytes(*cluster, 0) << " vs " << base;
}

TEST(LifetimeTest, AReaderWhoseOwnDaemonDiesKeepsReadingCorrectData) {
  auto cluster = StartCluster(LifetimeSpec(3));
  ASSERT_NE(cluster, nullptr);
  auto owner = ConnectOnline(*cluster, 0);
  ASSERT_NE(owner, nullptr);
  const int64_t base = UsedBytes(*cluster, 0);
  PublishTable(owner.get(), 0, 200000);
  Child reader = testing::StartReader(*cluster, 1, "t");
  ASSERT_FALSE(reader.WaitForLine("pinned", 30000).empty()) << reader.output();
  ASSERT_TRUE(cluster->Kill(1, SIGKILL).ok());
  // Its pins are held at the owner by the reader's own session.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_TRUE(owner->Unpublish("t").ok());
  EXPECT_GT(testing::Scribble(owner.get(), 0), 0u);
  EXPECT_NE(testing::ResumReader(&reader).find(SumsOf(200000)), std::string::npos)
      << reader.output();
  EXPECT_GT(UsedBytes(*cluster, 0), base);
  EXPECT_EQ(reader.Finish(), 0) << reader.output();
  EXPECT_TRUE(Eventually([&] { return UsedBytes(*cluster, 0) == base; }, 5000));
}

TEST(LifetimeTest, APublisherThatExitsLeavesItsTableUntilSomeoneUnpublishes) {
  auto cluster = StartCluster(LifetimeSpec(3));
  ASSERT_NE(cluster, nullptr);
  const int64_t base = UsedBytes(*cluster, 1);
  Child publisher = testing::StartActor(
      *cluster, 0, {"--publish", "left", "--rows", "50000", "--owner", "1"});
  ASSERT_FALSE(publisher.WaitForLine("ready", 30000).empty()) << publisher.output();
  publisher.Kill(SIGKILL);
  publisher.Finish();
  // Readable everywhere after its publisher died.
  for (const char* node : {"0", "1", "2"}) {
    Child r = Child::Start({testing::BinaryPath("quiver"), "demo-read", "--config",
                            cluster->config_path(), "--node", node, "--name", "left"});
    EXPECT_EQ(r.Finish(), 0) << r.output();
    EXPECT_NE(r.output().find(SumsOf(50000)), std::string::npos) << r.output();
  }
  auto other = ConnectOnline(*cluster, 2);
  ASSERT_NE(other, nullptr);
  auto list = other->List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  // Its publisher is gone: any client may unpublish it, and its memory
  // comes back.
  ASSERT_TRUE(other->Unpublish("left").ok());
  EXPECT_TRUE(other->Get("left").status().IsNotFound());
  EXPECT_TRUE(Eventually([&] { return UsedBytes(*cluster, 1) == base; }, 5000))
      << UsedBytes(*cluster, 1) << " vs " << base;
}

TEST(LifetimeTest, ARefusedFullCopyLeavesNothingBehind) {
  auto cluster = StartCluster(LifetimeSpec(2));
  ASSERT_NE(cluster, nullptr);
  auto c = ConnectOnline(*cluster, 0);
  ASSERT_NE(c, nullptr);
  Int64Builder b;
  ASSERT_TRUE(b.Reserve(100000).ok());
  for (int64_t i = 0; i < 100000; ++i) b.UnsafeAppend(i);
  auto table =
      Table::FromRecordBatches(
          {RecordBatch::FromArrays({"v"}, {b.Finish().ValueOrDie()}).ValueOrDie()})
          .ValueOrDie();
  const int64_t base = UsedBytes(*cluster, 1);
  ASSERT_TRUE(c->SendTableFull(table, "dup", std::nullopt, {1}).ok());
  const int64_t one = UsedBytes(*cluster, 1);
  EXPECT_GT(one, base + 800000);
  for (int i = 0; i < 5; ++i) {
    auto again = c->SendTableFull(table, "dup", std::nullopt, {1});
    EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists)
        << again.status().ToString();
    EXPECT_EQ(UsedBytes(*cluster, 1), one);
  }
  // Unpublished by its sender: the copy goes.
  ASSERT_TRUE(c->Unpublish("dup").ok());
  EXPECT_TRUE(Eventually([&] { return UsedBytes(*cluster, 1) == base; }, 5000));
}

}  // namespace
}  // namespace quiver
