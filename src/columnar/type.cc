#include "quiver/columnar/type.h"

#include <limits>
#include <sstream>

namespace quiver {

const char* TimeUnitName(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond:
      return "s";
    case TimeUnit::kMilli:
      return "ms";
    case TimeUnit::kMicro:
      return "us";
    case TimeUnit::kNano:
      return "ns";
  }
  return "?";
}

// ---------------------------------------------------------------------------
// KeyValueMetadata

KeyValueMetadata::KeyValueMetadata(std::vector<std::string> keys,
                                   std::vector<std::string> values)
    : keys_(std::move(keys)), values_(std::move(values)) {
  if (values_.size() < keys_.size()) values_.resize(keys_.size());
  if (keys_.size() < values_.size()) keys_.resize(values_.size());
}

void KeyValueMetadata::Append(std::string key, std::string value) {
  keys_.push_back(std::move(key));
  values_.push_back(std::move(value));
}

int64_t KeyValueMetadata::FindKey(std::string_view key) const {
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return static_cast<int64_t>(i);
  }
  return -1;
}

Result<std::string> KeyValueMetadata::Get(std::string_view key) const {
  int64_t i = FindKey(key);
  if (i < 0) return Status::KeyError("metadata has no key '", key, "'");
  return values_[i];
}

bool KeyValueMetadata::Equals(const KeyValueMetadata& other) const {
  return keys_ == other.keys_ && values_ == other.values_;
}

std::string KeyValueMetadata::ToString() const {
  std::ostringstream ss;
  for (size_t i = 0; i < keys_.size(); ++i) {
    ss << "\n  " << keys_[i] << ": " << values_[i];
  }
  return ss.str();
}

MetadataPtr key_value_metadata(std::vector<std::pair<std::string, std::string>> pairs) {
  auto md = std::make_shared<KeyValueMetadata>();
  for (auto& [k, v] : pairs) md->Append(std::move(k), std::move(v));
  return md;
}

namespace {
bool MetadataEquals(const MetadataPtr& a, const MetadataPtr& b) {
  bool a_empty = a == nullptr || a->size() == 0;
  bool b_empty = b == nullptr || b->size() == 0;
  if (a_empty || b_empty) return a_empty == b_empty;
  return a->Equals(*b);
}
}  // namespace

// ---------------------------------------------------------------------------
// Classification

bool IsSignedInteger(TypeId id) {
  return id == TypeId::kInt8 || id == TypeId::kInt16 || id == TypeId::kInt32 ||
         id == TypeId::kInt64;
}
bool IsUnsignedInteger(TypeId id) {
  return id == TypeId::kUInt8 || id == TypeId::kUInt16 || id == TypeId::kUInt32 ||
         id == TypeId::kUInt64;
}
bool IsInteger(TypeId id) { return IsSignedInteger(id) || IsUnsignedInteger(id); }
bool IsFloating(TypeId id) {
  return id == TypeId::kHalfFloat || id == TypeId::kFloat || id == TypeId::kDouble;
}
bool IsPrimitive(TypeId id) {
  switch (id) {
    case TypeId::kBool:
    case TypeId::kDecimal:
    case TypeId::kDate32:
    case TypeId::kDate64:
    case TypeId::kTime32:
    case TypeId::kTime64:
    case TypeId::kTimestamp:
    case TypeId::kDuration:
    case TypeId::kInterval:
    case TypeId::kFixedSizeBinary:
      return true;
    default:
      return IsInteger(id) || IsFloating(id);
  }
}
bool IsBaseBinary(TypeId id) {
  return id == TypeId::kString || id == TypeId::kLargeString || id == TypeId::kBinary ||
         id == TypeId::kLargeBinary;
}
bool IsLargeOffsets(TypeId id) {
  return id == TypeId::kLargeString || id == TypeId::kLargeBinary ||
         id == TypeId::kLargeList || id == TypeId::kLargeListView;
}
bool IsListView(TypeId id) {
  return id == TypeId::kListView || id == TypeId::kLargeListView;
}
bool IsListLike(TypeId id) {
  return id == TypeId::kList || id == TypeId::kLargeList ||
         id == TypeId::kFixedSizeList || id == TypeId::kMap;
}
bool IsNested(TypeId id) {
  return IsListLike(id) || id == TypeId::kStruct || IsUnion(id) || IsListView(id) ||
         id == TypeId::kRunEndEncoded;
}
bool IsRunEndType(TypeId id) {
  return id == TypeId::kInt16 || id == TypeId::kInt32 || id == TypeId::kInt64;
}
bool IsUnion(TypeId id) {
  return id == TypeId::kSparseUnion || id == TypeId::kDenseUnion;
}
bool IsBinaryView(TypeId id) {
  return id == TypeId::kBinaryView || id == TypeId::kStringView;
}

