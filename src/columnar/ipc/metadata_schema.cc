// Schema <-> flatbuffer: fields, types, dictionary encodings, custom metadata.

#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "columnar/ipc/metadata_internal.h"

namespace quiver::ipc::internal {

namespace {

using ::flatbuffers::Offset;

// ---------------------------------------------------------------------------
// Encoding

fb::TimeUnit ToFlatbuffer(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond:
      return fb::TimeUnit::SECOND;
    case TimeUnit::kMilli:
      return fb::TimeUnit::MILLISECOND;
    case TimeUnit::kMicro:
      return fb::TimeUnit::MICROSECOND;
    case TimeUnit::kNano:
      return fb::TimeUnit::NANOSECOND;
  }
  return fb::TimeUnit::SECOND;
}

Offset<fb::Int> IntToFlatbuffer(FlatBufferBuilder& fbb, const DataType& type) {
  return fb::CreateInt(fbb, type.bit_width(), IsSignedInteger(type.id()));
}

// The Type union member of a (non-dictionary) type.
Result<std::pair<fb::Type, Offset<void>>> TypeToFlatbuffer(FlatBufferBuilder& fbb,
                                                           const DataType& type) {
  using T = fb::Type;
  switch (type.id()) {
    case TypeId::kNull:
      return std::make_pair(T::Null, fb::CreateNull(fbb).Union());
    case TypeId::kBool:
      return std::make_pair(T::Bool, fb::CreateBool(fbb).Union());
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kUInt8:
    case TypeId::kUInt16:
    case TypeId::kUInt32:
    case TypeId::kUInt64:
      return std::make_pair(T::Int, IntToFlatbuffer(fbb, type).Union());
    case TypeId::kHalfFloat:
      return std::make_pair(T::FloatingPoint,
                            fb::CreateFloatingPoint(fbb, fb::Precision::HALF).Union());
    case TypeId::kFloat:
      return std::make_pair(T::FloatingPoint,
                            fb::CreateFloatingPoint(fbb, fb::Precision::SINGLE).Union());
    case TypeId::kDouble:
      return std::make_pair(T::FloatingPoint,
                            fb::CreateFloatingPoint(fbb, fb::Precision::DOUBLE).Union());
    case TypeId::kDecimal:
      return std::make_pair(T::Decimal, fb::CreateDecimal(fbb, type.precision(),
                                                          type.scale(), type.bit_width())
                                            .Union());
    case TypeId::kDate32:
      return std::make_pair(T::Date, fb::CreateDate(fbb, fb::DateUnit::DAY).Union());
    case TypeId::kDate64:
      return std::make_pair(T::Date,
                            fb::CreateDate(fbb, fb::DateUnit::MILLISECOND).Union());
    case TypeId::kTime32:
      return std::make_pair(T::Time,
                            fb::CreateTime(fbb, ToFlatbuffer(type.unit()), 32).Union());
    case TypeId::kTime64:
      return std::make_pair(T::Time,
                            fb::CreateTime(fbb, ToFlatbuffer(type.unit()), 64).Union());
    case TypeId::kTimestamp: {
      Offset<::flatbuffers::String> tz;
      if (!type.timezone().empty()) tz = fbb.CreateString(type.timezone());
      return std::make_pair(
          T::Timestamp, fb::CreateTimestamp(fbb, ToFlatbuffer(type.unit()), tz).Union());
    }
    case TypeId::kDuration:
      return std::make_pair(T::Duration,
                            fb::CreateDuration(fbb, ToFlatbuffer(type.unit())).Union());
    case TypeId::kInterval: {
      const IntervalUnit u = type.interval_unit();
      const fb::IntervalUnit unit =
          u == IntervalUnit::kYearMonth ? fb::IntervalUnit::YEAR_MONTH
          : u == IntervalUnit::kDayTime ? fb::IntervalUnit::DAY_TIME
                                        : fb::IntervalUnit::MONTH_DAY_NANO;
      return std::make_pair(T::Interval, fb::CreateInterval(fbb, unit).Union());
    }
    case TypeId::kString:
      return std::make_pair(T::Utf8, fb::CreateUtf8(fbb).Union());
    case TypeId::kLargeString:
      return std::make_pair(T::LargeUtf8, fb::CreateLargeUtf8(fbb).Union());
    case TypeId::kBinary:
      return std::make_pair(T::Binary, fb::CreateBinary(fbb).Union());
    case TypeId::kLargeBinary:
      return std::make_pair(T::LargeBinary, fb::CreateLargeBinary(fbb).Union());
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {
      std::vector<int32_t> ids(type.type_codes().begin(), type.type_codes().end());
      auto ids_vec = fbb.CreateVector(ids);
      const auto mode =
          type.id() == TypeId::kDenseUnion ? fb::UnionMode::Dense : fb::UnionMode::Sparse;
      return std::make_pair(T::Union, fb::CreateUnion(fbb, mode, ids_vec).Union());
    }
    case TypeId::kBinaryView:
      return std::make_pair(T::BinaryView, fb::CreateBinaryView(fbb).Union());
    case TypeId::kStringView:
      return std::make_pair(T::Utf8View, fb::CreateUtf8View(fbb).Union());
    case TypeId::kFixedSizeBinary:
      return std::make_pair(T::FixedSizeBinary,
                            fb::CreateFixedSizeBinary(fbb, type.byte_width()).Union());
    case TypeId::kList:
      return std::make_pair(T::List, fb::CreateList(fbb).Union());
    case TypeId::kLargeList:
      return std::make_pair(T::LargeList, fb::CreateLargeList(fbb).Union());
    case TypeId::kListView:
      return std::make_pair(T::ListView, fb::CreateListView(fbb).Union());
    case TypeId::kLargeListView:
      return std::make_pair(T::LargeListView, fb::CreateLargeListView(fbb).Union());
    case TypeId::kRunEndEncoded:
      return std::make_pair(T::RunEndEncoded, fb::CreateRunEndEncoded(fbb).Union());
    case TypeId::kFixedSizeList:
      return std::make_pair(T::FixedSizeList,
                            fb::CreateFixedSizeList(fbb, type.list_size()).Union());
    case TypeId::kStruct:
      return std::make_pair(T::Struct_, fb::CreateStruct_(fbb).Union());
    case TypeId::kMap:
      return std::make_pair(T::Map, fb::CreateMap(fbb, type.keys_sorted()).Union());
    case TypeId::kDictionary:
      break;
  }
  return Status::TypeError("IPC: type ", type.ToString(),
                           " cannot be written as a value type here");
}

class SchemaEncoder {
 public:
  SchemaEncoder(FlatBufferBuilder& fbb, const DictionaryFieldMap& dictionaries,
                int max_depth)
      : fbb_(fbb), dictionaries_(dictionaries), max_depth_(max_depth) {}

