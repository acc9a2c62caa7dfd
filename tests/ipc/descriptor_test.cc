// Descriptors (Arrow Dissociated IPC messages in one byte string): round
// trips of every type, zero-copy by address, the validator, malformed
// input, limits and size. descriptor_spec_test.cc checks the bytes against
// the protocol with a parser of its own, and streams of many batches.
//
// Buffers live on the ordinary heap here; the validator is a lambda.

#include "quiver/columnar/ipc/descriptor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/all_types.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "ipc/descriptor_spec_util.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/ipc/message.h"

namespace quiver::ipc {
namespace {

using ::quiver::testing::Contains;

// ---------------------------------------------------------------------------
// Sample data of any type

class Sampler {
 public:
  explicit Sampler(uint32_t seed) : rng_(seed) {}

  // A random array of `type`: `null_percent`% nulls (none below a
  // non-nullable field).
  Result<ArrayPtr> Array(const TypePtr& type, int64_t length, int null_percent) {
    QUIVER_ASSIGN_OR_RAISE(auto builder, MakeBuilder(type));
    for (int64_t i = 0; i < length; ++i) {
      QUIVER_RETURN_NOT_OK(Append(builder.get(), *type, null_percent));
    }
    return builder->Finish();
  }

 private:
  int64_t Below(int64_t n) { return static_cast<int64_t>(rng_() % uint64_t(n)); }
  std::string Text(int64_t n) {
    std::string s(static_cast<size_t>(n), ' ');
    for (char& c : s) c = static_cast<char>('A' + Below(26));
    return s;
  }
  template <typename T>
  static Status Num(ArrayBuilder* b, typename T::c_type v) {
    return static_cast<NumericBuilder<T>*>(b)->Append(v);
  }

  Status Children(ArrayBuilder* b, const DataType& t, int child, int64_t n, int nulls) {
    const Field& f = *t.field(child);
    for (int64_t i = 0; i < n; ++i) {
      QUIVER_RETURN_NOT_OK(Append(b->child(child), *f.type(), f.nullable() ? nulls : 0));
    }
    return Status::OK();
  }

