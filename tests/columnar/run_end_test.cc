// run_end_encoded: the type, Make and the accessors (physical index by
// binary search, slices), the builder, Validate and ValidateFull, equality of
// decoded values, printing, concatenation and the C Data and IPC forms
// (AllTypes covers the rest of the round trips).
#include <gtest/gtest.h>

#include <optional>
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

using test::BitmapOf;
using test::BufferOf;
using test::Int32s;
using test::IsInvalidWith;
using test::Strings;

using Texts = std::vector<std::optional<std::string>>;

// Runs ending at 2, 3, 6, 7 of "a", null, "bb", "c":
// ["a", "a", null, "bb", "bb", "bb", "c"].
std::shared_ptr<RunEndEncodedArray> Sample() {
  return RunEndEncodedArray::Make(7, Int32s({2, 3, 6, 7}),
                                  Strings(Texts{"a", std::nullopt, "bb", "c"}))
      .ValueOrDie();
}

// The same slots, one run each, int64 run ends.
std::shared_ptr<RunEndEncodedArray> SampleOneRunEach() {
  return RunEndEncodedArray::Make(
             7, test::Int64s({1, 2, 3, 4, 5, 6, 7}),
             Strings(Texts{"a", "a", std::nullopt, "bb", "bb", "bb", "c"}))
      .ValueOrDie();
}

// Every slot of `a`, printed one by one.
std::vector<std::string> Slots(const Array& a) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < a.length(); ++i) out.push_back(FormatValue(a, i));
  return out;
}

ArrayPtr ArrayOfInt16(const std::vector<std::optional<int16_t>>& values) {
  return test::ArrayOf<Int16Type>(values);
}

// A run-end encoded ArrayData over the given children, unchecked.
ArrayDataPtr Raw(int64_t length, const ArrayPtr& ends, const ArrayPtr& values,
                 int64_t offset = 0) {
  return ArrayData::Make(run_end_encoded(ends->type(), values->type()), length, {nullptr},
                         {ends->data(), values->data()}, 0, offset);
}

TEST(RunEndEncoded, Types) {
  auto t = run_end_encoded(int32(), utf8());
  EXPECT_EQ(t->ToString(), "run_end_encoded<run_ends: int32, values: string>");
  EXPECT_EQ(t->num_fields(), 2);
  EXPECT_EQ(t->field(0)->name(), "run_ends");
  EXPECT_FALSE(t->field(0)->nullable());
  EXPECT_EQ(t->field(1)->name(), "values");
  EXPECT_TRUE(t->field(1)->nullable());
  EXPECT_EQ(t->run_end_type()->id(), TypeId::kInt32);
  EXPECT_EQ(t->value_type()->id(), TypeId::kString);
  EXPECT_TRUE(t->Equals(*run_end_encoded(int32(), utf8())));
  EXPECT_FALSE(t->Equals(*run_end_encoded(int64(), utf8())));
  EXPECT_FALSE(t->Equals(*run_end_encoded(int32(), binary())));
  EXPECT_TRUE(IsNested(TypeId::kRunEndEncoded));
  EXPECT_EQ(LayoutBufferCount(TypeId::kRunEndEncoded), 0);
  for (const TypePtr& bad : {int8(), uint16(), uint32(), utf8()}) {
    auto made = MakeRunEndEncoded(bad, utf8());
    ASSERT_FALSE(made.ok()) << bad->ToString();
    EXPECT_NE(made.status().message().find("int16, int32 or int64"), std::string::npos)
        << made.status().ToString();
  }
}

