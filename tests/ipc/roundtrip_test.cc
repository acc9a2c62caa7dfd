// Round trips through the stream and file formats: every type, nulls,
// slices, nesting, several batches, metadata, compression, zero-copy.

#include <gtest/gtest.h>

#include "ipc_test_util.h"

namespace quiver::ipc::test {
namespace {

struct Case {
  IpcFormat format;
  Compression compression;
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return std::string(IpcFormatName(info.param.format)) + "_" +
         CompressionName(info.param.compression);
}

class RoundTripTest : public ::testing::TestWithParam<Case> {
 protected:
  IpcWriteOptions WriteOptions() const {
    IpcWriteOptions o;
    o.compression = GetParam().compression;
    return o;
  }
  bool compressed() const { return GetParam().compression != Compression::kUncompressed; }

  // Writes the batches, reads them back, checks equality, ValidateFull and,
  // when nothing needed decompression, that every buffer aliases the input.
  void Check(const std::vector<RecordBatchPtr>& batches, bool check_metadata = false) {
    ASSERT_OK_AND_ASSIGN(auto data,
                         WriteBatches(batches, GetParam().format, WriteOptions()));
    ASSERT_OK_AND_ASSIGN(IpcFormat detected, DetectFormat(*data));
    EXPECT_EQ(detected, GetParam().format);
    IpcReadOptions ro;
    ro.validate_full = true;
    ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(data, ro));
    ASSERT_EQ(read.size(), batches.size());
    for (size_t i = 0; i < batches.size(); ++i) {
      ASSERT_OK(read[i]->ValidateFull());
      EXPECT_TRUE(BatchesEqual(*batches[i], *read[i], check_metadata)) << "batch " << i;
      if (!compressed()) {
        for (int c = 0; c < read[i]->num_columns(); ++c) {
          EXPECT_TRUE(AllBuffersInside(*read[i]->column_data(c), *data))
              << "batch " << i << " column " << c;
        }
      }
    }
  }
};

TEST_P(RoundTripTest, EveryTypeWithNulls) {
  for (const TypePtr& type : AllTypes()) {
    SCOPED_TRACE(type->ToString());
    ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch({type}, 37, 7));
    Check({batch});
  }
}

TEST_P(RoundTripTest, AllTypesInOneBatch) {
  ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch(AllTypes(), 100, 11));
  Check({batch});
}

TEST_P(RoundTripTest, SlicedArrays) {
  // Offsets that are and are not multiples of 8, so bitmaps are both sliced
  // in place and re-packed, and offsets re-based.
  ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch(AllTypes(), 120, 21));
  for (int64_t offset : {1, 3, 8, 13, 64, 119}) {
    for (int64_t length : {int64_t{0}, int64_t{1}, int64_t{9}, 120 - offset}) {
      if (offset + length > 120) continue;
      SCOPED_TRACE("offset " + std::to_string(offset) + " length " +
                   std::to_string(length));
      Check({batch->Slice(offset, length)});
    }
  }
}

TEST_P(RoundTripTest, NestedSlicedChildren) {
  // A struct whose children have their own offsets, inside a list slice.
  ASSERT_OK_AND_ASSIGN(auto a, RandomArray(int32(), 50, 1));
  ASSERT_OK_AND_ASSIGN(auto s, RandomArray(utf8(), 50, 2));
  auto st = StructArray::Make({a->Slice(5, 40), s->Slice(9, 40)}, {"a", "s"});
  ASSERT_OK(st.status());
  auto batch = RecordBatch::FromArrays({"st"}, {(*st)->Slice(3, 30)});
  ASSERT_OK(batch.status());
  Check({*batch});
}

TEST_P(RoundTripTest, SeveralBatchesAndZeroRows) {
  std::vector<TypePtr> types = {int64(), utf8(), list(float64()),
                                struct_({field("b", boolean())})};
  std::vector<RecordBatchPtr> batches;
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK_AND_ASSIGN(auto b, RandomBatch(types, i == 2 ? 0 : 10 * i + 3, 100 + i));
    batches.push_back(b);
  }
  // All batches must share one schema: rebuild them on the first's.
  for (auto& b : batches)
    b = RecordBatch::Make(batches[0]->schema(), b->num_rows(), b->column_data());
  Check(batches);
}

