// Arrow logical data types, fields and schemas.
//
// A DataType is an immutable value shared through std::shared_ptr; create one
// with the factory functions below (int64(), utf8(), list(...), ...). Every
// type of the Arrow columnar format that Quiver supports is one DataType
// with a TypeId and the parameters that id uses. Types, fields and schemas
// are immutable and safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quiver/util/result.h"

namespace quiver {

enum class TypeId : int8_t {
  kNull,
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kHalfFloat,
  kFloat,
  kDouble,
  kDecimal,
  kDate32,
  kDate64,
  kTime32,
  kTime64,
  kTimestamp,
  kDuration,
  kString,
  kLargeString,
  kBinary,
  kLargeBinary,
  kFixedSizeBinary,
  kList,
  kLargeList,
  kFixedSizeList,
  kStruct,
  kMap,
  kDictionary,
  kInterval,
  // Views (Arrow 1.4): 16-byte views of values inlined or held in any number
  // of variadic data buffers.
  kBinaryView,
  kStringView,
  // Unions: each slot's int8 type code names the child holding its value.
  // Sparse: every child is as long as the union. Dense: an int32 offset per
  // slot into its child. No validity bitmap: nulls are the children's.
  kSparseUnion,
  kDenseUnion,
  // List views: an offset and a size per slot (int32 for list_view, int64
  // for large_list_view) into one child. Views need not be ordered and may
  // overlap; a non-null view has offset, size >= 0 and offset + size <=
  // the child's length. ArrayData buffers: validity, offsets, sizes.
  kListView,
  kLargeListView,
  // Run-end encoded: two children, "run_ends" (int16, int32 or int64, no
  // nulls, positive and strictly increasing: the logical index where each
  // run ends) and "values" (one value per run, any type). No buffers of its
  // own: ArrayData keeps slot 0 (validity) always null and null_count 0 (its
  // nulls are null values).
  kRunEndEncoded,
};

enum class TimeUnit : int8_t { kSecond, kMilli, kMicro, kNano };

// The three interval layouts of the columnar format: months (int32); days
// and milliseconds (two int32); months, days (int32 each) and nanoseconds
// (int64). Values are little-endian, in that order.
enum class IntervalUnit : int8_t { kYearMonth, kDayTime, kMonthDayNano };
const char* IntervalUnitName(IntervalUnit unit);  // "month", "day_time", "month_day_nano"

const char* TimeUnitName(TimeUnit unit);  // "s", "ms", "us", "ns"

class DataType;
class Field;
using TypePtr = std::shared_ptr<DataType>;
using FieldPtr = std::shared_ptr<Field>;
using FieldVector = std::vector<FieldPtr>;

// Ordered key/value pairs attached to a field or schema (Arrow's
// custom_metadata). Keys need not be unique; order is preserved.
class KeyValueMetadata {
 public:
  KeyValueMetadata() = default;
  KeyValueMetadata(std::vector<std::string> keys, std::vector<std::string> values);
  void Append(std::string key, std::string value);
  int64_t size() const { return static_cast<int64_t>(keys_.size()); }
  const std::string& key(int64_t i) const { return keys_[i]; }
  const std::string& value(int64_t i) const { return values_[i]; }
  const std::vector<std::string>& keys() const { return keys_; }
  const std::vector<std::string>& values() const { return values_; }
  // The value of the first pair with `key`, or KeyError.
  Result<std::string> Get(std::string_view key) const;
  int64_t FindKey(std::string_view key) const;  // -1 if absent
  bool Equals(const KeyValueMetadata& other) const;
  std::string ToString() const;

