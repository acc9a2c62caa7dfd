#include "quiver/memory/region_allocator.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>

namespace quiver::memory {
namespace {

// An allocator over private anonymous memory: the allocator itself does not
// care where its metadata lives.
class AllocatorTest : public ::testing::Test {
 protected:
  void Make(uint64_t data_size, uint64_t granule = 64) {
    meta_size_ = RegionAllocator::MetadataSize(data_size, granule);
    total_ = meta_size_ + data_size;
    void* p =
        mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    mem_ = static_cast<uint8_t*>(p);
    auto r =
        RegionAllocator::Format(mem_, meta_size_, mem_ + meta_size_, data_size, granule);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    alloc_ = *r;
  }
  void TearDown() override {
    if (mem_) munmap(mem_, total_);
  }
  void ExpectConsistent() {
    Status st = alloc_.CheckConsistency();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  uint8_t* mem_ = nullptr;
  uint64_t total_ = 0, meta_size_ = 0;
  RegionAllocator alloc_;
};

TEST_F(AllocatorTest, AllocationsAreGranuleAlignedAndPadded) {
  Make(1 << 20);
  uint8_t* a = alloc_.Allocate(1).ValueOrDie();
  uint8_t* b = alloc_.Allocate(65).ValueOrDie();
  uint8_t* c = alloc_.Allocate(0).ValueOrDie();
  for (uint8_t* p : {a, b, c}) EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(b - a, 64);   // 1 byte padded to one granule
  EXPECT_EQ(c - b, 128);  // 65 bytes padded to two granules
  auto info = alloc_.Lookup(b).ValueOrDie();
  EXPECT_EQ(info.size, 128u);
  EXPECT_EQ(info.requested, 65u);
  EXPECT_EQ(info.owner_pid, getpid());
  auto s = alloc_.Stats();
  EXPECT_EQ(s.used, 64u + 128 + 64);
  EXPECT_EQ(s.live_allocations, 3u);
  EXPECT_EQ(s.used + s.free, s.capacity);
  ExpectConsistent();
}

TEST_F(AllocatorTest, LargeAlignment) {
  Make(8 << 20);
  (void)alloc_.Allocate(100).ValueOrDie();
  uint8_t* p = alloc_.Allocate(1000, 1 << 20).ValueOrDie();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (1 << 20), 0u);
  ExpectConsistent();
  EXPECT_TRUE(alloc_.Allocate(10, 3).status().IsInvalid());
}

TEST_F(AllocatorTest, BestFitPicksTheSmallestHole) {
  Make(1 << 20);
  std::vector<uint8_t*> p;
  for (uint64_t size : {512, 64, 256, 64, 128, 64})
    p.push_back(alloc_.Allocate(size).ValueOrDie());
  // Holes of 512, 256 and 128 bytes, separated by live blocks.
  ASSERT_TRUE(alloc_.Free(p[0]).ok());
  ASSERT_TRUE(alloc_.Free(p[2]).ok());
  ASSERT_TRUE(alloc_.Free(p[4]).ok());
  EXPECT_EQ(alloc_.Allocate(100).ValueOrDie(), p[4]);  // the 128-byte hole
  EXPECT_EQ(alloc_.Allocate(200).ValueOrDie(), p[2]);  // the 256-byte hole
  EXPECT_EQ(alloc_.Allocate(300).ValueOrDie(), p[0]);  // the 512-byte hole
  ExpectConsistent();
}

TEST_F(AllocatorTest, FreeCoalescesBothNeighbours) {
  Make(1 << 20);
  uint8_t* a = alloc_.Allocate(64).ValueOrDie();
  uint8_t* b = alloc_.Allocate(64).ValueOrDie();
  uint8_t* c = alloc_.Allocate(64).ValueOrDie();
  (void)alloc_.Allocate(64).ValueOrDie();  // keeps c away from the big free tail
  const uint64_t blocks_before = alloc_.Stats().free_blocks;
  ASSERT_TRUE(alloc_.Free(a).ok());
  ASSERT_TRUE(alloc_.Free(c).ok());
  EXPECT_EQ(alloc_.Stats().free_blocks, blocks_before + 2);
  ASSERT_TRUE(alloc_.Free(b).ok());  // joins a, b and c
  EXPECT_EQ(alloc_.Stats().free_blocks, blocks_before + 1);
  EXPECT_EQ(alloc_.Allocate(192).ValueOrDie(), a);
  ExpectConsistent();
}

TEST_F(AllocatorTest, BadFreesAreErrorsNotCorruption) {
  Make(1 << 20);
  uint8_t* a = alloc_.Allocate(256).ValueOrDie();
  Status inside = alloc_.Free(a + 64);
  EXPECT_TRUE(inside.IsInvalid());
  EXPECT_NE(inside.message().find("64 bytes into the allocation"), std::string::npos)
      << inside.ToString();
  ASSERT_TRUE(alloc_.Free(a).ok());
  Status twice = alloc_.Free(a);
  EXPECT_TRUE(twice.IsInvalid());
  EXPECT_NE(twice.message().find("double free"), std::string::npos) << twice.ToString();
  uint8_t outside = 0;
  EXPECT_TRUE(alloc_.Free(&outside).IsInvalid());
  ExpectConsistent();
}

TEST_F(AllocatorTest, ReallocGrowsInPlaceWhenTheNextBlockIsFree) {
  Make(1 << 20);
  uint8_t* a = alloc_.Allocate(64).ValueOrDie();
  std::memset(a, 7, 64);
  uint8_t* grown = alloc_.Reallocate(a, 4096).ValueOrDie();
  EXPECT_EQ(grown, a);
  EXPECT_EQ(alloc_.Lookup(a).ValueOrDie().size, 4096u);
  uint8_t* shrunk = alloc_.Reallocate(a, 100).ValueOrDie();
  EXPECT_EQ(shrunk, a);
  EXPECT_EQ(alloc_.Lookup(a).ValueOrDie().size, 128u);
  ExpectConsistent();
  // Blocked by a neighbour: it moves, keeping the contents.
  uint8_t* wall = alloc_.Allocate(64).ValueOrDie();
  EXPECT_EQ(wall, a + 128);
  uint8_t* moved = alloc_.Reallocate(a, 8192).ValueOrDie();
  EXPECT_NE(moved, a);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(moved[i], 7);
  EXPECT_TRUE(alloc_.Lookup(a).status().IsInvalid());  // the old block is free
  ExpectConsistent();
}

TEST_F(AllocatorTest, OutOfMemoryNamesTheLargestBlock) {
  Make(1 << 20);
  auto r = alloc_.Allocate(2 << 20);
  EXPECT_TRUE(r.status().IsOutOfMemory());
  uint8_t* a = alloc_.Allocate((1 << 20) - 4096).ValueOrDie();
  auto r2 = alloc_.Allocate(8192);
  ASSERT_TRUE(r2.status().IsOutOfMemory());
  EXPECT_NE(r2.status().message().find("largest free block is 4096"), std::string::npos)
      << r2.status().ToString();
  ASSERT_TRUE(alloc_.Free(a).ok());
  EXPECT_EQ(alloc_.Stats().largest_free, uint64_t{1} << 20);
}

TEST_F(AllocatorTest, LookupContaining) {
  Make(1 << 20);
  uint8_t* a = alloc_.Allocate(1000).ValueOrDie();
  EXPECT_EQ(alloc_.Lookup(a + 10, 100, true).ValueOrDie().address,
            reinterpret_cast<uint64_t>(a));
  EXPECT_FALSE(alloc_.Lookup(a + 10, 2000, true).ok());
  ASSERT_TRUE(alloc_.SetTag(a, 42).ok());
  EXPECT_EQ(alloc_.Lookup(a).ValueOrDie().tag, 42u);
}

TEST_F(AllocatorTest, AllocateSetsTheTagInTheSameCall) {
  Make(1 << 20);
  uint8_t* a = alloc_.Allocate(100, 0, 0xABCD).ValueOrDie();
  uint8_t* b = alloc_.Allocate(100, 4096, 7).ValueOrDie();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 4096, 0u);
  EXPECT_EQ(alloc_.Lookup(a).ValueOrDie().tag, 0xABCDu);
  EXPECT_EQ(alloc_.Lookup(b).ValueOrDie().tag, 7u);
  // A block reused after a free starts with the new caller's tag, not the
  // old one; the two-argument form means tag 0.
  ASSERT_TRUE(alloc_.Free(a).ok());
  uint8_t* c = alloc_.Allocate(100).ValueOrDie();
  EXPECT_EQ(c, a);
  EXPECT_EQ(alloc_.Lookup(c).ValueOrDie().tag, 0u);
  EXPECT_TRUE(alloc_.Allocate(10, 3, 1).status().IsInvalid());
  ExpectConsistent();
}

TEST_F(AllocatorTest, UpdateTagsChangesManyUnderOneLockInAnyOrder) {
  Make(1 << 20);
  std::vector<uint64_t> addresses;
  for (int i = 0; i < 40; ++i) {
    addresses.push_back(
        reinterpret_cast<uint64_t>(alloc_.Allocate(100 + i).ValueOrDie()));
  }
  // Ascending (the chain walk), then shuffled and with a repeat (the tree).
  auto bump = [&](const std::vector<uint64_t>& which, uint64_t by) {
    return alloc_.UpdateTags(which,
                             [&](size_t k, const AllocationInfo& info, uint64_t* t) {
                               if (info.address != which[k])
                                 return Status::Invalid("wrong allocation");
                               *t += by;
                               return Status::OK();
                             });
  };
  ASSERT_TRUE(bump(addresses, 1).ok());
  std::vector<uint64_t> shuffled = addresses;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
  shuffled.push_back(addresses[3]);
  ASSERT_TRUE(bump(shuffled, 10).ok());
  for (size_t i = 0; i < addresses.size(); ++i) {
    const uint64_t want = i == 3 ? 21 : 11;
    EXPECT_EQ(alloc_.Lookup(reinterpret_cast<uint8_t*>(addresses[i])).ValueOrDie().tag,
              want)
        << i;
  }
  // A pointer that is no allocation stops the batch with an error naming it;
  // what came before it stays changed, what comes after is untouched.
  std::vector<uint64_t> bad = {addresses[0], addresses[1] + 64, addresses[2]};
  Status st = bump(bad, 100);
  EXPECT_TRUE(st.IsInvalid()) << st.ToString();
  EXPECT_NE(st.message().find("is not the start of an allocation"), std::string::npos)
      << st.message();
  EXPECT_EQ(alloc_.Lookup(reinterpret_cast<uint8_t*>(addresses[0])).ValueOrDie().tag,
            111u);
  EXPECT_EQ(alloc_.Lookup(reinterpret_cast<uint8_t*>(addresses[2])).ValueOrDie().tag,
            11u);
  // The update's own error leaves that tag as it was.
  st = alloc_.UpdateTags({addresses[5]}, [](size_t, const AllocationInfo&, uint64_t* t) {
    *t = 999;
    return Status::FailedPrecondition("refused");
  });
  EXPECT_TRUE(st.IsFailedPrecondition());
  EXPECT_EQ(alloc_.Lookup(reinterpret_cast<uint8_t*>(addresses[5])).ValueOrDie().tag,
            11u);
  EXPECT_TRUE(alloc_.UpdateTags({}, nullptr).ok());
  ExpectConsistent();
}

TEST_F(AllocatorTest, ReallocateKeepsTheTagWhenItMoves) {
  Make(1 << 20);
  uint8_t* a = alloc_.Allocate(64, 0, 41).ValueOrDie();
  (void)alloc_.Allocate(64, 0, 1).ValueOrDie();  // a wall: `a` cannot grow in place
  uint8_t* moved = alloc_.Reallocate(a, 8192).ValueOrDie();
  ASSERT_NE(moved, a);
  EXPECT_EQ(alloc_.Lookup(moved).ValueOrDie().tag, 41u);
  ExpectConsistent();
}

TEST_F(AllocatorTest, ForEachVisitsLiveAllocationsInAddressOrder) {
  Make(1 << 20);
  std::vector<AllocationInfo> seen;
  auto collect = [&seen](const AllocationInfo& info) { seen.push_back(info); };
  ASSERT_TRUE(alloc_.ForEach(collect).ok());
  EXPECT_TRUE(seen.empty());
  std::vector<uint8_t*> p;
  for (uint64_t i = 0; i < 6; ++i)
    p.push_back(alloc_.Allocate(100 * (i + 1), 0, i).ValueOrDie());
  ASSERT_TRUE(alloc_.Free(p[1]).ok());
  ASSERT_TRUE(alloc_.Free(p[4]).ok());
  // Refill the first hole with a smaller block: address order now differs
  // from allocation order.
  uint8_t* refill = alloc_.Allocate(64, 0, 99).ValueOrDie();
  ASSERT_EQ(refill, p[1]);
  ASSERT_TRUE(alloc_.ForEach(collect).ok());
  const std::vector<std::pair<uint8_t*, uint64_t>> expected = {
      {p[0], 0}, {refill, 99}, {p[2], 2}, {p[3], 3}, {p[5], 5}};
  ASSERT_EQ(seen.size(), expected.size());
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].address, reinterpret_cast<uint64_t>(expected[i].first)) << i;
    EXPECT_EQ(seen[i].tag, expected[i].second) << i;
    EXPECT_EQ(seen[i].owner_pid, getpid());
    if (i > 0) {
      EXPECT_LT(seen[i - 1].address, seen[i].address);
    }
  }
  EXPECT_EQ(seen[2].requested, 300u);
  EXPECT_EQ(seen[2].size, 320u);
  EXPECT_TRUE(RegionAllocator().ForEach(collect).IsInvalid());
}

