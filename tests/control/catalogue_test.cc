// Catalogue (control/catalogue/catalogue.h): every rule of an object's life
// in a node's region, each shown by a test that fails if the rule breaks.
// The catalogue runs over a real RegionAllocator (on anonymous memory), and
// the allocator's own statistics are the judge of what was freed.
//
// Restarts and recovery are in catalogue_recovery_test.cc.

#include "control/catalogue/catalogue.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "control/catalogue/object_tag.h"
#include "control/catalogue_test_util.h"

namespace quiver::control {
namespace {

using catalogue_testing::CatalogueTest;
using catalogue_testing::Contains;
using catalogue_testing::kSelf;
using testing_region::Client;
using testing_region::kGranule;
using testing_region::Region;

// ---------------------------------------------------------------------------
// Allocation and ownership

TEST_F(CatalogueTest, AllocateIsPaddedChargedAndTagged) {
  const SessionId a = Open(/*node=*/4);
  const uint64_t before = region_.used();
  ASSERT_OK_AND_ASSIGN(Allocation x, cat_->Allocate(a, 100, 0));
  EXPECT_EQ(x.size, 128u);
  EXPECT_EQ(x.address % kGranule, 0u);
  EXPECT_EQ(region_.used(), before + 128);
  EXPECT_EQ(cat_->HeldBy(a), 128u);
  EXPECT_EQ(tag::Creator(region_.tag(x.address)), 4u);
  EXPECT_FALSE(tag::Sealed(region_.tag(x.address)));
  ASSERT_OK_AND_ASSIGN(Allocation y, cat_->Allocate(a, 10, 4096));
  EXPECT_EQ(y.address % 4096, 0u);
  EXPECT_TRUE(cat_->Allocate(a, 10, 3).status().IsInvalid());
  EXPECT_TRUE(cat_->Allocate(/*session=*/999, 10, 0).status().IsNotFound());
}

TEST_F(CatalogueTest, DaemonSessionsDoNotAllocate) {
  SessionInfo daemon;
  daemon.identity = PeerIdentity{"test", PeerRole::kDaemon, 1};
  ASSERT_OK_AND_ASSIGN(SessionId d, cat_->OpenSession(daemon));
  const uint64_t live = region_.live();
  EXPECT_EQ(cat_->Allocate(d, 64, 0).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(region_.live(), live);
}

TEST_F(CatalogueTest, OnlyTheCreatorFrees) {
  const SessionId a = Open(), b = Open();
  const uint64_t x = New(a), y = New(b);
  const uint64_t used = region_.used(), live = region_.live();
  Status st = cat_->Free(b, {x});
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
  // A list with one foreign object lets go of nothing, not even b's own.
  st = cat_->Free(b, {y, x});
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
  EXPECT_EQ(region_.used(), used);
  EXPECT_EQ(region_.live(), live);
  EXPECT_EQ(cat_->HeldBy(a), 128u);
  EXPECT_EQ(cat_->HeldBy(b), 128u);
  EXPECT_TRUE(region_.IsLive(x));
  EXPECT_TRUE(region_.IsLive(y));
  // Its creator may.
  uint32_t freed = 0, deferred = 0;
  ASSERT_OK(cat_->Free(a, {x}, &freed, &deferred));
  EXPECT_EQ(freed, 1u);
  EXPECT_FALSE(region_.IsLive(x));
  // Unknown addresses and addresses inside an object are not objects.
  EXPECT_TRUE(cat_->Free(b, {x}).IsNotFound());
  EXPECT_TRUE(cat_->Free(b, {y + 64}).IsNotFound());
  EXPECT_TRUE(region_.IsLive(y));
}

TEST_F(CatalogueTest, OnlyTheCreatorSeals) {
  const SessionId a = Open(), b = Open();
  const uint64_t x = New(a);
  Status st = cat_->Seal(b, {{x, 10}});
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
  EXPECT_FALSE(tag::Sealed(region_.tag(x)));
  // Still unsealed: its creator may resize it, nobody may pin it.
  ASSERT_OK(cat_->Reallocate(a, x, 100, 0).status());
  EXPECT_TRUE(cat_->Pin(b, {x}).status().IsNotFound());
  // A range anywhere inside the object seals all of it.
  ASSERT_OK(cat_->Seal(a, {{x + 64, 8}}));
  EXPECT_TRUE(tag::Sealed(region_.tag(x)));
  // Sealing again is idempotent for its creator. Another session may name
  // it in a seal only while it pins it (it re-publishes what it read): the
  // address alone could be another object's after a free or a restart.
  ASSERT_OK(cat_->Seal(a, {{x, 1}}));
  st = cat_->Seal(b, {{x, 1}});
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
  ASSERT_OK_AND_ASSIGN(Handle pin, cat_->Pin(b, {x}));
  ASSERT_OK(cat_->Seal(b, {{x, 1}}));
  ASSERT_OK(cat_->Release(b, pin));
  EXPECT_EQ(cat_->Seal(b, {{x, 1}}).code(), StatusCode::kPermissionDenied);
  // Nothing is sealed when one range of the list is refused.
  const uint64_t y = New(a), z = New(b);
  st = cat_->Seal(a, {{y, 8}, {z, 8}});
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
  EXPECT_FALSE(tag::Sealed(region_.tag(y)));
  EXPECT_FALSE(tag::Sealed(region_.tag(z)));
  // A range in no object, or across two, is refused.
  EXPECT_TRUE(cat_->Seal(a, {{y + 4096 * 64, 8}}).IsNotFound());
  EXPECT_TRUE(cat_->Seal(a, {{y, 4096}}).IsNotFound());
}

TEST_F(CatalogueTest, OnlyTheCreatorReallocatesAndOnlyUnsealed) {
  const SessionId a = Open(), b = Open();
  const uint64_t x = New(a, 64);
  std::memset(reinterpret_cast<void*>(x), 0x5A, 64);
  Status st = cat_->Reallocate(b, x, 4096, 0).status();
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
  EXPECT_EQ(cat_->HeldBy(b), 0u);
  EXPECT_EQ(cat_->HeldBy(a), 64u);
  // Grown (possibly moved) by its creator: the contents and the tag follow.
  New(a, 64);  // something after x, so that growing may have to move
  ASSERT_OK_AND_ASSIGN(Allocation moved, cat_->Reallocate(a, x, 4096, 0));
  EXPECT_EQ(moved.size, 4096u);
  EXPECT_EQ(cat_->HeldBy(a), 4096u + 64);
  EXPECT_EQ(*reinterpret_cast<const uint8_t*>(moved.address + 63), 0x5A);
  EXPECT_EQ(tag::Creator(region_.tag(moved.address)), 1u);
  // The old address is no object of a's any more (when it moved).
  if (moved.address != x) {
    EXPECT_FALSE(cat_->Free(a, {x}).ok());
  }
  // Shrunk: the quota use follows.
  ASSERT_OK_AND_ASSIGN(Allocation small, cat_->Reallocate(a, moved.address, 10, 0));
  EXPECT_EQ(cat_->HeldBy(a), 64u + 64);
  // Sealed objects never change again.
  ASSERT_OK(cat_->Seal(a, {{small.address, 10}}));
  st = cat_->Reallocate(a, small.address, 100, 0).status();
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
}

// Bytes() is kept as objects come and go (the store asks it on every
// Create); it always equals what a walk of every object finds.
TEST_F(CatalogueTest, BytesFollowEveryChangeWithoutAWalk) {
  auto same = [&] { return cat_->Bytes() == cat_->Stats().bytes; };
  const SessionId a = Open();
  EXPECT_EQ(cat_->Bytes(), 0u);
  const uint64_t x = New(a, 100);
  New(a, 64);  // after x, so that growing x may move it
  ASSERT_OK_AND_ASSIGN(Allocation grown, cat_->Reallocate(a, x, 5000, 0));
  EXPECT_TRUE(same());
  ASSERT_OK_AND_ASSIGN(Allocation shrunk, cat_->Reallocate(a, grown.address, 10, 0));
  EXPECT_TRUE(same());
  ASSERT_OK(cat_->WriteRecord(1, "a record").status());
  EXPECT_TRUE(same());
  ASSERT_OK(cat_->Free(a, {shrunk.address}));
  EXPECT_TRUE(same());
  const uint64_t before = cat_->Bytes();
  cat_.reset();  // a restart: what the region holds is found again
  Make(CatalogueLimits{});
  ASSERT_OK(cat_->Recover().status());
  EXPECT_EQ(cat_->Bytes(), before);
  EXPECT_TRUE(same());
  cat_->EndRecovery();
  EXPECT_TRUE(same());
}

// ---------------------------------------------------------------------------
// When objects are freed

TEST_F(CatalogueTest, FreeOfUnsealedIsImmediate) {
  const SessionId a = Open();
  const uint64_t used = region_.used(), live = region_.live();
  const uint64_t x = New(a, 1000);
  EXPECT_EQ(region_.used(), used + 1024);
  uint32_t freed = 9, deferred = 9;
  ASSERT_OK(cat_->Free(a, {x}, &freed, &deferred));
  EXPECT_EQ(freed, 1u);
  EXPECT_EQ(deferred, 0u);
  EXPECT_EQ(region_.used(), used);
  EXPECT_EQ(region_.live(), live);
  EXPECT_EQ(cat_->HeldBy(a), 0u);
  EXPECT_EQ(cat_->Stats().objects, 0u);
}

TEST_F(CatalogueTest, FreeOfSealedUnheldIsImmediate) {
  const SessionId a = Open();
  const uint64_t used = region_.used();
  const uint64_t x = New(a, 100, /*seal=*/true);
  uint32_t freed = 0, deferred = 9;
  ASSERT_OK(cat_->Free(a, {x}, &freed, &deferred));
  EXPECT_EQ(freed, 1u);
  EXPECT_EQ(deferred, 0u);
  EXPECT_EQ(region_.used(), used);
}

TEST_F(CatalogueTest, FreeOfPublishedIsDeferredUntilTheLastPublicationGoes) {
  const SessionId a = Open();
  const uint64_t used = region_.used();
  const uint64_t x = New(a, 100, /*seal=*/true);
  ASSERT_OK_AND_ASSIGN(auto p1, cat_->AddPublication({{x, 8}, {x + 64, 8}}));
  ASSERT_EQ(p1, std::vector<uint64_t>{x});  // one reference per distinct object
  ASSERT_OK_AND_ASSIGN(auto p2, cat_->AddPublication({{x, 100}}));
  EXPECT_EQ(cat_->PublicationsOf(x), 2u);
  uint32_t freed = 9, deferred = 0;
  ASSERT_OK(cat_->Free(a, {x}, &freed, &deferred));
  EXPECT_EQ(freed, 0u);
  EXPECT_EQ(deferred, 1u);
  EXPECT_EQ(region_.used(), used + 128);
  EXPECT_EQ(cat_->HeldBy(a), 0u);  // no longer a's
  // Freed once, even if asked again.
  EXPECT_FALSE(cat_->Free(a, {x}).ok());
  cat_->DropPublication(p1);
  EXPECT_TRUE(region_.IsLive(x));
  cat_->DropPublication(p2);
  EXPECT_FALSE(region_.IsLive(x));
  EXPECT_EQ(region_.used(), used);
  // Dropping more than was added changes nothing.
  cat_->DropPublication(p2);
  EXPECT_EQ(region_.used(), used);
}

TEST_F(CatalogueTest, PublishedButNotFreedStaysAfterTheLastPublication) {
  const SessionId a = Open();
  const uint64_t x = New(a, 100, /*seal=*/true);
  ASSERT_OK_AND_ASSIGN(auto p, cat_->AddPublication({{x, 8}}));
  cat_->DropPublication(p);
  EXPECT_TRUE(region_.IsLive(x));  // its creator still holds it
  ASSERT_OK(cat_->Free(a, {x}));
  EXPECT_FALSE(region_.IsLive(x));
}

TEST_F(CatalogueTest, FreeOfPinnedIsDeferredUntilTheLastPinGoes) {
  const SessionId a = Open(), r1 = Open(2), r2 = Open(3);
  const uint64_t used = region_.used();
  const uint64_t x = New(a, 100, /*seal=*/true);
  ASSERT_OK_AND_ASSIGN(Handle h1, cat_->Pin(r1, {x}));
  ASSERT_OK_AND_ASSIGN(Handle h2, cat_->Pin(r2, {x, x}));  // listed twice: one pin
  EXPECT_EQ(cat_->PinsOf(x), 2u);
  EXPECT_EQ(tag::Pins(region_.tag(x)), 2u);  // kept in the region for restarts
  uint32_t deferred = 0;
  ASSERT_OK(cat_->Free(a, {x}, nullptr, &deferred));
  EXPECT_EQ(deferred, 1u);
  ASSERT_OK(cat_->Release(r1, h1));
  EXPECT_TRUE(region_.IsLive(x));
  EXPECT_EQ(tag::Pins(region_.tag(x)), 1u);
  ASSERT_OK(cat_->Release(r2, h2));
  EXPECT_FALSE(region_.IsLive(x));
  EXPECT_EQ(region_.used(), used);
}

TEST_F(CatalogueTest, PinsAndPublicationsTogether) {
  const SessionId a = Open(), r = Open(2);
  const uint64_t x = New(a, 100, /*seal=*/true);
  ASSERT_OK_AND_ASSIGN(auto p, cat_->AddPublication({{x, 8}}));
  ASSERT_OK_AND_ASSIGN(Handle h, cat_->Pin(r, {x}));
  ASSERT_OK(cat_->Free(a, {x}));
  cat_->DropPublication(p);
  EXPECT_TRUE(region_.IsLive(x));  // the pin still holds it
  ASSERT_OK(cat_->Release(r, h));
  EXPECT_FALSE(region_.IsLive(x));
}

// A FreeRequest may list an address twice: the session lets go of the
// object once. Its quota use must not drop twice (or wrap around, which
// would let it hold more than its quota).
TEST_F(CatalogueTest, FreeListingAnObjectTwiceLetsGoOnce) {
  CatalogueLimits limits;
  limits.session_quota = 4096;
  Make(limits);
  const SessionId a = Open(), r = Open(2);
  const uint64_t x = New(a, 1024, /*seal=*/true);
  const uint64_t y = New(a, 1024);
  ASSERT_OK_AND_ASSIGN(Handle h, cat_->Pin(r, {x}));
  uint32_t freed = 0, deferred = 0;
  ASSERT_OK(cat_->Free(a, {x, x, y, y}, &freed, &deferred));
  EXPECT_EQ(freed, 1u);     // y
  EXPECT_EQ(deferred, 1u);  // x, once
  EXPECT_EQ(cat_->HeldBy(a), 0u);
  // The quota is exactly what it was: 4096 bytes, not one more.
  ASSERT_OK(cat_->Allocate(a, 4096, 0).status());
  EXPECT_TRUE(cat_->Allocate(a, 64, 0).status().IsOutOfMemory());
  ASSERT_OK(cat_->Release(r, h));
  EXPECT_FALSE(region_.IsLive(x));
}

TEST_F(CatalogueTest, CloseSessionLetsGoOfEverythingItHeld) {
  const SessionId a = Open(), other = Open(2);
  const uint64_t base_used = region_.used();
  const uint64_t unsealed = New(a, 100);
  const uint64_t sealed = New(a, 100, /*seal=*/true);
  const uint64_t published = New(a, 100, /*seal=*/true);
  const uint64_t pinned_by_other = New(a, 100, /*seal=*/true);
  ASSERT_OK_AND_ASSIGN(auto pub, cat_->AddPublication({{published, 8}}));
  ASSERT_OK_AND_ASSIGN(Handle other_pin, cat_->Pin(other, {pinned_by_other}));
  // a pins another session's object that its creator already let go of.
  const uint64_t foreign = New(other, 100, /*seal=*/true);
  ASSERT_OK(cat_->Pin(a, {foreign}).status());
  ASSERT_OK(cat_->Pin(a, {foreign, sealed}).status());
  ASSERT_OK(cat_->Free(other, {foreign}));
  EXPECT_TRUE(region_.IsLive(foreign));
  EXPECT_EQ(cat_->PinsOf(foreign), 2u);

  Catalogue::Released r = cat_->CloseSession(a);
  EXPECT_EQ(r.pins_released, 2u);
  EXPECT_FALSE(cat_->HasSession(a));
  EXPECT_FALSE(region_.IsLive(unsealed));
  EXPECT_FALSE(region_.IsLive(sealed));
  EXPECT_FALSE(region_.IsLive(foreign));  // its last pin went with a
  EXPECT_TRUE(region_.IsLive(published));
  EXPECT_TRUE(region_.IsLive(pinned_by_other));
  EXPECT_EQ(r.bytes_freed, 3 * 128u);
  EXPECT_EQ(cat_->HeldBy(a), 0u);
  // What the others hold goes when they let go; nobody is its creator now.
  cat_->DropPublication(pub);
  EXPECT_FALSE(region_.IsLive(published));
  ASSERT_OK(cat_->Release(other, other_pin));
  EXPECT_FALSE(region_.IsLive(pinned_by_other));
  EXPECT_EQ(region_.used(), base_used);
  // A closed session can do nothing more; closing again is harmless.
  EXPECT_TRUE(cat_->Allocate(a, 10, 0).status().IsNotFound());
  r = cat_->CloseSession(a);
  EXPECT_EQ(r.objects_freed, 0u);
  EXPECT_EQ(cat_->Stats().sessions, 1u);
}

// ---------------------------------------------------------------------------
// Pins

TEST_F(CatalogueTest, PinsNeedLiveSealedObjects) {
  const SessionId a = Open(), r = Open(2);
  const uint64_t sealed = New(a, 100, /*seal=*/true);
  const uint64_t unsealed = New(a, 100);
  EXPECT_TRUE(cat_->Pin(r, {unsealed}).status().IsNotFound());
  // All or nothing: the sealed one of the list is not pinned either.
  EXPECT_TRUE(cat_->Pin(r, {sealed, unsealed}).status().IsNotFound());
  EXPECT_EQ(cat_->PinsOf(sealed), 0u);
  EXPECT_TRUE(cat_->Pin(r, {sealed + 64}).status().IsNotFound());  // not an object start
  EXPECT_TRUE(cat_->Pin(/*session=*/999, {sealed}).status().IsNotFound());
  EXPECT_EQ(cat_->Stats().pins, 0u);
}

TEST_F(CatalogueTest, OnlyThePinningSessionReleases) {
  const SessionId a = Open(), r = Open(2), thief = Open(3);
  const uint64_t x = New(a, 100, /*seal=*/true);
  ASSERT_OK_AND_ASSIGN(Handle h, cat_->Pin(r, {x}));
  ASSERT_OK(cat_->Free(a, {x}));
  Status st = cat_->Release(thief, h);
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  st = cat_->Release(a, h);  // not even the creator
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_EQ(cat_->PinsOf(x), 1u);
  EXPECT_TRUE(region_.IsLive(x));
  // A closed session's handle is nobody's either.
  cat_->CloseSession(thief);
  EXPECT_TRUE(cat_->Release(thief, h).IsNotFound());
  EXPECT_EQ(cat_->PinsOf(x), 1u);
  ASSERT_OK(cat_->Release(r, h));
  EXPECT_FALSE(region_.IsLive(x));
  EXPECT_TRUE(cat_->Release(r, h).IsNotFound());  // once
}

TEST_F(CatalogueTest, HandlesAreDistinctAndRandom) {
  const SessionId a = Open(), r = Open(2);
  const uint64_t x = New(a, 100, /*seal=*/true);
  constexpr int kPins = 4000;
  std::set<std::string> seen;
  std::set<uint64_t> halves;
  int ones[128] = {};
  for (int i = 0; i < kPins; ++i) {
    ASSERT_OK_AND_ASSIGN(Handle h, cat_->Pin(r, {x}));
    const std::string bytes = h.Bytes();
    ASSERT_EQ(bytes.size(), 16u);
    ASSERT_TRUE(seen.insert(bytes).second) << "handle " << i << " repeats one";
    halves.insert(h.hi);
    halves.insert(h.lo);
    for (int bit = 0; bit < 128; ++bit) {
      ones[bit] += (static_cast<unsigned char>(bytes[bit / 8]) >> (bit % 8)) & 1;
    }
    ASSERT_OK_AND_ASSIGN(Handle back, Handle::FromBytes(bytes));
    ASSERT_TRUE(back == h);
  }
  // Not a counter: no half repeats, and every bit is set about half the
  // time (a fair bit is outside [35%, 65%] of 4000 draws with probability
  // far below 1e-60).
  EXPECT_EQ(halves.size(), 2u * kPins);
  for (int bit = 0; bit < 128; ++bit) {
    EXPECT_GT(ones[bit], kPins * 35 / 100) << "bit " << bit;
    EXPECT_LT(ones[bit], kPins * 65 / 100) << "bit " << bit;
  }
  EXPECT_EQ(cat_->PinsOf(x), static_cast<uint32_t>(kPins));
  EXPECT_EQ(cat_->Stats().pins, static_cast<uint64_t>(kPins));
  EXPECT_TRUE(Handle::FromBytes(std::string(15, 'x')).status().IsInvalid());
  EXPECT_TRUE(Handle::FromBytes(std::string(17, 'x')).status().IsInvalid());
}

TEST_F(CatalogueTest, PinCountInTheTagSaturates) {
  CatalogueLimits limits;
  limits.max_pins_per_session = tag::kPinMax + 100;
  Make(limits);
  const SessionId a = Open(), r = Open(2);
  const uint64_t x = New(a, 100, /*seal=*/true);
  std::vector<Handle> handles;
  for (uint64_t i = 0; i < tag::kPinMax + 10; ++i) {
    ASSERT_OK_AND_ASSIGN(Handle h, cat_->Pin(r, {x}));
    handles.push_back(h);
  }
  EXPECT_EQ(tag::Pins(region_.tag(x)), tag::kPinMax);
  EXPECT_TRUE(tag::Sealed(region_.tag(x)));  // the other bits are kept
  EXPECT_EQ(tag::Creator(region_.tag(x)), 1u);
  for (const Handle& h : handles) ASSERT_OK(cat_->Release(r, h));
  EXPECT_EQ(tag::Pins(region_.tag(x)), 0u);
  EXPECT_TRUE(region_.IsLive(x));  // its creator holds it
}

// ---------------------------------------------------------------------------
// Publications and records

TEST_F(CatalogueTest, PublicationsNeedSealedRangesInsideOneObject) {
  const SessionId a = Open();
  const uint64_t sealed = New(a, 100, /*seal=*/true);
  const uint64_t unsealed = New(a, 100);
  Status st = cat_->AddPublication({{sealed, 8}, {unsealed, 8}}).status();
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_EQ(cat_->PublicationsOf(sealed), 0u);  // all or nothing
  EXPECT_TRUE(cat_->AddPublication({{sealed, 4096}}).status().IsNotFound());
  EXPECT_TRUE(cat_->AddPublication({{sealed + (1 << 20), 8}}).status().IsNotFound());
  EXPECT_TRUE(cat_->AddPublication({{0x1000, 8}}).status().IsNotFound());
  // Empty ranges are nobody's business.
  ASSERT_OK_AND_ASSIGN(auto none, cat_->AddPublication({{0x1000, 0}}));
  EXPECT_TRUE(none.empty());
}

TEST_F(CatalogueTest, RecordsAreNeverPinnedFreedOrPublishedBySessions) {
  const SessionId a = Open();
  const uint64_t live = region_.live();
  ASSERT_OK_AND_ASSIGN(uint64_t rec, cat_->WriteRecord(7, "record bytes"));
  EXPECT_EQ(region_.live(), live + 1);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(rec), 12), "record bytes");
  const uint64_t t = region_.tag(rec);
  EXPECT_TRUE(tag::Record(t));
  EXPECT_TRUE(tag::Sealed(t));
  EXPECT_EQ(tag::Creator(t), 7u);
  EXPECT_EQ(cat_->Stats().records, 1u);
  EXPECT_EQ(cat_->Stats().objects, 0u);

