// Builders: append values one by one or in bulk, then Finish() an Array.
//
// Every builder allocates all of its buffers through the MemoryPool given at
// construction, so building into a cluster-memory pool writes Arrow data
// straight into shared memory. Finish() hands the buffers over (shrunk to
// fit, padding zeroed) and resets the builder for reuse. A failed call
// leaves the builder usable and its contents unchanged. Builders are not
// thread-safe.
//
// Nested builders own their child builders: append to the child after
// Append() on the parent (list, map, fixed_size_list, struct).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "quiver/columnar/array.h"
#include "quiver/columnar/buffer_builder.h"

namespace quiver {

class ArrayBuilder {
 public:
  ArrayBuilder(TypePtr type, MemoryPool* pool);
  virtual ~ArrayBuilder() = default;
  ArrayBuilder(const ArrayBuilder&) = delete;
  ArrayBuilder& operator=(const ArrayBuilder&) = delete;

  const TypePtr& type() const { return type_; }
  MemoryPool* pool() const { return pool_; }
  int64_t length() const { return length_; }
  int64_t null_count() const { return null_count_; }
  int64_t capacity() const { return capacity_; }

  // Room for `additional` more values of this builder (not of its children).
  Status Reserve(int64_t additional);
  virtual Status AppendNull() { return AppendNulls(1); }
  virtual Status AppendNulls(int64_t n) = 0;
  // A valid "empty" value: 0, "", [], a struct of empty values.
  virtual Status AppendEmptyValue() { return AppendEmptyValues(1); }
  virtual Status AppendEmptyValues(int64_t n) = 0;

  // The finished array; the builder is reset and can be reused.
  Result<ArrayPtr> Finish();
  Status Finish(ArrayPtr* out);
  virtual Status FinishInternal(ArrayDataPtr* out) = 0;
  // Drops everything appended so far.
  virtual void Reset();

  int num_children() const { return static_cast<int>(children_.size()); }
  ArrayBuilder* child(int i) const { return children_[i].get(); }

 protected:
  // Grows the value storage to hold `capacity` values in total.
  virtual Status Resize(int64_t capacity);
  // Reserve for the values of subclasses (not the validity bitmap).
  Status ReserveValidity(int64_t additional) { return validity_.Reserve(additional); }
  void UnsafeAppendToBitmap(bool valid) {
    validity_.UnsafeAppend(valid);
    ++length_;
    null_count_ += valid ? 0 : 1;
  }
  void UnsafeAppendToBitmap(int64_t n, bool valid) {
    validity_.UnsafeAppend(n, valid);
    length_ += n;
    null_count_ += valid ? 0 : n;
  }
  // Appends validity from bytes (nonzero = valid) or all-valid when null.
  void UnsafeAppendToBitmap(const uint8_t* valid_bytes, int64_t n);
  void UnsafeAppendToBitmap(const std::vector<bool>& is_valid);
  // Finishes the validity bitmap; null when there are no nulls.
  Result<std::shared_ptr<Buffer>> FinishValidity();

  TypePtr type_;
  MemoryPool* pool_;
  BitmapBuilder validity_;
  int64_t length_ = 0;
  int64_t null_count_ = 0;
  int64_t capacity_ = 0;
  std::vector<std::shared_ptr<ArrayBuilder>> children_;
};

// Makes the builder for any supported type, with child builders for nested
// types and a DictionaryBuilder for dictionary types.
Result<std::unique_ptr<ArrayBuilder>> MakeBuilder(const TypePtr& type,
                                                  MemoryPool* pool = nullptr);

class NullBuilder : public ArrayBuilder {
 public:
  explicit NullBuilder(MemoryPool* pool = nullptr);
  Status AppendNulls(int64_t n) override;
  Status AppendEmptyValues(int64_t n) override { return AppendNulls(n); }
  Status FinishInternal(ArrayDataPtr* out) override;
};

class BooleanBuilder : public ArrayBuilder {
 public:
  explicit BooleanBuilder(MemoryPool* pool = nullptr);
  Status Append(bool value);
  void UnsafeAppend(bool value) {
    values_.UnsafeAppend(value);
    UnsafeAppendToBitmap(true);
  }
  // values[i] != 0 is true; valid_bytes (optional) nonzero = valid.
  Status AppendValues(const uint8_t* values, int64_t n,
                      const uint8_t* valid_bytes = nullptr);
  Status AppendValues(const std::vector<bool>& values,
                      const std::vector<bool>& is_valid = {});
  Status AppendNulls(int64_t n) override;
  Status AppendEmptyValues(int64_t n) override;
  Status FinishInternal(ArrayDataPtr* out) override;
  void Reset() override;