  Status Append(ArrayBuilder* b, const DataType& t, int nulls) {
    if (t.id() == TypeId::kNull || (nulls > 0 && Below(100) < nulls)) {
      return b->AppendNull();
    }
    const int64_t v = static_cast<int64_t>(rng_() % 2000000) - 1000000;
    switch (t.id()) {
      case TypeId::kBool:
        return static_cast<BooleanBuilder*>(b)->Append(v % 2 == 0);
      case TypeId::kInt8:
        return Num<Int8Type>(b, static_cast<int8_t>(v));
      case TypeId::kInt16:
        return Num<Int16Type>(b, static_cast<int16_t>(v));
      case TypeId::kInt32:
        return Num<Int32Type>(b, static_cast<int32_t>(v));
      case TypeId::kInt64:
        return Num<Int64Type>(b, v * 987654321);
      case TypeId::kUInt8:
        return Num<UInt8Type>(b, static_cast<uint8_t>(v));
      case TypeId::kUInt16:
        return Num<UInt16Type>(b, static_cast<uint16_t>(v));
      case TypeId::kUInt32:
        return Num<UInt32Type>(b, static_cast<uint32_t>(v));
      case TypeId::kUInt64:
        return Num<UInt64Type>(b, static_cast<uint64_t>(v) * 31);
      case TypeId::kHalfFloat:  // finite: 0x3C00 is 1.0, stay below infinity
        return Num<HalfFloatType>(b, static_cast<uint16_t>(Below(0x7800)));
      case TypeId::kFloat:
        return Num<FloatType>(b, static_cast<float>(v) / 8.0f);
      case TypeId::kDouble:
        return Num<DoubleType>(b, static_cast<double>(v) / 16.0);
      case TypeId::kDecimal:
        return static_cast<Decimal128Builder*>(b)->Append(Decimal128(v % 1000));
      case TypeId::kDate32:
        return Num<Date32Type>(b, static_cast<int32_t>(Below(30000)));
      case TypeId::kDate64:
        return Num<Date64Type>(b, Below(30000) * 86400000LL);
      case TypeId::kTime32:
        return Num<Time32Type>(b, static_cast<int32_t>(Below(86400)));
      case TypeId::kTime64:
        return Num<Time64Type>(b, Below(86400) * 1000000LL);
      case TypeId::kTimestamp:
        return Num<TimestampType>(b, v * 1000);
      case TypeId::kDuration:
        return Num<DurationType>(b, v);
      case TypeId::kString:
      case TypeId::kBinary:
        return static_cast<BaseBinaryBuilder<int32_t>*>(b)->Append(Text(Below(9)));
      case TypeId::kLargeString:
      case TypeId::kLargeBinary:
        return static_cast<BaseBinaryBuilder<int64_t>*>(b)->Append(Text(Below(9)));
      case TypeId::kStringView:
      case TypeId::kBinaryView:  // inline (up to 12 bytes) and out of line
        return static_cast<BinaryViewBuilder*>(b)->Append(Text(Below(30)));
      case TypeId::kFixedSizeBinary:
      case TypeId::kInterval:  // every bit pattern is an interval
        return static_cast<FixedSizeBinaryBuilder*>(b)->Append(Text(t.byte_width()));
      case TypeId::kList:
        QUIVER_RETURN_NOT_OK(static_cast<ListBuilder*>(b)->Append(true));
        return Children(b, t, 0, Below(4), nulls);
      case TypeId::kLargeList:
        QUIVER_RETURN_NOT_OK(static_cast<LargeListBuilder*>(b)->Append(true));
        return Children(b, t, 0, Below(4), nulls);
      case TypeId::kListView:
        QUIVER_RETURN_NOT_OK(static_cast<ListViewBuilder*>(b)->Append(true));
        return Children(b, t, 0, Below(4), nulls);
      case TypeId::kLargeListView:
        QUIVER_RETURN_NOT_OK(static_cast<LargeListViewBuilder*>(b)->Append(true));
        return Children(b, t, 0, Below(4), nulls);
      case TypeId::kFixedSizeList:
        QUIVER_RETURN_NOT_OK(static_cast<FixedSizeListBuilder*>(b)->Append());
        return Children(b, t, 0, t.list_size(), nulls);
      case TypeId::kStruct:
        QUIVER_RETURN_NOT_OK(static_cast<StructBuilder*>(b)->Append(true));
        for (int i = 0; i < t.num_fields(); ++i) {
          QUIVER_RETURN_NOT_OK(Children(b, t, i, 1, nulls));
        }
        return Status::OK();
      case TypeId::kMap: {
        auto* m = static_cast<MapBuilder*>(b);
        QUIVER_RETURN_NOT_OK(m->Append());
        for (int64_t i = Below(3); i > 0; --i) {
          QUIVER_RETURN_NOT_OK(Append(m->key_builder(), *t.key_type(), 0));
          QUIVER_RETURN_NOT_OK(Append(m->item_builder(), *t.item_type(), nulls));
        }
        return Status::OK();
      }
      case TypeId::kDictionary: {
        auto* d = static_cast<DictionaryBuilder*>(b);
        const DataType& vt = *t.value_type();
        const int64_t pick = Below(6);
        if (IsBaseBinary(vt.id())) return d->Append(std::string_view(kWords[pick]));
        if (vt.id() == TypeId::kFixedSizeBinary) {
          return d->Append(std::string(static_cast<size_t>(vt.byte_width()),
                                       static_cast<char>('k' + pick)));
        }
        if (vt.id() == TypeId::kFloat || vt.id() == TypeId::kDouble) {
          return d->Append(static_cast<double>(pick) / 4);
        }
        return d->Append(pick * 11 - 7);
      }
      case TypeId::kSparseUnion:
      case TypeId::kDenseUnion: {  // a value of a random child
        const int k = static_cast<int>(Below(t.num_fields()));
        QUIVER_RETURN_NOT_OK(static_cast<UnionBuilder*>(b)->Append(t.type_codes()[k]));
        return Children(b, t, k, 1, nulls);
      }
      case TypeId::kRunEndEncoded: {  // half the slots extend the run before
        auto* rb = static_cast<RunEndEncodedBuilder*>(b);
        if (rb->length() > 0 && Below(2) == 0) return rb->ExtendRun();
        QUIVER_RETURN_NOT_OK(rb->Append());
        return Append(rb->value_builder(), *t.value_type(), nulls);
      }
      default:
        return Status::NotImplemented("sample of ", t.ToString());
    }
  }

