// The fixture of the Directory tests (directory_test.cc,
// directory_records_test.cc): the replicated table directory over real
// descriptors of batches that live in node regions.
//
// Two nodes' regions are mapped at fixed addresses (MAP_FIXED_NOREPLACE),
// each with its allocator, catalogue and directory, as two daemons would
// have them; a memory::ClusterConfig built in code names those bases, so
// descriptors validate exactly as in a daemon. Batches are built straight
// into a region by a MemoryPool that allocates through the catalogue for a
// client session. A "restart" is a new Catalogue and Directory over the
// same allocator (Recover, then LoadRecords).

#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "common/strings.h"
#include "control/catalogue/directory.h"
#include "control/catalogue/object_tag.h"
#include "control/catalogue/session_pool.h"
#include "quiver/columnar/builder.h"

namespace quiver::control::directory_testing {

constexpr uint64_t kGranule = 64;
constexpr uint64_t kRegionSize = 32ULL << 20;
constexpr uint64_t kBases[2] = {0x5a0000000000ULL, 0x5a0100000000ULL};

using ::quiver::testing::Contains;

// One node's region at its fixed base: allocator metadata first, data after.
class FixedRegion {
 public:
  explicit FixedRegion(uint64_t base) : base_(base) {
    void* p = mmap(reinterpret_cast<void*>(base), kRegionSize, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != reinterpret_cast<void*>(base)) {
      ADD_FAILURE() << "cannot map a test region at 0x" << std::hex << base;
      if (p != MAP_FAILED) munmap(p, kRegionSize);
      return;
    }
    mapped_ = true;
    const uint64_t meta =
        (memory::RegionAllocator::MetadataSize(kRegionSize, kGranule) + 4095) / 4096 *
        4096;
    auto* mem = static_cast<uint8_t*>(p);
    auto a = memory::RegionAllocator::Format(mem, meta, mem + meta, kRegionSize - meta,
                                             kGranule);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    if (a.ok()) allocator_ = *a;
  }
  ~FixedRegion() {
    if (mapped_) munmap(reinterpret_cast<void*>(base_), kRegionSize);
  }
  FixedRegion(const FixedRegion&) = delete;
  FixedRegion& operator=(const FixedRegion&) = delete;

  bool ok() const { return mapped_ && allocator_.valid(); }
  memory::RegionAllocator* allocator() { return &allocator_; }
  uint64_t live() { return allocator_.Stats().live_allocations; }
  bool IsLive(uint64_t address) {
    return allocator_.Lookup(reinterpret_cast<const uint8_t*>(address)).ok();
  }

