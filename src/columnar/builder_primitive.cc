// NumericBuilder<Tag> and BaseBinaryBuilder<Offset>, instantiated for every
// tag and offset width Quiver supports.
#include <algorithm>
#include <cstring>
#include <limits>

#include "columnar/view_util.h"
#include "quiver/columnar/builder.h"

namespace quiver {

namespace {

// The type a NumericBuilder gets when none is given. Parametric types get
// documented defaults (time32[ms], time64[us], timestamp[us], duration[us]).
TypePtr DefaultTypeFor(TypeId id) {
  switch (id) {
    case TypeId::kInt8:
      return int8();
    case TypeId::kInt16:
      return int16();
    case TypeId::kInt32:
      return int32();
    case TypeId::kInt64:
      return int64();
    case TypeId::kUInt8:
      return uint8();
    case TypeId::kUInt16:
      return uint16();
    case TypeId::kUInt32:
      return uint32();
    case TypeId::kUInt64:
      return uint64();
    case TypeId::kHalfFloat:
      return float16();
    case TypeId::kFloat:
      return float32();
    case TypeId::kDouble:
      return float64();
    case TypeId::kDate32:
      return date32();
    case TypeId::kDate64:
      return date64();
    case TypeId::kTime32:
      return time32(TimeUnit::kMilli);
    case TypeId::kTime64:
      return time64(TimeUnit::kMicro);
    case TypeId::kTimestamp:
      return timestamp(TimeUnit::kMicro);
    case TypeId::kDuration:
      return duration(TimeUnit::kMicro);
    default:
      return nullptr;
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// NumericBuilder

template <typename Tag>
NumericBuilder<Tag>::NumericBuilder(MemoryPool* pool)
    : NumericBuilder(DefaultTypeFor(Tag::type_id), pool) {}

template <typename Tag>
NumericBuilder<Tag>::NumericBuilder(TypePtr type, MemoryPool* pool)
    : ArrayBuilder(std::move(type), pool), values_(pool_) {
  if (type_ == nullptr || type_->id() != Tag::type_id) {
    Status::TypeError("NumericBuilder<", DefaultTypeFor(Tag::type_id)->name(),
                      "> given type ", type_ ? type_->ToString() : "null")
        .Abort();
  }
}

template <typename Tag>
Status NumericBuilder<Tag>::Resize(int64_t capacity) {
  QUIVER_RETURN_NOT_OK(values_.Reserve(capacity - length_));
  return ArrayBuilder::Resize(capacity);
}

template <typename Tag>
Status NumericBuilder<Tag>::AppendValues(const value_type* values, int64_t n,
                                         const uint8_t* valid_bytes) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  QUIVER_RETURN_NOT_OK(values_.Append(values, n));
  UnsafeAppendToBitmap(valid_bytes, n);
  return Status::OK();
}

template <typename Tag>
Status NumericBuilder<Tag>::AppendValues(const std::vector<value_type>& values,
                                         const std::vector<bool>& is_valid) {
  if (!is_valid.empty() && is_valid.size() != values.size()) {
    return Status::Invalid("AppendValues: ", values.size(), " values but ",
                           is_valid.size(), " validity flags");
  }
  const auto n = static_cast<int64_t>(values.size());
  QUIVER_RETURN_NOT_OK(Reserve(n));
  QUIVER_RETURN_NOT_OK(values_.Append(values.data(), n));
  if (is_valid.empty()) {
    UnsafeAppendToBitmap(n, true);
  } else {
    UnsafeAppendToBitmap(is_valid);
  }
  return Status::OK();
}

template <typename Tag>
Status NumericBuilder<Tag>::AppendNulls(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  QUIVER_RETURN_NOT_OK(values_.AppendZeros(n));
  UnsafeAppendToBitmap(n, false);
  return Status::OK();
}

template <typename Tag>
Status NumericBuilder<Tag>::AppendEmptyValues(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  QUIVER_RETURN_NOT_OK(values_.AppendZeros(n));
  UnsafeAppendToBitmap(n, true);
  return Status::OK();
}

template <typename Tag>
Status NumericBuilder<Tag>::FinishInternal(ArrayDataPtr* out) {
  QUIVER_ASSIGN_OR_RAISE(auto validity, FinishValidity());
  QUIVER_ASSIGN_OR_RAISE(auto values, values_.Finish());
  *out = ArrayData::Make(type_, length_, {std::move(validity), std::move(values)},
                         null_count_);
  return Status::OK();
}

template <typename Tag>
void NumericBuilder<Tag>::Reset() {
  ArrayBuilder::Reset();
  values_.Reset();
}

template class NumericBuilder<Int8Type>;
template class NumericBuilder<Int16Type>;
template class NumericBuilder<Int32Type>;
template class NumericBuilder<Int64Type>;
template class NumericBuilder<UInt8Type>;
template class NumericBuilder<UInt16Type>;
template class NumericBuilder<UInt32Type>;
template class NumericBuilder<UInt64Type>;
template class NumericBuilder<HalfFloatType>;
template class NumericBuilder<FloatType>;
template class NumericBuilder<DoubleType>;
template class NumericBuilder<Date32Type>;
template class NumericBuilder<Date64Type>;
template class NumericBuilder<Time32Type>;
template class NumericBuilder<Time64Type>;
template class NumericBuilder<TimestampType>;
template class NumericBuilder<DurationType>;

// ---------------------------------------------------------------------------
// BaseBinaryBuilder

template <typename OffsetType>
BaseBinaryBuilder<OffsetType>::BaseBinaryBuilder(TypePtr type, MemoryPool* pool)
    : ArrayBuilder(std::move(type), pool), offsets_(pool_), data_(pool_) {
  const bool large = sizeof(OffsetType) == 8;
  if (!IsBaseBinary(type_->id()) || IsLargeOffsets(type_->id()) != large) {
    Status::TypeError("binary builder given type ", type_->ToString()).Abort();
  }
}

template <typename OffsetType>
Status BaseBinaryBuilder<OffsetType>::Resize(int64_t capacity) {
  // One more offset than values: the closing offset written by Finish.
  QUIVER_RETURN_NOT_OK(offsets_.Reserve(capacity + 1 - offsets_.length()));
  return ArrayBuilder::Resize(capacity);
}

template <typename OffsetType>
Status BaseBinaryBuilder<OffsetType>::AppendNextOffset() {
  const int64_t size = data_.size();
  if (size > std::numeric_limits<OffsetType>::max()) {
    return Status::CapacityError(type_->ToString(), " array cannot hold more than ",
                                 std::numeric_limits<OffsetType>::max(),
                                 " bytes of data");
  }
  offsets_.UnsafeAppend(static_cast<OffsetType>(size));
  return Status::OK();
}

template <typename OffsetType>
Status BaseBinaryBuilder<OffsetType>::Append(const uint8_t* value, int64_t length) {
  if (length < 0) return Status::Invalid("negative value length ", length);
  if (data_.size() + length > std::numeric_limits<OffsetType>::max()) {
    return Status::CapacityError(type_->ToString(), " array cannot hold more than ",
                                 std::numeric_limits<OffsetType>::max(),
                                 " bytes of data");
  }
  QUIVER_RETURN_NOT_OK(Reserve(1));
  QUIVER_RETURN_NOT_OK(data_.Append(value, length));
  // The offset of a value is where it starts; AppendNextOffset after the
  // data would record its end, so write the start first.
  offsets_.UnsafeAppend(static_cast<OffsetType>(data_.size() - length));
  UnsafeAppendToBitmap(true);
  return Status::OK();
}

template <typename OffsetType>
Status BaseBinaryBuilder<OffsetType>::AppendValues(const std::vector<std::string>& values,
                                                   const std::vector<bool>& is_valid) {
  if (!is_valid.empty() && is_valid.size() != values.size()) {
    return Status::Invalid("AppendValues: ", values.size(), " values but ",
                           is_valid.size(), " validity flags");
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (!is_valid.empty() && !is_valid[i]) {
      QUIVER_RETURN_NOT_OK(AppendNull());
    } else {
      QUIVER_RETURN_NOT_OK(Append(values[i]));
    }
  }
  return Status::OK();
}

template <typename OffsetType>
Status BaseBinaryBuilder<OffsetType>::AppendNulls(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  for (int64_t i = 0; i < n; ++i) QUIVER_RETURN_NOT_OK(AppendNextOffset());
  UnsafeAppendToBitmap(n, false);
  return Status::OK();
}

template <typename OffsetType>
Status BaseBinaryBuilder<OffsetType>::AppendEmptyValues(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  for (int64_t i = 0; i < n; ++i) QUIVER_RETURN_NOT_OK(AppendNextOffset());
  UnsafeAppendToBitmap(n, true);
  return Status::OK();
}

template <typename OffsetType>
Status BaseBinaryBuilder<OffsetType>::FinishInternal(ArrayDataPtr* out) {
  QUIVER_RETURN_NOT_OK(offsets_.Reserve(1));
  QUIVER_RETURN_NOT_OK(AppendNextOffset());
  QUIVER_ASSIGN_OR_RAISE(auto validity, FinishValidity());
  QUIVER_ASSIGN_OR_RAISE(auto offsets, offsets_.Finish());
  QUIVER_ASSIGN_OR_RAISE(auto data, data_.Finish());
  *out = ArrayData::Make(type_, length_,
                         {std::move(validity), std::move(offsets), std::move(data)},
                         null_count_);
  return Status::OK();
}

template <typename OffsetType>
void BaseBinaryBuilder<OffsetType>::Reset() {
  ArrayBuilder::Reset();
  offsets_.Reset();
  data_.Reset();
}

template class BaseBinaryBuilder<int32_t>;
template class BaseBinaryBuilder<int64_t>;

// ---------------------------------------------------------------------------
// BinaryViewBuilder

BinaryViewBuilder::BinaryViewBuilder(TypePtr type, MemoryPool* pool, int64_t block_size)
    : ArrayBuilder(std::move(type), pool),
      block_size_(std::max<int64_t>(block_size, 1)),
      views_(pool_),
      block_(pool_) {
  if (!IsBinaryView(type_->id())) {
    Status::TypeError("binary view builder given type ", type_->ToString()).Abort();
  }
}

Status BinaryViewBuilder::Resize(int64_t capacity) {
  QUIVER_RETURN_NOT_OK(views_.Reserve(capacity * 16 - views_.size()));
  return ArrayBuilder::Resize(capacity);
}

Status BinaryViewBuilder::Append(std::string_view value) {
  if (value.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Status::CapacityError("a view holds values of at most 2^31-1 bytes, not ",
                                 value.size());
  }
  QUIVER_RETURN_NOT_OK(Reserve(1));
  const auto n = static_cast<int64_t>(value.size());
  int32_t index = 0, offset = 0;
  if (n > 12) {
    if (block_.size() > 0 && block_.size() + n > block_size_) {
      QUIVER_ASSIGN_OR_RAISE(auto full, block_.Finish());
      blocks_.push_back(std::move(full));
    }
    index = static_cast<int32_t>(blocks_.size());
    offset = static_cast<int32_t>(block_.size());
    QUIVER_RETURN_NOT_OK(block_.Append(value.data(), n));
  }
  uint8_t view[16] = {};
  internal::WriteView(value, index, offset, view);
  views_.UnsafeAppend(view, 16);
  UnsafeAppendToBitmap(true);
  return Status::OK();
}

Status BinaryViewBuilder::AppendViews(int64_t n, bool valid) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  QUIVER_RETURN_NOT_OK(views_.AppendZeros(n * 16));  // empty inline values
  UnsafeAppendToBitmap(n, valid);
  return Status::OK();
}

Status BinaryViewBuilder::AppendNulls(int64_t n) { return AppendViews(n, false); }
Status BinaryViewBuilder::AppendEmptyValues(int64_t n) { return AppendViews(n, true); }

Status BinaryViewBuilder::FinishInternal(ArrayDataPtr* out) {
  if (block_.size() > 0) {
    QUIVER_ASSIGN_OR_RAISE(auto last, block_.Finish());
    blocks_.push_back(std::move(last));
  }
  QUIVER_ASSIGN_OR_RAISE(auto validity, FinishValidity());
  QUIVER_ASSIGN_OR_RAISE(auto views, views_.Finish());
  std::vector<std::shared_ptr<Buffer>> buffers = {std::move(validity), std::move(views)};
  for (auto& b : blocks_) buffers.push_back(std::move(b));
  blocks_.clear();
  *out = ArrayData::Make(type_, length_, std::move(buffers), null_count_);
  return Status::OK();
}

void BinaryViewBuilder::Reset() {
  ArrayBuilder::Reset();
  views_.Reset();
  block_.Reset();
  blocks_.clear();
}

}  // namespace quiver
