// libFuzzer target: arbitrary bytes through DecodeDescriptorBatches.
//
// Descriptors carry absolute addresses. To make seeds portable and let
// decoded batches reference real memory, the fuzzer owns a 1 MiB arena
// mapped at a fixed address (kArenaBase, MAP_FIXED_NOREPLACE), and its
// validator accepts only ranges inside that arena. At start-up the arena is
// filled deterministically with the sample batches below (a bump allocator,
// so the same bytes land at the same addresses in every run); the committed
// seeds in fuzz/corpus/descriptor are the descriptors of those batches, so
// they decode to valid batches. Every batch that decodes is checked with
// ValidateFull. Errors are the expected outcome for most inputs; crashes,
// sanitizer reports, leaks and timeouts are findings.
//
// Regenerate the seeds (after changing the samples or the format) with
//   QUIVER_DESCRIPTOR_SEEDS=fuzz/corpus/descriptor build/.../descriptor_fuzz
// which writes one file per sample and exits.

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "quiver/columnar/builder.h"
#include "quiver/columnar/ipc/descriptor.h"

namespace {

using namespace quiver;  // NOLINT(build/namespaces)

constexpr uint64_t kArenaBase = 0x5f0000000000ULL;
constexpr uint64_t kArenaSize = uint64_t{1} << 20;

// A bump allocator over the arena; nothing is ever returned.
class ArenaPool final : public MemoryPool {
 public:
  using MemoryPool::Allocate;
  using MemoryPool::Free;
  using MemoryPool::Reallocate;
  Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override {
    const uint64_t start = (used_ + static_cast<uint64_t>(alignment) - 1) &
                           ~(static_cast<uint64_t>(alignment) - 1);
    if (size < 0 || start + static_cast<uint64_t>(size) > kArenaSize) {
      return Status::OutOfMemory("fuzz arena exhausted");
    }
    used_ = start + static_cast<uint64_t>(size);
    *out = reinterpret_cast<uint8_t*>(kArenaBase + start);
    return Status::OK();
  }
  Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                    uint8_t** ptr) override {
    uint8_t* moved = nullptr;
    QUIVER_RETURN_NOT_OK(Allocate(new_size, alignment, &moved));
    std::memcpy(moved, *ptr, static_cast<size_t>(std::min(old_size, new_size)));
    *ptr = moved;
    return Status::OK();
  }
  void Free(uint8_t*, int64_t, int64_t) override {}
  int64_t bytes_allocated() const override { return static_cast<int64_t>(used_); }
  int64_t max_memory() const override { return static_cast<int64_t>(used_); }
  int64_t total_bytes_allocated() const override { return static_cast<int64_t>(used_); }
  int64_t num_allocations() const override { return 0; }
  std::string backend_name() const override { return "fuzz-arena"; }

 private:
  uint64_t used_ = 0;
};

Status InArena(uint64_t address, uint64_t length) {
  if (address < kArenaBase || length > kArenaSize ||
      address - kArenaBase > kArenaSize - length) {
    return Status::Invalid("range outside the fuzz arena");
  }
  return Status::OK();
}

