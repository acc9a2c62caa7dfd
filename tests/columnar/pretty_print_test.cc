// Tests of PrettyPrint, Array::ToString and FormatValue: the Arrow C++
// layout for every type, windows, indentation, slices, nesting, and safe
// output for arrays that are not sound.
#include "quiver/columnar/pretty_print.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "columnar/array_test_helpers.h"

namespace quiver {
namespace {

using test::ArrayOf;
using test::ExactBuffer;
using test::OptInts;

// "[\n  a,\n  b\n]" for the given value texts.
std::string Lines(const std::vector<std::string>& values, int indent = 0) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  if (values.empty()) return pad + "[]";
  std::string out = pad + "[\n";
  for (size_t i = 0; i < values.size(); ++i) {
    out += pad + "  " + values[i] + (i + 1 < values.size() ? ",\n" : "\n");
  }
  return out + pad + "]";
}

std::string Print(const Array& a, const PrettyPrintOptions& options) {
  std::ostringstream ss;
  Status st = PrettyPrint(a, options, &ss);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return ss.str();
}

PrettyPrintOptions Options(int indent, int64_t window, int64_t container_window = 2) {
  PrettyPrintOptions o;
  o.indent = indent;
  o.window = window;
  o.container_window = container_window;
  return o;
}

TEST(PrettyPrintTest, Int64WithNulls) {
  EXPECT_EQ(test::Int64s({1, std::nullopt, 3})->ToString(), "[\n  1,\n  null,\n  3\n]");
}

TEST(PrettyPrintTest, EmptyArrays) {
  EXPECT_EQ(test::Int64s({})->ToString(), "[]");
  EXPECT_EQ(MakeEmptyArray(utf8()).ValueOrDie()->ToString(), "[]");
  EXPECT_EQ(MakeEmptyArray(list(int32())).ValueOrDie()->ToString(), "[]");
  EXPECT_EQ(test::Int64s({1, 2})->Slice(2)->ToString(), "[]");
}

TEST(PrettyPrintTest, IndentAndNullRep) {
  auto a = test::Int32s({0, 1, std::nullopt, 3, std::nullopt});
  EXPECT_EQ(Print(*a, Options(2, 10)), Lines({"0", "1", "null", "3", "null"}, 2));
  PrettyPrintOptions na;
  na.null_rep = "NA";
  EXPECT_EQ(Print(*a, na), Lines({"0", "1", "NA", "3", "NA"}));
}

TEST(PrettyPrintTest, WindowElidesTheMiddle) {
  std::vector<std::optional<int64_t>> values;
  for (int i = 0; i < 25; ++i) values.push_back(i);
  std::vector<std::string> expected;
  for (int i = 0; i < 10; ++i) expected.push_back(std::to_string(i));
  std::string text = Lines(expected);
  text.resize(text.size() - 2);  // drop "\n]"
  text += ",\n  ...\n";
  for (int i = 15; i < 25; ++i)
    text += "  " + std::to_string(i) + (i < 24 ? ",\n" : "\n");
  text += "]";
  EXPECT_EQ(test::Int64s(values)->ToString(), text);
  // Exactly 2 * window values are all printed.
  values.resize(20);
  EXPECT_EQ(test::Int64s(values)->ToString().find("..."), std::string::npos);
  auto a = test::Int32s({0, 1, std::nullopt, 3, std::nullopt});
  EXPECT_EQ(Print(*a, Options(2, 2)),
            "  [\n    0,\n    1,\n    ...\n    3,\n    null\n  ]");
  EXPECT_EQ(Print(*a, Options(0, 0)), "[\n  ...\n]");
}

TEST(PrettyPrintTest, IntegersAndBooleans) {
  EXPECT_EQ(ArrayOf<Int8Type>({-128, 127, std::nullopt})->ToString(),
            Lines({"-128", "127", "null"}));
  EXPECT_EQ(ArrayOf<UInt8Type>({0, 255})->ToString(), Lines({"0", "255"}));
  EXPECT_EQ(ArrayOf<Int16Type>({-32768})->ToString(), Lines({"-32768"}));
  EXPECT_EQ(ArrayOf<UInt16Type>({65535})->ToString(), Lines({"65535"}));
  EXPECT_EQ(ArrayOf<UInt32Type>({4294967295u})->ToString(), Lines({"4294967295"}));
  EXPECT_EQ(ArrayOf<Int64Type>({std::numeric_limits<int64_t>::min()})->ToString(),
            Lines({"-9223372036854775808"}));
  EXPECT_EQ(ArrayOf<UInt64Type>({std::numeric_limits<uint64_t>::max()})->ToString(),
            Lines({"18446744073709551615"}));
  EXPECT_EQ(test::Bools({true, std::nullopt, false})->ToString(),
            Lines({"true", "null", "false"}));
}

TEST(PrettyPrintTest, FloatingPoint) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(ArrayOf<FloatType>({1.5f, -0.0f, 0.1f, std::nanf(""), inf, -inf})->ToString(),
            Lines({"1.5", "-0", "0.1", "nan", "inf", "-inf"}));
  EXPECT_EQ(ArrayOf<DoubleType>({0, 1e20, 0.1, 1.0 / 3, std::nullopt})->ToString(),
            Lines({"0", "1e+20", "0.1", "0.3333333333333333", "null"}));
  // float16: the float value of the half.
  EXPECT_EQ(ArrayOf<HalfFloatType>(
                {0x3C00, 0x2E66, 0x7BFF, 0x8000, 0x0001, 0x7C00, 0xFC00, 0x7E00, 0xC500})
                ->ToString(),
            Lines({"1", "0.099975586", "65504", "-0", "5.9604645e-08", "inf", "-inf",
                   "nan", "-5"}));
}

