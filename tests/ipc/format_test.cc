// The exact bytes of the formats: framing, padding, end-of-stream, file
// magic and footer, legacy framing, alignments.

#include <gtest/gtest.h>

#include <cstring>

#include "ipc_test_util.h"

namespace quiver::ipc::test {
namespace {

int32_t I32At(const Buffer& b, int64_t at) {
  int32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
uint32_t U32At(const Buffer& b, int64_t at) {
  return static_cast<uint32_t>(I32At(b, at));
}

RecordBatchPtr TinyBatch() {
  auto a = ArrayFromVector<Int32Type>({1, 2, 3}).ValueOrDie();
  return RecordBatch::Make(schema({field("x", int32(), false)}), 3, {a});
}

// The stream of TinyBatch() with 8-byte alignment, byte for byte. Arrow JS
// (apache-arrow 21) reads it as one batch x = [1, 2, 3].
// clang-format off
const uint8_t kTinyStream[] = {
    // Schema message: continuation marker, metadata length 120, flatbuffer.
    0xff, 0xff, 0xff, 0xff, 0x78, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x0a, 0x00, 0x0c, 0x00, 0x06, 0x00, 0x05, 0x00, 0x08, 0x00,
    0x0a, 0x00, 0x00, 0x00, 0x00, 0x01, 0x04, 0x00, 0x0c, 0x00, 0x00, 0x00,
    0x08, 0x00, 0x08, 0x00, 0x00, 0x00, 0x04, 0x00, 0x08, 0x00, 0x00, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
    0x10, 0x00, 0x14, 0x00, 0x10, 0x00, 0x00, 0x00, 0x0f, 0x00, 0x08, 0x00,
    0x00, 0x00, 0x04, 0x00, 0x10, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
    0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x08, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x78, 0x00, 0x00, 0x00,
    0x08, 0x00, 0x0c, 0x00, 0x08, 0x00, 0x07, 0x00, 0x08, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x01, 0x20, 0x00, 0x00, 0x00,
    // RecordBatch message at 128: marker, metadata length 136, flatbuffer.
    0xff, 0xff, 0xff, 0xff, 0x88, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x16, 0x00, 0x06, 0x00, 0x05, 0x00,
    0x08, 0x00, 0x0c, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x03, 0x04, 0x00,
    0x18, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x0a, 0x00, 0x18, 0x00, 0x0c, 0x00, 0x04, 0x00, 0x08, 0x00,
    0x0a, 0x00, 0x00, 0x00, 0x3c, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    // Body at 272: the int32 values 1, 2, 3 and 4 bytes of padding.
    0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00,
    // End of stream at 288.
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00,
};
// clang-format on

TEST(Format, TinyStreamGoldenBytes) {
  IpcWriteOptions o;
  o.alignment = 8;
  ASSERT_OK_AND_ASSIGN(auto data, WriteBatches({TinyBatch()}, IpcFormat::kStream, o));
  ASSERT_EQ(data->size(), static_cast<int64_t>(sizeof(kTinyStream)));
  EXPECT_EQ(std::memcmp(data->data(), kTinyStream, sizeof(kTinyStream)), 0);

  // And it reads back, with the body where the bytes above say.
  auto golden = Buffer::Wrap(kTinyStream, sizeof(kTinyStream));
  ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(golden));
  ASSERT_EQ(read.size(), 1u);
  EXPECT_TRUE(BatchesEqual(*TinyBatch(), *read[0]));
  EXPECT_EQ(read[0]->column_data(0)->buffers[1]->data(), kTinyStream + 272);
}

TEST(Format, FramingAndPaddingRules) {
  for (int32_t align : {8, 64, 512}) {
    SCOPED_TRACE("alignment " + std::to_string(align));
    IpcWriteOptions o;
    o.alignment = align;
    ASSERT_OK_AND_ASSIGN(auto data, WriteBatches({TinyBatch()}, IpcFormat::kStream, o));
    // Schema message: marker, length, and the next message starts aligned.
    EXPECT_EQ(U32At(*data, 0), 0xFFFFFFFFu);
    const int64_t schema_len = I32At(*data, 4);
    const int64_t rb = 8 + schema_len;
    EXPECT_EQ(rb % align, 0);
    // RecordBatch message: its body starts aligned.
    EXPECT_EQ(U32At(*data, rb), 0xFFFFFFFFu);
    const int64_t body = rb + 8 + I32At(*data, rb + 4);
    EXPECT_EQ(body % align, 0);
    int32_t values[3];
    std::memcpy(values, data->data() + body, 12);
    EXPECT_EQ(values[0], 1);
    EXPECT_EQ(values[2], 3);
    // Padding after the 12 value bytes is zero, up to the aligned body end,
    // then the end-of-stream marker closes the stream.
    const int64_t eos = body + (12 + align - 1) / align * align;
    for (int64_t i = body + 12; i < eos; ++i) ASSERT_EQ(data->data()[i], 0) << i;
    EXPECT_EQ(U32At(*data, eos), 0xFFFFFFFFu);
    EXPECT_EQ(I32At(*data, eos + 4), 0);
    EXPECT_EQ(data->size(), eos + 8);
    ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(data));
    ASSERT_EQ(read.size(), 1u);
    EXPECT_EQ(
        reinterpret_cast<uintptr_t>(read[0]->column_data(0)->buffers[1]->data()) % align,
        reinterpret_cast<uintptr_t>(data->data()) % align);
  }
}

TEST(Format, FileLayout) {
  auto batch = TinyBatch();
  ASSERT_OK_AND_ASSIGN(auto sink, io::BufferOutputStream::Create());
  auto footer_md = key_value_metadata({{"written-by", "quiver"}});
  ASSERT_OK_AND_ASSIGN(auto writer,
                       MakeFileWriter(sink.get(), batch->schema(), {}, footer_md));
  ASSERT_OK(writer->WriteRecordBatch(*batch));
  ASSERT_OK(writer->WriteRecordBatch(*batch));
  ASSERT_OK(writer->Close());
  ASSERT_OK_AND_ASSIGN(auto data, sink->Finish());
  const int64_t n = data->size();
  EXPECT_EQ(std::memcmp(data->data(), "ARROW1\0\0", 8), 0);
  EXPECT_EQ(std::memcmp(data->data() + n - 6, "ARROW1", 6), 0);
  EXPECT_EQ(U32At(*data, 8), 0xFFFFFFFFu);  // the schema message follows the magic
  const int64_t footer_len = I32At(*data, n - 10);
  const int64_t footer_start = n - 10 - footer_len;
  // The embedded stream ends with its end-of-stream marker.
  EXPECT_EQ(U32At(*data, footer_start - 8), 0xFFFFFFFFu);
  EXPECT_EQ(I32At(*data, footer_start - 4), 0);

  ASSERT_OK_AND_ASSIGN(auto reader, RecordBatchFileReader::Open(data));
  EXPECT_EQ(reader->num_record_batches(), 2);
  EXPECT_EQ(reader->version(), MetadataVersion::kV5);
  ASSERT_NE(reader->footer_metadata(), nullptr);
  EXPECT_TRUE(reader->footer_metadata()->Equals(*footer_md));
  for (const auto& block : reader->record_batch_blocks()) {
    EXPECT_EQ(U32At(*data, block.offset), 0xFFFFFFFFu);
    EXPECT_EQ(block.metadata_length, 8 + I32At(*data, block.offset + 4));
    EXPECT_EQ((block.offset + block.metadata_length) % 64, 0);
  }
  ASSERT_OK_AND_ASSIGN(auto b1, reader->ReadRecordBatch(1));
  EXPECT_TRUE(BatchesEqual(*batch, *b1));
  EXPECT_TRUE(reader->ReadRecordBatch(2).status().IsIndexError());
  EXPECT_TRUE(reader->ReadRecordBatch(-1).status().IsIndexError());
  auto batches = reader->AsBatchReader();
  ASSERT_OK_AND_ASSIGN(auto all, batches->ReadAll());
  EXPECT_EQ(all.size(), 2u);
  // A file is also a stream after its first 8 bytes.
  ASSERT_OK_AND_ASSIGN(
      auto stream, RecordBatchStreamReader::Open(MessageReader::FromBuffer(data, {}, 8)));
  ASSERT_OK_AND_ASSIGN(auto streamed, stream->ReadAll());
  EXPECT_EQ(streamed.size(), 2u);
}

// Older writers left the footer's version unset (V1, the flatbuffer's
// default) in files of V4 messages; Arrow C++ and Arrow JS read them. The
// messages' own versions still count, and a footer version newer than V5 (or
// negative) stays an error.
TEST(Format, FooterWithItsVersionUnsetIsRead) {
  auto batch = TinyBatch();
  ASSERT_OK_AND_ASSIGN(auto data, WriteBatches({batch, batch}, IpcFormat::kFile));
  const int64_t n = data->size();
  const int64_t footer_start = n - 10 - I32At(*data, n - 10);
  // The Footer table, its vtable, and the offset of field 0 (version): V5 is
  // not the default, so it is stored.
  const int64_t table = footer_start + U32At(*data, footer_start);
  const int64_t vtable = table - I32At(*data, table);
  uint16_t field = 0;
  std::memcpy(&field, data->data() + vtable + 4, sizeof(field));
  ASSERT_NE(field, 0);
  auto with_version = [&](int16_t v) {
    std::string bytes(reinterpret_cast<const char*>(data->data()), n);
    std::memcpy(bytes.data() + table + field, &v, sizeof(v));
    return Buffer::FromString(std::move(bytes));
  };
  for (int16_t unset : {0, 1, 2}) {  // V1, V2, V3
    auto reader = RecordBatchFileReader::Open(with_version(unset));
    ASSERT_TRUE(reader.ok()) << unset << ": " << reader.status().ToString();
    EXPECT_EQ((*reader)->version(), MetadataVersion::kV4);
    ASSERT_OK_AND_ASSIGN(auto b1, (*reader)->ReadRecordBatch(1));
    EXPECT_TRUE(BatchesEqual(*batch, *b1));
  }
  for (int16_t bad : {5, -1}) {
    auto reader = RecordBatchFileReader::Open(with_version(bad));
    ASSERT_FALSE(reader.ok()) << bad;
    EXPECT_NE(reader.status().message().find("metadata version"), std::string::npos)
        << reader.status().ToString();
  }
}

TEST(Format, StreamWithoutEndOfStreamMarker) {
  ASSERT_OK_AND_ASSIGN(auto data,
                       WriteBatches({TinyBatch(), TinyBatch()}, IpcFormat::kStream));
  ASSERT_OK_AND_ASSIGN(auto cut, Buffer::SliceSafe(data, 0, data->size() - 8));
  ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(cut));
  EXPECT_EQ(read.size(), 2u);
}