  Result<Offset<fb::Field>> Encode(const Field& field, std::vector<int>* path,
                                   int depth) {
    if (depth > max_depth_) {
      return Status::Invalid("IPC: field '", field.name(), "' is nested deeper than ",
                             max_depth_, " levels");
    }
    const DataType* value_type = field.type().get();
    Offset<fb::DictionaryEncoding> dictionary;
    if (value_type->id() == TypeId::kDictionary) {
      QUIVER_ASSIGN_OR_RAISE(int64_t id, dictionaries_.IdForPath(*path));
      auto index = IntToFlatbuffer(fbb_, *value_type->index_type());
      dictionary = fb::CreateDictionaryEncoding(fbb_, id, index, value_type->ordered());
      value_type = value_type->value_type().get();
      if (value_type->id() == TypeId::kDictionary) {
        return Status::NotImplemented("IPC: field '", field.name(),
                                      "' is a dictionary of dictionaries, which IPC "
                                      "cannot express");
      }
    }
    std::vector<Offset<fb::Field>> children;
    children.reserve(value_type->fields().size());
    for (size_t i = 0; i < value_type->fields().size(); ++i) {
      path->push_back(static_cast<int>(i));
      auto child = Encode(*value_type->fields()[i], path, depth + 1);
      path->pop_back();
      QUIVER_RETURN_NOT_OK(child.status());
      children.push_back(*child);
    }
    QUIVER_ASSIGN_OR_RAISE(auto type_union, TypeToFlatbuffer(fbb_, *value_type));
    auto name = fbb_.CreateString(field.name());
    auto children_vec = fbb_.CreateVector(children);
    auto metadata = MetadataToFlatbuffer(fbb_, field.metadata().get());
    fb::FieldBuilder builder(fbb_);
    builder.add_name(name);
    builder.add_nullable(field.nullable());
    builder.add_type_type(type_union.first);
    builder.add_type(type_union.second);
    if (!dictionary.IsNull()) builder.add_dictionary(dictionary);
    builder.add_children(children_vec);
    if (!metadata.IsNull()) builder.add_custom_metadata(metadata);
    return builder.Finish();
  }

