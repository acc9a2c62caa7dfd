#include "cdata_test_util.h"

#include <cstring>

namespace quiver::cdata_test {

namespace {

using Rng = std::mt19937_64;

}  // namespace

namespace {

Status AppendRandom(ArrayBuilder* b, const DataType& type, Rng* rng, bool nullable);

std::string RandomBytes(Rng* rng, size_t n, bool text) {
  static const char* kWords[] = {
      "a", "é", "xyz", "日本", "", "quiver", "\xF0\x9F\x98\x80"};
  std::string s;
  if (text) {
    const size_t words = (*rng)() % 4;
    for (size_t i = 0; i < words; ++i) s += kWords[(*rng)() % 7];
    return s;
  }
  for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>((*rng)() & 0xff));
  return s;
}

// A value for a fixed-width primitive type, valid for ValidateFull.
int64_t RandomInteger(const DataType& type, Rng* rng) {
  const int64_t r = static_cast<int64_t>((*rng)());
  switch (type.id()) {
    case TypeId::kDate64:
      return (r % 100000) * 86400000;
    case TypeId::kTime32:
      return (r & 0xffffff) % (type.unit() == TimeUnit::kSecond ? 86400 : 86400000);
    case TypeId::kTime64:
      return (r & 0xffffffffffff) %
             (type.unit() == TimeUnit::kMicro ? 86400000000LL : 86400000000000LL);
    case TypeId::kHalfFloat:
      return r & 0x7bff;  // finite, never NaN
    default:
      return r;
  }
}

template <typename Tag>
Status AppendNumeric(ArrayBuilder* b, const DataType& type, Rng* rng) {
  using T = typename Tag::c_type;
  auto* nb = static_cast<NumericBuilder<Tag>*>(b);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> d(-1e6, 1e6);
    return nb->Append(static_cast<T>(d(*rng)));
  } else {
    return nb->Append(static_cast<T>(RandomInteger(type, rng)));
  }
}

Status AppendPrimitive(ArrayBuilder* b, const DataType& type, Rng* rng) {
  switch (type.id()) {
    case TypeId::kBool:
      return static_cast<BooleanBuilder*>(b)->Append((*rng)() & 1);
    case TypeId::kInt8:
      return AppendNumeric<Int8Type>(b, type, rng);
    case TypeId::kInt16:
      return AppendNumeric<Int16Type>(b, type, rng);
    case TypeId::kInt32:
      return AppendNumeric<Int32Type>(b, type, rng);
    case TypeId::kInt64:
      return AppendNumeric<Int64Type>(b, type, rng);
    case TypeId::kUInt8:
      return AppendNumeric<UInt8Type>(b, type, rng);
    case TypeId::kUInt16:
      return AppendNumeric<UInt16Type>(b, type, rng);
    case TypeId::kUInt32:
      return AppendNumeric<UInt32Type>(b, type, rng);
    case TypeId::kUInt64:
      return AppendNumeric<UInt64Type>(b, type, rng);
    case TypeId::kHalfFloat:
      return AppendNumeric<HalfFloatType>(b, type, rng);
    case TypeId::kFloat:
      return AppendNumeric<FloatType>(b, type, rng);
    case TypeId::kDouble:
      return AppendNumeric<DoubleType>(b, type, rng);
    case TypeId::kDate32:
      return AppendNumeric<Date32Type>(b, type, rng);
    case TypeId::kDate64:
      return AppendNumeric<Date64Type>(b, type, rng);
    case TypeId::kTime32:
      return AppendNumeric<Time32Type>(b, type, rng);
    case TypeId::kTime64:
      return AppendNumeric<Time64Type>(b, type, rng);
    case TypeId::kTimestamp:
      return AppendNumeric<TimestampType>(b, type, rng);
    case TypeId::kDuration:
      return AppendNumeric<DurationType>(b, type, rng);
    case TypeId::kDecimal: {
      int64_t limit = 1;
      for (int i = 0; i < std::min(type.precision(), 18); ++i) limit *= 10;
      const int64_t v = static_cast<int64_t>((*rng)() % static_cast<uint64_t>(limit));
      return static_cast<Decimal128Builder*>(b)->Append(
          Decimal128((*rng)() & 1 ? v : -v));
    }
    case TypeId::kFixedSizeBinary:
    case TypeId::kInterval:  // every bit pattern is an interval
      return static_cast<FixedSizeBinaryBuilder*>(b)->Append(
          RandomBytes(rng, static_cast<size_t>(type.byte_width()), false));
    default:
      return Status::TypeError("not a primitive type: ", type.ToString());
  }
}

Status AppendDictionaryValue(ArrayBuilder* b, const DataType& type, Rng* rng) {
  auto* db = static_cast<DictionaryBuilder*>(b);
  const DataType& vt = *type.value_type();
  const uint64_t pick = (*rng)() % 6;  // few distinct values: indices repeat
  if (IsBaseBinary(vt.id())) return db->Append("v" + std::to_string(pick));
  if (vt.id() == TypeId::kFixedSizeBinary) {
    return db->Append(std::string(static_cast<size_t>(vt.byte_width()), 'a' + pick));
  }
  if (IsFloating(vt.id())) return db->Append(static_cast<double>(pick) / 4);
  return db->Append(static_cast<int64_t>(pick) * 1000);
}