 protected:
  Status Resize(int64_t capacity) override;

 private:
  BitmapBuilder values_;
};

// Fixed-width primitive values: integers, floats, half floats (as uint16
// bits), dates, times, timestamps, durations. Parametric types (time,
// timestamp, duration) take their DataType in the constructor.
template <typename Tag>
class NumericBuilder : public ArrayBuilder {
 public:
  using value_type = typename Tag::c_type;

  explicit NumericBuilder(MemoryPool* pool = nullptr);
  NumericBuilder(TypePtr type, MemoryPool* pool);

  Status Append(value_type v) {
    QUIVER_RETURN_NOT_OK(Reserve(1));
    UnsafeAppend(v);
    return Status::OK();
  }
  void UnsafeAppend(value_type v) {
    values_.UnsafeAppend(v);
    UnsafeAppendToBitmap(true);
  }
  void UnsafeAppendNull() {
    values_.UnsafeAppend(value_type{});
    UnsafeAppendToBitmap(false);
  }
  // Appends n values; valid_bytes (optional) nonzero = valid.
  Status AppendValues(const value_type* values, int64_t n,
                      const uint8_t* valid_bytes = nullptr);
  Status AppendValues(const std::vector<value_type>& values,
                      const std::vector<bool>& is_valid = {});
  Status AppendNulls(int64_t n) override;
  Status AppendEmptyValues(int64_t n) override;
  Status FinishInternal(ArrayDataPtr* out) override;
  void Reset() override;
  value_type GetValue(int64_t i) const { return values_.data()[i]; }

 protected:
  Status Resize(int64_t capacity) override;

 private:
  TypedBufferBuilder<value_type> values_;
};

using Int8Builder = NumericBuilder<Int8Type>;
using Int16Builder = NumericBuilder<Int16Type>;
using Int32Builder = NumericBuilder<Int32Type>;
using Int64Builder = NumericBuilder<Int64Type>;
using UInt8Builder = NumericBuilder<UInt8Type>;
using UInt16Builder = NumericBuilder<UInt16Type>;
using UInt32Builder = NumericBuilder<UInt32Type>;
using UInt64Builder = NumericBuilder<UInt64Type>;
using HalfFloatBuilder = NumericBuilder<HalfFloatType>;
using FloatBuilder = NumericBuilder<FloatType>;
using DoubleBuilder = NumericBuilder<DoubleType>;
using Date32Builder = NumericBuilder<Date32Type>;
using Date64Builder = NumericBuilder<Date64Type>;
using Time32Builder = NumericBuilder<Time32Type>;
using Time64Builder = NumericBuilder<Time64Type>;
using TimestampBuilder = NumericBuilder<TimestampType>;
using DurationBuilder = NumericBuilder<DurationType>;

class FixedSizeBinaryBuilder : public ArrayBuilder {
 public:
  FixedSizeBinaryBuilder(TypePtr type, MemoryPool* pool = nullptr);
  // `value` must be exactly byte_width() bytes (checked).
  Status Append(std::string_view value);
  Status Append(const uint8_t* value);  // byte_width() bytes
  // n values of byte_width() bytes each, packed.
  Status AppendValues(const uint8_t* data, int64_t n,
                      const uint8_t* valid_bytes = nullptr);
  Status AppendNulls(int64_t n) override;
  Status AppendEmptyValues(int64_t n) override;
  Status FinishInternal(ArrayDataPtr* out) override;
  void Reset() override;
  int32_t byte_width() const { return byte_width_; }