 private:
  FlatBufferBuilder& fbb_;
  const DictionaryFieldMap& dictionaries_;
  int max_depth_;
};

// ---------------------------------------------------------------------------
// Decoding

Result<TimeUnit> FromFlatbuffer(fb::TimeUnit unit) {
  switch (unit) {
    case fb::TimeUnit::SECOND:
      return TimeUnit::kSecond;
    case fb::TimeUnit::MILLISECOND:
      return TimeUnit::kMilli;
    case fb::TimeUnit::MICROSECOND:
      return TimeUnit::kMicro;
    case fb::TimeUnit::NANOSECOND:
      return TimeUnit::kNano;
  }
  return Status::Invalid("unknown time unit ", static_cast<int>(unit));
}

Result<TypePtr> IntFromFlatbuffer(const fb::Int* t) {
  if (t == nullptr) return Status::Invalid("Int type without its parameters");
  bool s = t->is_signed();
  switch (t->bit_width()) {
    case 8:
      return s ? int8() : uint8();
    case 16:
      return s ? int16() : uint16();
    case 32:
      return s ? int32() : uint32();
    case 64:
      return s ? int64() : uint64();
  }
  return Status::Invalid("Int type of ", t->bit_width(),
                         " bits (must be 8, 16, 32 or 64)");
}

const char* TypeName(fb::Type t) {
  const char* name = fb::EnumNameType(t);
  return (name != nullptr && *name != '\0') ? name : "unknown";
}

Status NeedChildren(fb::Type t, const FieldVector& children, size_t n) {
  if (children.size() != n) {
    return Status::Invalid(TypeName(t), " type with ", children.size(),
                           " children (expected ", n, ")");
  }
  return Status::OK();
}

template <typename Table>
Status NeedParams(const Table* table, fb::Type t) {
  if (table == nullptr)
    return Status::Invalid(TypeName(t), " type without its parameters");
  return Status::OK();
}

Result<TypePtr> DecimalFromFlatbuffer(const fb::Decimal* t) {
  QUIVER_RETURN_NOT_OK(NeedParams(t, fb::Type::Decimal));
  if (MaxDecimalPrecision(t->bit_width()) == 0) {
    return Status::Invalid("Decimal type of ", t->bit_width(),
                           " bits (must be 32, 64, 128 or 256)");
  }
  // The format leaves the scale unbounded; scales beyond any real use only
  // make printing and validation allocate digit strings of that length.
  if (t->scale() < -kMaxDecimalScale || t->scale() > kMaxDecimalScale) {
    return Status::Invalid("Decimal scale ", t->scale(), " is outside [-",
                           kMaxDecimalScale, ", ", kMaxDecimalScale, "]");
  }
  return MakeDecimal(t->bit_width(), t->precision(), t->scale());
}

Result<TypePtr> TimeFromFlatbuffer(const fb::Time* t) {
  QUIVER_RETURN_NOT_OK(NeedParams(t, fb::Type::Time));
  QUIVER_ASSIGN_OR_RAISE(TimeUnit unit, FromFlatbuffer(t->unit()));
  if (t->bit_width() == 32) return MakeTime32(unit);
  if (t->bit_width() == 64) return MakeTime64(unit);
  return Status::Invalid("Time type of ", t->bit_width(), " bits (must be 32 or 64)");
}

Result<TypePtr> MapFromFlatbuffer(const fb::Map* t, const FieldVector& children) {
  QUIVER_RETURN_NOT_OK(NeedParams(t, fb::Type::Map));
  QUIVER_RETURN_NOT_OK(NeedChildren(fb::Type::Map, children, 1));
  const FieldPtr& entries = children[0];
  if (entries->type()->id() != TypeId::kStruct || entries->type()->num_fields() != 2) {
    return Status::Invalid("Map type whose child is ", entries->type()->ToString(),
                           " (expected a struct of key and value)");
  }
  // The format forbids nulls in entries and keys; some producers still mark
  // those fields nullable, which costs nothing to tolerate.
  FieldVector kv = entries->type()->fields();
  kv[0] = kv[0]->WithNullable(false);
  auto fixed = entries->WithType(struct_(std::move(kv)))->WithNullable(false);
  return MapFromEntries(std::move(fixed), t->keys_sorted());
}

// The value type of `field` given its decoded children.
// Union: mode and typeIds (absent: 0, 1, 2, ...), each in [0, 127].
Result<TypePtr> UnionFromFlatbuffer(const fb::Union* p, const FieldVector& children) {
  QUIVER_RETURN_NOT_OK(NeedParams(p, fb::Type::Union));
  if (p->mode() != fb::UnionMode::Sparse && p->mode() != fb::UnionMode::Dense) {
    return Status::Invalid("unknown union mode ", static_cast<int>(p->mode()));
  }
  const bool dense = p->mode() == fb::UnionMode::Dense;
  std::vector<int8_t> codes;
  if (p->type_ids() != nullptr) {
    if (p->type_ids()->size() != children.size()) {
      return Status::Invalid("union has ", children.size(), " children but ",
                             p->type_ids()->size(), " typeIds");
    }
    for (flatbuffers::uoffset_t i = 0; i < p->type_ids()->size(); ++i) {
      const int32_t id = p->type_ids()->Get(i);
      if (id < 0 || id > kMaxUnionTypeCode) {
        return Status::Invalid("union typeId ", id, " is outside [0, ", kMaxUnionTypeCode,
                               "]");
      }
      codes.push_back(static_cast<int8_t>(id));
    }
  }
  return dense ? MakeDenseUnion(children, std::move(codes))
               : MakeSparseUnion(children, std::move(codes));
}

Result<TypePtr> TypeFromFlatbuffer(const fb::Field* field, const FieldVector& children) {
  const fb::Type t = field->type_type();
  bool nested = t == fb::Type::List || t == fb::Type::LargeList ||
                t == fb::Type::FixedSizeList || t == fb::Type::Struct_ ||
                t == fb::Type::Map || t == fb::Type::Union ||
                t == fb::Type::RunEndEncoded || t == fb::Type::ListView ||
                t == fb::Type::LargeListView;
  if (!nested && !children.empty()) {
    return Status::Invalid(TypeName(t), " type with ", children.size(), " children");
  }
  switch (t) {
    case fb::Type::NONE:
      return Status::Invalid("field without a type");
    case fb::Type::Null:
      return null();
    case fb::Type::Int:
      return IntFromFlatbuffer(field->type_as_Int());
    case fb::Type::FloatingPoint: {
      auto p = field->type_as_FloatingPoint();
      QUIVER_RETURN_NOT_OK(NeedParams(p, t));
      switch (p->precision()) {
        case fb::Precision::HALF:
          return float16();
        case fb::Precision::SINGLE:
          return float32();
        case fb::Precision::DOUBLE:
          return float64();
      }
      return Status::Invalid("unknown floating point precision ",
                             static_cast<int>(p->precision()));
    }
    case fb::Type::Binary:
      return binary();
    case fb::Type::Utf8:
      return utf8();
    case fb::Type::LargeBinary:
      return large_binary();
    case fb::Type::LargeUtf8:
      return large_utf8();
    case fb::Type::BinaryView:
      return binary_view();
    case fb::Type::Utf8View:
      return utf8_view();
    case fb::Type::Bool:
      return boolean();
    case fb::Type::Decimal:
      return DecimalFromFlatbuffer(field->type_as_Decimal());
    case fb::Type::Date: {
      auto p = field->type_as_Date();
      QUIVER_RETURN_NOT_OK(NeedParams(p, t));
      if (p->unit() == fb::DateUnit::DAY) return date32();
      if (p->unit() == fb::DateUnit::MILLISECOND) return date64();
      return Status::Invalid("unknown date unit ", static_cast<int>(p->unit()));
    }
    case fb::Type::Time:
      return TimeFromFlatbuffer(field->type_as_Time());
    case fb::Type::Timestamp: {
      auto p = field->type_as_Timestamp();
      QUIVER_RETURN_NOT_OK(NeedParams(p, t));
      QUIVER_ASSIGN_OR_RAISE(TimeUnit unit, FromFlatbuffer(p->unit()));
      return timestamp(unit, p->timezone() ? p->timezone()->str() : std::string());
    }
    case fb::Type::Duration: {
      auto p = field->type_as_Duration();
      QUIVER_RETURN_NOT_OK(NeedParams(p, t));
      QUIVER_ASSIGN_OR_RAISE(TimeUnit unit, FromFlatbuffer(p->unit()));
      return duration(unit);
    }
    case fb::Type::Interval: {
      auto p = field->type_as_Interval();
      QUIVER_RETURN_NOT_OK(NeedParams(p, t));
      switch (p->unit()) {
        case fb::IntervalUnit::YEAR_MONTH:
          return month_interval();
        case fb::IntervalUnit::DAY_TIME:
          return day_time_interval();
        case fb::IntervalUnit::MONTH_DAY_NANO:
          return month_day_nano_interval();
      }
      return Status::Invalid("unknown interval unit ", static_cast<int>(p->unit()));
    }
    case fb::Type::FixedSizeBinary: {
      auto p = field->type_as_FixedSizeBinary();
      QUIVER_RETURN_NOT_OK(NeedParams(p, t));
      // Widths whose bit count overflows int32 are not representable.
      if (p->byte_width() > std::numeric_limits<int32_t>::max() / 8) {
        return Status::Invalid("FixedSizeBinary width ", p->byte_width(),
                               " is too large");
      }
      return MakeFixedSizeBinary(p->byte_width());
    }
    case fb::Type::List:
      QUIVER_RETURN_NOT_OK(NeedChildren(t, children, 1));
      return list(children[0]);
    case fb::Type::LargeList:
      QUIVER_RETURN_NOT_OK(NeedChildren(t, children, 1));
      return large_list(children[0]);
    case fb::Type::FixedSizeList: {
      auto p = field->type_as_FixedSizeList();
      QUIVER_RETURN_NOT_OK(NeedParams(p, t));
      QUIVER_RETURN_NOT_OK(NeedChildren(t, children, 1));
      return MakeFixedSizeList(children[0], p->list_size());
    }
    case fb::Type::Struct_:
      return struct_(children);
    case fb::Type::Map:
      return MapFromFlatbuffer(field->type_as_Map(), children);
    case fb::Type::Union:
      return UnionFromFlatbuffer(field->type_as_Union(), children);
    case fb::Type::RunEndEncoded: {  // children "run_ends" and "values"
      QUIVER_RETURN_NOT_OK(NeedChildren(t, children, 2));
      auto type = MakeRunEndEncoded(children[0]->type(), children[1]->type());
      if (!type.ok()) return Status::Invalid(type.status().message());
      return type;
    }
    case fb::Type::ListView:
      QUIVER_RETURN_NOT_OK(NeedChildren(t, children, 1));
      return list_view(children[0]);
    case fb::Type::LargeListView:
      QUIVER_RETURN_NOT_OK(NeedChildren(t, children, 1));
      return large_list_view(children[0]);
  }
  return Status::NotImplemented("unknown type id ", static_cast<int>(t),
                                " (written by a newer Arrow version?)");
}

class SchemaDecoder {
 public:
  SchemaDecoder(const IpcReadOptions& options, DictionaryFieldMap* dictionaries)
      : options_(options), dictionaries_(dictionaries) {}