  static constexpr const char* kWords[] = {"red", "", "green", "blue", "cyan", "magenta"};
  std::mt19937 rng_;
};

Result<RecordBatchPtr> SampleBatch(const std::vector<TypePtr>& types, int64_t rows,
                                   uint32_t seed, int null_percent = 25) {
  Sampler sampler(seed);
  FieldVector fields;
  std::vector<ArrayPtr> columns;
  for (size_t i = 0; i < types.size(); ++i) {
    QUIVER_ASSIGN_OR_RAISE(auto a, sampler.Array(types[i], rows, null_percent));
    fields.push_back(field("col" + std::to_string(i), types[i]));
    columns.push_back(std::move(a));
  }
  return RecordBatch::Make(schema(fields), rows, columns);
}

RecordBatchPtr ThreeColumns(int64_t rows) {
  Int64Builder a;
  Int8Builder b;
  UInt16Builder c;
  for (int64_t i = 0; i < rows; ++i) {
    EXPECT_TRUE(a.Append(i * 3).ok());
    EXPECT_TRUE(b.Append(static_cast<int8_t>(i)).ok());
    EXPECT_TRUE(c.Append(static_cast<uint16_t>(i * 7)).ok());
  }
  return RecordBatch::FromArrays(
             {"a", "b", "c"},
             {a.Finish().ValueOrDie(), b.Finish().ValueOrDie(), c.Finish().ValueOrDie()})
      .ValueOrDie();
}

// ---------------------------------------------------------------------------
// Checks

Status AcceptAll(uint64_t, uint64_t) { return Status::OK(); }

// Every non-empty buffer of `data` (children and dictionaries included) of a
// non-empty array must start exactly at one of `addresses`.
void CollectMisplaced(const ArrayData& data, const std::set<uint64_t>& addresses,
                      const std::string& where, std::string* bad) {
  for (size_t i = 0; i < data.buffers.size(); ++i) {
    const auto& b = data.buffers[i];
    if (b == nullptr || b->size() == 0 || data.length == 0) continue;
    if (addresses.count(reinterpret_cast<uintptr_t>(b->data())) == 0) {
      *bad += where + " buffer " + std::to_string(i) + "\n";
    }
  }
  for (size_t i = 0; i < data.child_data.size(); ++i) {
    CollectMisplaced(*data.child_data[i], addresses, where + "." + std::to_string(i),
                     bad);
  }
  if (data.dictionary) {
    CollectMisplaced(*data.dictionary, addresses, where + ".dictionary", bad);
  }
}

// Encodes, inspects and decodes `batch`; checks values, zero-copy by
// address, validator calls, the ranges and the keepalive.
void RoundTrip(const RecordBatch& batch) {
  std::vector<BufferRange> ranges;
  std::vector<std::shared_ptr<Buffer>> scratch;
  ASSERT_OK_AND_ASSIGN(std::string bytes,
                       EncodeDescriptor(batch, default_memory_pool(), &ranges, &scratch));
  for (const BufferRange& r : ranges) {
    ASSERT_GT(r.length, 0u);
    ASSERT_EQ(r.address % 8, 0u);
  }

  std::vector<BufferRange> seen;
  RangeValidator recorder = [&](uint64_t address, uint64_t length) {
    seen.push_back({address, length});
    return Status::OK();
  };
  ASSERT_OK_AND_ASSIGN(DescriptorInfo info, InspectDescriptor(bytes, recorder));
  EXPECT_TRUE(info.schema->Equals(*batch.schema(), true));
  EXPECT_EQ(info.num_rows, batch.num_rows());
  EXPECT_EQ(info.ranges, ranges);
  EXPECT_EQ(seen, ranges);

  seen.clear();
  auto keepalive = std::make_shared<int>(42);
  ASSERT_OK_AND_ASSIGN(auto decoded, DecodeDescriptor(bytes, recorder, keepalive));
  EXPECT_EQ(seen, ranges);
  ASSERT_OK(decoded->ValidateFull());
  EXPECT_TRUE(batch.Equals(*decoded, true)) << "expected:\n"
                                            << batch.ToString() << "\nactual:\n"
                                            << decoded->ToString();
  std::set<uint64_t> addresses;
  for (const BufferRange& r : ranges) addresses.insert(r.address);
  std::string bad;
  for (int c = 0; c < decoded->num_columns(); ++c) {
    CollectMisplaced(*decoded->column_data(c), addresses, decoded->column_name(c), &bad);
  }
  EXPECT_TRUE(bad.empty()) << "buffers not at a descriptor address:\n" << bad;
  if (!ranges.empty()) {
    EXPECT_GT(keepalive.use_count(), 1);
  }
  decoded.reset();
  EXPECT_EQ(keepalive.use_count(), 1);
}

// ---------------------------------------------------------------------------
// Round trips

TEST(DescriptorTest, EveryTypeWithNulls) {
  for (const TypePtr& type : testing::AllTypes()) {
    SCOPED_TRACE(type->ToString());
    ASSERT_OK_AND_ASSIGN(auto batch, SampleBatch({type}, 41, 3));
    RoundTrip(*batch);
  }
}

TEST(DescriptorTest, EveryTypeWithoutNulls) {
  for (const TypePtr& type : testing::AllTypes()) {
    SCOPED_TRACE(type->ToString());
    ASSERT_OK_AND_ASSIGN(auto batch, SampleBatch({type}, 17, 5, /*null_percent=*/0));
    RoundTrip(*batch);
  }
}

// Views: the variadic data buffers of each view field are counted per
// message, so a descriptor carries them like any other buffer.
TEST(DescriptorTest, ViewColumnsKeepTheirDataBuffers) {
  BinaryViewBuilder b(utf8_view());
  ASSERT_OK(b.Append("a value longer than twelve bytes"));
  ASSERT_OK(b.Append("short"));
  ASSERT_OK(b.AppendNull());
  ASSERT_OK(b.Append(std::string(100, 'x')));
  ASSERT_OK_AND_ASSIGN(auto views, b.Finish());
  ASSERT_OK_AND_ASSIGN(auto batch, RecordBatch::FromArrays({"names"}, {views}));
  RoundTrip(*batch);
  RoundTrip(*batch->Slice(1, 3));
}

TEST(DescriptorTest, BigEndianBatchesAreRefused) {
  // Kept big-endian by an IPC reader (ensure_native_endian = false): a
  // descriptor is always little-endian, so publishing one is an error.
  auto batch = ThreeColumns(4);
  auto big = RecordBatch::Make(batch->schema()->WithEndianness(Endianness::kBig),
                               batch->num_rows(), batch->column_data());
  auto st = EncodeDescriptor(*big, nullptr).status();
  EXPECT_TRUE(st.IsNotImplemented()) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "big-endian")) << st.ToString();
  ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeDescriptor(*batch, nullptr));

  // A descriptor whose Schema message says Big, framed by hand.
  ASSERT_OK_AND_ASSIGN(auto fields, DictionaryFieldMap::Make(*batch->schema()));
  ASSERT_OK_AND_ASSIGN(auto big_schema, EncodeSchema(*big->schema(), fields));
  IpcWriteOptions options;
  options.alignment = 8;
  ASSERT_OK_AND_ASSIGN(auto payload, AssembleRecordBatch(*batch, options));
  ASSERT_OK_AND_ASSIGN(auto header, EncodeRecordBatch(payload.metadata));
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  for (const auto& b : payload.buffers) {
    pairs.emplace_back(b == nullptr ? 0 : reinterpret_cast<uintptr_t>(b->data()),
                       b == nullptr ? 0 : b->size());
  }
  spec::FrameWriter w;
  w.Metadata(0, big_schema->view());
  w.Metadata(1, header->view());
  w.Body(spec::Tag(1, 1), spec::AddressList(pairs));
  w.End(2);
  const std::string forged = w.Finish();
  st = DecodeDescriptor(forged, AcceptAll, nullptr).status();
  EXPECT_TRUE(st.IsNotImplemented()) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "big-endian")) << st.ToString();
  st = InspectDescriptor(forged, AcceptAll).status();
  EXPECT_TRUE(st.IsNotImplemented()) << st.ToString();
}