TEST(PrettyPrintTest, Decimals) {
  Decimal128Builder b(decimal128(5, 2));
  ASSERT_TRUE(b.Append(Decimal128(12345)).ok());
  ASSERT_TRUE(b.Append(Decimal128(-5)).ok());
  ASSERT_TRUE(b.AppendNull().ok());
  ASSERT_TRUE(b.Append(Decimal128(0)).ok());
  EXPECT_EQ(b.Finish().ValueOrDie()->ToString(),
            Lines({"123.45", "-0.05", "null", "0.00"}));
  Decimal128Builder whole(decimal128(38, 0));
  ASSERT_TRUE(whole.Append(Decimal128(42)).ok());
  EXPECT_EQ(whole.Finish().ValueOrDie()->ToString(), Lines({"42"}));
}

TEST(PrettyPrintTest, TemporalTypesPrintTheirIntegers) {
  EXPECT_EQ(ArrayOf<Date32Type>({19000, std::nullopt})->ToString(),
            Lines({"19000", "null"}));
  EXPECT_EQ(ArrayOf<Date64Type>({86400000})->ToString(), Lines({"86400000"}));
  EXPECT_EQ(ArrayOf<Time32Type>({3723}, time32(TimeUnit::kSecond))->ToString(),
            Lines({"3723"}));
  EXPECT_EQ(ArrayOf<Time64Type>({1}, time64(TimeUnit::kNano))->ToString(), Lines({"1"}));
  EXPECT_EQ(ArrayOf<TimestampType>({1700000000000}, timestamp(TimeUnit::kMilli, "UTC"))
                ->ToString(),
            Lines({"1700000000000"}));
  EXPECT_EQ(ArrayOf<DurationType>({-7}, duration(TimeUnit::kMicro))->ToString(),
            Lines({"-7"}));
}

