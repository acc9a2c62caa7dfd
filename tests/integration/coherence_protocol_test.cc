// The coherency protocol of DESIGN.md §4 on the non-coherent emulator, with
// one process per node. Each test either runs the full protocol and checks
// that every node reads exactly what was written, or removes one step and
// checks that the failure that step prevents really happens.
#include <gtest/gtest.h>

#include <cstring>

#include "integration/process_util.h"
#include "quiver/coherence/flush.h"
#include "quiver/memory/region.h"

namespace quiver::memory {
namespace {

using quiver::testing::Child;
using quiver::testing::ClusterFiles;
using quiver::testing::TestCluster;

struct Command {
  char op;  // 'w' write, 'r' read, 'f' flush, 'q' quit
  uint8_t value;
  uint64_t addr;
  uint64_t len;
};
struct Reply {
  int32_t ok;
  uint64_t matching;  // bytes equal to `value` ('r')
};

// A node process that executes commands on cluster memory.
class NodeProcess {
 public:
  NodeProcess(const ClusterConfig& config, uint32_t id) {
    if (pipe(cmd_) != 0 || pipe(reply_) != 0) std::abort();
    child_ = std::make_unique<Child>([this, config, id] { return Serve(config, id); });
  }
  ~NodeProcess() {
    Send({'q', 0, 0, 0});
    child_->Wait();
    for (int fd : {cmd_[0], cmd_[1], reply_[0], reply_[1]}) close(fd);
  }
  Reply Send(Command c) {
    Reply r{0, 0};
    if (write(cmd_[1], &c, sizeof(c)) != sizeof(c)) return r;
    if (c.op == 'q') return r;
    if (read(reply_[0], &r, sizeof(r)) != sizeof(r)) r.ok = 0;
    return r;
  }
  void Write(uint64_t addr, uint64_t len, uint8_t v) {
    ASSERT_TRUE(Send({'w', v, addr, len}).ok);
  }
  void Flush(uint64_t addr, uint64_t len) { ASSERT_TRUE(Send({'f', 0, addr, len}).ok); }
  uint64_t Count(uint64_t addr, uint64_t len, uint8_t v) {
    Reply r = Send({'r', v, addr, len});
    EXPECT_TRUE(r.ok);
    return r.matching;
  }

 private:
  int Serve(const ClusterConfig& config, uint32_t id) {
    ClusterMap::Options o;
    o.create_own_region = true;
    o.wait_ready_ms = 20000;
    auto map = ClusterMap::Open(config, id, o);
    Command c;
    while (read(cmd_[0], &c, sizeof(c)) == sizeof(c)) {
      Reply r{map.ok() ? 1 : 0, 0};
      auto* p = reinterpret_cast<uint8_t*>(c.addr);
      if (map.ok() && c.op == 'w') std::memset(p, c.value, c.len);
      if (map.ok() && c.op == 'r') {
        for (uint64_t i = 0; i < c.len; ++i) r.matching += p[i] == c.value ? 1 : 0;
      }
      if (map.ok() && c.op == 'f') r.ok = coherence::FlushRange(p, c.len).ok() ? 1 : 0;
      if (c.op == 'q') return 0;
      if (write(reply_[1], &r, sizeof(r)) != sizeof(r)) return 2;
    }
    return 1;
  }

  int cmd_[2], reply_[2];
  std::unique_ptr<Child> child_;
};

// Node 0 (this process) owns the memory; node 1 writes; node 2 reads.
class ProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = TestCluster("proto", 3, 16ULL << 20, BackingKind::kIncoherent);
    files_ = std::make_unique<ClusterFiles>(config_);
    writer_ = std::make_unique<NodeProcess>(config_, 1);
    reader_ = std::make_unique<NodeProcess>(config_, 2);
    ClusterMap::Options o;
    o.create_own_region = true;
    o.wait_ready_ms = 20000;
    auto map = ClusterMap::Open(config_, 0, o);
    ASSERT_TRUE(map.ok()) << map.status().ToString();
    map_ = std::move(map).ValueOrDie();
    alloc_ = map_->local_region()->allocator();
    // The other nodes map node 0's region through the emulator.
    ASSERT_TRUE(map_->region(1)->emulated());
    ASSERT_FALSE(map_->local_region()->emulated());
  }
  void TearDown() override {
    writer_.reset();
    reader_.reset();
    map_.reset();
  }
  // An object in node 0's memory that held `old` before (reused memory).
  uint64_t NewObject(uint64_t len, uint8_t old) {
    uint8_t* p = alloc_->Allocate(len).ValueOrDie();
    std::memset(p, old, len);
    return reinterpret_cast<uint64_t>(p);
  }
  uint64_t OwnerCount(uint64_t addr, uint64_t len, uint8_t v) {
    auto* p = reinterpret_cast<const uint8_t*>(addr);
    uint64_t n = 0;
    for (uint64_t i = 0; i < len; ++i) n += p[i] == v ? 1 : 0;
    return n;
  }
  // Step 2 of the protocol: every node flushes the allocated range.
  void FlushEverywhere(uint64_t addr, uint64_t len, bool skip_reader = false) {
    ASSERT_TRUE(coherence::FlushRange(reinterpret_cast<void*>(addr), len).ok());
    writer_->Flush(addr, len);
    if (!skip_reader) reader_->Flush(addr, len);
  }