  EXPECT_TRUE(cat_->Free(a, {rec}).IsNotFound());
  EXPECT_TRUE(cat_->Pin(a, {rec}).status().IsNotFound());
  EXPECT_TRUE(cat_->Seal(a, {{rec, 8}}).IsNotFound());
  EXPECT_TRUE(cat_->AddPublication({{rec, 8}}).status().IsNotFound());
  EXPECT_TRUE(cat_->Reallocate(a, rec, 8, 0).status().code() ==
              StatusCode::kPermissionDenied);
  cat_->CloseSession(a);
  EXPECT_TRUE(region_.IsLive(rec));

  // FreeRecord frees records only.
  const SessionId b = Open();
  const uint64_t x = New(b, 100, /*seal=*/true);
  cat_->FreeRecord(x);
  EXPECT_TRUE(region_.IsLive(x));
  cat_->FreeRecord(rec);
  EXPECT_FALSE(region_.IsLive(rec));
  EXPECT_EQ(cat_->Stats().records, 0u);
}

// ---------------------------------------------------------------------------
// Quotas and rate limits

TEST_F(CatalogueTest, SessionQuotaRefusesAndNamesTheLimit) {
  CatalogueLimits limits;
  limits.session_quota = 4096;
  Make(limits);
  const SessionId a = Open(), b = Open();
  ASSERT_OK(cat_->Allocate(a, 4000, 0).status());  // 4032 padded
  Status st = cat_->Allocate(a, 100, 0).status();
  EXPECT_TRUE(st.IsOutOfMemory()) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "quota of 4096")) << st.ToString();
  ASSERT_OK(cat_->Allocate(a, 64, 0).status());  // exactly up to the quota
  EXPECT_TRUE(cat_->Allocate(a, 1, 0).status().IsOutOfMemory());
  // Another session of the same node has its own quota.
  ASSERT_OK_AND_ASSIGN(Allocation y, cat_->Allocate(b, 4096, 0));
  // Growing counts too.
  ASSERT_OK(cat_->Free(b, {y.address}));
  ASSERT_OK_AND_ASSIGN(Allocation z, cat_->Allocate(b, 64, 0));
  st = cat_->Reallocate(b, z.address, 8192, 0).status();
  EXPECT_TRUE(st.IsOutOfMemory()) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "quota of 4096")) << st.ToString();
  EXPECT_EQ(cat_->HeldBy(b), 64u);
  // Freeing gives the quota back.
  ASSERT_OK_AND_ASSIGN(Allocation w, cat_->Reallocate(b, z.address, 4096, 0));
  EXPECT_EQ(cat_->HeldBy(b), 4096u);
  ASSERT_OK(cat_->Free(b, {w.address}));
  ASSERT_OK(cat_->Allocate(b, 4096, 0).status());
}

