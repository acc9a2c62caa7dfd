// Typed, immutable views over ArrayData.
//
// MakeArray(data) returns the Array subclass that matches data->type
// (Int64Array, StringArray, ListArray, ...). Accessors take logical indices
// (0 .. length()-1), already adjusted for the array's offset. Arrays are
// immutable and safe to read from several threads. Accessors do not check
// bounds; call Validate()/ValidateFull() on untrusted data first.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "quiver/columnar/array_data.h"
#include "quiver/columnar/bit_util.h"
#include "quiver/columnar/decimal.h"

namespace quiver {

class Array;
using ArrayPtr = std::shared_ptr<Array>;

class Array {
 public:
  explicit Array(ArrayDataPtr data) : data_(std::move(data)) {}
  virtual ~Array() = default;

  const ArrayDataPtr& data() const { return data_; }
  const TypePtr& type() const { return data_->type; }
  TypeId type_id() const { return data_->type->id(); }
  int64_t length() const { return data_->length; }
  int64_t offset() const { return data_->offset; }
  int64_t null_count() const { return data_->GetNullCount(); }
  bool IsNull(int64_t i) const { return data_->IsNull(i); }
  bool IsValid(int64_t i) const { return data_->IsValid(i); }
  // Validity bitmap (not offset-adjusted) or null when there are no nulls.
  const uint8_t* null_bitmap_data() const {
    return data_->null_count == 0 ? nullptr : data_->GetBuffer(0);
  }

  // Zero-copy slice; `length` is clamped to the end of the array.
  ArrayPtr Slice(int64_t offset, int64_t length) const;
  ArrayPtr Slice(int64_t offset) const { return Slice(offset, length() - offset); }

  // Logical equality: same type, length, validity and values (offsets and
  // the bytes behind null slots do not matter).
  bool Equals(const Array& other) const;
  bool Equals(const ArrayPtr& other) const { return other && Equals(*other); }
  // Equality of [start, end) of this with other starting at other_start.
  bool RangeEquals(int64_t start, int64_t end, int64_t other_start,
                   const Array& other) const;

  // Cheap structural checks (buffer sizes, child lengths): O(1) per buffer.
  Status Validate() const;
  // Validate plus every offset, dictionary index and UTF-8 sequence: O(n).
  Status ValidateFull() const;

  // Arrow-style pretty printing, e.g. "[\n  1,\n  null\n]".
  std::string ToString() const;

