#include "ipc_test_util.h"

#include <algorithm>
#include <cstring>

namespace quiver::ipc::test {

namespace {

const char* const kWords[] = {"alpha",   "beta", "",    "gamma", "delta",
                              "epsilon", "zeta", "eta", "theta", "a longer string value"};

template <typename Tag>
Status AppendNumeric(ArrayBuilder* b, typename Tag::c_type v) {
  return static_cast<NumericBuilder<Tag>*>(b)->Append(v);
}

std::string RandomBytes(std::mt19937& rng, size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>('a' + rng() % 26);
  return s;
}

int64_t Within(std::mt19937& rng, int64_t n) {
  return static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
}

Status AppendRandom(ArrayBuilder* b, const DataType& type, std::mt19937& rng,
                    int null_percent);

Status AppendDictionaryValue(DictionaryBuilder* b, const DataType& vt,
                             std::mt19937& rng) {
  const int64_t pick = Within(rng, 10);
  switch (vt.id()) {
    case TypeId::kString:
    case TypeId::kLargeString:
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
      return b->Append(std::string_view(kWords[pick]));
    case TypeId::kFixedSizeBinary:
      return b->Append(std::string(static_cast<size_t>(vt.byte_width()),
                                   static_cast<char>('a' + pick)));
    case TypeId::kFloat:
    case TypeId::kDouble:
      return b->Append(static_cast<double>(pick) * 0.5);
    default:
      return b->Append(static_cast<int64_t>(pick * 7 - 20));
  }
}

Status AppendChildren(ArrayBuilder* b, const DataType& type, std::mt19937& rng,
                      int null_percent, int child, int64_t count) {
  const FieldPtr& f = type.field(child);
  for (int64_t i = 0; i < count; ++i) {
    QUIVER_RETURN_NOT_OK(
        AppendRandom(b->child(child), *f->type(), rng, f->nullable() ? null_percent : 0));
  }
  return Status::OK();
}

Status AppendNested(ArrayBuilder* b, const DataType& type, std::mt19937& rng,
                    int null_percent) {
  switch (type.id()) {
    case TypeId::kList:
      QUIVER_RETURN_NOT_OK(static_cast<ListBuilder*>(b)->Append(true));
      return AppendChildren(b, type, rng, null_percent, 0, Within(rng, 4));
    case TypeId::kLargeList:
      QUIVER_RETURN_NOT_OK(static_cast<LargeListBuilder*>(b)->Append(true));
      return AppendChildren(b, type, rng, null_percent, 0, Within(rng, 4));
    case TypeId::kListView:
      QUIVER_RETURN_NOT_OK(static_cast<ListViewBuilder*>(b)->Append(true));
      return AppendChildren(b, type, rng, null_percent, 0, Within(rng, 4));
    case TypeId::kLargeListView:
      QUIVER_RETURN_NOT_OK(static_cast<LargeListViewBuilder*>(b)->Append(true));
      return AppendChildren(b, type, rng, null_percent, 0, Within(rng, 4));
    case TypeId::kFixedSizeList:
      QUIVER_RETURN_NOT_OK(static_cast<FixedSizeListBuilder*>(b)->Append());
      return AppendChildren(b, type, rng, null_percent, 0, type.list_size());
    case TypeId::kStruct:
      QUIVER_RETURN_NOT_OK(static_cast<StructBuilder*>(b)->Append(true));
      for (int i = 0; i < type.num_fields(); ++i) {
        QUIVER_RETURN_NOT_OK(AppendChildren(b, type, rng, null_percent, i, 1));
      }
      return Status::OK();
    case TypeId::kMap: {
      auto* m = static_cast<MapBuilder*>(b);
      QUIVER_RETURN_NOT_OK(m->Append());
      const int64_t n = Within(rng, 4);
      for (int64_t i = 0; i < n; ++i) {
        QUIVER_RETURN_NOT_OK(AppendRandom(m->key_builder(), *type.key_type(), rng, 0));
        QUIVER_RETURN_NOT_OK(
            AppendRandom(m->item_builder(), *type.item_type(), rng,
                         type.item_field()->nullable() ? null_percent : 0));
      }
      return Status::OK();
    }
    case TypeId::kDictionary:
      return AppendDictionaryValue(static_cast<DictionaryBuilder*>(b), *type.value_type(),
                                   rng);
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {  // a random child; nulls come from the children
      const int k = static_cast<int>(Within(rng, type.num_fields()));
      QUIVER_RETURN_NOT_OK(static_cast<UnionBuilder*>(b)->Append(type.type_codes()[k]));
      return AppendChildren(b, type, rng, null_percent, k, 1);
    }
    case TypeId::kRunEndEncoded: {  // half the slots extend the run before
      auto* rb = static_cast<RunEndEncodedBuilder*>(b);
      if (rb->length() > 0 && Within(rng, 2) == 0) return rb->ExtendRun();
      QUIVER_RETURN_NOT_OK(rb->Append());
      return AppendRandom(rb->value_builder(), *type.value_type(), rng, null_percent);
    }
    default:
      return Status::NotImplemented("random values of ", type.ToString());
  }
}

Status AppendRandom(ArrayBuilder* b, const DataType& type, std::mt19937& rng,
                    int null_percent) {
  if (type.id() == TypeId::kNull ||
      (null_percent > 0 && Within(rng, 100) < null_percent)) {
    return b->AppendNull();
  }
  const int64_t r = static_cast<int64_t>(rng()) - (1LL << 31);
  switch (type.id()) {
    case TypeId::kBool:
      return static_cast<BooleanBuilder*>(b)->Append((rng() & 1) != 0);
    case TypeId::kInt8:
      return AppendNumeric<Int8Type>(b, static_cast<int8_t>(r));
    case TypeId::kInt16:
      return AppendNumeric<Int16Type>(b, static_cast<int16_t>(r));
    case TypeId::kInt32:
      return AppendNumeric<Int32Type>(b, static_cast<int32_t>(r));
    case TypeId::kInt64:
      return AppendNumeric<Int64Type>(b, r * 1000003);
    case TypeId::kUInt8:
      return AppendNumeric<UInt8Type>(b, static_cast<uint8_t>(rng()));
    case TypeId::kUInt16:
      return AppendNumeric<UInt16Type>(b, static_cast<uint16_t>(rng()));
    case TypeId::kUInt32:
      return AppendNumeric<UInt32Type>(b, static_cast<uint32_t>(rng()));
    case TypeId::kUInt64:
      return AppendNumeric<UInt64Type>(b, static_cast<uint64_t>(rng()) << 20);
    case TypeId::kHalfFloat:  // finite values only: NaN never equals itself
      return AppendNumeric<HalfFloatType>(
          b, static_cast<uint16_t>((rng() % 0x7BFF) | ((rng() & 1) << 15)));
    case TypeId::kFloat:
      return AppendNumeric<FloatType>(b, static_cast<float>(r) / 7.0f);
    case TypeId::kDouble:
      return AppendNumeric<DoubleType>(b, static_cast<double>(r) / 3.0);
    case TypeId::kDecimal: {
      if (type.precision() > 38 && type.scale() >= 0 && rng() % 2 == 0) {
        // Past 128 bits: as many digits as the precision holds.
        std::string digits = rng() % 2 == 0 ? "-" : "";
        for (int i = 0; i < type.precision(); ++i) {
          digits.push_back(
              static_cast<char>('0' + (i == 0 ? 1 + rng() % 9 : rng() % 10)));
        }
        if (type.scale() > 0) digits.insert(digits.size() - type.scale(), ".");
        return static_cast<DecimalBuilder*>(b)->AppendString(digits);
      }
      int64_t limit = 1;  // keep the value within the type's precision
      for (int i = 0; i < std::min(type.precision(), 18); ++i) limit *= 10;
      return static_cast<DecimalBuilder*>(b)->Append(Decimal128(r * 1000 % limit));
    }
    case TypeId::kDate32:
      return AppendNumeric<Date32Type>(b, static_cast<int32_t>(Within(rng, 40000)));
    case TypeId::kDate64:
      return AppendNumeric<Date64Type>(b, Within(rng, 40000) * 86400000LL);
    case TypeId::kTime32:
      return AppendNumeric<Time32Type>(
          b, static_cast<int32_t>(
                 Within(rng, type.unit() == TimeUnit::kSecond ? 86400 : 86400000)));
    case TypeId::kTime64:
      return AppendNumeric<Time64Type>(
          b,
          Within(rng, 86400) * (type.unit() == TimeUnit::kMicro ? 1000000 : 1000000000));
    case TypeId::kTimestamp:
      return AppendNumeric<TimestampType>(b, r * 1000);
    case TypeId::kDuration:
      return AppendNumeric<DurationType>(b, r);
    case TypeId::kString:
    case TypeId::kBinary:
      return static_cast<BaseBinaryBuilder<int32_t>*>(b)->Append(
          RandomBytes(rng, static_cast<size_t>(Within(rng, 12))));
    case TypeId::kLargeString:
    case TypeId::kLargeBinary:
      return static_cast<BaseBinaryBuilder<int64_t>*>(b)->Append(
          RandomBytes(rng, static_cast<size_t>(Within(rng, 12))));
    case TypeId::kFixedSizeBinary:
    case TypeId::kInterval:  // every bit pattern is an interval
      return static_cast<FixedSizeBinaryBuilder*>(b)->Append(
          RandomBytes(rng, static_cast<size_t>(type.byte_width())));
    case TypeId::kBinaryView:
    case TypeId::kStringView:  // inline (<= 12 bytes) and out of line
      return static_cast<BinaryViewBuilder*>(b)->Append(
          RandomBytes(rng, static_cast<size_t>(Within(rng, 40))));
    default:
      return AppendNested(b, type, rng, null_percent);
  }
}

void CollectInside(const ArrayData& data, const Buffer& input, std::string* bad,
                   const std::string& where) {
  const uint8_t* lo = input.data();
  const uint8_t* hi = input.data() + input.size();
  for (size_t i = 0; i < data.buffers.size(); ++i) {
    const auto& b = data.buffers[i];
    if (b == nullptr || b->size() == 0) continue;
    if (b->data() < lo || b->data() + b->size() > hi) {
      *bad +=
          where + " buffer " + std::to_string(i) + " (" + data.type->ToString() + ")\n";
    }
  }
  for (size_t i = 0; i < data.child_data.size(); ++i) {
    CollectInside(*data.child_data[i], input, bad, where + "." + std::to_string(i));
  }
  if (data.dictionary) CollectInside(*data.dictionary, input, bad, where + ".dictionary");
}

}  // namespace

Result<ArrayPtr> RandomArray(const TypePtr& type, int64_t length, uint32_t seed,
                             int null_percent) {
  std::mt19937 rng(seed);
  QUIVER_ASSIGN_OR_RAISE(auto builder, MakeBuilder(type));
  for (int64_t i = 0; i < length; ++i) {
    QUIVER_RETURN_NOT_OK(AppendRandom(builder.get(), *type, rng, null_percent));
  }
  return builder->Finish();
}

Result<RecordBatchPtr> RandomBatch(const std::vector<TypePtr>& types, int64_t length,
                                   uint32_t seed) {
  FieldVector fields;
  std::vector<ArrayPtr> columns;
  for (size_t i = 0; i < types.size(); ++i) {
    QUIVER_ASSIGN_OR_RAISE(auto a, RandomArray(types[i], length, seed + i));
    fields.push_back(field("c" + std::to_string(i), types[i]));
    columns.push_back(std::move(a));
  }
  return RecordBatch::Make(schema(fields), length, columns);
}

Result<std::shared_ptr<Buffer>> WriteBatches(const std::vector<RecordBatchPtr>& batches,
                                             IpcFormat format,
                                             const IpcWriteOptions& options) {
  if (batches.empty()) return Status::Invalid("no batches");
  QUIVER_ASSIGN_OR_RAISE(auto sink, io::BufferOutputStream::Create());
  QUIVER_ASSIGN_OR_RAISE(auto writer,
                         MakeWriter(format, sink.get(), batches[0]->schema(), options));
  for (const auto& b : batches) QUIVER_RETURN_NOT_OK(writer->WriteRecordBatch(*b));
  QUIVER_RETURN_NOT_OK(writer->Close());
  return sink->Finish();
}

Result<std::vector<RecordBatchPtr>> ReadBatches(std::shared_ptr<Buffer> data,
                                                const IpcReadOptions& options) {
  QUIVER_ASSIGN_OR_RAISE(IpcFormat format, DetectFormat(*data));
  if (format == IpcFormat::kStream) {
    QUIVER_ASSIGN_OR_RAISE(auto reader, RecordBatchStreamReader::Open(data, options));
    return reader->ReadAll();
  }
  QUIVER_ASSIGN_OR_RAISE(auto reader, RecordBatchFileReader::Open(data, options));
  std::vector<RecordBatchPtr> out;
  for (int i = 0; i < reader->num_record_batches(); ++i) {
    QUIVER_ASSIGN_OR_RAISE(auto b, reader->ReadRecordBatch(i));
    out.push_back(std::move(b));
  }
  return out;
}

std::shared_ptr<Buffer> ExactCopy(const uint8_t* data, int64_t size) {
  if (size == 0) return Buffer::Wrap(ZeroSizeArea(), 0);
  // new[] memory is aligned for any fundamental type (16 bytes with glibc and
  // ASan), so decoders see the alignment a real input would have.
  std::shared_ptr<uint8_t[]> block(new uint8_t[static_cast<size_t>(size)]);
  std::memcpy(block.get(), data, static_cast<size_t>(size));
  const uint8_t* p = block.get();
  return Buffer::Wrap(p, size, std::shared_ptr<const void>(block, p));
}

::testing::AssertionResult AllBuffersInside(const ArrayData& data, const Buffer& input) {
  std::string bad;
  CollectInside(data, input, &bad, "array");
  if (bad.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "buffers outside the input:\n" << bad;
}

::testing::AssertionResult BatchesEqual(const RecordBatch& expected,
                                        const RecordBatch& actual, bool check_metadata) {
  if (expected.Equals(actual, check_metadata)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected:\n"
                                       << expected.ToString() << "\nactual:\n"
                                       << actual.ToString();
}

Result<RecordBatchPtr> NestedDictionaryBatch() {
  auto inner_type = dictionary(int8(), utf8());
  auto list_builder = std::make_shared<ListBuilder>(
      default_memory_pool(), std::make_shared<DictionaryBuilder>(inner_type));
  auto* inner = static_cast<DictionaryBuilder*>(list_builder->value_builder());
  QUIVER_RETURN_NOT_OK(list_builder->Append(true));
  QUIVER_RETURN_NOT_OK(inner->Append(std::string_view("p")));
  QUIVER_RETURN_NOT_OK(inner->Append(std::string_view("q")));
  QUIVER_RETURN_NOT_OK(list_builder->Append(true));
  QUIVER_RETURN_NOT_OK(inner->Append(std::string_view("rr")));
  QUIVER_RETURN_NOT_OK(inner->Append(std::string_view("p")));
  QUIVER_RETURN_NOT_OK(list_builder->AppendNull());
  QUIVER_ASSIGN_OR_RAISE(auto values, list_builder->Finish());
  QUIVER_ASSIGN_OR_RAISE(auto indices, (ArrayFromVector<Int32Type>(
                                           {2, 0, 1, 0}, {true, true, true, false})));
  auto outer = ArrayData::Make(dictionary(int32(), values->type()), 4,
                               indices->data()->buffers, kUnknownNullCount);
  outer->dictionary = values->data();
  QUIVER_RETURN_NOT_OK(MakeArray(outer)->ValidateFull());
  return RecordBatch::Make(schema({field("nested", outer->type)}), 4, {outer});
}

}  // namespace quiver::ipc::test