  Result<FieldPtr> Decode(const fb::Field* field, std::vector<int>* path, int depth) {
    std::string name = field->name() ? field->name()->str() : std::string();
    if (depth > options_.max_nesting_depth) {
      return Status::Invalid("field '", name, "' is nested deeper than ",
                             options_.max_nesting_depth, " levels");
    }
    FieldVector children;
    if (field->children() != nullptr) {
      children.reserve(field->children()->size());
      for (flatbuffers::uoffset_t i = 0; i < field->children()->size(); ++i) {
        const fb::Field* child = field->children()->Get(i);
        if (child == nullptr)
          return Status::Invalid("field '", name, "': null child ", i);
        path->push_back(static_cast<int>(i));
        auto decoded = Decode(child, path, depth + 1);
        path->pop_back();
        QUIVER_RETURN_NOT_OK(decoded.status());
        children.push_back(std::move(*decoded));
      }
    }
    auto type = TypeFromFlatbuffer(field, children);
    if (!type.ok()) return type.status().WithContext("field '" + name + "'");
    TypePtr out = *type;
    if (const fb::DictionaryEncoding* enc = field->dictionary()) {
      QUIVER_ASSIGN_OR_RAISE(out, DictionaryType(enc, out, name));
      Status st = dictionaries_->Add(DictionaryField{enc->id(), *path, out});
      if (!st.ok()) return st.WithContext("field '" + name + "'");
    }
    return quiver::field(std::move(name), std::move(out), field->nullable(),
                         MetadataFromFlatbuffer(field->custom_metadata()));
  }

