// The fixture of the Catalogue tests (catalogue_test.cc,
// catalogue_recovery_test.cc): a Catalogue over a real RegionAllocator on
// anonymous memory, whose own statistics are the judge of what was freed.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/status_macros.h"
#include "common/strings.h"
#include "common/test_region.h"
#include "control/catalogue/catalogue.h"

namespace quiver::control::catalogue_testing {

using testing_region::Client;
using testing_region::kGranule;
using testing_region::Region;
constexpr uint32_t kSelf = 0;  // the node whose region this is

using ::quiver::testing::Contains;

class CatalogueTest : public ::testing::Test {
 protected:
  void SetUp() override { Make(CatalogueLimits{}); }
  void Make(const CatalogueLimits& limits) {
    cat_ = std::make_unique<Catalogue>(region_.allocator(), kSelf, kGranule, limits);
  }
  SessionId Open(uint32_t node = 1, int32_t pid = 100) {
    auto s = cat_->OpenSession(Client(node, pid));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : 0;
  }
  // An allocation of `size` bytes for `s`, optionally sealed.
  uint64_t New(SessionId s, uint64_t size = 100, bool seal = false) {
    auto a = cat_->Allocate(s, size, 0);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    if (!a.ok()) return 0;
    if (seal) {
      Status st = cat_->Seal(s, {{a->address, size}});
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
    return a->address;
  }

  Region region_;
  std::unique_ptr<Catalogue> cat_;
};

}  // namespace quiver::control::catalogue_testing
