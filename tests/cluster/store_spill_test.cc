// The object store under memory pressure and at scale, on real daemons:
// spilling to a directory and transparent restore, tables bigger than any
// node's region, and the `quiver store` / `quiver status` command line.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "quiver/columnar/builder.h"
#include "store_util.h"

namespace quiver {
namespace {

using store::ObjectId;
using store::ObjectState;
using store::ObjectStore;
using testing::BinaryPath;
using testing::Child;
using testing::ClusterSpec;
using testing::Eventually;
using testing::StartCluster;
using testing::UsedBytes;
using namespace testing::store_test;  // NOLINT(build/namespaces)

ClusterSpec SpillSpec() {
  ClusterSpec s = Spec(32ULL << 20);
  s.daemon_args = {"--store-spill", "{dir}/spill{node}"};
  return s;
}

std::vector<std::string> SpillFiles(const control::LocalCluster& cluster, int node) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(
           cluster.dir() + "/spill" + std::to_string(node), ec)) {
    out.push_back(e.path().string());
  }
  return out;
}

TEST(StoreSpillTest, SpilledObjectsComeBackBitIdenticalOnAnyNode) {
  auto cluster = StartCluster(SpillSpec());
  ASSERT_NE(cluster, nullptr);
  Nodes n = Connect(*cluster);
  ASSERT_TRUE(n.ok());
  ObjectStore& s0 = *n.store;
  struct stat st;
  ASSERT_EQ(stat((cluster->dir() + "/spill0").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  // One object stays pinned by a reader here: it is never spilled.
  const ObjectId pinned = ObjectId::FromName("pinned");
  auto pb = s0.Create(pinned, 2 << 20);
  ASSERT_TRUE(pb.ok());
  Fill(pb->get(), 99);
  pb->reset();
  ASSERT_TRUE(s0.Seal(pinned).ok());
  auto held = s0.Get({pinned});
  ASSERT_TRUE(held.ok() && (*held)[0].status.ok());

  // Three times node 0's region, all placed there: older ones spill.
  constexpr int kObjects = 30;
  for (int i = 0; i < kObjects; ++i) {
    const ObjectId id = ObjectId::FromName("obj-" + std::to_string(i));
    auto b = s0.Create(id, 3 << 20, "meta-" + std::to_string(i));
    ASSERT_TRUE(b.ok()) << i << ": " << b.status().ToString();
    Fill(b->get(), static_cast<uint8_t>(i));
    b->reset();
    ASSERT_TRUE(s0.Seal(id).ok());
  }
  auto stats = s0.Stats(0);
  ASSERT_TRUE(stats.ok());
  EXPECT_GT(stats->spills, 0u);
  EXPECT_EQ(stats->evictions, 0u);  // spilled, not dropped
  EXPECT_GT(stats->objects_spilled, 0u);
  EXPECT_EQ(SpillFiles(*cluster, 0).size(), stats->objects_spilled);
  auto listed = s0.List();
  ASSERT_TRUE(listed.ok());
  size_t spilled = 0;
  for (const auto& o : *listed) {
    EXPECT_EQ(o.home, 0u) << o.id.Hex();
    if (o.state == ObjectState::kSpilled) ++spilled;
    if (o.id == pinned) {
      EXPECT_EQ(o.state, ObjectState::kSealed);
    }
  }
  EXPECT_EQ(spilled, stats->objects_spilled);
  EXPECT_TRUE(Holds(*(*held)[0].data, 99));
  EXPECT_TRUE(*s0.Contains(ObjectId::FromName("obj-0")));

  // Every object reads back bit-identical, from a client on another node
  // and from this one, whether it was spilled or not.
  for (int i = 0; i < kObjects; ++i) {
    const std::string name = "obj-" + std::to_string(i);
    ASSERT_EQ(n.Do(2, "get " + name + " 0 " + std::to_string(i)), "ok 0 intact") << i;
    ASSERT_EQ(n.Do(2, "release " + name), "ok");
  }
  for (int i = 0; i < kObjects; i += 3) {
    const ObjectId id = ObjectId::FromName("obj-" + std::to_string(i));
    auto r = s0.Get({id});
    ASSERT_TRUE(r.ok() && (*r)[0].status.ok()) << i;
    EXPECT_TRUE(Holds(*(*r)[0].data, static_cast<uint8_t>(i))) << i;
    EXPECT_EQ((*r)[0].metadata->view(), "meta-" + std::to_string(i));
    ASSERT_TRUE(s0.Release(id).ok());
  }
  stats = s0.Stats(0);
  ASSERT_TRUE(stats.ok());
  EXPECT_GT(stats->restores, 0u);
  EXPECT_EQ(stats->spill_failures, 0u);
  EXPECT_TRUE(Holds(*(*held)[0].data, 99));

  // Delete of a spilled object removes its file.
  ASSERT_TRUE(s0.Evict(1ULL << 40).ok());
  const size_t files = SpillFiles(*cluster, 0).size();
  ASSERT_GT(files, 1u);
  ASSERT_TRUE(s0.Delete({ObjectId::FromName("obj-1")}).ok());
  EXPECT_EQ(SpillFiles(*cluster, 0).size(), files - 1);
  EXPECT_FALSE(*s0.Contains(ObjectId::FromName("obj-1")));

  // A damaged spill file never comes back as the object: the Get says
  // which file, and the store forgets the object.
  const ObjectId victim = ObjectId::FromName("obj-2");
  const std::string path = cluster->dir() + "/spill0/" + victim.Hex() + ".spill";
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good()) << path;
    f.seekp(12345);
    f.put('\x7F');
  }
  auto r = s0.Get({victim});
  const Status why = r.ok() ? (*r)[0].status : r.status();
  EXPECT_FALSE(why.ok());
  EXPECT_NE(why.message().find("corrupt"), std::string::npos) << why.ToString();
  EXPECT_FALSE(*s0.Contains(victim));
  // The others are intact.
  EXPECT_EQ(n.Do(3, "get obj-3 0 3"), "ok 0 intact");
}

