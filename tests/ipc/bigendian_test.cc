// Big-endian IPC data (Schema endianness Big): every type read back equal to
// its little-endian twin, in streams, files and dissociated streams, with
// dictionaries and deltas; data kept big-endian when asked, and written back
// out as it came; malformed big-endian input answered like little-endian.
//
// The big-endian inputs come from BigEndianTwin (bigendian_util.cc), which
// byte-swaps at the byte level with code of its own.

#include <gtest/gtest.h>

#include <random>

#include "arrow_fbs/File_generated.h"
#include "bigendian_util.h"
#include "ipc_test_util.h"
#include "quiver/columnar/ipc/dissociated.h"

namespace quiver::ipc::test {
namespace {

constexpr IpcFormat kFormats[] = {IpcFormat::kStream, IpcFormat::kFile};

IpcWriteOptions Aligned8() {
  IpcWriteOptions o;
  o.alignment = 8;
  return o;
}

IpcReadOptions Full(bool native = true) {
  IpcReadOptions o;
  o.validate_full = true;
  o.ensure_native_endian = native;
  return o;
}

// Bytes at the same positions that differ: the twin must not be the input.
int64_t DifferingBytes(const Buffer& a, const Buffer& b) {
  int64_t n = 0;
  for (int64_t i = 0; i < std::min(a.size(), b.size()); ++i)
    n += a.data()[i] != b.data()[i];
  return n;
}

struct Twins {
  std::shared_ptr<Buffer> little, big;
};

Twins Write(const std::vector<RecordBatchPtr>& batches, IpcFormat format,
            const IpcWriteOptions& options = Aligned8()) {
  Twins t;
  t.little = WriteBatches(batches, format, options).ValueOrDie();
  auto big = BigEndianTwin(t.little, format);
  EXPECT_TRUE(big.ok()) << big.status().ToString();
  t.big = ExactCopy((*big)->data(), (*big)->size());
  return t;
}

// Reads the big-endian twin (converted) and checks every batch against
// `expected` and against what the little-endian bytes read as.
void ExpectTwinReadsEqual(const std::vector<RecordBatchPtr>& batches, IpcFormat format,
                          bool compare_with_originals = true,
                          const IpcWriteOptions& options = Aligned8()) {
  Twins t = Write(batches, format, options);
  EXPECT_GT(DifferingBytes(*t.little, *t.big), 0);
  ASSERT_OK_AND_ASSIGN(IpcFormat detected, DetectFormat(*t.big));
  EXPECT_EQ(detected, format);
  ASSERT_OK_AND_ASSIGN(auto little, ReadBatches(t.little, Full()));
  ASSERT_OK_AND_ASSIGN(auto big, ReadBatches(t.big, Full()));
  ASSERT_EQ(big.size(), batches.size());
  ASSERT_EQ(little.size(), batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    EXPECT_EQ(big[i]->schema()->endianness(), Endianness::kLittle);
    ASSERT_OK(big[i]->ValidateFull());
    EXPECT_TRUE(BatchesEqual(*little[i], *big[i])) << "batch " << i;
    if (compare_with_originals) {
      EXPECT_TRUE(BatchesEqual(*batches[i], *big[i])) << "batch " << i;
    }
  }
}

TEST(BigEndian, EveryTypeStreamAndFile) {
  uint32_t seed = 1;
  for (const TypePtr& type : AllTypes()) {
    SCOPED_TRACE(type->ToString());
    ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch({type}, 37, seed++));
    for (IpcFormat format : kFormats) {
      SCOPED_TRACE(IpcFormatName(format));
      // A slice at a non-zero offset too (re-based offsets, re-packed bitmaps).
      ExpectTwinReadsEqual({batch, batch->Slice(5, 20), batch->Slice(13, 0)}, format);
    }
  }
}

TEST(BigEndian, AllTypesInOneBatchSlicedAndEmpty) {
  ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch(AllTypes(), 100, 11));
  for (IpcFormat format : kFormats) {
    SCOPED_TRACE(IpcFormatName(format));
    ExpectTwinReadsEqual(
        {batch, batch->Slice(3, 50), batch->Slice(64, 36), batch->Slice(99, 0)}, format);
  }
}

