// Hand-made malformed inputs: every check of the reader must answer with an
// error naming what is wrong.

#include <gtest/gtest.h>

#include <functional>

#include "arrow_fbs/File_generated.h"
#include "ipc_test_util.h"

namespace quiver::ipc::test {
namespace {

namespace fb = ::quiver::flatbuf;
using FBB = ::flatbuffers::FlatBufferBuilder;
using ::flatbuffers::Offset;

// ---- Building blocks ----

std::shared_ptr<Buffer> Finished(FBB& fbb) {
  return Buffer::FromString(
      std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize()));
}

// One framed message (8-byte alignment) with `body` padded to 8 bytes.
std::string Frame(const Buffer& metadata, const std::string& body = "") {
  auto sink = io::BufferOutputStream::Create().ValueOrDie();
  IpcWriteOptions o;
  o.alignment = 8;
  EXPECT_TRUE(WriteMessageMetadata(metadata, sink.get(), o).ok());
  std::string out(sink->Finish().ValueOrDie()->view());
  out += body;
  out.append((8 - body.size() % 8) % 8, '\0');
  return out;
}

std::shared_ptr<Buffer> Stream(const std::vector<std::string>& frames) {
  std::string out;
  for (const auto& f : frames) out += f;
  out += std::string("\xff\xff\xff\xff\0\0\0\0", 8);
  return ExactCopy(reinterpret_cast<const uint8_t*>(out.data()),
                   static_cast<int64_t>(out.size()));
}

// A Schema message with one field made by `make_field`.
std::string SchemaFrame(const std::function<Offset<fb::Field>(FBB&)>& make_field,
                        fb::MetadataVersion version = fb::MetadataVersion::V5,
                        fb::Endianness endianness = fb::Endianness::Little) {
  FBB fbb;
  auto field = make_field(fbb);
  auto fields = fbb.CreateVector(std::vector<Offset<fb::Field>>{field});
  auto s = fb::CreateSchema(fbb, endianness, fields);
  fbb.Finish(fb::CreateMessage(fbb, version, fb::MessageHeader::Schema, s.Union(), 0));
  return Frame(*Finished(fbb));
}

// A field "f" of a type with the given union member and no children.
std::function<Offset<fb::Field>(FBB&)> FieldOf(
    fb::Type type, const std::function<Offset<void>(FBB&)>& make_type,
    bool with_child = false) {
  return [=](FBB& fbb) {
    auto t = make_type(fbb);
    std::vector<Offset<fb::Field>> kids;
    if (with_child) {
      auto child_type = fb::CreateInt(fbb, 32, true).Union();
      kids.push_back(fb::CreateFieldDirect(fbb, "c", true, fb::Type::Int, child_type));
    }
    return fb::CreateFieldDirect(fbb, "f", true, type, t, 0, &kids);
  };
}

std::string EncodedSchemaFrame(const SchemaPtr& s) {
  auto map = DictionaryFieldMap::Make(*s).ValueOrDie();
  return Frame(*EncodeSchema(*s, map).ValueOrDie());
}

std::string BatchFrame(const BatchMetadata& md, const std::string& body) {
  return Frame(*EncodeRecordBatch(md).ValueOrDie(), body);
}

// Like BatchFrame, but without the encoder's own checks (negative values),
// and of any metadata version.
std::string RawBatchFrame(const BatchMetadata& md, const std::string& body,
                          fb::MetadataVersion version = fb::MetadataVersion::V5) {
  FBB fbb;
  std::vector<fb::FieldNode> nodes;
  for (const auto& n : md.nodes) nodes.emplace_back(n.length, n.null_count);
  std::vector<fb::Buffer> buffers;
  for (const auto& b : md.buffers) buffers.emplace_back(b.offset, b.length);
  auto rb = fb::CreateRecordBatch(fbb, md.length, fbb.CreateVectorOfStructs(nodes),
                                  fbb.CreateVectorOfStructs(buffers));
  fbb.Finish(fb::CreateMessage(fbb, version, fb::MessageHeader::RecordBatch, rb.Union(),
                               md.body_length));
  return Frame(*Finished(fbb), body);
}

std::string DictFrame(int64_t id, bool delta, const BatchMetadata& md,
                      const std::string& body) {
  return Frame(*EncodeDictionaryBatch(id, delta, md).ValueOrDie(), body);
}

std::string Le32(std::initializer_list<int32_t> values) {
  std::string out;
  for (int32_t v : values) out.append(reinterpret_cast<const char*>(&v), 4);
  return out;
}

// Reads the whole stream and returns the error (OK if it was read).
Status ReadError(const std::shared_ptr<Buffer>& data, const IpcReadOptions& o = {}) {
  return ReadBatches(data, o).status();
}

::testing::AssertionResult FailsWith(const Status& st, StatusCode code,
                                     std::initializer_list<const char*> parts) {
  if (st.ok()) return ::testing::AssertionFailure() << "unexpectedly OK";
  if (st.code() != code) {
    return ::testing::AssertionFailure() << "wrong code: " << st.ToString();
  }
  for (const char* p : parts) {
    if (st.message().find(p) == std::string::npos) {
      return ::testing::AssertionFailure() << "'" << p << "' not in: " << st.ToString();
    }
  }
  return ::testing::AssertionSuccess();
}

const auto kInvalid = StatusCode::kInvalid;
const auto kNotImplemented = StatusCode::kNotImplemented;

BatchMetadata Md(int64_t length, std::vector<FieldNode> nodes,
                 std::vector<BufferSpec> buffers, int64_t body_length,
                 Compression c = Compression::kUncompressed) {
  BatchMetadata md;
  md.length = length;
  md.nodes = std::move(nodes);
  md.buffers = std::move(buffers);
  md.body_length = body_length;
  md.compression = c;
  return md;
}

SchemaPtr Int32Schema() { return schema({field("x", int32())}); }
SchemaPtr Utf8Schema() { return schema({field("s", utf8())}); }
SchemaPtr DictSchema() { return schema({field("d", dictionary(int8(), utf8()))}); }

// ---- Schemas ----

TEST(Malformed, UnsupportedTypesAreNamed) {
  struct Case {
    fb::Type type;
    std::function<Offset<void>(FBB&)> make;
    bool child;
    const char* name;
  };
  const std::vector<Case> cases = {
      {static_cast<fb::Type>(27), [](FBB& f) { return fb::CreateNull(f).Union(); }, false,
       "unknown type id 27"},
  };
  for (const auto& c : cases) {
    auto data = Stream({SchemaFrame(FieldOf(c.type, c.make, c.child))});
    EXPECT_TRUE(FailsWith(ReadError(data), kNotImplemented, {c.name, "field 'f'"}));
  }
}

TEST(Malformed, InvalidTypeParameters) {
  struct Case {
    fb::Type type;
    std::function<Offset<void>(FBB&)> make;
    bool child;
    const char* what;
  };
  const std::vector<Case> cases = {
      {fb::Type::Int, [](FBB& f) { return fb::CreateInt(f, 7, true).Union(); }, false,
       "7 bits"},
      {fb::Type::Int, [](FBB&) { return Offset<void>(); }, false,
       "without its parameters"},
      {fb::Type::Time,
       [](FBB& f) { return fb::CreateTime(f, fb::TimeUnit::NANOSECOND, 32).Union(); },
       false, "time32"},
      {fb::Type::Timestamp,
       [](FBB& f) {
         return fb::CreateTimestamp(f, static_cast<fb::TimeUnit>(9)).Union();
       },
       false, "unknown time unit 9"},
      {fb::Type::FixedSizeBinary,
       [](FBB& f) { return fb::CreateFixedSizeBinary(f, -1).Union(); }, false, "-1"},
      {fb::Type::List, [](FBB& f) { return fb::CreateList(f).Union(); }, false,
       "0 children"},
      {fb::Type::Int, [](FBB& f) { return fb::CreateInt(f, 32, true).Union(); }, true,
       "1 children"},
      {fb::Type::Map, [](FBB& f) { return fb::CreateMap(f).Union(); }, true, "Map type"},
      {fb::Type::Decimal, [](FBB& f) { return fb::CreateDecimal(f, 0, 0, 128).Union(); },
       false, "precision"},
      {fb::Type::Decimal, [](FBB& f) { return fb::CreateDecimal(f, 10, 0, 32).Union(); },
       false, "decimal32 precision must be in [1, 9]"},
      {fb::Type::Decimal, [](FBB& f) { return fb::CreateDecimal(f, 77, 0, 256).Union(); },
       false, "decimal256 precision must be in [1, 76]"},
      {fb::Type::Decimal, [](FBB& f) { return fb::CreateDecimal(f, 5, 0, 96).Union(); },
       false, "96 bits"},
      {fb::Type::NONE, [](FBB&) { return Offset<void>(); }, false, "without a type"},
  };
  for (const auto& c : cases) {
    Status st = ReadError(Stream({SchemaFrame(FieldOf(c.type, c.make, c.child))}));
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find(c.what), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find("field 'f'"), std::string::npos) << st.ToString();
  }
}