TEST(PrettyPrintTest, StringsAreQuotedAndEscaped) {
  auto s = test::Strings({"foo", std::nullopt, "", "a\"b", "back\\slash", "t\tn\nr\r",
                          std::string("\x01\x7F", 2), "caf\xC3\xA9", "bad\xFF\xC3"});
  EXPECT_EQ(s->ToString(), Lines({"\"foo\"", "null", "\"\"", R"("a\"b")",
                                  R"("back\\slash")", R"("t\tn\nr\r")", R"("\x01\x7F")",
                                  "\"caf\xC3\xA9\"", R"("bad\xFF\xC3")"}));
  auto large = test::Strings<LargeStringBuilder>({"x", std::nullopt});
  EXPECT_EQ(large->ToString(), Lines({"\"x\"", "null"}));
}

TEST(PrettyPrintTest, BinaryAsHex) {
  auto b = test::Strings<BinaryBuilder>({"foo", "bar", std::nullopt, "baz", "", "\xff"});
  const std::string expected = Lines({"666F6F", "626172", "null", "62617A", "", "FF"});
  EXPECT_EQ(b->ToString(), expected);
  EXPECT_EQ(
      test::Strings<LargeBinaryBuilder>({"foo", "bar", std::nullopt, "baz", "", "\xff"})
          ->ToString(),
      expected);
  FixedSizeBinaryBuilder f(fixed_size_binary(3));
  ASSERT_TRUE(f.Append("foo").ok());
  ASSERT_TRUE(f.AppendNull().ok());
  ASSERT_TRUE(f.Append("baz").ok());
  EXPECT_EQ(f.Finish().ValueOrDie()->ToString(), Lines({"666F6F", "null", "62617A"}));
}

TEST(PrettyPrintTest, NullArrays) {
  EXPECT_EQ(NullArray(3).ToString(), "3 nulls");
  EXPECT_EQ(NullArray(0).ToString(), "0 nulls");
}

const char* kListText = R"([
  [
    null
  ],
  [],
  null,
  [
    4,
    6,
    7
  ],
  [
    2,
    3
  ]
])";

TEST(PrettyPrintTest, Lists) {
  for (bool large : {false, true}) {
    auto a = test::ListOfInt64(
        {OptInts{std::nullopt}, OptInts{}, std::nullopt, OptInts{4, 6, 7}, OptInts{2, 3}},
        large);
    EXPECT_EQ(Print(*a, Options(0, 10, 5)), kListText);
    EXPECT_EQ(a->ToString(),
              "[\n  [\n    null\n  ],\n  [],\n  ...\n  [\n    4,\n    6,\n    7\n  ],\n"
              "  [\n    2,\n    3\n  ]\n]");
    EXPECT_EQ(Print(*a, Options(0, 10, 1)),
              "[\n  [\n    null\n  ],\n  ...\n  [\n    2,\n    3\n  ]\n]");
    // A slice prints its own lists, whatever their absolute offsets.
    EXPECT_EQ(a->Slice(3, 2)->ToString(),
              "[\n  [\n    4,\n    6,\n    7\n  ],\n  [\n    2,\n    3\n  ]\n]");
  }
}

TEST(PrettyPrintTest, FixedSizeLists) {
  auto values = std::make_shared<Int32Builder>();
  FixedSizeListBuilder b(nullptr, values, 3);
  const std::vector<std::vector<std::optional<int32_t>>> lists = {
      {std::nullopt, 0, 1}, {2, 3, std::nullopt}, {}, {4, 6, 7}, {8, 9, 5}};
  for (const auto& l : lists) {
    if (l.empty()) {
      ASSERT_TRUE(b.AppendNull().ok());
      continue;
    }
    ASSERT_TRUE(b.Append().ok());
    for (const auto& v : l)
      ASSERT_TRUE((v ? values->Append(*v) : values->AppendNull()).ok());
  }
  auto a = b.Finish().ValueOrDie();
  EXPECT_EQ(
      a->ToString(),
      "[\n  [\n    null,\n    0,\n    1\n  ],\n  [\n    2,\n    3,\n    null\n  ],\n"
      "  ...\n  [\n    4,\n    6,\n    7\n  ],\n  [\n    8,\n    9,\n    5\n  ]\n]");
  EXPECT_EQ(
      Print(*a, Options(0, 1, 3)),
      "[\n  [\n    null,\n    ...\n    1\n  ],\n  [\n    2,\n    ...\n    null\n  ],\n"
      "  null,\n  [\n    4,\n    ...\n    7\n  ],\n  [\n    8,\n    ...\n    5\n  ]\n]");
  EXPECT_EQ(a->Slice(4)->ToString(), "[\n  [\n    8,\n    9,\n    5\n  ]\n]");
}