 protected:
  Status Resize(int64_t capacity) override;
  BufferBuilder bytes_;
  int32_t byte_width_;
};

// Decimals of every width (decimal32/64/128/256).
class DecimalBuilder : public FixedSizeBinaryBuilder {
 public:
  DecimalBuilder(TypePtr type, MemoryPool* pool = nullptr);
  // Fails if the value has more digits than the type's precision.
  Status Append(const Decimal128& value);
  // "-123.45", read at the type's scale (any width, decimal256's 76 digits
  // too); fails as Append does, or on bad syntax.
  Status AppendString(std::string_view text);
  using FixedSizeBinaryBuilder::Append;
};
using Decimal128Builder = DecimalBuilder;

// Intervals of the builder's type's unit; appending another unit's value
// is a TypeError.
class IntervalBuilder : public FixedSizeBinaryBuilder {
 public:
  IntervalBuilder(TypePtr type, MemoryPool* pool = nullptr);
  Status AppendMonths(int32_t months);
  Status Append(const DayTimeInterval& value);
  Status Append(const MonthDayNanoInterval& value);
  using FixedSizeBinaryBuilder::Append;

 private:
  Status Expect(IntervalUnit unit) const;
};

template <typename OffsetType>
class BaseBinaryBuilder : public ArrayBuilder {
 public:
  using offset_type = OffsetType;
  BaseBinaryBuilder(TypePtr type, MemoryPool* pool);

  Status Append(std::string_view value) {
    return Append(reinterpret_cast<const uint8_t*>(value.data()),
                  static_cast<int64_t>(value.size()));
  }
  Status Append(const uint8_t* value, int64_t length);
  Status AppendValues(const std::vector<std::string>& values,
                      const std::vector<bool>& is_valid = {});
  Status AppendNulls(int64_t n) override;
  Status AppendEmptyValues(int64_t n) override;
  // Room for `bytes` more bytes of value data.
  Status ReserveData(int64_t bytes) { return data_.Reserve(bytes); }
  int64_t value_data_length() const { return data_.size(); }
  Status FinishInternal(ArrayDataPtr* out) override;
  void Reset() override;

 protected:
  Status Resize(int64_t capacity) override;

 private:
  Status AppendNextOffset();
  TypedBufferBuilder<OffsetType> offsets_;
  BufferBuilder data_;
};

// binary_view / string_view. Values of at most 12 bytes go inline in their
// view; longer ones into data blocks of `block_size` bytes (a value longer
// than that gets a block of its own), each a variadic buffer of the array.
class BinaryViewBuilder : public ArrayBuilder {
 public:
  static constexpr int64_t kDefaultBlockSize = int64_t{1} << 20;
  BinaryViewBuilder(TypePtr type, MemoryPool* pool = nullptr,
                    int64_t block_size = kDefaultBlockSize);
  Status Append(std::string_view value);
  Status AppendNulls(int64_t n) override;
  Status AppendEmptyValues(int64_t n) override;
  Status FinishInternal(ArrayDataPtr* out) override;
  void Reset() override;

 protected:
  Status Resize(int64_t capacity) override;