TEST(Malformed, EndiannessAndVersions) {
  auto int_field =
      FieldOf(fb::Type::Int, [](FBB& f) { return fb::CreateInt(f, 32, true).Union(); });
  // Big-endian is readable (bigendian_test.cc); no other byte order exists.
  EXPECT_TRUE(ReadError(Stream({SchemaFrame(int_field, fb::MetadataVersion::V5,
                                            fb::Endianness::Big)}))
                  .ok());
  EXPECT_TRUE(FailsWith(ReadError(Stream({SchemaFrame(int_field, fb::MetadataVersion::V5,
                                                      static_cast<fb::Endianness>(7))})),
                        kInvalid, {"unknown endianness 7", "message 0"}));
  EXPECT_TRUE(
      FailsWith(ReadError(Stream({SchemaFrame(int_field, fb::MetadataVersion::V3)})),
                kInvalid, {"metadata version V3", "message 0"}));
  EXPECT_TRUE(FailsWith(
      ReadError(Stream({SchemaFrame(int_field, static_cast<fb::MetadataVersion>(9))})),
      kInvalid, {"unknown metadata version 9"}));
  // V4 is readable.
  EXPECT_TRUE(ReadError(Stream({SchemaFrame(int_field, fb::MetadataVersion::V4)})).ok());
}