ArrayPtr TwoIntStruct(
    const std::vector<
        std::optional<std::pair<std::optional<int32_t>, std::optional<int32_t>>>>& rows) {
  auto one = std::make_shared<Int32Builder>();
  auto two = std::make_shared<Int32Builder>();
  StructBuilder b(struct_({field("one", int32()), field("two", int32())}), nullptr,
                  {one, two});
  for (const auto& r : rows) {
    if (!r) {
      EXPECT_TRUE(b.Append(false).ok());
      EXPECT_TRUE(one->Append(0).ok());
      EXPECT_TRUE(two->Append(0).ok());
      continue;
    }
    EXPECT_TRUE(b.Append().ok());
    EXPECT_TRUE((r->first ? one->Append(*r->first) : one->AppendNull()).ok());
    EXPECT_TRUE((r->second ? two->Append(*r->second) : two->AppendNull()).ok());
  }
  return b.Finish().ValueOrDie();
}

TEST(PrettyPrintTest, Structs) {
  auto basic = TwoIntStruct({std::make_pair(11, 22)});
  EXPECT_EQ(basic->ToString(),
            "-- is_valid: all not null\n-- child 0 type: int32\n  [\n    11\n  ]\n"
            "-- child 1 type: int32\n  [\n    22\n  ]");
  EXPECT_EQ(
      Print(*basic, Options(2, 10)),
      "  -- is_valid: all not null\n  -- child 0 type: int32\n    [\n      11\n    ]\n"
      "  -- child 1 type: int32\n    [\n      22\n    ]");
  auto advanced = TwoIntStruct(
      {std::make_pair(11, 22), std::nullopt, std::make_pair(std::nullopt, 33)});
  EXPECT_EQ(advanced->ToString(),
            "-- is_valid:\n  [\n    true,\n    false,\n    true\n  ]\n"
            "-- child 0 type: int32\n  [\n    11,\n    0,\n    null\n  ]\n"
            "-- child 1 type: int32\n  [\n    22,\n    0,\n    33\n  ]");
  // A slice shows its own rows of validity and children.
  EXPECT_EQ(advanced->Slice(2)->ToString(),
            "-- is_valid: all not null\n-- child 0 type: int32\n  [\n    null\n  ]\n"
            "-- child 1 type: int32\n  [\n    33\n  ]");
}

ArrayPtr SampleMap() {
  auto keys = std::make_shared<StringBuilder>();
  auto items = std::make_shared<Int64Builder>();
  MapBuilder b(nullptr, keys, items);
  EXPECT_TRUE(b.Append().ok());
  EXPECT_TRUE(keys->Append("joe").ok());
  EXPECT_TRUE(items->Append(0).ok());
  EXPECT_TRUE(keys->Append("mark").ok());
  EXPECT_TRUE(items->AppendNull().ok());
  EXPECT_TRUE(b.AppendNull().ok());
  EXPECT_TRUE(b.Append().ok());
  EXPECT_TRUE(keys->Append("cap").ok());
  EXPECT_TRUE(items->Append(8).ok());
  EXPECT_TRUE(b.Append().ok());
  return b.Finish().ValueOrDie();
}

TEST(PrettyPrintTest, Maps) {
  EXPECT_EQ(Print(*SampleMap(), Options(0, 10, 10)), R"([
  keys:
  [
    "joe",
    "mark"
  ]
  values:
  [
    0,
    null
  ],
  null,
  keys:
  [
    "cap"
  ]
  values:
  [
    8
  ],
  keys:
  []
  values:
  []
])");
}

