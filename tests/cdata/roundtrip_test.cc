// Export -> import round trips through the C Data Interface: every type,
// nested types, dictionaries, slices, names, flags and metadata.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "cdata_test_util.h"

namespace quiver {
namespace {

using cdata_test::AllTypes;
using cdata_test::RandomArray;
using cdata_test::RandomBatch;

// Exports `array` with its type and imports it back.
Result<ArrayPtr> RoundTrip(const Array& array) {
  ArrowArray c_array;
  ArrowSchema c_schema;
  QUIVER_RETURN_NOT_OK(ExportArray(array, &c_array, &c_schema));
  auto back = ImportArray(&c_array, &c_schema);
  EXPECT_EQ(c_array.release, nullptr) << "the importer must take the array over";
  EXPECT_EQ(c_schema.release, nullptr) << "the importer must take the schema over";
  return back;
}

// Every buffer of `a` and `b` (same layout) at the same address: no copy.
void ExpectSameBuffers(const ArrayData& a, const ArrayData& b, const std::string& where) {
  ASSERT_EQ(a.child_data.size(), b.child_data.size()) << where;
  for (size_t i = 1; i < a.buffers.size() && i < b.buffers.size(); ++i) {
    if (a.buffers[i] == nullptr || a.buffers[i]->size() == 0) continue;
    ASSERT_NE(b.buffers[i], nullptr) << where << " buffer " << i;
    EXPECT_EQ(a.buffers[i]->data(), b.buffers[i]->data()) << where << " buffer " << i;
  }
  for (size_t i = 0; i < a.child_data.size(); ++i) {
    ExpectSameBuffers(*a.child_data[i], *b.child_data[i],
                      where + "/" + std::to_string(i));
  }
  if (a.dictionary) ExpectSameBuffers(*a.dictionary, *b.dictionary, where + "/dict");
}

TEST(CDataRoundTripTest, BigEndianBatchesAreNotExported) {
  // Batches an IPC reader kept big-endian would reach a consumer that reads
  // native order: refused, and nothing is left to release.
  auto made = RandomBatch({int32(), utf8()}, 5, 3);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  RecordBatchPtr batch = *made;
  auto big = RecordBatch::Make(batch->schema()->WithEndianness(Endianness::kBig),
                               batch->num_rows(), batch->column_data());
  ArrowArray c_array;
  ArrowSchema c_schema;
  c_array.release = nullptr;
  c_schema.release = nullptr;
  Status st = ExportRecordBatch(*big, &c_array, &c_schema);
  EXPECT_TRUE(st.IsNotImplemented()) << st.ToString();
  EXPECT_NE(st.message().find("big-endian"), std::string::npos) << st.ToString();
  EXPECT_EQ(c_array.release, nullptr);
  EXPECT_EQ(c_schema.release, nullptr);
  ASSERT_TRUE(ExportRecordBatch(*batch, &c_array, &c_schema).ok());
  c_array.release(&c_array);
  c_schema.release(&c_schema);
}

TEST(CDataRoundTripTest, EveryTypeWithNulls) {
  uint64_t seed = 1;
  for (const TypePtr& type : AllTypes()) {
    SCOPED_TRACE(type->ToString());
    auto array = RandomArray(type, 97, seed++);
    ASSERT_TRUE(array.ok()) << array.status().ToString();
    ASSERT_TRUE((*array)->ValidateFull().ok());
    auto back = RoundTrip(**array);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ASSERT_TRUE((*back)->ValidateFull().ok()) << (*back)->ValidateFull().ToString();
    EXPECT_TRUE((*back)->type()->Equals(*type)) << (*back)->type()->ToString();
    EXPECT_EQ((*back)->null_count(), (*array)->null_count());
    EXPECT_TRUE((*back)->Equals(**array));
    ExpectSameBuffers(*(*array)->data(), *(*back)->data(), "root");
  }
}

TEST(CDataRoundTripTest, SlicesTravelAsOffsets) {
  uint64_t seed = 100;
  for (const TypePtr& type : AllTypes()) {
    SCOPED_TRACE(type->ToString());
    auto array = RandomArray(type, 120, seed++);
    ASSERT_TRUE(array.ok()) << array.status().ToString();
    for (auto [off, len] :
         {std::pair<int64_t, int64_t>{13, 50}, {0, 0}, {119, 1}, {64, 56}}) {
      ArrayPtr slice = (*array)->Slice(off, len);
      ArrowArray c_array;
      ASSERT_TRUE(ExportArray(*slice, &c_array).ok());
      EXPECT_EQ(c_array.offset, off) << "a slice is exported through the offset";
      EXPECT_EQ(c_array.length, len);
      EXPECT_EQ(c_array.null_count, slice->null_count());
      auto back = ImportArray(&c_array, type);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      ASSERT_TRUE((*back)->ValidateFull().ok());
      EXPECT_TRUE((*back)->Equals(*slice));
      EXPECT_EQ((*back)->offset(), off);
    }
  }
}

TEST(CDataRoundTripTest, FormatStrings) {
  const std::vector<std::pair<TypePtr, std::string>> cases = {
      {null(), "n"},
      {boolean(), "b"},
      {int8(), "c"},
      {uint8(), "C"},
      {int16(), "s"},
      {uint16(), "S"},
      {int32(), "i"},
      {uint32(), "I"},
      {int64(), "l"},
      {uint64(), "L"},
      {float16(), "e"},
      {float32(), "f"},
      {float64(), "g"},
      {decimal128(19, 10), "d:19,10"},
      {decimal128(7, -2), "d:7,-2"},
      {date32(), "tdD"},
      {date64(), "tdm"},
      {time32(TimeUnit::kSecond), "tts"},
      {time32(TimeUnit::kMilli), "ttm"},
      {time64(TimeUnit::kMicro), "ttu"},
      {time64(TimeUnit::kNano), "ttn"},
      {timestamp(TimeUnit::kSecond), "tss:"},
      {timestamp(TimeUnit::kMilli, "UTC"), "tsm:UTC"},
      {timestamp(TimeUnit::kMicro, "America/New_York"), "tsu:America/New_York"},
      {timestamp(TimeUnit::kNano, "+01:00"), "tsn:+01:00"},
      {duration(TimeUnit::kSecond), "tDs"},
      {duration(TimeUnit::kMilli), "tDm"},
      {duration(TimeUnit::kMicro), "tDu"},
      {duration(TimeUnit::kNano), "tDn"},
      {utf8(), "u"},
      {large_utf8(), "U"},
      {binary(), "z"},
      {large_binary(), "Z"},
      {fixed_size_binary(42), "w:42"},
      {list(int32()), "+l"},
      {large_list(int32()), "+L"},
      {fixed_size_list(int32(), 123), "+w:123"},
      {struct_({field("a", int8())}), "+s"},
      {map(utf8(), float64()), "+m"},
      {dictionary(int16(), decimal128(12, 5)), "s"},
  };
  for (const auto& [type, format] : cases) {
    SCOPED_TRACE(format);
    ArrowSchema c;
    ASSERT_TRUE(ExportType(*type, &c).ok());
    EXPECT_STREQ(c.format, format.c_str());
    EXPECT_EQ(c.flags, ARROW_FLAG_NULLABLE);
    EXPECT_STREQ(c.name, "");
    EXPECT_EQ(c.metadata, nullptr);
    auto back = ImportType(&c);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE((*back)->Equals(*type)) << (*back)->ToString();
  }
}

TEST(CDataRoundTripTest, NestedSchemaLayout) {
  // The examples of the specification: map<string, float64> and a
  // dictionary-encoded decimal with int16 indices.
  ArrowSchema c;
  ASSERT_TRUE(ExportType(*map(utf8(), float64(), /*keys_sorted=*/true), &c).ok());
  EXPECT_EQ(c.flags, ARROW_FLAG_NULLABLE | ARROW_FLAG_MAP_KEYS_SORTED);
  ASSERT_EQ(c.n_children, 1);
  const ArrowSchema* entries = c.children[0];
  EXPECT_STREQ(entries->name, "entries");
  EXPECT_STREQ(entries->format, "+s");
  EXPECT_EQ(entries->flags, 0) << "map entries are not nullable";
  ASSERT_EQ(entries->n_children, 2);
  EXPECT_STREQ(entries->children[0]->name, "key");
  EXPECT_STREQ(entries->children[0]->format, "u");
  EXPECT_EQ(entries->children[0]->flags, 0);
  EXPECT_STREQ(entries->children[1]->name, "value");
  EXPECT_STREQ(entries->children[1]->format, "g");
  c.release(&c);

  ASSERT_TRUE(ExportType(*dictionary(int16(), decimal128(12, 5), true), &c).ok());
  EXPECT_STREQ(c.format, "s");
  EXPECT_EQ(c.flags, ARROW_FLAG_NULLABLE | ARROW_FLAG_DICTIONARY_ORDERED);
  ASSERT_NE(c.dictionary, nullptr);
  EXPECT_STREQ(c.dictionary->format, "d:12,5");
  EXPECT_EQ(c.n_children, 0);
  auto back = ImportType(&c);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE((*back)->ordered());
}

TEST(CDataRoundTripTest, FieldNamesFlagsAndMetadata) {
  auto md = key_value_metadata({{"key1", "value1"}, {"", std::string("\0bin\xff", 5)}});
  auto f = field("col umn", list(field("elem", int32(), false)), false, md);
  ArrowSchema c;
  ASSERT_TRUE(ExportField(*f, &c).ok());
  EXPECT_STREQ(c.name, "col umn");
  EXPECT_EQ(c.flags, 0);
  EXPECT_EQ(c.children[0]->flags, 0);
  EXPECT_STREQ(c.children[0]->name, "elem");
  auto back = ImportField(&c);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE((*back)->Equals(*f, /*check_metadata=*/true)) << (*back)->ToString();
}

TEST(CDataRoundTripTest, MetadataEncodingIsTheSpecifications) {
  // The specification's example, on a little-endian machine.
  auto f = field("x", int8(), true, key_value_metadata({{"key1", "value1"}}));
  ArrowSchema c;
  ASSERT_TRUE(ExportField(*f, &c).ok());
  const char expected[] = "\x01\x00\x00\x00\x04\x00\x00\x00key1\x06\x00\x00\x00value1";
  ASSERT_NE(c.metadata, nullptr);
  EXPECT_EQ(std::memcmp(c.metadata, expected, sizeof(expected) - 1), 0);
  c.release(&c);

  // No metadata at all is NULL, not an empty encoding.
  ASSERT_TRUE(ExportField(*field("y", int8()), &c).ok());
  EXPECT_EQ(c.metadata, nullptr);
  c.release(&c);
}

TEST(CDataRoundTripTest, RecordBatchWithSchemaMetadata) {
  auto batch = RandomBatch(AllTypes(), 77, 7);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  auto md = key_value_metadata({{"origin", "quiver"}, {"rows", "77"}});
  RecordBatchPtr with_md = (*batch)->ReplaceSchemaMetadata(md);
  ArrowArray c_array;
  ArrowSchema c_schema;
  ASSERT_TRUE(ExportRecordBatch(*with_md, &c_array, &c_schema).ok());
  EXPECT_STREQ(c_schema.format, "+s");
  EXPECT_EQ(c_schema.n_children, with_md->num_columns());
  EXPECT_EQ(c_array.n_buffers, 1);
  EXPECT_EQ(c_array.buffers[0], nullptr) << "a record batch has no validity bitmap";
  EXPECT_EQ(c_array.length, 77);
  auto back = ImportRecordBatch(&c_array, &c_schema);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE((*back)->ValidateFull().ok());
  EXPECT_TRUE((*back)->Equals(*with_md, /*check_metadata=*/true));
}

TEST(CDataRoundTripTest, SlicedRecordBatchAndKnownSchema) {
  auto batch = RandomBatch(AllTypes(), 90, 11);
  ASSERT_TRUE(batch.ok());
  RecordBatchPtr slice = (*batch)->Slice(17, 40);
  ArrowArray c_array;
  ASSERT_TRUE(ExportRecordBatch(*slice, &c_array).ok());
  // The schema known by convention instead of passed along.
  auto back = ImportRecordBatch(&c_array, slice->schema());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE((*back)->ValidateFull().ok());
  EXPECT_TRUE((*back)->Equals(*slice));
}

TEST(CDataRoundTripTest, NullTypeHasNoBuffers) {
  auto array = MakeArrayOfNull(null(), 5);
  ASSERT_TRUE(array.ok());
  ArrowArray c;
  ASSERT_TRUE(ExportArray(**array, &c).ok());
  EXPECT_EQ(c.n_buffers, 0);
  EXPECT_EQ(c.null_count, 5);
  auto back = ImportArray(&c, null());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)->length(), 5);
  EXPECT_EQ((*back)->null_count(), 5);
}