TEST_P(RoundTripTest, EmptySchema) {
  auto batch = RecordBatch::Make(schema({}), 5, std::vector<ArrayDataPtr>{});
  Check({batch, RecordBatch::Make(schema({}), 0, std::vector<ArrayDataPtr>{})});
}

TEST_P(RoundTripTest, SchemaAndFieldMetadata) {
  auto md =
      key_value_metadata({{"origin", "quiver"}, {"k", "v1"}, {"k", "v2"}, {"", ""}});
  auto child = field("item", int8(), true, key_value_metadata({{"child", "yes"}}));
  auto s = schema({field("a", int32(), false, key_value_metadata({{"unit", "m"}})),
                   field("b", list(child), true)},
                  md);
  ASSERT_OK_AND_ASSIGN(auto a, RandomArray(int32(), 20, 3, 0));
  ASSERT_OK_AND_ASSIGN(auto b, RandomArray(list(child), 20, 4));
  Check({RecordBatch::Make(s, 20, {a, b})}, /*check_metadata=*/true);
}

TEST_P(RoundTripTest, AllNullAndNoNullColumns) {
  ASSERT_OK_AND_ASSIGN(auto nulls, RandomArray(utf8(), 40, 5, 100));
  ASSERT_OK_AND_ASSIGN(auto dense, RandomArray(utf8(), 40, 6, 0));
  auto batch = RecordBatch::FromArrays({"nulls", "dense"}, {nulls, dense});
  ASSERT_OK(batch.status());
  Check({*batch});
}

INSTANTIATE_TEST_SUITE_P(
    Formats, RoundTripTest,
    ::testing::Values(Case{IpcFormat::kStream, Compression::kUncompressed},
                      Case{IpcFormat::kFile, Compression::kUncompressed},
                      Case{IpcFormat::kStream, Compression::kLz4Frame},
                      Case{IpcFormat::kFile, Compression::kZstd}),
    CaseName);

TEST(RoundTrip, CompressionShrinksCompressibleBodies) {
  Int64Builder b;
  for (int i = 0; i < 100000; ++i) ASSERT_OK(b.Append(i % 10));
  ASSERT_OK_AND_ASSIGN(auto a, b.Finish());
  ASSERT_OK_AND_ASSIGN(auto batch, RecordBatch::FromArrays({"x"}, {a}));
  for (Compression c : {Compression::kLz4Frame, Compression::kZstd}) {
    IpcWriteOptions o;
    o.compression = c;
    ASSERT_OK_AND_ASSIGN(auto plain, WriteBatches({batch}, IpcFormat::kStream));
    ASSERT_OK_AND_ASSIGN(auto packed, WriteBatches({batch}, IpcFormat::kStream, o));
    EXPECT_LT(packed->size() * 10, plain->size()) << CompressionName(c);
    ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(packed));
    ASSERT_EQ(read.size(), 1u);
    EXPECT_TRUE(BatchesEqual(*batch, *read[0]));
  }
}

TEST(RoundTrip, IncompressibleBuffersAreStoredRaw) {
  // Random bytes do not compress: the writer stores them with length -1 and
  // the reader hands out slices of the input without a copy.
  std::mt19937_64 rng(9);
  UInt64Builder b;
  for (int i = 0; i < 512; ++i) ASSERT_OK(b.Append(rng()));
  ASSERT_OK_AND_ASSIGN(auto a, b.Finish());
  ASSERT_OK_AND_ASSIGN(auto batch, RecordBatch::FromArrays({"x"}, {a}));
  IpcWriteOptions o;
  o.compression = Compression::kZstd;
  ASSERT_OK_AND_ASSIGN(auto data, WriteBatches({batch}, IpcFormat::kStream, o));
  ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(data));
  ASSERT_EQ(read.size(), 1u);
  EXPECT_TRUE(BatchesEqual(*batch, *read[0]));
  EXPECT_TRUE(AllBuffersInside(*read[0]->column_data(0), *data));
}

