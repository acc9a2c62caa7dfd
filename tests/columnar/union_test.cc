// sparse_union and dense_union: types (type codes, text, equality), the
// builder, accessors, Validate and ValidateFull (buffer sizes, child
// lengths, type codes, dense offsets), equality by value, slices, printing,
// concatenation and the C Data and IPC forms (AllTypes covers the rest of
// the round trips).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "array_test_helpers.h"
#include "common/status_macros.h"
#include "quiver/columnar/array.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/c_data.h"
#include "quiver/columnar/concatenate.h"
#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc.h"
#include "quiver/columnar/pretty_print.h"

namespace quiver {
namespace {

using test::BufferOf;
using test::Int32s;
using test::IsInvalidWith;
using test::Strings;

TypePtr SparseType() {
  return sparse_union({field("i", int32()), field("s", utf8())}, {2, 5});
}
TypePtr DenseType() {
  return dense_union({field("i", int32()), field("s", utf8())}, {2, 5});
}

// [1, "a", null (of i), "bcd", 5, null (of s)] through the builder.
ArrayPtr BuildSample(const TypePtr& type) {
  auto b = MakeBuilder(type).ValueOrDie();
  auto* u = static_cast<UnionBuilder*>(b.get());
  auto* ints = static_cast<Int32Builder*>(u->builder_for(2));
  auto* strs = static_cast<StringBuilder*>(u->builder_for(5));
  EXPECT_TRUE(u->Append(2).ok());
  EXPECT_TRUE(ints->Append(1).ok());
  EXPECT_TRUE(u->Append(5).ok());
  EXPECT_TRUE(strs->Append("a").ok());
  EXPECT_TRUE(u->AppendNull().ok());
  EXPECT_TRUE(u->Append(5).ok());
  EXPECT_TRUE(strs->Append("bcd").ok());
  EXPECT_TRUE(u->Append(2).ok());
  EXPECT_TRUE(ints->Append(5).ok());
  EXPECT_TRUE(u->Append(5).ok());
  EXPECT_TRUE(strs->AppendNull().ok());
  return u->Finish().ValueOrDie();
}

TEST(Unions, Types) {
  EXPECT_EQ(SparseType()->ToString(), "sparse_union<i: int32=2, s: string=5>");
  EXPECT_EQ(DenseType()->ToString(), "dense_union<i: int32=2, s: string=5>");
  EXPECT_EQ(sparse_union({field("a", int8())})->type_codes(), std::vector<int8_t>{0});
  EXPECT_TRUE(SparseType()->Equals(*SparseType()));
  EXPECT_FALSE(SparseType()->Equals(*DenseType()));
  EXPECT_FALSE(SparseType()->Equals(
      *sparse_union({field("i", int32()), field("s", utf8())}, {2, 6})));
  EXPECT_EQ(SparseType()->child_id(5), 1);
  EXPECT_EQ(SparseType()->child_id(3), -1);
  EXPECT_EQ(SparseType()->child_id(-1), -1);
  EXPECT_EQ(int32()->child_id(0), -1);  // not a union: no code names a child
  EXPECT_TRUE(IsUnion(TypeId::kDenseUnion));
  EXPECT_TRUE(IsNested(TypeId::kSparseUnion));
  EXPECT_EQ(LayoutBufferCount(TypeId::kSparseUnion), 1);
  EXPECT_EQ(LayoutBufferCount(TypeId::kDenseUnion), 2);
  EXPECT_TRUE(IsInvalidWith(
      MakeSparseUnion({field("a", int8()), field("b", int8())}, {1, 1}).status(),
      "appears twice"));
  EXPECT_TRUE(
      IsInvalidWith(MakeDenseUnion({field("a", int8())}, {-3}).status(), "negative"));
  EXPECT_TRUE(IsInvalidWith(MakeDenseUnion({field("a", int8())}, {1, 2}).status(),
                            "2 type codes"));
  FieldVector many;
  for (int k = 0; k < 129; ++k) many.push_back(field("f", int8()));
  EXPECT_TRUE(IsInvalidWith(MakeSparseUnion(many).status(), "at most 128"));
  many.pop_back();
  ASSERT_OK_AND_ASSIGN(auto widest, MakeSparseUnion(many));
  EXPECT_EQ(widest->child_id(127), 127);
}

TEST(Unions, BuilderAndAccessors) {
  for (const TypePtr& type : {SparseType(), DenseType()}) {
    SCOPED_TRACE(type->ToString());
    auto array = BuildSample(type);
    ASSERT_OK(array->ValidateFull());
    const auto& u = static_cast<const UnionArray&>(*array);
    ASSERT_EQ(u.length(), 6);
    EXPECT_EQ(u.null_count(), 0);  // no validity bitmap of its own
    EXPECT_EQ(u.data()->buffers[0], nullptr);
    const std::vector<int8_t> codes = {2, 5, 2, 5, 2, 5};
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(u.type_code(i), codes[i]) << i;
    EXPECT_EQ(u.child_id(1), 1);
    EXPECT_TRUE(u.IsNullValue(2));
    EXPECT_TRUE(u.IsNullValue(5));
    EXPECT_FALSE(u.IsNullValue(3));
    // field() makes a new Array each time: hold them while reading.
    const ArrayPtr str_field = u.field(1), int_field = u.field(0);
    const auto& strs = static_cast<const StringArray&>(*str_field);
    EXPECT_EQ(strs.GetString(u.child_index(3)), "bcd");
    const auto& ints = static_cast<const Int32Array&>(*int_field);
    EXPECT_EQ(ints.Value(u.child_index(4)), 5);
    if (u.is_dense()) {
      EXPECT_EQ(u.field(0)->length(), 3);
      EXPECT_EQ(u.field(1)->length(), 3);
      EXPECT_EQ(u.value_offset(3), 1);
    } else {
      EXPECT_EQ(u.field(0)->length(), 6);
      EXPECT_EQ(u.field(1)->length(), 6);
    }
    EXPECT_EQ(FormatValue(u, 3), "{s: \"bcd\"}");
    EXPECT_EQ(FormatValue(u, 2), "{i: null}");
  }
}

TEST(Unions, MakeFromChildren) {
  auto ints = Int32s({1, 2, 3});
  auto strs = Strings({"x", "y", "z"});
  ASSERT_OK_AND_ASSIGN(auto sparse, UnionArray::MakeSparse({0, 1, 0}, {ints, strs}));
  EXPECT_EQ(sparse->type()->ToString(), "sparse_union<0: int32=0, 1: string=1>");
  EXPECT_EQ(FormatValue(*sparse, 1), "{1: \"y\"}");
  ASSERT_OK_AND_ASSIGN(
      auto dense, UnionArray::MakeDense({5, 2, 5}, {2, 0, 0}, {ints, strs}, DenseType()));
  EXPECT_EQ(FormatValue(*dense, 0), "{s: \"z\"}");
  EXPECT_EQ(FormatValue(*dense, 2), "{s: \"x\"}");  // offsets need not increase
  EXPECT_TRUE(IsInvalidWith(UnionArray::MakeSparse({0, 3}, {ints->Slice(0, 2)}).status(),
                            "type code 3 at position 1"));
  EXPECT_TRUE(IsInvalidWith(
      UnionArray::MakeDense({2, 5}, {0, 3}, {ints, strs}, DenseType()).status(),
      "offset 3 at position 1"));
  EXPECT_TRUE(IsInvalidWith(
      UnionArray::MakeDense({2, 5}, {0, -1}, {ints, strs}, DenseType()).status(),
      "offset -1 at position 1"));
  EXPECT_TRUE(IsInvalidWith(UnionArray::MakeSparse({0, 1, 0, 1}, {ints, strs}).status(),
                            "has length 3, less than offset 0 + length 4"));
  EXPECT_EQ(UnionArray::MakeSparse({0}, {ints}, DenseType()).status().code(),
            StatusCode::kTypeError);
}

TEST(Unions, ValidateStructure) {
  auto ints = Int32s({1, 2, 3});
  auto strs = Strings({"x", "y", "z"});
  auto codes = BufferOf<int8_t>({2, 5, 2});
  auto offsets = BufferOf<int32_t>({0, 0, 1});
  auto make = [&](const TypePtr& type, std::vector<std::shared_ptr<Buffer>> buffers,
                  int64_t length = 3) {
    return MakeArray(ArrayData::Make(type, length, std::move(buffers),
                                     {ints->data(), strs->data()}, 0));
  };
  ASSERT_OK(make(SparseType(), {nullptr, codes})->ValidateFull());
  ASSERT_OK(make(DenseType(), {nullptr, codes, offsets})->ValidateFull());
  EXPECT_TRUE(IsInvalidWith(make(SparseType(), {nullptr, codes, offsets})->Validate(),
                            "expected 2 buffers"));
  EXPECT_TRUE(IsInvalidWith(make(DenseType(), {nullptr, codes})->Validate(),
                            "expected 3 buffers"));
  EXPECT_TRUE(IsInvalidWith(
      make(SparseType(), {test::BitmapOf({true, true, true}), codes})->Validate(),
      "no validity bitmap"));
  EXPECT_TRUE(IsInvalidWith(make(SparseType(), {nullptr, codes}, 4)->Validate(),
                            "type ids buffer has 3 bytes but 4"));
  EXPECT_TRUE(IsInvalidWith(
      make(DenseType(), {nullptr, codes, BufferOf<int32_t>({0, 0})})->Validate(),
      "offsets buffer has 8 bytes but 12"));
  // The wrong number of children, a child of the wrong type.
  EXPECT_TRUE(IsInvalidWith(
      MakeArray(ArrayData::Make(SparseType(), 3, {nullptr, codes}, {ints->data()}, 0))
          ->Validate(),
      "expected 2 child arrays"));
  EXPECT_TRUE(IsInvalidWith(MakeArray(ArrayData::Make(SparseType(), 3, {nullptr, codes},
                                                      {strs->data(), strs->data()}, 0))
                                ->Validate(),
                            "sparse_union field 0 'i' has type string"));
}

TEST(Unions, ValidateFullContent) {
  auto ints = Int32s({1, 2, 3});
  auto strs = Strings({"x", "y", "z"});
  auto sparse =
      MakeArray(ArrayData::Make(SparseType(), 3, {nullptr, BufferOf<int8_t>({2, 3, 5})},
                                {ints->data(), strs->data()}, 0));
  ASSERT_OK(sparse->Validate());  // O(1): type codes are not read
  EXPECT_TRUE(IsInvalidWith(sparse->ValidateFull(),
                            "type code 3 at position 1 is not one of the union's"));
  auto dense = MakeArray(ArrayData::Make(
      DenseType(), 3,
      {nullptr, BufferOf<int8_t>({2, 5, 5}), BufferOf<int32_t>({2, 2, 3})},
      {ints->data(), strs->data()}, 0));
  ASSERT_OK(dense->Validate());
  EXPECT_TRUE(IsInvalidWith(dense->ValidateFull(), "offset 3 at position 2 is outside"));
  // Only the slice is checked: the bad slot lies outside it.
  ASSERT_OK(dense->Slice(0, 2)->ValidateFull());
  ASSERT_OK(sparse->Slice(2, 1)->ValidateFull());
  // Printing does not trust what Validate did not check.
  EXPECT_NE(sparse->ToString().find("<invalid type code 3>"), std::string::npos);
  EXPECT_NE(dense->ToString().find("<invalid offset 3>"), std::string::npos);
}

TEST(Unions, EqualityAndSlices) {
  for (const TypePtr& type : {SparseType(), DenseType()}) {
    SCOPED_TRACE(type->ToString());
    auto a = BuildSample(type);
    auto b = BuildSample(type);
    EXPECT_TRUE(a->Equals(*b));
    EXPECT_TRUE(a->Slice(1, 4)->Equals(*b->Slice(1, 4)));
    EXPECT_FALSE(a->Slice(0, 3)->Equals(*b->Slice(1, 3)));
    EXPECT_TRUE(a->RangeEquals(3, 4, 1, *b->Slice(2, 2)));
    auto slice = a->Slice(3, 3);
    ASSERT_OK(slice->ValidateFull());
    const auto& u = static_cast<const UnionArray&>(*slice);
    EXPECT_EQ(u.type_code(0), 5);
    EXPECT_EQ(FormatValue(u, 0), "{s: \"bcd\"}");
    EXPECT_EQ(FormatValue(u, 1), "{i: 5}");
    EXPECT_EQ(FormatValue(u, 2), "{s: null}");
  }
  // Dense unions are equal by the values they reference, whatever the layout.
  auto ints = Int32s({7, 1});
  auto strs = Strings({"q", "a"});
  ASSERT_OK_AND_ASSIGN(auto other,
                       UnionArray::MakeDense({2, 5}, {1, 1}, {ints, strs}, DenseType()));
  EXPECT_TRUE(other->Equals(*BuildSample(DenseType())->Slice(0, 2)));
  ASSERT_OK_AND_ASSIGN(auto differs,
                       UnionArray::MakeDense({2, 5}, {0, 1}, {ints, strs}, DenseType()));
  EXPECT_FALSE(differs->Equals(*BuildSample(DenseType())->Slice(0, 2)));
  // A null of one child differs from a value, and from a null of another.
  EXPECT_FALSE(BuildSample(SparseType())
                   ->Slice(2, 1)
                   ->Equals(*BuildSample(SparseType())->Slice(5, 1)));
}

TEST(Unions, PrettyPrint) {
  auto array = BuildSample(DenseType());
  EXPECT_EQ(array->ToString(),
            "[\n  {i: 1},\n  {s: \"a\"},\n  {i: null},\n  {s: \"bcd\"},\n  {i: 5},\n"
            "  {s: null}\n]");
  EXPECT_EQ(BuildSample(SparseType())->Slice(4)->ToString(),
            "[\n  {i: 5},\n  {s: null}\n]");
}

TEST(Unions, Concatenate) {
  for (const TypePtr& type : {SparseType(), DenseType()}) {
    SCOPED_TRACE(type->ToString());
    auto a = BuildSample(type);
    auto first = a->Slice(1, 4);
    auto second = a->Slice(3);
    ASSERT_OK_AND_ASSIGN(auto joined,
                         Concatenate({first->data().get(), second->data().get()}));
    auto result = MakeArray(joined);
    ASSERT_OK(result->ValidateFull());
    ASSERT_EQ(result->length(), 7);
    EXPECT_TRUE(result->RangeEquals(0, 4, 0, *first));
    EXPECT_TRUE(result->RangeEquals(4, 7, 0, *second));
    EXPECT_LE(joined->child_data[0]->length, 2 * a->data()->child_data[0]->length);
  }
  ASSERT_OK_AND_ASSIGN(auto empty, MakeEmptyArray(DenseType()));
  ASSERT_OK(empty->ValidateFull());
  ASSERT_OK_AND_ASSIGN(auto nulls, MakeArrayOfNull(SparseType(), 4));
  ASSERT_OK(nulls->ValidateFull());
  EXPECT_TRUE(static_cast<const UnionArray&>(*nulls).IsNullValue(3));
  ASSERT_OK_AND_ASSIGN(auto dense_nulls, MakeArrayOfNull(DenseType(), 4));
  ASSERT_OK(dense_nulls->ValidateFull());
  EXPECT_EQ(dense_nulls->ToString(),
            "[\n  {i: null},\n  {i: null},\n  {i: null},\n  {i: null}\n]");
}

// C Data: "+us:2,5" / "+ud:2,5"; no validity buffer (1 or 2 buffers).
TEST(Unions, CDataRoundTrip) {
  for (const TypePtr& type : {SparseType(), DenseType()}) {
    SCOPED_TRACE(type->ToString());
    const bool dense = type->id() == TypeId::kDenseUnion;
    auto array = BuildSample(type)->Slice(1, 4);
    ArrowArray c_array;
    ArrowSchema c_schema;
    ASSERT_OK(ExportArray(*array, &c_array, &c_schema));
    EXPECT_EQ(std::string(c_schema.format), dense ? "+ud:2,5" : "+us:2,5");
    EXPECT_EQ(c_array.n_buffers, dense ? 2 : 1);
    EXPECT_EQ(c_array.null_count, 0);
    EXPECT_EQ(c_array.offset, 1);
    EXPECT_EQ(c_array.n_children, 2);
    EXPECT_EQ(c_array.buffers[0], array->data()->buffers[1]->data());
    ASSERT_OK_AND_ASSIGN(auto back, ImportArray(&c_array, &c_schema));
    ASSERT_OK(back->ValidateFull());
    EXPECT_TRUE(back->type()->Equals(*type));
    EXPECT_TRUE(back->Equals(*array));
  }
}

// IPC: a union column and a list of unions, whole and sliced, stream and file.
TEST(Unions, IpcRoundTripWithSlices) {
  auto sparse = BuildSample(SparseType());
  auto dense = BuildSample(DenseType());
  ListBuilder lb(nullptr,
                 std::shared_ptr<ArrayBuilder>(MakeBuilder(DenseType()).ValueOrDie()));
  auto* u = static_cast<UnionBuilder*>(lb.child(0));
  for (int i = 0; i < 6; ++i) {
    ASSERT_OK(lb.Append());
    for (int k = 0; k < i % 3; ++k) {
      ASSERT_OK(u->Append(k % 2 == 0 ? 2 : 5));
      if (k % 2 == 0) {
        ASSERT_OK(static_cast<Int32Builder*>(u->child_builder(0))->Append(i * 10 + k));
      } else {
        ASSERT_OK(static_cast<StringBuilder*>(u->child_builder(1))->Append("v"));
      }
    }
  }
  ASSERT_OK_AND_ASSIGN(auto lists, lb.Finish());
  auto batch =
      RecordBatch::FromArrays({"s", "d", "l"}, {sparse, dense, lists}).ValueOrDie();
  test::ExpectIpcRoundTrips({batch, batch->Slice(1, 4), batch->Slice(5)});
}

}  // namespace
}  // namespace quiver
