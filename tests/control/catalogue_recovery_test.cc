// Catalogue (control/catalogue/catalogue.h) across a daemon's restart: a
// "restarted daemon" is a second Catalogue over the same allocator, and the
// allocator's tags are all that survives from the first. What was pinned
// may be re-claimed, nothing recovered is freed before the recovery ends,
// and then exactly what nobody claimed is.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/status_macros.h"
#include "control/catalogue/object_tag.h"
#include "control/catalogue_test_util.h"

namespace quiver::control {
namespace {

using catalogue_testing::CatalogueTest;

TEST_F(CatalogueTest, ReclaimOutsideRecoveryIsRefused) {
  const SessionId a = Open(), r = Open(2);
  const uint64_t x = New(a, 100, /*seal=*/true);
  ASSERT_OK(cat_->Pin(r, {x}).status());
  EXPECT_FALSE(cat_->recovering());
  Status st = cat_->Reclaim(r, {{x, 8}}).status();
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_EQ(cat_->PinsOf(x), 1u);
}

TEST_F(CatalogueTest, RestartedDaemonRecoversReclaimsAndFreesTheUnclaimed) {
  const SessionId a = Open(1), r = Open(2);
  const uint64_t pinned = New(a, 100, /*seal=*/true);
  const uint64_t published = New(a, 200, /*seal=*/true);  // its record claims it
  const uint64_t sealed = New(a, 300, /*seal=*/true);     // nobody's after the restart
  const uint64_t unsealed = New(a, 400);
  const uint64_t released = New(a, 100, /*seal=*/true);  // pinned, then released
  ASSERT_OK(cat_->Pin(r, {pinned}).status());
  ASSERT_OK_AND_ASSIGN(Handle h, cat_->Pin(r, {released}));
  ASSERT_OK(cat_->Release(r, h));
  ASSERT_OK(cat_->AddPublication({{published, 8}}).status());
  ASSERT_OK_AND_ASSIGN(uint64_t rec, cat_->WriteRecord(1, "the record"));
  const uint64_t live = region_.live();
  const uint64_t used = region_.used();

  // The daemon dies: its sessions, pins and publications are gone; the
  // region (and its tags) stays. A new daemon takes it over.
  cat_.reset();
  Make(CatalogueLimits{});
  ASSERT_OK_AND_ASSIGN(std::vector<FoundRecord> records, cat_->Recover());
  EXPECT_TRUE(cat_->recovering());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].address, rec);
  EXPECT_EQ(records[0].bytes, "the record");
  CatalogueStats st = cat_->Stats();
  EXPECT_EQ(st.objects, 5u);
  EXPECT_EQ(st.records, 1u);
  EXPECT_EQ(st.sealed, 4u);
  EXPECT_TRUE(st.recovering);
  EXPECT_EQ(region_.live(), live);  // nothing freed yet

  const SessionId r2 = Open(2), stranger = Open(3);
  // What was pinned may be re-claimed, by a range anywhere inside it.
  ASSERT_OK_AND_ASSIGN(Handle again, cat_->Reclaim(r2, {{pinned + 8, 16}}));
  EXPECT_EQ(cat_->PinsOf(pinned), 1u);
  // What was neither pinned nor published may not.
  for (uint64_t x : {sealed, unsealed, released}) {
    Status s = cat_->Reclaim(stranger, {{x, 8}}).status();
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s.ToString();
    EXPECT_EQ(cat_->PinsOf(x), 0u);
  }
  // One refused range refuses the whole list.
  EXPECT_FALSE(cat_->Reclaim(stranger, {{pinned, 8}, {sealed, 8}}).ok());
  EXPECT_EQ(cat_->PinsOf(pinned), 1u);
  // Records are never re-claimed; ranges outside objects are not found.
  EXPECT_TRUE(cat_->Reclaim(stranger, {{rec, 8}}).status().IsNotFound());
  // The directory re-publishes what the record names.
  ASSERT_OK(cat_->AddPublication({{published, 8}}).status());
  // Nobody may free recovered objects: their creator's session is gone.
  EXPECT_FALSE(cat_->Free(stranger, {sealed}).ok());
  EXPECT_EQ(region_.live(), live);

  // The grace period ends: exactly the unclaimed objects go.
  const uint64_t freed = cat_->EndRecovery();
  EXPECT_FALSE(cat_->recovering());
  EXPECT_EQ(freed, 320u + 448 + 128);
  EXPECT_EQ(region_.used(), used - freed);
  EXPECT_EQ(region_.live(), live - 3);
  EXPECT_FALSE(region_.IsLive(sealed));
  EXPECT_FALSE(region_.IsLive(unsealed));
  EXPECT_FALSE(region_.IsLive(released));
  EXPECT_TRUE(region_.IsLive(pinned));
  EXPECT_TRUE(region_.IsLive(published));
  EXPECT_TRUE(region_.IsLive(rec));
  EXPECT_EQ(cat_->Stats().recovered, 1u);  // the record, kept for the directory