 private:
  Status AppendViews(int64_t n, bool valid);
  int64_t block_size_;
  BufferBuilder views_;
  BufferBuilder block_;                          // the data block being filled
  std::vector<std::shared_ptr<Buffer>> blocks_;  // finished data blocks
};

class BinaryBuilder : public BaseBinaryBuilder<int32_t> {
 public:
  explicit BinaryBuilder(MemoryPool* pool = nullptr)
      : BaseBinaryBuilder(binary(), pool) {}
};
class StringBuilder : public BaseBinaryBuilder<int32_t> {
 public:
  explicit StringBuilder(MemoryPool* pool = nullptr) : BaseBinaryBuilder(utf8(), pool) {}
};
class LargeBinaryBuilder : public BaseBinaryBuilder<int64_t> {
 public:
  explicit LargeBinaryBuilder(MemoryPool* pool = nullptr)
      : BaseBinaryBuilder(large_binary(), pool) {}
};
class LargeStringBuilder : public BaseBinaryBuilder<int64_t> {
 public:
  explicit LargeStringBuilder(MemoryPool* pool = nullptr)
      : BaseBinaryBuilder(large_utf8(), pool) {}
};

// What list and list-view builders share: one child, and per slot the
// offset where the child stood when the slot was appended. Append() opens a
// slot at the end of the values appended so far to value_builder().
template <typename OffsetType>
class BaseOffsetListBuilder : public ArrayBuilder {
 public:
  Status Append(bool is_valid = true);
  Status AppendNulls(int64_t n) override;
  Status AppendEmptyValues(int64_t n) override;
  ArrayBuilder* value_builder() const { return children_[0].get(); }
  void Reset() override;

 protected:
  // `extra_offsets`: offsets kept beyond one per slot (a list's closing one).
  BaseOffsetListBuilder(MemoryPool* pool, std::shared_ptr<ArrayBuilder> value_builder,
                        TypePtr type, TypeId expected, const char* kind,
                        int64_t extra_offsets);
  Status Resize(int64_t capacity) override;
  Status AppendNextOffset();
  TypedBufferBuilder<OffsetType> offsets_;

 private:
  int64_t extra_offsets_;
};

// list<T> and large_list<T>: Append() opens a list; then append its
// elements to value_builder().
template <typename OffsetType>
class BaseListBuilder : public BaseOffsetListBuilder<OffsetType> {
 public:
  // `type` defaults to list/large_list of value_builder's type.
  BaseListBuilder(MemoryPool* pool, std::shared_ptr<ArrayBuilder> value_builder,
                  TypePtr type = nullptr);
  // Appends n lists given by n offsets into values already appended to
  // value_builder() (offsets[i] is where list i starts; the last list ends at
  // value_builder()->length()).
  Status AppendValues(const OffsetType* offsets, int64_t n,
                      const uint8_t* valid_bytes = nullptr);
  Status FinishInternal(ArrayDataPtr* out) override;
};

class ListBuilder : public BaseListBuilder<int32_t> {
 public:
  using BaseListBuilder::BaseListBuilder;
};
class LargeListBuilder : public BaseListBuilder<int64_t> {
 public:
  using BaseListBuilder::BaseListBuilder;
};

// list_view / large_list_view: Append() opens a list at the end of the
// values appended so far to value_builder(); it ends where the next one
// starts (views in order: Make builds any other shape).
template <typename OffsetType>
class BaseListViewBuilder : public BaseOffsetListBuilder<OffsetType> {
 public:
  // `type` defaults to list_view/large_list_view of value_builder's type.
  BaseListViewBuilder(MemoryPool* pool, std::shared_ptr<ArrayBuilder> value_builder,
                      TypePtr type = nullptr);
  Status FinishInternal(ArrayDataPtr* out) override;
};

class ListViewBuilder : public BaseListViewBuilder<int32_t> {
 public:
  using BaseListViewBuilder::BaseListViewBuilder;
};
class LargeListViewBuilder : public BaseListViewBuilder<int64_t> {
 public:
  using BaseListViewBuilder::BaseListViewBuilder;
};

// map<K, V>: Append() opens a map; then append the same number of keys to
// key_builder() and items to item_builder().
class MapBuilder : public ArrayBuilder {
 public:
  MapBuilder(MemoryPool* pool, std::shared_ptr<ArrayBuilder> key_builder,
             std::shared_ptr<ArrayBuilder> item_builder, bool keys_sorted = false);
  MapBuilder(MemoryPool* pool, std::shared_ptr<ArrayBuilder> key_builder,
             std::shared_ptr<ArrayBuilder> item_builder, TypePtr type);
  Status Append();
  Status AppendNulls(int64_t n) override;
  Status AppendEmptyValues(int64_t n) override;
  ArrayBuilder* key_builder() const { return key_builder_.get(); }
  ArrayBuilder* item_builder() const { return item_builder_.get(); }
  Status FinishInternal(ArrayDataPtr* out) override;
  void Reset() override;

