// A node's region for tests of the catalogue and what is built on it: a
// RegionAllocator over private anonymous memory (its own statistics judge
// what was freed), and the session of a client of some node.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>

#include "control/catalogue/catalogue.h"
#include "quiver/memory/region_allocator.h"

namespace quiver::control::testing_region {

constexpr uint64_t kGranule = 64;

inline SessionInfo Client(uint32_t node, int32_t pid = 100) {
  SessionInfo info;
  info.identity = PeerIdentity{"test", PeerRole::kClient, node};
  info.pid = pid;
  return info;
}

// A region's allocator over private anonymous memory.
class Region {
 public:
  explicit Region(uint64_t data_size = 8 << 20) {
    meta_size_ = memory::RegionAllocator::MetadataSize(data_size, kGranule);
    total_ = meta_size_ + data_size;
    void* p =
        mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    mem_ = static_cast<uint8_t*>(p);
    auto a = memory::RegionAllocator::Format(mem_, meta_size_, mem_ + meta_size_,
                                             data_size, kGranule);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    if (a.ok()) allocator_ = *a;
  }
  ~Region() { munmap(mem_, total_); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  memory::RegionAllocator* allocator() { return &allocator_; }
  uint64_t used() { return allocator_.Stats().used; }
  uint64_t live() { return allocator_.Stats().live_allocations; }
  uint64_t tag(uint64_t address) {
    auto info = allocator_.Lookup(reinterpret_cast<const uint8_t*>(address));
    EXPECT_TRUE(info.ok()) << info.status().ToString();
    return info.ok() ? info->tag : 0;
  }
  bool IsLive(uint64_t address) {
    return allocator_.Lookup(reinterpret_cast<const uint8_t*>(address)).ok();
  }

 private:
  uint64_t meta_size_ = 0, total_ = 0;
  uint8_t* mem_ = nullptr;
  memory::RegionAllocator allocator_;
};

}  // namespace quiver::control::testing_region