TEST(RunEndEncoded, MakeAndAccessors) {
  auto a = Sample();
  EXPECT_EQ(a->length(), 7);
  EXPECT_EQ(a->null_count(), 0);
  EXPECT_EQ(a->run_ends()->length(), 4);
  EXPECT_EQ(a->values()->length(), 4);
  EXPECT_EQ(a->run_end(2), 6);
  const std::vector<int64_t> physical = {0, 0, 1, 2, 2, 2, 3};
  for (int64_t i = 0; i < 7; ++i) EXPECT_EQ(a->FindPhysicalIndex(i), physical[i]) << i;
  EXPECT_TRUE(a->IsNullValue(2));
  EXPECT_FALSE(a->IsNullValue(3));
  EXPECT_EQ(a->FindPhysicalOffset(), 0);
  EXPECT_EQ(a->FindPhysicalLength(), 4);
  // A slice counts its slots from its offset into the same runs.
  auto slice = std::static_pointer_cast<RunEndEncodedArray>(a->Slice(3, 3));
  EXPECT_EQ(slice->offset(), 3);
  EXPECT_EQ(slice->FindPhysicalIndex(0), 2);
  EXPECT_EQ(slice->FindPhysicalIndex(2), 2);
  EXPECT_EQ(slice->FindPhysicalOffset(), 2);
  EXPECT_EQ(slice->FindPhysicalLength(), 1);
  auto middle = std::static_pointer_cast<RunEndEncodedArray>(a->Slice(1, 5));
  EXPECT_EQ(middle->FindPhysicalOffset(), 0);
  EXPECT_EQ(middle->FindPhysicalLength(), 3);
  EXPECT_EQ(
      std::static_pointer_cast<RunEndEncodedArray>(a->Slice(7))->FindPhysicalLength(), 0);
  // Make checks in full, and may start inside the runs.
  ASSERT_OK_AND_ASSIGN(auto offset,
                       RunEndEncodedArray::Make(2, Int32s({2, 3, 6, 7}),
                                                Strings(Texts{"a", "b", "c", "d"}), 5));
  EXPECT_EQ(Slots(*offset), (std::vector<std::string>{"\"c\"", "\"d\""}));
  EXPECT_TRUE(IsInvalidWith(
      RunEndEncodedArray::Make(7, Int32s({2, 3}), Strings(Texts{"a"})).status(),
      "2 run ends but 1 values"));
}

TEST(RunEndEncoded, Builder) {
  auto strings = std::make_shared<StringBuilder>();
  RunEndEncodedBuilder b(nullptr, strings, int16());
  EXPECT_TRUE(b.type()->Equals(*run_end_encoded(int16(), utf8())));
  EXPECT_TRUE(IsInvalidWith(b.ExtendRun(), "no run to extend"));
  ASSERT_OK(b.Append(2));
  ASSERT_OK(strings->Append("a"));
  ASSERT_OK(b.AppendNull());
  ASSERT_OK(b.Append());
  ASSERT_OK(strings->Append("bb"));
  ASSERT_OK(b.ExtendRun(2));
  ASSERT_OK(b.Append());
  ASSERT_OK(strings->Append("c"));
  EXPECT_TRUE(IsInvalidWith(b.Append(0), "a run of 0 slots"));
  EXPECT_EQ(b.Append(40000).code(), StatusCode::kCapacityError);  // int16 run ends
  EXPECT_EQ(b.length(), 7);
  ASSERT_OK_AND_ASSIGN(auto built, b.Finish());
  ASSERT_OK(built->ValidateFull());
  EXPECT_TRUE(built->Equals(*Sample()) == false);  // int16 against int32 run ends
  EXPECT_EQ(Slots(*built), Slots(*Sample()));
  const auto& runs = static_cast<const RunEndEncodedArray&>(*built);
  EXPECT_EQ(runs.run_ends()->length(), 4);
  EXPECT_EQ(runs.run_end(2), 6);
  // Reused after Finish; a run without its value is refused at Finish.
  ASSERT_OK(b.AppendEmptyValues(3));
  ASSERT_OK(b.Append(2));
  EXPECT_TRUE(IsInvalidWith(b.Finish().status(), "2 runs but 1 values"));
  // MakeBuilder knows the type.
  ASSERT_OK_AND_ASSIGN(auto made, MakeBuilder(run_end_encoded(int64(), int32())));
  ASSERT_OK(made->AppendNulls(4));
  ASSERT_OK(made->AppendEmptyValue());
  ASSERT_OK_AND_ASSIGN(auto made_array, made->Finish());
  ASSERT_OK(made_array->ValidateFull());
  EXPECT_EQ(Slots(*made_array),
            (std::vector<std::string>{"null", "null", "null", "null", "0"}));
}