 private:
  static Result<TypePtr> DictionaryType(const fb::DictionaryEncoding* enc,
                                        const TypePtr& value_type,
                                        const std::string& name) {
    TypePtr index = int32();
    if (enc->index_type() != nullptr) {
      auto decoded = IntFromFlatbuffer(enc->index_type());
      if (!decoded.ok()) {
        return decoded.status().WithContext("field '" + name +
                                            "': dictionary index type");
      }
      index = *decoded;
    }
    auto type = MakeDictionary(index, value_type, enc->is_ordered());
    if (!type.ok()) return type.status().WithContext("field '" + name + "'");
    return type;
  }

  const IpcReadOptions& options_;
  DictionaryFieldMap* dictionaries_;
};

}  // namespace

// ---------------------------------------------------------------------------
// Public to the IPC implementation

KeyValueVectorOffset MetadataToFlatbuffer(FlatBufferBuilder& fbb,
                                          const KeyValueMetadata* metadata) {
  if (metadata == nullptr || metadata->size() == 0) return {};
  std::vector<Offset<fb::KeyValue>> pairs;
  pairs.reserve(static_cast<size_t>(metadata->size()));
  for (int64_t i = 0; i < metadata->size(); ++i) {
    auto key = fbb.CreateString(metadata->key(i));
    auto value = fbb.CreateString(metadata->value(i));
    pairs.push_back(fb::CreateKeyValue(fbb, key, value));
  }
  return fbb.CreateVector(pairs);
}