TEST(Malformed, MessageHeaders) {
  FBB fbb;
  auto tensor = fb::CreateTensor(fbb);
  fbb.Finish(fb::CreateMessage(fbb, fb::MetadataVersion::V5, fb::MessageHeader::Tensor,
                               tensor.Union(), 0));
  EXPECT_TRUE(
      FailsWith(ReadError(Stream({Frame(*Finished(fbb))})), kNotImplemented, {"tensor"}));
  FBB none;
  none.Finish(fb::CreateMessage(none, fb::MetadataVersion::V5));
  EXPECT_TRUE(FailsWith(ReadError(Stream({Frame(*Finished(none))})), kInvalid,
                        {"without a header"}));
  std::string garbage(64, '\x5a');
  EXPECT_TRUE(FailsWith(ReadError(Stream({Frame(*Buffer::FromString(garbage))})),
                        kInvalid, {"verification failed", "message 0 at offset 0"}));
}

// ---- Stream structure ----

TEST(Malformed, StreamStructure) {
  const std::string schema = EncodedSchemaFrame(Int32Schema());
  const std::string batch =
      BatchFrame(Md(3, {{3, 0}}, {{0, 0}, {0, 12}}, 16), Le32({1, 2, 3}));
  EXPECT_TRUE(ReadError(Stream({schema, batch})).ok());
  EXPECT_TRUE(FailsWith(ReadError(Stream({})), kInvalid, {"no Schema message"}));
  EXPECT_TRUE(FailsWith(ReadError(Stream({batch})), kInvalid,
                        {"message 0 (RecordBatch)", "must be a Schema"}));
  EXPECT_TRUE(FailsWith(ReadError(Stream({schema, batch, schema})), kInvalid,
                        {"message 2 (Schema)", "one Schema message"}));
}

TEST(Malformed, Framing) {
  const std::string schema = EncodedSchemaFrame(Int32Schema());
  // Negative metadata length.
  EXPECT_TRUE(FailsWith(
      ReadError(Stream({schema, std::string("\xff\xff\xff\xff\xf0\xff\xff\xff", 8)})),
      kInvalid, {"negative metadata length", "message 1 at offset"}));
  // Metadata longer than what is left.
  std::string cut = schema.substr(0, schema.size() - 16);
  auto data = ExactCopy(reinterpret_cast<const uint8_t*>(cut.data()),
                        static_cast<int64_t>(cut.size()));
  EXPECT_TRUE(FailsWith(ReadError(data), kInvalid, {"truncated"}));
  // A body longer than what is left.
  std::string batch = BatchFrame(Md(3, {{3, 0}}, {{0, 0}, {0, 12}}, 16), Le32({1, 2, 3}));
  std::string both = schema + batch.substr(0, batch.size() - 4);
  data = ExactCopy(reinterpret_cast<const uint8_t*>(both.data()),
                   static_cast<int64_t>(both.size()));
  EXPECT_TRUE(FailsWith(ReadError(data), kInvalid, {"body of 16 bytes is truncated"}));
  // An oversized metadata claim against the limit.
  IpcReadOptions small;
  small.max_metadata_size = 32;
  EXPECT_TRUE(
      FailsWith(ReadError(Stream({schema}), small), kInvalid, {"max_metadata_size"}));
}

// ---- Record batches ----

TEST(Malformed, BufferOutsideBody) {
  const std::string schema = EncodedSchemaFrame(Int32Schema());
  std::string body(4200, '\0');
  auto data =
      Stream({schema, BatchFrame(Md(3, {{3, 0}}, {{0, 0}, {4096, 800}}, 4200), body)});
  EXPECT_TRUE(
      FailsWith(ReadError(data), kInvalid,
                {"IPC stream: message 1 (RecordBatch)", "column 'x'",
                 "buffer 1 [offset 4096, length 800] exceeds body of 4200 bytes"}));
}

TEST(Malformed, CountsAndLengths) {
  const std::string schema = EncodedSchemaFrame(Int32Schema());
  const std::string body = Le32({1, 2, 3, 0});
  struct Case {
    BatchMetadata md;
    const char* what;
  };
  const std::vector<Case> cases = {
      {Md(3, {{3, 0}, {3, 0}}, {{0, 0}, {0, 12}}, 16),
       "2 field nodes, the schema needs 1"},
      {Md(3, {{3, 0}}, {{0, 0}}, 16), "1 buffer entries, the schema needs 2"},
      {Md(3, {}, {}, 16), "0 field nodes"},
      {Md(5, {{5, 0}}, {{0, 0}, {0, 12}}, 16), "values buffer 1 has 12 bytes, needs 20"},
      {Md(3, {{3, 4}}, {{0, 1}, {8, 12}}, 24), "null count 4"},
      {Md(3, {{3, 1}}, {{0, 0}, {0, 12}}, 16), "validity buffer 0 has 0 bytes, needs 1"},
      {Md(2, {{3, 0}}, {{0, 0}, {0, 12}}, 16), "has 3 rows, the batch states 2"},
      {Md(-1, {{3, 0}}, {{0, 0}, {0, 12}}, 16), "batch length -1"},
      {Md(3, {{3, 0}}, {{0, 0}, {-8, 12}}, 16), "offset -8"},
      {Md(int64_t{1} << 62, {{int64_t{1} << 62, 0}}, {{0, 0}, {0, 12}}, 16), "overflows"},
  };
  for (const auto& c : cases) {
    Status st = ReadError(Stream({schema, RawBatchFrame(c.md, body + body)}));
    EXPECT_TRUE(FailsWith(st, kInvalid, {c.what})) << c.what;
  }
}

