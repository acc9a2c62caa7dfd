// The C Stream Interface: export and import of readers and tables, end of
// stream, errors with their errno values and messages, release.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "cdata_test_util.h"

namespace quiver {
namespace {

using cdata_test::RandomBatch;

std::vector<TypePtr> SomeTypes() {
  return {int64(), utf8(), list(int32()), dictionary(int8(), utf8()),
          struct_({field("x", float64()), field("y", boolean())})};
}

std::vector<RecordBatchPtr> Batches(int n) {
  std::vector<RecordBatchPtr> out;
  for (int i = 0; i < n; ++i) {
    auto batch = RandomBatch(SomeTypes(), 10 + i * 7, 40 + i);
    EXPECT_TRUE(batch.ok());
    out.push_back(*batch);
  }
  return out;
}

// Yields `good` batches, then fails with `error` (then ends).
class FailingReader : public RecordBatchReader {
 public:
  FailingReader(std::vector<RecordBatchPtr> good, Status error)
      : good_(std::move(good)), error_(std::move(error)) {}
  SchemaPtr schema() const override { return good_.front()->schema(); }
  Result<RecordBatchPtr> Next() override {
    if (next_ < good_.size()) return good_[next_++];
    if (!failed_) {
      failed_ = true;
      return error_;
    }
    return RecordBatchPtr();
  }

 private:
  std::vector<RecordBatchPtr> good_;
  Status error_;
  size_t next_ = 0;
  bool failed_ = false;
};

TEST(CDataStreamTest, RoundTripOfSeveralBatches) {
  auto batches = Batches(4);
  ArrowArrayStream c;
  ASSERT_TRUE(ExportRecordBatchReader(
                  RecordBatchReader::FromBatches(batches[0]->schema(), batches), &c)
                  .ok());
  auto reader = ImportRecordBatchReader(&c);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ(c.release, nullptr) << "the importer takes the stream over";
  EXPECT_TRUE((*reader)->schema()->Equals(*batches[0]->schema()));
  for (const auto& expected : batches) {
    auto got = (*reader)->Next();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_NE(*got, nullptr);
    ASSERT_TRUE((*got)->ValidateFull().ok());
    EXPECT_TRUE((*got)->Equals(*expected));
  }
  for (int i = 0; i < 2; ++i) {  // the end stays the end
    auto end = (*reader)->Next();
    ASSERT_TRUE(end.ok());
    EXPECT_EQ(*end, nullptr);
  }
}

TEST(CDataStreamTest, RawConsumerLoop) {
  // The consumer loop of the specification, written against the raw C
  // structure.
  auto batches = Batches(3);
  ArrowArrayStream stream;
  ASSERT_TRUE(ExportRecordBatchReader(
                  RecordBatchReader::FromBatches(batches[0]->schema(), batches), &stream)
                  .ok());
  ArrowSchema schema;
  ASSERT_EQ(stream.get_schema(&stream, &schema), 0);
  EXPECT_STREQ(schema.format, "+s");
  EXPECT_EQ(schema.n_children, 5);
  int64_t rows = 0;
  int chunks = 0;
  ArrowArray chunk;
  int rc;
  while ((rc = stream.get_next(&stream, &chunk)) == 0 && chunk.release != nullptr) {
    rows += chunk.length;
    ++chunks;
    chunk.release(&chunk);
  }
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(chunks, 3);
  EXPECT_EQ(rows, 10 + 17 + 24);
  schema.release(&schema);
  stream.release(&stream);
  EXPECT_EQ(stream.release, nullptr);
}

TEST(CDataStreamTest, ReaderErrorsBecomeErrnoAndLastError) {
  const std::vector<std::pair<Status, int>> cases = {
      {Status::IOError("disk on fire"), EIO},
      {Status::Invalid("bad input"), EINVAL},
      {Status::OutOfMemory("no room"), ENOMEM},
      {Status::NotImplemented("later"), ENOSYS},
      {Status::Cancelled("stopped"), ECANCELED},
  };
  for (const auto& [error, errnum] : cases) {
    SCOPED_TRACE(error.ToString());
    ArrowArrayStream c;
    ASSERT_TRUE(
        ExportRecordBatchReader(std::make_shared<FailingReader>(Batches(1), error), &c)
            .ok());
    ArrowArray chunk;
    ASSERT_EQ(c.get_next(&c, &chunk), 0);
    chunk.release(&chunk);
    EXPECT_EQ(c.get_next(&c, &chunk), errnum);
    const char* text = c.get_last_error(&c);
    ASSERT_NE(text, nullptr);
    EXPECT_NE(std::string(text).find(error.message()), std::string::npos) << text;
    c.release(&c);
  }
}

TEST(CDataStreamTest, ErrorsPropagateThroughAnImportedStream) {
  ArrowArrayStream c;
  ASSERT_TRUE(ExportRecordBatchReader(std::make_shared<FailingReader>(
                                          Batches(2), Status::IOError("disk on fire")),
                                      &c)
                  .ok());
  auto reader = ImportRecordBatchReader(&c);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE((*reader)->Next().ok());
  EXPECT_TRUE((*reader)->Next().ok());
  auto failed = (*reader)->Next();
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(failed.status().IsIOError()) << failed.status().ToString();
  EXPECT_NE(failed.status().message().find("disk on fire"), std::string::npos);
  EXPECT_NE(failed.status().message().find("get_next"), std::string::npos);
  // ReadAll stops at the error too.
  ASSERT_TRUE(
      ExportRecordBatchReader(
          std::make_shared<FailingReader>(Batches(1), Status::Invalid("broken")), &c)
          .ok());
  reader = ImportRecordBatchReader(&c);
  ASSERT_TRUE(reader.ok());
  auto all = (*reader)->ReadAll();
  ASSERT_FALSE(all.ok());
  EXPECT_TRUE(all.status().IsInvalid());
}

TEST(CDataStreamTest, BatchOfAnotherSchemaIsAnError) {
  auto a = Batches(1);
  auto other = RandomBatch({int8()}, 3, 1);
  ASSERT_TRUE(other.ok());
  ArrowArrayStream c;
  ASSERT_TRUE(ExportRecordBatchReader(
                  RecordBatchReader::FromBatches(a[0]->schema(), {a[0], *other}), &c)
                  .ok());
  auto reader = ImportRecordBatchReader(&c);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE((*reader)->Next().ok());
  auto bad = (*reader)->Next();
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsInvalid());
  EXPECT_NE(bad.status().message().find("schema"), std::string::npos);
}

// A producer whose get_schema fails, with or without a message.
struct BrokenStream {
  static int GetSchema(ArrowArrayStream*, ArrowSchema*) { return EIO; }
  static int GetNext(ArrowArrayStream*, ArrowArray*) { return EINVAL; }
  static const char* LastError(ArrowArrayStream* s) {
    return static_cast<BrokenStream*>(s->private_data)->message;
  }
  static void Release(ArrowArrayStream* s) {
    ++static_cast<BrokenStream*>(s->private_data)->releases;
    s->release = nullptr;
  }
  void Fill(ArrowArrayStream* s) {
    s->get_schema = &GetSchema;
    s->get_next = &GetNext;
    s->get_last_error = &LastError;
    s->release = &Release;
    s->private_data = this;
  }
  const char* message = nullptr;
  int releases = 0;
};

TEST(CDataStreamTest, FailingProducerSchema) {
  BrokenStream broken{.message = "no schema today"};
  ArrowArrayStream c;
  broken.Fill(&c);
  auto reader = ImportRecordBatchReader(&c);
  ASSERT_FALSE(reader.ok());
  EXPECT_TRUE(reader.status().IsIOError());
  EXPECT_NE(reader.status().message().find("no schema today"), std::string::npos);
  EXPECT_EQ(broken.releases, 1);

  // Without a message, the errno text stands in.
  BrokenStream silent;
  silent.Fill(&c);
  reader = ImportRecordBatchReader(&c);
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find(std::strerror(EIO)), std::string::npos);
  EXPECT_EQ(silent.releases, 1);