 protected:
  ArrayDataPtr data_;
};

// Makes the typed Array for `data`.
ArrayPtr MakeArray(ArrayDataPtr data);
// An all-null array of `type` and `length`, allocated from `pool`.
Result<ArrayPtr> MakeArrayOfNull(const TypePtr& type, int64_t length,
                                 MemoryPool* pool = nullptr);
// An empty (0-length) array of `type`.
Result<ArrayPtr> MakeEmptyArray(const TypePtr& type, MemoryPool* pool = nullptr);

class NullArray : public Array {
 public:
  using Array::Array;
  explicit NullArray(int64_t length);
};

class BooleanArray : public Array {
 public:
  using Array::Array;
  bool Value(int64_t i) const {
    return bit_util::GetBit(data_->GetBuffer(1), data_->offset + i);
  }
  int64_t true_count() const;   // valid and true
  int64_t false_count() const;  // valid and false
};

template <typename Tag>
class NumericArray : public Array {
 public:
  using TypeClass = Tag;
  using value_type = typename Tag::c_type;
  using Array::Array;
  const value_type* raw_values() const {
    return data_->template GetValues<value_type>(1);
  }
  value_type Value(int64_t i) const { return raw_values()[i]; }
};

using Int8Array = NumericArray<Int8Type>;
using Int16Array = NumericArray<Int16Type>;
using Int32Array = NumericArray<Int32Type>;
using Int64Array = NumericArray<Int64Type>;
using UInt8Array = NumericArray<UInt8Type>;
using UInt16Array = NumericArray<UInt16Type>;
using UInt32Array = NumericArray<UInt32Type>;
using UInt64Array = NumericArray<UInt64Type>;
using HalfFloatArray = NumericArray<HalfFloatType>;
using FloatArray = NumericArray<FloatType>;
using DoubleArray = NumericArray<DoubleType>;
using Date32Array = NumericArray<Date32Type>;
using Date64Array = NumericArray<Date64Type>;
using Time32Array = NumericArray<Time32Type>;
using Time64Array = NumericArray<Time64Type>;
using TimestampArray = NumericArray<TimestampType>;
using DurationArray = NumericArray<DurationType>;

class FixedSizeBinaryArray : public Array {
 public:
  using Array::Array;
  int32_t byte_width() const { return data_->type->bit_width() / 8; }
  const uint8_t* GetValue(int64_t i) const {
    return data_->GetBuffer(1) + (data_->offset + i) * byte_width();
  }
  std::string_view GetView(int64_t i) const {
    return {reinterpret_cast<const char*>(GetValue(i)),
            static_cast<size_t>(byte_width())};
  }
};

// Decimals of every width (decimal32/64/128/256).
class DecimalArray : public FixedSizeBinaryArray {
 public:
  using FixedSizeBinaryArray::FixedSizeBinaryArray;
  // The value as a Decimal128: sign-extended from decimal32/64; for
  // decimal256, only when it fits (else use FormatValue or the bytes).
  Decimal128 Value(int64_t i) const { return LoadDecimal128(GetValue(i), byte_width()); }
  std::string FormatValue(int64_t i) const {
    return FormatDecimal(GetValue(i), byte_width(), data_->type->scale());
  }
};
using Decimal128Array = DecimalArray;

// The value of a day_time interval: days and milliseconds.
struct DayTimeInterval {
  int32_t days = 0;
  int32_t milliseconds = 0;
  bool operator==(const DayTimeInterval&) const = default;
};
// The value of a month_day_nano interval.
struct MonthDayNanoInterval {
  int32_t months = 0;
  int32_t days = 0;
  int64_t nanoseconds = 0;
  bool operator==(const MonthDayNanoInterval&) const = default;
};

// One interval value of `unit` at `value` as text: "13M", "2d3ms",
// "1M2d3ns" (Arrow C++'s forms).
std::string FormatInterval(IntervalUnit unit, const uint8_t* value);

// Intervals of any unit (type()->interval_unit() says which accessor fits).
class IntervalArray : public FixedSizeBinaryArray {
 public:
  using FixedSizeBinaryArray::FixedSizeBinaryArray;
  int32_t GetMonths(int64_t i) const;  // month_interval
  DayTimeInterval GetDayTime(int64_t i) const;
  MonthDayNanoInterval GetMonthDayNano(int64_t i) const;
  std::string FormatValue(int64_t i) const {
    return FormatInterval(type()->interval_unit(), GetValue(i));
  }
};

// Variable-size binary and string arrays with 32- or 64-bit offsets.
template <typename OffsetType>
class BaseBinaryArray : public Array {
 public:
  using offset_type = OffsetType;
  using Array::Array;
  const OffsetType* raw_value_offsets() const {
    return data_->template GetValues<OffsetType>(1);
  }
  const uint8_t* raw_data() const { return data_->GetBuffer(2); }
  OffsetType value_offset(int64_t i) const { return raw_value_offsets()[i]; }
  OffsetType value_length(int64_t i) const {
    return raw_value_offsets()[i + 1] - raw_value_offsets()[i];
  }
  std::string_view GetView(int64_t i) const {
    const OffsetType* o = raw_value_offsets();
    return {reinterpret_cast<const char*>(raw_data()) + o[i],
            static_cast<size_t>(o[i + 1] - o[i])};
  }
  std::string GetString(int64_t i) const { return std::string(GetView(i)); }
  // Total bytes of data spanned by the array's values.
  int64_t total_values_length() const {
    return length() == 0 ? 0 : value_offset(length()) - value_offset(0);
  }
};

using BinaryArray = BaseBinaryArray<int32_t>;
using StringArray = BaseBinaryArray<int32_t>;
using LargeBinaryArray = BaseBinaryArray<int64_t>;
using LargeStringArray = BaseBinaryArray<int64_t>;

// binary_view / string_view: buffer 1 holds a 16-byte view per value
// (int32 length; a value of at most 12 bytes inline after it; a longer one
// as a 4-byte prefix, an int32 index into the data buffers 2.. and an int32
// offset there). GetView trusts the views: ValidateFull checks them.
class BinaryViewArray : public Array {
 public:
  static constexpr int kInlineBytes = 12;
  using Array::Array;
  const uint8_t* raw_view(int64_t i) const {
    return data_->GetBuffer(1) + (data_->offset + i) * 16;
  }
  int32_t value_length(int64_t i) const {
    int32_t n;
    std::memcpy(&n, raw_view(i), 4);
    return n;
  }
  std::string_view GetView(int64_t i) const {
    const uint8_t* v = raw_view(i);
    int32_t n, index, offset;
    std::memcpy(&n, v, 4);
    if (n <= kInlineBytes) {
      return {reinterpret_cast<const char*>(v + 4), static_cast<size_t>(n)};
    }
    std::memcpy(&index, v + 8, 4);
    std::memcpy(&offset, v + 12, 4);
    return {reinterpret_cast<const char*>(data_->GetBuffer(2 + index)) + offset,
            static_cast<size_t>(n)};
  }
  std::string GetString(int64_t i) const { return std::string(GetView(i)); }
  // Number of variadic data buffers.
  int64_t num_data_buffers() const {
    return static_cast<int64_t>(data_->buffers.size()) - 2;
  }
};
using StringViewArray = BinaryViewArray;

// list / large_list / map: offsets into one child array.
template <typename OffsetType>
class BaseListArray : public Array {
 public:
  using offset_type = OffsetType;
  explicit BaseListArray(ArrayDataPtr data);
  const ArrayPtr& values() const { return values_; }
  const TypePtr& value_type() const { return data_->type->value_type(); }
  const OffsetType* raw_value_offsets() const {
    return data_->template GetValues<OffsetType>(1);
  }
  OffsetType value_offset(int64_t i) const { return raw_value_offsets()[i]; }
  OffsetType value_length(int64_t i) const {
    return raw_value_offsets()[i + 1] - raw_value_offsets()[i];
  }
  // The i-th list as a zero-copy slice of values().
  ArrayPtr value_slice(int64_t i) const {
    return values_->Slice(value_offset(i), value_length(i));
  }