 protected:
  Status Resize(int64_t capacity) override;

 private:
  Status AdjustEntries();
  std::shared_ptr<ArrayBuilder> key_builder_;
  std::shared_ptr<ArrayBuilder> item_builder_;
  TypedBufferBuilder<int32_t> offsets_;
};

// fixed_size_list<T>[n]: Append() then exactly n values to value_builder();
// AppendNull() appends n nulls to the child itself.
class FixedSizeListBuilder : public ArrayBuilder {
 public:
  FixedSizeListBuilder(MemoryPool* pool, std::shared_ptr<ArrayBuilder> value_builder,
                       int32_t list_size);
  FixedSizeListBuilder(MemoryPool* pool, std::shared_ptr<ArrayBuilder> value_builder,
                       TypePtr type);
  Status Append();
  Status AppendNulls(int64_t n) override;
  Status AppendEmptyValues(int64_t n) override;
  ArrayBuilder* value_builder() const { return children_[0].get(); }
  int32_t list_size() const { return list_size_; }
  Status FinishInternal(ArrayDataPtr* out) override;

 private:
  int32_t list_size_;
};

// struct<...>: Append() then one value to every field_builder(i);
// AppendNull() appends a null (or an empty value for non-nullable fields) to
// every child itself.
class StructBuilder : public ArrayBuilder {
 public:
  StructBuilder(TypePtr type, MemoryPool* pool,
                std::vector<std::shared_ptr<ArrayBuilder>> field_builders);
  Status Append(bool is_valid = true);
  Status AppendNulls(int64_t n) override;
  Status AppendEmptyValues(int64_t n) override;
  ArrayBuilder* field_builder(int i) const { return children_[i].get(); }
  int num_fields() const { return num_children(); }
  Status FinishInternal(ArrayDataPtr* out) override;
};

// sparse_union / dense_union: Append(type_code) starts a slot, then append
// its value to child_builder(type code's child). For a sparse union the
// other children get an empty value at once (they must be as long as the
// union). A null slot is a null of the first child (an empty value if that
// field is not nullable): unions have no validity bitmap of their own.
class UnionBuilder : public ArrayBuilder {
 public:
  UnionBuilder(TypePtr type, MemoryPool* pool,
               std::vector<std::shared_ptr<ArrayBuilder>> child_builders);
  Status Append(int8_t type_code);
  Status AppendNulls(int64_t n) override;
  Status AppendEmptyValues(int64_t n) override;
  ArrayBuilder* child_builder(int k) const { return children_[k].get(); }
  // The builder of the child of `type_code` (null if no child has it).
  ArrayBuilder* builder_for(int8_t type_code) const;
  Status FinishInternal(ArrayDataPtr* out) override;
  void Reset() override;

 protected:
  Status Resize(int64_t capacity) override;