TEST(RunEndEncoded, ValidateStructure) {
  ASSERT_OK(MakeArray(Raw(7, Int32s({2, 3, 6, 7}), Strings(Texts{"a", "b", "c", "d"})))
                ->Validate());
  // Run ends and values must pair up.
  EXPECT_TRUE(IsInvalidWith(
      MakeArray(Raw(7, Int32s({2, 3, 7}), Strings(Texts{"a", "b", "c", "d"})))
          ->Validate(),
      "3 run ends but 4 values"));
  // The runs must reach offset + length.
  EXPECT_TRUE(IsInvalidWith(
      MakeArray(Raw(8, Int32s({2, 3, 6, 7}), Strings(Texts{"a", "b", "c", "d"})))
          ->Validate(),
      "the last run end 7 is less than offset 0 + length 8"));
  EXPECT_TRUE(IsInvalidWith(
      MakeArray(Raw(3, Int32s({2, 3, 6, 7}), Strings(Texts{"a", "b", "c", "d"}), 5))
          ->Validate(),
      "the last run end 7 is less than offset 5 + length 3"));
  EXPECT_TRUE(IsInvalidWith(MakeArray(Raw(1, Int32s({}), Strings(Texts{})))->Validate(),
                            "no runs for offset 0 + length 1"));
  // No null run ends, a positive first one.
  EXPECT_TRUE(IsInvalidWith(
      MakeArray(Raw(7, Int32s({2, std::nullopt, 7}), Strings(Texts{"a", "b", "c"})))
          ->Validate(),
      "run ends must not be null"));
  EXPECT_TRUE(IsInvalidWith(
      MakeArray(Raw(7, Int32s({0, 3, 7}), Strings(Texts{"a", "b", "c"})))->Validate(),
      "run end 0 is 0, must be positive"));
  // int16 run ends cannot reach slot 40000.
  EXPECT_TRUE(IsInvalidWith(
      MakeArray(Raw(40000, ArrayOfInt16({7}), Strings(Texts{"a"})))->Validate(),
      "does not fit int16 run ends"));
  // No buffers of its own, no nulls of its own, two children.
  auto good = Raw(7, Int32s({2, 3, 6, 7}), Strings(Texts{"a", "b", "c", "d"}));
  auto with_bitmap = std::make_shared<ArrayData>(*good);
  with_bitmap->buffers[0] = BitmapOf({true, true, true, true, true, true, true});
  EXPECT_TRUE(IsInvalidWith(MakeArray(with_bitmap)->Validate(), "exactly 1 buffer slot"));
  auto with_nulls = std::make_shared<ArrayData>(*good);
  with_nulls->null_count = 2;
  EXPECT_TRUE(IsInvalidWith(MakeArray(with_nulls)->Validate(), "null_count is 2"));
  auto one_child = std::make_shared<ArrayData>(*good);
  one_child->child_data.pop_back();
  EXPECT_TRUE(
      IsInvalidWith(MakeArray(one_child)->Validate(), "expected 2 child arrays, got 1"));
  // A type whose run ends are not int16/32/64 (built around the factory).
  DataType::Params p;
  p.id = TypeId::kRunEndEncoded;
  p.children = {field("run_ends", int8(), false), field("values", utf8())};
  auto bad_type = std::make_shared<DataType>(std::move(p));
  auto bad = ArrayData::Make(bad_type, 0, {nullptr},
                             {ArrayData::Make(int8(), 0, {nullptr, BufferOf<int8_t>({})}),
                              Strings(Texts{})->data()},
                             0);
  EXPECT_TRUE(IsInvalidWith(MakeArray(bad)->Validate(),
                            "run ends must be int16, int32 or int64"));
}