TEST_F(CatalogueTest, SealedObjectsLeaveTheQuotaWhenLetGo) {
  CatalogueLimits limits;
  limits.session_quota = 4096;
  Make(limits);
  const SessionId a = Open();
  const uint64_t x = New(a, 4096, /*seal=*/true);
  ASSERT_OK(cat_->AddPublication({{x, 8}}).status());
  ASSERT_OK(cat_->Free(a, {x}));  // deferred: published
  ASSERT_OK(cat_->Allocate(a, 4096, 0).status());
}

TEST_F(CatalogueTest, NodeQuotaRefusesAndNamesTheLimit) {
  CatalogueLimits limits;
  limits.node_quota = 8192;
  Make(limits);
  const SessionId a = Open(1), b = Open(1), c = Open(2);
  ASSERT_OK(cat_->Allocate(a, 4096, 0).status());
  ASSERT_OK_AND_ASSIGN(Allocation y, cat_->Allocate(b, 4096, 0));
  Status st = cat_->Allocate(b, 64, 0).status();
  EXPECT_TRUE(st.IsOutOfMemory()) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "node quota of 8192")) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "node 1")) << st.ToString();
  st = cat_->Reallocate(b, y.address, 8192, 0).status();
  EXPECT_TRUE(st.IsOutOfMemory()) << st.ToString();
  // Clients of another node have their own account.
  ASSERT_OK(cat_->Allocate(c, 8192, 0).status());
  // Records written for node 1's chunks count against node 1.
  ASSERT_OK(cat_->Free(b, {y.address}));
  ASSERT_OK(cat_->WriteRecord(1, std::string(4000, 'r')).status());
  EXPECT_TRUE(cat_->Allocate(b, 128, 0).status().IsOutOfMemory());
  ASSERT_OK(cat_->Allocate(b, 64, 0).status());
}