 private:
  std::vector<std::string> keys_;
  std::vector<std::string> values_;
};
using MetadataPtr = std::shared_ptr<const KeyValueMetadata>;

MetadataPtr key_value_metadata(std::vector<std::pair<std::string, std::string>> pairs);

class DataType {
 public:
  TypeId id() const { return id_; }
  // Bits per value slot for fixed-width types (1 for bool, 32 to 256 for
  // decimals,
  // 8*width for fixed_size_binary); 0 for null, variable-size and nested.
  int bit_width() const;
  // bit_width()/8 for byte-sized fixed-width types, else 0.
  int byte_width() const { return bit_width() % 8 == 0 ? bit_width() / 8 : 0; }
  TimeUnit unit() const { return unit_; }              // time32/64, timestamp, duration
  const std::string& timezone() const { return tz_; }  // timestamp ("" = naive)
  int32_t precision() const { return precision_; }     // decimal
  int32_t scale() const { return scale_; }             // decimal
  int32_t list_size() const { return size_param_; }    // fixed_size_list
  IntervalUnit interval_unit() const {                 // interval
    return static_cast<IntervalUnit>(size_param_);
  }
  // Child fields: the value field of list-like types, the struct's fields,
  // the "entries" struct field of a map. Empty for other types.
  const FieldVector& fields() const { return children_; }
  int num_fields() const { return static_cast<int>(children_.size()); }
  const FieldPtr& field(int i) const { return children_[i]; }
  // List-like: the value field / its type. Dictionary: the value type.
  // Run-end encoded: the "values" field / its type.
  const FieldPtr& value_field() const;
  const TypePtr& value_type() const;
  const TypePtr& index_type() const { return index_type_; }  // dictionary
  const TypePtr& run_end_type() const;                       // run-end encoded
  bool ordered() const { return flag_; }                     // dictionary
  bool keys_sorted() const { return flag_; }                 // map
  const TypePtr& key_type() const;                           // map
  const TypePtr& item_type() const;                          // map
  const FieldPtr& key_field() const;                         // map
  const FieldPtr& item_field() const;                        // map
  // Unions: the type code of each child (type_codes()[k] names field(k)),
  // and the child index of a type code (-1 for a code no child has).
  const std::vector<int8_t>& type_codes() const { return type_codes_; }
  int child_id(int8_t type_code) const {  // -1 for every code of other types
    if (type_code < 0 || child_ids_.empty()) return -1;
    return child_ids_[static_cast<size_t>(type_code)];
  }

  bool Equals(const DataType& other, bool check_metadata = false) const;
  bool Equals(const TypePtr& other, bool check_metadata = false) const {
    return other != nullptr && Equals(*other, check_metadata);
  }
  // Arrow-style text: "int64", "timestamp[ms, tz=UTC]", "list<item: int32>".
  std::string ToString() const;
  // Short name of the id ("int64", "list", "dictionary", ...).
  std::string name() const;

  // Internal: use the factory functions.
  struct Params {
    TypeId id = TypeId::kNull;
    TimeUnit unit = TimeUnit::kSecond;
    std::string tz;
    int32_t precision = 0;
    int32_t scale = 0;
    int32_t size_param = 0;
    bool flag = false;
    FieldVector children;
    TypePtr index_type;
    TypePtr value_type;
    std::vector<int8_t> type_codes;  // unions
  };
  explicit DataType(Params p);

 private:
  TypeId id_;
  TimeUnit unit_;
  std::string tz_;
  int32_t precision_;
  int32_t scale_;
  // fixed_size_binary width, fixed_size_list size, interval unit, decimal
  // bit width
  int32_t size_param_;
  bool flag_;  // dictionary ordered / map keys_sorted
  FieldVector children_;
  TypePtr index_type_;
  TypePtr value_type_;              // dictionary only
  std::vector<int8_t> type_codes_;  // unions
  std::vector<int> child_ids_;      // unions: 128 entries, by type code
};

class Field {
 public:
  Field(std::string name, TypePtr type, bool nullable = true,
        MetadataPtr metadata = nullptr)
      : name_(std::move(name)),
        type_(std::move(type)),
        nullable_(nullable),
        metadata_(std::move(metadata)) {}

  const std::string& name() const { return name_; }
  const TypePtr& type() const { return type_; }
  bool nullable() const { return nullable_; }
  const MetadataPtr& metadata() const { return metadata_; }

  FieldPtr WithName(std::string name) const;
  FieldPtr WithType(TypePtr type) const;
  FieldPtr WithNullable(bool nullable) const;
  FieldPtr WithMetadata(MetadataPtr metadata) const;

  bool Equals(const Field& other, bool check_metadata = false) const;
  std::string ToString() const;  // "name: type not null"

 private:
  std::string name_;
  TypePtr type_;
  bool nullable_;
  MetadataPtr metadata_;
};

// Byte order of the values of a schema's arrays (Arrow's Schema.endianness).
// Quiver works on little-endian hosts; a big-endian schema comes only from an
// IPC reader told to keep big-endian data as it is
// (IpcReadOptions::ensure_native_endian = false). Such arrays are for passing
// through (writing back out, which writes endianness Big): validation,
// equality, printing and compute read their values as little-endian.
enum class Endianness : int8_t { kLittle, kBig };
const char* EndiannessName(Endianness endianness);  // "little", "big"

class Schema {
 public:
  explicit Schema(FieldVector fields, MetadataPtr metadata = nullptr,
                  Endianness endianness = Endianness::kLittle)
      : fields_(std::move(fields)),
        metadata_(std::move(metadata)),
        endianness_(endianness) {}

