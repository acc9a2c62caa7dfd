// The id directory: reservations, stale removals, restarts of homes, and
// the spread of ids over directory nodes.
#include "store/id_directory.h"

#include <gtest/gtest.h>

#include <map>

namespace quiver::store {
namespace {

TEST(IdDirectoryTest, AnIdIsReservedOnceAndFreedOnlyByItsHome) {
  IdDirectory d;
  const ObjectId a = ObjectId::FromName("a");
  EXPECT_FALSE(d.Reserve(a, 1, 5).has_value());               // new
  EXPECT_EQ(d.Reserve(a, 1, 5), std::optional<uint32_t>(1));  // already its own
  EXPECT_EQ(d.Reserve(a, 2, 9), std::optional<uint32_t>(1));  // someone else's
  d.Remove(a, 2);                                             // not the holder: ignored
  EXPECT_EQ(d.Find(a), std::optional<uint32_t>(1));
  d.Remove(a, 1);
  EXPECT_FALSE(d.Find(a).has_value());
  EXPECT_FALSE(d.Reserve(a, 2, 9).has_value());
  EXPECT_EQ(d.size(), 1u);
}

TEST(IdDirectoryTest, AHomeThatRestartedLosesWhatItReservedBefore) {
  IdDirectory d;
  const ObjectId old = ObjectId::FromName("old"), kept = ObjectId::FromName("kept"),
                 other = ObjectId::FromName("other");
  ASSERT_FALSE(d.Reserve(old, 3, 1).has_value());
  ASSERT_FALSE(d.Reserve(kept, 3, 1).has_value());
  ASSERT_FALSE(d.Reserve(other, 4, 1).has_value());
  // Re-registered by the restarted home (generation 2) before the directory
  // node noticed the restart: kept.
  ASSERT_TRUE(d.Reserve(kept, 3, 2).has_value());
  EXPECT_EQ(d.DropOlder(3, 2), 1u);
  EXPECT_FALSE(d.Find(old).has_value());
  EXPECT_EQ(d.Find(kept), std::optional<uint32_t>(3));
  EXPECT_EQ(d.Find(other), std::optional<uint32_t>(4));
}

TEST(IdDirectoryTest, IdsSpreadOverEveryNode) {
  memory::ClusterConfig config;
  for (uint32_t n : {7u, 2u, 5u, 0u}) {
    memory::NodeConfig node;
    node.id = n;
    config.nodes.push_back(node);
  }
  std::map<uint32_t, int> count;
  for (int i = 0; i < 4000; ++i) {
    const ObjectId id = ObjectId::FromName("id-" + std::to_string(i));
    const uint32_t dir = DirectoryNodeOf(id, config);
    EXPECT_EQ(dir, DirectoryNodeOf(id, config));  // the same everywhere
    ++count[dir];
  }
  ASSERT_EQ(count.size(), 4u);
  for (const auto& [node, c] : count) {
    EXPECT_GT(c, 800) << node;  // 1000 expected each
  }
}

}  // namespace
}  // namespace quiver::store
