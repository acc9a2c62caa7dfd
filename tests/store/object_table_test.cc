// ObjectTable (store/object_table.h): the object store's rules at one home
// node, over a real catalogue and region allocator, whose statistics judge
// what was freed. Multi-node behaviour is tested with daemons elsewhere.
#include "store/object_table.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "common/test_region.h"

namespace quiver::store {
namespace {

using control::Catalogue;
using control::CatalogueLimits;
using control::testing_region::Client;
using control::testing_region::kGranule;
using control::testing_region::Region;

constexpr uint64_t kRegion = 1 << 20;

class ObjectTableTest : public ::testing::Test {
 protected:
  void SetUp() override { Make(StoreLimits{}); }
  void Make(const StoreLimits& limits, std::optional<SpillDir> spill = std::nullopt) {
    table_.reset();
    cat_ =
        std::make_unique<Catalogue>(region_.allocator(), 0, kGranule, CatalogueLimits{});
    table_ =
        std::make_unique<ObjectTable>(cat_.get(), 0, kRegion, limits, std::move(spill));
  }
  SessionId Open(uint32_t node = 0) {
    auto s = cat_->OpenSession(Client(node));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : 0;
  }
  // Creates, fills with `byte` and seals an object.
  ObjectView Put(SessionId s, const ObjectId& id, uint64_t size, uint8_t byte) {
    auto v = table_->Create(s, id, size, 0);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    if (!v.ok()) return {};
    std::memset(reinterpret_cast<void*>(v->address), byte, size);
    Status st = table_->Seal(s, id);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return *v;
  }
  bool AllBytes(uint64_t address, uint64_t size, uint8_t byte) {
    const auto* p = reinterpret_cast<const uint8_t*>(address);
    for (uint64_t i = 0; i < size; ++i) {
      if (p[i] != byte) return false;
    }
    return true;
  }

