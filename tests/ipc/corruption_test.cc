// Damaged inputs: every truncation of a stream and a file, and random byte
// changes. The readers must return errors (or, for streams cut between two
// messages, a prefix of the batches), never crash or read out of bounds.
// Inputs are copied into heap blocks of their exact size so that
// AddressSanitizer builds catch any read past the end.

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "ipc_test_util.h"

namespace quiver::ipc::test {
namespace {

// Three batches with nulls, nesting, a dictionary with a delta, sliced data.
std::vector<RecordBatchPtr> SampleBatches() {
  std::vector<TypePtr> types = {
      int32(), utf8(), boolean(),
      list(struct_({field("a", int16()), field("b", binary())})),
      fixed_size_list(float64(), 2)};
  auto b0 = RandomBatch(types, 9, 1).ValueOrDie();
  auto b1 = RandomBatch(types, 5, 2).ValueOrDie();
  DictionaryBuilder dict(dictionary(int8(), utf8()));
  // 9, 4 and 6 values: the second adds f and g (a delta), the third adds none.
  std::vector<ArrayPtr> dicts;
  for (const char* group : {"abacbadea", "fagb", "aabcdg"}) {
    for (const char* c = group; *c != 0; ++c) {
      EXPECT_TRUE(dict.Append(std::string_view(c, 1)).ok());
    }
    dicts.push_back(*dict.FinishKeepDictionary());
  }
  FieldVector fields = b0->schema()->fields();
  fields.push_back(field("d", dictionary(int8(), utf8())));
  auto s = schema(fields);
  auto with = [&](const RecordBatchPtr& b, const ArrayPtr& d, int64_t rows) {
    auto columns = b->Slice(0, rows)->column_data();
    columns.push_back(d->Slice(0, rows)->data());
    return RecordBatch::Make(s, rows, columns);
  };
  return {with(b0, dicts[0], 9), with(b1, dicts[1], 4), with(b0->Slice(3), dicts[2], 6)};
}

// Message boundaries of a stream: where a reader may stop cleanly.
std::set<int64_t> Boundaries(const std::shared_ptr<Buffer>& data, int64_t start) {
  std::set<int64_t> out;
  auto reader = MessageReader::FromBuffer(data, {}, start);
  while (true) {
    auto m = reader->Next();
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok() || *m == nullptr) break;
    out.insert(reader->position());
  }
  return out;
}

class CorruptionTest : public ::testing::TestWithParam<Compression> {};

TEST_P(CorruptionTest, EveryStreamTruncation) {
  auto batches = SampleBatches();
  IpcWriteOptions o;
  o.compression = GetParam();
  o.alignment = 8;
  ASSERT_OK_AND_ASSIGN(auto data, WriteBatches(batches, IpcFormat::kStream, o));
  const std::set<int64_t> boundaries = Boundaries(data, 0);
  for (int64_t n = 0; n < data->size(); ++n) {
    auto cut = ExactCopy(data->data(), n);
    auto read = ReadBatches(cut);
    if (!read.ok()) continue;
    // Success is only possible at a boundary after the schema, with a prefix
    // of the batches.
    ASSERT_TRUE(boundaries.count(n)) << "read succeeded when cut at " << n;
    ASSERT_LE(read->size(), batches.size());
    for (size_t i = 0; i < read->size(); ++i) {
      ASSERT_OK((*read)[i]->ValidateFull());
      ASSERT_TRUE(BatchesEqual(*batches[i], *(*read)[i]));
    }
  }
}

TEST_P(CorruptionTest, EveryFileTruncationFails) {
  auto batches = SampleBatches();
  IpcWriteOptions o;
  o.compression = GetParam();
  o.alignment = 8;
  ASSERT_OK_AND_ASSIGN(auto data, WriteBatches(batches, IpcFormat::kFile, o));
  for (int64_t n = 0; n < data->size(); ++n) {
    auto cut = ExactCopy(data->data(), n);
    auto reader = RecordBatchFileReader::Open(cut);
    ASSERT_FALSE(reader.ok()) << "file cut at " << n << " of " << data->size()
                              << " opened";
    auto table = ReadTableFromBuffer(cut);
    ASSERT_FALSE(table.ok()) << "file cut at " << n;
  }
}

TEST_P(CorruptionTest, RandomByteChanges) {
  auto batches = SampleBatches();
  IpcWriteOptions o;
  o.compression = GetParam();
  for (IpcFormat format : {IpcFormat::kStream, IpcFormat::kFile}) {
    ASSERT_OK_AND_ASSIGN(auto data, WriteBatches(batches, format, o));
    std::mt19937 rng(42);
    int failures = 0;
    const int kRounds = 1500;
    for (int round = 0; round < kRounds; ++round) {
      std::string bytes(data->view());
      const int changes = 1 + static_cast<int>(rng() % 4);
      for (int c = 0; c < changes; ++c) {
        size_t at = rng() % bytes.size();
        bytes[at] =
            static_cast<char>(rng() % 3 == 0 ? 0xFF : (bytes[at] ^ (1 << (rng() % 8))));
      }
      auto input = ExactCopy(reinterpret_cast<const uint8_t*>(bytes.data()),
                             static_cast<int64_t>(bytes.size()));
      IpcReadOptions ro;
      ro.max_decompressed_size = 1 << 20;
      auto read = ReadBatches(input, ro);
      if (!read.ok()) {
        ++failures;
        EXPECT_FALSE(read.status().message().empty());
        continue;
      }
      for (const auto& b : *read) {
        // Whatever is accepted is structurally sound; content checks may
        // still find damage (a flipped offset, invalid UTF-8) and must say so.
        ASSERT_OK(b->Validate());
        Status full = b->ValidateFull();
        if (!full.ok()) {
          EXPECT_FALSE(full.message().empty());
        }
      }
    }
    // Many changes land in padding or values and are harmless; many do not.
    EXPECT_GT(failures, kRounds / 20) << IpcFormatName(format);
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, CorruptionTest,
                         ::testing::Values(Compression::kUncompressed,
                                           Compression::kLz4Frame, Compression::kZstd),
                         [](const ::testing::TestParamInfo<Compression>& info) {
                           return std::string(CompressionName(info.param));
                         });

}  // namespace
}  // namespace quiver::ipc::test