  ClusterConfig config_;
  std::unique_ptr<ClusterFiles> files_;
  std::unique_ptr<NodeProcess> writer_, reader_;
  std::unique_ptr<ClusterMap> map_;
  RegionAllocator* alloc_ = nullptr;
};

constexpr uint64_t kLen = 3 * 4096 + 100;
constexpr uint8_t kOld = 0xAA, kNew = 0x11;

TEST_F(ProtocolTest, FullProtocolEveryNodeReadsExactlyWhatWasWritten) {
  uint64_t x = NewObject(kLen, kOld);
  // Both remote nodes read the memory earlier, so their caches hold it.
  EXPECT_EQ(reader_->Count(x, kLen, kOld), kLen);
  EXPECT_EQ(writer_->Count(x, kLen, kOld), kLen);
  FlushEverywhere(x, kLen);       // step 2
  writer_->Write(x, kLen, kNew);  // step 3
  writer_->Flush(x, kLen);        // step 4 (the writer is not the owner)
  EXPECT_EQ(OwnerCount(x, kLen, kNew), kLen);
  EXPECT_EQ(reader_->Count(x, kLen, kNew), kLen);
  EXPECT_EQ(writer_->Count(x, kLen, kNew), kLen);
}

TEST_F(ProtocolTest, WithoutThePreWriteFlushAReaderSeesStaleData) {
  uint64_t x = NewObject(kLen, kOld);
  EXPECT_EQ(reader_->Count(x, kLen, kOld), kLen);
  FlushEverywhere(x, kLen, /*skip_reader=*/true);  // step 2 missing at the reader
  writer_->Write(x, kLen, kNew);
  writer_->Flush(x, kLen);
  EXPECT_EQ(OwnerCount(x, kLen, kNew), kLen);
  // The broken sequence: the reader still sees its stale copy.
  EXPECT_EQ(reader_->Count(x, kLen, kNew), 0u);
  EXPECT_EQ(reader_->Count(x, kLen, kOld), kLen);
  // The data was there all along: flushing shows it.
  reader_->Flush(x, kLen);
  EXPECT_EQ(reader_->Count(x, kLen, kNew), kLen);
}

TEST_F(ProtocolTest, WithoutTheWriterFlushTheOwnerNeverSeesTheWrite) {
  uint64_t x = NewObject(kLen, kOld);
  FlushEverywhere(x, kLen);
  writer_->Write(x, kLen, kNew);
  // Step 4 missing: the write stays in the writer's cache.
  EXPECT_EQ(OwnerCount(x, kLen, kNew), 0u);
  EXPECT_EQ(reader_->Count(x, kLen, kNew), 0u);
  writer_->Flush(x, kLen);
  EXPECT_EQ(OwnerCount(x, kLen, kNew), kLen);
}

TEST_F(ProtocolTest, TwoObjectsInOneGranuleCorruptEachOther) {
  const uint64_t g = config_.granule;
  // Two half-granule objects packed into one granule (what the allocator
  // never does): node 1 writes the first, node 2 the second.
  uint64_t line = NewObject(g, kOld);
  uint64_t a = line, b = line + g / 2;
  FlushEverywhere(line, g);
  writer_->Write(a, g / 2, 0x11);
  reader_->Write(b, g / 2, 0x22);
  writer_->Flush(a, g / 2);
  reader_->Flush(b, g / 2);
  // Each flush wrote back the whole line: the second clobbered the first.
  EXPECT_EQ(OwnerCount(b, g / 2, 0x22), g / 2);
  EXPECT_EQ(OwnerCount(a, g / 2, 0x11), 0u) << "object a survived: no corruption shown";
  EXPECT_EQ(OwnerCount(a, g / 2, kOld), g / 2);
}

TEST_F(ProtocolTest, ObjectsInSeparateGranulesDoNotInterfere) {
  const uint64_t g = config_.granule;
  // The allocator pads every object to whole granules.
  uint64_t a = NewObject(g / 2, kOld);
  uint64_t b = NewObject(g / 2, kOld);
  ASSERT_EQ(b - a, g);
  FlushEverywhere(a, 2 * g);
  writer_->Write(a, g / 2, 0x11);
  reader_->Write(b, g / 2, 0x22);
  writer_->Flush(a, g / 2);
  reader_->Flush(b, g / 2);
  EXPECT_EQ(OwnerCount(a, g / 2, 0x11), g / 2);
  EXPECT_EQ(OwnerCount(b, g / 2, 0x22), g / 2);
}

TEST_F(ProtocolTest, OwnerAsCreatorNeedsOnlyThePreWriteFlush) {
  uint64_t x = NewObject(kLen, kOld);
  EXPECT_EQ(reader_->Count(x, kLen, kOld), kLen);
  FlushEverywhere(x, kLen);
  std::memset(reinterpret_cast<void*>(x), kNew, kLen);  // the owner writes locally
  EXPECT_EQ(reader_->Count(x, kLen, kNew), kLen);
}

}  // namespace
}  // namespace quiver::memory