 protected:
  ArrayPtr values_;
};

using ListArray = BaseListArray<int32_t>;
using LargeListArray = BaseListArray<int64_t>;

// list_view / large_list_view. Buffer 1: an offset per slot into values(),
// buffer 2: a size per slot. Views may overlap and come in any order.
template <typename OffsetType>
class BaseListViewArray : public Array {
 public:
  using offset_type = OffsetType;
  explicit BaseListViewArray(ArrayDataPtr data);
  // The child whole (not sliced: offsets index it directly).
  const ArrayPtr& values() const { return values_; }
  const TypePtr& value_type() const { return data_->type->value_type(); }
  const OffsetType* raw_value_offsets() const {
    return data_->template GetValues<OffsetType>(1);
  }
  const OffsetType* raw_value_sizes() const {
    return data_->template GetValues<OffsetType>(2);
  }
  OffsetType value_offset(int64_t i) const { return raw_value_offsets()[i]; }
  OffsetType value_length(int64_t i) const { return raw_value_sizes()[i]; }
  // The i-th list as a zero-copy slice of values().
  ArrayPtr value_slice(int64_t i) const {
    return values_->Slice(value_offset(i), value_length(i));
  }

  // A list view of `values`: slot i views values[offsets[i], +sizes[i]),
  // null where `valid` (if not empty) is false. `type` nullptr: a list view
  // of values' type, field "item". Checked in full (ValidateFull).
  static Result<std::shared_ptr<BaseListViewArray>> Make(
      const std::vector<OffsetType>& offsets, const std::vector<OffsetType>& sizes,
      const ArrayPtr& values, const std::vector<bool>& valid = {},
      TypePtr type = nullptr);

 protected:
  ArrayPtr values_;
};

using ListViewArray = BaseListViewArray<int32_t>;
using LargeListViewArray = BaseListViewArray<int64_t>;

class MapArray : public ListArray {
 public:
  explicit MapArray(ArrayDataPtr data);
  // The key and item children of the entries struct (same indexing as values()).
  const ArrayPtr& keys() const { return keys_; }
  const ArrayPtr& items() const { return items_; }

 private:
  ArrayPtr keys_;
  ArrayPtr items_;
};

class FixedSizeListArray : public Array {
 public:
  explicit FixedSizeListArray(ArrayDataPtr data);
  const ArrayPtr& values() const { return values_; }
  int32_t list_size() const { return data_->type->list_size(); }
  int64_t value_offset(int64_t i) const { return (data_->offset + i) * list_size(); }
  ArrayPtr value_slice(int64_t i) const {
    return values_->Slice(value_offset(i), list_size());
  }

