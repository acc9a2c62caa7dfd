// Tests of Array::Equals / RangeEquals: logical equality for every type,
// independent of offsets, slicing, buffer identity and null-slot contents;
// floating-point rules; nested and dictionary arrays; large arrays; and the
// bitmap helpers the comparison is built on.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "columnar/array_test_helpers.h"
#include "columnar/bitmap_runs.h"
#include "columnar/half_float.h"

namespace quiver {
namespace {

using test::ArrayOf;
using test::BitmapOf;
using test::BufferOf;
using test::ExactBuffer;
using test::OptInts;

template <typename Tag>
void CheckFixedWidthEquality(TypePtr type = nullptr) {
  using T = typename Tag::c_type;
  SCOPED_TRACE(type ? type->ToString() : "default type");
  auto a = ArrayOf<Tag>({T(1), std::nullopt, T(3), T(4)}, type);
  auto same = ArrayOf<Tag>({T(1), std::nullopt, T(3), T(4)}, type);
  auto other_value = ArrayOf<Tag>({T(1), std::nullopt, T(3), T(5)}, type);
  auto other_null = ArrayOf<Tag>({T(1), T(2), T(3), T(4)}, type);
  EXPECT_TRUE(a->Equals(*same));
  EXPECT_TRUE(same->Equals(*a));
  EXPECT_FALSE(a->Equals(*other_value));
  EXPECT_FALSE(a->Equals(*other_null));
  EXPECT_FALSE(other_null->Equals(*a));
  EXPECT_TRUE(a->RangeEquals(0, 3, 0, *other_value));
  EXPECT_TRUE(a->Slice(2)->Equals(*other_null->Slice(2, 1)) == false);
  EXPECT_TRUE(a->Slice(2, 1)->Equals(*other_null->Slice(2, 1)));
}

TEST(CompareTest, FixedWidthTypes) {
  CheckFixedWidthEquality<Int8Type>();
  CheckFixedWidthEquality<Int16Type>();
  CheckFixedWidthEquality<Int32Type>();
  CheckFixedWidthEquality<Int64Type>();
  CheckFixedWidthEquality<UInt8Type>();
  CheckFixedWidthEquality<UInt16Type>();
  CheckFixedWidthEquality<UInt32Type>();
  CheckFixedWidthEquality<UInt64Type>();
  CheckFixedWidthEquality<FloatType>();
  CheckFixedWidthEquality<DoubleType>();
  CheckFixedWidthEquality<HalfFloatType>();
  CheckFixedWidthEquality<Date32Type>();
  CheckFixedWidthEquality<Date64Type>();
  CheckFixedWidthEquality<Time32Type>(time32(TimeUnit::kMilli));
  CheckFixedWidthEquality<Time64Type>(time64(TimeUnit::kMicro));
  CheckFixedWidthEquality<TimestampType>(timestamp(TimeUnit::kNano, "UTC"));
  CheckFixedWidthEquality<DurationType>(duration(TimeUnit::kSecond));
}

TEST(CompareTest, TypesAndLengthsMustMatch) {
  EXPECT_FALSE(test::Int32s({1, 2})->Equals(*test::Int64s({1, 2})));
  EXPECT_FALSE(test::Int64s({1, 2})->Equals(*test::Int64s({1, 2, 3})));
  EXPECT_FALSE(ArrayOf<TimestampType>({1}, timestamp(TimeUnit::kMilli))
                   ->Equals(*ArrayOf<TimestampType>({1}, timestamp(TimeUnit::kMicro))));
  EXPECT_FALSE(
      ArrayOf<TimestampType>({1}, timestamp(TimeUnit::kMilli))
          ->Equals(*ArrayOf<TimestampType>({1}, timestamp(TimeUnit::kMilli, "UTC"))));
  EXPECT_FALSE(
      test::ListOfInt64({OptInts{1}})->Equals(*test::ListOfInt64({OptInts{1}}, true)));
  EXPECT_FALSE(test::Int64s({1})->Equals(ArrayPtr()));
  EXPECT_TRUE(test::Int64s({})->Equals(*test::Int64s({})));
  EXPECT_TRUE(NullArray(3).Equals(NullArray(3)));
  EXPECT_FALSE(NullArray(3).Equals(NullArray(4)));
}

TEST(CompareTest, RangeEqualsChecksItsBounds) {
  auto a = test::Int64s({1, 2, 3, 4});
  auto b = test::Int64s({9, 2, 3});
  EXPECT_TRUE(a->RangeEquals(1, 3, 1, *b));
  EXPECT_FALSE(a->RangeEquals(1, 4, 1, *b));  // b has no index 3
  EXPECT_FALSE(a->RangeEquals(0, 3, 0, *b));
  EXPECT_FALSE(a->RangeEquals(-1, 2, 0, *b));  // negative start
  EXPECT_FALSE(a->RangeEquals(3, 2, 0, *b));   // end before start
  EXPECT_FALSE(a->RangeEquals(0, 5, 0, *a));   // end past the array
  EXPECT_FALSE(a->RangeEquals(1, 2, -1, *b));
  EXPECT_TRUE(a->RangeEquals(2, 2, 3, *b));  // empty ranges are equal
  EXPECT_FALSE(a->RangeEquals(2, 2, 4, *b));
  EXPECT_FALSE(a->RangeEquals(0, 1, 0, *test::Int32s({1})));
}

TEST(CompareTest, NullSlotContentsAndBuffersDoNotMatter) {
  // Same logical array [1, null, 3] with different bytes behind the null, one
  // with an offset, one whose bitmap was never needed.
  auto a = MakeArray(ArrayData::Make(
      int32(), 3,
      {BitmapOf({true, false, true}), BufferOf(std::vector<int32_t>{1, 111, 3})}, 1));
  auto b = MakeArray(ArrayData::Make(
      int32(), 3,
      {BitmapOf({false, true, false, true}), BufferOf(std::vector<int32_t>{7, 1, -5, 3})},
      1, 1));
  EXPECT_TRUE(a->Equals(*b));
  EXPECT_TRUE(b->Equals(*a));
  // All-valid bitmap versus no bitmap.
  auto with_bitmap = MakeArray(ArrayData::Make(
      int32(), 2, {BitmapOf({true, true}), BufferOf(std::vector<int32_t>{4, 5})},
      kUnknownNullCount));
  EXPECT_TRUE(with_bitmap->Equals(*test::Int32s({4, 5})));
  EXPECT_TRUE(test::Int32s({4, 5})->Equals(*with_bitmap));
}

TEST(CompareTest, FloatingPointRules) {
  const double nan = std::nan("");
  auto a = ArrayOf<DoubleType>({1.0, nan});
  EXPECT_FALSE(a->Equals(*ArrayOf<DoubleType>({1.0, nan})));
  EXPECT_FALSE(a->Equals(*a));  // NaN != NaN, even for the same array
  EXPECT_TRUE(a->RangeEquals(0, 1, 0, *a));
  EXPECT_TRUE(ArrayOf<DoubleType>({0.0})->Equals(*ArrayOf<DoubleType>({-0.0})));
  EXPECT_TRUE(
      ArrayOf<FloatType>({-0.0f, 2.5f})->Equals(*ArrayOf<FloatType>({0.0f, 2.5f})));
  EXPECT_FALSE(ArrayOf<FloatType>({std::nanf("")})->Equals(*ArrayOf<FloatType>({1.0f})));
  // A NaN behind a null slot is not a value.
  auto masked = MakeArray(ArrayData::Make(
      float64(), 2, {BitmapOf({true, false}), BufferOf(std::vector<double>{1.0, nan})},
      1));
  EXPECT_TRUE(masked->Equals(*ArrayOf<DoubleType>({1.0, std::nullopt})));
  // float16: NaN (0x7E00) never equal, +0 (0x0000) equals -0 (0x8000).
  auto h = ArrayOf<HalfFloatType>({0x7E00});
  EXPECT_FALSE(h->Equals(*ArrayOf<HalfFloatType>({0x7E00})));
  EXPECT_TRUE(ArrayOf<HalfFloatType>({0x0000, 0x3C00})
                  ->Equals(*ArrayOf<HalfFloatType>({0x8000, 0x3C00})));
  EXPECT_FALSE(
      ArrayOf<HalfFloatType>({0x3C00})->Equals(*ArrayOf<HalfFloatType>({0x3C01})));
  // Long runs exercise the blockwise loop; the difference sits past block 1.
  std::vector<std::optional<float>> v(1000, 1.5f);
  auto long_a = ArrayOf<FloatType>(v);
  v[700] = -1.5f;
  EXPECT_FALSE(long_a->Equals(*ArrayOf<FloatType>(v)));
  v[700] = 1.5f;
  EXPECT_TRUE(long_a->Equals(*ArrayOf<FloatType>(v)));
}

TEST(CompareTest, HalfToFloat) {
  EXPECT_EQ(internal::HalfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(internal::HalfToFloat(0xC000), -2.0f);
  EXPECT_EQ(internal::HalfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(internal::HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(internal::HalfToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(internal::HalfToFloat(0x0400), std::ldexp(1.0f, -14));
  EXPECT_TRUE(std::isinf(internal::HalfToFloat(0xFC00)));
  EXPECT_TRUE(std::isnan(internal::HalfToFloat(0x7C01)));
  EXPECT_TRUE(std::signbit(internal::HalfToFloat(0x8000)));
  // Every finite half converts exactly: doubling the float doubles the half.
  for (uint32_t h = 0x0400; h < 0x7800; ++h) {
    ASSERT_EQ(internal::HalfToFloat(static_cast<uint16_t>(h)) * 2,
              internal::HalfToFloat(static_cast<uint16_t>(h + 0x0400)));
  }
}

TEST(CompareTest, BooleansAtAnyBitOffset) {
  std::mt19937 rng(7);
  std::vector<std::optional<bool>> values;
  for (int i = 0; i < 300; ++i) {
    const int r = static_cast<int>(rng() % 5);
    values.push_back(r == 0 ? std::nullopt : std::optional<bool>(r % 2 == 0));
  }
  auto a = test::Bools(values);
  for (int off : {0, 1, 3, 7, 8, 9, 63, 64, 65, 130}) {
    for (int len : {0, 1, 5, 64, 100, 150}) {
      std::vector<std::optional<bool>> part(values.begin() + off,
                                            values.begin() + off + len);
      auto b = test::Bools(part);
      ASSERT_TRUE(a->Slice(off, len)->Equals(*b)) << off << " " << len;
      ASSERT_TRUE(a->RangeEquals(off, off + len, 0, *b));
      if (len > 0) {
        part[len - 1] = part[len - 1] ? std::optional<bool>(!*part[len - 1])
                                      : std::optional<bool>(true);
        ASSERT_FALSE(a->Slice(off, len)->Equals(*test::Bools(part))) << off << " " << len;
      }
    }
  }
}

TEST(CompareTest, FixedSizeBinaryAndDecimal) {
  auto fsb = [](std::vector<std::optional<std::string>> values) {
    FixedSizeBinaryBuilder b(fixed_size_binary(2));
    for (const auto& v : values) EXPECT_TRUE((v ? b.Append(*v) : b.AppendNull()).ok());
    return b.Finish().ValueOrDie();
  };
  EXPECT_TRUE(fsb({"ab", std::nullopt, "cd"})->Equals(*fsb({"ab", std::nullopt, "cd"})));
  EXPECT_FALSE(fsb({"ab", "cd"})->Equals(*fsb({"ab", "ce"})));
  EXPECT_TRUE(fsb({"zz", "ab"})->Slice(1)->Equals(*fsb({"ab"})));
  auto dec = [](std::vector<int64_t> values) {
    Decimal128Builder b(decimal128(10, 2));
    for (int64_t v : values) EXPECT_TRUE(b.Append(Decimal128(v)).ok());
    return b.Finish().ValueOrDie();
  };
  EXPECT_TRUE(dec({1, -2, 3})->Equals(*dec({1, -2, 3})));
  EXPECT_FALSE(dec({1, -2, 3})->Equals(*dec({1, 2, 3})));
  EXPECT_TRUE(dec({1, -2, 3})->Slice(1)->Equals(*dec({-2, 3})));
  Decimal128Builder other_scale(decimal128(10, 3));
  ASSERT_TRUE(other_scale.Append(Decimal128(1)).ok());
  EXPECT_FALSE(dec({1})->Equals(*other_scale.Finish().ValueOrDie()));
}

TEST(CompareTest, StringsIgnoreOffsetBases) {
  auto built = test::Strings({"a", "bc", std::nullopt, ""});
  // Same values at other positions of another data buffer, with garbage
  // behind the null slot.
  auto manual = MakeArray(ArrayData::Make(
      utf8(), 4,
      {BitmapOf({true, true, false, true}),
       BufferOf(std::vector<int32_t>{5, 6, 8, 12, 12}), ExactBuffer("xxxxxabcJUNK")},
      1));
  ASSERT_TRUE(manual->ValidateFull().ok());
  EXPECT_TRUE(built->Equals(*manual));
  EXPECT_TRUE(manual->Equals(*built));
  // Same bytes in total, split differently.
  EXPECT_FALSE(test::Strings({"ab", "c"})->Equals(*test::Strings({"a", "bc"})));
  EXPECT_FALSE(test::Strings({"ab"})->Equals(*test::Strings({"ax"})));
  EXPECT_FALSE(test::Strings({"a"})->Equals(*test::Strings<BinaryBuilder>({"a"})));
  auto large = test::Strings<LargeStringBuilder>({"q", std::nullopt, "rs"});
  EXPECT_TRUE(
      large->Slice(1)->Equals(*test::Strings<LargeStringBuilder>({std::nullopt, "rs"})));
  EXPECT_FALSE(
      large->Equals(*test::Strings<LargeStringBuilder>({"q", std::nullopt, "rt"})));
}

TEST(CompareTest, ListsCompareTheirSegments) {
  auto a = test::ListOfInt64({OptInts{1, 2}, std::nullopt, OptInts{}, OptInts{3}});
  EXPECT_TRUE(a->Equals(
      *test::ListOfInt64({OptInts{1, 2}, std::nullopt, OptInts{}, OptInts{3}})));
  EXPECT_FALSE(
      a->Equals(*test::ListOfInt64({OptInts{1}, std::nullopt, OptInts{2}, OptInts{3}})));
  EXPECT_FALSE(
      a->Equals(*test::ListOfInt64({OptInts{1, 2}, OptInts{}, OptInts{}, OptInts{3}})));
  EXPECT_TRUE(a->Slice(2)->Equals(*test::ListOfInt64({OptInts{}, OptInts{3}})));
  // A null list may cover a non-empty child segment; it is still just null.
  auto child = test::Int64s({1, 2, 99, 98, 3});
  auto manual = MakeArray(ArrayData::Make(list(int64()), 4,
                                          {BitmapOf({true, false, true, true}),
                                           BufferOf(std::vector<int32_t>{0, 2, 4, 4, 5})},
                                          {child->data()}, 1));
  ASSERT_TRUE(manual->ValidateFull().ok());
  EXPECT_TRUE(a->Equals(*manual));
  EXPECT_TRUE(manual->Equals(*a));
  auto large = test::ListOfInt64({OptInts{1, std::nullopt}, OptInts{4}}, true);
  EXPECT_TRUE(
      large->Equals(*test::ListOfInt64({OptInts{1, std::nullopt}, OptInts{4}}, true)));
  EXPECT_FALSE(large->Equals(*test::ListOfInt64({OptInts{1, 5}, OptInts{4}}, true)));
}

TEST(CompareTest, ListsOfLists) {
  auto inner = test::ListOfInt64({OptInts{1}, OptInts{2, 3}, OptInts{}, OptInts{4}});
  auto outer = [&](std::vector<int32_t> offsets) {
    const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
    return MakeArray(ArrayData::Make(list(inner->type()), n, {nullptr, BufferOf(offsets)},
                                     {inner->data()}, 0));
  };
  EXPECT_TRUE(outer({0, 2, 4})->Equals(*outer({0, 2, 4})));
  EXPECT_FALSE(outer({0, 2, 4})->Equals(*outer({0, 1, 4})));
  // [[ [4] ]] from two different places.
  auto inner2 = test::ListOfInt64({OptInts{4}});
  auto other = MakeArray(ArrayData::Make(list(inner->type()), 1,
                                         {nullptr, BufferOf(std::vector<int32_t>{0, 1})},
                                         {inner2->data()}, 0));
  EXPECT_TRUE(outer({3, 4})->Equals(*other));
  EXPECT_TRUE(outer({0, 2, 3, 4})->Slice(2)->Equals(*other));
}

TEST(CompareTest, FixedSizeLists) {
  auto make = [](std::vector<std::optional<std::vector<int32_t>>> lists) {
    auto values = std::make_shared<Int32Builder>();
    FixedSizeListBuilder b(nullptr, values, 2);
    for (const auto& l : lists) {
      if (!l) {
        EXPECT_TRUE(b.AppendNull().ok());
        continue;
      }
      EXPECT_TRUE(b.Append().ok());
      for (int32_t v : *l) EXPECT_TRUE(values->Append(v).ok());
    }
    return b.Finish().ValueOrDie();
  };
  using L = std::vector<int32_t>;
  auto a = make({L{1, 2}, std::nullopt, L{3, 4}});
  EXPECT_TRUE(a->Equals(*make({L{1, 2}, std::nullopt, L{3, 4}})));
  EXPECT_FALSE(a->Equals(*make({L{1, 2}, std::nullopt, L{3, 5}})));
  EXPECT_TRUE(a->Slice(2)->Equals(*make({L{3, 4}})));
  // Child values under a null list do not matter.
  auto child = test::Int32s({1, 2, 77, 78, 3, 4});
  auto manual = MakeArray(
      ArrayData::Make(a->type(), 3, {BitmapOf({true, false, true})}, {child->data()}, 1));
  EXPECT_TRUE(a->Equals(*manual));
}

TEST(CompareTest, StructsCompareChildrenOfValidRows) {
  auto s = [](std::vector<std::optional<int64_t>> a,
              std::vector<std::optional<std::string>> b, std::shared_ptr<Buffer> validity,
              int64_t nulls) {
    auto type = struct_({field("a", int64()), field("b", utf8())});
    return MakeArray(ArrayData::Make(type, static_cast<int64_t>(a.size()), {validity},
                                     {test::Int64s(a)->data(), test::Strings(b)->data()},
                                     nulls));
  };
  auto x = s({1, 2, 3}, {"p", "q", "r"}, nullptr, 0);
  EXPECT_TRUE(x->Equals(*s({1, 2, 3}, {"p", "q", "r"}, nullptr, 0)));
  EXPECT_FALSE(x->Equals(*s({1, 2, 3}, {"p", "Q", "r"}, nullptr, 0)));
  EXPECT_TRUE(x->Slice(1)->Equals(*s({2, 3}, {"q", "r"}, nullptr, 0)));
  auto masked = s({1, 9, 3}, {"p", "zz", "r"}, BitmapOf({true, false, true}), 1);
  auto masked2 = s({1, 8, 3}, {"p", std::nullopt, "r"}, BitmapOf({true, false, true}), 1);
  EXPECT_TRUE(masked->Equals(*masked2));
  EXPECT_FALSE(masked->Equals(*x));
  EXPECT_TRUE(masked->RangeEquals(2, 3, 2, *x));
}

TEST(CompareTest, Maps) {
  auto make =
      [](std::vector<std::optional<std::vector<std::pair<std::string, int64_t>>>> maps) {
        auto keys = std::make_shared<StringBuilder>();
        auto items = std::make_shared<Int64Builder>();
        MapBuilder b(nullptr, keys, items);
        for (const auto& m : maps) {
          if (!m) {
            EXPECT_TRUE(b.AppendNull().ok());
            continue;
          }
          EXPECT_TRUE(b.Append().ok());
          for (const auto& [k, v] : *m) {
            EXPECT_TRUE(keys->Append(k).ok());
            EXPECT_TRUE(items->Append(v).ok());
          }
        }
        return b.Finish().ValueOrDie();
      };
  using M = std::vector<std::pair<std::string, int64_t>>;
  auto a = make({M{{"a", 1}, {"b", 2}}, std::nullopt, M{}});
  EXPECT_TRUE(a->Equals(*make({M{{"a", 1}, {"b", 2}}, std::nullopt, M{}})));
  EXPECT_FALSE(a->Equals(*make({M{{"a", 1}, {"b", 3}}, std::nullopt, M{}})));
  EXPECT_FALSE(a->Equals(*make({M{{"b", 2}, {"a", 1}}, std::nullopt, M{}})));
  EXPECT_TRUE(a->Slice(1)->Equals(*make({std::nullopt, M{}})));
}

ArrayPtr Dict(std::vector<std::string> values, std::vector<int64_t> indices,
              std::vector<bool> valid = {}) {
  DictionaryBuilder b(dictionary(int16(), utf8()));
  EXPECT_TRUE(b.InsertMemoValues(*test::Strings({values.begin(), values.end()})).ok());
  std::vector<uint8_t> valid_bytes(valid.begin(), valid.end());
  EXPECT_TRUE(b.AppendIndices(indices.data(), static_cast<int64_t>(indices.size()),
                              valid.empty() ? nullptr : valid_bytes.data())
                  .ok());
  return b.Finish().ValueOrDie();
}

TEST(CompareTest, DictionariesCompareIndicesAndDictionaryAsStored) {
  auto a = Dict({"x", "y"}, {0, 1, 1});
  EXPECT_TRUE(a->Equals(*Dict({"x", "y"}, {0, 1, 1})));
  EXPECT_FALSE(a->Equals(*Dict({"x", "y"}, {0, 1, 0})));
  // Same decoded values, different encoding: not equal as stored.
  EXPECT_FALSE(a->Equals(*Dict({"y", "x"}, {1, 0, 0})));
  EXPECT_FALSE(a->Equals(*Dict({"x", "y", "z"}, {0, 1, 1})));
  EXPECT_TRUE(a->Slice(1)->Equals(*Dict({"x", "y"}, {1, 1})));
  EXPECT_TRUE(
      Dict({"x"}, {0, 0}, {true, false})->Equals(*Dict({"x"}, {0, 0}, {true, false})));
  EXPECT_FALSE(Dict({"x"}, {0, 0}, {true, false})->Equals(*Dict({"x"}, {0, 0})));
}

// ---------------------------------------------------------------------------
// Random slices against freshly built copies of the same values.

TEST(CompareTest, RandomSlicesEqualTheirRebuiltValues) {
  std::mt19937_64 rng(42);
  std::vector<std::optional<int64_t>> ints;
  std::vector<std::optional<std::string>> strs;
  std::vector<std::optional<OptInts>> lists;
  for (int i = 0; i < 2000; ++i) {
    const bool null = rng() % 10 == 0;
    ints.push_back(null ? std::nullopt : std::optional<int64_t>(rng() % 100));
    strs.push_back(
        null ? std::nullopt
             : std::optional<std::string>(std::string(rng() % 5, 'a' + rng() % 3)));
    OptInts l(rng() % 4);
    for (auto& v : l)
      v = rng() % 7 == 0 ? std::nullopt : std::optional<int64_t>(rng() % 9);
    lists.push_back(null ? std::nullopt : std::optional<OptInts>(l));
  }
  auto all_ints = test::Int64s(ints);
  auto all_strs = test::Strings(strs);
  auto all_lists = test::ListOfInt64(lists);
  for (int round = 0; round < 200; ++round) {
    const size_t off = rng() % ints.size();
    const size_t len = rng() % (ints.size() - off + 1);
    auto sub = [&](const auto& v) {
      return std::decay_t<decltype(v)>(v.begin() + off, v.begin() + off + len);
    };
    auto part_ints = sub(ints);
    auto part_strs = sub(strs);
    auto part_lists = sub(lists);
    ASSERT_TRUE(all_ints->Slice(off, len)->Equals(*test::Int64s(part_ints)));
    ASSERT_TRUE(all_strs->Slice(off, len)->Equals(*test::Strings(part_strs)));
    ASSERT_TRUE(all_lists->Slice(off, len)->Equals(*test::ListOfInt64(part_lists)));
    if (len == 0) continue;
    const size_t k = rng() % len;  // change one slot
    part_ints[k] = part_ints[k] ? std::optional<int64_t>(*part_ints[k] + 1) : 0;
    part_strs[k] = part_strs[k] ? std::optional<std::string>(*part_strs[k] + "!") : "";
    part_lists[k] = part_lists[k] ? std::nullopt : std::optional<OptInts>(OptInts{});
    ASSERT_FALSE(all_ints->Slice(off, len)->Equals(*test::Int64s(part_ints)));
    ASSERT_FALSE(all_strs->Slice(off, len)->Equals(*test::Strings(part_strs)));
    ASSERT_FALSE(all_lists->Slice(off, len)->Equals(*test::ListOfInt64(part_lists)));
  }
}

TEST(CompareTest, LargeArrays) {
  const int64_t n = 1 << 20;
  std::vector<int64_t> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = i * 7;
  Int64Builder b1;
  Int64Builder b2;
  ASSERT_TRUE(b1.AppendValues(values).ok());
  ASSERT_TRUE(b2.AppendValues(values).ok());
  auto a = b1.Finish().ValueOrDie();
  auto b = b2.Finish().ValueOrDie();
  EXPECT_TRUE(a->Equals(*b));
  values[n - 1] = -1;
  ASSERT_TRUE(b2.AppendValues(values).ok());
  EXPECT_FALSE(a->Equals(*b2.Finish().ValueOrDie()));
  // With nulls every 3rd slot and different bytes behind them.
  std::vector<bool> valid(n);
  for (int64_t i = 0; i < n; ++i) valid[i] = i % 3 != 0;
  std::vector<int64_t> other = values;
  for (int64_t i = 0; i < n; i += 3) other[i] = 12345;
  values[n - 1] = (n - 1) * 7;
  other[n - 1] = (n - 1) * 7;
  ASSERT_TRUE(b1.AppendValues(values, valid).ok());
  ASSERT_TRUE(b2.AppendValues(other, valid).ok());
  auto c = b1.Finish().ValueOrDie();
  auto d = b2.Finish().ValueOrDie();
  EXPECT_TRUE(c->Equals(*d));
  EXPECT_TRUE(c->Slice(5, n - 10)->Equals(*d->Slice(5, n - 10)));
  EXPECT_FALSE(c->Slice(5, n - 10)->Equals(*d->Slice(6, n - 10)));
}

// ---------------------------------------------------------------------------
// Bitmap helpers, against bit-by-bit reference loops, on exact-size bitmaps.

TEST(BitmapRunsTest, MatchesBitByBitReference) {
  std::mt19937 rng(3);
  for (int round = 0; round < 300; ++round) {
    const int nbits = 1 + static_cast<int>(rng() % 300);
    std::vector<bool> bits(nbits);
    const unsigned mode = rng() % 4;  // sparse, half, dense, all set
    const unsigned set_in_8 = mode == 0 ? 1 : mode == 1 ? 4 : mode == 2 ? 7 : 8;
    for (int i = 0; i < nbits; ++i) bits[i] = rng() % 8 < set_in_8;
    auto buffer = BitmapOf(bits);
    const uint8_t* data = buffer->data();
    const int64_t off = rng() % nbits;
    const int64_t len = rng() % (nbits - off + 1);
    std::vector<std::pair<int64_t, int64_t>> runs;
    internal::VisitSetBitRuns(data, off, len, [&](int64_t s, int64_t n) {
      runs.emplace_back(s, n);
      return true;
    });
    std::vector<std::pair<int64_t, int64_t>> expected;
    for (int64_t i = 0; i < len; ++i) {
      if (!bits[off + i]) continue;
      if (!expected.empty() && expected.back().first + expected.back().second == i) {
        ++expected.back().second;
      } else {
        expected.emplace_back(i, 1);
      }
    }
    ASSERT_EQ(runs, expected) << "bits " << nbits << " off " << off << " len " << len;
    int64_t first_clear = len;
    for (int64_t i = 0; i < len; ++i) {
      if (!bits[off + i]) {
        first_clear = i;
        break;
      }
    }
    ASSERT_EQ(internal::FindFirstClearBit(data, off, len), first_clear);
    // Compare against the same bits copied to another offset.
    const int64_t shift = rng() % 70;
    std::vector<bool> moved(shift, false);
    moved.insert(moved.end(), bits.begin() + off, bits.begin() + off + len);
    auto moved_buffer = BitmapOf(moved);
    ASSERT_TRUE(internal::BitRangesEqual(data, off, moved_buffer->data(), shift, len));
    if (len > 0) {
      moved[shift + rng() % len].flip();
      auto changed = BitmapOf(moved);
      ASSERT_FALSE(internal::BitRangesEqual(data, off, changed->data(), shift, len));
    }
  }
}

TEST(BitmapRunsTest, StopsWhenTheVisitorSaysSo) {
  auto bits = BitmapOf({true, false, true, false, true});
  int calls = 0;
  EXPECT_FALSE(internal::VisitSetBitRuns(bits->data(), 0, 5,
                                         [&](int64_t, int64_t) { return ++calls < 2; }));
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(internal::VisitSetBitRuns(
      nullptr, 0, 4, [](int64_t s, int64_t n) { return s == 0 && n == 4; }));
}

}  // namespace
}  // namespace quiver