  // A stream without callbacks, a released stream, no stream.
  BrokenStream partial;
  partial.Fill(&c);
  c.get_next = nullptr;
  EXPECT_FALSE(ImportRecordBatchReader(&c).ok());
  EXPECT_EQ(partial.releases, 1);
  EXPECT_FALSE(ImportRecordBatchReader(&c).ok()) << "c is released now";
  EXPECT_FALSE(ImportRecordBatchReader(nullptr).ok());
}

TEST(CDataStreamTest, ReleaseDropsTheReader) {
  auto batches = Batches(2);
  std::shared_ptr<RecordBatchReader> reader =
      RecordBatchReader::FromBatches(batches[0]->schema(), batches);
  std::weak_ptr<RecordBatchReader> watch = reader;
  ArrowArrayStream c;
  ASSERT_TRUE(ExportRecordBatchReader(std::move(reader), &c).ok());
  EXPECT_FALSE(watch.expired());
  // A batch outlives the stream it came from.
  ArrowArray chunk;
  ASSERT_EQ(c.get_next(&c, &chunk), 0);
  c.release(&c);
  EXPECT_TRUE(watch.expired());
  auto batch = ImportRecordBatch(&chunk, batches[0]->schema());
  ASSERT_TRUE(batch.ok());
  EXPECT_TRUE((*batch)->Equals(*batches[0]));
}

TEST(CDataStreamTest, TablesAsStreams) {
  auto batches = Batches(3);
  auto table = Table::FromRecordBatches(batches);
  ASSERT_TRUE(table.ok());
  ArrowArrayStream c;
  ASSERT_TRUE(ExportTable(*table, &c).ok());
  auto back = ImportTable(&c);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE((*back)->ValidateFull().ok());
  EXPECT_TRUE((*back)->Equals(**table));
  EXPECT_EQ((*back)->column(0)->num_chunks(), 3);

  // A sliced table and an empty one.
  TablePtr slice = (*table)->Slice(5, 30);
  ASSERT_TRUE(ExportTable(slice, &c).ok());
  back = ImportTable(&c);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE((*back)->Equals(*slice));
  TablePtr empty = (*table)->Slice(0, 0);
  ASSERT_TRUE(ExportTable(empty, &c).ok());
  back = ImportTable(&c);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)->num_rows(), 0);
  EXPECT_TRUE((*back)->schema()->Equals(*empty->schema()));
}

}  // namespace
}  // namespace quiver