TEST(Malformed, VariableSizeOffsets) {
  const std::string schema = EncodedSchemaFrame(Utf8Schema());
  // Offsets [0, 5] but only 3 data bytes.
  auto md = Md(1, {{1, 0}}, {{0, 0}, {0, 8}, {8, 3}}, 16);
  EXPECT_TRUE(FailsWith(ReadError(Stream({schema, BatchFrame(md, Le32({0, 5}) + "abc")})),
                        kInvalid, {"data buffer 2 has 3 bytes, needs 5"}));
  // Offsets going backwards at the ends.
  EXPECT_TRUE(FailsWith(ReadError(Stream({schema, BatchFrame(md, Le32({4, 1}) + "abc")})),
                        kInvalid, {"runs from 4 to 1"}));
  // A 0-length array may omit its offsets entirely.
  auto empty = Md(0, {{0, 0}}, {{0, 0}, {0, 0}, {0, 0}}, 0);
  ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(Stream({schema, BatchFrame(empty, "")})));
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0]->num_rows(), 0);
  ASSERT_OK(read[0]->ValidateFull());
}

TEST(Malformed, NestedChildTooShort) {
  const std::string frame =
      EncodedSchemaFrame(schema({field("l", fixed_size_list(int32(), 4))}));
  auto md = Md(2, {{2, 0}, {3, 0}}, {{0, 0}, {0, 0}, {0, 12}}, 16);
  EXPECT_TRUE(FailsWith(ReadError(Stream({frame, BatchFrame(md, Le32({1, 2, 3}))})),
                        kInvalid, {"child has 3 values, needs 8"}));
}

// ---- Dictionaries ----

TEST(Malformed, DictionaryOrder) {
  const std::string schema = EncodedSchemaFrame(DictSchema());
  const std::string batch =
      BatchFrame(Md(2, {{2, 0}}, {{0, 0}, {0, 2}}, 8), std::string("\0\1", 2));
  const std::string dict =
      DictFrame(0, false, Md(2, {{2, 0}}, {{0, 0}, {0, 12}, {16, 2}}, 24),
                Le32({0, 1, 2, 0}) + "ab");
  EXPECT_TRUE(ReadError(Stream({schema, dict, batch})).ok());
  EXPECT_TRUE(FailsWith(ReadError(Stream({schema, batch})), kInvalid,
                        {"dictionary id 0 has no dictionary batch yet"}));
  EXPECT_TRUE(FailsWith(
      ReadError(Stream(
          {schema, DictFrame(7, false, Md(2, {{2, 0}}, {{0, 0}, {0, 12}, {16, 2}}, 24),
                             Le32({0, 1, 2, 0}) + "ab")})),
      kInvalid,
      {"message 1 (DictionaryBatch)", "id 7, which no field of the schema uses"}));
  EXPECT_TRUE(FailsWith(
      ReadError(Stream(
          {schema, DictFrame(0, true, Md(2, {{2, 0}}, {{0, 0}, {0, 12}, {16, 2}}, 24),
                             Le32({0, 1, 2, 0}) + "ab")})),
      kInvalid, {"delta dictionary batch for id 0, which has no dictionary yet"}));
  // Indices beyond the dictionary are found by ValidateFull.
  IpcReadOptions full;
  full.validate_full = true;
  const std::string bad_batch =
      BatchFrame(Md(2, {{2, 0}}, {{0, 0}, {0, 2}}, 8), std::string("\0\5", 2));
  EXPECT_FALSE(ReadError(Stream({schema, dict, bad_batch}), full).ok());
}