// A random workload checked against a model after every step.
TEST_F(AllocatorTest, RandomWorkloadKeepsInvariants) {
  Make(16 << 20);
  std::mt19937_64 rng(7);
  std::map<uint8_t*, uint64_t> live;  // address -> requested size
  for (int step = 0; step < 20000; ++step) {
    int op = static_cast<int>(rng() % 10);
    if (op < 5 || live.empty()) {
      uint64_t size = rng() % 5001;  // the thesis's 0-5000 byte range
      auto r = alloc_.Allocate(size);
      if (!r.ok()) {
        ASSERT_TRUE(r.status().IsOutOfMemory()) << r.status().ToString();
        continue;
      }
      uint8_t* p = *r;
      // No overlap with any live allocation.
      auto next = live.lower_bound(p);
      if (next != live.end()) {
        ASSERT_GE(next->first, p + std::max<uint64_t>(size, 1));
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + std::max<uint64_t>(prev->second, 1), p);
      }
      std::memset(p, static_cast<int>(size & 0xFF), size);
      live[p] = size;
    } else if (op < 8) {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      for (uint64_t i = 0; i < it->second; ++i) {
        ASSERT_EQ(it->first[i], static_cast<uint8_t>(it->second & 0xFF))
            << "step " << step;
      }
      ASSERT_TRUE(alloc_.Free(it->first).ok());
      live.erase(it);
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      uint64_t new_size = rng() % 9000;
      auto r = alloc_.Reallocate(it->first, new_size);
      if (!r.ok()) continue;
      uint64_t keep = std::min(it->second, new_size);
      for (uint64_t i = 0; i < keep; ++i) {
        ASSERT_EQ((*r)[i], static_cast<uint8_t>(it->second & 0xFF));
      }
      std::memset(*r, static_cast<int>(new_size & 0xFF), new_size);
      live.erase(it);
      live[*r] = new_size;
    }
    if (step % 500 == 0) ExpectConsistent();
  }
  ExpectConsistent();
  // ForEach sees exactly the model's allocations, in address order.
  std::vector<uint64_t> visited;
  ASSERT_TRUE(
      alloc_.ForEach([&](const AllocationInfo& i) { visited.push_back(i.address); })
          .ok());
  std::vector<uint64_t> modelled;
  for (auto& [p, size] : live) modelled.push_back(reinterpret_cast<uint64_t>(p));
  EXPECT_EQ(visited, modelled);
  for (auto& [p, size] : live) ASSERT_TRUE(alloc_.Free(p).ok());
  auto s = alloc_.Stats();
  EXPECT_EQ(s.used, 0u);
  EXPECT_EQ(s.free_blocks, 1u);  // everything coalesced back
  EXPECT_EQ(s.largest_free, s.capacity);
}

TEST_F(AllocatorTest, AttachChecksGeometry) {
  Make(1 << 20);
  auto ok = RegionAllocator::Attach(mem_, meta_size_, mem_ + meta_size_, 1 << 20);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  auto bad = RegionAllocator::Attach(mem_, meta_size_, mem_ + meta_size_, 1 << 19);
  EXPECT_TRUE(bad.status().IsInvalid());
  std::vector<uint8_t> junk(meta_size_, 0xAB);
  EXPECT_TRUE(RegionAllocator::Attach(junk.data(), meta_size_, mem_, 1 << 20)
                  .status()
                  .IsInvalid());
}

}  // namespace
}  // namespace quiver::memory
