#include "quiver/columnar/builder.h"

#include <gtest/gtest.h>

#include <cstring>

namespace quiver {
namespace {

template <typename T>
std::shared_ptr<T> Cast(const ArrayPtr& a) {
  auto out = std::dynamic_pointer_cast<T>(a);
  EXPECT_NE(out, nullptr) << "array is not of the expected class";
  return out;
}

// A pool that counts its own allocations, to prove builders use the pool
// they are given and return every byte.
class CountingPoolTest : public ::testing::Test {
 protected:
  SystemMemoryPool pool_;
};

TEST(BuilderTest, Int64WithNulls) {
  Int64Builder b;
  ASSERT_TRUE(b.Append(1).ok());
  ASSERT_TRUE(b.AppendNull().ok());
  ASSERT_TRUE(b.AppendValues({3, 4, 5}, {true, false, true}).ok());
  auto arr = Cast<Int64Array>(b.Finish().ValueOrDie());
  ASSERT_EQ(arr->length(), 5);
  EXPECT_EQ(arr->null_count(), 2);
  EXPECT_EQ(arr->Value(0), 1);
  EXPECT_TRUE(arr->IsNull(1));
  EXPECT_EQ(arr->Value(2), 3);
  EXPECT_TRUE(arr->IsNull(3));
  EXPECT_EQ(arr->Value(4), 5);
  // The builder is reusable after Finish.
  EXPECT_EQ(b.length(), 0);
  ASSERT_TRUE(b.Append(9).ok());
  auto again = Cast<Int64Array>(b.Finish().ValueOrDie());
  EXPECT_EQ(again->length(), 1);
  EXPECT_EQ(again->Value(0), 9);
}

TEST(BuilderTest, NoNullsMeansNoValidityBuffer) {
  UInt16Builder b;
  std::vector<uint16_t> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint16_t>(i * 7);
  ASSERT_TRUE(b.AppendValues(v.data(), static_cast<int64_t>(v.size())).ok());
  auto arr = Cast<UInt16Array>(b.Finish().ValueOrDie());
  EXPECT_EQ(arr->data()->buffers[0], nullptr);
  EXPECT_EQ(arr->null_count(), 0);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(arr->Value(i), v[i]);
  // Values buffers are 64-byte aligned and padded with zeros.
  const auto& values = arr->data()->buffers[1];
  EXPECT_EQ(reinterpret_cast<uintptr_t>(values->data()) % 64, 0u);
  EXPECT_EQ(values->capacity() % 64, 0);
}

TEST(BuilderTest, ParametricNumericTypesKeepTheirType) {
  TimestampBuilder b(timestamp(TimeUnit::kNano, "Europe/Amsterdam"), nullptr);
  ASSERT_TRUE(b.Append(1700000000000000000).ok());
  auto arr = b.Finish().ValueOrDie();
  EXPECT_EQ(arr->type()->ToString(), "timestamp[ns, tz=Europe/Amsterdam]");
  EXPECT_EQ(Cast<TimestampArray>(arr)->Value(0), 1700000000000000000);
}

TEST(BuilderTest, Boolean) {
  BooleanBuilder b;
  ASSERT_TRUE(b.AppendValues({true, false, true, true}, {true, true, false, true}).ok());
  ASSERT_TRUE(b.AppendNulls(2).ok());
  ASSERT_TRUE(b.AppendEmptyValues(1).ok());
  auto arr = Cast<BooleanArray>(b.Finish().ValueOrDie());
  ASSERT_EQ(arr->length(), 7);
  EXPECT_EQ(arr->null_count(), 3);
  EXPECT_TRUE(arr->Value(0));
  EXPECT_FALSE(arr->Value(1));
  EXPECT_TRUE(arr->IsNull(2));
  EXPECT_TRUE(arr->Value(3));
  EXPECT_FALSE(arr->Value(6));
  EXPECT_EQ(arr->true_count(), 2);
  EXPECT_EQ(arr->false_count(), 2);
}

TEST(BuilderTest, StringsAndSlices) {
  StringBuilder b;
  ASSERT_TRUE(b.AppendValues({"a", "", "ccc", "dd"}, {true, true, false, true}).ok());
  auto arr = Cast<StringArray>(b.Finish().ValueOrDie());
  ASSERT_EQ(arr->length(), 4);
  EXPECT_EQ(arr->GetView(0), "a");
  EXPECT_EQ(arr->GetView(1), "");
  EXPECT_TRUE(arr->IsNull(2));
  EXPECT_EQ(arr->value_length(2), 0);  // nulls take no bytes
  EXPECT_EQ(arr->GetView(3), "dd");
  auto slice = Cast<StringArray>(arr->Slice(1, 3));
  EXPECT_EQ(slice->offset(), 1);
  EXPECT_EQ(slice->GetView(2), "dd");
  EXPECT_EQ(slice->null_count(), 1);
  // Slicing is zero-copy.
  EXPECT_EQ(slice->data()->buffers[2]->data(), arr->data()->buffers[2]->data());
}

TEST(BuilderTest, LargeBinaryUsesInt64Offsets) {
  LargeBinaryBuilder b;
  std::string blob("\x00\x01\xff", 3);
  ASSERT_TRUE(b.Append(blob).ok());
  ASSERT_TRUE(b.AppendNull().ok());
  auto arr = Cast<LargeBinaryArray>(b.Finish().ValueOrDie());
  EXPECT_EQ(arr->type()->id(), TypeId::kLargeBinary);
  EXPECT_EQ(arr->data()->buffers[1]->size(), 3 * 8);
  EXPECT_EQ(arr->GetView(0), blob);
}

TEST(BuilderTest, FixedSizeBinaryChecksWidth) {
  FixedSizeBinaryBuilder b(fixed_size_binary(3));
  ASSERT_TRUE(b.Append("abc").ok());
  Status st = b.Append("abcd");
  EXPECT_TRUE(st.IsInvalid()) << st.ToString();
  EXPECT_EQ(b.length(), 1);  // the failed append changed nothing
  ASSERT_TRUE(b.AppendNull().ok());
  auto arr = Cast<FixedSizeBinaryArray>(b.Finish().ValueOrDie());
  EXPECT_EQ(arr->GetView(0), "abc");
  EXPECT_TRUE(arr->IsNull(1));
}

TEST(BuilderTest, DecimalChecksPrecision) {
  Decimal128Builder b(decimal128(5, 2));
  ASSERT_TRUE(b.Append(Decimal128::FromString("123.45", 2).ValueOrDie()).ok());
  ASSERT_TRUE(b.Append(Decimal128(-1)).ok());
  EXPECT_TRUE(b.Append(Decimal128(123456)).IsInvalid());
  auto arr = Cast<Decimal128Array>(b.Finish().ValueOrDie());
  ASSERT_EQ(arr->length(), 2);
  EXPECT_EQ(arr->FormatValue(0), "123.45");
  EXPECT_EQ(arr->FormatValue(1), "-0.01");
}

TEST(BuilderTest, ListOfInt32) {
  auto values = std::make_shared<Int32Builder>();
  ListBuilder b(nullptr, values);
  ASSERT_TRUE(b.Append().ok());
  ASSERT_TRUE(values->AppendValues({1, 2, 3}).ok());
  ASSERT_TRUE(b.AppendNull().ok());
  ASSERT_TRUE(b.Append().ok());  // empty list
  ASSERT_TRUE(b.Append().ok());
  ASSERT_TRUE(values->Append(4).ok());
  auto arr = Cast<ListArray>(b.Finish().ValueOrDie());
  ASSERT_EQ(arr->length(), 4);
  EXPECT_EQ(arr->type()->ToString(), "list<item: int32>");
  EXPECT_EQ(arr->value_length(0), 3);
  EXPECT_TRUE(arr->IsNull(1));
  EXPECT_EQ(arr->value_length(2), 0);
  EXPECT_EQ(arr->value_offset(3), 3);
  auto last = Cast<Int32Array>(arr->value_slice(3));
  EXPECT_EQ(last->Value(0), 4);
  EXPECT_EQ(values->length(), 0);  // child reset by Finish
}

TEST(BuilderTest, ListAppendValuesRejectsBadOffsets) {
  auto values = std::make_shared<Int8Builder>();
  LargeListBuilder b(nullptr, values);
  ASSERT_TRUE(values->AppendValues({1, 2, 3, 4}).ok());
  int64_t bad[] = {0, 3, 2};
  EXPECT_TRUE(b.AppendValues(bad, 3).IsInvalid());
  int64_t good[] = {0, 1, 3};
  ASSERT_TRUE(b.AppendValues(good, 3).ok());
  auto arr = Cast<LargeListArray>(b.Finish().ValueOrDie());
  EXPECT_EQ(arr->value_length(0), 1);
  EXPECT_EQ(arr->value_length(1), 2);
  EXPECT_EQ(arr->value_length(2), 1);
}

TEST(BuilderTest, MapKeysAndItems) {
  auto keys = std::make_shared<StringBuilder>();
  auto items = std::make_shared<Int64Builder>();
  MapBuilder b(nullptr, keys, items);
  ASSERT_TRUE(b.Append().ok());
  ASSERT_TRUE(keys->AppendValues({"a", "b"}).ok());
  ASSERT_TRUE(items->AppendValues({1, 2}, {true, false}).ok());
  ASSERT_TRUE(b.AppendNull().ok());
  ASSERT_TRUE(b.Append().ok());
  ASSERT_TRUE(keys->Append("c").ok());
  // A key without its item is caught at the next append.
  EXPECT_TRUE(b.Append().IsInvalid());
  ASSERT_TRUE(items->Append(3).ok());
  auto arr = Cast<MapArray>(b.Finish().ValueOrDie());
  ASSERT_EQ(arr->length(), 3);
  EXPECT_EQ(arr->type()->ToString(), "map<string, int64>");
  auto k = Cast<StringArray>(arr->keys());
  auto v = Cast<Int64Array>(arr->items());
  EXPECT_EQ(k->GetView(2), "c");
  EXPECT_TRUE(v->IsNull(1));
  EXPECT_EQ(v->Value(2), 3);
  EXPECT_TRUE(arr->IsNull(1));
}

TEST(BuilderTest, FixedSizeListAppendsNullChildren) {
  auto values = std::make_shared<Int16Builder>();
  FixedSizeListBuilder b(nullptr, values, 2);
  ASSERT_TRUE(b.Append().ok());
  ASSERT_TRUE(values->AppendValues({1, 2}).ok());
  ASSERT_TRUE(b.AppendNull().ok());
  EXPECT_EQ(values->length(), 4);
  ASSERT_TRUE(b.Append().ok());
  ASSERT_TRUE(values->Append(5).ok());
  // Only one of the two values of the last list was appended.
  auto incomplete = b.Finish();
  EXPECT_TRUE(incomplete.status().IsInvalid()) << incomplete.status().ToString();
}

TEST(BuilderTest, StructOfFields) {
  auto type = struct_({field("x", int32()), field("s", utf8(), false)});
  auto builder = MakeBuilder(type).ValueOrDie();
  auto* b = static_cast<StructBuilder*>(builder.get());
  auto* x = static_cast<Int32Builder*>(b->field_builder(0));
  auto* s = static_cast<StringBuilder*>(b->field_builder(1));
  ASSERT_TRUE(b->Append().ok());
  ASSERT_TRUE(x->Append(7).ok());
  ASSERT_TRUE(s->Append("seven").ok());
  ASSERT_TRUE(b->AppendNull().ok());
  auto arr = Cast<StructArray>(b->Finish().ValueOrDie());
  ASSERT_EQ(arr->length(), 2);
  EXPECT_TRUE(arr->IsNull(1));
  auto xs = Cast<Int32Array>(arr->field(0));
  auto ss = Cast<StringArray>(arr->field(1));
  EXPECT_EQ(xs->Value(0), 7);
  EXPECT_TRUE(xs->IsNull(1));   // nullable child got a null
  EXPECT_TRUE(ss->IsValid(1));  // non-nullable child got an empty value
  EXPECT_EQ(ss->GetView(1), "");
  // Struct field access honours the parent's slice.
  auto sliced = Cast<StructArray>(arr->Slice(1, 1));
  EXPECT_TRUE(Cast<Int32Array>(sliced->field(0))->IsNull(0));
}

TEST(BuilderTest, StructChildLengthMismatchIsAnError) {
  auto type = struct_({field("a", int8()), field("b", int8())});
  auto builder = MakeBuilder(type).ValueOrDie();
  auto* b = static_cast<StructBuilder*>(builder.get());
  ASSERT_TRUE(b->Append().ok());
  ASSERT_TRUE(static_cast<Int8Builder*>(b->field_builder(0))->Append(1).ok());
  EXPECT_TRUE(b->Finish().status().IsInvalid());
}

TEST(BuilderTest, DictionaryOfStrings) {
  DictionaryBuilder b(dictionary(int8(), utf8()));
  for (const char* s : {"red", "green", "red", "blue", "green"}) {
    ASSERT_TRUE(b.Append(std::string_view(s)).ok());
  }
  ASSERT_TRUE(b.AppendNull().ok());
  EXPECT_EQ(b.dictionary_length(), 3);
  auto arr = Cast<DictionaryArray>(b.Finish().ValueOrDie());
  ASSERT_EQ(arr->length(), 6);
  auto dict = Cast<StringArray>(arr->dictionary());
  ASSERT_EQ(dict->length(), 3);
  EXPECT_EQ(dict->GetView(0), "red");
  EXPECT_EQ(dict->GetView(2), "blue");
  EXPECT_EQ(arr->GetValueIndex(2), 0);
  EXPECT_EQ(arr->GetValueIndex(4), 1);
  EXPECT_TRUE(arr->IsNull(5));
  EXPECT_EQ(arr->indices()->type()->id(), TypeId::kInt8);
}

TEST(BuilderTest, DictionaryIndexOverflowIsCapacityError) {
  DictionaryBuilder b(dictionary(int8(), int32()));
  for (int i = 0; i < 128; ++i) ASSERT_TRUE(b.Append(int64_t{i}).ok());
  EXPECT_TRUE(b.Append(int64_t{128}).IsCapacityError());
  EXPECT_TRUE(b.Append(int64_t{5}).ok());  // known values still work
  EXPECT_TRUE(b.Append(std::string_view("x")).IsTypeError());
}

TEST(BuilderTest, DictionaryValueRangeIsChecked) {
  DictionaryBuilder b(dictionary(int32(), uint8()));
  EXPECT_TRUE(b.Append(int64_t{256}).IsInvalid());
  EXPECT_TRUE(b.Append(int64_t{-1}).IsInvalid());
  EXPECT_TRUE(b.Append(int64_t{255}).ok());
}

TEST(BuilderTest, DictionaryKeepAndDelta) {
  DictionaryBuilder b(dictionary(int32(), large_utf8()));
  ASSERT_TRUE(b.Append(std::string_view("a")).ok());
  ASSERT_TRUE(b.Append(std::string_view("b")).ok());
  auto first = Cast<DictionaryArray>(b.FinishKeepDictionary().ValueOrDie());
  ASSERT_TRUE(b.Append(std::string_view("b")).ok());
  ASSERT_TRUE(b.Append(std::string_view("c")).ok());
  auto second = Cast<DictionaryArray>(b.FinishKeepDictionary().ValueOrDie());
  EXPECT_EQ(first->dictionary()->length(), 2);
  ASSERT_EQ(second->dictionary()->length(), 3);  // extends the first
  EXPECT_EQ(Cast<LargeStringArray>(second->dictionary())->GetView(2), "c");
  EXPECT_EQ(second->GetValueIndex(0), 1);

  ArrayPtr indices, delta;
  ASSERT_TRUE(b.Append(std::string_view("d")).ok());
  ASSERT_TRUE(b.FinishDelta(&indices, &delta).ok());
  // Never called FinishDelta before: the delta is the whole dictionary.
  EXPECT_EQ(delta->length(), 4);
  ASSERT_TRUE(b.Append(std::string_view("a")).ok());
  ASSERT_TRUE(b.Append(std::string_view("e")).ok());
  ASSERT_TRUE(b.FinishDelta(&indices, &delta).ok());
  ASSERT_EQ(delta->length(), 1);
  EXPECT_EQ(Cast<LargeStringArray>(delta)->GetView(0), "e");
  EXPECT_EQ(Cast<Int32Array>(indices)->Value(1), 4);
}

TEST(BuilderTest, DictionaryAppendIndicesAndMemo) {
  DictionaryBuilder b(dictionary(uint16(), float64()));
  ASSERT_TRUE(b.Append(2.5).ok());
  DoubleBuilder memo;
  ASSERT_TRUE(memo.AppendValues({1.0, 2.5, 3.0}).ok());
  ASSERT_TRUE(b.InsertMemoValues(*memo.Finish().ValueOrDie()).ok());
  EXPECT_EQ(b.dictionary_length(), 3);
  int64_t idx[] = {2, 0, 7};
  uint8_t valid[] = {1, 1, 0};
  ASSERT_TRUE(b.AppendIndices(idx, 3, valid).ok());
  int64_t bad[] = {3};
  EXPECT_TRUE(b.AppendIndices(bad, 1).IsIndexError());
  auto arr = Cast<DictionaryArray>(b.Finish().ValueOrDie());
  auto dict = Cast<DoubleArray>(arr->dictionary());
  EXPECT_EQ(dict->Value(arr->GetValueIndex(1)), 3.0);
  EXPECT_TRUE(arr->IsNull(3));
}

TEST(BuilderTest, MakeBuilderCoversEveryType) {
  std::vector<TypePtr> types = {null(),
                                boolean(),
                                int8(),
                                int16(),
                                int32(),
                                int64(),
                                uint8(),
                                uint16(),
                                uint32(),
                                uint64(),
                                float16(),
                                float32(),
                                float64(),
                                decimal128(20, 3),
                                date32(),
                                date64(),
                                time32(TimeUnit::kSecond),
                                time64(TimeUnit::kNano),
                                timestamp(TimeUnit::kMilli),
                                duration(TimeUnit::kSecond),
                                utf8(),
                                large_utf8(),
                                binary(),
                                large_binary(),
                                fixed_size_binary(5),
                                list(int8()),
                                large_list(utf8()),
                                fixed_size_list(float32(), 4),
                                struct_({field("a", int8())}),
                                map(utf8(), float64()),
                                dictionary(int32(), utf8())};
  for (const auto& t : types) {
    auto b = MakeBuilder(t);
    ASSERT_TRUE(b.ok()) << t->ToString() << ": " << b.status().ToString();
    ASSERT_TRUE((*b)->AppendNulls(3).ok()) << t->ToString();
    ASSERT_TRUE((*b)->AppendEmptyValues(2).ok()) << t->ToString();
    auto arr = (*b)->Finish();
    ASSERT_TRUE(arr.ok()) << t->ToString() << ": " << arr.status().ToString();
    EXPECT_EQ((*arr)->length(), 5) << t->ToString();
    EXPECT_EQ((*arr)->null_count(), t->id() == TypeId::kNull ? 5 : 3) << t->ToString();
    EXPECT_TRUE((*arr)->type()->Equals(*t)) << t->ToString();
  }
}

TEST_F(CountingPoolTest, BuildersAllocateOnlyFromTheirPool) {
  const int64_t before_default = default_memory_pool()->bytes_allocated();
  {
    auto type =
        struct_({field("s", list(utf8())), field("d", dictionary(int16(), utf8())),
                 field("m", map(int32(), float64()))});
    auto builder = MakeBuilder(type, &pool_).ValueOrDie();
    auto* b = static_cast<StructBuilder*>(builder.get());
    for (int i = 0; i < 1000; ++i) {
      ASSERT_TRUE(b->Append().ok());
      auto* l = static_cast<ListBuilder*>(b->field_builder(0));
      ASSERT_TRUE(l->Append().ok());
      ASSERT_TRUE(static_cast<StringBuilder*>(l->value_builder())
                      ->Append(std::to_string(i))
                      .ok());
      auto* d = static_cast<DictionaryBuilder*>(b->field_builder(1));
      ASSERT_TRUE(d->Append(std::string_view(i % 2 ? "odd" : "even")).ok());
      auto* m = static_cast<MapBuilder*>(b->field_builder(2));
      ASSERT_TRUE(m->Append().ok());
      ASSERT_TRUE(static_cast<Int32Builder*>(m->key_builder())->Append(i).ok());
      ASSERT_TRUE(static_cast<DoubleBuilder*>(m->item_builder())->Append(i * 0.5).ok());
    }
    auto arr = b->Finish().ValueOrDie();
    EXPECT_GT(pool_.bytes_allocated(), 0);
    EXPECT_EQ(default_memory_pool()->bytes_allocated(), before_default);
  }
  // Every byte went back to the pool once the array died.
  EXPECT_EQ(pool_.bytes_allocated(), 0);
  EXPECT_GT(pool_.num_allocations(), 0);
}

}  // namespace
}  // namespace quiver