TEST(StoreSpillTest, SpilledObjectsSurviveARestartOfTheirHome) {
  auto cluster = StartCluster(SpillSpec());
  ASSERT_NE(cluster, nullptr);
  Nodes n = Connect(*cluster);
  ASSERT_TRUE(n.ok());
  // Node 1's own client fills node 1 twice over: the older ones spill.
  constexpr int kObjects = 20;
  for (int i = 0; i < kObjects; ++i) {
    const std::string name = "kept-" + std::to_string(i);
    ASSERT_EQ(n.Do(1, "create " + name + " 3145728 " + std::to_string(i)), "ok") << i;
    ASSERT_EQ(n.Do(1, "seal " + name), "ok");
  }
  auto before = n.store->Stats(1);
  ASSERT_TRUE(before.ok());
  ASSERT_GT(before->objects_spilled, 0u);
  ASSERT_GT(before->objects_sealed, 0u);
  n.actors[0].Kill(SIGKILL);
  ASSERT_TRUE(cluster->Kill(1, SIGKILL).ok());
  ASSERT_TRUE(cluster->Restart(1).ok());
  // Back, in memory and on disk as they were, and every byte right.
  store::StoreStats after;
  ASSERT_TRUE(Eventually(
      [&] {
        auto st = n.store->Stats(1);
        if (!st.ok()) return false;
        after = *st;
        return true;
      },
      30000));
  EXPECT_EQ(after.objects_spilled, before->objects_spilled);
  EXPECT_EQ(after.objects_sealed, before->objects_sealed);
  for (int i = 0; i < kObjects; ++i) {
    const ObjectId id = ObjectId::FromName("kept-" + std::to_string(i));
    Status why;
    ASSERT_TRUE(Eventually(
        [&] {
          auto r = n.store->Get({id});
          why = r.ok() ? (*r)[0].status : r.status();
          if (!why.ok()) return false;
          EXPECT_EQ((*r)[0].home, 1u);
          EXPECT_TRUE(Holds(*(*r)[0].data, static_cast<uint8_t>(i))) << i;
          return true;
        },
        30000))
        << i << ": " << why.ToString();
    ASSERT_TRUE(n.store->Release(id).ok());
  }
  EXPECT_GT(n.store->Stats(1)->restores, 0u);
}

// A table of `rows` rows: column 0 is 0, 1, 2, ... (the actors sum it).
TablePtr BigTable(int64_t rows) {
  Int64Builder a, b;
  EXPECT_TRUE(a.Reserve(rows).ok());
  EXPECT_TRUE(b.Reserve(rows).ok());
  for (int64_t i = 0; i < rows; ++i) {
    a.UnsafeAppend(i);
    b.UnsafeAppend(i * 7 + 1);
  }
  auto batch = RecordBatch::FromArrays({"i", "j"}, {*a.Finish(), *b.Finish()});
  EXPECT_TRUE(batch.ok());
  return *Table::FromRecordBatches({*batch});
}