// Deterministic sample values of the common types; anything else gets the
// type's empty value.
Status Fill(ArrayBuilder* b, const DataType& t, int64_t i, bool nullable) {
  if (t.id() == TypeId::kNull || (nullable && i % 5 == 3)) return b->AppendNull();
  switch (t.id()) {
    case TypeId::kBool:
      return static_cast<BooleanBuilder*>(b)->Append(i % 3 == 0);
    case TypeId::kInt8:
      return static_cast<Int8Builder*>(b)->Append(static_cast<int8_t>(i * 7));
    case TypeId::kInt32:
      return static_cast<Int32Builder*>(b)->Append(static_cast<int32_t>(i * 1001));
    case TypeId::kInt64:
      return static_cast<Int64Builder*>(b)->Append(i * 1234567);
    case TypeId::kUInt16:
      return static_cast<UInt16Builder*>(b)->Append(static_cast<uint16_t>(i * 13));
    case TypeId::kDouble:
      return static_cast<DoubleBuilder*>(b)->Append(static_cast<double>(i) / 3);
    case TypeId::kString:
    case TypeId::kBinary:
      return static_cast<BaseBinaryBuilder<int32_t>*>(b)->Append(
          std::string(static_cast<size_t>(i % 6), static_cast<char>('a' + i % 26)));
    case TypeId::kLargeString:
      return static_cast<BaseBinaryBuilder<int64_t>*>(b)->Append(
          std::string(static_cast<size_t>(i % 4), 'z'));
    case TypeId::kStringView:
    case TypeId::kBinaryView:  // inline and out-of-line values
      return static_cast<BinaryViewBuilder*>(b)->Append(
          std::string(static_cast<size_t>(i % 20), static_cast<char>('a' + i % 26)));
    case TypeId::kList:
    case TypeId::kLargeList: {
      if (t.id() == TypeId::kList) {
        QUIVER_RETURN_NOT_OK(static_cast<ListBuilder*>(b)->Append(true));
      } else {
        QUIVER_RETURN_NOT_OK(static_cast<LargeListBuilder*>(b)->Append(true));
      }
      for (int64_t k = 0; k < i % 3; ++k) {
        QUIVER_RETURN_NOT_OK(Fill(b->child(0), *t.field(0)->type(), i + k, true));
      }
      return Status::OK();
    }
    case TypeId::kFixedSizeList:
      QUIVER_RETURN_NOT_OK(static_cast<FixedSizeListBuilder*>(b)->Append());
      for (int64_t k = 0; k < t.list_size(); ++k) {
        QUIVER_RETURN_NOT_OK(Fill(b->child(0), *t.field(0)->type(), i + k, true));
      }
      return Status::OK();
    case TypeId::kStruct:
      QUIVER_RETURN_NOT_OK(static_cast<StructBuilder*>(b)->Append(true));
      for (int k = 0; k < t.num_fields(); ++k) {
        QUIVER_RETURN_NOT_OK(
            Fill(b->child(k), *t.field(k)->type(), i + k, t.field(k)->nullable()));
      }
      return Status::OK();
    case TypeId::kMap: {
      auto* m = static_cast<MapBuilder*>(b);
      QUIVER_RETURN_NOT_OK(m->Append());
      for (int64_t k = 0; k < i % 3; ++k) {
        QUIVER_RETURN_NOT_OK(Fill(m->key_builder(), *t.key_type(), i + k, false));
        QUIVER_RETURN_NOT_OK(Fill(m->item_builder(), *t.item_type(), i + k, true));
      }
      return Status::OK();
    }
    case TypeId::kRunEndEncoded: {  // runs of one to three slots
      auto* r = static_cast<RunEndEncodedBuilder*>(b);
      if (r->length() > 0 && i % 3 != 0) return r->ExtendRun();
      QUIVER_RETURN_NOT_OK(r->Append());
      return Fill(r->value_builder(), *t.value_type(), i, true);
    }
    case TypeId::kDictionary: {
      auto* d = static_cast<DictionaryBuilder*>(b);
      if (IsBaseBinary(t.value_type()->id())) {
        static const char* const kWords[] = {"north", "east", "south", "west"};
        return d->Append(std::string_view(kWords[i % 4]));
      }
      return d->Append(static_cast<int64_t>(i % 5));
    }
    default:
      return b->AppendEmptyValue();
  }
}

Result<RecordBatchPtr> Sample(const std::vector<TypePtr>& types, int64_t rows,
                              MemoryPool* pool) {
  FieldVector fields;
  std::vector<ArrayPtr> columns;
  for (const TypePtr& type : types) {
    QUIVER_ASSIGN_OR_RAISE(auto builder, MakeBuilder(type, pool));
    for (int64_t i = 0; i < rows; ++i) {
      QUIVER_RETURN_NOT_OK(Fill(builder.get(), *type, i, true));
    }
    QUIVER_ASSIGN_OR_RAISE(auto array, builder->Finish());
    fields.push_back(field("f" + std::to_string(fields.size()), type));
    columns.push_back(std::move(array));
  }
  return RecordBatch::Make(schema(fields), rows, columns);
}

struct Seed {
  std::string name;
  std::string bytes;
};

// The descriptor of `batches`, checked to decode to them.
Result<std::string> Checked(const char* name, const std::vector<RecordBatchPtr>& batches,
                            ArenaPool* pool, bool packed) {
  ipc::DescriptorWriteOptions options;
  options.scratch_pool = pool;
  if (packed) options.body_type = ipc::dissociated::BodyType::kPacked;
  std::vector<ipc::BufferRange> ranges;
  // No scratch_out: the arena never frees, which is what the fuzzer wants.
  QUIVER_ASSIGN_OR_RAISE(
      auto bytes, ipc::EncodeDescriptor(batches[0]->schema(), batches, options, &ranges));
  for (const auto& r : ranges) {
    QUIVER_RETURN_NOT_OK(InArena(r.address, r.length).WithContext(name));
  }
  // A seed must decode to the batches it describes.
  QUIVER_ASSIGN_OR_RAISE(auto decoded,
                         ipc::DecodeDescriptorBatches(bytes, InArena, nullptr));
  if (decoded.size() != batches.size()) {
    return Status::Invalid(name, ": seed decodes to ", decoded.size(), " batches");
  }
  for (size_t i = 0; i < batches.size(); ++i) {
    QUIVER_RETURN_NOT_OK(decoded[i]->ValidateFull());
    if (!decoded[i]->Equals(*batches[i], true)) {
      return Status::Invalid(name, ": seed does not decode to its batch ", i);
    }
  }
  return bytes;
}