  const FieldVector& fields() const { return fields_; }
  int num_fields() const { return static_cast<int>(fields_.size()); }
  const FieldPtr& field(int i) const { return fields_[i]; }
  const MetadataPtr& metadata() const { return metadata_; }
  // Index of the first field called `name`, or -1.
  int GetFieldIndex(std::string_view name) const;
  FieldPtr GetFieldByName(std::string_view name) const;
  std::shared_ptr<Schema> WithMetadata(MetadataPtr metadata) const;
  Endianness endianness() const { return endianness_; }
  bool is_native_endian() const { return endianness_ == Endianness::kLittle; }
  std::shared_ptr<Schema> WithEndianness(Endianness endianness) const;

  // Schemas of different endianness are never equal.
  bool Equals(const Schema& other, bool check_metadata = false) const;
  std::string ToString() const;

 private:
  FieldVector fields_;
  MetadataPtr metadata_;
  Endianness endianness_;
};
using SchemaPtr = std::shared_ptr<Schema>;

// ---- Factories. Parameterless ones return shared singletons. ----
const TypePtr& null();
const TypePtr& boolean();
const TypePtr& int8();
const TypePtr& int16();
const TypePtr& int32();
const TypePtr& int64();
const TypePtr& uint8();
const TypePtr& uint16();
const TypePtr& uint32();
const TypePtr& uint64();
const TypePtr& float16();
const TypePtr& float32();
const TypePtr& float64();
const TypePtr& date32();
const TypePtr& date64();
const TypePtr& utf8();
const TypePtr& large_utf8();
const TypePtr& binary();
const TypePtr& large_binary();
// binary_view / string_view: each value a 16-byte view (length; up to 12
// bytes inline, else a 4-byte prefix, a buffer index and an offset into the
// variadic data buffers that follow the views buffer).
const TypePtr& binary_view();
const TypePtr& utf8_view();
// Decimals: a two's complement integer of `bit_width` bits (32, 64, 128 or
// 256), little-endian, scaled by 10^-scale. The precision must be at least 1
// and at most what the width holds: 9, 18, 38 or 76 digits;
// |scale| <= kMaxDecimalScale.
constexpr int32_t kMaxDecimalScale = 1024;
int32_t MaxDecimalPrecision(int bit_width);  // 0 for a width that is none of those
Result<TypePtr> MakeDecimal(int bit_width, int32_t precision, int32_t scale);
Result<TypePtr> MakeDecimal128(int32_t precision, int32_t scale);
// These abort if invalid.
TypePtr decimal32(int32_t precision, int32_t scale);
TypePtr decimal64(int32_t precision, int32_t scale);
TypePtr decimal128(int32_t precision, int32_t scale);
TypePtr decimal256(int32_t precision, int32_t scale);
// time32 takes s or ms; time64 takes us or ns.
Result<TypePtr> MakeTime32(TimeUnit unit);
Result<TypePtr> MakeTime64(TimeUnit unit);
TypePtr time32(TimeUnit unit);
TypePtr time64(TimeUnit unit);
TypePtr timestamp(TimeUnit unit, std::string timezone = "");
TypePtr duration(TimeUnit unit);
// month_interval, day_time_interval, month_day_nano_interval.
TypePtr interval(IntervalUnit unit);
const TypePtr& month_interval();
const TypePtr& day_time_interval();
const TypePtr& month_day_nano_interval();
Result<TypePtr> MakeFixedSizeBinary(int32_t byte_width);  // byte_width >= 0
TypePtr fixed_size_binary(int32_t byte_width);
TypePtr list(TypePtr value_type);  // value field "item", nullable
TypePtr list(FieldPtr value_field);
TypePtr large_list(TypePtr value_type);
TypePtr large_list(FieldPtr value_field);
TypePtr list_view(TypePtr value_type);  // value field "item", nullable
TypePtr list_view(FieldPtr value_field);
TypePtr large_list_view(TypePtr value_type);
TypePtr large_list_view(FieldPtr value_field);
Result<TypePtr> MakeFixedSizeList(FieldPtr value_field, int32_t list_size);
TypePtr fixed_size_list(TypePtr value_type, int32_t list_size);
TypePtr fixed_size_list(FieldPtr value_field, int32_t list_size);
TypePtr struct_(FieldVector fields);
// Map<key, item>: children = [entries: struct<key: K not null, value: V>].
TypePtr map(TypePtr key_type, TypePtr item_type, bool keys_sorted = false);
TypePtr map(TypePtr key_type, FieldPtr item_field, bool keys_sorted = false);
// A map from an explicit entries field (names as given); validated.
Result<TypePtr> MapFromEntries(FieldPtr entries_field, bool keys_sorted);
// Dictionary-encoded `value_type` with integer `index_type`.
Result<TypePtr> MakeDictionary(TypePtr index_type, TypePtr value_type,
                               bool ordered = false);
TypePtr dictionary(TypePtr index_type, TypePtr value_type, bool ordered = false);
// Run-end encoded `value_type` with run ends of `run_end_type` (int16, int32
// or int64): children "run_ends" (not nullable) and "values" (nullable).
Result<TypePtr> MakeRunEndEncoded(TypePtr run_end_type, TypePtr value_type);
TypePtr run_end_encoded(TypePtr run_end_type, TypePtr value_type);  // aborts if invalid
// Unions of `fields`, `type_codes[k]` the code of field k: distinct codes in
// [0, 127], at most 128 children. Empty `type_codes` means 0, 1, 2, ...
constexpr int kMaxUnionTypeCode = 127;
Result<TypePtr> MakeSparseUnion(FieldVector fields, std::vector<int8_t> type_codes = {});
Result<TypePtr> MakeDenseUnion(FieldVector fields, std::vector<int8_t> type_codes = {});
// These abort if invalid.
TypePtr sparse_union(FieldVector fields, std::vector<int8_t> type_codes = {});
TypePtr dense_union(FieldVector fields, std::vector<int8_t> type_codes = {});

FieldPtr field(std::string name, TypePtr type, bool nullable = true,
               MetadataPtr metadata = nullptr);
SchemaPtr schema(FieldVector fields, MetadataPtr metadata = nullptr,
                 Endianness endianness = Endianness::kLittle);

// ---- Classification ----
bool IsInteger(TypeId id);
bool IsSignedInteger(TypeId id);
bool IsUnsignedInteger(TypeId id);
bool IsFloating(TypeId id);
bool IsPrimitive(TypeId id);     // fixed-width values in one data buffer (incl. bool)
bool IsBaseBinary(TypeId id);    // string, large_string, binary, large_binary
bool IsLargeOffsets(TypeId id);  // large_string, large_binary, large_list
bool IsListLike(TypeId id);      // list, large_list, fixed_size_list, map
bool IsNested(TypeId id);        // has child arrays (unions included)
bool IsBinaryView(TypeId id);    // binary_view, string_view
bool IsUnion(TypeId id);         // sparse_union, dense_union
bool IsListView(TypeId id);      // list_view, large_list_view
bool IsRunEndType(TypeId id);    // int16, int32, int64: the run end types

// Number of buffers in the Arrow layout of a type (validity included; null
// has 0), as counted by IPC and the C Data Interface: LayoutOf(type)
// .num_wire_buffers() (quiver/columnar/layout.h, which describes each
// buffer). For views, the fixed part (validity and views): their variadic
// data buffers come after. Unions have no validity buffer in either
// (sparse 1: type ids; dense 2: type ids, offsets); in ArrayData they keep
// slot 0 for it, always null, so a union's ArrayData has
// LayoutBufferCount + 1 buffers. List views have 3 (validity, offsets,
// sizes). Run-end encoded arrays have 0 (their ArrayData keeps the null
// slot 0 as unions do).
int LayoutBufferCount(TypeId id);

// ---- Compile-time tags for templated arrays and builders ----
template <typename CType, TypeId kId>
struct PrimitiveTag {
  using c_type = CType;
  static constexpr TypeId type_id = kId;
};
using Int8Type = PrimitiveTag<int8_t, TypeId::kInt8>;
using Int16Type = PrimitiveTag<int16_t, TypeId::kInt16>;
using Int32Type = PrimitiveTag<int32_t, TypeId::kInt32>;
using Int64Type = PrimitiveTag<int64_t, TypeId::kInt64>;
using UInt8Type = PrimitiveTag<uint8_t, TypeId::kUInt8>;
using UInt16Type = PrimitiveTag<uint16_t, TypeId::kUInt16>;
using UInt32Type = PrimitiveTag<uint32_t, TypeId::kUInt32>;
using UInt64Type = PrimitiveTag<uint64_t, TypeId::kUInt64>;
using HalfFloatType = PrimitiveTag<uint16_t, TypeId::kHalfFloat>;  // IEEE binary16 bits
using FloatType = PrimitiveTag<float, TypeId::kFloat>;
using DoubleType = PrimitiveTag<double, TypeId::kDouble>;
using Date32Type = PrimitiveTag<int32_t, TypeId::kDate32>;
using Date64Type = PrimitiveTag<int64_t, TypeId::kDate64>;
using Time32Type = PrimitiveTag<int32_t, TypeId::kTime32>;
using Time64Type = PrimitiveTag<int64_t, TypeId::kTime64>;
using TimestampType = PrimitiveTag<int64_t, TypeId::kTimestamp>;
using DurationType = PrimitiveTag<int64_t, TypeId::kDuration>;

}  // namespace quiver
