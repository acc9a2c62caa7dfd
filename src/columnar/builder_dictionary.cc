// DictionaryBuilder and MakeBuilder.
//
// The dictionary builder keys its memo table by the raw bytes of each value
// (the value's fixed-width representation, or the bytes of a string), which
// makes one implementation serve every supported value type.
#include <cstring>
#include <limits>

#include "quiver/columnar/builder.h"

namespace quiver {

namespace {

bool IsDictionaryValueType(TypeId id) {
  return IsInteger(id) || IsFloating(id) || IsBaseBinary(id) ||
         id == TypeId::kFixedSizeBinary || id == TypeId::kDecimal ||
         id == TypeId::kDate32 || id == TypeId::kDate64 || id == TypeId::kTime32 ||
         id == TypeId::kTime64 || id == TypeId::kTimestamp || id == TypeId::kDuration;
}

// Integer-like types whose values Append(int64_t) accepts.
bool IsIntegerLike(TypeId id) {
  return IsInteger(id) || id == TypeId::kHalfFloat || id == TypeId::kDate32 ||
         id == TypeId::kDate64 || id == TypeId::kTime32 || id == TypeId::kTime64 ||
         id == TypeId::kTimestamp || id == TypeId::kDuration;
}

// Narrows `v` to `width` bytes, checking the range of the (un)signed type.
Result<std::string> NarrowInteger(int64_t v, int width, bool is_unsigned,
                                  const DataType& type) {
  bool fits = true;
  if (width < 8) {
    const int bits = width * 8;
    if (is_unsigned) {
      fits = v >= 0 && v < (int64_t{1} << bits);
    } else {
      fits = v >= -(int64_t{1} << (bits - 1)) && v < (int64_t{1} << (bits - 1));
    }
  } else if (is_unsigned) {
    fits = v >= 0;
  }
  if (!fits) {
    return Status::Invalid("value ", v, " does not fit dictionary values of type ",
                           type.ToString());
  }
  std::string out(static_cast<size_t>(width), '\0');
  std::memcpy(out.data(), &v, static_cast<size_t>(width));  // little-endian
  return out;
}

// The raw bytes of value i of a dictionary-value-typed array.
std::string_view RawValue(const ArrayData& data, int64_t i) {
  const TypeId id = data.type->id();
  if (IsBaseBinary(id)) {
    const uint8_t* bytes = data.GetBuffer(2);
    int64_t start, end;
    if (IsLargeOffsets(id)) {
      const int64_t* o = data.GetValues<int64_t>(1);
      start = o[i];
      end = o[i + 1];
    } else {
      const int32_t* o = data.GetValues<int32_t>(1);
      start = o[i];
      end = o[i + 1];
    }
    return {reinterpret_cast<const char*>(bytes) + start,
            static_cast<size_t>(end - start)};
  }
  const int width = data.type->byte_width();
  return {reinterpret_cast<const char*>(data.GetBuffer(1)) + (data.offset + i) * width,
          static_cast<size_t>(width)};
}

// Appends raw value bytes to a builder of a dictionary value type.
Status AppendRaw(ArrayBuilder* builder, std::string_view bytes) {
  const TypeId id = builder->type()->id();
  if (IsBaseBinary(id)) {
    if (IsLargeOffsets(id)) {
      return static_cast<BaseBinaryBuilder<int64_t>*>(builder)->Append(bytes);
    }
    return static_cast<BaseBinaryBuilder<int32_t>*>(builder)->Append(bytes);
  }
  if (id == TypeId::kFixedSizeBinary || id == TypeId::kDecimal) {
    return static_cast<FixedSizeBinaryBuilder*>(builder)->Append(bytes);
  }
  // Fixed-width numeric: every NumericBuilder appends the same way through
  // its typed pointer; dispatch on width, the bytes are already exact.
  switch (bytes.size()) {
    case 1: {
      uint8_t v;
      std::memcpy(&v, bytes.data(), 1);
      return id == TypeId::kInt8
                 ? static_cast<Int8Builder*>(builder)->Append(static_cast<int8_t>(v))
                 : static_cast<UInt8Builder*>(builder)->Append(v);
    }
    case 2: {
      uint16_t v;
      std::memcpy(&v, bytes.data(), 2);
      if (id == TypeId::kInt16) {
        return static_cast<Int16Builder*>(builder)->Append(static_cast<int16_t>(v));
      }
      if (id == TypeId::kHalfFloat)
        return static_cast<HalfFloatBuilder*>(builder)->Append(v);
      return static_cast<UInt16Builder*>(builder)->Append(v);
    }
    case 4: {
      int32_t v;
      std::memcpy(&v, bytes.data(), 4);
      switch (id) {
        case TypeId::kInt32:
          return static_cast<Int32Builder*>(builder)->Append(v);
        case TypeId::kUInt32:
          return static_cast<UInt32Builder*>(builder)->Append(static_cast<uint32_t>(v));
        case TypeId::kFloat: {
          float f;
          std::memcpy(&f, bytes.data(), 4);
          return static_cast<FloatBuilder*>(builder)->Append(f);
        }
        case TypeId::kDate32:
          return static_cast<Date32Builder*>(builder)->Append(v);
        default:
          return static_cast<Time32Builder*>(builder)->Append(v);
      }
    }
    case 8: {
      int64_t v;
      std::memcpy(&v, bytes.data(), 8);
      switch (id) {
        case TypeId::kInt64:
          return static_cast<Int64Builder*>(builder)->Append(v);
        case TypeId::kUInt64:
          return static_cast<UInt64Builder*>(builder)->Append(static_cast<uint64_t>(v));
        case TypeId::kDouble: {
          double d;
          std::memcpy(&d, bytes.data(), 8);
          return static_cast<DoubleBuilder*>(builder)->Append(d);
        }
        case TypeId::kDate64:
          return static_cast<Date64Builder*>(builder)->Append(v);
        case TypeId::kTime64:
          return static_cast<Time64Builder*>(builder)->Append(v);
        case TypeId::kTimestamp:
          return static_cast<TimestampBuilder*>(builder)->Append(v);
        default:
          return static_cast<DurationBuilder*>(builder)->Append(v);
      }
    }
    default:
      return Status::TypeError("cannot append raw value to ",
                               builder->type()->ToString());
  }
}

}  // namespace

DictionaryBuilder::DictionaryBuilder(TypePtr dictionary_type, MemoryPool* pool)
    : ArrayBuilder(std::move(dictionary_type), pool), indices_(pool_) {
  if (type_->id() != TypeId::kDictionary) {
    Status::TypeError("DictionaryBuilder given type ", type_->ToString()).Abort();
  }
  if (!IsDictionaryValueType(type_->value_type()->id())) {
    Status::NotImplemented("dictionary values of type ", type_->value_type()->ToString(),
                           " are not supported by DictionaryBuilder")
        .Abort();
  }
  const TypeId index_id = type_->index_type()->id();
  index_width_ = type_->index_type()->byte_width();
  if (index_width_ == 8) {
    max_index_ = std::numeric_limits<int64_t>::max();
  } else {
    const int bits = index_width_ * 8 - (IsSignedInteger(index_id) ? 1 : 0);
    max_index_ = (int64_t{1} << bits) - 1;
  }
}

Status DictionaryBuilder::Resize(int64_t capacity) {
  QUIVER_RETURN_NOT_OK(indices_.Reserve((capacity - length_) * index_width_));
  return ArrayBuilder::Resize(capacity);
}

Status DictionaryBuilder::AppendIndex(int64_t index) {
  QUIVER_RETURN_NOT_OK(Reserve(1));
  indices_.UnsafeAppend(&index, index_width_);  // little-endian narrowing
  UnsafeAppendToBitmap(true);
  return Status::OK();
}

Status DictionaryBuilder::AppendMemo(std::string_view key) {
  auto it = memo_.find(key);
  if (it != memo_.end()) return AppendIndex(it->second);
  const int64_t index = static_cast<int64_t>(dict_values_.size());
  if (index > max_index_) {
    return Status::CapacityError("dictionary with index type ",
                                 type_->index_type()->ToString(),
                                 " cannot hold more than ", max_index_ + 1, " values");
  }
  QUIVER_RETURN_NOT_OK(AppendIndex(index));
  memo_.emplace(std::string(key), index);
  dict_values_.emplace_back(key);
  return Status::OK();
}

Status DictionaryBuilder::Append(std::string_view value) {
  const TypePtr& vt = type_->value_type();
  const TypeId id = vt->id();
  if (IsBaseBinary(id)) return AppendMemo(value);
  if (id == TypeId::kFixedSizeBinary || id == TypeId::kDecimal) {
    if (static_cast<int64_t>(value.size()) != vt->byte_width()) {
      return Status::Invalid("dictionary value of ", value.size(), " bytes for ",
                             vt->ToString());
    }
    return AppendMemo(value);
  }
  return Status::TypeError("Append(string_view) on a dictionary of ", vt->ToString());
}

Status DictionaryBuilder::Append(int64_t value) {
  const TypePtr& vt = type_->value_type();
  if (!IsIntegerLike(vt->id())) {
    return Status::TypeError("Append(int64_t) on a dictionary of ", vt->ToString());
  }
  QUIVER_ASSIGN_OR_RAISE(
      auto bytes,
      NarrowInteger(value, vt->byte_width(),
                    IsUnsignedInteger(vt->id()) || vt->id() == TypeId::kHalfFloat, *vt));
  return AppendMemo(bytes);
}

Status DictionaryBuilder::Append(double value) {
  const TypePtr& vt = type_->value_type();
  if (vt->id() == TypeId::kDouble) {
    return AppendMemo({reinterpret_cast<const char*>(&value), 8});
  }
  if (vt->id() == TypeId::kFloat) {
    float f = static_cast<float>(value);
    return AppendMemo({reinterpret_cast<const char*>(&f), 4});
  }
  return Status::TypeError("Append(double) on a dictionary of ", vt->ToString());
}

Status DictionaryBuilder::Append(const Decimal128& value) {
  const TypePtr& vt = type_->value_type();
  if (vt->id() != TypeId::kDecimal) {
    return Status::TypeError("Append(Decimal128) on a dictionary of ", vt->ToString());
  }
  if (value.NumDigits() > vt->precision()) {
    return Status::Invalid("decimal value does not fit ", vt->ToString());
  }
  char bytes[32];
  const int width = vt->byte_width();
  StoreDecimal(value, width, reinterpret_cast<uint8_t*>(bytes));
  return AppendMemo({bytes, static_cast<size_t>(width)});
}

Status DictionaryBuilder::AppendIndices(const int64_t* indices, int64_t n,
                                        const uint8_t* valid_bytes) {
  const int64_t size = dictionary_length();
  for (int64_t i = 0; i < n; ++i) {
    bool valid = valid_bytes == nullptr || valid_bytes[i] != 0;
    if (valid && (indices[i] < 0 || indices[i] >= size)) {
      return Status::IndexError("dictionary index ", indices[i], " at ", i,
                                " is outside a dictionary of ", size, " values");
    }
  }
  QUIVER_RETURN_NOT_OK(Reserve(n));
  for (int64_t i = 0; i < n; ++i) {
    bool valid = valid_bytes == nullptr || valid_bytes[i] != 0;
    int64_t index = valid ? indices[i] : 0;
    indices_.UnsafeAppend(&index, index_width_);
    UnsafeAppendToBitmap(valid);
  }
  return Status::OK();
}

Status DictionaryBuilder::InsertMemoValues(const Array& values) {
  if (!values.type()->Equals(*type_->value_type())) {
    return Status::TypeError("dictionary of ", type_->value_type()->ToString(),
                             " given memo values of type ", values.type()->ToString());
  }
  for (int64_t i = 0; i < values.length(); ++i) {
    if (values.IsNull(i)) {
      return Status::Invalid("dictionary memo values may not contain nulls");
    }
    std::string key(RawValue(*values.data(), i));
    if (memo_.find(key) != memo_.end()) continue;
    if (static_cast<int64_t>(dict_values_.size()) > max_index_) {
      return Status::CapacityError("dictionary index type overflow");
    }
    memo_.emplace(key, static_cast<int64_t>(dict_values_.size()));
    dict_values_.push_back(std::move(key));
  }
  return Status::OK();
}

Status DictionaryBuilder::AppendNulls(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  QUIVER_RETURN_NOT_OK(indices_.AppendZeros(n * index_width_));
  UnsafeAppendToBitmap(n, false);
  return Status::OK();
}

Status DictionaryBuilder::AppendEmptyValues(int64_t n) {
  // An "empty" dictionary value is the value type's empty value, memoised.
  const TypePtr& vt = type_->value_type();
  std::string empty(IsBaseBinary(vt->id()) ? 0 : static_cast<size_t>(vt->byte_width()),
                    '\0');
  for (int64_t i = 0; i < n; ++i) QUIVER_RETURN_NOT_OK(AppendMemo(empty));
  return Status::OK();
}

Result<ArrayDataPtr> DictionaryBuilder::DictionarySlice(int64_t start) {
  QUIVER_ASSIGN_OR_RAISE(auto builder, MakeBuilder(type_->value_type(), pool_));
  QUIVER_RETURN_NOT_OK(builder->Reserve(dictionary_length() - start));
  for (int64_t i = start; i < dictionary_length(); ++i) {
    QUIVER_RETURN_NOT_OK(AppendRaw(builder.get(), dict_values_[i]));
  }
  ArrayDataPtr out;
  QUIVER_RETURN_NOT_OK(builder->FinishInternal(&out));
  return out;
}

Result<ArrayDataPtr> DictionaryBuilder::FinishIndices() {
  QUIVER_ASSIGN_OR_RAISE(auto validity, FinishValidity());
  QUIVER_ASSIGN_OR_RAISE(auto indices, indices_.Finish());
  auto data = ArrayData::Make(type_, length_, {std::move(validity), std::move(indices)},
                              null_count_);
  ArrayBuilder::Reset();
  return data;
}

Status DictionaryBuilder::FinishInternal(ArrayDataPtr* out) {
  QUIVER_ASSIGN_OR_RAISE(auto dict, DictionarySlice(0));
  QUIVER_ASSIGN_OR_RAISE(*out, FinishIndices());
  (*out)->dictionary = std::move(dict);
  return Status::OK();
}

Result<ArrayPtr> DictionaryBuilder::FinishKeepDictionary() {
  QUIVER_ASSIGN_OR_RAISE(auto dict, DictionarySlice(0));
  QUIVER_ASSIGN_OR_RAISE(auto data, FinishIndices());
  data->dictionary = std::move(dict);
  return MakeArray(std::move(data));
}

Status DictionaryBuilder::FinishDelta(ArrayPtr* indices, ArrayPtr* delta) {
  QUIVER_ASSIGN_OR_RAISE(auto dict, DictionarySlice(delta_start_));
  QUIVER_ASSIGN_OR_RAISE(auto data, FinishIndices());
  data->type = type_->index_type();
  *indices = MakeArray(std::move(data));
  *delta = MakeArray(std::move(dict));
  delta_start_ = dictionary_length();
  return Status::OK();
}

void DictionaryBuilder::Reset() {
  ArrayBuilder::Reset();
  indices_.Reset();
  memo_.clear();
  dict_values_.clear();
  delta_start_ = 0;
}

// ---------------------------------------------------------------------------
// MakeBuilder

Result<std::unique_ptr<ArrayBuilder>> MakeBuilder(const TypePtr& type, MemoryPool* pool) {
  using B = std::unique_ptr<ArrayBuilder>;
  switch (type->id()) {
    case TypeId::kNull:
      return B(new NullBuilder(pool));
    case TypeId::kBool:
      return B(new BooleanBuilder(pool));
    case TypeId::kInt8:
      return B(new Int8Builder(type, pool));
    case TypeId::kInt16:
      return B(new Int16Builder(type, pool));
    case TypeId::kInt32:
      return B(new Int32Builder(type, pool));
    case TypeId::kInt64:
      return B(new Int64Builder(type, pool));
    case TypeId::kUInt8:
      return B(new UInt8Builder(type, pool));
    case TypeId::kUInt16:
      return B(new UInt16Builder(type, pool));
    case TypeId::kUInt32:
      return B(new UInt32Builder(type, pool));
    case TypeId::kUInt64:
      return B(new UInt64Builder(type, pool));
    case TypeId::kHalfFloat:
      return B(new HalfFloatBuilder(type, pool));
    case TypeId::kFloat:
      return B(new FloatBuilder(type, pool));
    case TypeId::kDouble:
      return B(new DoubleBuilder(type, pool));
    case TypeId::kDecimal:
      return B(new DecimalBuilder(type, pool));
    case TypeId::kDate32:
      return B(new Date32Builder(type, pool));
    case TypeId::kDate64:
      return B(new Date64Builder(type, pool));
    case TypeId::kTime32:
      return B(new Time32Builder(type, pool));
    case TypeId::kTime64:
      return B(new Time64Builder(type, pool));
    case TypeId::kTimestamp:
      return B(new TimestampBuilder(type, pool));
    case TypeId::kDuration:
      return B(new DurationBuilder(type, pool));
    case TypeId::kInterval:
      return B(new IntervalBuilder(type, pool));
    // The named subclasses, so callers may cast to StringBuilder and co.
    case TypeId::kString:
      return B(new StringBuilder(pool));
    case TypeId::kBinary:
      return B(new BinaryBuilder(pool));
    case TypeId::kLargeString:
      return B(new LargeStringBuilder(pool));
    case TypeId::kLargeBinary:
      return B(new LargeBinaryBuilder(pool));
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      return B(new BinaryViewBuilder(type, pool));
    case TypeId::kFixedSizeBinary:
      return B(new FixedSizeBinaryBuilder(type, pool));
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kFixedSizeList: {
      QUIVER_ASSIGN_OR_RAISE(auto child, MakeBuilder(type->value_type(), pool));
      std::shared_ptr<ArrayBuilder> c(std::move(child));
      if (type->id() == TypeId::kList) return B(new ListBuilder(pool, c, type));
      if (type->id() == TypeId::kLargeList) return B(new LargeListBuilder(pool, c, type));
      return B(new FixedSizeListBuilder(pool, c, type));
    }
    case TypeId::kMap: {
      QUIVER_ASSIGN_OR_RAISE(auto keys, MakeBuilder(type->key_type(), pool));
      QUIVER_ASSIGN_OR_RAISE(auto items, MakeBuilder(type->item_type(), pool));
      return B(new MapBuilder(pool, std::move(keys), std::move(items), type));
    }
    case TypeId::kStruct: {
      std::vector<std::shared_ptr<ArrayBuilder>> children;
      for (const auto& f : type->fields()) {
        QUIVER_ASSIGN_OR_RAISE(auto c, MakeBuilder(f->type(), pool));
        children.push_back(std::move(c));
      }
      return B(new StructBuilder(type, pool, std::move(children)));
    }
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {
      std::vector<std::shared_ptr<ArrayBuilder>> children;
      for (const auto& f : type->fields()) {
        QUIVER_ASSIGN_OR_RAISE(auto c, MakeBuilder(f->type(), pool));
        children.push_back(std::move(c));
      }
      return B(new UnionBuilder(type, pool, std::move(children)));
    }
    case TypeId::kRunEndEncoded: {
      QUIVER_ASSIGN_OR_RAISE(auto child, MakeBuilder(type->value_type(), pool));
      std::shared_ptr<ArrayBuilder> c(std::move(child));
      return B(new RunEndEncodedBuilder(pool, c, type->run_end_type(), type));
    }
    case TypeId::kListView:
    case TypeId::kLargeListView: {
      QUIVER_ASSIGN_OR_RAISE(auto child, MakeBuilder(type->value_type(), pool));
      std::shared_ptr<ArrayBuilder> c(std::move(child));
      if (type->id() == TypeId::kListView) return B(new ListViewBuilder(pool, c, type));
      return B(new LargeListViewBuilder(pool, c, type));
    }
    case TypeId::kDictionary:
      if (!IsDictionaryValueType(type->value_type()->id())) {
        return Status::NotImplemented("DictionaryBuilder for values of type ",
                                      type->value_type()->ToString());
      }
      return B(new DictionaryBuilder(type, pool));
  }
  return Status::NotImplemented("no builder for type ", type->ToString());
}

}  // namespace quiver
