// Daemons killed (SIGKILL) or stopped (SIGTERM) and started again on their
// regions: published tables are readable again everywhere, counts are
// right, readers keep what they held, and what nobody claims is freed.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>

#include "cluster/cluster_util.h"
#include "control/client/admin.h"
#include "quiver/client.h"
#include "quiver/columnar/builder.h"
#include "quiver/store.h"

namespace quiver {
namespace {

using testing::Child;
using testing::ClusterSpec;
using testing::ConnectOnline;
using testing::Eventually;
using testing::StartCluster;
using testing::UsedBytes;

constexpr int kGraceMs = 2000;

ClusterSpec RestartSpec(int nodes = 3) {
  ClusterSpec spec;
  spec.nodes = nodes;
  spec.limits.session_quota = {1.0, 0};
  spec.limits.node_quota = {1.0, 0};
  spec.limits.restart_grace_ms = kGraceMs;
  // The grace period is at least a lease: a reader may be silent that long.
  spec.limits.session_lease_ms = kGraceMs;
  return spec;
}

// Publishes `rows` int64 values 0..rows-1 built in `where`'s memory.
void Publish(Client* c, uint32_t where, int64_t rows, const std::string& name,
             std::optional<uint64_t> first_row = std::nullopt) {
  Int64Builder b(c->pool(where));
  ASSERT_TRUE(b.Reserve(rows).ok());
  const int64_t start = static_cast<int64_t>(first_row.value_or(0));
  for (int64_t i = 0; i < rows; ++i) b.UnsafeAppend(start + i);
  auto batch = RecordBatch::FromArrays({"v"}, {b.Finish().ValueOrDie()}).ValueOrDie();
  PublishOptions o;
  o.first_row = first_row;
  ASSERT_TRUE(c->Publish(batch, name, o).ok());
  batch.reset();
  ASSERT_TRUE(c->Drain().ok());
}

using testing::SumsOf;

// `quiver demo-read` of `name` on `node` sums it to what it should.
void ExpectReadable(const control::LocalCluster& cluster, uint32_t node,
                    const std::string& name, int64_t rows, int chunks = 1) {
  Child r = Child::Start({testing::BinaryPath("quiver"), "demo-read", "--config",
                          cluster.config_path(), "--node", std::to_string(node), "--name",
                          name, "--chunks", std::to_string(chunks)});
  EXPECT_EQ(r.Finish(), 0) << "node " << node << ": " << r.output();
  EXPECT_NE(r.output().find(SumsOf(rows)), std::string::npos) << r.output();
}

class OwnerRestartTest : public ::testing::TestWithParam<int> {};

TEST_P(OwnerRestartTest, TablesAreReadableAgainAndTheirMemoryReturns) {
  const int sig = GetParam();
  auto cluster = StartCluster(RestartSpec());
  ASSERT_NE(cluster, nullptr);
  const int64_t base = UsedBytes(*cluster, 0);
  {
    auto publisher = ConnectOnline(*cluster, 1);
    ASSERT_NE(publisher, nullptr);
    Publish(publisher.get(), 0, 300000, "on-0");
    // An allocation nobody publishes: freed once the restart's grace ends.
    uint8_t* loose = nullptr;
    ASSERT_TRUE(publisher->pool(0)->Allocate(1 << 20, 64, &loose).ok());
    ASSERT_TRUE(cluster->Kill(0, sig).ok());
    ASSERT_TRUE(cluster->Restart(0).ok());
    // The publisher's session with node 0 ended with the daemon.
  }
  for (uint32_t n = 0; n < 3; ++n) {
    EXPECT_TRUE(Eventually(
        [&] {
          auto c = ConnectOnline(*cluster, n);
          return c && c->Get("on-0").ok();
        },
        15000))
        << "node " << n;
    ExpectReadable(*cluster, n, "on-0", 300000);
  }
  // Counts are right: no pins left, not lost anywhere.
  auto any = ConnectOnline(*cluster, 2);
  ASSERT_NE(any, nullptr);
  auto list = any->List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].pins, 0u);
  EXPECT_FALSE((*list)[0].lost);
  // The publisher is gone: unpublished by anyone, the memory comes back
  // (the loose allocation after the grace period).
  ASSERT_TRUE(any->Unpublish("on-0").ok());
  EXPECT_TRUE(Eventually([&] { return UsedBytes(*cluster, 0) == base; }, kGraceMs + 5000))
      << UsedBytes(*cluster, 0) << " vs " << base;
}

INSTANTIATE_TEST_SUITE_P(Signals, OwnerRestartTest, ::testing::Values(SIGKILL, SIGTERM),
                         [](const auto& info) {
                           return std::string(info.param == SIGKILL ? "Kill" : "Term");
                         });

