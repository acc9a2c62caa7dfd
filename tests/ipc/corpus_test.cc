// The seed corpus of the IPC fuzzer (fuzz/corpus/ipc): small valid streams
// and files covering the formats' features. This test checks that every
// committed seed still reads and validates; with QUIVER_WRITE_FUZZ_CORPUS=1
// in the environment it first rewrites the seeds from the definitions below.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "bigendian_util.h"
#include "ipc_test_util.h"

namespace quiver::ipc::test {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpusDir = fs::path(QUIVER_SOURCE_DIR) / "fuzz" / "corpus" / "ipc";

struct Seed {
  std::string name;
  std::vector<RecordBatchPtr> batches;
  IpcFormat format;
  IpcWriteOptions options;
  // Written as the big-endian twin of what the writer gives (BigEndianTwin).
  bool big_endian = false;
};

std::vector<RecordBatchPtr> Batches(const std::vector<TypePtr>& types, uint32_t seed) {
  auto b = RandomBatch(types, 6, seed).ValueOrDie();
  return {b, b->Slice(1, 3)};
}

std::vector<RecordBatchPtr> DictionaryBatches() {
  auto type = dictionary(int16(), utf8());
  DictionaryBuilder b(type);
  std::vector<ArrayPtr> arrays;
  for (const char* group : {"abca", "dab", "e"}) {
    for (const char* c = group; *c; ++c)
      EXPECT_TRUE(b.Append(std::string_view(c, 1)).ok());
    arrays.push_back(*b.FinishKeepDictionary());
  }
  auto s = schema({field("d", type)});
  std::vector<RecordBatchPtr> out;
  for (const auto& a : arrays) out.push_back(RecordBatch::Make(s, a->length(), {a}));
  return out;
}

std::vector<Seed> Seeds() {
  const std::vector<TypePtr> primitives = {int32(), float64(), boolean(), utf8(),
                                           int8(),  uint64(),  float16()};
  const std::vector<TypePtr> temporal = {date32(),
                                         date64(),
                                         time32(TimeUnit::kMilli),
                                         time64(TimeUnit::kNano),
                                         timestamp(TimeUnit::kMicro, "UTC"),
                                         duration(TimeUnit::kSecond),
                                         decimal128(12, 2),
                                         fixed_size_binary(3),
                                         large_utf8(),
                                         large_binary(),
                                         binary(),
                                         null()};
  const std::vector<TypePtr> nested = {
      list(struct_({field("a", int16()), field("b", utf8())})),
      struct_({field("l", list(int32()))}),
      map(utf8(), int64()),
      fixed_size_list(utf8(), 2),
      large_list(boolean()),
      list(dictionary(int8(), utf8()))};
  const std::vector<TypePtr> sparse_unions = {
      sparse_union({field("i", int32()), field("s", utf8())}, {0, 5}),
      list(sparse_union({field("b", boolean()), field("d", dictionary(int8(), utf8()))})),
  };
  const std::vector<TypePtr> dense_unions = {
      dense_union({field("s", utf8()), field("f", float64()),
                   field("p", struct_({field("a", int16())}))},
                  {3, 1, 7}),
      struct_({field("u", dense_union({field("l", list(int8())), field("n", null())}))}),
  };
  const std::vector<TypePtr> list_views = {
      list_view(struct_({field("a", int16()), field("b", utf8())})),
      large_list_view(int32()),
      list(list_view(dictionary(int8(), utf8()))),
  };
  const std::vector<TypePtr> run_end_encoded_types = {
      run_end_encoded(int32(), utf8()),
      run_end_encoded(int16(), dictionary(int8(), utf8())),
      list(run_end_encoded(int64(), struct_({field("a", int16())}))),
  };
  // 8-byte alignment keeps the seeds small: less padding for the fuzzer to
  // wade through.
  IpcWriteOptions plain;
  plain.alignment = 8;
  IpcWriteOptions lz4 = plain;
  lz4.compression = Compression::kLz4Frame;
  IpcWriteOptions zstd = plain;
  zstd.compression = Compression::kZstd;
  IpcWriteOptions legacy = plain;
  legacy.write_legacy_format = true;
  // Every kind of buffer that has a byte order, for the big-endian seeds.
  const std::vector<TypePtr> byte_orders = {
      int16(),
      uint32(),
      int64(),
      float16(),
      float32(),
      float64(),
      decimal32(9, 2),
      decimal64(18, -4),
      decimal128(38, 10),
      decimal256(76, 20),
      month_interval(),
      day_time_interval(),
      month_day_nano_interval(),
      timestamp(TimeUnit::kNano, "UTC"),
      utf8(),
      large_binary(),
      utf8_view(),
      list(int32()),
      large_list(int16()),
      list_view(int32()),
      large_list_view(utf8()),
      dense_union({field("s", utf8()), field("i", int64())}, {3, 1}),
      dictionary(int16(), utf8())};
  auto no_columns = RecordBatch::Make(schema({}), 3, std::vector<ArrayDataPtr>{});
  return {
      {"stream_primitives.arrows", Batches(primitives, 1), IpcFormat::kStream, plain},
      {"file_primitives.arrow", Batches(primitives, 2), IpcFormat::kFile, plain},
      {"stream_temporal.arrows", Batches(temporal, 3), IpcFormat::kStream, plain},
      {"stream_nested.arrows", Batches(nested, 4), IpcFormat::kStream, plain},
      {"file_nested.arrow", Batches(nested, 5), IpcFormat::kFile, plain},
      {"stream_dictionary_deltas.arrows", DictionaryBatches(), IpcFormat::kStream, plain},
      {"file_dictionary_deltas.arrow", DictionaryBatches(), IpcFormat::kFile, plain},
      {"stream_lz4.arrows", Batches(nested, 6), IpcFormat::kStream, lz4},
      {"file_zstd.arrow", Batches(primitives, 7), IpcFormat::kFile, zstd},
      {"stream_legacy.arrows", Batches(primitives, 8), IpcFormat::kStream, legacy},
      {"stream_no_columns.arrows", {no_columns}, IpcFormat::kStream, plain},
      {"stream_sparse_union.arrows", Batches(sparse_unions, 9), IpcFormat::kStream,
       plain},
      {"stream_dense_union.arrows", Batches(dense_unions, 10), IpcFormat::kStream, plain},
      {"stream_list_view.arrows", Batches(list_views, 11), IpcFormat::kStream, plain},
      {"stream_run_end_encoded.arrows", Batches(run_end_encoded_types, 12),
       IpcFormat::kStream, plain},
      // The twin of file_primitives.arrow (the CLI tests compare the two).
      {"file_big_endian_primitives.arrow", Batches(primitives, 2), IpcFormat::kFile,
       plain, true},
      {"stream_big_endian.arrows", Batches(byte_orders, 12), IpcFormat::kStream, plain,
       true},
      {"file_big_endian_dictionary_deltas.arrow", DictionaryBatches(), IpcFormat::kFile,
       plain, true},
  };
}

TEST(FuzzCorpus, SeedsAreValidInputs) {
  const char* regenerate = std::getenv("QUIVER_WRITE_FUZZ_CORPUS");
  if (regenerate != nullptr && std::string(regenerate) == "1") {
    fs::create_directories(kCorpusDir);
    for (const auto& seed : Seeds()) {
      ASSERT_OK_AND_ASSIGN(auto data,
                           WriteBatches(seed.batches, seed.format, seed.options));
      if (seed.big_endian) {
        ASSERT_OK_AND_ASSIGN(data,
                             BigEndianTwin(data, seed.format, seed.options.alignment));
      }
      ASSERT_OK_AND_ASSIGN(auto out,
                           io::FileOutputStream::Open((kCorpusDir / seed.name).string()));
      ASSERT_OK(out->Write(*data));
      ASSERT_OK(out->Close());
    }
  }
  int streams = 0;
  int files = 0;
  for (const auto& seed : Seeds()) {
    SCOPED_TRACE(seed.name);
    ASSERT_OK_AND_ASSIGN(auto data, io::MemoryMapFile((kCorpusDir / seed.name).string()));
    ASSERT_OK_AND_ASSIGN(IpcFormat format, DetectFormat(*data));
    EXPECT_EQ(format, seed.format);
    (format == IpcFormat::kFile ? files : streams)++;
    IpcReadOptions o;
    o.validate_full = true;
    ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(data, o));
    EXPECT_EQ(read.size(), seed.batches.size());
    if (seed.format == IpcFormat::kStream) {
      for (size_t i = 0; i < read.size() && i < seed.batches.size(); ++i) {
        EXPECT_TRUE(BatchesEqual(*seed.batches[i], *read[i])) << "batch " << i;
      }
    }
    o.ensure_native_endian = false;
    ASSERT_OK_AND_ASSIGN(auto kept, ReadBatches(data, o));
    ASSERT_FALSE(kept.empty());
    EXPECT_EQ(kept[0]->schema()->endianness(),
              seed.big_endian ? Endianness::kBig : Endianness::kLittle);
    EXPECT_LE(data->size(), 16 * 1024) << "seeds should stay small";
  }
  EXPECT_GT(streams, 0);
  EXPECT_GT(files, 0);
}

}  // namespace
}  // namespace quiver::ipc::test