  // Recovery is over: no more re-claims.
  Status late = cat_->Reclaim(r2, {{pinned, 8}}).status();
  EXPECT_EQ(late.code(), StatusCode::kFailedPrecondition) << late.ToString();
  // Claimed objects now live by their references alone.
  ASSERT_OK(cat_->Release(r2, again));
  EXPECT_FALSE(region_.IsLive(pinned));
  cat_->DropPublication({published});
  EXPECT_FALSE(region_.IsLive(published));
  cat_->FreeRecord(rec);
  EXPECT_EQ(region_.live(), live - 6);
}

TEST_F(CatalogueTest, RecoveredPinCountComesFromTheTag) {
  const SessionId a = Open(1), r = Open(2);
  const uint64_t x = New(a, 100, /*seal=*/true);
  ASSERT_OK(cat_->Pin(r, {x}).status());
  ASSERT_OK(cat_->Pin(r, {x}).status());
  EXPECT_EQ(tag::Pins(region_.tag(x)), 2u);
  cat_.reset();
  Make(CatalogueLimits{});
  ASSERT_OK(cat_->Recover().status());
  // Pins of the previous daemon are not this one's: none counted, and
  // several readers may each re-claim their own.
  EXPECT_EQ(cat_->PinsOf(x), 0u);
  const SessionId r1 = Open(2), r2 = Open(3);
  ASSERT_OK_AND_ASSIGN(Handle h1, cat_->Reclaim(r1, {{x, 8}}));
  ASSERT_OK_AND_ASSIGN(Handle h2, cat_->Reclaim(r2, {{x, 8}}));
  EXPECT_EQ(cat_->PinsOf(x), 2u);
  EXPECT_EQ(cat_->EndRecovery(), 0u);
  ASSERT_OK(cat_->Release(r1, h1));
  EXPECT_TRUE(region_.IsLive(x));
  ASSERT_OK(cat_->Release(r2, h2));
  EXPECT_FALSE(region_.IsLive(x));
}

// Nothing recovered is freed before the recovery ends, whatever happens to
// it meanwhile: its record re-publishes it and then it is unpublished, a
// reader re-pins and releases it. A reader that pinned it before the
// restart may still come for it (its lease has not provably ended).
TEST_F(CatalogueTest, NothingRecoveredIsFreedBeforeTheRecoveryEnds) {
  const SessionId a = Open(1), r = Open(2);
  const uint64_t held = New(a, 100, /*seal=*/true);
  const uint64_t other = New(a, 100, /*seal=*/true);
  ASSERT_OK(cat_->Pin(r, {held}).status());
  ASSERT_OK(cat_->AddPublication({{held, 8}}).status());
  ASSERT_OK(cat_->AddPublication({{other, 8}}).status());
  cat_.reset();
  Make(CatalogueLimits{});
  ASSERT_OK(cat_->Recover().status());
  // The record brings the publications back; the home then says the table
  // is gone (the replica drops them); a stranger pins and releases.
  ASSERT_OK_AND_ASSIGN(auto objects, cat_->AddPublication({{held, 8}}));
  ASSERT_OK_AND_ASSIGN(auto others, cat_->AddPublication({{other, 8}}));
  cat_->DropPublication(objects);
  cat_->DropPublication(others);
  const SessionId s = Open(3);
  ASSERT_OK_AND_ASSIGN(Handle h, cat_->Pin(s, {other}));
  ASSERT_OK(cat_->Release(s, h));
  EXPECT_TRUE(region_.IsLive(held));
  EXPECT_TRUE(region_.IsLive(other));
  // The reader that pinned it comes back within the recovery.
  const SessionId r2 = Open(2);
  ASSERT_OK(cat_->Reclaim(r2, {{held, 8}}).status());
  EXPECT_EQ(cat_->EndRecovery(), 128u);  // `other`: nobody holds it now
  EXPECT_TRUE(region_.IsLive(held));
  EXPECT_FALSE(region_.IsLive(other));
  cat_->CloseSession(r2);
  EXPECT_FALSE(region_.IsLive(held));
}

// A session whose creator reference went with a restart cannot seal what it
// allocated before: the object is nobody's now.
TEST_F(CatalogueTest, ARecoveredObjectIsNobodysToSeal) {
  const SessionId a = Open(1);
  const uint64_t x = New(a, 100);
  const uint64_t y = New(a, 100, /*seal=*/true);
  cat_.reset();
  Make(CatalogueLimits{});
  ASSERT_OK(cat_->Recover().status());
  const SessionId again = Open(1);
  for (uint64_t o : {x, y}) {
    Status st = cat_->Seal(again, {{o, 8}});
    EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
    EXPECT_NE(st.message().find("restarted"), std::string::npos) << st.ToString();
  }
}

TEST_F(CatalogueTest, NothingIsClaimedWhenNothingSurvives) {
  const SessionId a = Open(1);
  New(a, 100, /*seal=*/true);
  New(a, 100);
  cat_.reset();
  Make(CatalogueLimits{});
  ASSERT_OK_AND_ASSIGN(auto records, cat_->Recover());
  EXPECT_TRUE(records.empty());
  EXPECT_EQ(cat_->EndRecovery(), 256u);
  EXPECT_EQ(region_.live(), 0u);
  EXPECT_EQ(region_.used(), 0u);
}

}  // namespace
}  // namespace quiver::control