  Region region_{kRegion};
  std::unique_ptr<Catalogue> cat_;
  std::unique_ptr<ObjectTable> table_;
};

TEST(ObjectIdTest, FormsAndRoundTrips) {
  const ObjectId a = ObjectId::FromRandom(), b = ObjectId::FromRandom();
  EXPECT_NE(a, b);
  EXPECT_FALSE(a.nil());
  EXPECT_TRUE(ObjectId().nil());
  ASSERT_OK_AND_ASSIGN(ObjectId back, ObjectId::FromBinary(a.Binary()));
  EXPECT_EQ(back, a);
  ASSERT_OK_AND_ASSIGN(back, ObjectId::FromHex(a.Hex()));
  EXPECT_EQ(back, a);
  // SHA-1 of the name: the same in every process; the known digest of "abc".
  EXPECT_EQ(ObjectId::FromName("abc").Hex(), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(ObjectId::FromName("abc"), ObjectId::FromName("abc"));
  ASSERT_OK_AND_ASSIGN(back,
                       ObjectId::FromHex("A9993E364706816ABA3E25717850C26C9CD0D89D"));
  EXPECT_EQ(back, ObjectId::FromName("abc"));

  EXPECT_TRUE(ObjectId::FromBinary("short").status().IsInvalid());
  auto bad = ObjectId::FromHex(std::string(39, '0') + "g");
  ASSERT_TRUE(bad.status().IsInvalid());
  EXPECT_NE(bad.status().message().find("character 39"), std::string::npos)
      << bad.status().ToString();
  EXPECT_TRUE(ObjectId::FromHex("00").status().IsInvalid());
}

TEST_F(ObjectTableTest, CreateSealGetRelease) {
  const SessionId writer = Open(), reader = Open(2);
  const ObjectId id = ObjectId::FromName("one");
  const uint64_t base = region_.used();
  ASSERT_OK_AND_ASSIGN(ObjectView v, table_->Create(writer, id, 1000, 24));
  EXPECT_EQ(v.data_size, 1000u);
  EXPECT_EQ(v.metadata_size, 24u);
  EXPECT_EQ(v.address % 64, 0u);
  // Not readable before it is sealed.
  EXPECT_FALSE(table_->Contains(id));
  ASSERT_OK_AND_ASSIGN(auto early, table_->Get(reader, {id}));
  EXPECT_TRUE(early.found.empty());
  ASSERT_EQ(early.creating.size(), 1u);
  std::memset(reinterpret_cast<void*>(v.address), 7, 1024);
  ASSERT_OK(table_->Seal(writer, id));
  EXPECT_TRUE(table_->Contains(id));

  ASSERT_OK_AND_ASSIGN(auto got, table_->Get(reader, {id, ObjectId::FromName("none")}));
  ASSERT_EQ(got.found.size(), 1u);
  EXPECT_EQ(got.found[0].address, v.address);
  EXPECT_EQ(got.found[0].metadata_size, 24u);
  ASSERT_EQ(got.missing.size(), 1u);
  EXPECT_TRUE(AllBytes(got.found[0].address, 1024, 7));
  EXPECT_EQ(cat_->PinsOf(v.address), 1u);
  // Only the session that got the pin releases it.
  EXPECT_FALSE(table_->Release(writer, got.pin).ok());
  ASSERT_OK(table_->Release(reader, got.pin));
  EXPECT_EQ(cat_->PinsOf(v.address), 0u);
  // The store holds the sealed object, not its creator: it outlives the
  // creator's session.
  cat_->CloseSession(writer);
  table_->SessionClosed(writer);
  EXPECT_TRUE(table_->Contains(id));
  EXPECT_GT(region_.used(), base);
  const StoreCounters c = table_->Counters();
  EXPECT_EQ(c.creates, 1u);
  EXPECT_EQ(c.seals, 1u);
  EXPECT_EQ(c.hits, 1u);
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.objects_sealed, 1u);
  EXPECT_EQ(c.bytes_sealed, 1024u);
}

TEST_F(ObjectTableTest, IdsAreUniqueAndOnlyTheCreatorSealsOrAborts) {
  const SessionId a = Open(), b = Open(1);
  const ObjectId id = ObjectId::FromRandom();
  ASSERT_OK(table_->Create(a, id, 10, 0).status());
  EXPECT_TRUE(table_->Create(b, id, 10, 0).status().IsAlreadyExists());
  EXPECT_TRUE(table_->Create(a, id, 10, 0).status().IsAlreadyExists());
  EXPECT_TRUE(table_->Seal(b, id).IsPermissionDenied());
  EXPECT_TRUE(table_->Abort(b, id).IsPermissionDenied());
  EXPECT_TRUE(table_->Create(a, ObjectId(), 10, 0).status().IsInvalid());
  ASSERT_OK(table_->Seal(a, id));
  EXPECT_TRUE(table_->Seal(a, id).IsInvalid());   // twice
  EXPECT_TRUE(table_->Abort(a, id).IsInvalid());  // sealed: Delete instead
  EXPECT_TRUE(table_->Create(b, id, 10, 0).status().IsAlreadyExists());
  EXPECT_TRUE(table_->Seal(a, ObjectId::FromRandom()).IsNotFound());
}

TEST_F(ObjectTableTest, AbortAndADeadCreatorLeaveNothing) {
  const uint64_t base = region_.used();
  const SessionId a = Open();
  const ObjectId x = ObjectId::FromRandom(), y = ObjectId::FromRandom();
  ASSERT_OK(table_->Create(a, x, 5000, 0).status());
  ASSERT_OK(table_->Create(a, y, 7000, 0).status());
  ASSERT_OK(table_->Abort(a, x));
  EXPECT_FALSE(table_->Contains(x));
  // x's id is free again.
  ASSERT_OK(table_->Create(a, x, 10, 0).status());
  ASSERT_OK(table_->Abort(a, x));
  // The creator dies with y unsealed: the catalogue frees it, the table
  // forgets it.
  cat_->CloseSession(a);
  table_->SessionClosed(a);
  EXPECT_EQ(region_.used(), base);
  EXPECT_TRUE(table_->List().empty());
  EXPECT_EQ(table_->Counters().aborts, 2u);
  const SessionId b = Open();
  ASSERT_OK(table_->Create(b, y, 10, 0).status());
}

TEST_F(ObjectTableTest, DeleteOfAPinnedObjectKeepsItsBytesUntilRelease) {
  const uint64_t base = region_.used();
  const SessionId w = Open(), r = Open(3);
  const ObjectId id = ObjectId::FromRandom();
  const ObjectView v = Put(w, id, 4096, 0x5a);
  ASSERT_OK_AND_ASSIGN(auto got, table_->Get(r, {id}));
  const auto reply = table_->Delete({id, ObjectId::FromName("absent")});
  EXPECT_EQ(reply.deleted, 1u);
  EXPECT_EQ(reply.deferred, 1u);
  EXPECT_EQ(reply.missing.size(), 1u);
  // Gone for new readers (and the id is free), still there for the reader.
  EXPECT_FALSE(table_->Contains(id));
  ASSERT_OK_AND_ASSIGN(auto again, table_->Get(r, {id}));
  EXPECT_EQ(again.missing.size(), 1u);
  // A new object under the same id takes other memory.
  const SessionId w2 = Open();
  const ObjectView v2 = Put(w2, id, 4096, 0x11);
  EXPECT_NE(v2.address, v.address);
  EXPECT_TRUE(AllBytes(v.address, 4096, 0x5a));
  ASSERT_OK(table_->Release(r, got.pin));
  // The first object's memory came back; the second's is held.
  EXPECT_EQ(table_->Delete({id}).deleted, 1u);
  EXPECT_EQ(region_.used(), base);
}

TEST_F(ObjectTableTest, DeleteRefusesObjectsBeingCreated) {
  const SessionId w = Open();
  const ObjectId id = ObjectId::FromRandom();
  ASSERT_OK(table_->Create(w, id, 100, 0).status());
  const auto reply = table_->Delete({id});
  EXPECT_EQ(reply.deleted, 0u);
  ASSERT_EQ(reply.creating.size(), 1u);
  ASSERT_OK(table_->Seal(w, id));
  EXPECT_EQ(table_->Delete({id}).deleted, 1u);
}

TEST_F(ObjectTableTest, EvictionTakesTheLeastRecentlyUsedUnpinnedObjects) {
  const SessionId w = Open(), r = Open(1);
  std::vector<ObjectId> ids;
  for (int i = 0; i < 6; ++i) {
    ids.push_back(ObjectId::FromName("lru" + std::to_string(i)));
    Put(w, ids.back(), 10000, static_cast<uint8_t>(i));
  }
  // Use 0 (now the most recent) and hold a pin on 1.
  ASSERT_OK_AND_ASSIGN(auto touch, table_->Get(r, {ids[0]}));
  ASSERT_OK(table_->Release(r, touch.pin));
  ASSERT_OK_AND_ASSIGN(auto held, table_->Get(r, {ids[1]}));
  // Room for two objects: 2 and 3 go (1 is pinned, 0 was used).
  const uint64_t freed = table_->Evict(20000);
  EXPECT_GE(freed, 20000u);
  EXPECT_TRUE(table_->Contains(ids[0]));
  EXPECT_TRUE(table_->Contains(ids[1]));
  EXPECT_FALSE(table_->Contains(ids[2]));
  EXPECT_FALSE(table_->Contains(ids[3]));
  EXPECT_TRUE(table_->Contains(ids[4]));
  // Everything unpinned: all but 1.
  table_->Evict(UINT64_MAX);
  EXPECT_TRUE(table_->Contains(ids[1]));
  EXPECT_EQ(table_->List().size(), 1u);
  EXPECT_TRUE(AllBytes(held.found[0].address, 10000, 1));
  EXPECT_EQ(table_->Counters().evictions, 5u);
  ASSERT_OK(table_->Release(r, held.pin));
}

TEST_F(ObjectTableTest, ACreateThatFindsTheRegionFullEvicts) {
  // A little above a half and a quarter: each sealed object also has a
  // 68-byte record in the region.
  StoreLimits limits;
  limits.high_watermark = 0.51;
  limits.low_watermark = 0.26;
  Make(limits);
  const SessionId w = Open(), r = Open(1);
  const uint64_t each = kRegion / 16;
  std::vector<ObjectId> ids;
  for (int i = 0; i < 8; ++i) {  // exactly half the region
    ids.push_back(ObjectId::FromRandom());
    Put(w, ids.back(), each, static_cast<uint8_t>(i + 1));
  }
  EXPECT_EQ(table_->Counters().evictions, 0u);
  ASSERT_OK_AND_ASSIGN(auto held, table_->Get(r, {ids[0]}));
  // Using the others after it leaves ids[0] the least recently used.
  for (int i = 1; i < 8; ++i) {
    ASSERT_OK_AND_ASSIGN(auto g, table_->Get(r, {ids[i]}));
    ASSERT_OK(table_->Release(r, g.pin));
  }
  // The 9th passes half the region: evict until it fits under a quarter,
  // the oldest unpinned first (ids[0] is pinned, so never).
  ids.push_back(ObjectId::FromRandom());
  Put(w, ids.back(), each, 9);
  EXPECT_EQ(table_->Counters().evictions, 5u);
  EXPECT_TRUE(table_->Contains(ids[0]));
  for (int i = 1; i <= 5; ++i) EXPECT_FALSE(table_->Contains(ids[i])) << i;
  for (int i = 6; i <= 8; ++i) EXPECT_TRUE(table_->Contains(ids[i])) << i;
  EXPECT_GE(cat_->Stats().bytes, kRegion / 4);
  EXPECT_LT(cat_->Stats().bytes, kRegion / 4 + 4 * 256);  // + four records
  // Filling the region with pinned objects: Create says why it failed.
  std::vector<Handle> pins;
  Status last;
  for (int i = 0; i < 40 && last.ok(); ++i) {
    const ObjectId id = ObjectId::FromRandom();
    auto v = table_->Create(w, id, each, 0);
    last = v.status();
    if (!v.ok()) break;
    ASSERT_OK(table_->Seal(w, id));
    ASSERT_OK_AND_ASSIGN(auto g, table_->Get(r, {id}));
    pins.push_back(g.pin);
  }
  ASSERT_TRUE(last.IsOutOfMemory()) << last.ToString();
  EXPECT_NE(last.message().find("Create of object"), std::string::npos)
      << last.ToString();
  EXPECT_TRUE(AllBytes(held.found[0].address, each, 1));
}

TEST_F(ObjectTableTest, EventsAreNumberedAndResumable) {
  StoreLimits limits;
  limits.event_log = 4;
  Make(limits);
  const SessionId w = Open();
  const ObjectId a = ObjectId::FromRandom(), b = ObjectId::FromRandom();
  Put(w, a, 10, 1);
  Put(w, b, 20, 2);
  table_->Delete({a});
  bool lost = true;
  auto events = table_->EventsSince(0, 100, &lost);
  EXPECT_FALSE(lost);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].seq, 1u);
  EXPECT_EQ(events[0].kind, StoreEvent::Kind::kSealed);
  EXPECT_EQ(events[0].id, a);
  EXPECT_EQ(events[1].id, b);
  EXPECT_EQ(events[1].data_size, 20u);
  EXPECT_EQ(events[2].kind, StoreEvent::Kind::kDeleted);
  // Resume after the second.
  events = table_->EventsSince(2, 100, &lost);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].seq, 3u);
  EXPECT_TRUE(table_->EventsSince(3, 100, &lost).empty());
  // The log keeps 4: a subscriber that stopped at 1 has lost events.
  for (int i = 0; i < 3; ++i) Put(w, ObjectId::FromRandom(), 10, 3);
  EXPECT_EQ(table_->last_event(), 6u);
  events = table_->EventsSince(1, 100, &lost);
  EXPECT_TRUE(lost);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].seq, 3u);
  events = table_->EventsSince(2, 2, &lost);  // at most 2
  EXPECT_FALSE(lost);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].seq, 4u);
}