TEST(DescriptorTest, AllTypesInOneBatch) {
  ASSERT_OK_AND_ASSIGN(auto batch, SampleBatch(testing::AllTypes(), 100, 9));
  RoundTrip(*batch);
}

TEST(DescriptorTest, SlicedBatches) {
  // Offsets that are and are not multiples of 8: bitmaps are re-packed or
  // sliced (and then copied if unaligned), offsets re-based.
  ASSERT_OK_AND_ASSIGN(auto batch, SampleBatch(testing::AllTypes(), 130, 13));
  for (int64_t offset : {1, 3, 8, 13, 64, 129}) {
    for (int64_t length : {int64_t{0}, int64_t{1}, int64_t{9}, 130 - offset}) {
      if (offset + length > 130) continue;
      SCOPED_TRACE("offset " + std::to_string(offset) + " length " +
                   std::to_string(length));
      RoundTrip(*batch->Slice(offset, length));
    }
  }
}

TEST(DescriptorTest, EmptyBatches) {
  ASSERT_OK_AND_ASSIGN(auto batch, SampleBatch(testing::AllTypes(), 0, 1));
  RoundTrip(*batch);
  std::vector<BufferRange> ranges;
  ASSERT_OK(EncodeDescriptor(*batch, nullptr, &ranges).status());
  EXPECT_TRUE(ranges.empty());
  // No columns at all, but rows.
  RoundTrip(*RecordBatch::Make(schema({}), 5, std::vector<ArrayDataPtr>{}));
}

