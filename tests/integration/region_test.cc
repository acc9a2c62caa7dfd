// Regions mapped by several real processes at the same address.
#include "quiver/memory/region.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cstring>

#include "integration/process_util.h"

namespace quiver::memory {
namespace {

using quiver::testing::Child;
using quiver::testing::ClusterFiles;
using quiver::testing::Pipe;
using quiver::testing::TestCluster;

ClusterMap::Options Owner() {
  ClusterMap::Options o;
  o.create_own_region = true;
  o.wait_ready_ms = 20000;
  return o;
}

TEST(RegionTest, TwoProcessesSeeTheSameBytesAtTheSameAddress) {
  auto config = TestCluster("same", 2);
  ClusterFiles files(config);
  Pipe to_parent, to_child;
  const uint64_t base0 = config.nodes[0].base;
  Child node1([&] {
    auto map = ClusterMap::Open(config, 1, Owner());
    if (!map.ok()) return 10;
    // Wait until node 0 wrote its pattern, then read it at the same address.
    if (to_child.Receive() != 'w') return 11;
    auto* region0 = (*map)->region(0);
    const char* text = reinterpret_cast<const char*>(region0->data());
    if (std::strcmp(text, "written by node 0") != 0) return 12;
    if (region0->base() != reinterpret_cast<uint8_t*>(base0)) return 13;
    // Answer by writing into node 0's region.
    std::strcpy(reinterpret_cast<char*>(region0->data()) + 4096, "answer from node 1");
    to_parent.Send('a');
    return to_child.Receive() == 'q' ? 0 : 14;
  });
  auto map = ClusterMap::Open(config, 0, Owner());
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  RegionMapping* own = (*map)->local_region();
  EXPECT_EQ(reinterpret_cast<uint64_t>(own->base()), base0);
  std::strcpy(reinterpret_cast<char*>(own->data()), "written by node 0");
  to_child.Send('w');
  ASSERT_EQ(to_parent.Receive(), 'a');
  EXPECT_STREQ(reinterpret_cast<const char*>(own->data()) + 4096, "answer from node 1");
  to_child.Send('q');
  EXPECT_EQ(node1.Wait(), 0);
}

TEST(RegionTest, ATakenAddressRangeIsAClearError) {
  auto config = TestCluster("taken", 2);
  ClusterFiles files(config);
  Pipe ready, done;
  Child node1([&] {
    auto map = ClusterMap::Open(config, 1, Owner());
    ready.Send(map.ok() ? 'y' : 'n');
    return done.Receive() == 'q' ? 0 : 1;  // keep node 1's region ready
  });
  auto map = ClusterMap::Open(config, 0, Owner());
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  ASSERT_EQ(ready.Receive(), 'y');
  // A third process already has something where node 1's region goes.
  Child third([&] {
    // Start clean: drop the mappings inherited from the parent.
    for (const auto& n : config.nodes) munmap(reinterpret_cast<void*>(n.base), n.size);
    void* blocker = mmap(reinterpret_cast<void*>(config.nodes[1].base + 4096 * 16), 4096,
                         PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (blocker == MAP_FAILED) return 20;
    auto r = ClusterMap::Open(config, 0, ClusterMap::Options{});
    if (r.ok()) return 21;
    const std::string& msg = r.status().message();
    if (msg.find("node 1's region") == std::string::npos ||
        msg.find("overlaps a mapping") == std::string::npos) {
      return 22;
    }
    // The mapping that was there is untouched (never silently replaced).
    return mincore(blocker, 4096, nullptr) == -1 && errno == ENOMEM ? 23 : 0;
  });
  EXPECT_EQ(third.Wait(), 0);
  done.Send('q');
  EXPECT_EQ(node1.Wait(), 0);
}

TEST(RegionTest, BackingIsPrivateToTheOwner) {
  auto config = TestCluster("mode", 1);
  ClusterFiles files(config);
  auto map = ClusterMap::Open(config, 0, Owner());
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  struct stat st;
  ASSERT_EQ(stat(config.nodes[0].path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const RegionHeader& h = (*map)->local_region()->header();
  EXPECT_EQ(h.magic, kRegionMagic);
  EXPECT_EQ(h.node_id, 0u);
  EXPECT_EQ(std::string(h.cluster), config.name);
  EXPECT_EQ(h.owner_pid, getpid());
}

TEST(RegionTest, ARegionOfAnotherClusterIsRejected) {
  auto config = TestCluster("mine", 1);
  ClusterFiles files(config);
  {
    auto map = ClusterMap::Open(config, 0, Owner());
    ASSERT_TRUE(map.ok()) << map.status().ToString();
  }
  auto other = config;
  other.name = config.name + "-other";
  Child c([&] {
    auto r = ClusterMap::Open(other, 0, Owner());
    if (r.ok()) return 30;
    return r.status().message().find("belongs to cluster '" + config.name + "'") !=
                   std::string::npos
               ? 0
               : 31;
  });
  EXPECT_EQ(c.Wait(), 0);
}

TEST(RegionTest, ALiveOwnerIsNotDisplaced) {
  auto config = TestCluster("live", 1);
  ClusterFiles files(config);
  Pipe up, done;
  Child owner([&] {
    auto map = ClusterMap::Open(config, 0, Owner());
    up.Send(map.ok() ? 'y' : 'n');
    return done.Receive() == 'q' ? 0 : 40;
  });
  ASSERT_EQ(up.Receive(), 'y');
  Child rival([&] {
    auto r = ClusterMap::Open(config, 0, Owner());
    if (r.ok()) return 41;
    return r.status().message().find("in use by its owner, pid") != std::string::npos
               ? 0
               : 42;
  });
  EXPECT_EQ(rival.Wait(), 0);
  done.Send('q');
  EXPECT_EQ(owner.Wait(), 0);
}

TEST(RegionTest, ARegionLeftByACrashedOwnerIsTakenOver) {
  auto config = TestCluster("crash", 1);
  ClusterFiles files(config);
  Pipe up;
  Child owner([&] {
    auto map = ClusterMap::Open(config, 0, Owner());
    if (!map.ok()) return 50;
    auto* alloc = (*map)->local_region()->allocator();
    auto p = alloc->Allocate(1000);
    if (!p.ok()) return 51;
    std::strcpy(reinterpret_cast<char*>(*p), "survives the crash");
    if (!alloc->SetTag(*p, 77).ok()) return 52;
    up.Send('y');
    pause();
    return 0;
  });
  ASSERT_EQ(up.Receive(), 'y');
  owner.Kill(SIGKILL);
  EXPECT_EQ(owner.Wait(), 128 + SIGKILL);
  {
    // Restarted owner keeps the allocations.
    auto map = ClusterMap::Open(config, 0, Owner());
    ASSERT_TRUE(map.ok()) << map.status().ToString();
    RegionMapping* r = (*map)->local_region();
    EXPECT_TRUE(r->took_over());
    EXPECT_EQ(r->header().generation, 2u);
    auto stats = r->allocator()->Stats();
    ASSERT_EQ(stats.live_allocations, 1u);
    auto info = r->allocator()->Lookup(r->data()).ValueOrDie();
    EXPECT_EQ(info.tag, 77u);
    EXPECT_STREQ(reinterpret_cast<const char*>(r->data()), "survives the crash");
  }
  // A clean close leaves the region closed; a takeover may also format it.
  ClusterMap::Options fresh = Owner();
  fresh.keep_allocations_on_takeover = false;
  fresh.remove_own_region_on_close = true;
  {
    auto map = ClusterMap::Open(config, 0, fresh);
    ASSERT_TRUE(map.ok()) << map.status().ToString();
    EXPECT_EQ((*map)->local_region()->allocator()->Stats().live_allocations, 0u);
  }
  struct stat st;
  EXPECT_NE(stat(config.nodes[0].path.c_str(), &st), 0) << "backing was not removed";
}

TEST(RegionTest, RemoteWaitsForTheOwnerThenFailsClearly) {
  auto config = TestCluster("absent", 2);
  ClusterFiles files(config);
  ClusterMap::Options o = Owner();
  o.wait_ready_ms = 200;
  Child c([&] {
    auto r = ClusterMap::Open(config, 0, o);
    if (r.ok()) return 60;
    return r.status().message().find("node 1's backing") != std::string::npos ? 0 : 61;
  });
  EXPECT_EQ(c.Wait(), 0);
}

}  // namespace
}  // namespace quiver::memory