// LayoutBufferCount: layout.cc, from the same description as LayoutOf.

// ---------------------------------------------------------------------------
// DataType

DataType::DataType(Params p)
    : id_(p.id),
      unit_(p.unit),
      tz_(std::move(p.tz)),
      precision_(p.precision),
      scale_(p.scale),
      size_param_(p.size_param),
      flag_(p.flag),
      children_(std::move(p.children)),
      index_type_(std::move(p.index_type)),
      value_type_(std::move(p.value_type)),
      type_codes_(std::move(p.type_codes)) {
  if (IsUnion(id_)) {
    child_ids_.assign(kMaxUnionTypeCode + 1, -1);
    for (size_t k = 0; k < type_codes_.size(); ++k) {
      if (type_codes_[k] >= 0)
        child_ids_[static_cast<size_t>(type_codes_[k])] = static_cast<int>(k);
    }
  }
}

int DataType::bit_width() const {
  switch (id_) {
    case TypeId::kBool:
      return 1;
    case TypeId::kInt8:
    case TypeId::kUInt8:
      return 8;
    case TypeId::kInt16:
    case TypeId::kUInt16:
    case TypeId::kHalfFloat:
      return 16;
    case TypeId::kInt32:
    case TypeId::kUInt32:
    case TypeId::kFloat:
    case TypeId::kDate32:
    case TypeId::kTime32:
      return 32;
    case TypeId::kInt64:
    case TypeId::kUInt64:
    case TypeId::kDouble:
    case TypeId::kDate64:
    case TypeId::kTime64:
    case TypeId::kTimestamp:
    case TypeId::kDuration:
      return 64;
    case TypeId::kDecimal:
      return size_param_;
    case TypeId::kInterval:
      return interval_unit() == IntervalUnit::kYearMonth ? 32
             : interval_unit() == IntervalUnit::kDayTime ? 64
                                                         : 128;
    case TypeId::kFixedSizeBinary:
      return size_param_ * 8;
    case TypeId::kDictionary:
      return index_type_->bit_width();
    default:
      return 0;
  }
}

const FieldPtr& DataType::value_field() const {
  static const FieldPtr kNone;
  if (id_ == TypeId::kList || id_ == TypeId::kLargeList ||
      id_ == TypeId::kFixedSizeList || id_ == TypeId::kMap || IsListView(id_)) {
    return children_[0];
  }
  if (id_ == TypeId::kRunEndEncoded) return children_[1];
  return kNone;
}

const TypePtr& DataType::run_end_type() const {
  static const TypePtr kNone;
  return id_ == TypeId::kRunEndEncoded ? children_[0]->type() : kNone;
}

const TypePtr& DataType::value_type() const {
  static const TypePtr kNone;
  if (id_ == TypeId::kDictionary) return value_type_;
  const FieldPtr& f = value_field();
  return f ? f->type() : kNone;
}

const FieldPtr& DataType::key_field() const { return children_[0]->type()->field(0); }
const FieldPtr& DataType::item_field() const { return children_[0]->type()->field(1); }
const TypePtr& DataType::key_type() const { return key_field()->type(); }
const TypePtr& DataType::item_type() const { return item_field()->type(); }