TEST(Format, LegacyFraming) {
  IpcWriteOptions o;
  o.write_legacy_format = true;
  o.alignment = 8;
  ASSERT_OK_AND_ASSIGN(auto data, WriteBatches({TinyBatch()}, IpcFormat::kStream, o));
  // No continuation marker: the stream starts with the metadata length, and
  // (4 + length) keeps the next message 8-byte aligned.
  const int32_t len = I32At(*data, 0);
  EXPECT_GT(len, 0);
  EXPECT_EQ((4 + len) % 8, 0);
  EXPECT_EQ(I32At(*data, data->size() - 4), 0);  // 4-byte end of stream
  EXPECT_NE(U32At(*data, data->size() - 8), 0xFFFFFFFFu);
  ASSERT_OK_AND_ASSIGN(auto format, DetectFormat(*data));
  EXPECT_EQ(format, IpcFormat::kStream);
  ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(data));
  ASSERT_EQ(read.size(), 1u);
  EXPECT_TRUE(BatchesEqual(*TinyBatch(), *read[0]));
  // Legacy streams without their end marker are accepted too.
  ASSERT_OK_AND_ASSIGN(auto cut, Buffer::SliceSafe(data, 0, data->size() - 4));
  ASSERT_OK_AND_ASSIGN(read, ReadBatches(cut));
  EXPECT_EQ(read.size(), 1u);
}