Status AppendNested(ArrayBuilder* b, const DataType& type, Rng* rng) {
  switch (type.id()) {
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kListView:
    case TypeId::kLargeListView: {
      switch (type.id()) {
        case TypeId::kList:
          QUIVER_RETURN_NOT_OK(static_cast<ListBuilder*>(b)->Append());
          break;
        case TypeId::kLargeList:
          QUIVER_RETURN_NOT_OK(static_cast<LargeListBuilder*>(b)->Append());
          break;
        case TypeId::kListView:
          QUIVER_RETURN_NOT_OK(static_cast<ListViewBuilder*>(b)->Append());
          break;
        default:
          QUIVER_RETURN_NOT_OK(static_cast<LargeListViewBuilder*>(b)->Append());
      }
      const uint64_t n = (*rng)() % 4;
      for (uint64_t i = 0; i < n; ++i) {
        QUIVER_RETURN_NOT_OK(AppendRandom(b->child(0), *type.value_type(), rng,
                                          type.value_field()->nullable()));
      }
      return Status::OK();
    }
    case TypeId::kFixedSizeList: {
      QUIVER_RETURN_NOT_OK(static_cast<FixedSizeListBuilder*>(b)->Append());
      for (int32_t i = 0; i < type.list_size(); ++i) {
        QUIVER_RETURN_NOT_OK(AppendRandom(b->child(0), *type.value_type(), rng,
                                          type.value_field()->nullable()));
      }
      return Status::OK();
    }
    case TypeId::kMap: {
      auto* mb = static_cast<MapBuilder*>(b);
      QUIVER_RETURN_NOT_OK(mb->Append());
      const uint64_t n = (*rng)() % 3;
      for (uint64_t i = 0; i < n; ++i) {
        QUIVER_RETURN_NOT_OK(
            AppendRandom(mb->key_builder(), *type.key_type(), rng, false));
        QUIVER_RETURN_NOT_OK(AppendRandom(mb->item_builder(), *type.item_type(), rng,
                                          type.item_field()->nullable()));
      }
      return Status::OK();
    }
    case TypeId::kStruct: {
      auto* sb = static_cast<StructBuilder*>(b);
      QUIVER_RETURN_NOT_OK(sb->Append());
      for (int i = 0; i < type.num_fields(); ++i) {
        QUIVER_RETURN_NOT_OK(AppendRandom(sb->field_builder(i), *type.field(i)->type(),
                                          rng, type.field(i)->nullable()));
      }
      return Status::OK();
    }
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {  // a random child; nulls come from the children
      const int k = static_cast<int>((*rng)() % static_cast<uint64_t>(type.num_fields()));
      QUIVER_RETURN_NOT_OK(static_cast<UnionBuilder*>(b)->Append(type.type_codes()[k]));
      return AppendRandom(b->child(k), *type.field(k)->type(), rng,
                          type.field(k)->nullable());
    }
    case TypeId::kRunEndEncoded: {  // half the slots extend the run before
      auto* rb = static_cast<RunEndEncodedBuilder*>(b);
      if (rb->length() > 0 && (*rng)() % 2 == 0) return rb->ExtendRun();
      QUIVER_RETURN_NOT_OK(rb->Append());
      return AppendRandom(rb->value_builder(), *type.value_type(), rng, true);
    }
    default:
      return Status::TypeError("not a nested type: ", type.ToString());
  }
}

Status AppendRandom(ArrayBuilder* b, const DataType& type, Rng* rng, bool nullable) {
  if (type.id() == TypeId::kNull || (nullable && (*rng)() % 5 == 0)) {
    return b->AppendNull();
  }
  if (IsPrimitive(type.id())) return AppendPrimitive(b, type, rng);
  if (IsNested(type.id())) return AppendNested(b, type, rng);
  if (type.id() == TypeId::kDictionary) return AppendDictionaryValue(b, type, rng);
  if (IsBaseBinary(type.id())) {
    const bool text = type.id() == TypeId::kString || type.id() == TypeId::kLargeString;
    const std::string v = RandomBytes(rng, (*rng)() % 9, text);
    if (IsLargeOffsets(type.id())) {
      return static_cast<BaseBinaryBuilder<int64_t>*>(b)->Append(v);
    }
    return static_cast<BaseBinaryBuilder<int32_t>*>(b)->Append(v);
  }
  if (IsBinaryView(type.id())) {
    const bool text = type.id() == TypeId::kStringView;
    return static_cast<BinaryViewBuilder*>(b)->Append(
        RandomBytes(rng, (*rng)() % 30, text));
  }
  return Status::NotImplemented("no random values for ", type.ToString());
}

}  // namespace

Result<ArrayPtr> RandomArray(const TypePtr& type, int64_t length, uint64_t seed) {
  Rng rng(seed);
  QUIVER_ASSIGN_OR_RAISE(auto builder, MakeBuilder(type));
  for (int64_t i = 0; i < length; ++i) {
    QUIVER_RETURN_NOT_OK(AppendRandom(builder.get(), *type, &rng, true));
  }
  return builder->Finish();
}