TEST(DescriptorTest, NullOnlyColumns) {
  FieldVector fields;
  std::vector<ArrayPtr> columns;
  for (const TypePtr& type : testing::AllTypes()) {
    ASSERT_OK_AND_ASSIGN(auto builder, MakeBuilder(type));
    ASSERT_OK(builder->AppendNulls(23));
    ASSERT_OK_AND_ASSIGN(auto array, builder->Finish());
    fields.push_back(field("n" + std::to_string(fields.size()), type));
    columns.push_back(array);
  }
  auto batch = RecordBatch::Make(schema(fields), 23, columns);
  RoundTrip(*batch);
  RoundTrip(*batch->Slice(5, 11));
}

TEST(DescriptorTest, NestedDictionaries) {
  auto dict = dictionary(int16(), utf8());
  std::vector<TypePtr> types = {
      list(dict),
      struct_({field("d", dict), field("x", int32())}),
      large_list(struct_({field("e", dictionary(int8(), float64()))})),
      fixed_size_list(dictionary(int32(), binary()), 2),
      map(utf8(), dictionary(int8(), utf8())),
      dict};
  ASSERT_OK_AND_ASSIGN(auto batch, SampleBatch(types, 60, 21));
  RoundTrip(*batch);
  RoundTrip(*batch->Slice(7, 30));
  std::vector<BufferRange> ranges;
  ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeDescriptor(*batch, nullptr, &ranges));
  // One dictionary message per dictionary-encoded field.
  ASSERT_OK_AND_ASSIGN(auto fields, DictionaryFieldMap::Make(*batch->schema()));
  EXPECT_EQ(fields.size(), 6);
}

TEST(DescriptorTest, ThreeColumnBatchIsSmall) {
  auto batch = ThreeColumns(1000);
  ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeDescriptor(*batch, nullptr));
  EXPECT_LT(bytes.size(), 1024u);
  std::printf("descriptor of a 3-column batch: %zu bytes\n", bytes.size());
  RoundTrip(*batch);
}

TEST(DescriptorTest, DecodedBuffersAreTheEncodedAddresses) {
  auto batch = ThreeColumns(100);
  std::vector<BufferRange> ranges;
  ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeDescriptor(*batch, nullptr, &ranges));
  ASSERT_EQ(ranges.size(), 3u);  // no nulls: values only
  ASSERT_OK_AND_ASSIGN(auto decoded, DecodeDescriptor(bytes, AcceptAll, nullptr));
  for (int c = 0; c < 3; ++c) {
    const auto& original = batch->column_data(c)->buffers[1];
    const auto& back = decoded->column_data(c)->buffers[1];
    EXPECT_EQ(back->data(), original->data());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(back->data()), ranges[c].address);
    EXPECT_EQ(static_cast<uint64_t>(back->size()), ranges[c].length);
  }
}