 private:
  ArrayPtr values_;
};

class StructArray : public Array {
 public:
  explicit StructArray(ArrayDataPtr data);
  int num_fields() const { return static_cast<int>(data_->child_data.size()); }
  // The i-th child, sliced to this array's offset and length.
  ArrayPtr field(int i) const;
  ArrayPtr GetFieldByName(std::string_view name) const;
  // Makes a struct array from equally long children (no validity bitmap).
  static Result<std::shared_ptr<StructArray>> Make(const std::vector<ArrayPtr>& children,
                                                   const std::vector<std::string>& names);
};

// sparse_union / dense_union. Buffer 1: an int8 type code per slot; for
// dense, buffer 2: an int32 offset per slot into the child of that code.
// Slot 0 (validity) is always null: a union's nulls are its children's.
// Sparse children are indexed at the union's offset + i, as a struct's are.
class UnionArray : public Array {
 public:
  explicit UnionArray(ArrayDataPtr data);
  bool is_dense() const { return type_id() == TypeId::kDenseUnion; }
  int num_fields() const { return static_cast<int>(data_->child_data.size()); }
  const int8_t* raw_type_codes() const { return data_->GetValues<int8_t>(1); }
  int8_t type_code(int64_t i) const { return raw_type_codes()[i]; }
  // Index of the child that holds slot i.
  int child_id(int64_t i) const { return data_->type->child_id(type_code(i)); }
  // Dense only: the position of slot i's value in its child.
  int32_t value_offset(int64_t i) const { return data_->GetValues<int32_t>(2)[i]; }
  // The index in child_id(i)'s child array of slot i's value.
  int64_t child_index(int64_t i) const {
    return is_dense() ? value_offset(i) : data_->offset + i;
  }
  // Child k whole (not sliced: dense offsets and the sparse offset index it).
  ArrayPtr field(int k) const { return MakeArray(data_->child_data[k]); }
  // Slot i is null when its value in its child is.
  bool IsNullValue(int64_t i) const {
    return data_->child_data[child_id(i)]->IsNull(child_index(i));
  }

  // A sparse union of `type_codes` (one per slot) over `children`, each as
  // long as the union; `type` a sparse_union whose fields match the children
  // (nullptr: fields "0", "1", ... with codes 0, 1, ...). Checked (Validate).
  static Result<std::shared_ptr<UnionArray>> MakeSparse(
      const std::vector<int8_t>& type_codes, const std::vector<ArrayPtr>& children,
      TypePtr type = nullptr);
  // A dense union: slot i is value `offsets[i]` of the child of `type_codes[i]`.
  // Checked in full (ValidateFull).
  static Result<std::shared_ptr<UnionArray>> MakeDense(
      const std::vector<int8_t>& type_codes, const std::vector<int32_t>& offsets,
      const std::vector<ArrayPtr>& children, TypePtr type = nullptr);
};

// run_end_encoded<run_ends: R, values: V>. Child 0: the run ends (int16,
// int32 or int64, increasing; run k covers the logical positions from run
// end k-1 (0 for the first) up to run end k), child 1: one value per run.
// No buffers of its own: slot 0 (validity) is always null and null_count 0;
// slot i is null when its run's value is. Slot i of a slice is position
// offset() + i of the runs: run ends count from the children's start.
class RunEndEncodedArray : public Array {
 public:
  explicit RunEndEncodedArray(ArrayDataPtr data);
  // The children whole (not sliced by the array's offset).
  const ArrayPtr& run_ends() const { return run_ends_; }
  const ArrayPtr& values() const { return values_; }
  // Run end k (of run_ends()) as int64.
  int64_t run_end(int64_t k) const;
  // The index into values() of slot i (0 <= i < length()): the first run
  // whose end lies beyond offset() + i, found by binary search.
  int64_t FindPhysicalIndex(int64_t i) const;
  // The runs the array's slots [0, length()) lie in: from
  // FindPhysicalOffset(), FindPhysicalLength() of them (0 when empty).
  int64_t FindPhysicalOffset() const;
  int64_t FindPhysicalLength() const;
  // Slot i is null when the value of its run is.
  bool IsNullValue(int64_t i) const { return values_->IsNull(FindPhysicalIndex(i)); }

  // `length` slots over `run_ends` (int16, int32 or int64) and `values`
  // (one per run), starting at logical position `offset` of the runs.
  // Checked in full (ValidateFull).
  static Result<std::shared_ptr<RunEndEncodedArray>> Make(int64_t length,
                                                          const ArrayPtr& run_ends,
                                                          const ArrayPtr& values,
                                                          int64_t offset = 0);

 private:
  ArrayPtr run_ends_;
  ArrayPtr values_;
};

class DictionaryArray : public Array {
 public:
  explicit DictionaryArray(ArrayDataPtr data);
  const ArrayPtr& indices() const { return indices_; }
  const ArrayPtr& dictionary() const { return dictionary_; }
  // The index stored at i as int64 (caller checks IsValid(i)).
  int64_t GetValueIndex(int64_t i) const;

 private:
  ArrayPtr indices_;
  ArrayPtr dictionary_;
};

}  // namespace quiver