TEST_F(CatalogueTest, MaxMallocRefusesAndNamesTheLimit) {
  CatalogueLimits limits;
  limits.max_malloc = 1000;
  Make(limits);
  const SessionId a = Open();
  Status st = cat_->Allocate(a, 1001, 0).status();
  EXPECT_TRUE(st.IsOutOfMemory()) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "limit of 1000")) << st.ToString();
  ASSERT_OK_AND_ASSIGN(Allocation x, cat_->Allocate(a, 1000, 0));
  EXPECT_TRUE(cat_->Reallocate(a, x.address, 1001, 0).status().IsOutOfMemory());
}

TEST_F(CatalogueTest, RegionExhaustionIsOutOfMemory) {
  const SessionId a = Open();
  const uint64_t used = region_.used();
  EXPECT_TRUE(cat_->Allocate(a, 64ULL << 20, 0).status().IsOutOfMemory());
  EXPECT_EQ(cat_->HeldBy(a), 0u);
  EXPECT_EQ(region_.used(), used);
}

class FakeClock {
 public:
  Catalogue::Clock::time_point now = Catalogue::Clock::time_point(std::chrono::hours(1));
  void Advance(std::chrono::milliseconds d) { now += d; }
  std::function<Catalogue::Clock::time_point()> Fn() {
    return [this] { return now; };
  }
};