// Without scratch_out, buffers made for a sliced batch stay allocated (they
// belong to the descriptor); with it, they are the caller's to hold.
class TrackingPool final : public MemoryPool {
 public:
  using MemoryPool::Allocate;
  using MemoryPool::Free;
  using MemoryPool::Reallocate;
  ~TrackingPool() override {
    for (auto& [p, s] : live_) default_memory_pool()->Free(p, s.first, s.second);
  }
  Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override {
    QUIVER_RETURN_NOT_OK(default_memory_pool()->Allocate(size, alignment, out));
    live_[*out] = {size, alignment};
    return Status::OK();
  }
  Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                    uint8_t** ptr) override {
    uint8_t* old = *ptr;
    QUIVER_RETURN_NOT_OK(
        default_memory_pool()->Reallocate(old_size, new_size, alignment, ptr));
    live_.erase(old);
    live_[*ptr] = {new_size, alignment};
    return Status::OK();
  }
  void Free(uint8_t* p, int64_t size, int64_t alignment) override {
    live_.erase(p);
    default_memory_pool()->Free(p, size, alignment);
  }
  int64_t bytes_allocated() const override { return 0; }
  int64_t max_memory() const override { return 0; }
  int64_t total_bytes_allocated() const override { return 0; }
  int64_t num_allocations() const override { return 0; }
  std::string backend_name() const override { return "tracking"; }
  size_t live() const { return live_.size(); }
  bool Owns(uint64_t address) const {
    for (const auto& [p, s] : live_) {
      if (address >= reinterpret_cast<uintptr_t>(p) &&
          address < reinterpret_cast<uintptr_t>(p) + static_cast<uint64_t>(s.first)) {
        return true;
      }
    }
    return false;
  }

 private:
  std::map<uint8_t*, std::pair<int64_t, int64_t>> live_;
};

TEST(DescriptorTest, ScratchBuffersComeFromTheScratchPool) {
  ASSERT_OK_AND_ASSIGN(auto batch, SampleBatch({utf8(), boolean(), int8()}, 50, 4));
  auto sliced = batch->Slice(3, 20);  // re-based offsets, re-packed bitmaps
  TrackingPool pool;
  {
    std::vector<BufferRange> ranges;
    ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeDescriptor(*sliced, &pool, &ranges));
    EXPECT_GT(pool.live(), 0u);  // not freed: the descriptor references them
    size_t in_pool = 0;
    for (const BufferRange& r : ranges) in_pool += pool.Owns(r.address);
    EXPECT_EQ(in_pool, pool.live());
    ASSERT_OK_AND_ASSIGN(auto decoded, DecodeDescriptor(bytes, AcceptAll, nullptr));
    ASSERT_OK(decoded->ValidateFull());
    EXPECT_TRUE(decoded->Equals(*sliced));
  }
  TrackingPool held_pool;
  {
    std::vector<std::shared_ptr<Buffer>> scratch;
    ASSERT_OK_AND_ASSIGN(std::string bytes,
                         EncodeDescriptor(*sliced, &held_pool, nullptr, &scratch));
    EXPECT_GT(held_pool.live(), 0u);
    ASSERT_OK_AND_ASSIGN(auto decoded, DecodeDescriptor(bytes, AcceptAll, nullptr));
    EXPECT_TRUE(decoded->Equals(*sliced));
  }
  EXPECT_EQ(held_pool.live(), 0u);  // freed with the caller's references
}

// ---------------------------------------------------------------------------
// Inspection and the validator

TEST(DescriptorTest, InspectReadsNoReferencedMemory) {
  std::string bytes;
  std::vector<BufferRange> ranges;
  {
    ASSERT_OK_AND_ASSIGN(auto batch, SampleBatch(testing::AllTypes(), 30, 8));
    std::vector<std::shared_ptr<Buffer>> scratch;
    ASSERT_OK_AND_ASSIGN(bytes, EncodeDescriptor(*batch, nullptr, &ranges, &scratch));
  }
  // The batch is gone: its memory is freed (ASan builds would report any read).
  ASSERT_OK_AND_ASSIGN(DescriptorInfo info, InspectDescriptor(bytes, AcceptAll));
  EXPECT_EQ(info.num_rows, 30);
  EXPECT_EQ(info.ranges, ranges);
  EXPECT_EQ(info.schema->num_fields(), static_cast<int>(testing::AllTypes().size()));
}

