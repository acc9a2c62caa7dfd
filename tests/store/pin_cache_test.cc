// PinCache (store/client/pin_cache.h): which pins an ObjectStore keeps for
// repeated Gets, and when it lets them go. The epochs' meaning is tested
// with daemons (tests/cluster/store_test.cc); here, the bookkeeping.
#include "store/client/pin_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace quiver::store {
namespace {

PinCache::Entry Of(uint32_t home, int64_t bytes, uint64_t store_epoch = 1) {
  static std::vector<uint8_t> memory(1 << 20);
  PinCache::Entry e;
  e.home = home;
  e.link_epoch = 7;
  e.store_epoch = store_epoch;
  e.data = Buffer::Wrap(memory.data(), bytes);
  e.metadata = Buffer::Wrap(memory.data(), 0);
  return e;
}

ObjectId Id(int i) { return ObjectId::FromName("pin-" + std::to_string(i)); }

TEST(PinCacheTest, KeepsTheMostRecentlyUsedWithinItsLimit) {
  PinCache cache(1000, 400);
  ASSERT_TRUE(cache.enabled());
  for (int i = 0; i < 4; ++i) cache.Put(Id(i), Of(0, 300));
  // 3 x 300 fit; the oldest went.
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.bytes(), 900u);
  EXPECT_FALSE(cache.Find(Id(0)));
  // Using 1 makes 2 the oldest.
  ASSERT_TRUE(cache.Find(Id(1)));
  cache.Put(Id(4), Of(0, 300));
  EXPECT_TRUE(cache.Find(Id(1)));
  EXPECT_FALSE(cache.Find(Id(2)));
  // Too big for one entry: not kept, and it takes nothing out.
  cache.Put(Id(5), Of(0, 401));
  EXPECT_FALSE(cache.Find(Id(5)));
  EXPECT_EQ(cache.size(), 3u);
  // Replacing an entry does not count it twice.
  cache.Put(Id(4), Of(0, 100));
  EXPECT_EQ(cache.bytes(), 700u);
  cache.Erase({Id(1), Id(9)});
  EXPECT_EQ(cache.size(), 2u);
  cache.Clear();
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_FALSE(PinCache(0, 0).enabled());
}

TEST(PinCacheTest, DropsTheStaleEntriesOfOneHomeOnly) {
  PinCache cache(1 << 20, 1 << 20);
  cache.Put(Id(0), Of(0, 10, 5));
  cache.Put(Id(1), Of(1, 10, 5));
  cache.Put(Id(2), Of(1, 10, 6));
  EXPECT_EQ(cache.Homes().size(), 2u);
  cache.DropStale(1, 6, 7);  // home 1 is at epoch 6 now
  EXPECT_TRUE(cache.Find(Id(0)));
  EXPECT_FALSE(cache.Find(Id(1)));
  EXPECT_TRUE(cache.Find(Id(2)));
  cache.DropStale(1, 6, 8);  // home 1's session changed
  EXPECT_FALSE(cache.Find(Id(2)));
  EXPECT_EQ(cache.Homes(), std::vector<uint32_t>{0});
}

// DropStale skips a home whose entries are all good without looking at
// them (a cached Get calls it for every home): the bookkeeping behind that
// must follow replacements, evictions and erasures.
TEST(PinCacheTest, StaleEntriesAreFoundAfterReplacementsAndEvictions) {
  PinCache cache(100, 100);
  cache.Put(Id(0), Of(0, 10, 5));
  cache.DropStale(0, 5, 7);  // all good: nothing dropped
  EXPECT_TRUE(cache.Find(Id(0)));
  cache.Put(Id(0), Of(0, 10, 6));  // replaced under epoch 6
  cache.Put(Id(1), Of(0, 10, 5));
  cache.DropStale(0, 6, 7);
  EXPECT_TRUE(cache.Find(Id(0)));
  EXPECT_FALSE(cache.Find(Id(1)));
  // Entries of epoch 6 pushed out by newer ones: an epoch-7 home drops
  // none of the newer ones, and the evicted ones leave no count behind.
  for (int i = 2; i < 12; ++i) cache.Put(Id(i), Of(0, 10, 7));
  EXPECT_EQ(cache.size(), 10u);
  EXPECT_FALSE(cache.Find(Id(0)));
  cache.DropStale(0, 7, 7);
  EXPECT_EQ(cache.size(), 10u);
  cache.Erase({Id(2)});
  cache.DropStale(0, 8, 7);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_TRUE(cache.Homes().empty());
}

}  // namespace
}  // namespace quiver::store