TEST(BigEndian, CompressedBodiesAreSwappedAfterDecompression) {
  ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch(AllTypes(), 80, 31));
  for (Compression codec : {Compression::kLz4Frame, Compression::kZstd}) {
    SCOPED_TRACE(CompressionName(codec));
    IpcWriteOptions options = Aligned8();
    options.compression = codec;
    for (IpcFormat format : kFormats) {
      SCOPED_TRACE(IpcFormatName(format));
      ExpectTwinReadsEqual({batch, batch->Slice(11, 40)}, format, true, options);
    }
  }
}

// Arrays sharing one dictionary that grows from batch to batch.
std::vector<RecordBatchPtr> GrowingDictionaryBatches(const TypePtr& type) {
  DictionaryBuilder b(type);
  SchemaPtr s;
  std::vector<RecordBatchPtr> out;
  for (const char* group : {"abca", "dab", "", "e", "fgah"}) {
    for (const char* c = group; *c; ++c) {
      Status st = *c == 'h' ? b.AppendNull() : b.Append(std::string_view(c, 1));
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
    auto a = b.FinishKeepDictionary().ValueOrDie();
    if (s == nullptr) s = schema({field("d", a->type()), field("n", int32())});
    std::vector<int32_t> n(static_cast<size_t>(a->length()), 0x01020304);
    auto ints = ArrayFromVector<Int32Type>(n).ValueOrDie();
    out.push_back(RecordBatch::Make(s, a->length(), {a, ints}));
  }
  return out;
}

TEST(BigEndian, DictionaryDeltasStreamAndFile) {
  for (const TypePtr& type :
       {dictionary(int16(), utf8()), dictionary(int32(), large_utf8()),
        dictionary(uint8(), binary()), dictionary(int64(), utf8())}) {
    SCOPED_TRACE(type->ToString());
    auto batches = GrowingDictionaryBatches(type);
    // The stream gets the dictionary and its deltas batch by batch; a file
    // reader applies every delta first, so compare it with the little-endian
    // reading only.
    ExpectTwinReadsEqual(batches, IpcFormat::kStream);
    ExpectTwinReadsEqual(batches, IpcFormat::kFile, /*compare_with_originals=*/false);

    Twins t = Write(batches, IpcFormat::kStream);
    ASSERT_OK_AND_ASSIGN(auto reader, RecordBatchStreamReader::Open(t.big, Full()));
    ASSERT_OK_AND_ASSIGN(auto read, reader->ReadAll());
    EXPECT_EQ(reader->stats().num_dictionary_batches, 4);
    EXPECT_EQ(reader->stats().num_dictionary_deltas, 3);
  }
}

// Every non-empty buffer of `big` sits in `big_input` where the matching
// buffer of `little` sits in `little_input`: the big-endian bytes as written.
// "Where" is up to one shift for the whole input: the twin's Schema message
// states the byte order, which may take one more 8-byte word.
struct Places {
  const Buffer& little_input;
  const Buffer& big_input;
  int64_t shift = INT64_MIN;
};

void ExpectSamePlaces(const ArrayData& little, const ArrayData& big, Places* places,
                      int64_t* swapped) {
  ASSERT_EQ(little.buffers.size(), big.buffers.size());
  for (size_t i = 0; i < little.buffers.size(); ++i) {
    const auto& l = little.buffers[i];
    const auto& b = big.buffers[i];
    ASSERT_EQ(l == nullptr, b == nullptr) << "buffer " << i;
    if (l == nullptr || l->size() == 0) continue;
    ASSERT_EQ(l->size(), b->size());
    const int64_t shift = (b->data() - places->big_input.data()) -
                          (l->data() - places->little_input.data());
    if (places->shift == INT64_MIN) {
      EXPECT_EQ(shift % 8, 0);
      EXPECT_LE(shift, 64);
      EXPECT_GE(shift, 0);
      places->shift = shift;
    }
    EXPECT_EQ(shift, places->shift) << little.type->ToString() << " buffer " << i;
    *swapped += DifferingBytes(*l, *b);
  }
  ASSERT_EQ(little.child_data.size(), big.child_data.size());
  for (size_t i = 0; i < little.child_data.size(); ++i) {
    ExpectSamePlaces(*little.child_data[i], *big.child_data[i], places, swapped);
  }
  ASSERT_EQ(little.dictionary == nullptr, big.dictionary == nullptr);
  if (little.dictionary != nullptr) {
    ExpectSamePlaces(*little.dictionary, *big.dictionary, places, swapped);
  }
}

TEST(BigEndian, KeptBigEndianIsZeroCopyAndWritesBackTheSameBytes) {
  ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch(AllTypes(), 60, 5));
  const std::vector<RecordBatchPtr> batches = {batch, batch->Slice(7, 30)};
  for (IpcFormat format : kFormats) {
    SCOPED_TRACE(IpcFormatName(format));
    Twins t = Write(batches, format);
    ASSERT_OK_AND_ASSIGN(auto little, ReadBatches(t.little));
    ASSERT_OK_AND_ASSIGN(auto kept, ReadBatches(t.big, Full(/*native=*/false)));
    ASSERT_EQ(kept.size(), batches.size());
    int64_t swapped = 0;
    Places places{*t.little, *t.big};
    for (size_t i = 0; i < kept.size(); ++i) {
      EXPECT_EQ(kept[i]->schema()->endianness(), Endianness::kBig);
      EXPECT_NE(kept[i]->schema()->ToString().find("-- endianness: big --"),
                std::string::npos);
      // Not equal to the original: the schemas' byte orders differ.
      EXPECT_FALSE(kept[i]->Equals(*batches[i]));
      for (int c = 0; c < kept[i]->num_columns(); ++c) {
        ExpectSamePlaces(*little[i]->column_data(c), *kept[i]->column_data(c), &places,
                         &swapped);
      }
    }
    EXPECT_GT(swapped, 0) << "the kept buffers must hold the big-endian bytes";

    // Passed through a writer: Big in the schema, the buffers as they are.
    ASSERT_OK_AND_ASSIGN(auto written, WriteBatches(kept, format, Aligned8()));
    if (format == IpcFormat::kStream) {
      EXPECT_EQ(written->view(), t.big->view()) << "the stream is written back unchanged";
    }
    ASSERT_OK_AND_ASSIGN(auto back, ReadBatches(written, Full()));
    ASSERT_EQ(back.size(), batches.size());
    for (size_t i = 0; i < back.size(); ++i) {
      EXPECT_TRUE(BatchesEqual(*batches[i], *back[i])) << "batch " << i;
    }
  }
}