bool DataType::Equals(const DataType& other, bool check_metadata) const {
  if (this == &other) return true;
  if (id_ != other.id_) return false;
  switch (id_) {
    case TypeId::kTime32:
    case TypeId::kTime64:
    case TypeId::kDuration:
      return unit_ == other.unit_;
    case TypeId::kTimestamp:
      return unit_ == other.unit_ && tz_ == other.tz_;
    case TypeId::kDecimal:
      return precision_ == other.precision_ && scale_ == other.scale_ &&
             size_param_ == other.size_param_;
    case TypeId::kFixedSizeBinary:
    case TypeId::kInterval:
      return size_param_ == other.size_param_;
    case TypeId::kDictionary:
      return flag_ == other.flag_ && index_type_->Equals(*other.index_type_) &&
             value_type_->Equals(*other.value_type_, check_metadata);
    case TypeId::kFixedSizeList:
    case TypeId::kMap:
      if (size_param_ != other.size_param_ || flag_ != other.flag_) return false;
      [[fallthrough]];
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion:
      if (type_codes_ != other.type_codes_) return false;
      [[fallthrough]];
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kListView:
    case TypeId::kLargeListView:
    case TypeId::kRunEndEncoded:
    case TypeId::kStruct: {
      if (children_.size() != other.children_.size()) return false;
      for (size_t i = 0; i < children_.size(); ++i) {
        if (!children_[i]->Equals(*other.children_[i], check_metadata)) return false;
      }
      return true;
    }
    default:
      return true;
  }
}

std::string DataType::name() const {
  switch (id_) {
    case TypeId::kNull:
      return "null";
    case TypeId::kBool:
      return "bool";
    case TypeId::kInt8:
      return "int8";
    case TypeId::kInt16:
      return "int16";
    case TypeId::kInt32:
      return "int32";
    case TypeId::kInt64:
      return "int64";
    case TypeId::kUInt8:
      return "uint8";
    case TypeId::kUInt16:
      return "uint16";
    case TypeId::kUInt32:
      return "uint32";
    case TypeId::kUInt64:
      return "uint64";
    case TypeId::kHalfFloat:
      return "halffloat";
    case TypeId::kFloat:
      return "float";
    case TypeId::kDouble:
      return "double";
    case TypeId::kDecimal:
      return "decimal" + std::to_string(size_param_);
    case TypeId::kDate32:
      return "date32";
    case TypeId::kDate64:
      return "date64";
    case TypeId::kTime32:
      return "time32";
    case TypeId::kTime64:
      return "time64";
    case TypeId::kTimestamp:
      return "timestamp";
    case TypeId::kDuration:
      return "duration";
    case TypeId::kString:
      return "string";
    case TypeId::kLargeString:
      return "large_string";
    case TypeId::kBinaryView:
      return "binary_view";
    case TypeId::kStringView:
      return "string_view";
    case TypeId::kBinary:
      return "binary";
    case TypeId::kLargeBinary:
      return "large_binary";
    case TypeId::kFixedSizeBinary:
      return "fixed_size_binary";
    case TypeId::kList:
      return "list";
    case TypeId::kLargeList:
      return "large_list";
    case TypeId::kListView:
      return "list_view";
    case TypeId::kLargeListView:
      return "large_list_view";
    case TypeId::kRunEndEncoded:
      return "run_end_encoded";
    case TypeId::kFixedSizeList:
      return "fixed_size_list";
    case TypeId::kStruct:
      return "struct";
    case TypeId::kMap:
      return "map";
    case TypeId::kDictionary:
      return "dictionary";
    case TypeId::kInterval:
      return std::string(IntervalUnitName(interval_unit())) + "_interval";
    case TypeId::kSparseUnion:
      return "sparse_union";
    case TypeId::kDenseUnion:
      return "dense_union";
  }
  return "unknown";
}