TEST_F(ObjectTableTest, AGetUnlessCreatingPinsNothingWhileOneIsBeingCreated) {
  const SessionId w = Open(), r = Open(1);
  const ObjectId a = ObjectId::FromName("a"), b = ObjectId::FromName("b");
  const ObjectView va = Put(w, a, 100, 1);
  ASSERT_OK(table_->Create(w, b, 50, 0).status());
  // A waiting Get takes nothing while b is being created...
  ASSERT_OK_AND_ASSIGN(auto wait, table_->Get(r, {a, b, a}, /*unless_creating=*/true));
  EXPECT_TRUE(wait.waiting);
  EXPECT_TRUE(wait.found.empty());
  EXPECT_TRUE(wait.creating.empty());
  EXPECT_EQ(cat_->PinsOf(va.address), 0u);
  EXPECT_EQ(table_->Counters().hits, 0u);
  // ...one that does not wait pins what is sealed (an id asked twice is
  // found twice, pinned once) and names the other.
  ASSERT_OK_AND_ASSIGN(auto now, table_->Get(r, {a, b, a}));
  EXPECT_FALSE(now.waiting);
  ASSERT_EQ(now.found.size(), 2u);
  ASSERT_EQ(now.creating.size(), 1u);
  EXPECT_EQ(now.creating[0], b);
  EXPECT_EQ(cat_->PinsOf(va.address), 1u);
  ASSERT_OK(table_->Release(r, now.pin));
  EXPECT_EQ(cat_->PinsOf(va.address), 0u);
  // Once b is sealed, the waiting Get pins both.
  ASSERT_OK(table_->Seal(w, b));
  ASSERT_OK_AND_ASSIGN(auto both, table_->Get(r, {a, b}, /*unless_creating=*/true));
  EXPECT_FALSE(both.waiting);
  EXPECT_EQ(both.found.size(), 2u);
  ASSERT_OK(table_->Release(r, both.pin));
}

TEST_F(ObjectTableTest, ListShowsStatePinsAndLastUse) {
  const SessionId w = Open(), r = Open(1);
  const ObjectId a = ObjectId::FromName("a"), b = ObjectId::FromName("b");
  Put(w, a, 100, 1);
  ASSERT_OK(table_->Create(w, b, 50, 5).status());
  ASSERT_OK_AND_ASSIGN(auto g, table_->Get(r, {a}));
  const auto list = table_->List();
  ASSERT_EQ(list.size(), 2u);
  for (const auto& l : list) {
    if (l.id == a) {
      EXPECT_EQ(l.state, ObjectState::kSealed);
      EXPECT_EQ(l.pins, 1u);
      EXPECT_EQ(l.data_size, 100u);
    } else {
      EXPECT_EQ(l.id, b);
      EXPECT_EQ(l.state, ObjectState::kCreating);
      EXPECT_EQ(l.metadata_size, 5u);
      EXPECT_STREQ(StateName(l.state), "creating");
    }
    EXPECT_GT(l.last_use.time_since_epoch().count(), 0);
  }
  ASSERT_OK(table_->Release(r, g.pin));
}

}  // namespace
}  // namespace quiver::store