TEST(BigEndian, KeptBigEndianDictionaryDeltasPassThrough) {
  for (const TypePtr& type :
       {dictionary(int16(), utf8()), dictionary(int8(), large_binary())}) {
    SCOPED_TRACE(type->ToString());
    auto batches = GrowingDictionaryBatches(type);
    for (IpcFormat format : kFormats) {
      SCOPED_TRACE(IpcFormatName(format));
      Twins t = Write(batches, format);
      ASSERT_OK_AND_ASSIGN(auto little, ReadBatches(t.little));
      ASSERT_OK_AND_ASSIGN(auto kept, ReadBatches(t.big, Full(/*native=*/false)));
      ASSERT_EQ(kept.size(), batches.size());
      // Appended big-endian: the last dictionary holds every value, swapped.
      const auto& dict = kept.back()->column_data(0)->dictionary;
      ASSERT_NE(dict, nullptr);
      EXPECT_EQ(dict->length, little.back()->column_data(0)->dictionary->length);
      EXPECT_GT(DifferingBytes(*dict->buffers[1],
                               *little.back()->column_data(0)->dictionary->buffers[1]),
                0);
      ASSERT_OK_AND_ASSIGN(auto written, WriteBatches(kept, format, Aligned8()));
      ASSERT_OK_AND_ASSIGN(auto back, ReadBatches(written, Full()));
      ASSERT_EQ(back.size(), little.size());
      for (size_t i = 0; i < back.size(); ++i) {
        EXPECT_TRUE(BatchesEqual(*little[i], *back[i])) << "batch " << i;
      }
    }
  }
}