// A reader holds a table across its owner's crash: its client re-claims the
// pin within the grace period, so neither the unpublish nor the end of the
// grace frees what it reads.
TEST(RestartTest, AReaderKeepsItsPinAcrossItsOwnersRestart) {
  auto cluster = StartCluster(RestartSpec());
  ASSERT_NE(cluster, nullptr);
  const int64_t base = UsedBytes(*cluster, 0);
  {
    auto publisher = ConnectOnline(*cluster, 2);
    ASSERT_NE(publisher, nullptr);
    Publish(publisher.get(), 0, 400000, "held");
  }
  Child reader = testing::StartReader(*cluster, 1, "held");
  ASSERT_FALSE(reader.WaitForLine("pinned", 30000).empty()) << reader.output();
  ASSERT_TRUE(cluster->Kill(0, SIGKILL).ok());
  ASSERT_TRUE(cluster->Restart(0).ok());
  auto other = ConnectOnline(*cluster, 2);
  ASSERT_NE(other, nullptr);
  auto pinned = [&] {
    auto st = control::client::QueryClusterStatus(cluster->config().nodes[0], 2000);
    return st.ok() && st->tables.size() == 1 && st->tables[0].pins == 1;
  };
  EXPECT_TRUE(Eventually(pinned, kGraceMs)) << "the reader did not re-claim its pin";
  ASSERT_TRUE(other->Unpublish("held").ok());
  // Once the grace period is over, every free byte of node 0 is overwritten.
  EXPECT_TRUE(Eventually([&] { return testing::Recovering(*cluster, 0) == false; },
                         kGraceMs + 10000));
  EXPECT_GT(testing::Scribble(other.get(), 0), 0u);
  EXPECT_NE(testing::ResumReader(&reader).find(SumsOf(400000)), std::string::npos)
      << reader.output();
  EXPECT_EQ(reader.Finish(), 0);
  EXPECT_TRUE(Eventually([&] { return UsedBytes(*cluster, 0) == base; }, 5000))
      << UsedBytes(*cluster, 0) << " vs " << base;
}

// Every daemon stopped and started again: the cluster keeps its published
// tables (data and descriptors are in the regions), a HugeTable spread
// over all nodes included; unpublished, their memory comes back.
TEST(RestartTest, AWholeClusterRestartKeepsPublishedTables) {
  auto cluster = StartCluster(RestartSpec());
  ASSERT_NE(cluster, nullptr);
  int64_t base[3];
  for (uint32_t n = 0; n < 3; ++n) base[n] = UsedBytes(*cluster, n);
  {
    auto c = ConnectOnline(*cluster, 0);
    ASSERT_NE(c, nullptr);
    Publish(c.get(), 1, 100000, "plain");
    for (uint32_t n = 0; n < 3; ++n) Publish(c.get(), n, 100000, "huge", n * 100000);
  }
  for (int n = 0; n < 3; ++n) ASSERT_TRUE(cluster->Kill(n, SIGTERM).ok());
  for (int n = 0; n < 3; ++n) ASSERT_TRUE(cluster->Restart(n).ok());
  auto c = ConnectOnline(*cluster, 2);
  ASSERT_NE(c, nullptr);
  Status last;
  EXPECT_TRUE(Eventually(
      [&] {
        auto t = c->GetHugeTable("huge", {0, 3});
        last = t.status();
        return t.ok() && (*t)->num_rows() == 300000;
      },
      15000))
      << last.ToString();
  for (uint32_t n = 0; n < 3; ++n) {
    ExpectReadable(*cluster, n, "plain", 100000);
    ExpectReadable(*cluster, n, "huge", 300000, 3);
  }
  ASSERT_TRUE(c->Unpublish("plain").ok());
  ASSERT_TRUE(c->Unpublish("huge").ok());
  EXPECT_TRUE(Eventually(
      [&] {
        for (uint32_t n = 0; n < 3; ++n) {
          if (UsedBytes(*cluster, n) != base[n]) return false;
        }
        return true;
      },
      kGraceMs + 5000));
}

