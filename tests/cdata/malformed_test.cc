// Malformed structures from a buggy producer: every one is an error that
// names what is wrong, is released exactly once, and never crashes.
#include <gtest/gtest.h>

#include <cstring>
#include <tuple>

#include "cdata_test_util.h"
#include "columnar/c_data/c_data_internal.h"
#include "quiver/columnar/pretty_print.h"

namespace quiver {
namespace {

using cdata_test::FakeArraySpec;
using cdata_test::FakeSchemaSpec;
using cdata_test::MakeFakeArray;
using cdata_test::MakeFakeSchema;
using cdata_test::ReleaseCounter;

::testing::AssertionResult FailsWith(const Status& st, StatusCode code,
                                     const std::string& what) {
  if (st.ok()) return ::testing::AssertionFailure() << "expected an error, got OK";
  if (st.code() != code) {
    return ::testing::AssertionFailure() << "wrong code: " << st.ToString();
  }
  if (st.message().find(what) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "'" << st.message() << "' does not mention '" << what << "'";
  }
  return ::testing::AssertionSuccess();
}

// Imports the type of `spec`; checks the error and the single release.
void ExpectBadSchema(const FakeSchemaSpec& spec, StatusCode code,
                     const std::string& what) {
  ReleaseCounter counter;
  ArrowSchema c;
  MakeFakeSchema(spec, &counter, &c);
  auto type = ImportType(&c);
  EXPECT_TRUE(FailsWith(type.status(), code, what));
  EXPECT_EQ(c.release, nullptr);
  EXPECT_GE(counter.calls, 1);
}

TEST(CDataMalformedTest, BadFormatStringsAreNamed) {
  const std::vector<std::string> invalid = {
      "",           "q",      "ii",    "d:",       "d:5",       "d:a,2",
      "d:5,2,",     "d:39,2", "d:0,1", "d:5,2,99", "d:10,2,32", "d:19,0,64",
      "d:77,0,256", "w:",     "w:-1",  "w:x",      "w:1.5",     "+w:",
      "+w:-3",      "tsu",    "tsx:",  "tdX",      "ttx",       "tDq",
      "tdDD",       "+x",     "+",     "tiX",      "t",         "\x01\xff"};
  for (const std::string& f : invalid) {
    SCOPED_TRACE(f);
    ExpectBadSchema({.format = f}, StatusCode::kInvalid,
                    "invalid format string " + internal::QuoteForMessage(f));
  }
}

// Run-end encoded: "+r" and two children, the first int16, int32 or int64.
TEST(CDataMalformedTest, BadRunEndEncodedSchemas) {
  ExpectBadSchema({.format = "+r"}, StatusCode::kInvalid, "takes 2 children, got 0");
  ExpectBadSchema({.format = "+r", .children = {{.format = "i"}}}, StatusCode::kInvalid,
                  "takes 2 children, got 1");
  ExpectBadSchema({.format = "+r", .children = {{.format = "c"}, {.format = "u"}}},
                  StatusCode::kInvalid, "run ends must be int16, int32 or int64");
  ExpectBadSchema({.format = "+r", .children = {{.format = "u"}, {.format = "u"}}},
                  StatusCode::kInvalid, "run ends must be int16, int32 or int64");
  ReleaseCounter counter;
  ArrowSchema c;
  MakeFakeSchema({.format = "+r",
                  .children = {{.format = "s", .name = "run_ends", .flags = 0},
                               {.format = "u", .name = "values"}}},
                 &counter, &c);
  auto type = ImportType(&c);
  ASSERT_TRUE(type.ok()) << type.status().ToString();
  EXPECT_TRUE((*type)->Equals(*run_end_encoded(int16(), utf8())));
}

TEST(CDataMalformedTest, BadSchemaStructure) {
  ExpectBadSchema({.format = "i", .null_format = true}, StatusCode::kInvalid,
                  "no format string");
  ExpectBadSchema({.format = "+l"}, StatusCode::kInvalid, "takes 1 children, got 0");
  ExpectBadSchema({.format = "+vl"}, StatusCode::kInvalid, "takes 1 children, got 0");
  ExpectBadSchema({.format = "+vL", .children = {{.format = "i"}, {.format = "i"}}},
                  StatusCode::kInvalid, "takes 1 children, got 2");
  ExpectBadSchema({.format = "i", .children = {{.format = "i"}}}, StatusCode::kInvalid,
                  "takes 0 children, got 1");
  ExpectBadSchema({.format = "+s", .n_children = -1}, StatusCode::kInvalid,
                  "negative child count");
  ExpectBadSchema({.format = "+s", .n_children = 2}, StatusCode::kInvalid,
                  "no children array");
  ExpectBadSchema({.format = "+m", .children = {{.format = "i"}}}, StatusCode::kInvalid,
                  "map entries must be a struct of 2 fields");
  ExpectBadSchema(
      {.format = "+m",
       .children = {{.format = "+s",
                     .children = {{.format = "u"}, {.format = "i"}, {.format = "i"}}}}},
      StatusCode::kInvalid, "map entries must be a struct of 2 fields");
  ExpectBadSchema(
      {.format = "u",
       .dictionary = std::make_shared<FakeSchemaSpec>(FakeSchemaSpec{.format = "u"})},
      StatusCode::kInvalid, "is not an integer type");
  ExpectBadSchema(
      {.format = "i",
       .dictionary = std::make_shared<FakeSchemaSpec>(FakeSchemaSpec{.format = "zz"})},
      StatusCode::kInvalid, "dictionary");
  // A decimal128 with a precision beyond 38 is refused by the type itself.
  ExpectBadSchema({.format = "d:40,2"}, StatusCode::kInvalid, "d:40,2");
  // A schema (as opposed to a type) must be a struct.
  ReleaseCounter counter;
  ArrowSchema c;
  MakeFakeSchema({.format = "i"}, &counter, &c);
  EXPECT_TRUE(FailsWith(ImportSchema(&c).status(), StatusCode::kInvalid, "'+s'"));
  EXPECT_EQ(counter.calls, 1);
}

// Union formats: "+us:" / "+ud:" and one type code in [0, 127] per child.
TEST(CDataMalformedTest, BadUnionFormats) {
  for (const std::string f : {"+us:x", "+ud:1,", "+us:128", "+ud:-1", "+us:1,,2"}) {
    SCOPED_TRACE(f);
    ExpectBadSchema({.format = f}, StatusCode::kInvalid,
                    "invalid format string " + internal::QuoteForMessage(f));
  }
  ExpectBadSchema({.format = "+us:0,1", .children = {{.format = "i"}}},
                  StatusCode::kInvalid, "lists 2 type codes for 1 children");
  ExpectBadSchema({.format = "+ud:3,3", .children = {{.format = "i"}, {.format = "u"}}},
                  StatusCode::kInvalid, "type code 3 appears twice");
  // Well-formed ones, non-contiguous codes included.
  ReleaseCounter counter;
  ArrowSchema c;
  MakeFakeSchema({.format = "+ud:7,0", .children = {{.format = "i"}, {.format = "u"}}},
                 &counter, &c);
  auto type = ImportType(&c);
  ASSERT_TRUE(type.ok()) << type.status().ToString();
  EXPECT_EQ((*type)->id(), TypeId::kDenseUnion);
  EXPECT_EQ((*type)->type_codes(), (std::vector<int8_t>{7, 0}));
  EXPECT_EQ(counter.calls, 3);  // the base and its two children
}

TEST(CDataMalformedTest, ReleasedChildSchema) {
  ReleaseCounter counter;
  ArrowSchema c;
  MakeFakeSchema({.format = "+s", .children = {{.format = "i"}, {.format = "u"}}},
                 &counter, &c);
  c.children[1]->release(c.children[1]);  // as if it had been moved out
  EXPECT_TRUE(FailsWith(ImportType(&c).status(), StatusCode::kInvalid,
                        "schema child 1 is released"));
  EXPECT_EQ(counter.calls, 3);  // the test's release of child 1, then the base's two
}

TEST(CDataMalformedTest, CyclicSchemaHitsTheDepthLimit) {
  ReleaseCounter counter;
  ArrowSchema c;
  MakeFakeSchema({.format = "+l", .children = {{.format = "i"}}}, &counter, &c);
  // The list's child points back at... a list whose child is itself.
  ArrowSchema* child = c.children[0];
  static const char kList[] = "+l";
  child->format = kList;
  child->n_children = 1;
  ArrowSchema* self[] = {child};
  child->children = self;
  EXPECT_TRUE(FailsWith(ImportType(&c).status(), StatusCode::kInvalid, "deeper than"));
  EXPECT_EQ(counter.calls, 2);
}

TEST(CDataMalformedTest, NegativeMetadataLengths) {
  // Metadata of a child field (ImportType ignores the root's own).
  const std::string negative_count("\xff\xff\xff\xff", 4);
  ExpectBadSchema(
      {.format = "+s", .children = {{.format = "i", .metadata = negative_count}}},
      StatusCode::kInvalid, "negative pair count");
  const std::string negative_key("\x01\x00\x00\x00\xfe\xff\xff\xff", 8);
  ExpectBadSchema(
      {.format = "+s", .children = {{.format = "i", .metadata = negative_key}}},
      StatusCode::kInvalid, "negative length");
  ReleaseCounter counter;
  ArrowSchema c;
  MakeFakeSchema({.format = "i", .metadata = negative_count}, &counter, &c);
  EXPECT_TRUE(FailsWith(ImportField(&c).status(), StatusCode::kInvalid, "negative"));
  EXPECT_EQ(counter.calls, 1);
}

// ---- Arrays ----

struct Bytes {
  std::vector<int32_t> i32 = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<int32_t> offsets = {0, 2, 5, 5, 9};
  std::vector<uint8_t> validity = {0xff};
  std::string chars = "abcdefghi";
};

void ExpectBadArray(const FakeArraySpec& spec, const TypePtr& type,
                    const std::string& what) {
  ReleaseCounter counter;
  ArrowArray c;
  MakeFakeArray(spec, &counter, &c);
  auto array = ImportArray(&c, type);
  EXPECT_TRUE(FailsWith(array.status(), StatusCode::kInvalid, what));
  EXPECT_EQ(c.release, nullptr);
  EXPECT_GE(counter.calls, 1);
}

TEST(CDataMalformedTest, BadCountsAndLengths) {
  Bytes b;
  const void* i32 = b.i32.data();
  ExpectBadArray({.length = -1, .buffers = {nullptr, i32}}, int32(), "negative length");
  ExpectBadArray({.length = 2, .offset = -3, .buffers = {nullptr, i32}}, int32(),
                 "negative offset");
  ExpectBadArray({.length = 2, .null_count = 3, .buffers = {nullptr, i32}}, int32(),
                 "null_count 3 outside");
  ExpectBadArray({.length = 2, .null_count = -2, .buffers = {nullptr, i32}}, int32(),
                 "null_count -2 outside");
  ExpectBadArray({.length = INT64_MAX, .offset = 5, .buffers = {nullptr, i32}}, int32(),
                 "overflows");
  ExpectBadArray({.length = 2, .buffers = {nullptr}}, int32(),
                 "has 1 buffers, expected 2");
  ExpectBadArray({.length = 2, .buffers = {nullptr, i32, i32}}, int32(),
                 "has 3 buffers, expected 2");
  ExpectBadArray({.length = 2, .buffers = {nullptr}}, null(),
                 "has 1 buffers, expected 0");
  ExpectBadArray({.length = 2, .buffers = {nullptr, i32}, .null_buffers_array = true},
                 int32(), "no buffers array");
  ExpectBadArray({.length = 2, .buffers = {nullptr, i32}, .children = {{.length = 2}}},
                 int32(), "has 1 children, expected 0");
  ExpectBadArray({.length = 2, .buffers = {nullptr, i32}}, list(int32()),
                 "has 0 children, expected 1");
  ExpectBadArray(
      {.length = 0, .buffers = {nullptr}, .n_children = 2, .null_children_array = true},
      struct_({field("a", int8()), field("b", int8())}), "no children array");
}

TEST(CDataMalformedTest, NullBuffersWhereDataIsNeeded) {
  Bytes b;
  ExpectBadArray({.length = 3, .buffers = {nullptr, nullptr}}, int32(),
                 "values buffer (1) is NULL but 12 bytes are needed");
  ExpectBadArray({.length = 3, .offset = 2, .buffers = {nullptr, nullptr}}, boolean(),
                 "values buffer (1) is NULL but 1 bytes are needed");
  ExpectBadArray({.length = 3, .null_count = 1, .buffers = {nullptr, b.i32.data()}},
                 int32(), "null_count 1 but no validity bitmap");
  ExpectBadArray({.length = 2, .buffers = {nullptr, nullptr, b.chars.data()}}, utf8(),
                 "offsets buffer (1) is NULL");
  ExpectBadArray({.length = 4, .buffers = {nullptr, b.offsets.data(), nullptr}}, utf8(),
                 "data buffer (2) is NULL but 9 bytes are needed");
  ExpectBadArray(
      {.length = 2, .buffers = {nullptr, nullptr}, .children = {{.length = 0}}},
      list(null()), "offsets buffer (1) is NULL");
}

TEST(CDataMalformedTest, NullBuffersWhereTheyWouldBeEmptyAreFine) {
  // The specification allows NULL for the validity bitmap without nulls
  // and for any buffer whose size would be 0.
  for (const TypePtr& type : {int32(), utf8(), large_binary(), list(int8()), boolean()}) {
    SCOPED_TRACE(type->ToString());
    ReleaseCounter counter;
    ArrowArray c;
    FakeArraySpec spec;
    spec.buffers.assign(static_cast<size_t>(LayoutBufferCount(type->id())), nullptr);
    if (type->id() == TypeId::kList)
      spec.children = {{.length = 0, .buffers = {nullptr, nullptr}}};
    MakeFakeArray(spec, &counter, &c);
    auto array = ImportArray(&c, type);
    ASSERT_TRUE(array.ok()) << array.status().ToString();
    EXPECT_TRUE((*array)->ValidateFull().ok());
    EXPECT_EQ((*array)->length(), 0);
  }
  // Strings whose values are all empty need no data buffer.
  std::vector<int32_t> zeros = {0, 0, 0};
  ReleaseCounter counter;
  ArrowArray c;
  MakeFakeArray({.length = 2, .buffers = {nullptr, zeros.data(), nullptr}}, &counter, &c);
  auto array = ImportArray(&c, utf8());
  ASSERT_TRUE(array.ok()) << array.status().ToString();
  EXPECT_EQ(static_cast<const StringArray&>(**array).GetView(1), "");
}

TEST(CDataMalformedTest, OffsetsBeyondTheData) {
  Bytes b;
  // The first offset after the last one.
  std::vector<int32_t> backwards = {6, 2};
  ExpectBadArray({.length = 1, .buffers = {nullptr, backwards.data(), b.chars.data()}},
                 utf8(), "first offset 6 is greater than the last offset 2");
  // A negative last offset.
  std::vector<int32_t> negative = {0, -4};
  ExpectBadArray({.length = 1, .buffers = {nullptr, negative.data(), b.chars.data()}},
                 utf8(), "last offset -4 is negative");
  // List offsets beyond the child array.
  ExpectBadArray({.length = 4,
                  .buffers = {nullptr, b.offsets.data()},
                  .children = {{.length = 5, .buffers = {nullptr, b.i32.data()}}}},
                 list(int32()), "beyond the end of the child array");
  // A struct child shorter than the struct.
  ExpectBadArray({.length = 3,
                  .buffers = {nullptr},
                  .children = {{.length = 2, .buffers = {nullptr, b.i32.data()}}}},
                 struct_({field("a", int32())}), "has length 2, less than");
  // A fixed-size list whose child is too short.
  ExpectBadArray({.length = 3,
                  .buffers = {nullptr},
                  .children = {{.length = 5, .buffers = {nullptr, b.i32.data()}}}},
                 fixed_size_list(int32(), 2),
                 "child array has 5 values but 6 are needed");
}

TEST(CDataMalformedTest, DictionaryMismatches) {
  Bytes b;
  ExpectBadArray({.length = 2, .buffers = {nullptr, b.i32.data()}},
                 dictionary(int32(), utf8()), "has no dictionary");
  auto dict = std::make_shared<FakeArraySpec>(
      FakeArraySpec{.length = 1, .buffers = {nullptr, b.i32.data()}});
  ExpectBadArray({.length = 2, .buffers = {nullptr, b.i32.data()}, .dictionary = dict},
                 int32(), "has a dictionary but is not dictionary-encoded");
  // The dictionary's own layout is checked too.
  auto bad_dict =
      std::make_shared<FakeArraySpec>(FakeArraySpec{.length = 1, .buffers = {nullptr}});
  ExpectBadArray(
      {.length = 2, .buffers = {nullptr, b.i32.data()}, .dictionary = bad_dict},
      dictionary(int32(), int64()), "array > dictionary of type int64 has 1 buffers");
}

TEST(CDataMalformedTest, ReleasedOrMissingChildArrays) {
  Bytes b;
  ReleaseCounter counter;
  ArrowArray c;
  MakeFakeArray({.length = 2,
                 .buffers = {nullptr},
                 .children = {{.length = 2, .buffers = {nullptr, b.i32.data()}},
                              {.length = 2, .buffers = {nullptr, b.i32.data()}}}},
                &counter, &c);
  c.children[0]->release(c.children[0]);  // moved out by someone
  auto array = ImportArray(&c, struct_({field("a", int32()), field("b", int32())}));
  EXPECT_TRUE(FailsWith(array.status(), StatusCode::kInvalid,
                        "array > struct field 0 'a' is released"));
  EXPECT_EQ(counter.calls, 3);

  ReleaseCounter counter2;
  MakeFakeArray({.length = 2,
                 .buffers = {nullptr},
                 .children = {{.length = 2, .buffers = {nullptr, b.i32.data()}}}},
                &counter2, &c);
  c.children[0] = nullptr;
  array = ImportArray(&c, struct_({field("a", int32())}));
  EXPECT_TRUE(FailsWith(array.status(), StatusCode::kInvalid, "is a NULL pointer"));
  EXPECT_EQ(counter2.calls, 2);
}

// Unions have no validity buffer: 1 buffer (type ids) sparse, 2 (type ids,
// offsets) dense; no nulls of their own; the type ids and offsets must be
// there and, after the import's full validation, name real children.
TEST(CDataMalformedTest, UnionBuffersAndContent) {
  Bytes b;
  const auto sparse = sparse_union({field("a", int32()), field("b", int32())}, {1, 4});
  const auto dense = dense_union({field("a", int32()), field("b", int32())}, {1, 4});
  std::vector<int8_t> codes = {1, 4, 4, 1};
  std::vector<int8_t> bad_codes = {1, 4, 2, 1};
  std::vector<int32_t> offsets = {0, 0, 1, 9};
  const FakeArraySpec child{.length = 8, .buffers = {nullptr, b.i32.data()}};
  ExpectBadArray(
      {.length = 4, .buffers = {nullptr, codes.data()}, .children = {child, child}},
      sparse, "has 2 buffers, expected 1");
  ExpectBadArray({.length = 4, .buffers = {codes.data()}, .children = {child, child}},
                 dense, "has 1 buffers, expected 2");
  ExpectBadArray({.length = 4,
                  .null_count = 1,
                  .buffers = {codes.data()},
                  .children = {child, child}},
                 sparse, "null_count 1: a union has no nulls of its own");
  ExpectBadArray({.length = 4, .buffers = {nullptr}, .children = {child, child}}, sparse,
                 "type ids buffer (0) is NULL but 4 bytes are needed");
  ExpectBadArray(
      {.length = 4, .buffers = {codes.data(), nullptr}, .children = {child, child}},
      dense, "offsets buffer (1) is NULL but 16 bytes are needed");
  ExpectBadArray({.length = 4, .buffers = {codes.data()}, .children = {child}}, sparse,
                 "has 1 children, expected 2");
  const FakeArraySpec short_child{.length = 3, .buffers = {nullptr, b.i32.data()}};
  ExpectBadArray(
      {.length = 4, .buffers = {codes.data()}, .children = {child, short_child}}, sparse,
      "sparse_union field 1 'b' has length 3, less than offset 0");
  // Content: full validation is the caller's (ImportArray runs Validate).
  for (const auto& [spec, type, what] :
       std::vector<std::tuple<FakeArraySpec, TypePtr, std::string>>{
           {{.length = 4, .buffers = {bad_codes.data()}, .children = {child, child}},
            sparse,
            "type code 2 at position 2"},
           {{.length = 4,
           .buffers = {codes.data(), offsets.data()},
           .children = {child, short_child}},
            dense,
            "offset 9 at position 3 is outside dense_union field 0 'a' (8 values)"}}) {
    ReleaseCounter counter;
    ArrowArray c;
    MakeFakeArray(spec, &counter, &c);
    auto array = ImportArray(&c, type);
    ASSERT_TRUE(array.ok()) << array.status().ToString();
    EXPECT_TRUE(FailsWith((*array)->ValidateFull(), StatusCode::kInvalid, what));
  }
}

// List views: 3 buffers (validity, offsets, sizes) covering offset + length
// slots, one child; after the import, full validation checks each view.
TEST(CDataMalformedTest, ListViewBuffersAndContent) {
  Bytes b;
  std::vector<int32_t> offsets = {0, 2, 1, 4};
  std::vector<int32_t> sizes = {2, 3, 0, 4};  // the last one ends at 8: fine
  std::vector<int32_t> bad_sizes = {2, 3, 0, 5};
  std::vector<int64_t> large = {0, 2, 1, 4};
  const FakeArraySpec child{.length = 8, .buffers = {nullptr, b.i32.data()}};
  const auto lv = list_view(int32());
  ExpectBadArray({.length = 4, .buffers = {nullptr, offsets.data()}, .children = {child}},
                 lv, "has 2 buffers, expected 3");
  ExpectBadArray(
      {.length = 4, .buffers = {nullptr, nullptr, sizes.data()}, .children = {child}}, lv,
      "offsets buffer (1) is NULL but 16 bytes are needed");
  ExpectBadArray(
      {.length = 4, .buffers = {nullptr, large.data(), nullptr}, .children = {child}},
      large_list_view(int32()), "sizes buffer (2) is NULL but 32 bytes");
  ExpectBadArray({.length = 4, .buffers = {nullptr, offsets.data(), sizes.data()}}, lv,
                 "has 0 children, expected 1");
  {
    ReleaseCounter counter;
    ArrowArray c;
    MakeFakeArray({.length = 4,
                   .buffers = {nullptr, offsets.data(), sizes.data()},
                   .children = {child}},
                  &counter, &c);
    auto array = ImportArray(&c, lv);
    ASSERT_TRUE(array.ok()) << array.status().ToString();
    ASSERT_TRUE((*array)->ValidateFull().ok());
  }
  ReleaseCounter counter;
  ArrowArray c;
  MakeFakeArray({.length = 4,
                 .buffers = {nullptr, offsets.data(), bad_sizes.data()},
                 .children = {child}},
                &counter, &c);
  auto array = ImportArray(&c, lv);
  ASSERT_TRUE(array.ok()) << array.status().ToString();
  EXPECT_TRUE(FailsWith((*array)->ValidateFull(), StatusCode::kInvalid,
                        "view at position 3 (offset 4, size 5) ends beyond the child "
                        "array (8 values)"));
}

// Run-end encoded arrays: no buffers, no nulls of their own, two children
// whose run ends are non-null, as many as the values, and reach offset +
// length; after the import, full validation checks that they increase.
TEST(CDataMalformedTest, RunEndEncodedBuffersAndContent) {
  Bytes b;
  std::vector<int32_t> ends = {2, 5, 7};
  std::vector<int32_t> down = {4, 2, 7};
  std::vector<uint8_t> one_null = {0x05};  // run end 1 null
  const FakeArraySpec values{.length = 3, .buffers = {nullptr, b.i32.data()}};
  const FakeArraySpec run_ends{.length = 3, .buffers = {nullptr, ends.data()}};
  const auto ree = run_end_encoded(int32(), int32());
  ExpectBadArray({.length = 7, .buffers = {nullptr}, .children = {run_ends, values}}, ree,
                 "has 1 buffers, expected 0");
  ExpectBadArray({.length = 7, .null_count = 2, .children = {run_ends, values}}, ree,
                 "has no nulls of its own");
  ExpectBadArray({.length = 7, .children = {run_ends}}, ree,
                 "has 1 children, expected 2");
  ExpectBadArray({.length = 7,
                  .children = {{.length = 3,
                                .null_count = 1,
                                .buffers = {one_null.data(), ends.data()}},
                               values}},
                 ree, "run ends must not be null");
  ExpectBadArray({.length = 8, .children = {run_ends, values}}, ree,
                 "the last run end 7 is less than offset 0 + length 8");
  ExpectBadArray({.length = 3, .offset = 5, .children = {run_ends, values}}, ree,
                 "the last run end 7 is less than offset 5 + length 3");
  ExpectBadArray(
      {.length = 7,
       .children = {run_ends, {.length = 2, .buffers = {nullptr, b.i32.data()}}}},
      ree, "3 run ends but 2 values");
  ExpectBadArray(
      {.length = 7, .children = {{.length = 3, .buffers = {nullptr, nullptr}}, values}},
      ree, "values buffer (1) is NULL but 12 bytes are needed");
  {
    ReleaseCounter counter;
    ArrowArray c;
    MakeFakeArray({.length = 4, .offset = 3, .children = {run_ends, values}}, &counter,
                  &c);
    auto array = ImportArray(&c, ree);
    ASSERT_TRUE(array.ok()) << array.status().ToString();
    ASSERT_TRUE((*array)->ValidateFull().ok());
    EXPECT_EQ(FormatValue(**array, 2), "2");  // slot 5: the third run
  }
  ReleaseCounter counter;
  ArrowArray c;
  MakeFakeArray({.length = 7,
                 .children = {{.length = 3, .buffers = {nullptr, down.data()}}, values}},
                &counter, &c);
  auto array = ImportArray(&c, ree);
  ASSERT_TRUE(array.ok()) << array.status().ToString();
  EXPECT_TRUE(FailsWith((*array)->ValidateFull(), StatusCode::kInvalid,
                        "run end 1 (2) is not greater than run end 0 (4)"));
}

TEST(CDataMalformedTest, ImportAgainstTheWrongType) {
  // Nothing in an ArrowArray says its type: a struct of the wrong shape
  // must still fail cleanly.
  Bytes b;
  ExpectBadArray({.length = 4, .buffers = {nullptr, b.offsets.data(), b.chars.data()}},
                 int32(), "has 3 buffers, expected 2");
  ExpectBadArray({.length = 2, .buffers = {nullptr, b.i32.data()}},
                 struct_({field("a", int8())}), "has 2 buffers, expected 1");
}

}  // namespace
}  // namespace quiver