TEST(BigEndian, DictionaryWhoseValuesHoldADictionary) {
  // The inner dictionary arrives first and the outer one's values use it.
  ASSERT_OK_AND_ASSIGN(auto batch, NestedDictionaryBatch());
  for (IpcFormat format : kFormats) {
    SCOPED_TRACE(IpcFormatName(format));
    ExpectTwinReadsEqual({batch, batch->Slice(1, 2)}, format);
    Twins t = Write({batch}, format);
    ASSERT_OK_AND_ASSIGN(auto kept, ReadBatches(t.big, Full(/*native=*/false)));
    ASSERT_OK_AND_ASSIGN(auto written, WriteBatches(kept, format, Aligned8()));
    ASSERT_OK_AND_ASSIGN(auto back, ReadBatches(written, Full()));
    ASSERT_EQ(back.size(), 1u);
    EXPECT_TRUE(BatchesEqual(*batch, *back[0]));
  }
}

TEST(BigEndian, DissociatedStreamReaderConverts) {
  ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch(AllTypes(), 40, 17));
  std::vector<RecordBatchPtr> batches = {batch, batch->Slice(9, 20)};
  for (const auto& input :
       {batches, GrowingDictionaryBatches(dictionary(int16(), utf8()))}) {
    Twins t = Write(input, IpcFormat::kStream);
    for (bool native : {true, false}) {
      SCOPED_TRACE(native ? "native" : "kept");
      dissociated::StreamReader reader(nullptr, Full(native));
      auto messages = MessageReader::FromBuffer(t.big);
      uint32_t seq = 0;
      for (;; ++seq) {
        ASSERT_OK_AND_ASSIGN(auto m, messages->Next());
        if (m == nullptr) break;
        ASSERT_OK(reader.OnMetadata(
            dissociated::EncodeMetadataMessage(seq, m->metadata()->view())));
        if (m->type() != MessageType::kSchema) {
          ASSERT_OK(reader.OnBody(
              dissociated::MakeTag(seq, dissociated::BodyType::kPacked), m->body()));
        }
      }
      ASSERT_OK(reader.OnMetadata(dissociated::EncodeEndOfStream(seq)));
      std::vector<RecordBatchPtr> got;
      for (;;) {
        ASSERT_OK_AND_ASSIGN(auto next, reader.Next());
        if (!next) break;
        got.push_back(*next);
      }
      EXPECT_TRUE(reader.finished());
      ASSERT_EQ(got.size(), input.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i]->schema()->endianness(),
                  native ? Endianness::kLittle : Endianness::kBig);
        if (native) {
          EXPECT_TRUE(BatchesEqual(*input[i], *got[i])) << "batch " << i;
        } else {
          EXPECT_FALSE(got[i]->Equals(*input[i]));
        }
      }
    }
  }
}

// ---- Malformed big-endian input ----

// Where the buffer entries and the body of batch message `index` sit in a
// stream held in `data`.
struct BatchPlaces {
  int64_t body = 0;              // position of the body
  std::vector<int64_t> entries;  // position of each Buffer struct (offset, length)
  std::vector<BufferSpec> specs;
};

BatchPlaces Places(const std::shared_ptr<Buffer>& data, int index) {
  BatchPlaces p;
  auto messages = MessageReader::FromBuffer(data);
  int seen = 0;
  for (;;) {
    auto m = messages->Next().ValueOrDie();
    if (m == nullptr) break;
    if (m->type() == MessageType::kSchema || seen++ != index) continue;
    const auto* fbm = static_cast<const ::quiver::flatbuf::Message*>(m->flatbuffer());
    const ::quiver::flatbuf::RecordBatch* rb =
        m->type() == MessageType::kRecordBatch ? fbm->header_as_RecordBatch()
                                               : fbm->header_as_DictionaryBatch()->data();
    EXPECT_TRUE(m->metadata()->data() >= data->data() &&
                m->body()->data() >= data->data())
        << "the reader must be zero-copy over the stream";
    p.body = m->body()->data() - data->data();
    for (flatbuffers::uoffset_t i = 0; i < rb->buffers()->size(); ++i) {
      const uint8_t* e = reinterpret_cast<const uint8_t*>(rb->buffers()->Data()) + 16 * i;
      p.entries.push_back(e - data->data());
      BufferSpec s;
      std::memcpy(&s.offset, e, 8);
      std::memcpy(&s.length, e + 8, 8);
      p.specs.push_back(s);
    }
    return p;
  }
  ADD_FAILURE() << "no batch message " << index;
  return p;
}