Result<RecordBatchPtr> RandomBatch(const std::vector<TypePtr>& types, int64_t rows,
                                   uint64_t seed) {
  std::vector<std::string> names;
  std::vector<ArrayPtr> columns;
  for (size_t i = 0; i < types.size(); ++i) {
    names.push_back("c" + std::to_string(i));
    QUIVER_ASSIGN_OR_RAISE(auto column, RandomArray(types[i], rows, seed + i));
    columns.push_back(std::move(column));
  }
  return RecordBatch::FromArrays(names, columns);
}

// ---- The hand-made producer ----

namespace {

struct FakeArrayPrivate {
  ReleaseCounter* counter;
  std::vector<const void*> buffers;
  std::vector<ArrowArray> children;
  std::vector<ArrowArray*> child_pointers;
  std::unique_ptr<ArrowArray> dictionary;
};

void ReleaseFakeArray(ArrowArray* a) {
  auto* p = static_cast<FakeArrayPrivate*>(a->private_data);
  for (ArrowArray& child : p->children) {
    if (child.release != nullptr) child.release(&child);
  }
  if (p->dictionary && p->dictionary->release != nullptr) {
    p->dictionary->release(p->dictionary.get());
  }
  ++p->counter->calls;
  delete p;
  a->release = nullptr;
}

struct FakeSchemaPrivate {
  ReleaseCounter* counter;
  std::string format, name, metadata;
  std::vector<ArrowSchema> children;
  std::vector<ArrowSchema*> child_pointers;
  std::unique_ptr<ArrowSchema> dictionary;
};

void ReleaseFakeSchema(ArrowSchema* s) {
  auto* p = static_cast<FakeSchemaPrivate*>(s->private_data);
  for (ArrowSchema& child : p->children) {
    if (child.release != nullptr) child.release(&child);
  }
  if (p->dictionary && p->dictionary->release != nullptr) {
    p->dictionary->release(p->dictionary.get());
  }
  ++p->counter->calls;
  delete p;
  s->release = nullptr;
}

}  // namespace

void MakeFakeArray(const FakeArraySpec& spec, ReleaseCounter* counter, ArrowArray* out) {
  auto* p = new FakeArrayPrivate;
  p->counter = counter;
  p->buffers = spec.buffers;
  p->children.resize(spec.children.size());
  for (size_t i = 0; i < spec.children.size(); ++i) {
    MakeFakeArray(spec.children[i], counter, &p->children[i]);
    p->child_pointers.push_back(&p->children[i]);
  }
  if (spec.dictionary) {
    p->dictionary = std::make_unique<ArrowArray>();
    MakeFakeArray(*spec.dictionary, counter, p->dictionary.get());
  }
  out->length = spec.length;
  out->null_count = spec.null_count;
  out->offset = spec.offset;
  out->n_buffers =
      spec.n_buffers == -2 ? static_cast<int64_t>(p->buffers.size()) : spec.n_buffers;
  out->n_children =
      spec.n_children == -2 ? static_cast<int64_t>(p->children.size()) : spec.n_children;
  out->buffers = spec.null_buffers_array ? nullptr : p->buffers.data();
  out->children = spec.null_children_array ? nullptr : p->child_pointers.data();
  out->dictionary = p->dictionary.get();
  out->private_data = p;
  out->release = &ReleaseFakeArray;
}

void MakeFakeSchema(const FakeSchemaSpec& spec, ReleaseCounter* counter,
                    ArrowSchema* out) {
  auto* p = new FakeSchemaPrivate;
  p->counter = counter;
  p->format = spec.format;
  p->name = spec.name;
  p->metadata = spec.metadata;
  p->children.resize(spec.children.size());
  for (size_t i = 0; i < spec.children.size(); ++i) {
    MakeFakeSchema(spec.children[i], counter, &p->children[i]);
    p->child_pointers.push_back(&p->children[i]);
  }
  if (spec.dictionary) {
    p->dictionary = std::make_unique<ArrowSchema>();
    MakeFakeSchema(*spec.dictionary, counter, p->dictionary.get());
  }
  out->format = spec.null_format ? nullptr : p->format.c_str();
  out->name = p->name.c_str();
  out->metadata = p->metadata.empty() ? nullptr : p->metadata.data();
  out->flags = spec.flags;
  out->n_children =
      spec.n_children == -2 ? static_cast<int64_t>(p->children.size()) : spec.n_children;
  out->children = p->child_pointers.empty() ? nullptr : p->child_pointers.data();
  out->dictionary = p->dictionary.get();
  out->private_data = p;
  out->release = &ReleaseFakeSchema;
}

ArrowArray ReleasedArray() {
  ArrowArray a;
  std::memset(&a, 0, sizeof(a));
  return a;
}

ArrowSchema ReleasedSchema() {
  ArrowSchema s;
  std::memset(&s, 0, sizeof(s));
  return s;
}

}  // namespace quiver::cdata_test