TEST(StoreSpillTest, ATableBiggerThanAnyRegionRoundTripsZeroCopy) {
  auto cluster = StartCluster(Spec(16ULL << 20));
  ASSERT_NE(cluster, nullptr);
  Nodes n = Connect(*cluster);
  ASSERT_TRUE(n.ok());
  int64_t base[kNodes];
  for (uint32_t i = 0; i < kNodes; ++i) base[i] = UsedBytes(*cluster, i);

  // 28 MB, almost two regions. While a PutTable writes, its unsealed parts
  // count against its session's quota at each node: half of each region by
  // default, so 32 MiB here.
  constexpr int64_t kRows = 1750000;
  TablePtr table = BigTable(kRows);
  const ObjectId id = ObjectId::FromName("big");
  auto layout = n.store->PutTable(id, *table);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_GT(layout->bytes, 16ULL << 20);
  ASSERT_GT(layout->parts.size(), 4u);
  const std::set<uint32_t> homes(layout->part_homes.begin(), layout->part_homes.end());
  EXPECT_EQ(homes.size(), static_cast<size_t>(kNodes));

  auto back = n.store->GetTable(id, 1000);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)->num_rows(), kRows);
  EXPECT_TRUE((*back)->Equals(*table));
  // Zero-copy: every chunk's values are in some node's region, and the
  // chunks come from every node.
  std::set<uint32_t> regions;
  for (const auto& chunk : (*back)->column(1)->chunks()) {
    const uint8_t* p = chunk->data()->buffers[1]->data();
    const auto* node = n.client->config().NodeOfAddress(reinterpret_cast<uint64_t>(p));
    ASSERT_NE(node, nullptr);
    regions.insert(node->id);
  }
  EXPECT_EQ(regions.size(), static_cast<size_t>(kNodes));
  const std::string sum = std::to_string(kRows * (kRows - 1) / 2);
  for (uint32_t node = 1; node < kNodes; ++node) {
    EXPECT_EQ(n.Do(node, "table big"),
              "ok rows=" + std::to_string(kRows) + " sum=" + sum);
  }

  // Deleting the table deletes its parts: every node back at its baseline.
  back->reset();
  ASSERT_TRUE(n.store->DeleteTable(id).ok());
  ASSERT_TRUE(n.client->Drain().ok());
  for (uint32_t i = 0; i < kNodes; ++i) {
    EXPECT_TRUE(Eventually([&] { return UsedBytes(*cluster, i) == base[i]; }))
        << "node " << i << ": " << UsedBytes(*cluster, i) << " vs " << base[i];
  }
  EXPECT_TRUE(n.store->GetTable(id).status().IsNotFound());

  // Bigger than the whole cluster: refused, and nothing is left behind.
  auto huge = n.store->PutTable(ObjectId::FromName("huge"), *BigTable(6000000));
  EXPECT_TRUE(huge.status().IsOutOfMemory()) << huge.status().ToString();
  ASSERT_TRUE(n.client->Drain().ok());
  for (uint32_t i = 0; i < kNodes; ++i) {
    EXPECT_TRUE(Eventually([&] { return UsedBytes(*cluster, i) == base[i]; })) << i;
  }
  auto listed = n.store->List();
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
}

// Runs `quiver ARGS...`; returns its exit code and stdout.
std::pair<int, std::string> Quiver(std::vector<std::string> args) {
  args.insert(args.begin(), BinaryPath("quiver"));
  Child c = Child::Start(args);
  c.WaitForLine("\x01never", 30000);  // to EOF
  const int code = c.Finish();
  return {code, c.output()};
}

TEST(StoreSpillTest, TheCommandLineListsStatsAndRemovesObjects) {
  auto cluster = StartCluster(SpillSpec());
  ASSERT_NE(cluster, nullptr);
  Nodes n = Connect(*cluster);
  ASSERT_TRUE(n.ok());
  const std::string config = cluster->config_path();
  ASSERT_EQ(n.Do(2, "put cli-object hello"), "ok");
  const ObjectId id = ObjectId::FromName("cli-object");

  auto [code, out] = Quiver({"store", "ls", "--config", config});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find(id.Hex()), std::string::npos) << out;
  EXPECT_NE(out.find("sealed"), std::string::npos) << out;

  std::tie(code, out) = Quiver({"store", "stat", "--config", config, "cli-object"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("home      node 2"), std::string::npos) << out;
  EXPECT_NE(out.find("data      5 bytes"), std::string::npos) << out;

  std::tie(code, out) = Quiver({"store", "stat", "--config", config, "--node", "1"});
  EXPECT_EQ(code, 0) << out;
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_NE(out.find("node " + std::to_string(i) + "  capacity"), std::string::npos)
        << out;
  }
  EXPECT_NE(out.find("spill0"), std::string::npos) << out;

  std::tie(code, out) = Quiver({"status", "--config", config});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("spilled"), std::string::npos) << out;
  EXPECT_NE(out.find("1 / 0.0 MiB"), std::string::npos) << out;  // node 2's object

  std::tie(code, out) = Quiver({"store", "rm", "--config", config, id.Hex()});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(n.Do(1, "contains cli-object"), "ok false");
  std::tie(code, out) = Quiver({"store", "rm", "--config", config, id.Hex()});
  EXPECT_EQ(code, 1) << out;
  std::tie(code, out) = Quiver({"store", "frobnicate", "--config", config});
  EXPECT_EQ(code, 2) << out;
}

}  // namespace
}  // namespace quiver