TEST_F(CatalogueTest, SessionRateLimitRefusesAfterTheBurstAndRecovers) {
  CatalogueLimits limits;
  limits.malloc_rate = 5;
  Make(limits);
  FakeClock clock;
  cat_->SetClockForTesting(clock.Fn());
  const SessionId a = Open(), b = Open();
  for (int i = 0; i < 5; ++i) ASSERT_OK(cat_->Allocate(a, 64, 0).status());
  Status st = cat_->Allocate(a, 64, 0).status();
  EXPECT_TRUE(st.IsOutOfMemory()) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "rate limit of 5 per second")) << st.ToString();
  // Another session has its own bucket.
  ASSERT_OK(cat_->Allocate(b, 64, 0).status());
  // A refusal does not let time pass: still refused.
  EXPECT_TRUE(cat_->Allocate(a, 64, 0).status().IsOutOfMemory());
  // Half a second later: two and a half tokens, so two more.
  clock.Advance(std::chrono::milliseconds(500));
  ASSERT_OK(cat_->Allocate(a, 64, 0).status());
  ASSERT_OK(cat_->Allocate(a, 64, 0).status());
  EXPECT_TRUE(cat_->Allocate(a, 64, 0).status().IsOutOfMemory());
  // After a long pause: a full burst again, never more.
  clock.Advance(std::chrono::hours(1));
  for (int i = 0; i < 5; ++i) ASSERT_OK(cat_->Allocate(a, 64, 0).status());
  EXPECT_TRUE(cat_->Allocate(a, 64, 0).status().IsOutOfMemory());
}