// Builds the sample batches in the arena and encodes their descriptors.
Result<std::vector<Seed>> MakeSeeds(ArenaPool* pool) {
  auto point = struct_({field("x", int32()), field("label", utf8(), false)});
  struct Spec {
    const char* name;
    std::vector<TypePtr> types;
    int64_t rows, slice_offset, slice_length;
  };
  const std::vector<Spec> specs = {
      {"three_columns", {int64(), int8(), uint16()}, 64, 0, -1},
      {"strings_and_bools", {utf8(), binary(), large_utf8(), boolean()}, 40, 0, -1},
      {"nested",
       {list(int32()), point, map(utf8(), int64()), fixed_size_list(int8(), 3),
        large_list(utf8())},
       30,
       0,
       -1},
      {"dictionaries",
       {dictionary(int8(), utf8()), list(dictionary(int16(), utf8())),
        struct_({field("d", dictionary(int32(), int64()))})},
       33,
       0,
       -1},
      {"sliced", {utf8(), boolean(), int8(), list(int32()), point}, 50, 11, 23},
      {"temporal_and_decimal",
       {date32(), timestamp(TimeUnit::kMicro, "UTC"), decimal128(12, 3), float16(),
        fixed_size_binary(5), duration(TimeUnit::kNano)},
       20,
       0,
       -1},
      {"empty_and_null", {null(), utf8(), list(int32())}, 0, 0, -1},
      {"null_column", {null(), int64()}, 12, 0, -1},
      {"views", {utf8_view(), binary_view(), list(utf8_view())}, 25, 0, -1},
      {"run_end_encoded",
       {run_end_encoded(int32(), utf8()), run_end_encoded(int16(), int64())},
       26,
       5,
       17},
      {"unions_and_list_views",
       {sparse_union({field("i", int32()), field("s", utf8())}),
        dense_union({field("d", float64()), field("b", boolean())}), list_view(int16())},
       18,
       0,
       -1},
  };
  std::vector<Seed> seeds;
  for (const Spec& s : specs) {
    QUIVER_ASSIGN_OR_RAISE(auto batch, Sample(s.types, s.rows, pool));
    if (s.slice_length >= 0) batch = batch->Slice(s.slice_offset, s.slice_length);
    QUIVER_ASSIGN_OR_RAISE(auto bytes, Checked(s.name, {batch}, pool, false));
    seeds.push_back(Seed{s.name, std::move(bytes)});
    // The batch objects are dropped; their bytes stay in the arena.
  }
  // Streams: a dictionary that grows (deltas) over three batches, with
  // type-1 and with type-0 (packed, inline) bodies.
  std::vector<RecordBatchPtr> stream;
  {
    auto type = dictionary(int8(), utf8());
    DictionaryBuilder words(type, pool);
    static const char* const kWords[] = {"north", "east", "south", "west", "up"};
    for (int k = 0; k < 3; ++k) {
      Int64Builder ids(pool);
      for (int i = 0; i < 7; ++i) {
        QUIVER_RETURN_NOT_OK(ids.Append(k * 100 + i));
        QUIVER_RETURN_NOT_OK(words.Append(std::string_view(kWords[(i + k) % (k + 3)])));
      }
      QUIVER_ASSIGN_OR_RAISE(auto id_array, ids.Finish());
      QUIVER_ASSIGN_OR_RAISE(auto word_array, words.FinishKeepDictionary());
      QUIVER_ASSIGN_OR_RAISE(
          auto b, RecordBatch::FromArrays({"id", "word"}, {id_array, word_array}));
      stream.push_back(std::move(b));
    }
  }
  QUIVER_ASSIGN_OR_RAISE(auto deltas, Checked("stream_with_deltas", stream, pool, false));
  seeds.push_back(Seed{"stream_with_deltas", std::move(deltas)});
  QUIVER_ASSIGN_OR_RAISE(auto packed, Checked("packed_bodies", stream, pool, true));
  seeds.push_back(Seed{"packed_bodies", std::move(packed)});
  return seeds;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  void* p = mmap(reinterpret_cast<void*>(kArenaBase), kArenaSize, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (p != reinterpret_cast<void*>(kArenaBase)) {
    std::fprintf(stderr, "descriptor_fuzz: cannot map the arena at 0x%llx\n",
                 static_cast<unsigned long long>(kArenaBase));
    std::abort();
  }
  static ArenaPool* pool = new ArenaPool();
  auto seeds = MakeSeeds(pool);
  if (!seeds.ok()) {
    std::fprintf(stderr, "descriptor_fuzz: %s\n", seeds.status().ToString().c_str());
    std::abort();
  }
  if (const char* dir = std::getenv("QUIVER_DESCRIPTOR_SEEDS")) {
    for (const Seed& s : *seeds) {
      const std::string path = std::string(dir) + "/" + s.name + ".qvdesc";
      std::ofstream(path, std::ios::binary) << s.bytes;
      std::printf("wrote %s (%zu bytes)\n", path.c_str(), s.bytes.size());
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // libFuzzer's copy of the input lives for the call; nothing decoded
  // references it (buffers point into the arena).
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto batches = ipc::DecodeDescriptorBatches(bytes, InArena, nullptr);
  if (batches.ok()) {
    for (const auto& b : *batches) (void)b->ValidateFull();
  }
  return 0;
}