// A node restarted while another homes thousands of chunks pulls the whole
// list, page by page (one page would exceed the protocol's frame limit).
TEST(RestartTest, ARestartedPeerPullsALongChunkListByPages) {
  auto cluster = StartCluster(RestartSpec(2));
  ASSERT_NE(cluster, nullptr);
  constexpr int64_t kBatches = 9000, kRows = 10;
  {
    auto c = ConnectOnline(*cluster, 0);
    ASSERT_NE(c, nullptr);
    Int64Builder b(c->local_pool());
    ASSERT_TRUE(b.Reserve(kBatches * kRows).ok());
    for (int64_t i = 0; i < kBatches * kRows; ++i) b.UnsafeAppend(i);
    auto all = b.Finish().ValueOrDie();
    std::vector<RecordBatchPtr> batches;
    for (int64_t i = 0; i < kBatches; ++i) {
      batches.push_back(
          RecordBatch::FromArrays({"v"}, {all->Slice(i * kRows, kRows)}).ValueOrDie());
    }
    Status published = c->Publish(Table::FromRecordBatches(batches).ValueOrDie(), "many");
    ASSERT_TRUE(published.ok()) << published.ToString();
  }
  ASSERT_TRUE(cluster->Kill(1, SIGKILL).ok());
  ASSERT_TRUE(cluster->Restart(1).ok());
  auto reader = ConnectOnline(*cluster, 1);
  ASSERT_NE(reader, nullptr);
  Status last;
  EXPECT_TRUE(Eventually(
      [&] {
        auto t = reader->Get("many");
        last = t.status();
        return t.ok() && (*t)->num_rows() == kBatches * kRows;
      },
      30000))
      << last.ToString();
}

// A daemon killed again and again before its grace period ends: each new
// daemon recovers what the earlier generations left (published tables,
// a replica's record of a table homed elsewhere, store objects sealed and
// being created, loose allocations of their clients) and, once one
// recovery runs to its end, everything nobody claimed is freed, whatever
// generation left it.
TEST(RestartTest, QuickRestartsLeaveNoLeftovers) {
  auto cluster = StartCluster(RestartSpec(2));
  ASSERT_NE(cluster, nullptr);
  const int64_t base = UsedBytes(*cluster, 0);
  {
    auto c = ConnectOnline(*cluster, 1);
    ASSERT_NE(c, nullptr);
    Publish(c.get(), 0, 100000, "kept");
    {
      // Homed at node 0 but for one column in node 1's memory... and one
      // homed at node 1 with a column in node 0's: node 0 keeps its record.
      Int64Builder a(c->pool(1)), b(c->pool(0));
      for (int64_t k = 0; k < 1000; ++k) {
        ASSERT_TRUE(a.Append(k).ok());
        ASSERT_TRUE(b.Append(k).ok());
      }
      auto batch = RecordBatch::FromArrays(
                       {"a", "b"}, {a.Finish().ValueOrDie(), b.Finish().ValueOrDie()})
                       .ValueOrDie();
      ASSERT_TRUE(c->Publish(batch, "spread").ok());
    }
    store::ObjectStore objects(*c);
    store::CreateOptions at0;
    at0.node = 0;
    std::vector<std::shared_ptr<Buffer>> being_created;
    for (int i = 0; i < 9; ++i) {
      // Each generation gets a loose allocation, a sealed store object and
      // one being created, then the daemon dies.
      uint8_t* loose = nullptr;
      ASSERT_TRUE(Eventually(
          [&] { return c->pool(0)->Allocate(1 << 20, 64, &loose).ok(); }, 15000))
          << "restart " << i;
      std::memset(loose, 0x5A, 1 << 20);
      const auto sealed = store::ObjectId::FromName("sealed-" + std::to_string(i));
      const auto open = store::ObjectId::FromName("open-" + std::to_string(i));
      EXPECT_TRUE(Eventually(
          [&] {
            return objects.CreateAndSeal(sealed, std::string(4096, 'x'), "m", at0).ok();
          },
          15000));
      auto being = objects.Create(open, 1 << 20, "m", at0);
      EXPECT_TRUE(being.ok()) << being.status().ToString();
      if (being.ok()) being_created.push_back(*being);
      ASSERT_TRUE(cluster->Kill(0, SIGKILL).ok());
      ASSERT_TRUE(cluster->Restart(0).ok());
    }
    EXPECT_TRUE(Eventually([&] { return c->Get("kept").ok(); }, 15000));
    ExpectReadable(*cluster, 1, "kept", 100000);
    ASSERT_TRUE(c->Unpublish("kept").ok());
    ASSERT_TRUE(c->Unpublish("spread").ok());
    for (int i = 0; i < 9; ++i) {
      const auto sealed = store::ObjectId::FromName("sealed-" + std::to_string(i));
      EXPECT_TRUE(Eventually([&] { return objects.Delete({sealed}).ok(); }, 15000)) << i;
    }
    being_created.clear();
  }
  EXPECT_TRUE(
      Eventually([&] { return UsedBytes(*cluster, 0) == base; }, kGraceMs + 15000))
      << UsedBytes(*cluster, 0) << " vs " << base;
}

}  // namespace
}  // namespace quiver
