// The `quiver` binary itself, run as a separate process: bad input must give
// exit code 2 and one clear line on stderr, never a crash. In the sanitizer
// build this runs the ASan/UBSan binary, so an out-of-bounds read fails too.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "cli/cli_util.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/ipc.h"

namespace quiver {
namespace {

using testing::ProcessResult;
using testing::ReadFile;
using testing::RunQuiver;

class CliTest : public testing::TempDirTest {
 protected:
  // A small but varied valid IPC file: nulls, strings, a list, a
  // dictionary, two batches.
  std::string WriteValid(ipc::IpcFormat format) {
    std::vector<RecordBatchPtr> batches;
    auto s = schema({field("i", int32()), field("s", utf8()), field("l", list(int16())),
                     field("d", dictionary(int8(), utf8()))});
    for (int b = 0; b < 2; ++b) {
      auto builder = MakeBuilder(struct_(s->fields())).ValueOrDie();
      auto* st = static_cast<StructBuilder*>(builder.get());
      for (int r = 0; r < 5; ++r) {
        EXPECT_TRUE(st->Append().ok());
        auto* i = static_cast<Int32Builder*>(st->field_builder(0));
        EXPECT_TRUE((r == 2 ? i->AppendNull() : i->Append(b * 10 + r)).ok());
        EXPECT_TRUE(static_cast<StringBuilder*>(st->field_builder(1))
                        ->Append("v" + std::to_string(r))
                        .ok());
        auto* l = static_cast<ListBuilder*>(st->field_builder(2));
        EXPECT_TRUE(l->Append().ok());
        EXPECT_TRUE(static_cast<Int16Builder*>(l->value_builder())->Append(r).ok());
        EXPECT_TRUE(static_cast<DictionaryBuilder*>(st->field_builder(3))
                        ->Append(std::string_view(r % 2 ? "odd" : "even"))
                        .ok());
      }
      auto arr = st->Finish().ValueOrDie();
      batches.push_back(RecordBatch::FromStructArray(arr).ValueOrDie());
    }
    auto table = Table::FromRecordBatches(batches).ValueOrDie();
    auto bytes = ipc::SerializeTable(*table, format).ValueOrDie();
    const std::string path = dir_ + "/valid." + ipc::IpcFormatName(format);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes->data()), bytes->size());
    return path;
  }
};