TEST(DescriptorTest, ValidatorIsConsultedAndItsErrorPropagates) {
  ASSERT_OK_AND_ASSIGN(auto batch, SampleBatch({int32(), utf8()}, 20, 2));
  std::vector<BufferRange> ranges;
  ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeDescriptor(*batch, nullptr, &ranges));
  ASSERT_GE(ranges.size(), 3u);
  for (size_t reject = 0; reject < ranges.size(); ++reject) {
    size_t calls = 0;
    RangeValidator validator = [&](uint64_t address, uint64_t length) -> Status {
      ++calls;
      if (address == ranges[reject].address && length == ranges[reject].length) {
        return Status::Invalid("range is not inside a sealed allocation");
      }
      return Status::OK();
    };
    char hex[32];
    std::snprintf(hex, sizeof(hex), "0x%llx",
                  static_cast<unsigned long long>(ranges[reject].address));
    auto inspected = InspectDescriptor(bytes, validator);
    ASSERT_FALSE(inspected.ok());
    EXPECT_TRUE(Contains(inspected.status().message(), "not inside a sealed allocation"))
        << inspected.status().ToString();
    EXPECT_TRUE(Contains(inspected.status().message(), hex))
        << inspected.status().ToString();
    EXPECT_EQ(calls, reject + 1);
    auto decoded = DecodeDescriptor(bytes, validator, nullptr);
    ASSERT_FALSE(decoded.ok());
    EXPECT_TRUE(Contains(decoded.status().message(), "not inside a sealed allocation"));
  }
}

// Overwrites the length of every 16-byte (u64, u64) pair equal to
// (`first`, `length`).
int PatchPair(std::string* bytes, uint64_t first, uint64_t length, uint64_t new_length) {
  char pattern[16];
  std::memcpy(pattern, &first, 8);
  std::memcpy(pattern + 8, &length, 8);
  int patched = 0;
  for (size_t pos = 0; pos + 16 <= bytes->size(); ++pos) {
    if (std::memcmp(bytes->data() + pos, pattern, 16) == 0) {
      std::memcpy(bytes->data() + pos + 8, &new_length, 8);
      ++patched;
    }
  }
  return patched;
}

TEST(DescriptorTest, BodyMustMatchTheHeader) {
  auto batch = ThreeColumns(10);
  std::vector<BufferRange> ranges;
  ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeDescriptor(*batch, nullptr, &ranges));
  // Change only the body's pair of the first range (and the list's total,
  // which DecodeAddressList checks first).
  std::string bad = bytes;
  ASSERT_EQ(PatchPair(&bad, ranges[0].address, ranges[0].length, ranges[0].length - 8),
            1);
  uint64_t total = 0;
  for (const BufferRange& r : ranges) total += r.length;
  ASSERT_EQ(PatchPair(&bad, total, 6, 6), 1);  // (total, count): count stays
  {
    const size_t at = bad.find(std::string(reinterpret_cast<const char*>(&total), 8) +
                               std::string("\x06\0\0\0\0\0\0\0", 8));
    ASSERT_NE(at, std::string::npos);
    const uint64_t less = total - 8;
    std::memcpy(bad.data() + at, &less, 8);
  }
  auto st = InspectDescriptor(bad, AcceptAll).status();
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(Contains(st.message(), "differs in length from the header"))
      << st.ToString();
}

// ---------------------------------------------------------------------------
// Malformed bytes

TEST(DescriptorTest, EveryTruncationIsAnError) {
  ASSERT_OK_AND_ASSIGN(auto batch, SampleBatch(testing::AllTypes(), 12, 6));
  ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeDescriptor(*batch, nullptr));
  for (size_t n = 0; n < bytes.size(); ++n) {
    // An exact-size heap copy, so reading past the end is caught by ASan.
    std::unique_ptr<char[]> copy(new char[n + 1]);
    std::memcpy(copy.get(), bytes.data(), n);
    std::string_view prefix(copy.get(), n);
    ASSERT_FALSE(InspectDescriptor(prefix, AcceptAll).ok()) << n;
    ASSERT_FALSE(DecodeDescriptor(prefix, AcceptAll, nullptr).ok()) << n;
  }
  auto st = DecodeDescriptor(bytes.substr(0, bytes.size() - 8), AcceptAll, nullptr);
  EXPECT_TRUE(Contains(st.status().message(), "truncated")) << st.status().ToString();
}