ArrayPtr SampleDictionary() {
  DictionaryBuilder b(dictionary(int16(), utf8()));
  for (const char* v : {"bar", "baz", "", "foo", "baz", "foo"}) {
    Status st = *v ? b.Append(std::string_view(v)) : b.AppendNull();
    EXPECT_TRUE(st.ok());
  }
  return b.Finish().ValueOrDie();
}

TEST(PrettyPrintTest, Dictionaries) {
  EXPECT_EQ(SampleDictionary()->ToString(), R"(-- dictionary:
  [
    "bar",
    "baz",
    "foo"
  ]
-- indices:
  [
    0,
    1,
    null,
    2,
    1,
    2
  ])");
  EXPECT_EQ(SampleDictionary()->Slice(4)->ToString(),
            "-- dictionary:\n  [\n    \"bar\",\n    \"baz\",\n    \"foo\"\n  ]\n"
            "-- indices:\n  [\n    1,\n    2\n  ]");
}

TEST(PrettyPrintTest, StructsInsideLists) {
  auto s = TwoIntStruct({std::make_pair(1, 2), std::make_pair(3, 4)});
  auto offsets = test::BufferOf(std::vector<int32_t>{0, 1, 2});
  auto l =
      MakeArray(ArrayData::Make(list(s->type()), 2, {nullptr, offsets}, {s->data()}, 0));
  ASSERT_TRUE(l->ValidateFull().ok());
  EXPECT_EQ(
      l->ToString(),
      "[\n  -- is_valid: all not null\n  -- child 0 type: int32\n    [\n      1\n    ]\n"
      "  -- child 1 type: int32\n    [\n      2\n    ],\n"
      "  -- is_valid: all not null\n  -- child 0 type: int32\n    [\n      3\n    ]\n"
      "  -- child 1 type: int32\n    [\n      4\n    ]\n]");
}

TEST(PrettyPrintTest, InvalidArraysAreReportedNotRead) {
  auto bad = MakeArray(ArrayData::Make(int32(), 3, {nullptr, ExactBuffer("abcd")}, 0));
  std::ostringstream ss;
  Status st = PrettyPrint(*bad, PrettyPrintOptions{}, &ss);
  EXPECT_TRUE(st.IsInvalid());
  EXPECT_TRUE(ss.str().empty());
  EXPECT_EQ(bad->ToString(),
            "<invalid array: int32: the values buffer has 4 bytes but 12 are needed for "
            "offset 0 + length 3>");
}

TEST(PrettyPrintTest, UnsoundMiddleOffsetsPrintAsInvalid) {
  // First and last offsets are in bounds (Validate passes); the middle ones are not.
  auto s = MakeArray(ArrayData::Make(
      utf8(), 3,
      {nullptr, test::BufferOf(std::vector<int32_t>{0, 9, 1, 3}), ExactBuffer("abc")},
      0));
  ASSERT_TRUE(s->Validate().ok());
  EXPECT_EQ(s->ToString(), Lines({"<invalid offsets>", "<invalid offsets>", "\"bc\""}));
  EXPECT_EQ(FormatValue(*s, 0), "<invalid offsets>");
  auto child = test::Int64s({1, 2, 3});
  auto l = MakeArray(ArrayData::Make(
      list(int64()), 2, {nullptr, test::BufferOf(std::vector<int32_t>{0, 7, 3})},
      {child->data()}, 0));
  ASSERT_TRUE(l->Validate().ok());
  EXPECT_EQ(l->ToString(), Lines({"<invalid offsets>", "<invalid offsets>"}));
  EXPECT_EQ(FormatValue(*l, 1), "<invalid offsets>");
}