TEST_F(CliTest, CatPrintsSchemaAndRows) {
  ProcessResult r = RunQuiver({"ipc", "cat", WriteValid(ipc::IpcFormat::kFile)}, dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("format: Arrow IPC file"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rows: 10"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("d: dictionary<values=string, indices=int8"), std::string::npos);
  EXPECT_NE(r.out.find("2: i=null | s=\"v2\" | l=[2] | d=\"even\""), std::string::npos)
      << r.out;
}

TEST_F(CliTest, RoundtripKeepsFormatAndValues) {
  for (auto format : {ipc::IpcFormat::kStream, ipc::IpcFormat::kFile}) {
    const std::string in = WriteValid(format), out = dir_ + "/out";
    ProcessResult r =
        RunQuiver({"ipc", "roundtrip", in, out, "--compression", "zstd"}, dir_);
    ASSERT_EQ(r.code, 0) << r.err;
    auto a = ipc::ReadTableFromBuffer(io::MemoryMapFile(in).ValueOrDie()).ValueOrDie();
    auto data = io::MemoryMapFile(out).ValueOrDie();
    EXPECT_EQ(ipc::DetectFormat(*data).ValueOrDie(), format);
    auto b = ipc::ReadTableFromBuffer(data).ValueOrDie();
    EXPECT_TRUE(a->Equals(*b, true));
  }
}

TEST_F(CliTest, BigEndianInputIsConvertedToLittleEndian) {
  // Two seeds of the IPC fuzz corpus: the same batches, little-endian and
  // their big-endian twin (tests/ipc/bigendian_util.h).
  const std::string corpus = std::string(QUIVER_SOURCE_DIR) + "/fuzz/corpus/ipc/";
  const std::string little = corpus + "file_primitives.arrow";
  const std::string big = corpus + "file_big_endian_primitives.arrow";
  ipc::IpcReadOptions keep;
  keep.ensure_native_endian = false;
  auto big_schema =
      ipc::RecordBatchFileReader::Open(io::MemoryMapFile(big).ValueOrDie(), keep)
          .ValueOrDie()
          ->schema();
  ASSERT_EQ(big_schema->endianness(), Endianness::kBig);

  ProcessResult cat_little = RunQuiver({"ipc", "cat", little}, dir_);
  ProcessResult cat_big = RunQuiver({"ipc", "cat", big}, dir_);
  ASSERT_EQ(cat_big.code, 0) << cat_big.err;
  ASSERT_EQ(cat_little.code, 0) << cat_little.err;
  EXPECT_NE(cat_big.out.find("rows: 9"), std::string::npos) << cat_big.out;
  EXPECT_EQ(cat_big.out, cat_little.out);

  const std::string out_little = dir_ + "/little.out", out_big = dir_ + "/big.out";
  ProcessResult r = RunQuiver({"ipc", "roundtrip", big, out_big}, dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(RunQuiver({"ipc", "roundtrip", little, out_little}, dir_).code, 0);
  // Written little-endian: byte for byte what the little-endian input gives.
  EXPECT_EQ(ReadFile(out_big), ReadFile(out_little));
  auto written =
      ipc::RecordBatchFileReader::Open(io::MemoryMapFile(out_big).ValueOrDie(), keep)
          .ValueOrDie();
  EXPECT_EQ(written->schema()->endianness(), Endianness::kLittle);
  auto a = ipc::ReadTableFromBuffer(io::MemoryMapFile(big).ValueOrDie()).ValueOrDie();
  auto b = ipc::ReadTableFromBuffer(io::MemoryMapFile(out_big).ValueOrDie()).ValueOrDie();
  EXPECT_TRUE(a->Equals(*b, true));
}

TEST_F(CliTest, RoundtripKeepsEveryBatchBoundaryEmptyOnesToo) {
  auto s = schema({field("v", int64())});
  std::vector<RecordBatchPtr> batches;
  for (int64_t rows : {10, 0, 3, 0}) {
    Int64Builder b;
    for (int64_t i = 0; i < rows; ++i) ASSERT_TRUE(b.Append(i).ok());
    batches.push_back(RecordBatch::Make(s, rows, {b.Finish().ValueOrDie()}));
  }
  for (auto format : {ipc::IpcFormat::kStream, ipc::IpcFormat::kFile}) {
    const std::string in = dir_ + "/batches", out = dir_ + "/batches.out";
    {
      auto sink = io::FileOutputStream::Open(in).ValueOrDie();
      auto w = ipc::MakeWriter(format, sink.get(), s).ValueOrDie();
      for (const auto& b : batches) ASSERT_TRUE(w->WriteRecordBatch(*b).ok());
      ASSERT_TRUE(w->Close().ok());
      ASSERT_TRUE(sink->Close().ok());
    }
    ProcessResult r = RunQuiver({"ipc", "roundtrip", in, out}, dir_);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("13 rows in 4 batches"), std::string::npos) << r.out;
    auto reader = ipc::OpenBatchReader(io::MemoryMapFile(out).ValueOrDie()).ValueOrDie();
    auto got = reader->ReadAll().ValueOrDie();
    ASSERT_EQ(got.size(), batches.size()) << ipc::IpcFormatName(format);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(got[i]->Equals(*batches[i])) << ipc::IpcFormatName(format) << " " << i;
    }
    ProcessResult cat = RunQuiver({"ipc", "cat", out}, dir_);
    ASSERT_EQ(cat.code, 0) << cat.err;
    EXPECT_NE(cat.out.find("batches: 4"), std::string::npos) << cat.out;
  }
}

TEST_F(CliTest, WhatComesFromInputIsEscapedOnTheTerminal) {
  // A field name with a NUL, a newline and a byte that is not UTF-8; a value
  // with an escape character.
  const std::string name("a\0b\nc\xff", 6);
  auto s = schema({field(name, utf8())});
  StringBuilder b;
  ASSERT_TRUE(b.Append("x\x1b[31my").ok());
  auto batch = RecordBatch::Make(s, 1, {b.Finish().ValueOrDie()});
  const std::string path = dir_ + "/names.arrows";
  auto bytes = ipc::SerializeTable(*Table::FromRecordBatches({batch}).ValueOrDie(),
                                   ipc::IpcFormat::kStream)
                   .ValueOrDie();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  ProcessResult r = RunQuiver({"ipc", "cat", path}, dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("a\\x00b\\x0ac\\xff"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("x\\x1B[31my"), std::string::npos)
      << r.out;  // as FormatValue escapes
  for (char c : r.out) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(c == '\n' || (u >= 0x20 && u != 0x7f)) << "raw byte " << int{u};
  }
  // A path that is not UTF-8, in an error message.
  ProcessResult missing = RunQuiver({"ipc", "cat", dir_ + "/no\xfe\x01such"}, dir_);
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("no\\xfe\\x01such"), std::string::npos) << missing.err;
  EXPECT_EQ(missing.err.find('\xfe'), std::string::npos) << missing.err;
}