std::string DataType::ToString() const {
  std::ostringstream ss;
  switch (id_) {
    case TypeId::kDecimal:
      ss << "decimal" << size_param_ << "(" << precision_ << ", " << scale_ << ")";
      break;
    case TypeId::kDate32:
      ss << "date32[day]";
      break;
    case TypeId::kDate64:
      ss << "date64[ms]";
      break;
    case TypeId::kTime32:
    case TypeId::kTime64:
    case TypeId::kDuration:
      ss << name() << "[" << TimeUnitName(unit_) << "]";
      break;
    case TypeId::kTimestamp:
      ss << "timestamp[" << TimeUnitName(unit_);
      if (!tz_.empty()) ss << ", tz=" << tz_;
      ss << "]";
      break;
    case TypeId::kFixedSizeBinary:
      ss << "fixed_size_binary[" << size_param_ << "]";
      break;
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kListView:
    case TypeId::kLargeListView:
      ss << name() << "<" << children_[0]->ToString() << ">";
      break;
    case TypeId::kRunEndEncoded:
      ss << name() << "<run_ends: " << children_[0]->type()->ToString()
         << ", values: " << children_[1]->type()->ToString() << ">";
      break;
    case TypeId::kFixedSizeList:
      ss << "fixed_size_list<" << children_[0]->ToString() << ">[" << size_param_ << "]";
      break;
    case TypeId::kStruct: {
      ss << "struct<";
      for (size_t i = 0; i < children_.size(); ++i) {
        if (i > 0) ss << ", ";
        ss << children_[i]->ToString();
      }
      ss << ">";
      break;
    }
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {
      ss << name() << "<";
      for (size_t i = 0; i < children_.size(); ++i) {
        if (i > 0) ss << ", ";
        ss << children_[i]->ToString() << "="
           << (i < type_codes_.size() ? static_cast<int>(type_codes_[i]) : -1);
      }
      ss << ">";
      break;
    }
    case TypeId::kMap:
      ss << "map<" << key_type()->ToString() << ", " << item_type()->ToString();
      if (flag_) ss << ", keys_sorted";
      ss << ">";
      break;
    case TypeId::kDictionary:
      ss << "dictionary<values=" << value_type_->ToString()
         << ", indices=" << index_type_->ToString() << ", ordered=" << (flag_ ? 1 : 0)
         << ">";
      break;
    default:
      ss << name();
  }
  return ss.str();
}

// ---------------------------------------------------------------------------
// Field and Schema

FieldPtr Field::WithName(std::string name) const {
  return std::make_shared<Field>(std::move(name), type_, nullable_, metadata_);
}
FieldPtr Field::WithType(TypePtr type) const {
  return std::make_shared<Field>(name_, std::move(type), nullable_, metadata_);
}
FieldPtr Field::WithNullable(bool nullable) const {
  return std::make_shared<Field>(name_, type_, nullable, metadata_);
}
FieldPtr Field::WithMetadata(MetadataPtr metadata) const {
  return std::make_shared<Field>(name_, type_, nullable_, std::move(metadata));
}

bool Field::Equals(const Field& other, bool check_metadata) const {
  if (this == &other) return true;
  if (name_ != other.name_ || nullable_ != other.nullable_) return false;
  if (!type_->Equals(*other.type_, check_metadata)) return false;
  return !check_metadata || MetadataEquals(metadata_, other.metadata_);
}

std::string Field::ToString() const {
  std::string s = name_ + ": " + type_->ToString();
  if (!nullable_) s += " not null";
  return s;
}

int Schema::GetFieldIndex(std::string_view name) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i]->name() == name) return static_cast<int>(i);
  }
  return -1;
}

FieldPtr Schema::GetFieldByName(std::string_view name) const {
  int i = GetFieldIndex(name);
  return i < 0 ? nullptr : fields_[i];
}

std::shared_ptr<Schema> Schema::WithMetadata(MetadataPtr metadata) const {
  return std::make_shared<Schema>(fields_, std::move(metadata), endianness_);
}

std::shared_ptr<Schema> Schema::WithEndianness(Endianness endianness) const {
  return std::make_shared<Schema>(fields_, metadata_, endianness);
}

const char* EndiannessName(Endianness endianness) {
  return endianness == Endianness::kBig ? "big" : "little";
}

bool Schema::Equals(const Schema& other, bool check_metadata) const {
  if (this == &other) return true;
  if (endianness_ != other.endianness_) return false;
  if (fields_.size() != other.fields_.size()) return false;
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (!fields_[i]->Equals(*other.fields_[i], check_metadata)) return false;
  }
  return !check_metadata || MetadataEquals(metadata_, other.metadata_);
}