TEST(DescriptorTest, FlippedBytesNeverCrash) {
  ASSERT_OK_AND_ASSIGN(auto batch,
                       SampleBatch({int64(), utf8(), list(dictionary(int8(), utf8())),
                                    struct_({field("f", float64())})},
                                   9, 12));
  std::vector<BufferRange> ranges;
  ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeDescriptor(*batch, nullptr, &ranges));
  // As the daemon does: a range must lie inside memory the batch really
  // has (an allocation), so a flipped address cannot point elsewhere.
  RangeValidator inside = [&](uint64_t address, uint64_t length) {
    for (const BufferRange& r : ranges) {
      if (address >= r.address && length <= r.length &&
          address - r.address <= r.length - length) {
        return Status::OK();
      }
    }
    return Status::Invalid("not inside any of the batch's buffers");
  };
  int errors = 0, total = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t mask : {0x01, 0x80, 0xFF}) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      ++total;
      auto decoded = DecodeDescriptor(bad, inside, nullptr);
      if (!decoded.ok()) {
        ++errors;
        EXPECT_FALSE(decoded.status().message().empty());
        continue;
      }
      // Names, metadata and node lengths may change harmlessly; the result
      // must still be a well-formed batch over the same memory.
      (void)(*decoded)->ValidateFull();
    }
  }
  // The framing and every length are checked redundantly (header and
  // body), so most flips are errors.
  EXPECT_GT(errors, total / 2) << errors << " of " << total;
}

TEST(DescriptorTest, FramingFlipsAreErrors) {
  auto batch = ThreeColumns(4);
  ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeDescriptor(*batch, nullptr));
  // The 16-byte header, and the last 16 bytes: the end of stream frame's
  // tag (0 on the metadata stream), its 5-byte message and zero padding.
  std::vector<size_t> positions;
  for (size_t i = 0; i < 16; ++i) positions.push_back(i);
  for (size_t i = bytes.size() - 16; i < bytes.size(); ++i) positions.push_back(i);
  for (size_t i : positions) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x04);
    EXPECT_FALSE(DecodeDescriptor(bad, AcceptAll, nullptr).ok()) << "byte " << i;
  }
}

TEST(DescriptorTest, GarbageAndLimits) {
  EXPECT_FALSE(InspectDescriptor("", AcceptAll).ok());
  EXPECT_FALSE(InspectDescriptor("QVDESC", AcceptAll).ok());
  auto st = InspectDescriptor(std::string(64, 'x'), AcceptAll).status();
  EXPECT_TRUE(Contains(st.message(), "magic")) << st.ToString();
  std::string huge(kMaxDescriptorSize + 1, '\0');
  st = InspectDescriptor(huge, AcceptAll).status();
  EXPECT_TRUE(Contains(st.message(), "exceeds the limit")) << st.ToString();

  auto batch = ThreeColumns(4);
  ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeDescriptor(*batch, nullptr));
  std::string version = bytes;
  version[6] = 3;
  st = InspectDescriptor(version, AcceptAll).status();
  EXPECT_TRUE(st.IsNotImplemented()) << st.ToString();
  std::string trailing = bytes + std::string(8, '\0');
  st = InspectDescriptor(trailing, AcceptAll).status();
  EXPECT_TRUE(Contains(st.message(), "trailing")) << st.ToString();
  std::string records = bytes;
  const uint32_t many = kMaxDescriptorRecords + 1;
  std::memcpy(records.data() + 8, &many, 4);
  st = InspectDescriptor(records, AcceptAll).status();
  EXPECT_TRUE(Contains(st.message(), "frames")) << st.ToString();
}

TEST(DescriptorTest, MisalignedInputStillDecodes) {
  auto batch = ThreeColumns(20);
  ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeDescriptor(*batch, nullptr));
  std::string shifted = " " + bytes;
  std::string_view view(shifted.data() + 1, bytes.size());
  ASSERT_OK_AND_ASSIGN(auto decoded, DecodeDescriptor(view, AcceptAll, nullptr));
  EXPECT_TRUE(decoded->Equals(*batch));
}

}  // namespace
}  // namespace quiver::ipc
