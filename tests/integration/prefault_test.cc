// Region memory populated ahead of use: what the Prefaulter maps in is
// written without page faults, what it does not is not, and populating
// never changes a byte.
#include "quiver/memory/prefault.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstring>

#include "integration/process_util.h"
#include "quiver/memory/region.h"

namespace quiver::memory {
namespace {

using quiver::testing::ClusterFiles;
using quiver::testing::TestCluster;

constexpr uint64_t kChunk = 2ULL << 20;

// This thread's: the Prefaulter's thread takes faults too.
int64_t MinorFaults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

// Page faults taken writing [p, p + n).
int64_t FaultsWriting(uint8_t* p, uint64_t n, uint8_t value) {
  const int64_t before = MinorFaults();
  std::memset(p, value, n);
  return MinorFaults() - before;
}

class PrefaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (PopulateWrite(&probe_, sizeof(probe_)).IsNotImplemented()) {
      GTEST_FAIL() << "this kernel lacks MADV_POPULATE_WRITE (Linux 5.14)";
    }
    ClusterMap::Options o;
    o.create_own_region = true;
    auto map = ClusterMap::Open(config_, 0, o);
    ASSERT_TRUE(map.ok()) << map.status().ToString();
    map_ = std::move(*map);
    region_ = map_->local_region();
    ASSERT_NE(region_, nullptr);
    ASSERT_GE(region_->data_size(), 24 * kChunk);
  }

  alignas(4096) static inline uint8_t probe_[4096];
  ClusterConfig config_ = TestCluster("prefault", 1, 64ULL << 20);
  ClusterFiles files_{config_};
  std::unique_ptr<ClusterMap> map_;
  RegionMapping* region_ = nullptr;
};

TEST_F(PrefaultTest, PopulatedMemoryIsWrittenWithoutFaultsAndTheRestFaults) {
  uint8_t* data = region_->data();
  const uint64_t span = 8 * kChunk;  // 4096 pages of 4 KiB
  Prefaulter prefaulter(kChunk);
  prefaulter.Request(region_, data, span);
  prefaulter.Drain();
  ASSERT_TRUE(prefaulter.status().ok()) << prefaulter.status().ToString();
  EXPECT_EQ(prefaulter.populated_bytes(), span);
  // Faults that remain come from elsewhere: the test's own stack, and under
  // AddressSanitizer its shadow memory (one page per eight written).
  const int64_t populated = FaultsWriting(data, span, 0x5a);
  EXPECT_LT(populated, static_cast<int64_t>(span / 4096 / 4));
  // The next span was not asked for: its first writes fault, page by page
  // (or in huge pages where the kernel backs shared memory with them).
  const int64_t unpopulated = FaultsWriting(data + span, span, 0x5a);
  EXPECT_GT(unpopulated, populated + 8);
}

TEST_F(PrefaultTest, RangesAreClippedToTheDataAreaAndPopulatedOnce) {
  uint8_t* data = region_->data();
  const uint64_t size = region_->data_size();
  Prefaulter prefaulter(kChunk);
  // Below, across and above the data area: only the part inside counts.
  prefaulter.Request(region_, data - 4096, kChunk + 4096);
  prefaulter.Request(region_, data + size - kChunk, 8 * kChunk);
  prefaulter.Request(region_, data + size + kChunk, kChunk);
  prefaulter.Request(nullptr, data, kChunk);
  prefaulter.Drain();
  const uint64_t last = size - (size - 1) / kChunk * kChunk;  // the last chunk's bytes
  const uint64_t expected = kChunk + (last == kChunk ? kChunk : last + kChunk);
  EXPECT_EQ(prefaulter.populated_bytes(), expected);
  // Asked again: nothing more to do.
  prefaulter.Request(region_, data, kChunk);
  prefaulter.Drain();
  EXPECT_EQ(prefaulter.populated_bytes(), expected);
}

TEST_F(PrefaultTest, PopulatingNeverChangesAByte) {
  uint8_t* data = region_->data() + 12 * kChunk;
  for (uint64_t i = 0; i < 4 * kChunk; ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
  Prefaulter prefaulter(kChunk);
  prefaulter.Request(region_, data, 4 * kChunk);
  prefaulter.Drain();
  EXPECT_EQ(prefaulter.populated_bytes(), 4 * kChunk);
  for (uint64_t i = 0; i < 4 * kChunk; ++i) {
    if (data[i] != static_cast<uint8_t>(i * 7 + 1)) {
      FAIL() << "byte " << i << " changed to " << int{data[i]};
    }
  }
}

}  // namespace
}  // namespace quiver::memory