TEST_F(CliTest, UsageAndMissingFilesExitTwo) {
  EXPECT_EQ(RunQuiver({}, dir_).code, 2);
  EXPECT_EQ(RunQuiver({"frobnicate"}, dir_).code, 2);
  EXPECT_EQ(RunQuiver({"ipc", "cat"}, dir_).code, 2);
  ProcessResult r = RunQuiver({"ipc", "cat", dir_ + "/missing.arrow"}, dir_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("missing.arrow"), std::string::npos) << r.err;
  ProcessResult bad = RunQuiver({"ipc", "roundtrip", WriteValid(ipc::IpcFormat::kFile),
                                 dir_ + "/o", "--compression", "brotli"},
                                dir_);
  EXPECT_EQ(bad.code, 2);
}

// Truncations of a valid IPC file: exit 2, one line on stderr,
// no output file left behind.
TEST_F(CliTest, TruncatedFilesExitTwo) {
  const std::string valid = ReadFile(WriteValid(ipc::IpcFormat::kFile));
  ASSERT_GT(valid.size(), 500u);
  const std::string damaged = dir_ + "/damaged.arrow", out = dir_ + "/out.arrow";
  int checked = 0;
  // The reader refusing every truncation is tests/ipc/corruption_test.cc's
  // (in process, every byte); here the CLI turns each refusal into one line
  // and exit 2: every 5th length, and every length in the first and last
  // 96 bytes (magic, schema header, footer and its length).
  auto next = [&](size_t len) {
    return len < 96 || len + 96 >= valid.size() ? len + 1 : len + 5;
  };
  for (size_t len = 0; len < valid.size(); len = next(len)) {
    std::ofstream(damaged, std::ios::binary | std::ios::trunc).write(valid.data(), len);
    ProcessResult r = RunQuiver({"ipc", "roundtrip", damaged, out}, dir_);
    ASSERT_EQ(r.code, 2) << "truncated at " << len << " of " << valid.size()
                         << "; stderr: " << r.err;
    ASSERT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    ASSERT_EQ(r.err.rfind("quiver: ", 0), 0u) << r.err;
    ASSERT_NE(access(out.c_str(), F_OK), 0) << "output written for a damaged input";
    ++checked;
  }
  std::printf("[ %d truncation points of a %zu-byte file: all exit 2 ]\n", checked,
              valid.size());
}

// A stream truncated inside a message is an error too (one truncated at a
// message boundary is a valid shorter stream).
TEST_F(CliTest, StreamTruncationsNeverCrash) {
  const std::string valid = ReadFile(WriteValid(ipc::IpcFormat::kStream));
  const std::string damaged = dir_ + "/damaged.arrows", out = dir_ + "/out.arrows";
  int errors = 0, shorter = 0;
  for (size_t len = 0; len < valid.size(); len += 7) {
    std::ofstream(damaged, std::ios::binary | std::ios::trunc).write(valid.data(), len);
    ProcessResult r = RunQuiver({"ipc", "roundtrip", damaged, out}, dir_);
    ASSERT_TRUE(r.code == 0 || r.code == 2)
        << "len " << len << ": exit " << r.code << " " << r.err;
    (r.code == 2 ? errors : shorter)++;
  }
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace quiver