TEST(Malformed, FileDictionaryReplacement) {
  // A stream with a replaced dictionary, wrapped into a file by hand: the
  // file reader must refuse it, as the format forbids replacement.
  auto type = dictionary(int8(), utf8());
  DictionaryBuilder b(type);
  ASSERT_OK(b.Append(std::string_view("x")));
  ASSERT_OK_AND_ASSIGN(auto first, b.Finish());
  ASSERT_OK(b.Append(std::string_view("y")));
  ASSERT_OK_AND_ASSIGN(auto second, b.Finish());
  auto s = schema({field("d", type)});
  ASSERT_OK_AND_ASSIGN(auto stream, WriteBatches({RecordBatch::Make(s, 1, {first}),
                                                  RecordBatch::Make(s, 1, {second})},
                                                 IpcFormat::kStream));
  std::vector<fb::Block> dicts, batches;
  auto reader = MessageReader::FromBuffer(stream);
  while (true) {
    const int64_t start = reader->position();
    ASSERT_OK_AND_ASSIGN(auto m, reader->Next());
    if (m == nullptr) break;
    const int64_t body_start = reader->position() - m->body_length();
    fb::Block block(start + 8, static_cast<int32_t>(body_start - start),
                    m->body_length());
    if (m->type() == MessageType::kDictionaryBatch) dicts.push_back(block);
    if (m->type() == MessageType::kRecordBatch) batches.push_back(block);
  }
  ASSERT_EQ(dicts.size(), 2u);
  FBB fbb;
  auto map = DictionaryFieldMap::Make(*s).ValueOrDie();
  auto schema_msg = EncodeSchema(*s, map).ValueOrDie();
  auto decoded = fb::GetMessage(schema_msg->data())->header_as_Schema();
  (void)decoded;  // the footer needs its own copy of the schema table:
  auto field_type = fb::CreateUtf8(fbb).Union();
  auto enc = fb::CreateDictionaryEncoding(fbb, 0, fb::CreateInt(fbb, 8, true));
  std::vector<Offset<fb::Field>> children;
  auto f =
      fb::CreateFieldDirect(fbb, "d", true, fb::Type::Utf8, field_type, enc, &children);
  auto schema_table = fb::CreateSchema(
      fbb, fb::Endianness::Little, fbb.CreateVector(std::vector<Offset<fb::Field>>{f}));
  fbb.Finish(fb::CreateFooter(fbb, fb::MetadataVersion::V5, schema_table,
                              fbb.CreateVectorOfStructs(dicts),
                              fbb.CreateVectorOfStructs(batches)));
  std::string file("ARROW1\0\0", 8);
  file += stream->view();
  file.append(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
  const int32_t footer_size = static_cast<int32_t>(fbb.GetSize());
  file.append(reinterpret_cast<const char*>(&footer_size), 4);
  file += "ARROW1";
  auto data = ExactCopy(reinterpret_cast<const uint8_t*>(file.data()),
                        static_cast<int64_t>(file.size()));
  EXPECT_TRUE(FailsWith(RecordBatchFileReader::Open(data).status(), kInvalid,
                        {"dictionary block 1", "does not allow dictionary replacement"}));
}

// ---- Compression ----

TEST(Malformed, CompressedBuffers) {
  const std::string schema = EncodedSchemaFrame(Int32Schema());
  auto frame = [&](Compression c, const std::string& buffer) {
    auto md = Md(3, {{3, 0}}, {{0, 0}, {0, static_cast<int64_t>(buffer.size())}},
                 static_cast<int64_t>((buffer.size() + 7) / 8 * 8), c);
    return Stream({schema, BatchFrame(md, buffer)});
  };
  auto le64 = [](int64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); };
  // Raw (-1) buffers are accepted.
  EXPECT_TRUE(ReadError(frame(Compression::kZstd, le64(-1) + Le32({1, 2, 3}))).ok());
  IpcReadOptions capped;
  capped.max_decompressed_size = 1 << 20;
  EXPECT_TRUE(FailsWith(
      ReadError(frame(Compression::kLz4Frame, le64(int64_t{1} << 40) + "xx"), capped),
      kInvalid, {"max_decompressed_size", "buffer 1"}));
  EXPECT_TRUE(
      FailsWith(ReadError(frame(Compression::kLz4Frame, le64(12) + "not an lz4 frame")),
                kInvalid, {"LZ4"}));
  EXPECT_TRUE(
      FailsWith(ReadError(frame(Compression::kZstd, le64(12) + "not a zstd frame")),
                kInvalid, {"ZSTD"}));
  EXPECT_TRUE(FailsWith(ReadError(frame(Compression::kZstd, "abcd")), kInvalid,
                        {"shorter than its 8-byte length prefix"}));
  EXPECT_TRUE(FailsWith(ReadError(frame(Compression::kZstd, le64(-5) + "abcd")), kInvalid,
                        {"negative length -5"}));
}

// ---- Files ----