TEST_F(CatalogueTest, NodeRateLimitCoversAllSessionsOfANode) {
  CatalogueLimits limits;
  limits.malloc_rate = 100;
  limits.node_malloc_rate = 8;
  Make(limits);
  FakeClock clock;
  cat_->SetClockForTesting(clock.Fn());
  const SessionId a = Open(1), b = Open(1), c = Open(2);
  for (int i = 0; i < 5; ++i) ASSERT_OK(cat_->Allocate(a, 64, 0).status());
  for (int i = 0; i < 3; ++i) ASSERT_OK(cat_->Allocate(b, 64, 0).status());
  Status st = cat_->Allocate(b, 64, 0).status();
  EXPECT_TRUE(st.IsOutOfMemory()) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "clients of node 1")) << st.ToString();
  EXPECT_TRUE(cat_->Allocate(a, 64, 0).status().IsOutOfMemory());
  ASSERT_OK(cat_->Allocate(c, 64, 0).status());  // another node
  clock.Advance(std::chrono::seconds(1));
  ASSERT_OK(cat_->Allocate(b, 64, 0).status());
}

TEST_F(CatalogueTest, MaxSessionsPerNode) {
  CatalogueLimits limits;
  limits.max_sessions_per_node = 2;
  Make(limits);
  const SessionId a = Open(1);
  Open(1);
  auto third = cat_->OpenSession(Client(1));
  ASSERT_FALSE(third.ok());
  EXPECT_TRUE(third.status().IsCapacityError()) << third.status().ToString();
  // Other nodes have their own count.
  Open(2);
  Open(2);
  // A closed session makes room.
  cat_->CloseSession(a);
  ASSERT_OK(cat_->OpenSession(Client(1)).status());
  EXPECT_TRUE(cat_->OpenSession(Client(1)).status().IsCapacityError());
}