TEST(RoundTrip, AlignmentEightAndLegacyFraming) {
  ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch(AllTypes(), 33, 31));
  for (bool legacy : {false, true}) {
    IpcWriteOptions o;
    o.alignment = 8;
    o.write_legacy_format = legacy;
    ASSERT_OK_AND_ASSIGN(auto data, WriteBatches({batch, batch}, IpcFormat::kStream, o));
    ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(data));
    ASSERT_EQ(read.size(), 2u);
    EXPECT_TRUE(BatchesEqual(*batch, *read[1])) << "legacy " << legacy;
  }
}

TEST(RoundTrip, BadAlignmentIsRejected) {
  ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch({int32()}, 3, 1));
  for (int32_t a : {0, 4, 12, -8}) {
    IpcWriteOptions o;
    o.alignment = a;
    auto r = WriteBatches({batch}, IpcFormat::kStream, o);
    EXPECT_TRUE(r.status().IsInvalid()) << a << ": " << r.status().ToString();
  }
}

TEST(RoundTrip, WriteTableAndReadTable) {
  ASSERT_OK_AND_ASSIGN(auto b1, RandomBatch({int32(), utf8()}, 10, 1));
  auto b2 = RecordBatch::Make(b1->schema(), 5, b1->Slice(2, 5)->column_data());
  ASSERT_OK_AND_ASSIGN(auto table, Table::FromRecordBatches({b1, b2}));
  for (IpcFormat f : {IpcFormat::kStream, IpcFormat::kFile}) {
    ASSERT_OK_AND_ASSIGN(auto data, SerializeTable(*table, f));
    ASSERT_OK_AND_ASSIGN(int64_t size, GetSerializedSize(*table, f));
    EXPECT_EQ(size, data->size());
    ASSERT_OK_AND_ASSIGN(auto read, ReadTableFromBuffer(data));
    EXPECT_TRUE(read->Equals(*table)) << read->ToString();
    ASSERT_OK(read->ValidateFull());
  }
}

TEST(RoundTrip, SchemaMismatchAndClosedWriterFail) {
  ASSERT_OK_AND_ASSIGN(auto b1, RandomBatch({int32()}, 3, 1));
  ASSERT_OK_AND_ASSIGN(auto b2, RandomBatch({int64()}, 3, 1));
  ASSERT_OK_AND_ASSIGN(auto sink, io::BufferOutputStream::Create());
  ASSERT_OK_AND_ASSIGN(auto writer, MakeStreamWriter(sink.get(), b1->schema()));
  Status st = writer->WriteRecordBatch(*b2);
  EXPECT_TRUE(st.IsInvalid()) << st.ToString();
  ASSERT_OK(writer->WriteRecordBatch(*b1));
  ASSERT_OK(writer->Close());
  ASSERT_OK(writer->Close());
  EXPECT_TRUE(writer->WriteRecordBatch(*b1).IsInvalid());
  EXPECT_EQ(writer->stats().num_record_batches, 1);
}

TEST(RoundTrip, ReadFromInputStream) {
  ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch(AllTypes(), 50, 77));
  ASSERT_OK_AND_ASSIGN(auto data,
                       WriteBatches({batch, batch->Slice(7, 20)}, IpcFormat::kStream));
  io::BufferInputStream in(data);
  ASSERT_OK_AND_ASSIGN(auto reader, RecordBatchStreamReader::Open(&in));
  ASSERT_OK_AND_ASSIGN(auto b0, reader->Next());
  ASSERT_OK_AND_ASSIGN(auto b1, reader->Next());
  ASSERT_OK_AND_ASSIGN(auto end, reader->Next());
  ASSERT_NE(b0, nullptr);
  ASSERT_NE(b1, nullptr);
  EXPECT_EQ(end, nullptr);
  EXPECT_TRUE(BatchesEqual(*batch, *b0));
  EXPECT_TRUE(BatchesEqual(*batch->Slice(7, 20), *b1));
  EXPECT_EQ(reader->stats().num_record_batches, 2);
}

}  // namespace
}  // namespace quiver::ipc::test
