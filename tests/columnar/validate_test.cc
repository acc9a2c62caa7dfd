// Tests of Array::Validate / ValidateFull: every structural rule on hand-made
// malformed ArrayData (exact-size buffers, so ASan catches any overread),
// every content rule, and a mutation fuzz loop.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "columnar/array_test_helpers.h"
#include "columnar/validate_internal.h"
#include "common/all_types.h"
#include "quiver/columnar/pretty_print.h"

namespace quiver {
namespace {

using quiver::testing::AllTypes;

using test::BitmapOf;
using test::BufferOf;
using test::ExactBuffer;
using test::IsInvalidWith;
using test::OptInts;

using Buffers = std::vector<std::shared_ptr<Buffer>>;
using Children = std::vector<ArrayDataPtr>;

// ArrayData exactly as given (ArrayData::Make would fix up the null count).
ArrayDataPtr Data(TypePtr type, int64_t length, Buffers buffers, Children children = {},
                  int64_t null_count = 0, int64_t offset = 0) {
  auto d = std::make_shared<ArrayData>();
  d->type = std::move(type);
  d->length = length;
  d->buffers = std::move(buffers);
  d->child_data = std::move(children);
  d->null_count = null_count;
  d->offset = offset;
  return d;
}

std::shared_ptr<Buffer> I32(std::vector<int32_t> v) { return BufferOf(v); }
std::shared_ptr<Buffer> I64(std::vector<int64_t> v) { return BufferOf(v); }

Status V(const ArrayDataPtr& d) { return internal::ValidateArrayData(*d); }
Status VF(const ArrayDataPtr& d) { return internal::ValidateArrayDataFull(*d); }

ArrayDataPtr Int32Data(int64_t length, int64_t offset = 0) {
  std::vector<int32_t> v(static_cast<size_t>(length + offset), 7);
  return Data(int32(), length, {nullptr, I32(v)}, {}, 0, offset);
}

ArrayDataPtr StringData(std::vector<int32_t> offsets, std::string_view bytes,
                        std::shared_ptr<Buffer> validity = nullptr, int64_t nulls = 0) {
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  return Data(utf8(), n, {std::move(validity), I32(offsets), ExactBuffer(bytes)}, {},
              nulls);
}

TEST(ValidateTest, ArraysOfEveryTypeAreValid) {
  for (const TypePtr& type : AllTypes()) {
    SCOPED_TRACE(type->ToString());
    auto builder = MakeBuilder(type).ValueOrDie();
    ASSERT_TRUE(builder->AppendEmptyValues(3).ok());
    ASSERT_TRUE(builder->AppendNulls(2).ok());
    ASSERT_TRUE(builder->AppendEmptyValues(2).ok());
    std::vector<ArrayPtr> arrays = {builder->Finish().ValueOrDie(),
                                    MakeArrayOfNull(type, 4).ValueOrDie(),
                                    MakeEmptyArray(type).ValueOrDie()};
    arrays.push_back(arrays[0]->Slice(1, 5));
    arrays.push_back(arrays[0]->Slice(7, 0));
    arrays.push_back(arrays[1]->Slice(3));
    for (const ArrayPtr& a : arrays) {
      EXPECT_TRUE(a->Validate().ok()) << a->Validate().ToString();
      EXPECT_TRUE(a->ValidateFull().ok()) << a->ValidateFull().ToString();
    }
  }
}

TEST(ValidateTest, ArraysWithValuesAreValid) {
  std::vector<ArrayPtr> arrays = {
      test::Int64s({1, std::nullopt, 3}),
      test::Strings({"a", std::nullopt, "h\xC3\xA9llo", "\xF0\x9F\x98\x80"}),
      test::Strings<LargeStringBuilder>({"x", "", std::nullopt}),
      test::Bools({true, std::nullopt, false}),
      test::ListOfInt64({OptInts{1, 2}, std::nullopt, OptInts{}, OptInts{3}}),
      test::ListOfInt64({OptInts{1, std::nullopt}, OptInts{4}}, /*large=*/true)};
  for (const ArrayPtr& a : arrays) {
    for (int64_t off = 0; off <= a->length(); ++off) {
      ArrayPtr s = a->Slice(off);
      EXPECT_TRUE(s->Validate().ok()) << s->Validate().ToString();
      EXPECT_TRUE(s->ValidateFull().ok()) << s->ValidateFull().ToString();
    }
  }
}

TEST(ValidateTest, ArrayWithoutDataOrType) {
  EXPECT_TRUE(IsInvalidWith(Array(nullptr).Validate(), "no data"));
  EXPECT_TRUE(IsInvalidWith(Array(nullptr).ValidateFull(), "no data"));
  EXPECT_TRUE(IsInvalidWith(V(Data(nullptr, 0, {})), "array has no type"));
}

TEST(ValidateTest, LengthOffsetAndNullCount) {
  auto d = Int32Data(3);
  d->length = -1;
  EXPECT_TRUE(IsInvalidWith(V(d), "int32: negative length -1"));
  d = Int32Data(3);
  d->offset = -2;
  EXPECT_TRUE(IsInvalidWith(V(d), "int32: negative offset -2"));
  d = Int32Data(1);
  d->offset = std::numeric_limits<int64_t>::max();
  EXPECT_TRUE(IsInvalidWith(V(d), "overflows"));
  d = Int32Data(3);
  d->buffers[0] = BitmapOf({true, true, true});
  d->null_count = 4;
  EXPECT_TRUE(IsInvalidWith(V(d), "null_count 4 is outside [0, length 3]"));
  d->null_count = -2;
  EXPECT_TRUE(IsInvalidWith(V(d), "null_count -2 is outside"));
  d->null_count = kUnknownNullCount;
  EXPECT_TRUE(V(d).ok());
}

TEST(ValidateTest, NullType) {
  EXPECT_TRUE(V(Data(null(), 3, {}, {}, 3)).ok());
  EXPECT_TRUE(V(Data(null(), 3, {nullptr}, {}, 3)).ok());
  EXPECT_TRUE(V(Data(null(), 3, {nullptr}, {}, kUnknownNullCount)).ok());
  EXPECT_TRUE(IsInvalidWith(V(Data(null(), 3, {nullptr, nullptr}, {}, 3)),
                            "null: expected at most 1 buffer, got 2"));
  EXPECT_TRUE(IsInvalidWith(V(Data(null(), 3, {BitmapOf({1, 0, 1})}, {}, 3)),
                            "null: a null array has no validity bitmap"));
  EXPECT_TRUE(IsInvalidWith(V(Data(null(), 3, {}, {}, 1)),
                            "null_count 1 must equal the length 3"));
}

TEST(ValidateTest, BufferSlots) {
  EXPECT_TRUE(
      IsInvalidWith(V(Data(int32(), 0, {nullptr})), "int32: expected 2 buffers, got 1"));
  EXPECT_TRUE(IsInvalidWith(V(Data(int32(), 0, {nullptr, nullptr, nullptr})),
                            "expected 2 buffers, got 3"));
  EXPECT_TRUE(IsInvalidWith(V(Data(utf8(), 0, {nullptr, nullptr})),
                            "string: expected 3 buffers, got 2"));
  EXPECT_TRUE(IsInvalidWith(
      V(Data(struct_({field("a", int32())}), 0, {nullptr, nullptr}, {Int32Data(0)})),
      "struct: expected 1 buffers, got 2"));
  static const uint8_t kBytes[8] = {};
  EXPECT_TRUE(IsInvalidWith(V(Data(int32(), 0, {nullptr, Buffer::Wrap(kBytes, -1)})),
                            "buffer 1 has negative size"));
  EXPECT_TRUE(IsInvalidWith(V(Data(int32(), 2, {nullptr, Buffer::Wrap(nullptr, 8)})),
                            "buffer 1 has 8 bytes but no address"));
}

TEST(ValidateTest, ValidityBitmap) {
  auto d = Int32Data(9);
  d->buffers[0] = BitmapOf({true});  // 1 byte, 9 bits needed
  d->null_count = kUnknownNullCount;
  EXPECT_TRUE(
      IsInvalidWith(V(d), "int32: the validity buffer has 1 bytes but 2 are needed"));
  d = Int32Data(3, 6);  // bits [6, 9) need 2 bytes
  d->buffers[0] = BitmapOf(std::vector<bool>(8, true));
  EXPECT_TRUE(
      IsInvalidWith(V(d), "validity buffer has 1 bytes but 2 are needed for offset 6"));
  d = Int32Data(3);
  d->null_count = 2;
  EXPECT_TRUE(IsInvalidWith(V(d), "null_count is 2 but there is no validity bitmap"));
}

TEST(ValidateTest, FixedWidthValues) {
  EXPECT_TRUE(IsInvalidWith(V(Data(int32(), 3, {nullptr, I32({1, 2})})),
                            "int32: the values buffer has 8 bytes but 12 are needed"));
  EXPECT_TRUE(IsInvalidWith(V(Data(int32(), 2, {nullptr, I32({1, 2})}, {}, 0, 1)),
                            "8 bytes but 12 are needed for offset 1 + length 2"));
  EXPECT_TRUE(IsInvalidWith(V(Data(int64(), 1, {nullptr, nullptr})),
                            "int64: the values buffer is missing (8 bytes needed"));
  EXPECT_TRUE(V(Data(int64(), 0, {nullptr, nullptr})).ok());
  EXPECT_TRUE(IsInvalidWith(V(Data(boolean(), 9, {nullptr, BitmapOf({true})})),
                            "bool: the values buffer has 1 bytes but 2 are needed"));
  EXPECT_TRUE(V(Data(boolean(), 8, {nullptr, BitmapOf({true})})).ok());
  EXPECT_TRUE(IsInvalidWith(
      V(Data(decimal128(5, 1), 2, {nullptr, ExactBuffer(std::string(16, '\0'))})),
      "decimal128(5, 1): the values buffer has 16 bytes but 32"));
  EXPECT_TRUE(
      IsInvalidWith(V(Data(fixed_size_binary(3), 2, {nullptr, ExactBuffer("abcde")})),
                    "fixed_size_binary[3]: the values buffer has 5 bytes but 6"));
  EXPECT_TRUE(V(Data(fixed_size_binary(0), 5, {nullptr, nullptr})).ok());
  EXPECT_TRUE(IsInvalidWith(V(Data(float16(), 2, {nullptr, ExactBuffer("abc")})),
                            "halffloat: the values buffer has 3 bytes but 4"));
  auto huge = Data(int64(), 1, {nullptr, I64({1})}, {}, 0, int64_t{1} << 60);
  EXPECT_TRUE(IsInvalidWith(V(huge), "int64: offset + length"));
  EXPECT_TRUE(IsInvalidWith(V(huge), "overflow"));
}

TEST(ValidateTest, BinaryOffsets) {
  EXPECT_EQ(StringData({0, 1, 3}, "abc")->length, 2);
  EXPECT_TRUE(V(StringData({0, 1, 3}, "abc")).ok());
  EXPECT_TRUE(IsInvalidWith(V(Data(utf8(), 2, {nullptr, nullptr, ExactBuffer("ab")})),
                            "string: the offsets buffer is missing (12 bytes needed"));
  EXPECT_TRUE(
      IsInvalidWith(V(Data(binary(), 2, {nullptr, I32({0, 1}), ExactBuffer("ab")})),
                    "binary: the offsets buffer has 8 bytes but 12 are needed"));
  // An empty array may have no offsets and no data at all.
  EXPECT_TRUE(V(Data(utf8(), 0, {nullptr, nullptr, nullptr})).ok());
  EXPECT_TRUE(V(Data(large_binary(), 0, {nullptr, nullptr, nullptr}, {}, 0, 5)).ok());
  EXPECT_TRUE(IsInvalidWith(V(StringData({-1, 1, 3}, "abc")),
                            "string: first offset -1 is negative"));
  EXPECT_TRUE(IsInvalidWith(V(StringData({3, 1, 1}, "abc")),
                            "first offset 3 is greater than the last offset 1"));
  EXPECT_TRUE(IsInvalidWith(V(StringData({0, 1, 5}, "abcd")),
                            "last offset 5 is beyond the end of the data buffer (4)"));
  EXPECT_TRUE(V(Data(utf8(), 2, {nullptr, I32({0, 0, 0}), nullptr})).ok());
  EXPECT_TRUE(IsInvalidWith(V(Data(utf8(), 2, {nullptr, I32({0, 0, 2}), nullptr})),
                            "last offset 2 is beyond the end of the data buffer (0)"));
  // Only the offsets of the slice matter: [1, 3] here.
  auto sliced =
      Data(binary(), 2, {nullptr, I32({-5, 1, 2, 3, 99}), ExactBuffer("abc")}, {}, 0, 1);
  EXPECT_TRUE(V(sliced).ok());
  sliced->length = 3;
  EXPECT_TRUE(IsInvalidWith(V(sliced), "last offset 99 is beyond"));
  auto large = Data(large_utf8(), 2, {nullptr, I64({0, 2, 7}), ExactBuffer("abcdef")});
  EXPECT_TRUE(IsInvalidWith(V(large), "large_string: last offset 7 is beyond"));
  large->buffers[1] = I64({0, 2});
  EXPECT_TRUE(IsInvalidWith(V(large), "offsets buffer has 16 bytes but 24 are needed"));
}

ArrayDataPtr ListData(std::vector<int32_t> offsets, ArrayDataPtr child,
                      TypePtr type = list(int32())) {
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  return Data(std::move(type), n, {nullptr, I32(offsets)}, {std::move(child)});
}

TEST(ValidateTest, Lists) {
  EXPECT_TRUE(V(ListData({0, 2, 3}, Int32Data(3))).ok());
  EXPECT_TRUE(IsInvalidWith(V(Data(list(int32()), 0, {nullptr, nullptr})),
                            "list: expected 1 child arrays, got 0"));
  EXPECT_TRUE(IsInvalidWith(
      V(Data(list(int32()), 0, {nullptr, nullptr}, {Int32Data(0), Int32Data(0)})),
      "expected 1 child arrays, got 2"));
  EXPECT_TRUE(
      IsInvalidWith(V(ListData({0, 1}, nullptr)), "list: list values is missing"));
  EXPECT_TRUE(
      IsInvalidWith(V(ListData({0, 1}, StringData({0, 1}, "a"))),
                    "list: list values has type string but the type declares int32"));
  auto no_type = Int32Data(1);
  no_type->type = nullptr;
  EXPECT_TRUE(IsInvalidWith(V(ListData({0, 1}, no_type)), "list values has no type"));
  EXPECT_TRUE(
      IsInvalidWith(V(ListData({0, 2, 4}, Int32Data(3))),
                    "list: last offset 4 is beyond the end of the child array (3)"));
  // Errors inside the child carry its path.
  auto short_child = Data(int32(), 3, {nullptr, I32({1})});
  EXPECT_TRUE(IsInvalidWith(V(ListData({0, 3}, short_child)),
                            "list values: int32: the values buffer has 4 bytes but 12"));
  auto large = Data(large_list(int32()), 1, {nullptr, I64({0, 4})}, {Int32Data(3)});
  EXPECT_TRUE(IsInvalidWith(V(large), "large_list: last offset 4 is beyond"));
}

TEST(ValidateTest, FixedSizeLists) {
  const TypePtr type = fixed_size_list(int32(), 3);
  EXPECT_TRUE(V(Data(type, 2, {nullptr}, {Int32Data(6)})).ok());
  EXPECT_TRUE(
      IsInvalidWith(V(Data(type, 2, {nullptr}, {Int32Data(5)})),
                    "fixed_size_list: child array has 5 values but 6 are needed"));
  EXPECT_TRUE(IsInvalidWith(V(Data(type, 1, {nullptr}, {Int32Data(5)}, 0, 1)),
                            "5 values but 6 are needed for offset 1 + length 1"));
  auto huge = Data(type, 1, {nullptr}, {Int32Data(5)}, 0, int64_t{1} << 62);
  EXPECT_TRUE(IsInvalidWith(V(huge), "lists of size 3 overflow"));
  EXPECT_TRUE(
      IsInvalidWith(V(Data(type, 0, {nullptr}, {})), "expected 1 child arrays, got 0"));
}

TEST(ValidateTest, Structs) {
  const TypePtr type = struct_({field("a", int32()), field("b", utf8())});
  auto b = StringData({0, 1, 2, 3}, "xyz");
  EXPECT_TRUE(V(Data(type, 3, {nullptr}, {Int32Data(3), b})).ok());
  EXPECT_TRUE(IsInvalidWith(V(Data(type, 3, {nullptr}, {Int32Data(3)})),
                            "struct: expected 2 child arrays, got 1"));
  EXPECT_TRUE(
      IsInvalidWith(V(Data(type, 3, {nullptr}, {Int32Data(3), Int32Data(3)})),
                    "struct field 1 'b' has type int32 but the type declares string"));
  EXPECT_TRUE(
      IsInvalidWith(V(Data(type, 4, {nullptr}, {Int32Data(4), b})),
                    "struct field 1 'b' has length 3, less than offset 0 + length 4"));
  EXPECT_TRUE(IsInvalidWith(V(Data(type, 3, {nullptr}, {Int32Data(4), b}, 0, 1)),
                            "has length 3, less than offset 1 + length 3"));
  EXPECT_TRUE(IsInvalidWith(V(Data(type, 3, {nullptr}, {nullptr, b})),
                            "struct field 0 'a' is missing"));
  auto bad_b = StringData({0, 1, 2, 9}, "xyz");
  EXPECT_TRUE(IsInvalidWith(V(Data(type, 3, {nullptr}, {Int32Data(3), bad_b})),
                            "struct field 1 'b': string: last offset 9"));
}

TEST(ValidateTest, Maps) {
  const TypePtr type = map(utf8(), int32());
  const TypePtr entries_type = type->field(0)->type();
  auto entries =
      Data(entries_type, 3, {nullptr}, {StringData({0, 1, 2, 3}, "abc"), Int32Data(3)});
  EXPECT_TRUE(VF(ListData({0, 2, 3}, entries, type)).ok());
  EXPECT_TRUE(IsInvalidWith(V(ListData({0, 2, 3}, Int32Data(3), type)),
                            "map: map entries has type int32 but the type declares"));
  EXPECT_TRUE(
      IsInvalidWith(V(ListData({0, 2, 4}, entries, type)),
                    "map: last offset 4 is beyond the end of the child array (3)"));
  auto bad_entries = Data(entries_type, 3, {nullptr}, {StringData({0, 1, 2, 3}, "abc")});
  EXPECT_TRUE(IsInvalidWith(V(ListData({0, 3}, bad_entries, type)),
                            "map entries: struct: expected 2 child arrays, got 1"));
}

TEST(ValidateTest, Dictionaries) {
  const TypePtr type = dictionary(int8(), utf8());
  auto good = Data(type, 3, {nullptr, ExactBuffer(std::string("\0\1\0", 3))});
  good->dictionary = StringData({0, 1, 2}, "ab");
  EXPECT_TRUE(VF(good).ok());
  auto d = std::make_shared<ArrayData>(*good);
  d->dictionary = nullptr;
  EXPECT_TRUE(IsInvalidWith(V(d), "dictionary: the dictionary is missing"));
  d->dictionary = Int32Data(2);
  EXPECT_TRUE(IsInvalidWith(
      V(d), "dictionary values has type int32 but the type declares string"));
  d->dictionary = StringData({0, 1, 5}, "ab");
  EXPECT_TRUE(IsInvalidWith(V(d), "dictionary values: string: last offset 5"));
  d = std::make_shared<ArrayData>(*good);
  d->buffers[1] = ExactBuffer("ab");
  EXPECT_TRUE(IsInvalidWith(V(d), "dictionary: the indices buffer has 2 bytes but 3"));
  d = std::make_shared<ArrayData>(*good);
  d->child_data = {Int32Data(3)};
  EXPECT_TRUE(IsInvalidWith(V(d), "dictionary: expected 0 child arrays, got 1"));
  auto plain = Int32Data(2);
  plain->dictionary = Int32Data(2);
  EXPECT_TRUE(IsInvalidWith(V(plain), "int32: unexpected dictionary"));
  plain = Int32Data(2);
  plain->child_data = {Int32Data(2)};
  EXPECT_TRUE(IsInvalidWith(V(plain), "int32: expected 0 child arrays, got 1"));
}

TypePtr RawType(TypeId id, FieldVector children = {}) {
  DataType::Params p;
  p.id = id;
  p.children = std::move(children);
  return std::make_shared<DataType>(std::move(p));
}

TEST(ValidateTest, MalformedTypes) {
  EXPECT_TRUE(IsInvalidWith(V(Data(RawType(TypeId::kList), 0, {nullptr, nullptr})),
                            "list: type has 0 child fields, expected 1"));
  EXPECT_TRUE(IsInvalidWith(V(Data(RawType(TypeId::kStruct, {nullptr}), 0, {nullptr})),
                            "struct: type has a null child field 0"));
  EXPECT_TRUE(IsInvalidWith(
      V(Data(RawType(TypeId::kStruct, {field("x", nullptr)}), 0, {nullptr})),
      "child field 0 'x' has no type"));
  auto nullable_key =
      field("entries", struct_({field("key", utf8()), field("value", int32())}), false);
  EXPECT_TRUE(
      IsInvalidWith(V(Data(RawType(TypeId::kMap, {nullable_key}), 0, {nullptr, nullptr})),
                    "map: the key field is nullable"));
  EXPECT_TRUE(IsInvalidWith(
      V(Data(RawType(TypeId::kMap, {field("e", int32())}), 0, {nullptr, nullptr})),
      "map: entries must be a struct of 2 fields, got int32"));
  DataType::Params p;
  p.id = TypeId::kDictionary;
  p.index_type = utf8();
  p.value_type = utf8();
  EXPECT_TRUE(IsInvalidWith(V(Data(std::make_shared<DataType>(p), 0, {nullptr, nullptr})),
                            "index type must be an integer type, got string"));
  p.index_type = int32();
  p.value_type = nullptr;
  EXPECT_TRUE(IsInvalidWith(V(Data(std::make_shared<DataType>(p), 0, {nullptr, nullptr})),
                            "dictionary: no value type"));
  DataType::Params dec;
  dec.id = TypeId::kDecimal;
  dec.precision = 39;
  dec.size_param = 128;
  EXPECT_TRUE(
      IsInvalidWith(V(Data(std::make_shared<DataType>(dec), 0, {nullptr, nullptr})),
                    "precision 39 is outside [1, 38]"));
  dec.precision = 10;
  dec.size_param = 32;
  EXPECT_TRUE(
      IsInvalidWith(V(Data(std::make_shared<DataType>(dec), 0, {nullptr, nullptr})),
                    "precision 10 is outside [1, 9]"));
  dec.size_param = 48;
  EXPECT_TRUE(
      IsInvalidWith(V(Data(std::make_shared<DataType>(dec), 0, {nullptr, nullptr})),
                    "a decimal of 48 bits"));
  DataType::Params t32;
  t32.id = TypeId::kTime32;
  t32.unit = TimeUnit::kNano;
  EXPECT_TRUE(
      IsInvalidWith(V(Data(std::make_shared<DataType>(t32), 0, {nullptr, nullptr})),
                    "time32 unit must be s or ms"));
  EXPECT_TRUE(IsInvalidWith(V(Data(RawType(static_cast<TypeId>(100)), 0, {})),
                            "unknown type id 100"));
  // A child whose own type is malformed is reported, not dereferenced.
  auto bad_child = Data(RawType(TypeId::kList), 0, {nullptr, nullptr});
  EXPECT_TRUE(IsInvalidWith(V(ListData({0}, bad_child, list(list(int32())))),
                            "list values: list: type has 0 child fields"));
}

TEST(ValidateTest, NestingDepthIsBounded) {
  TypePtr deep = int32();
  for (int i = 0; i < 600; ++i) deep = list(deep);
  EXPECT_TRUE(IsInvalidWith(V(Data(deep, 0, {nullptr, nullptr})),
                            "nested deeper than 512 levels"));
}

// ---------------------------------------------------------------------------
// ValidateFull

TEST(ValidateFullTest, NullCountMustMatchBitmap) {
  auto d = Int32Data(3);
  d->buffers[0] = BitmapOf({true, false, true});
  d->null_count = 0;
  EXPECT_TRUE(V(d).ok());
  EXPECT_TRUE(
      IsInvalidWith(VF(d), "int32: null_count is 0 but the validity bitmap has 1 nulls"));
  d->null_count = 2;
  EXPECT_TRUE(
      IsInvalidWith(VF(d), "null_count is 2 but the validity bitmap has 1 nulls"));
  d->null_count = kUnknownNullCount;
  EXPECT_TRUE(VF(d).ok());
  d->null_count = 1;
  EXPECT_TRUE(VF(d).ok());
}

TEST(ValidateFullTest, OffsetsMustNotDecrease) {
  auto l = ListData({0, 2, 4, 7, 5, 8}, Int32Data(8));
  EXPECT_TRUE(V(l).ok());  // first and last offsets are fine
  Status st = VF(l);
  EXPECT_EQ(st.message(),
            "list: offset 7 at position 3 is greater than the next offset 5");
  // Positions are relative to the array's offset.
  l->offset = 2;
  l->length = 3;
  EXPECT_TRUE(IsInvalidWith(VF(l), "offset 7 at position 1 is greater"));
  auto b = Data(binary(), 3, {nullptr, I32({0, 2, 1, 3}), ExactBuffer("abc")});
  EXPECT_TRUE(IsInvalidWith(
      VF(b), "binary: offset 2 at position 1 is greater than the next offset 1"));
  auto ll = Data(large_list(int32()), 2, {nullptr, I64({0, 3, 2})}, {Int32Data(3)});
  EXPECT_TRUE(IsInvalidWith(VF(ll), "large_list: offset 3 at position 1"));
  auto ls = Data(large_utf8(), 2, {nullptr, I64({1, 0, 2}), ExactBuffer("ab")});
  EXPECT_TRUE(IsInvalidWith(VF(ls), "large_string: offset 1 at position 0"));
}

TEST(ValidateFullTest, StringsMustBeUtf8) {
  const char* kBad[] = {"\x80",
                        "\xC0\x80",
                        "\xC1\xBF",
                        "\xC3",
                        "\xE0\x80\x80",
                        "\xE0\x9F\xBF",
                        "\xED\xA0\x80",
                        "\xED\xBF\xBF",
                        "\xF0\x80\x80\x80",
                        "\xF0\x8F\xBF\xBF",
                        "\xF4\x90\x80\x80",
                        "\xF5\x80\x80\x80",
                        "\xFF",
                        "a\xE2\x82",
                        "\xE2\x28\xA1"};
  for (const char* bad : kBad) {
    SCOPED_TRACE(bad);
    const std::string bytes = std::string("ok") + bad + "x";
    const int32_t n = static_cast<int32_t>(bytes.size());
    auto d = StringData({0, 2, n - 1, n}, bytes);
    EXPECT_TRUE(V(d).ok());
    EXPECT_TRUE(IsInvalidWith(VF(d), "string: invalid UTF-8 in the value at position 1"));
    // The same bytes behind a null slot are not a value.
    auto masked = StringData({0, 2, n - 1, n}, bytes, BitmapOf({true, false, true}), 1);
    EXPECT_TRUE(VF(masked).ok()) << VF(masked).ToString();
    // Binary data may hold anything.
    auto bin = std::make_shared<ArrayData>(*d);
    bin->type = binary();
    EXPECT_TRUE(VF(bin).ok());
  }
  const char* kGood[] = {"",
                         "plain ascii text longer than sixteen bytes",
                         "\xC2\x80",
                         "\xDF\xBF",
                         "\xE0\xA0\x80",
                         "\xED\x9F\xBF",
                         "\xEE\x80\x80",
                         "\xEF\xBF\xBF",
                         "\xF0\x90\x80\x80",
                         "\xF4\x8F\xBF\xBF",
                         "h\xC3\xA9llo w\xC3\xB6rld \xE2\x82\xAC \xF0\x9F\x98\x80"};
  for (const char* good : kGood) {
    const std::string bytes = good;
    auto d = StringData({0, static_cast<int32_t>(bytes.size())}, bytes);
    EXPECT_TRUE(VF(d).ok()) << good;
  }
}

TEST(ValidateFullTest, EachStringIsValidOnItsOwn) {
  // "é" split over two values: the bytes together are valid UTF-8, each value is not.
  auto d = StringData({0, 1, 2}, "\xC3\xA9");
  EXPECT_TRUE(
      IsInvalidWith(VF(d), "invalid UTF-8 in the value at position 0 (byte 0 of 1)"));
  auto tail = StringData({0, 2, 3}, "a\xC3\xA9");
  EXPECT_TRUE(IsInvalidWith(VF(tail), "at position 0 (byte 1 of 2)"));
  auto large = Data(large_utf8(), 2, {nullptr, I64({0, 1, 3}), ExactBuffer("a\xFF\x41")});
  EXPECT_TRUE(
      IsInvalidWith(VF(large), "large_string: invalid UTF-8 in the value at position 1"));
}

TEST(ValidateFullTest, DictionaryIndicesInRange) {
  auto make = [](TypePtr index_type, std::string indices,
                 std::shared_ptr<Buffer> validity, int64_t nulls) {
    const int64_t n = static_cast<int64_t>(indices.size()) / index_type->byte_width();
    auto d = Data(dictionary(index_type, utf8()), n,
                  {std::move(validity), ExactBuffer(indices)}, {}, nulls);
    d->dictionary = StringData({0, 1, 2}, "ab");
    return d;
  };
  EXPECT_TRUE(VF(make(int8(), std::string("\0\1\1", 3), nullptr, 0)).ok());
  EXPECT_TRUE(IsInvalidWith(VF(make(int8(), std::string("\0\2\1", 3), nullptr, 0)),
                            "dictionary: index 2 at position 1 is out of bounds for a "
                            "dictionary of 2 values"));
  EXPECT_TRUE(IsInvalidWith(VF(make(int8(), std::string("\xFF", 1), nullptr, 0)),
                            "index -1 at position 0"));
  // A null slot's index is not looked at.
  EXPECT_TRUE(
      VF(make(int8(), std::string("\0\x7F", 2), BitmapOf({true, false}), 1)).ok());
  EXPECT_TRUE(IsInvalidWith(VF(make(uint8(), std::string("\xFF", 1), nullptr, 0)),
                            "index 255 at position 0"));
  EXPECT_TRUE(IsInvalidWith(VF(make(uint64(), std::string(8, '\xFF'), nullptr, 0)),
                            "index 18446744073709551615 at position 0"));
  EXPECT_TRUE(
      IsInvalidWith(VF(make(int32(), std::string("\1\0\0\0\0\0\0\x80", 8), nullptr, 0)),
                    "index -2147483648 at position 1"));
}

TEST(ValidateFullTest, MapKeysAreNotNull) {
  const TypePtr type = map(utf8(), int32());
  auto keys =
      StringData({0, 1, 2, 3, 4}, "abcd", BitmapOf({true, false, true, false}), 2);
  auto entries = Data(type->field(0)->type(), 4, {nullptr}, {keys, Int32Data(4)});
  auto m =
      Data(type, 3, {BitmapOf({true, true, false}), I32({0, 1, 3, 4})}, {entries}, 1);
  EXPECT_TRUE(V(m).ok());
  EXPECT_TRUE(IsInvalidWith(VF(m), "map: null key at entry 1 (map at position 1)"));
  // Entry 3 (a null key) belongs to a null map: fine once entry 1 is not null.
  keys->buffers[0] = BitmapOf({true, true, true, false});
  keys->null_count = 1;
  EXPECT_TRUE(VF(m).ok()) << VF(m).ToString();
}

TEST(ValidateFullTest, DecimalsFitTheirPrecision) {
  auto make = [](std::vector<Decimal128> values, std::shared_ptr<Buffer> validity,
                 int64_t nulls) {
    std::string bytes(values.size() * 16, '\0');
    for (size_t i = 0; i < values.size(); ++i) {
      values[i].ToBytes(reinterpret_cast<uint8_t*>(bytes.data()) + i * 16);
    }
    return Data(decimal128(3, 1), static_cast<int64_t>(values.size()),
                {std::move(validity), ExactBuffer(bytes)}, {}, nulls);
  };
  EXPECT_TRUE(VF(make({999, -999, 0}, nullptr, 0)).ok());
  EXPECT_TRUE(IsInvalidWith(VF(make({999, 1000}, nullptr, 0)),
                            "decimal128(3, 1): value 100.0 at position 1 does not fit "
                            "precision 3"));
  EXPECT_TRUE(IsInvalidWith(VF(make({-1000}, nullptr, 0)), "value -100.0 at position 0"));
  const Decimal128 min(std::numeric_limits<int64_t>::min(), 0);  // -2^127
  EXPECT_TRUE(IsInvalidWith(VF(make({min}, nullptr, 0)), "at position 0 does not fit"));
  EXPECT_TRUE(VF(make({5, min}, BitmapOf({true, false}), 1)).ok());
}

TEST(ValidateFullTest, TimesAndDates) {
  auto t32 = Data(time32(TimeUnit::kSecond), 3, {nullptr, I32({0, 86399, 86400})});
  EXPECT_TRUE(V(t32).ok());
  EXPECT_TRUE(IsInvalidWith(VF(t32),
                            "time32[s]: value 86400 at position 2 is outside a day "
                            "[0, 86400)"));
  auto t32ms = Data(time32(TimeUnit::kMilli), 1, {nullptr, I32({-1})});
  EXPECT_TRUE(IsInvalidWith(VF(t32ms), "time32[ms]: value -1 at position 0"));
  auto t64 = Data(time64(TimeUnit::kNano), 2, {nullptr, I64({86399999999999, 1})});
  EXPECT_TRUE(VF(t64).ok());
  t64->buffers[1] = I64({0, 86400000000000});
  EXPECT_TRUE(IsInvalidWith(VF(t64), "time64[ns]: value 86400000000000 at position 1"));
  t64->buffers[0] = BitmapOf({true, false});
  t64->null_count = 1;
  EXPECT_TRUE(VF(t64).ok());
  auto d64 = Data(date64(), 2, {nullptr, I64({86400000LL * 3, -86400000LL})});
  EXPECT_TRUE(VF(d64).ok());
  d64->buffers[1] = I64({0, 5});
  EXPECT_TRUE(IsInvalidWith(VF(d64),
                            "date64[ms]: value 5 at position 1 is not a whole number "
                            "of days"));
}

TEST(ValidateFullTest, ChildErrorsCarryTheirPath) {
  const TypePtr type = struct_({field("a", utf8())});
  auto s = Data(type, 1, {nullptr}, {StringData({0, 1}, "\xFF")});
  EXPECT_TRUE(V(s).ok());
  EXPECT_EQ(VF(s).message(),
            "struct field 0 'a': string: invalid UTF-8 in the value at position 0 "
            "(byte 0 of 1)");
  auto dict =
      Data(dictionary(int8(), utf8()), 1, {nullptr, ExactBuffer(std::string(1, '\0'))});
  dict->dictionary = StringData({0, 1}, "\xC0");
  EXPECT_TRUE(IsInvalidWith(VF(dict), "dictionary values: string: invalid UTF-8"));
  auto nested = ListData({0, 1}, dict, list(dictionary(int8(), utf8())));
  EXPECT_TRUE(
      IsInvalidWith(VF(nested), "list values: dictionary values: string: invalid"));
}

// ---------------------------------------------------------------------------
// Fuzz: random damage to valid arrays must give an error or a usable array,
// never a crash or an out-of-bounds read (run under ASan).

std::shared_ptr<Buffer> CopyExact(const std::shared_ptr<Buffer>& b) {
  return b == nullptr ? nullptr : ExactBuffer(b->view());
}

// A deep copy whose buffers are exact-size allocations.
ArrayDataPtr Exactify(const ArrayDataPtr& d) {
  if (d == nullptr) return nullptr;
  auto copy = std::make_shared<ArrayData>(*d);
  for (auto& b : copy->buffers) b = CopyExact(b);
  for (auto& c : copy->child_data) c = Exactify(c);
  copy->dictionary = Exactify(d->dictionary);
  return copy;
}

void Damage(ArrayData* d, std::mt19937_64& rng) {
  auto pick = [&](int64_t n) {  // uniform in [0, n), 0 if n <= 0
    return n <= 0 ? 0 : static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
  };
  switch (pick(10)) {
    case 0:
      d->length += pick(7) - 3;
      break;
    case 1:
      d->offset += pick(6) - 2;
      break;
    case 2:
      d->null_count = pick(d->length + 3) - 2;
      break;
    case 3:
      if (!d->buffers.empty()) d->buffers[pick(d->buffers.size())] = nullptr;
      break;
    case 4:
    case 5: {  // shrink or corrupt one buffer
      if (d->buffers.empty()) break;
      auto& b = d->buffers[pick(d->buffers.size())];
      if (b == nullptr || b->size() == 0) break;
      std::string bytes(b->view());
      if (pick(2) == 0) {
        bytes.resize(static_cast<size_t>(pick(b->size())));
      } else {
        bytes[static_cast<size_t>(pick(b->size()))] = static_cast<char>(rng());
      }
      b = ExactBuffer(bytes);
      break;
    }
    case 6:
      if (!d->child_data.empty()) {
        if (pick(2) == 0) {
          d->child_data.pop_back();
        } else {
          d->child_data[pick(d->child_data.size())] = nullptr;
        }
      }
      break;
    case 7:
      d->dictionary = pick(2) == 0 ? nullptr : Int32Data(2);
      break;
    case 8: {  // the same buffers read as another type
      const std::vector<TypePtr> types = AllTypes();
      d->type = types[pick(types.size())];
      break;
    }
    default:
      d->buffers.push_back(nullptr);
  }
}

ArrayDataPtr DamageSomewhere(const ArrayDataPtr& d, std::mt19937_64& rng) {
  auto copy = std::make_shared<ArrayData>(*d);
  const bool descend = (!copy->child_data.empty() || copy->dictionary) && rng() % 2 == 0;
  if (!descend) {
    Damage(copy.get(), rng);
  } else if (copy->dictionary && (copy->child_data.empty() || rng() % 2 == 0)) {
    copy->dictionary = DamageSomewhere(copy->dictionary, rng);
  } else {
    auto& child = copy->child_data[rng() % copy->child_data.size()];
    if (child != nullptr) child = DamageSomewhere(child, rng);
  }
  return copy;
}

bool HasFloats(const DataType& t) {
  if (IsFloating(t.id())) return true;
  if (t.id() == TypeId::kDictionary) return HasFloats(*t.value_type());
  for (const FieldPtr& f : t.fields()) {
    if (HasFloats(*f->type())) return true;
  }
  return false;
}

constexpr int kFuzzIterations = 20000;
constexpr uint64_t kFuzzSeed = 20240611;

TEST(ValidateFuzzTest, DamagedArraysNeverCrash) {
  std::vector<ArrayDataPtr> seeds;
  for (const TypePtr& type : AllTypes()) {
    auto b = MakeBuilder(type).ValueOrDie();
    ASSERT_TRUE(b->AppendEmptyValues(2).ok());
    ASSERT_TRUE(b->AppendNulls(1).ok());
    ASSERT_TRUE(b->AppendEmptyValues(2).ok());
    seeds.push_back(Exactify(b->Finish().ValueOrDie()->data()));
  }
  seeds.push_back(
      Exactify(test::Strings({"a\xC3\xA9", std::nullopt, "xyz", ""})->data()));
  auto lists = test::ListOfInt64({OptInts{1, 2}, std::nullopt, OptInts{3, std::nullopt}});
  seeds.push_back(Exactify(lists->data()));
  auto strings = test::Strings({"p", "\xE2\x82\xAC", std::nullopt});
  seeds.push_back(
      Exactify(StructArray::Make({lists, strings}, {"l", "s"}).ValueOrDie()->data()));
  DictionaryBuilder dict(dictionary(int8(), utf8()));
  for (const char* v : {"a", "bc", "", "a"}) {
    ASSERT_TRUE((*v ? dict.Append(std::string_view(v)) : dict.AppendNull()).ok());
  }
  seeds.push_back(Exactify(dict.Finish().ValueOrDie()->data()));
  MapBuilder map(nullptr, std::make_shared<StringBuilder>(),
                 std::make_shared<Int64Builder>());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(map.Append().ok());
    for (int k = 0; k < i + 1; ++k) {
      ASSERT_TRUE(static_cast<StringBuilder*>(map.key_builder())->Append("k").ok());
      ASSERT_TRUE(static_cast<Int64Builder*>(map.item_builder())->Append(k).ok());
    }
  }
  seeds.push_back(Exactify(map.Finish().ValueOrDie()->data()));
  std::mt19937_64 rng(kFuzzSeed);
  int valid = 0;
  for (int iter = 0; iter < kFuzzIterations; ++iter) {
    const ArrayDataPtr& seed = seeds[iter % seeds.size()];
    ArrayDataPtr d = DamageSomewhere(seed, rng);
    if (rng() % 3 == 0) d = DamageSomewhere(d, rng);
    if (!internal::ValidateArrayData(*d).ok()) continue;
    ArrayPtr a = MakeArray(d);
    std::string text = a->ToString();
    EXPECT_FALSE(text.empty());
    for (int64_t i = 0; i < a->length(); ++i) {
      const std::string value = FormatValue(*a, i);
      if (a->IsNull(i)) {
        EXPECT_EQ(value, "null");
      }
    }
    if (!a->ValidateFull().ok()) continue;
    ++valid;
    // A deep copy compares value by value (no identity shortcut); only a NaN
    // can make an array differ from its copy.
    EXPECT_TRUE(a->Equals(*MakeArray(Exactify(d))) || HasFloats(*a->type()));
    (void)a->Equals(*MakeArray(seed));
  }
  EXPECT_GT(valid, 100);  // the loop exercised the post-validation paths too
}

}  // namespace
}  // namespace quiver