TEST(RunEndEncoded, ValidateFullContent) {
  // Validate reads the first and last run ends only; ValidateFull all.
  auto flat = MakeArray(Raw(7, Int32s({2, 5, 5, 7}), Strings(Texts{"a", "b", "c", "d"})));
  ASSERT_OK(flat->Validate());
  EXPECT_TRUE(IsInvalidWith(flat->ValidateFull(),
                            "run end 2 (5) is not greater than run end 1 (5)"));
  auto down = MakeArray(Raw(7, Int32s({4, 2, 7}), Strings(Texts{"a", "b", "c"})));
  ASSERT_OK(down->Validate());
  EXPECT_TRUE(IsInvalidWith(down->ValidateFull(), "run ends must increase strictly"));
  // The values are checked too (here: invalid UTF-8 in a string).
  auto bad_text = MakeArray(Raw(2, Int32s({2}), Strings(Texts{std::string("\xff", 1)})));
  EXPECT_TRUE(IsInvalidWith(bad_text->ValidateFull(), "run_end_encoded values"));
  ASSERT_OK(Sample()->ValidateFull());
  ASSERT_OK(Sample()->Slice(3, 2)->ValidateFull());
}

TEST(RunEndEncoded, EqualityComparesDecodedValues) {
  auto a = Sample();
  auto b = SampleOneRunEach();
  EXPECT_FALSE(a->Equals(*b));  // int32 and int64 run ends: different types
  ASSERT_OK_AND_ASSIGN(
      auto c,
      RunEndEncodedArray::Make(7, Int32s({1, 2, 3, 4, 6, 7}),
                               Strings(Texts{"a", "a", std::nullopt, "bb", "bb", "c"})));
  EXPECT_TRUE(a->Equals(*c));
  EXPECT_TRUE(c->Equals(*a));
  EXPECT_TRUE(a->Slice(3, 4)->Equals(*c->Slice(3, 4)));
  EXPECT_TRUE(a->RangeEquals(3, 6, 0, *c->Slice(4)) == false);  // "bb" x3 vs "bb" x2, "c"
  EXPECT_TRUE(a->RangeEquals(3, 5, 0, *c->Slice(4)));
  ASSERT_OK_AND_ASSIGN(
      auto d, RunEndEncodedArray::Make(7, Int32s({2, 3, 6, 7}),
                                       Strings(Texts{"a", std::nullopt, "bb", "cc"})));
  EXPECT_FALSE(a->Equals(*d));
  EXPECT_TRUE(a->Slice(0, 6)->Equals(*d->Slice(0, 6)));
  // A null value against a value.
  ASSERT_OK_AND_ASSIGN(auto e,
                       RunEndEncodedArray::Make(7, Int32s({2, 3, 6, 7}),
                                                Strings(Texts{"a", "x", "bb", "c"})));
  EXPECT_FALSE(a->Equals(*e));
}

TEST(RunEndEncoded, PrettyPrintDecodes) {
  auto a = Sample();
  EXPECT_EQ(Slots(*a), (std::vector<std::string>{"\"a\"", "\"a\"", "null", "\"bb\"",
                                                 "\"bb\"", "\"bb\"", "\"c\""}));
  const std::string text = a->Slice(2, 3)->ToString();
  EXPECT_EQ(text, "[\n  null,\n  \"bb\",\n  \"bb\"\n]");
  // Runs that stop short are shown, not read.
  auto short_runs =
      MakeArray(Raw(9, Int32s({2, 3, 6, 7}), Strings(Texts{"a", "b", "c", "d"})));
  EXPECT_EQ(FormatValue(*short_runs, 8), "<invalid run ends>");
}