TEST(Malformed, FileFraming) {
  auto batch = RecordBatch::Make(Int32Schema(), 3,
                                 {ArrayFromVector<Int32Type>({1, 2, 3}).ValueOrDie()});
  ASSERT_OK_AND_ASSIGN(auto data, WriteBatches({batch}, IpcFormat::kFile));
  std::string good(data->view());
  auto open = [](std::string bytes) {
    auto buf = ExactCopy(reinterpret_cast<const uint8_t*>(bytes.data()),
                         static_cast<int64_t>(bytes.size()));
    return RecordBatchFileReader::Open(buf).status();
  };
  EXPECT_TRUE(open(good).ok());
  std::string bad = good;
  bad[0] = 'X';
  EXPECT_TRUE(FailsWith(open(bad), kInvalid, {"leading ARROW1 magic"}));
  bad = good;
  bad[bad.size() - 1] = 'X';
  EXPECT_TRUE(FailsWith(open(bad), kInvalid, {"trailing ARROW1 magic"}));
  bad = good;
  const int32_t huge = 1 << 30;
  std::memcpy(&bad[bad.size() - 10], &huge, 4);
  EXPECT_TRUE(FailsWith(open(bad), kInvalid, {"footer length 1073741824"}));
  EXPECT_TRUE(FailsWith(open("ARROW1"), kInvalid, {"too small"}));

  // A footer whose block points past the footer.
  FBB fbb;
  std::vector<fb::Block> blocks = {fb::Block(int64_t{1} << 40, 64, 64)};
  auto field_type = fb::CreateInt(fbb, 32, true).Union();
  std::vector<Offset<fb::Field>> children;
  auto f = fb::CreateFieldDirect(fbb, "x", true, fb::Type::Int, field_type, 0, &children);
  auto s = fb::CreateSchema(fbb, fb::Endianness::Little,
                            fbb.CreateVector(std::vector<Offset<fb::Field>>{f}));
  fbb.Finish(fb::CreateFooter(fbb, fb::MetadataVersion::V5, s, 0,
                              fbb.CreateVectorOfStructs(blocks)));
  std::string file("ARROW1\0\0", 8);
  file.append(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
  const int32_t size = static_cast<int32_t>(fbb.GetSize());
  file.append(reinterpret_cast<const char*>(&size), 4);
  file += "ARROW1";
  EXPECT_TRUE(FailsWith(open(file), kInvalid, {"record batch block 0", "does not lie"}));
}

// Views: the variadic buffer counts must match the schema's view fields and
// the buffers present; a view naming bytes outside its data buffer is caught
// by full validation.
TEST(Malformed, ViewBuffersAndCounts) {
  auto s = schema({field("v", utf8_view())});
  // One view of 20 bytes, out of line in data buffer 0 at offset 0.
  std::string views(16, '\0');
  const int32_t n = 20, index = 0, offset = 0;
  std::memcpy(views.data(), &n, 4);
  std::memcpy(views.data() + 4, "abcd", 4);
  std::memcpy(views.data() + 8, &index, 4);
  std::memcpy(views.data() + 12, &offset, 4);
  const std::string data = "abcdefghijklmnopqrst" + std::string(4, '\0');
  const std::string body = views + data;
  auto batch = [&](std::vector<int64_t> counts, std::vector<BufferSpec> buffers) {
    BatchMetadata md = Md(1, {{1, 0}}, std::move(buffers), 40);
    md.variadic_buffer_counts = std::move(counts);
    return Stream({EncodedSchemaFrame(s), BatchFrame(md, body)});
  };
  const std::vector<BufferSpec> three = {{0, 0}, {0, 16}, {16, 20}};
  IpcReadOptions full;
  full.validate_full = true;
  EXPECT_TRUE(ReadError(batch({1}, three), full).ok())
      << ReadError(batch({1}, three), full).ToString();
  EXPECT_TRUE(
      FailsWith(ReadError(batch({}, three)), kInvalid, {"0 variadic buffer counts"}));
  EXPECT_TRUE(FailsWith(ReadError(batch({1, 1}, three)), kInvalid,
                        {"2 variadic buffer counts", "1 view fields"}));
  EXPECT_TRUE(FailsWith(ReadError(batch({2}, three)), kInvalid, {"buffer entries"}));
  EXPECT_TRUE(FailsWith(ReadError(batch({1000}, three)), kInvalid, {"exceeds"}));
  EXPECT_TRUE(FailsWith(ReadError(batch({-1}, three)), kInvalid, {"is negative"}));
  // The data buffer shorter than the view says: refused by ValidateFull.
  EXPECT_TRUE(FailsWith(ReadError(batch({1}, {{0, 0}, {0, 16}, {16, 10}}), full),
                        kInvalid, {"outside data buffer 0"}));
}

// Union schemas: typeIds in [0, 127], one per child, distinct; a known mode.
TEST(Malformed, UnionTypes) {
  auto union_field = [](int16_t mode, std::vector<int32_t> ids, int children) {
    return [=](FBB& fbb) {
      std::vector<Offset<fb::Field>> kids;
      for (int k = 0; k < children; ++k) {
        auto t = fb::CreateInt(fbb, 32, true).Union();
        kids.push_back(fb::CreateFieldDirect(fbb, "c", true, fb::Type::Int, t));
      }
      auto u = fb::CreateUnionDirect(fbb, static_cast<fb::UnionMode>(mode), &ids).Union();
      return fb::CreateFieldDirect(fbb, "f", true, fb::Type::Union, u, 0, &kids);
    };
  };
  auto read = [](const std::function<Offset<fb::Field>(FBB&)>& f) {
    return ReadError(Stream({SchemaFrame(f)}));
  };
  EXPECT_TRUE(read(union_field(0, {3, 9}, 2)).ok());
  EXPECT_TRUE(read(union_field(1, {127}, 1)).ok());
  EXPECT_TRUE(FailsWith(read(union_field(0, {200}, 1)), kInvalid,
                        {"typeId 200 is outside [0, 127]", "field 'f'"}));
  EXPECT_TRUE(FailsWith(read(union_field(1, {-1}, 1)), kInvalid, {"typeId -1"}));
  EXPECT_TRUE(
      FailsWith(read(union_field(0, {1, 2}, 1)), kInvalid, {"1 children but 2 typeIds"}));
  EXPECT_TRUE(FailsWith(read(union_field(1, {4, 4}, 2)), kInvalid, {"appears twice"}));
  EXPECT_TRUE(
      FailsWith(read(union_field(7, {0}, 1)), kInvalid, {"unknown union mode 7"}));
}

// Union batches: no validity buffer since V5 (sparse: type ids; dense: type
// ids and offsets), a leading validity entry in V4 messages; type ids and
// offsets checked by full validation.
TEST(Malformed, UnionBuffers) {
  auto sparse = schema({field("u", sparse_union({field("c", int32())}, {3}))});
  auto dense = schema({field("u", dense_union({field("c", int32())}, {3}))});
  const std::string ids = std::string("\x03\x03", 2) + std::string(6, '\0');
  const std::string body = ids + Le32({10, 20});
  const std::vector<FieldNode> nodes = {{2, 0}, {2, 0}};
  // V5 sparse: type ids, the child's validity and values.
  auto v5 = Stream({EncodedSchemaFrame(sparse),
                    BatchFrame(Md(2, nodes, {{0, 2}, {8, 0}, {8, 8}}, 16), body)});
  ASSERT_OK_AND_ASSIGN(auto batches, ReadBatches(v5));
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0]->column(0)->ToString(), "[\n  {c: 10},\n  {c: 20}\n]");
  // V4: the same with a validity entry first.
  auto v4 = Stream({EncodedSchemaFrame(sparse),
                    RawBatchFrame(Md(2, nodes, {{0, 0}, {0, 2}, {8, 0}, {8, 8}}, 16),
                                  body, fb::MetadataVersion::V4)});
  ASSERT_OK_AND_ASSIGN(auto v4_batches, ReadBatches(v4));
  ASSERT_EQ(v4_batches.size(), 1u);
  EXPECT_TRUE(v4_batches[0]->Equals(*batches[0]));
  // A V4-style layout in a V5 message, and the reverse.
  EXPECT_TRUE(FailsWith(
      ReadError(
          Stream({EncodedSchemaFrame(sparse),
                  BatchFrame(Md(2, nodes, {{0, 0}, {0, 2}, {8, 0}, {8, 8}}, 16), body)})),
      kInvalid, {"4 buffer entries, the schema needs 3"}));
  EXPECT_TRUE(FailsWith(
      ReadError(Stream({EncodedSchemaFrame(sparse),
                        RawBatchFrame(Md(2, nodes, {{0, 2}, {8, 0}, {8, 8}}, 16), body,
                                      fb::MetadataVersion::V4)})),
      kInvalid, {"3 buffer entries, the schema needs 4"}));
  // V4 with nulls of the union's own: not representable any more.
  EXPECT_TRUE(FailsWith(
      ReadError(Stream(
          {EncodedSchemaFrame(sparse),
           RawBatchFrame(Md(2, {{2, 1}, {2, 0}}, {{0, 1}, {0, 2}, {8, 0}, {8, 8}}, 16),
                         body, fb::MetadataVersion::V4)})),
      kNotImplemented, {"V4 union with a validity bitmap"}));
  // Too few type ids; a sparse child shorter than the union.
  EXPECT_TRUE(FailsWith(
      ReadError(Stream({EncodedSchemaFrame(sparse),
                        BatchFrame(Md(2, nodes, {{0, 1}, {8, 0}, {8, 8}}, 16), body)})),
      kInvalid, {"type ids buffer 0 has 1 bytes, needs 2"}));
  EXPECT_TRUE(FailsWith(
      ReadError(Stream(
          {EncodedSchemaFrame(sparse),
           BatchFrame(Md(2, {{2, 0}, {1, 0}}, {{0, 2}, {8, 0}, {8, 4}}, 16), body)})),
      kInvalid, {"sparse union child 0 has 1 values, needs 2"}));
  // Dense: type ids, offsets (0 and 1), the child.
  const std::string dense_body = ids + Le32({0, 1}) + Le32({10, 20});
  auto dense_batch = [&](const std::string& b) {
    return Stream({EncodedSchemaFrame(dense),
                   BatchFrame(Md(2, nodes, {{0, 2}, {8, 8}, {16, 0}, {16, 8}}, 24), b)});
  };
  IpcReadOptions full;
  full.validate_full = true;
  EXPECT_TRUE(ReadError(dense_batch(dense_body), full).ok());
  EXPECT_TRUE(FailsWith(ReadError(dense_batch(ids + Le32({0, 2}) + Le32({10, 20})), full),
                        kInvalid, {"offset 2 at position 1 is outside"}));
  const std::string bad_ids = std::string("\x03\x05", 2) + std::string(6, '\0');
  EXPECT_TRUE(
      FailsWith(ReadError(dense_batch(bad_ids + Le32({0, 1}) + Le32({10, 20})), full),
                kInvalid, {"type code 5 at position 1"}));
  EXPECT_TRUE(FailsWith(
      ReadError(Stream({EncodedSchemaFrame(dense),
                        BatchFrame(Md(2, nodes, {{0, 2}, {8, 4}, {16, 0}, {16, 8}}, 24),
                                   dense_body)})),
      kInvalid, {"offsets buffer 1 has 4 bytes, needs 8"}));
}