// Writes `value` (`width` bytes) at `pos` of `bytes`, big- or little-endian.
void Put(std::string* bytes, int64_t pos, uint64_t value, int width, bool big) {
  for (int k = 0; k < width; ++k) {
    const int shift = 8 * (big ? width - 1 - k : k);
    (*bytes)[static_cast<size_t>(pos + k)] = static_cast<char>(value >> shift);
  }
}

// A batch whose every buffer is known: int32, utf8, utf8_view (inline and
// out-of-line values) and a dense union.
RecordBatchPtr KnownBatch() {
  auto ints = ArrayFromVector<Int32Type>({1, 2, 3, 4}).ValueOrDie();
  StringBuilder s;
  EXPECT_TRUE(s.AppendValues({"a", "bb", "ccc", "dddd"}).ok());
  BinaryViewBuilder v(utf8_view());
  for (const char* x :
       {"short", "a string longer than twelve", "x", "another long one!"}) {
    EXPECT_TRUE(v.Append(x).ok());
  }
  auto ids = Buffer::FromString(std::string(4, '\0'));
  auto offsets = Buffer::FromString(std::string("\0\0\0\0\1\0\0\0\2\0\0\0\3\0\0\0", 16));
  auto child = ArrayFromVector<Int16Type>({7, 8, 9, 10}).ValueOrDie();
  auto u = ArrayData::Make(dense_union({field("a", int16())}), 4, {nullptr, ids, offsets},
                           {child->data()}, 0);
  auto sch = schema({field("i", int32()), field("s", utf8()), field("v", utf8_view()),
                     field("u", u->type)});
  return RecordBatch::Make(sch, 4,
                           {ints->data(), s.Finish().ValueOrDie()->data(),
                            v.Finish().ValueOrDie()->data(), u});
}

// Buffer entries of KnownBatch: i [validity 0, values 1], s [validity 2,
// offsets 3, data 4], v [validity 5, views 6, data 7], u [type ids 8,
// offsets 9], u.a [validity 10, values 11].
struct Corruption {
  const char* what;
  // Changes the stream `bytes`; `big` says which byte order its body has.
  std::function<void(std::string*, const BatchPlaces&, bool big)> apply;
};

std::vector<Corruption> Corruptions() {
  auto at = [](const BatchPlaces& p, int entry, int64_t byte) {
    return p.body + p.specs[static_cast<size_t>(entry)].offset + byte;
  };
  return {
      {"last string offset past the data",
       [at](std::string* b, const BatchPlaces& p, bool big) {
         Put(b, at(p, 3, 16), 1000, 4, big);
       }},
      {"string offsets going backwards",
       [at](std::string* b, const BatchPlaces& p, bool big) {
         Put(b, at(p, 3, 8), 9, 4, big);
       }},
      {"negative first string offset",
       [at](std::string* b, const BatchPlaces& p, bool big) {
         Put(b, at(p, 3, 0), 0xFFFFFFF0u, 4, big);
       }},
      {"odd-sized int32 values",
       [](std::string* b, const BatchPlaces& p, bool) {
         Put(b, p.entries[1] + 8, 13, 8, false);  // flatbuffer: little-endian always
       }},
      {"odd-sized string offsets", [](std::string* b, const BatchPlaces& p,
                                      bool) { Put(b, p.entries[3] + 8, 18, 8, false); }},
      {"view naming a data buffer that is not there",
       [at](std::string* b, const BatchPlaces& p, bool big) {
         Put(b, at(p, 6, 16 + 8), 5, 4, big);  // second view's buffer index
       }},
      {"view reaching past its data buffer",
       [at](std::string* b, const BatchPlaces& p, bool big) {
         Put(b, at(p, 6, 16 + 12), 100000, 4, big);  // second view's offset
       }},
      {"view length beyond the data",
       [at](std::string* b, const BatchPlaces& p, bool big) {
         Put(b, at(p, 6, 48), 5000, 4, big);  // fourth view's length
       }},
      {"dense union offset past its child",
       [at](std::string* b, const BatchPlaces& p, bool big) {
         Put(b, at(p, 9, 8), 77, 4, big);
       }},
  };
}