TEST(RunEndEncoded, Concatenate) {
  auto a = Sample();
  auto first = a->Slice(1, 4);
  auto second = a->Slice(4, 3);
  ASSERT_OK_AND_ASSIGN(auto joined,
                       Concatenate({first->data().get(), second->data().get()}));
  auto result = std::static_pointer_cast<RunEndEncodedArray>(MakeArray(joined));
  ASSERT_OK(result->ValidateFull());
  ASSERT_EQ(result->length(), 7);
  EXPECT_EQ(result->offset(), 0);
  EXPECT_TRUE(result->RangeEquals(0, 4, 0, *first));
  EXPECT_TRUE(result->RangeEquals(4, 7, 0, *second));
  // Only the runs the slices use, their ends from the result's start.
  EXPECT_EQ(result->run_ends()->length(), 5);
  EXPECT_EQ(result->run_end(0), 1);
  EXPECT_EQ(result->run_end(4), 7);
  ASSERT_OK_AND_ASSIGN(auto empty, MakeEmptyArray(run_end_encoded(int16(), utf8())));
  ASSERT_OK(empty->ValidateFull());
  ASSERT_OK_AND_ASSIGN(auto nulls, MakeArrayOfNull(run_end_encoded(int16(), int8()), 3));
  ASSERT_OK(nulls->ValidateFull());
  EXPECT_EQ(nulls->null_count(), 0);  // its nulls are its values'
  EXPECT_TRUE(static_cast<const RunEndEncodedArray&>(*nulls).IsNullValue(1));
  EXPECT_EQ(MakeArrayOfNull(run_end_encoded(int16(), int8()), 40000).status().code(),
            StatusCode::kCapacityError);
}

// C Data: "+r", no buffers, two children; a slice keeps its offset.
TEST(RunEndEncoded, CDataRoundTrip) {
  auto array = Sample()->Slice(2, 4);
  ArrowArray c_array;
  ArrowSchema c_schema;
  ASSERT_OK(ExportArray(*array, &c_array, &c_schema));
  EXPECT_EQ(std::string(c_schema.format), "+r");
  ASSERT_EQ(c_schema.n_children, 2);
  EXPECT_EQ(std::string(c_schema.children[0]->name), "run_ends");
  EXPECT_EQ(c_schema.children[0]->flags & ARROW_FLAG_NULLABLE, 0);
  EXPECT_EQ(std::string(c_schema.children[1]->name), "values");
  EXPECT_EQ(c_array.n_buffers, 0);
  EXPECT_EQ(c_array.n_children, 2);
  EXPECT_EQ(c_array.offset, 2);
  EXPECT_EQ(c_array.null_count, 0);
  ASSERT_OK_AND_ASSIGN(auto back, ImportArray(&c_array, &c_schema));
  ASSERT_OK(back->ValidateFull());
  EXPECT_TRUE(back->type()->Equals(*array->type()));
  EXPECT_TRUE(back->Equals(*array));
  EXPECT_EQ(Slots(*back), Slots(*array));
}

// IPC: whole and sliced, stream and file; a slice goes out as the runs it
// uses, its run ends counted from its first slot.
TEST(RunEndEncoded, IpcRoundTripWithSlices) {
  ArrayPtr a = Sample();
  ArrayPtr b = SampleOneRunEach();
  auto batch = RecordBatch::FromArrays({"a", "b"}, {a, b}).ValueOrDie();
  test::ExpectIpcRoundTrips({batch, batch->Slice(1, 3), batch->Slice(3)});
  auto one = RecordBatch::FromArrays({"a"}, {a->Slice(3, 3)}).ValueOrDie();
  ASSERT_OK_AND_ASSIGN(auto table, Table::FromRecordBatches({one}));
  ASSERT_OK_AND_ASSIGN(auto bytes, ipc::SerializeTable(*table, ipc::IpcFormat::kStream));
  ASSERT_OK_AND_ASSIGN(auto back, ipc::ReadTableFromBuffer(bytes));
  ASSERT_OK_AND_ASSIGN(auto batches, back->ToRecordBatches());
  ASSERT_EQ(batches.size(), 1u);
  auto read = std::static_pointer_cast<RunEndEncodedArray>(batches[0]->column(0));
  EXPECT_EQ(read->offset(), 0);
  ASSERT_EQ(read->run_ends()->length(), 1);
  EXPECT_EQ(read->run_end(0), 3);
  EXPECT_EQ(Slots(*read), (std::vector<std::string>{"\"bb\"", "\"bb\"", "\"bb\""}));
}

}  // namespace
}  // namespace quiver