TEST(Format, MisalignedInputIsCopiedNotMisread) {
  // The same stream placed at an odd address: metadata and buffers are
  // copied to aligned memory, the values are still right.
  ASSERT_OK_AND_ASSIGN(auto data, WriteBatches({TinyBatch()}, IpcFormat::kStream));
  std::vector<uint8_t> shifted(static_cast<size_t>(data->size()) + 1);
  std::memcpy(shifted.data() + 1, data->data(), static_cast<size_t>(data->size()));
  auto odd = Buffer::Wrap(shifted.data() + 1, data->size());
  ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(odd));
  ASSERT_EQ(read.size(), 1u);
  EXPECT_TRUE(BatchesEqual(*TinyBatch(), *read[0]));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(read[0]->column_data(0)->buffers[1]->data()) % 8,
            0u);
}

TEST(Format, DetectFormat) {
  ASSERT_OK_AND_ASSIGN(auto stream, WriteBatches({TinyBatch()}, IpcFormat::kStream));
  ASSERT_OK_AND_ASSIGN(auto file, WriteBatches({TinyBatch()}, IpcFormat::kFile));
  EXPECT_EQ(*DetectFormat(*stream), IpcFormat::kStream);
  EXPECT_EQ(*DetectFormat(*file), IpcFormat::kFile);
  EXPECT_TRUE(DetectFormat(*Buffer::FromString("")).status().IsInvalid());
  EXPECT_TRUE(DetectFormat(*Buffer::FromString("hello, world")).status().IsInvalid());
  EXPECT_TRUE(ReadTableFromBuffer(Buffer::FromString("\xff\xff\xff\xff\xff\xff\xff\xff"))
                  .status()
                  .IsInvalid());
}

TEST(Format, ZeroCopyFromMemoryMappedFile) {
  ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch(AllTypes(), 64, 5));
  ASSERT_OK_AND_ASSIGN(auto data, WriteBatches({batch}, IpcFormat::kFile));
  std::string path = ::testing::TempDir() + "/quiver_ipc_mmap_test.arrow";
  {
    ASSERT_OK_AND_ASSIGN(auto out, io::FileOutputStream::Open(path));
    ASSERT_OK(out->Write(*data));
    ASSERT_OK(out->Close());
  }
  ASSERT_OK_AND_ASSIGN(auto mapped, io::MemoryMapFile(path));
  ASSERT_OK_AND_ASSIGN(auto table, ReadTableFromBuffer(mapped));
  ASSERT_OK(table->ValidateFull());
  for (const auto& column : table->columns()) {
    for (const auto& chunk : column->chunks()) {
      EXPECT_TRUE(AllBuffersInside(*chunk->data(), *mapped));
    }
  }
  mapped.reset();  // the table keeps the mapping alive
  ASSERT_OK_AND_ASSIGN(auto expected, Table::FromRecordBatches({batch}));
  EXPECT_TRUE(table->Equals(*expected));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace quiver::ipc::test
