// One typed suite that every MemoryPool backend runs: the heap pool, the
// region pool and the remote pool (forwarding to an owner). Builders must
// work unchanged on all of them.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>

#include "quiver/columnar/builder.h"
#include "quiver/memory/region_allocator.h"
#include "quiver/memory/region_pool.h"

namespace quiver::memory {
namespace {

// A region allocator over private memory, standing in for a node's region.
class PrivateRegion {
 public:
  explicit PrivateRegion(uint64_t data_size = 64 << 20) {
    meta_ = RegionAllocator::MetadataSize(data_size, 64);
    total_ = meta_ + data_size;
    mem_ = static_cast<uint8_t*>(mmap(nullptr, total_, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    alloc_ =
        RegionAllocator::Format(mem_, meta_, mem_ + meta_, data_size, 64).ValueOrDie();
  }
  ~PrivateRegion() { munmap(mem_, total_); }
  RegionAllocator* allocator() { return &alloc_; }
  bool Contains(const uint8_t* p) const { return p >= mem_ + meta_ && p < mem_ + total_; }

 private:
  uint64_t meta_, total_;
  uint8_t* mem_;
  RegionAllocator alloc_;
};

// Forwards to an allocator directly, as the owner's daemon would after an RPC.
class LoopbackForwarder : public RemoteAllocator {
 public:
  explicit LoopbackForwarder(RegionAllocator* owner) : owner_(owner) {}
  Result<uint64_t> RemoteAllocate(uint32_t, uint64_t size, uint64_t alignment) override {
    ++calls;
    QUIVER_ASSIGN_OR_RAISE(uint8_t * p, owner_->Allocate(size, alignment));
    return reinterpret_cast<uint64_t>(p);
  }
  Result<uint64_t> RemoteReallocate(uint32_t, uint64_t address, uint64_t new_size,
                                    uint64_t alignment) override {
    ++calls;
    QUIVER_ASSIGN_OR_RAISE(
        uint8_t * p,
        owner_->Reallocate(reinterpret_cast<uint8_t*>(address), new_size, alignment));
    return reinterpret_cast<uint64_t>(p);
  }
  Status RemoteFree(uint32_t, uint64_t address) override {
    ++calls;
    return owner_->Free(reinterpret_cast<uint8_t*>(address));
  }
  int calls = 0;

 private:
  RegionAllocator* owner_;
};

struct HeapBackend {
  MemoryPool* pool() { return &pool_; }
  bool InBackend(const uint8_t*) const { return true; }
  SystemMemoryPool pool_;
};
struct RegionBackend {
  MemoryPool* pool() { return &pool_; }
  bool InBackend(const uint8_t* p) const { return region_.Contains(p); }
  PrivateRegion region_;
  RegionMemoryPool pool_{region_.allocator(), 0};
};
struct RemoteBackend {
  MemoryPool* pool() { return &pool_; }
  bool InBackend(const uint8_t* p) const { return region_.Contains(p); }
  PrivateRegion region_;
  LoopbackForwarder forwarder_{region_.allocator()};
  RemoteMemoryPool pool_{1, &forwarder_};
};

template <typename Backend>
class MemoryPoolSuite : public ::testing::Test {
 protected:
  Backend backend_;
  MemoryPool* pool() { return backend_.pool(); }
};

using Backends = ::testing::Types<HeapBackend, RegionBackend, RemoteBackend>;
TYPED_TEST_SUITE(MemoryPoolSuite, Backends);

TYPED_TEST(MemoryPoolSuite, AllocateIsAlignedAndCounted) {
  uint8_t* p = nullptr;
  ASSERT_TRUE(this->pool()->Allocate(1000, &p).ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_TRUE(this->backend_.InBackend(p));
  std::memset(p, 1, 1000);
  EXPECT_EQ(this->pool()->bytes_allocated(), 1000);
  uint8_t* q = nullptr;
  ASSERT_TRUE(this->pool()->Allocate(10, 4096, &q).ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % 4096, 0u);
  this->pool()->Free(p, 1000);
  this->pool()->Free(q, 10, 4096);
  EXPECT_EQ(this->pool()->bytes_allocated(), 0);
  EXPECT_EQ(this->pool()->max_memory(), 1010);
  EXPECT_EQ(this->pool()->num_allocations(), 2);
}

TYPED_TEST(MemoryPoolSuite, ZeroSizeAllocationIsUsable) {
  uint8_t* p = nullptr;
  ASSERT_TRUE(this->pool()->Allocate(0, &p).ok());
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  this->pool()->Free(p, 0);
}

TYPED_TEST(MemoryPoolSuite, ReallocateKeepsContents) {
  uint8_t* p = nullptr;
  ASSERT_TRUE(this->pool()->Allocate(100, &p).ok());
  for (int i = 0; i < 100; ++i) p[i] = static_cast<uint8_t>(i);
  ASSERT_TRUE(this->pool()->Reallocate(100, 1 << 20, &p).ok());
  for (int i = 0; i < 100; ++i) ASSERT_EQ(p[i], i);
  ASSERT_TRUE(this->pool()->Reallocate(1 << 20, 50, &p).ok());
  for (int i = 0; i < 50; ++i) ASSERT_EQ(p[i], i);
  EXPECT_EQ(this->pool()->bytes_allocated(), 50);
  this->pool()->Free(p, 50);
}

TYPED_TEST(MemoryPoolSuite, BadArgumentsAreErrors) {
  uint8_t* p = nullptr;
  EXPECT_TRUE(this->pool()->Allocate(-1, &p).IsInvalid());
  EXPECT_TRUE(this->pool()->Allocate(10, 3, &p).IsInvalid());
  EXPECT_EQ(p, nullptr);
}

TYPED_TEST(MemoryPoolSuite, BuildersWorkUnchanged) {
  auto type = struct_({field("id", int64()), field("name", utf8()),
                       field("tags", list(dictionary(int16(), utf8())))});
  auto builder = MakeBuilder(type, this->pool()).ValueOrDie();
  auto* s = static_cast<StructBuilder*>(builder.get());
  auto* ids = static_cast<Int64Builder*>(s->field_builder(0));
  auto* names = static_cast<StringBuilder*>(s->field_builder(1));
  auto* tags = static_cast<ListBuilder*>(s->field_builder(2));
  auto* tag_values = static_cast<DictionaryBuilder*>(tags->value_builder());
  for (int i = 0; i < 10000; ++i) {
    ASSERT_TRUE(s->Append().ok());
    ASSERT_TRUE(ids->Append(i).ok());
    ASSERT_TRUE(names->Append("row " + std::to_string(i)).ok());
    ASSERT_TRUE(tags->Append().ok());
    ASSERT_TRUE(tag_values->Append(std::string_view(i % 3 ? "even" : "odd")).ok());
  }
  auto arr = s->Finish().ValueOrDie();
  // Every buffer of the result lives in the backend's memory.
  std::function<void(const ArrayData&)> check = [&](const ArrayData& d) {
    for (const auto& b : d.buffers) {
      if (b) {
        EXPECT_TRUE(this->backend_.InBackend(b->data()));
      }
    }
    for (const auto& c : d.child_data) check(*c);
    if (d.dictionary) check(*d.dictionary);
  };
  check(*arr->data());
  auto st = std::static_pointer_cast<StructArray>(arr);
  auto id_col = std::static_pointer_cast<Int64Array>(st->field(0));
  auto name_col = std::static_pointer_cast<StringArray>(st->field(1));
  EXPECT_EQ(id_col->Value(9999), 9999);
  EXPECT_EQ(name_col->GetView(1234), "row 1234");
  EXPECT_GT(this->pool()->bytes_allocated(), 0);
  arr.reset();
  st.reset();
  id_col.reset();
  name_col.reset();
  EXPECT_EQ(this->pool()->bytes_allocated(), 0);
}

TEST(RemotePoolTest, EveryCallIsForwarded) {
  PrivateRegion region;
  LoopbackForwarder forwarder(region.allocator());
  RemoteMemoryPool pool(3, &forwarder);
  EXPECT_EQ(pool.backend_name(), "remote:3");
  uint8_t* p = nullptr;
  ASSERT_TRUE(pool.Allocate(64, &p).ok());
  ASSERT_TRUE(pool.Reallocate(64, 128, &p).ok());
  pool.Free(p, 128);
  EXPECT_EQ(forwarder.calls, 3);
  // A free the owner rejects is counted, never crashes.
  pool.Free(p, 128);
  EXPECT_EQ(pool.failed_frees(), 1);
}

}  // namespace
}  // namespace quiver::memory