TEST(BigEndian, MalformedInputGetsTheSameErrorsAsLittleEndian) {
  Twins t = Write({KnownBatch()}, IpcFormat::kStream);
  ASSERT_OK_AND_ASSIGN(auto clean, ReadBatches(t.big, Full()));
  EXPECT_TRUE(BatchesEqual(*KnownBatch(), *clean[0]));
  const BatchPlaces little_places = Places(t.little, 0);
  const BatchPlaces big_places = Places(t.big, 0);
  ASSERT_EQ(little_places.specs.size(), 12u);
  ASSERT_EQ(big_places.specs.size(), 12u);
  for (const Corruption& c : Corruptions()) {
    SCOPED_TRACE(c.what);
    std::string little(t.little->view()), big(t.big->view());
    c.apply(&little, little_places, false);
    c.apply(&big, big_places, true);
    auto little_read = ReadBatches(
        ExactCopy(reinterpret_cast<const uint8_t*>(little.data()), little.size()),
        Full());
    auto big_read = ReadBatches(
        ExactCopy(reinterpret_cast<const uint8_t*>(big.data()), big.size()), Full());
    ASSERT_FALSE(little_read.ok());
    ASSERT_FALSE(big_read.ok());
    EXPECT_EQ(big_read.status().ToString(), little_read.status().ToString());
    // Kept big-endian, the same checks run on a swapped copy.
    auto kept =
        ReadBatches(ExactCopy(reinterpret_cast<const uint8_t*>(big.data()), big.size()),
                    Full(/*native=*/false));
    ASSERT_FALSE(kept.ok());
    EXPECT_EQ(kept.status().ToString(), little_read.status().ToString());
  }
}

TEST(BigEndian, TruncatedInputIsAnErrorNeverACrash) {
  ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch(AllTypes(), 12, 3));
  for (IpcFormat format : kFormats) {
    Twins t = Write({batch}, format);
    for (int64_t cut = 0; cut < t.big->size(); cut += 61) {
      auto part = ExactCopy(t.big->data(), cut);
      for (bool native : {true, false}) {
        auto read = ReadBatches(part, Full(native));
        if (read.ok()) {
          // A stream cut between messages ends early; what it gave is valid.
          for (const auto& b : *read) EXPECT_LE(b->num_rows(), batch->num_rows());
        } else {
          EXPECT_FALSE(read.status().message().empty());
        }
      }
    }
  }
}

TEST(BigEndian, CorruptBodiesAreErrorsNeverCrashes) {
  ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch(AllTypes(), 16, 23));
  Twins t = Write({batch}, IpcFormat::kStream);
  std::mt19937 rng(99);
  const BatchPlaces places = Places(t.big, 0);
  int failed = 0;
  for (int round = 0; round < 300; ++round) {
    std::string bytes(t.big->view());
    const int64_t span = t.big->size() - places.body;
    for (int k = 0; k < 4; ++k) {
      const int64_t pos = places.body + static_cast<int64_t>(rng() % span);
      bytes[static_cast<size_t>(pos)] = static_cast<char>(rng());
    }
    auto data = ExactCopy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    for (bool native : {true, false}) {
      auto read = ReadBatches(data, Full(native));
      if (!read.ok()) {
        ++failed;
        continue;
      }
      for (const auto& b : *read) {
        if (native) {
          ASSERT_OK(b->ValidateFull());
        } else {
          // Big-endian bytes read as little-endian: any answer but a crash.
          (void)b->ValidateFull();
        }
      }
    }
  }
  EXPECT_GT(failed, 0) << "some corruptions must be caught";
}

}  // namespace
}  // namespace quiver::ipc::test