 private:
  uint64_t base_;
  bool mapped_ = false;
  memory::RegionAllocator allocator_;
};

// A batch and its descriptor.
struct Built {
  RecordBatchPtr batch;
  std::string descriptor;
  std::vector<BufferRange> ranges;
};

// One int64 column per pool (column i in pools[i]'s memory), values
// first..first+rows-1; or one utf8 column when `strings`.
inline Built MakeBatch(const std::vector<MemoryPool*>& pools, int64_t first, int64_t rows,
                       bool strings = false) {
  Built b;
  std::vector<std::string> names;
  std::vector<ArrayPtr> columns;
  for (size_t i = 0; i < pools.size(); ++i) {
    names.push_back("c" + std::to_string(i));
    Result<ArrayPtr> column = Status::UnknownError("not built");
    if (strings) {
      StringBuilder s(pools[i]);
      for (int64_t k = 0; k < rows; ++k) {
        EXPECT_TRUE(s.Append(std::to_string(first + k)).ok());
      }
      column = s.Finish();
    } else {
      Int64Builder n(pools[i]);
      for (int64_t k = 0; k < rows; ++k) EXPECT_TRUE(n.Append(first + k).ok());
      column = n.Finish();
    }
    EXPECT_TRUE(column.ok()) << column.status().ToString();
    if (!column.ok()) return b;
    columns.push_back(*column);
  }
  auto batch = RecordBatch::FromArrays(names, columns);
  EXPECT_TRUE(batch.ok()) << batch.status().ToString();
  if (!batch.ok()) return b;
  b.batch = *batch;
  auto d = EncodeDescriptor(*b.batch, pools[0], &b.ranges);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  if (d.ok()) b.descriptor = *d;
  return b;
}

inline ChunkMeta Meta(uint64_t id, uint32_t home, const std::string& name, const Built& b,
                      uint64_t first_row = 0, bool explicit_rows = false) {
  ChunkMeta c;
  c.id = id;
  c.home = home;
  c.publisher = home;
  c.publisher_pid = 4242;
  c.name = name;
  c.first_row = first_row;
  c.num_rows = b.batch ? static_cast<uint64_t>(b.batch->num_rows()) : 0;
  c.explicit_rows = explicit_rows;
  c.descriptor = b.descriptor;
  return c;
}

inline std::vector<uint64_t> Ids(const std::vector<ChunkMeta>& chunks) {
  std::vector<uint64_t> ids;
  for (const auto& c : chunks) ids.push_back(c.id);
  return ids;
}

class DirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (uint32_t n = 0; n < 2; ++n) {
      regions_[n] = std::make_unique<FixedRegion>(kBases[n]);
      ASSERT_TRUE(regions_[n]->ok());
      memory::NodeConfig node;
      node.id = n;
      node.control = "127.0.0.1:" + std::to_string(7600 + n);
      node.base = kBases[n];
      node.size = kRegionSize;
      config_.nodes.push_back(node);
    }
    config_.name = "test";
    config_.granule = kGranule;
    for (uint32_t n = 0; n < 2; ++n) Start(n);
  }

  // A (re)started daemon's catalogue and directory for node n.
  void Start(uint32_t n) {
    dirs_[n].reset();
    cats_[n] = std::make_unique<Catalogue>(regions_[n]->allocator(), n, kGranule,
                                           CatalogueLimits{});
    dirs_[n] = std::make_unique<Directory>(cats_[n].get(), &config_, n);
  }
  // The daemon of node n dies and a new one takes its region over.
  std::vector<FoundRecord> Restart(uint32_t n) {
    Start(n);
    auto records = cats_[n]->Recover();
    EXPECT_TRUE(records.ok()) << records.status().ToString();
    return records.ok() ? *records : std::vector<FoundRecord>{};
  }
  // A client session at node n's daemon (as a client of node `client`).
  SessionId Open(uint32_t n, uint32_t client) {
    SessionInfo info;
    info.identity = PeerIdentity{"test", PeerRole::kClient, client};
    auto s = cats_[n]->OpenSession(info);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : 0;
  }
  MemoryPool* Pool(uint32_t n, SessionId s) {
    pools_.push_back(
        std::make_unique<SessionPool>(cats_[n].get(), s, SessionPool::OnFree::kKeep));
    return pools_.back().get();
  }
  // The ranges of a batch that lie in node n's region.
  std::vector<BufferRange> RangesIn(uint32_t n, const Built& b) {
    std::vector<BufferRange> out;
    for (const auto& r : b.ranges) {
      if (config_.NodeOfAddress(r.address, r.length)->id == n) out.push_back(r);
    }
    return out;
  }
  // The objects of node n a batch's buffers lie in.
  std::vector<uint64_t> ObjectsIn(uint32_t n, const Built& b) {
    std::vector<uint64_t> out;
    for (const auto& r : RangesIn(n, b)) {
      auto info = regions_[n]->allocator()->Lookup(
          reinterpret_cast<const uint8_t*>(r.address), r.length, /*containing=*/true);
      EXPECT_TRUE(info.ok());
      if (info.ok()) out.push_back(info->address);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  // The home's publish: seal the publisher's objects, check names, record.
  Status Publish(uint32_t home, SessionId s, std::vector<ChunkMeta>* chunks,
                 Directory::VersionStep* step = nullptr) {
    return dirs_[home]->Insert(chunks, {.publisher = s, .seal_as = s, .as_home = true},
                               step);
  }

  memory::ClusterConfig config_;
  std::unique_ptr<FixedRegion> regions_[2];
  std::unique_ptr<Catalogue> cats_[2];
  std::unique_ptr<Directory> dirs_[2];
  // Live as long as the test: batches hand their buffers back to them when
  // dropped. A pool is not used for allocating after its node restarted.
  std::vector<std::unique_ptr<SessionPool>> pools_;
};

// ---------------------------------------------------------------------------
// Insert, Lookup, Remove

}  // namespace quiver::control::directory_testing