std::string Schema::ToString() const {
  std::ostringstream ss;
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (i > 0) ss << "\n";
    ss << fields_[i]->ToString();
  }
  if (metadata_ && metadata_->size() > 0) {
    ss << "\n-- schema metadata --";
    for (int64_t i = 0; i < metadata_->size(); ++i) {
      ss << "\n" << metadata_->key(i) << ": " << metadata_->value(i);
    }
  }
  if (endianness_ != Endianness::kLittle) {
    ss << "\n-- endianness: " << EndiannessName(endianness_) << " --";
  }
  return ss.str();
}

// ---------------------------------------------------------------------------
// Factories

namespace {
TypePtr Make(DataType::Params p) { return std::make_shared<DataType>(std::move(p)); }
TypePtr MakeSimple(TypeId id) {
  DataType::Params p;
  p.id = id;
  return Make(std::move(p));
}
}  // namespace

#define QUIVER_SINGLETON_TYPE(fn, id_)            \
  const TypePtr& fn() {                           \
    static const TypePtr kType = MakeSimple(id_); \
    return kType;                                 \
  }
QUIVER_SINGLETON_TYPE(null, TypeId::kNull)
QUIVER_SINGLETON_TYPE(boolean, TypeId::kBool)
QUIVER_SINGLETON_TYPE(int8, TypeId::kInt8)
QUIVER_SINGLETON_TYPE(int16, TypeId::kInt16)
QUIVER_SINGLETON_TYPE(int32, TypeId::kInt32)
QUIVER_SINGLETON_TYPE(int64, TypeId::kInt64)
QUIVER_SINGLETON_TYPE(uint8, TypeId::kUInt8)
QUIVER_SINGLETON_TYPE(uint16, TypeId::kUInt16)
QUIVER_SINGLETON_TYPE(uint32, TypeId::kUInt32)
QUIVER_SINGLETON_TYPE(uint64, TypeId::kUInt64)
QUIVER_SINGLETON_TYPE(float16, TypeId::kHalfFloat)
QUIVER_SINGLETON_TYPE(float32, TypeId::kFloat)
QUIVER_SINGLETON_TYPE(float64, TypeId::kDouble)
QUIVER_SINGLETON_TYPE(date32, TypeId::kDate32)
QUIVER_SINGLETON_TYPE(binary_view, TypeId::kBinaryView)
QUIVER_SINGLETON_TYPE(utf8_view, TypeId::kStringView)
QUIVER_SINGLETON_TYPE(date64, TypeId::kDate64)
QUIVER_SINGLETON_TYPE(utf8, TypeId::kString)
QUIVER_SINGLETON_TYPE(large_utf8, TypeId::kLargeString)
QUIVER_SINGLETON_TYPE(binary, TypeId::kBinary)
QUIVER_SINGLETON_TYPE(large_binary, TypeId::kLargeBinary)
#undef QUIVER_SINGLETON_TYPE

int32_t MaxDecimalPrecision(int bit_width) {
  switch (bit_width) {
    case 32:
      return 9;
    case 64:
      return 18;
    case 128:
      return 38;
    case 256:
      return 76;
    default:
      return 0;
  }
}

Result<TypePtr> MakeDecimal(int bit_width, int32_t precision, int32_t scale) {
  const int32_t max = MaxDecimalPrecision(bit_width);
  if (max == 0) {
    return Status::Invalid("a decimal is 32, 64, 128 or 256 bits wide, not ", bit_width);
  }
  if (precision < 1 || precision > max) {
    return Status::Invalid("decimal", bit_width, " precision must be in [1, ", max,
                           "], got ", precision);
  }
  // Values print with |scale| digits; keep that bounded for untrusted input.
  if (scale < -kMaxDecimalScale || scale > kMaxDecimalScale) {
    return Status::Invalid("decimal", bit_width, " scale must be in [", -kMaxDecimalScale,
                           ", ", kMaxDecimalScale, "], got ", scale);
  }
  DataType::Params p;
  p.id = TypeId::kDecimal;
  p.precision = precision;
  p.scale = scale;
  p.size_param = bit_width;
  return Make(std::move(p));
}
Result<TypePtr> MakeDecimal128(int32_t precision, int32_t scale) {
  return MakeDecimal(128, precision, scale);
}
TypePtr decimal32(int32_t precision, int32_t scale) {
  return MakeDecimal(32, precision, scale).ValueOrDie();
}
TypePtr decimal64(int32_t precision, int32_t scale) {
  return MakeDecimal(64, precision, scale).ValueOrDie();
}
TypePtr decimal128(int32_t precision, int32_t scale) {
  return MakeDecimal(128, precision, scale).ValueOrDie();
}
TypePtr decimal256(int32_t precision, int32_t scale) {
  return MakeDecimal(256, precision, scale).ValueOrDie();
}

