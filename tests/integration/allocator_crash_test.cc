// A process killed inside the region allocator must not wedge its node:
// the next process to lock repairs the metadata from the undo log.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>

#include "integration/process_util.h"
#include "quiver/memory/region.h"

namespace quiver::memory {
namespace {

using quiver::testing::Child;
using quiver::testing::ClusterFiles;
using quiver::testing::Pipe;
using quiver::testing::TestCluster;

// The child's hook: at the chosen point, tell the parent and wait to die.
const char* g_crash_point = nullptr;
int g_hook_fd = -1;
void StopHere(const char* point) {
  if (g_crash_point != nullptr && std::strcmp(point, g_crash_point) == 0) {
    char c = 'k';
    if (write(g_hook_fd, &c, 1) != 1) _exit(70);
    pause();
  }
}

struct CrashCase {
  const char* point;
  const char* operation;  // what the child does to reach the point
};

class AllocatorCrashTest : public ::testing::TestWithParam<CrashCase> {};

TEST_P(AllocatorCrashTest, KilledHolderDoesNotWedgeTheNode) {
  const CrashCase& cc = GetParam();
  auto config = TestCluster("crash", 1);
  ClusterFiles files(config);
  ClusterMap::Options owner;
  owner.create_own_region = true;
  auto map = ClusterMap::Open(config, 0, owner);
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  RegionAllocator* alloc = (*map)->local_region()->allocator();
  // Live data that must survive the crash.
  uint8_t* keep = alloc->Allocate(3000).ValueOrDie();
  std::memset(keep, 0x5A, 3000);
  const auto before = alloc->Stats();

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  Child victim([&] {
    // The child shares node 0's region (inherited MAP_SHARED mapping) and
    // attaches to its allocator as another process of the node would.
    auto* base = reinterpret_cast<uint8_t*>(config.nodes[0].base);
    const RegionLayout l = ComputeRegionLayout(config.nodes[0].size, config.granule);
    auto attached = RegionAllocator::Attach(base + l.metadata_offset, l.metadata_size,
                                            base + l.data_offset, l.data_size);
    if (!attached.ok()) return 71;
    RegionAllocator a = *attached;
    uint8_t* x = a.Allocate(500).ValueOrDie();
    uint8_t* y = a.Allocate(500).ValueOrDie();
    uint8_t* z = a.Allocate(500).ValueOrDie();
    (void)a.Free(x);
    g_crash_point = cc.point;
    g_hook_fd = fds[1];
    RegionAllocator::SetCrashHookForTesting(StopHere);
    std::string op = cc.operation;
    if (op == "allocate") (void)a.Allocate(100);
    if (op == "allocate-aligned") (void)a.Allocate(100, 1 << 16);
    if (op == "free") (void)a.Free(y);  // merges with x's free block
    if (op == "free-z") (void)a.Free(z);
    if (op == "realloc") (void)a.Reallocate(y, 1 << 20);
    return 72;  // the point was never reached
  });
  char c = 0;
  ASSERT_EQ(read(fds[0], &c, 1), 1) << "the child never reached " << cc.point;
  victim.Kill(SIGKILL);
  EXPECT_EQ(victim.Wait(), 128 + SIGKILL);

  // Another process of the node allocates; it must not block.
  auto start = std::chrono::steady_clock::now();
  auto result = std::async(std::launch::async, [&] { return alloc->Allocate(4096); });
  ASSERT_EQ(result.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "allocator wedged after a holder died at " << cc.point;
  auto r = result.get();
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::printf("[ recovered from a kill at %s in %.3f ms ]\n", cc.point,
              std::chrono::duration<double, std::milli>(took).count());
  Status consistent = alloc->CheckConsistency();
  EXPECT_TRUE(consistent.ok()) << consistent.ToString();
  auto after = alloc->Stats();
  EXPECT_EQ(after.recoveries, before.recoveries + 1);
  for (int i = 0; i < 3000; ++i) ASSERT_EQ(keep[i], 0x5A);
  EXPECT_TRUE(alloc->Lookup(keep).ok());
  EXPECT_TRUE(alloc->Free(*r).ok());
  close(fds[0]);
  close(fds[1]);
}

INSTANTIATE_TEST_SUITE_P(
    CrashPoints, AllocatorCrashTest,
    ::testing::Values(CrashCase{"allocate:unlinked", "allocate"},
                      CrashCase{"split:linked-new", "allocate"},
                      CrashCase{"allocate:split", "allocate"},
                      CrashCase{"split:linked-new", "allocate-aligned"},
                      CrashCase{"free:marked", "free"}, CrashCase{"merge:linked", "free"},
                      CrashCase{"merge:linked", "free-z"},
                      CrashCase{"realloc:copied", "realloc"}),
    [](const ::testing::TestParamInfo<CrashCase>& info) {
      std::string name = std::string(info.param.operation) + "_" + info.param.point;
      for (auto& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

}  // namespace
}  // namespace quiver::memory