TEST(CDataRoundTripTest, ExportedNullCountIsComputed) {
  // An array whose null count is not known yet is exported with the count.
  auto array = RandomArray(int32(), 64, 3);
  ASSERT_TRUE(array.ok());
  const int64_t nulls = (*array)->null_count();
  ASSERT_GT(nulls, 0);
  ArrayPtr slice = (*array)->Slice(5, 40);
  ASSERT_EQ(slice->data()->null_count, kUnknownNullCount);
  ArrowArray c;
  ASSERT_TRUE(ExportArray(*slice, &c).ok());
  EXPECT_GE(c.null_count, 0);
  EXPECT_EQ(c.null_count, slice->null_count());
  c.release(&c);
}

TEST(CDataRoundTripTest, EmptyArraysOfVariableSize) {
  // A zero-length array built without buffers still exports readable
  // offsets (consumers may read offsets[0]).
  for (const TypePtr& type : {utf8(), large_binary(), list(int8()), large_list(int8())}) {
    SCOPED_TRACE(type->ToString());
    auto empty = MakeEmptyArray(type);
    ASSERT_TRUE(empty.ok());
    ArrowArray c;
    ASSERT_TRUE(ExportArray(**empty, &c).ok());
    ASSERT_NE(c.buffers[1], nullptr);
    if (IsLargeOffsets(type->id())) {
      int64_t first = -1;
      std::memcpy(&first, c.buffers[1], sizeof(first));
      EXPECT_EQ(first, 0);
    } else {
      int32_t first = -1;
      std::memcpy(&first, c.buffers[1], sizeof(first));
      EXPECT_EQ(first, 0);
    }
    auto back = ImportArray(&c, type);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ((*back)->length(), 0);
  }
}

}  // namespace
}  // namespace quiver