Result<TypePtr> MakeTime32(TimeUnit unit) {
  if (unit != TimeUnit::kSecond && unit != TimeUnit::kMilli) {
    return Status::Invalid("time32 unit must be s or ms, got ", TimeUnitName(unit));
  }
  DataType::Params p;
  p.id = TypeId::kTime32;
  p.unit = unit;
  return Make(std::move(p));
}
Result<TypePtr> MakeTime64(TimeUnit unit) {
  if (unit != TimeUnit::kMicro && unit != TimeUnit::kNano) {
    return Status::Invalid("time64 unit must be us or ns, got ", TimeUnitName(unit));
  }
  DataType::Params p;
  p.id = TypeId::kTime64;
  p.unit = unit;
  return Make(std::move(p));
}
TypePtr time32(TimeUnit unit) { return MakeTime32(unit).ValueOrDie(); }
TypePtr time64(TimeUnit unit) { return MakeTime64(unit).ValueOrDie(); }

TypePtr timestamp(TimeUnit unit, std::string timezone) {
  DataType::Params p;
  p.id = TypeId::kTimestamp;
  p.unit = unit;
  p.tz = std::move(timezone);
  return Make(std::move(p));
}

const char* IntervalUnitName(IntervalUnit unit) {
  switch (unit) {
    case IntervalUnit::kYearMonth:
      return "month";
    case IntervalUnit::kDayTime:
      return "day_time";
    case IntervalUnit::kMonthDayNano:
      return "month_day_nano";
  }
  return "unknown";
}

TypePtr interval(IntervalUnit unit) {
  DataType::Params p;
  p.id = TypeId::kInterval;
  p.size_param = static_cast<int32_t>(unit);
  return Make(std::move(p));
}
const TypePtr& month_interval() {
  static const TypePtr t = interval(IntervalUnit::kYearMonth);
  return t;
}
const TypePtr& day_time_interval() {
  static const TypePtr t = interval(IntervalUnit::kDayTime);
  return t;
}
const TypePtr& month_day_nano_interval() {
  static const TypePtr t = interval(IntervalUnit::kMonthDayNano);
  return t;
}

TypePtr duration(TimeUnit unit) {
  DataType::Params p;
  p.id = TypeId::kDuration;
  p.unit = unit;
  return Make(std::move(p));
}

Result<TypePtr> MakeFixedSizeBinary(int32_t byte_width) {
  // bit_width() is width * 8 in an int.
  if (byte_width < 0 || byte_width > std::numeric_limits<int32_t>::max() / 8) {
    return Status::Invalid("fixed_size_binary width must be in [0, 2^28), got ",
                           byte_width);
  }
  DataType::Params p;
  p.id = TypeId::kFixedSizeBinary;
  p.size_param = byte_width;
  return Make(std::move(p));
}
TypePtr fixed_size_binary(int32_t byte_width) {
  return MakeFixedSizeBinary(byte_width).ValueOrDie();
}

namespace {
TypePtr MakeList(TypeId id, FieldPtr value_field, int32_t size = 0) {
  DataType::Params p;
  p.id = id;
  p.size_param = size;
  p.children = {std::move(value_field)};
  return Make(std::move(p));
}
}  // namespace

