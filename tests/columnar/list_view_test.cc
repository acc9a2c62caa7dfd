// list_view and large_list_view: types, Make from offsets and sizes,
// accessors, Validate (buffer sizes) and ValidateFull (every view inside the
// child), equality by viewed values, slices, printing, concatenation and
// the C Data and IPC forms (AllTypes covers the rest of the round trips).
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "array_test_helpers.h"
#include "common/status_macros.h"
#include "quiver/columnar/array.h"
#include "quiver/columnar/c_data.h"
#include "quiver/columnar/concatenate.h"
#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc.h"
#include "quiver/columnar/pretty_print.h"

namespace quiver {
namespace {

using test::BitmapOf;
using test::BufferOf;
using test::Int32s;
using test::IsInvalidWith;

// Over [1, 2, 3, 4, 5, null]: [[4, 5], [1, 2], null, [2, 3, 4], [null]]
// (out of order and overlapping views).
template <typename ArrayT>
std::shared_ptr<ArrayT> Sample() {
  using O = typename ArrayT::offset_type;
  return ArrayT::Make(std::vector<O>{3, 0, 0, 1, 5}, std::vector<O>{2, 2, 0, 3, 1},
                      Int32s({1, 2, 3, 4, 5, std::nullopt}),
                      {true, true, false, true, true})
      .ValueOrDie();
}

// The same values as a list<int32>.
ArrayPtr SampleAsList() {
  auto values = Int32s({4, 5, 1, 2, 2, 3, 4, std::nullopt});
  return MakeArray(ArrayData::Make(
      list(int32()), 5,
      {BitmapOf({true, true, false, true, true}), BufferOf<int32_t>({0, 2, 4, 4, 7, 8})},
      {values->data()}, 1));
}

TEST(ListViews, Types) {
  EXPECT_EQ(list_view(int32())->ToString(), "list_view<item: int32>");
  EXPECT_EQ(large_list_view(utf8())->ToString(), "large_list_view<item: string>");
  EXPECT_TRUE(list_view(int32())->Equals(*list_view(int32())));
  EXPECT_FALSE(list_view(int32())->Equals(*large_list_view(int32())));
  EXPECT_FALSE(list_view(int32())->Equals(*list(int32())));
  EXPECT_FALSE(list_view(int32())->Equals(*list_view(int64())));
  EXPECT_EQ(list_view(int32())->value_type()->id(), TypeId::kInt32);
  EXPECT_TRUE(IsListView(TypeId::kLargeListView));
  EXPECT_FALSE(IsListView(TypeId::kList));
  EXPECT_TRUE(IsNested(TypeId::kListView));
  EXPECT_FALSE(IsListLike(TypeId::kListView));  // no length + 1 offsets
  EXPECT_EQ(LayoutBufferCount(TypeId::kListView), 3);
  EXPECT_EQ(LayoutBufferCount(TypeId::kLargeListView), 3);
}

TEST(ListViews, MakeAndAccessors) {
  auto lv = Sample<ListViewArray>();
  ASSERT_OK(lv->ValidateFull());
  EXPECT_EQ(lv->length(), 5);
  EXPECT_EQ(lv->null_count(), 1);
  EXPECT_EQ(lv->value_offset(0), 3);
  EXPECT_EQ(lv->value_length(3), 3);
  EXPECT_TRUE(lv->IsNull(2));
  EXPECT_TRUE(lv->value_slice(3)->Equals(*Int32s({2, 3, 4})));
  auto large = Sample<LargeListViewArray>();
  EXPECT_EQ(large->type()->id(), TypeId::kLargeListView);
  EXPECT_TRUE(large->value_slice(0)->Equals(*Int32s({4, 5})));
  // Make checks what it is given.
  EXPECT_TRUE(IsInvalidWith(ListViewArray::Make({0, 1}, {1}, Int32s({1, 2})).status(),
                            "2 offsets but 1 sizes"));
  EXPECT_TRUE(
      IsInvalidWith(ListViewArray::Make({0}, {1}, Int32s({1}), {true, false}).status(),
                    "1 offsets but 2 validity flags"));
  EXPECT_TRUE(IsInvalidWith(ListViewArray::Make({1}, {1}, Int32s({1})).status(),
                            "ends beyond the child array"));
  EXPECT_FALSE(ListViewArray::Make({0}, {1}, Int32s({1}), {}, list(int32())).ok());
  // A null slot's view is not read.
  ASSERT_OK(ListViewArray::Make({7}, {-2}, Int32s({1}), {false}).status());
}

TEST(ListViews, ValidateStructure) {
  auto child = Int32s({1, 2, 3});
  auto make = [&](std::vector<std::shared_ptr<Buffer>> buffers, int64_t length = 2) {
    return MakeArray(ArrayData::Make(list_view(int32()), length, std::move(buffers),
                                     {child->data()}, 0));
  };
  auto offs = BufferOf<int32_t>({0, 1});
  auto sizes = BufferOf<int32_t>({2, 2});
  ASSERT_OK(make({nullptr, offs, sizes})->ValidateFull());
  EXPECT_TRUE(IsInvalidWith(make({nullptr, offs})->Validate(), "expected 3 buffers"));
  EXPECT_TRUE(IsInvalidWith(make({nullptr, offs, sizes}, 3)->Validate(),
                            "offsets buffer has 8 bytes but 12"));
  EXPECT_TRUE(IsInvalidWith(make({nullptr, offs, BufferOf<int32_t>({1})})->Validate(),
                            "sizes buffer has 4 bytes but 8"));
  EXPECT_TRUE(IsInvalidWith(make({nullptr, nullptr, sizes})->Validate(),
                            "offsets buffer is missing"));
  EXPECT_TRUE(IsInvalidWith(
      MakeArray(ArrayData::Make(list_view(int32()), 2, {nullptr, offs, sizes}, {}, 0))
          ->Validate(),
      "expected 1 child arrays"));
  EXPECT_TRUE(IsInvalidWith(
      MakeArray(ArrayData::Make(list_view(int32()), 2, {nullptr, offs, sizes},
                                {Int32s({1})->data()->Slice(0, 1)}, 0))
          ->ValidateFull(),
      "view at position 0 (offset 0, size 2) ends beyond the child array (1 values)"));
  auto large = MakeArray(ArrayData::Make(large_list_view(int32()), 2,
                                         {nullptr, BufferOf<int64_t>({0, 1}), sizes},
                                         {child->data()}, 0));
  EXPECT_TRUE(IsInvalidWith(large->Validate(), "sizes buffer has 8 bytes but 16"));
}

TEST(ListViews, ValidateFullContent) {
  auto child = Int32s({1, 2, 3});
  auto make = [&](std::vector<int32_t> offsets, std::vector<int32_t> sizes) {
    return MakeArray(
        ArrayData::Make(list_view(int32()), 3,
                        {nullptr, BufferOf<int32_t>(offsets), BufferOf<int32_t>(sizes)},
                        {child->data()}, 0));
  };
  auto negative_offset = make({0, -1, 0}, {1, 1, 1});
  ASSERT_OK(negative_offset->Validate());  // O(1): views are not read
  EXPECT_TRUE(IsInvalidWith(negative_offset->ValidateFull(),
                            "offset -1 at position 1 is negative"));
  EXPECT_TRUE(IsInvalidWith(make({0, 0, 0}, {1, 1, -3})->ValidateFull(),
                            "size -3 at position 2 is negative"));
  EXPECT_TRUE(IsInvalidWith(make({0, 3, 0}, {1, 1, 1})->ValidateFull(),
                            "view at position 1 (offset 3, size 1) ends beyond"));
  // An overflowing end is caught, not wrapped.
  EXPECT_TRUE(IsInvalidWith(make({2, 0, 0}, {2147483647, 0, 0})->ValidateFull(),
                            "view at position 0"));
  // Empty views at the child's end are fine; so are overlapping ones.
  ASSERT_OK(make({3, 0, 0}, {0, 3, 3})->ValidateFull());
  // Only the slice is checked.
  auto bad = make({0, 0, 9}, {1, 1, 1});
  ASSERT_OK(bad->Slice(0, 2)->ValidateFull());
  EXPECT_FALSE(bad->Slice(1, 2)->ValidateFull().ok());
  // Printing does not trust what Validate did not check.
  EXPECT_NE(bad->ToString().find("<invalid offsets>"), std::string::npos)
      << bad->ToString();
  // int64 views whose end would overflow.
  auto huge = MakeArray(ArrayData::Make(
      large_list_view(int32()), 1,
      {nullptr, BufferOf<int64_t>({std::numeric_limits<int64_t>::max() - 1}),
       BufferOf<int64_t>({5})},
      {child->data()}, 0));
  EXPECT_TRUE(IsInvalidWith(huge->ValidateFull(), "view at position 0"));
  EXPECT_NE(huge->ToString().find("<invalid offsets>"), std::string::npos)
      << huge->ToString();
}

TEST(ListViews, EqualityAndSlices) {
  auto lv = Sample<ListViewArray>();
  EXPECT_TRUE(lv->Equals(*Sample<ListViewArray>()));
  EXPECT_TRUE(lv->Slice(1, 3)->Equals(*Sample<ListViewArray>()->Slice(1, 3)));
  EXPECT_FALSE(lv->Slice(0, 2)->Equals(*lv->Slice(1, 2)));
  // Equal by the values viewed, whatever the offsets.
  ASSERT_OK_AND_ASSIGN(auto other,
                       ListViewArray::Make({0, 2}, {2, 2}, Int32s({4, 5, 1, 2})));
  EXPECT_TRUE(other->Equals(*lv->Slice(0, 2)));
  ASSERT_OK_AND_ASSIGN(auto differs,
                       ListViewArray::Make({0, 1}, {2, 2}, Int32s({4, 5, 1, 2})));
  EXPECT_FALSE(differs->Equals(*lv->Slice(0, 2)));
  ASSERT_OK_AND_ASSIGN(auto shorter,
                       ListViewArray::Make({0, 2}, {2, 1}, Int32s({4, 5, 1})));
  EXPECT_FALSE(shorter->Equals(*lv->Slice(0, 2)));
  EXPECT_TRUE(lv->RangeEquals(3, 5, 0, *Sample<ListViewArray>()->Slice(3)));
  auto slice = lv->Slice(3, 2);
  ASSERT_OK(slice->ValidateFull());
  const auto& s = static_cast<const ListViewArray&>(*slice);
  EXPECT_EQ(s.value_offset(0), 1);
  EXPECT_EQ(s.value_length(1), 1);
  EXPECT_EQ(FormatValue(s, 1), FormatValue(*SampleAsList(), 4));
}

TEST(ListViews, PrettyPrintLikeLists) {
  auto list_text = SampleAsList()->ToString();
  EXPECT_NE(list_text.find("4,"), std::string::npos) << list_text;
  EXPECT_EQ(Sample<ListViewArray>()->ToString(), list_text);
  EXPECT_EQ(Sample<LargeListViewArray>()->ToString(), list_text);
  EXPECT_EQ(Sample<ListViewArray>()->Slice(2)->ToString(),
            SampleAsList()->Slice(2)->ToString());
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(FormatValue(*Sample<ListViewArray>(), i), FormatValue(*SampleAsList(), i));
  }
}

TEST(ListViews, Concatenate) {
  auto lv = Sample<LargeListViewArray>();
  auto first = lv->Slice(1, 3);
  auto second = lv->Slice(2);
  ASSERT_OK_AND_ASSIGN(auto joined,
                       Concatenate({first->data().get(), second->data().get()}));
  auto result = MakeArray(joined);
  ASSERT_OK(result->ValidateFull());
  ASSERT_EQ(result->length(), 6);
  EXPECT_EQ(result->null_count(), 2);
  EXPECT_TRUE(result->RangeEquals(0, 3, 0, *first));
  EXPECT_TRUE(result->RangeEquals(3, 6, 0, *second));
  // The second input's offsets are moved by the first's child length.
  EXPECT_EQ(static_cast<const LargeListViewArray&>(*result).value_offset(4), 6 + 1);
  ASSERT_OK_AND_ASSIGN(auto empty, MakeEmptyArray(list_view(utf8())));
  ASSERT_OK(empty->ValidateFull());
  ASSERT_OK_AND_ASSIGN(auto nulls, MakeArrayOfNull(large_list_view(int8()), 3));
  ASSERT_OK(nulls->ValidateFull());
  EXPECT_EQ(nulls->null_count(), 3);
}

// C Data: "+vl" / "+vL", 3 buffers (validity, offsets, sizes).
TEST(ListViews, CDataRoundTrip) {
  for (const ArrayPtr& whole :
       {ArrayPtr(Sample<ListViewArray>()), ArrayPtr(Sample<LargeListViewArray>())}) {
    SCOPED_TRACE(whole->type()->ToString());
    auto array = whole->Slice(1, 3);
    ArrowArray c_array;
    ArrowSchema c_schema;
    ASSERT_OK(ExportArray(*array, &c_array, &c_schema));
    EXPECT_EQ(std::string(c_schema.format),
              whole->type_id() == TypeId::kListView ? "+vl" : "+vL");
    EXPECT_EQ(c_array.n_buffers, 3);
    EXPECT_EQ(c_array.n_children, 1);
    EXPECT_EQ(c_array.offset, 1);
    EXPECT_EQ(c_array.buffers[2], array->data()->buffers[2]->data());
    ASSERT_OK_AND_ASSIGN(auto back, ImportArray(&c_array, &c_schema));
    ASSERT_OK(back->ValidateFull());
    EXPECT_TRUE(back->type()->Equals(*whole->type()));
    EXPECT_TRUE(back->Equals(*array));
  }
}

// IPC: list view columns whole and sliced, stream and file.
TEST(ListViews, IpcRoundTripWithSlices) {
  ArrayPtr lv = Sample<ListViewArray>();
  ArrayPtr large = Sample<LargeListViewArray>();
  auto batch = RecordBatch::FromArrays({"v", "lv"}, {lv, large}).ValueOrDie();
  test::ExpectIpcRoundTrips({batch, batch->Slice(1, 3), batch->Slice(4)});
}

}  // namespace
}  // namespace quiver