// List views: validity, offsets and sizes (one per slot), then the child;
// a ListView without its child is refused, views are checked by full
// validation.
TEST(Malformed, ListViewBuffers) {
  auto s = schema({field("v", list_view(int32()))});
  const std::vector<FieldNode> nodes = {{2, 0}, {4, 0}};
  auto batch = [&](const std::string& body, int64_t sizes_length = 8) {
    return Stream(
        {EncodedSchemaFrame(s),
         BatchFrame(
             Md(2, nodes, {{0, 0}, {0, 8}, {8, sizes_length}, {16, 0}, {16, 16}}, 32),
             body)});
  };
  // [[30, 40], [10, 20]]: views out of order.
  const std::string values = Le32({10, 20, 30, 40});
  ASSERT_OK_AND_ASSIGN(auto batches,
                       ReadBatches(batch(Le32({2, 0}) + Le32({2, 2}) + values)));
  ASSERT_EQ(batches.size(), 1u);
  Int32Builder ints;
  for (int32_t v : {10, 20, 30, 40}) ASSERT_OK(ints.Append(v));
  ASSERT_OK_AND_ASSIGN(auto child, ints.Finish());
  ASSERT_OK_AND_ASSIGN(auto expected, ListViewArray::Make({2, 0}, {2, 2}, child));
  EXPECT_TRUE(batches[0]->column(0)->Equals(*expected));
  EXPECT_TRUE(FailsWith(ReadError(batch(Le32({2, 0}) + Le32({2, 2}) + values, 4)),
                        kInvalid, {"sizes buffer", "has 4 bytes, needs 8"}));
  IpcReadOptions full;
  full.validate_full = true;
  EXPECT_TRUE(FailsWith(ReadError(batch(Le32({3, 0}) + Le32({2, 2}) + values), full),
                        kInvalid, {"view at position 0 (offset 3, size 2) ends beyond"}));
  EXPECT_TRUE(FailsWith(ReadError(batch(Le32({0, 0}) + Le32({-1, 2}) + values), full),
                        kInvalid, {"size -1 at position 0 is negative"}));
  auto childless = Stream({SchemaFrame(FieldOf(fb::Type::LargeListView, [](FBB& f) {
    return fb::CreateLargeListView(f).Union();
  }))});
  EXPECT_TRUE(FailsWith(ReadError(childless), kInvalid, {"field 'f'", "0 children"}));
}