TypePtr list(TypePtr value_type) { return list(field("item", std::move(value_type))); }
TypePtr list(FieldPtr value_field) {
  return MakeList(TypeId::kList, std::move(value_field));
}
TypePtr large_list(TypePtr value_type) {
  return large_list(field("item", std::move(value_type)));
}
TypePtr large_list(FieldPtr value_field) {
  return MakeList(TypeId::kLargeList, std::move(value_field));
}
TypePtr list_view(TypePtr value_type) {
  return list_view(field("item", std::move(value_type)));
}
TypePtr list_view(FieldPtr value_field) {
  return MakeList(TypeId::kListView, std::move(value_field));
}
TypePtr large_list_view(TypePtr value_type) {
  return large_list_view(field("item", std::move(value_type)));
}
TypePtr large_list_view(FieldPtr value_field) {
  return MakeList(TypeId::kLargeListView, std::move(value_field));
}
Result<TypePtr> MakeFixedSizeList(FieldPtr value_field, int32_t list_size) {
  if (list_size < 0) {
    return Status::Invalid("fixed_size_list size must be >= 0, got ", list_size);
  }
  if (value_field == nullptr)
    return Status::Invalid("fixed_size_list without value field");
  return MakeList(TypeId::kFixedSizeList, std::move(value_field), list_size);
}
TypePtr fixed_size_list(TypePtr value_type, int32_t list_size) {
  return fixed_size_list(field("item", std::move(value_type)), list_size);
}
TypePtr fixed_size_list(FieldPtr value_field, int32_t list_size) {
  return MakeFixedSizeList(std::move(value_field), list_size).ValueOrDie();
}

TypePtr struct_(FieldVector fields) {
  DataType::Params p;
  p.id = TypeId::kStruct;
  p.children = std::move(fields);
  return Make(std::move(p));
}

Result<TypePtr> MapFromEntries(FieldPtr entries_field, bool keys_sorted) {
  if (entries_field == nullptr || entries_field->type()->id() != TypeId::kStruct ||
      entries_field->type()->num_fields() != 2) {
    return Status::TypeError("map entries must be a struct of two fields (key, value)");
  }
  if (entries_field->nullable()) {
    return Status::TypeError("map entries field must not be nullable");
  }
  if (entries_field->type()->field(0)->nullable()) {
    return Status::TypeError("map key field must not be nullable");
  }
  DataType::Params p;
  p.id = TypeId::kMap;
  p.flag = keys_sorted;
  p.children = {std::move(entries_field)};
  return Make(std::move(p));
}

TypePtr map(TypePtr key_type, FieldPtr item_field, bool keys_sorted) {
  auto entries = field(
      "entries",
      struct_({field("key", std::move(key_type), false), std::move(item_field)}), false);
  return MapFromEntries(std::move(entries), keys_sorted).ValueOrDie();
}
TypePtr map(TypePtr key_type, TypePtr item_type, bool keys_sorted) {
  return map(std::move(key_type), field("value", std::move(item_type)), keys_sorted);
}

Result<TypePtr> MakeDictionary(TypePtr index_type, TypePtr value_type, bool ordered) {
  if (index_type == nullptr || !IsInteger(index_type->id())) {
    return Status::TypeError("dictionary index type must be an integer type, got ",
                             index_type ? index_type->ToString() : "null");
  }
  if (value_type == nullptr) return Status::TypeError("dictionary without value type");
  DataType::Params p;
  p.id = TypeId::kDictionary;
  p.flag = ordered;
  p.index_type = std::move(index_type);
  p.value_type = std::move(value_type);
  return Make(std::move(p));
}
TypePtr dictionary(TypePtr index_type, TypePtr value_type, bool ordered) {
  return MakeDictionary(std::move(index_type), std::move(value_type), ordered)
      .ValueOrDie();
}

FieldPtr field(std::string name, TypePtr type, bool nullable, MetadataPtr metadata) {
  return std::make_shared<Field>(std::move(name), std::move(type), nullable,
                                 std::move(metadata));
}

SchemaPtr schema(FieldVector fields, MetadataPtr metadata, Endianness endianness) {
  return std::make_shared<Schema>(std::move(fields), std::move(metadata), endianness);
}

}  // namespace quiver
