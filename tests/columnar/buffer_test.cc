// Tests of Buffer's views of foreign memory: Wrap, WrapAll and slices keep
// what they view alive exactly as long as needed.
#include "quiver/columnar/buffer.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace quiver {
namespace {

TEST(BufferTest, WrapAllViewsEveryRangeAndKeepsTheOwnerWhileAnyLives) {
  auto bytes = std::make_shared<std::string>("abcdefghij");
  const auto* p = reinterpret_cast<const uint8_t*>(bytes->data());
  std::weak_ptr<std::string> watch = bytes;
  std::vector<std::pair<const uint8_t*, int64_t>> views = {
      {p, 3}, {p + 3, 0}, {p + 3, 7}, {p, 10}};
  auto out = Buffer::WrapAll(views, bytes);
  bytes.reset();
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0]->view(), "abc");
  EXPECT_EQ(out[1]->size(), 0);
  EXPECT_EQ(out[1]->data(), p + 3);
  EXPECT_EQ(out[2]->view(), "defghij");
  EXPECT_EQ(out[3]->view(), "abcdefghij");
  for (const auto& b : out) {
    EXPECT_FALSE(b->is_mutable());
    EXPECT_EQ(b->mutable_data(), nullptr);
    EXPECT_EQ(b->owner().get(), watch.lock().get());
  }
  // Any one of them keeps the owner (and the others' views) alive.
  std::shared_ptr<Buffer> last = out[2];
  out.clear();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(last->view(), "defghij");
  auto slice = Buffer::Slice(last, 1, 2);
  last.reset();
  EXPECT_EQ(slice->view(), "ef");
  EXPECT_FALSE(watch.expired());
  slice.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(BufferTest, WrapAllOfNothingIsEmpty) {
  EXPECT_TRUE(Buffer::WrapAll({}, nullptr).empty());
}

}  // namespace
}  // namespace quiver