TEST(PrettyPrintTest, UnsoundOffsetsInsideANestedSlice) {
  // The struct shows only row 0 of its list child, whose offsets [0, 100]
  // are middle offsets of the validated list [0, 100, 3]: bound them by the
  // child's length, not by the slice's own first and last offsets.
  auto values = test::Int64s({1, 2, 3});
  auto lists = ArrayData::Make(list(int64()), 2,
                               {nullptr, test::BufferOf(std::vector<int32_t>{0, 100, 3})},
                               {values->data()}, 0);
  auto s = MakeArray(
      ArrayData::Make(struct_({field("l", list(int64()))}), 1, {nullptr}, {lists}, 0));
  ASSERT_TRUE(s->Validate().ok());
  EXPECT_EQ(s->ToString(),
            "-- is_valid: all not null\n-- child 0 type: list<item: int64>\n"
            "  [\n    <invalid offsets>\n  ]");
  EXPECT_EQ(FormatValue(*s, 0), "{l: <invalid offsets>}");
}

TEST(FormatValueTest, Scalars) {
  EXPECT_EQ(FormatValue(*test::Int64s({1, std::nullopt}), 0), "1");
  EXPECT_EQ(FormatValue(*test::Int64s({1, std::nullopt}), 1), "null");
  EXPECT_EQ(FormatValue(*test::Int64s({1}), 1), "<out of range>");
  EXPECT_EQ(FormatValue(*test::Int64s({1}), -1), "<out of range>");
  EXPECT_EQ(FormatValue(*test::Strings({"a\"b"}), 0), R"("a\"b")");
  EXPECT_EQ(FormatValue(*test::Strings<BinaryBuilder>({"\x0a\x1b"}), 0), "0A1B");
  EXPECT_EQ(FormatValue(*test::Bools({false}), 0), "false");
  EXPECT_EQ(FormatValue(*ArrayOf<DoubleType>({2.5}), 0), "2.5");
  EXPECT_EQ(FormatValue(NullArray(2), 1), "null");
  EXPECT_EQ(FormatValue(*test::Int64s({5, 6, 7})->Slice(1), 1), "7");
}

TEST(FormatValueTest, NestedValuesOnOneLine) {
  auto l = test::ListOfInt64({OptInts{1, std::nullopt}, OptInts{}, std::nullopt});
  EXPECT_EQ(FormatValue(*l, 0), "[1, null]");
  EXPECT_EQ(FormatValue(*l, 1), "[]");
  EXPECT_EQ(FormatValue(*l, 2), "null");
  EXPECT_EQ(FormatValue(*l->Slice(1), 0), "[]");
  auto s = StructArray::Make({test::Int64s({1, 2}), test::Strings({"x", std::nullopt})},
                             {"a", "b"})
               .ValueOrDie();
  EXPECT_EQ(FormatValue(*s, 0), "{a: 1, b: \"x\"}");
  EXPECT_EQ(FormatValue(*s->Slice(1), 0), "{a: 2, b: null}");
  auto m = SampleMap();
  EXPECT_EQ(FormatValue(*m, 0), "{\"joe\": 0, \"mark\": null}");
  EXPECT_EQ(FormatValue(*m, 1), "null");
  EXPECT_EQ(FormatValue(*m, 3), "{}");
  EXPECT_EQ(FormatValue(*m->Slice(2), 0), "{\"cap\": 8}");
  auto d = SampleDictionary();
  EXPECT_EQ(FormatValue(*d, 1), "\"baz\"");
  EXPECT_EQ(FormatValue(*d, 2), "null");
  EXPECT_EQ(FormatValue(*d->Slice(3), 0), "\"foo\"");
}

TEST(FormatValueTest, DictionaryIndexOutOfRange) {
  // Validate() passes (it does not look at indices); FormatValue must not
  // follow a bad index.
  auto data = ArrayData::Make(dictionary(int8(), utf8()), 2,
                              {nullptr, ExactBuffer(std::string("\x01\x05", 2))}, 0);
  data->dictionary = test::Strings({"a", "b"})->data();
  auto d = MakeArray(data);
  ASSERT_TRUE(d->Validate().ok());
  EXPECT_EQ(FormatValue(*d, 0), "\"b\"");
  EXPECT_EQ(FormatValue(*d, 1), "<invalid index>");
}

}  // namespace
}  // namespace quiver