MetadataPtr MetadataFromFlatbuffer(const KeyValueVector* pairs) {
  if (pairs == nullptr || pairs->size() == 0) return nullptr;
  auto out = std::make_shared<KeyValueMetadata>();
  for (flatbuffers::uoffset_t i = 0; i < pairs->size(); ++i) {
    const fb::KeyValue* kv = pairs->Get(i);
    if (kv == nullptr) continue;
    out->Append(kv->key() ? kv->key()->str() : std::string(),
                kv->value() ? kv->value()->str() : std::string());
  }
  return out;
}

Result<Offset<fb::Schema>> SchemaToFlatbuffer(FlatBufferBuilder& fbb,
                                              const Schema& schema,
                                              const DictionaryFieldMap& dictionaries,
                                              int max_depth) {
  SchemaEncoder encoder(fbb, dictionaries, max_depth);
  std::vector<Offset<fb::Field>> fields;
  fields.reserve(schema.fields().size());
  std::vector<int> path;
  for (int i = 0; i < schema.num_fields(); ++i) {
    path.assign(1, i);
    QUIVER_ASSIGN_OR_RAISE(auto f, encoder.Encode(*schema.field(i), &path, 0));
    fields.push_back(f);
  }
  auto fields_vec = fbb.CreateVector(fields);
  auto metadata = MetadataToFlatbuffer(fbb, schema.metadata().get());
  // Big only for arrays a reader kept big-endian (their buffers are written
  // as they are).
  const fb::Endianness endianness = schema.endianness() == Endianness::kBig
                                        ? fb::Endianness::Big
                                        : fb::Endianness::Little;
  return fb::CreateSchema(fbb, endianness, fields_vec, metadata);
}