 private:
  bool dense() const { return type_->id() == TypeId::kDenseUnion; }
  Status AppendSlots(int64_t n, bool null);
  BufferBuilder codes_;
  BufferBuilder offsets_;  // dense
};

// run_end_encoded<run_ends: R, values: V>: Append(n) opens a run of n
// slots; then append its one value to value_builder(). AppendNulls(n) and
// AppendEmptyValues(n) add a run of n slots with that value themselves.
// Every call makes one run (runs are not merged); ExtendRun(n) adds n slots
// to the last run instead.
class RunEndEncodedBuilder : public ArrayBuilder {
 public:
  // `type` defaults to run_end_encoded(run_end_type, value_builder's type).
  RunEndEncodedBuilder(MemoryPool* pool, std::shared_ptr<ArrayBuilder> value_builder,
                       TypePtr run_end_type, TypePtr type = nullptr);
  Status Append(int64_t run_length = 1);
  Status ExtendRun(int64_t n = 1);
  Status AppendNulls(int64_t n) override;
  Status AppendEmptyValues(int64_t n) override;
  ArrayBuilder* value_builder() const { return children_[0].get(); }
  Status FinishInternal(ArrayDataPtr* out) override;
  void Reset() override;

 private:
  std::vector<int64_t> run_ends_;
};

// dictionary<values=V, indices=I>: appends values, storing each distinct
// value once in the dictionary and its index in the indices. Supported value
// types: integers, floats, half floats, dates, times, timestamps, durations,
// decimal128, fixed_size_binary, string/binary and their large variants.
class DictionaryBuilder : public ArrayBuilder {
 public:
  DictionaryBuilder(TypePtr dictionary_type, MemoryPool* pool = nullptr);

  // For string/binary/fixed_size_binary/decimal values (raw bytes).
  Status Append(std::string_view value);
  // For integer, date, time, timestamp and duration values.
  Status Append(int64_t value);
  // For float and double values.
  Status Append(double value);
  Status Append(const Decimal128& value);
  // Appends already-encoded indices into the current dictionary.
  Status AppendIndices(const int64_t* indices, int64_t n,
                       const uint8_t* valid_bytes = nullptr);
  // Adds values to the dictionary without appending indices.
  Status InsertMemoValues(const Array& values);
  Status AppendNulls(int64_t n) override;
  Status AppendEmptyValues(int64_t n) override;

  // Number of distinct values in the dictionary so far.
  int64_t dictionary_length() const { return static_cast<int64_t>(memo_.size()); }

  // Finish() returns a DictionaryArray holding the whole dictionary and
  // resets everything, dictionary included.
  Status FinishInternal(ArrayDataPtr* out) override;
  // Like Finish(), but keeps the dictionary: the next array's dictionary
  // starts with this one's values (what IPC writes as dictionary deltas).
  Result<ArrayPtr> FinishKeepDictionary();
  // Returns the indices since the last finish and the dictionary values
  // added since the last FinishDelta (the delta), keeping the dictionary.
  Status FinishDelta(ArrayPtr* indices, ArrayPtr* delta);
  void Reset() override;

 protected:
  Status Resize(int64_t capacity) override;

 private:
  Status AppendMemo(std::string_view key);
  Status AppendIndex(int64_t index);
  Result<ArrayDataPtr> FinishIndices();
  Result<ArrayDataPtr> DictionarySlice(int64_t start);

  // Transparent hashing: look up a string_view without building a string.
  struct MemoHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>()(s);
    }
  };
  std::unordered_map<std::string, int64_t, MemoHash, std::equal_to<>>
      memo_;                              // value bytes -> index
  std::vector<std::string> dict_values_;  // value bytes by index
  int64_t delta_start_ = 0;
  BufferBuilder indices_;
  int index_width_;
  int64_t max_index_;
};

// Convenience: build an array from a vector of optional values.
// Example: ArrayFromVector<Int64Type>({1, 2, 3}).
template <typename Tag>
Result<ArrayPtr> ArrayFromVector(const std::vector<typename Tag::c_type>& values,
                                 const std::vector<bool>& is_valid = {},
                                 MemoryPool* pool = nullptr) {
  NumericBuilder<Tag> b(pool);
  QUIVER_RETURN_NOT_OK(b.AppendValues(values, is_valid));
  return b.Finish();
}

}  // namespace quiver