// Run-end encoded: a field node with no buffers and no nulls, then the run
// ends and the values; two children of which the first is int16, int32 or
// int64; run ends that pair with the values, hold no nulls and reach the
// length (increasing: full validation).
TEST(Malformed, RunEndEncoded) {
  auto s = schema({field("r", run_end_encoded(int32(), int32()))});
  auto batch = [&](int64_t length, const std::vector<int32_t>& ends,
                   int64_t ree_nulls = 0, int64_t ends_nulls = 0,
                   const std::string& validity = "") {
    const auto runs = static_cast<int64_t>(ends.size());
    std::vector<int32_t> values;
    for (int64_t k = 0; k < runs; ++k) values.push_back(static_cast<int32_t>(10 * k));
    const int64_t bitmap = static_cast<int64_t>(validity.size());
    const int64_t at = (bitmap + 7) / 8 * 8;
    return Stream(
        {EncodedSchemaFrame(s),
         BatchFrame(Md(length, {{length, ree_nulls}, {runs, ends_nulls}, {runs, 0}},
                       {{0, bitmap},
                        {at, 4 * runs},
                        {at + 8 * runs, 0},
                        {at + 8 * runs, 4 * runs}},
                       at + 16 * runs),
                    validity + std::string(static_cast<size_t>(at - bitmap), '\0') +
                        std::string(reinterpret_cast<const char*>(ends.data()),
                                    4 * ends.size()) +
                        std::string(static_cast<size_t>(4 * runs), '\0') +
                        std::string(reinterpret_cast<const char*>(values.data()),
                                    4 * values.size()) +
                        std::string(static_cast<size_t>(4 * runs), '\0'))});
  };
  // [0, 0, 10, 10, 10]
  ASSERT_OK_AND_ASSIGN(auto batches, ReadBatches(batch(5, {2, 5})));
  ASSERT_EQ(batches.size(), 1u);
  Int32Builder ends;
  Int32Builder values;
  for (int32_t v : {2, 5}) ASSERT_OK(ends.Append(v));
  for (int32_t v : {0, 10}) ASSERT_OK(values.Append(v));
  ASSERT_OK_AND_ASSIGN(auto expected,
                       RunEndEncodedArray::Make(5, ends.Finish().ValueOrDie(),
                                                values.Finish().ValueOrDie()));
  EXPECT_TRUE(batches[0]->column(0)->Equals(*expected));
  EXPECT_TRUE(FailsWith(ReadError(batch(5, {2, 5}, /*ree_nulls=*/1)), kInvalid,
                        {"run-end encoded field node with null_count 1"}));
  EXPECT_TRUE(FailsWith(ReadError(batch(6, {2, 5})), kInvalid,
                        {"the last run end 5 is less than offset 0 + length 6"}));
  EXPECT_TRUE(
      FailsWith(ReadError(batch(5, {2, 5}, 0, /*ends_nulls=*/1, std::string(1, '\x02'))),
                kInvalid, {"run ends must not be null"}));
  EXPECT_TRUE(FailsWith(ReadError(batch(5, {0, 5})), kInvalid,
                        {"run end 0 is 0, must be positive"}));
  IpcReadOptions full;
  full.validate_full = true;
  EXPECT_TRUE(FailsWith(ReadError(batch(5, {4, 3, 5}), full), kInvalid,
                        {"run end 1 (3) is not greater than run end 0 (4)"}));
  // The schema: two children, run ends of int16, int32 or int64.
  auto one_child = Stream({SchemaFrame(FieldOf(
      fb::Type::RunEndEncoded, [](FBB& f) { return fb::CreateRunEndEncoded(f).Union(); },
      /*with_child=*/true))});
  EXPECT_TRUE(
      FailsWith(ReadError(one_child), kInvalid,
                {"field 'f'", "RunEndEncoded type with 1 children (expected 2)"}));
  auto int8_ends = Stream({SchemaFrame([](FBB& fbb) {
    std::vector<Offset<fb::Field>> kids = {
        fb::CreateFieldDirect(fbb, "run_ends", false, fb::Type::Int,
                              fb::CreateInt(fbb, 8, true).Union()),
        fb::CreateFieldDirect(fbb, "values", true, fb::Type::Int,
                              fb::CreateInt(fbb, 32, true).Union())};
    return fb::CreateFieldDirect(fbb, "f", true, fb::Type::RunEndEncoded,
                                 fb::CreateRunEndEncoded(fbb).Union(), 0, &kids);
  })});
  EXPECT_TRUE(FailsWith(ReadError(int8_ends), kInvalid,
                        {"field 'f'", "run ends must be int16, int32 or int64"}));
}

}  // namespace
}  // namespace quiver::ipc::test