Result<DecodedSchema> SchemaFromFlatbuffer(const fb::Schema* schema,
                                           const IpcReadOptions& options) {
  if (schema == nullptr) return Status::Invalid("missing schema");
  DecodedSchema out;
  switch (schema->endianness()) {
    case fb::Endianness::Little:
      out.wire_endianness = Endianness::kLittle;
      break;
    case fb::Endianness::Big:
      out.wire_endianness = Endianness::kBig;
      break;
    default:
      return Status::Invalid("schema: unknown endianness ",
                             static_cast<int>(schema->endianness()),
                             " (0 little, 1 big)");
  }
  SchemaDecoder decoder(options, &out.dictionaries);
  FieldVector fields;
  if (schema->fields() != nullptr) {
    fields.reserve(schema->fields()->size());
    std::vector<int> path;
    for (flatbuffers::uoffset_t i = 0; i < schema->fields()->size(); ++i) {
      const fb::Field* f = schema->fields()->Get(i);
      if (f == nullptr) return Status::Invalid("schema: null field ", i);
      path.assign(1, static_cast<int>(i));
      QUIVER_ASSIGN_OR_RAISE(auto field, decoder.Decode(f, &path, 0));
      fields.push_back(std::move(field));
    }
  }
  // Converted to native order on read unless asked to keep it.
  const Endianness endianness =
      options.ensure_native_endian ? Endianness::kLittle : out.wire_endianness;
  out.schema = quiver::schema(
      std::move(fields), MetadataFromFlatbuffer(schema->custom_metadata()), endianness);
  return out;
}

Result<std::shared_ptr<Buffer>> FinishToBuffer(FlatBufferBuilder& fbb, MemoryPool* pool) {
  return CopyBuffer(fbb.GetBufferPointer(), static_cast<int64_t>(fbb.GetSize()), pool);
}

Result<MetadataVersion> CheckMetadataVersion(fb::MetadataVersion version) {
  switch (version) {
    case fb::MetadataVersion::V4:
      return MetadataVersion::kV4;
    case fb::MetadataVersion::V5:
      return MetadataVersion::kV5;
    case fb::MetadataVersion::V1:
    case fb::MetadataVersion::V2:
    case fb::MetadataVersion::V3:
      return Status::Invalid("metadata version V", static_cast<int>(version) + 1,
                             " (Arrow before 0.8) is not supported; V4 or V5 is needed");
  }
  return Status::Invalid("unknown metadata version ", static_cast<int>(version),
                         " (V5 is the newest known)");
}

Result<std::shared_ptr<Buffer>> EnsureAligned(const std::shared_ptr<Buffer>& data,
                                              MemoryPool* pool) {
  if (reinterpret_cast<uintptr_t>(data->data()) % 8 == 0) return data;
  return CopyBuffer(data->data(), data->size(), pool);
}

}  // namespace quiver::ipc::internal