// Every pin costs the daemon memory: one session holds at most
// max_pins_per_session of them; a released one makes room again.
TEST_F(CatalogueTest, MaxPinsPerSession) {
  CatalogueLimits limits;
  limits.max_pins_per_session = 3;
  Make(limits);
  const SessionId a = Open(1), r = Open(2);
  const uint64_t x = New(a, 100, /*seal=*/true);
  std::vector<Handle> held;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(Handle h, cat_->Pin(r, {x}));
    held.push_back(h);
  }
  auto fourth = cat_->Pin(r, {x});
  ASSERT_TRUE(fourth.status().IsCapacityError()) << fourth.status().ToString();
  EXPECT_TRUE(Contains(fourth.status().message(), "max_pins_per_session"));
  EXPECT_EQ(cat_->PinsOf(x), 3u);
  // Another session has its own count; a release makes room.
  ASSERT_OK(cat_->Pin(Open(3), {x}).status());
  ASSERT_OK(cat_->Release(r, held[0]));
  ASSERT_OK(cat_->Pin(r, {x}).status());
}

TEST_F(CatalogueTest, SessionIdsAreNeverReused) {
  std::set<SessionId> ids;
  for (int i = 0; i < 100; ++i) {
    const SessionId s = Open();
    ASSERT_NE(s, 0u);
    ASSERT_TRUE(ids.insert(s).second);
    cat_->CloseSession(s);
  }
}

// ---------------------------------------------------------------------------
// Take-over by a restarted daemon

}  // namespace
}  // namespace quiver::control
