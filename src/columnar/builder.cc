// ArrayBuilder base, null, boolean, fixed-size binary and decimal builders.
#include "quiver/columnar/builder.h"

#include <algorithm>
#include <cstring>

namespace quiver {

// ---------------------------------------------------------------------------
// ArrayBuilder

ArrayBuilder::ArrayBuilder(TypePtr type, MemoryPool* pool)
    : type_(std::move(type)),
      pool_(pool ? pool : default_memory_pool()),
      validity_(pool_) {}

Status ArrayBuilder::Reserve(int64_t additional) {
  if (additional < 0) return Status::Invalid("negative reservation ", additional);
  int64_t needed = length_ + additional;
  if (needed <= capacity_) return Status::OK();
  return Resize(std::max(needed, capacity_ * 2));
}

Status ArrayBuilder::Resize(int64_t capacity) {
  QUIVER_RETURN_NOT_OK(validity_.Reserve(capacity - validity_.length()));
  capacity_ = capacity;
  return Status::OK();
}

void ArrayBuilder::UnsafeAppendToBitmap(const uint8_t* valid_bytes, int64_t n) {
  if (valid_bytes == nullptr) {
    UnsafeAppendToBitmap(n, true);
    return;
  }
  for (int64_t i = 0; i < n; ++i) UnsafeAppendToBitmap(valid_bytes[i] != 0);
}

void ArrayBuilder::UnsafeAppendToBitmap(const std::vector<bool>& is_valid) {
  for (bool v : is_valid) UnsafeAppendToBitmap(v);
}

Result<std::shared_ptr<Buffer>> ArrayBuilder::FinishValidity() {
  if (null_count_ == 0) {
    validity_.Reset();
    return std::shared_ptr<Buffer>();
  }
  return validity_.Finish();
}

Result<ArrayPtr> ArrayBuilder::Finish() {
  ArrayDataPtr data;
  QUIVER_RETURN_NOT_OK(FinishInternal(&data));
  Reset();
  return MakeArray(std::move(data));
}

Status ArrayBuilder::Finish(ArrayPtr* out) {
  QUIVER_ASSIGN_OR_RAISE(*out, Finish());
  return Status::OK();
}

void ArrayBuilder::Reset() {
  for (auto& c : children_) c->Reset();
  validity_.Reset();
  length_ = 0;
  null_count_ = 0;
  capacity_ = 0;
}

// ---------------------------------------------------------------------------
// NullBuilder

NullBuilder::NullBuilder(MemoryPool* pool) : ArrayBuilder(null(), pool) {}

Status NullBuilder::AppendNulls(int64_t n) {
  if (n < 0) return Status::Invalid("negative count ", n);
  length_ += n;
  null_count_ += n;
  return Status::OK();
}

Status NullBuilder::FinishInternal(ArrayDataPtr* out) {
  *out = ArrayData::Make(null(), length_, {nullptr}, length_);
  return Status::OK();
}

// ---------------------------------------------------------------------------
// BooleanBuilder

BooleanBuilder::BooleanBuilder(MemoryPool* pool)
    : ArrayBuilder(boolean(), pool), values_(pool_) {}

Status BooleanBuilder::Resize(int64_t capacity) {
  QUIVER_RETURN_NOT_OK(values_.Reserve(capacity - values_.length()));
  return ArrayBuilder::Resize(capacity);
}

Status BooleanBuilder::Append(bool value) {
  QUIVER_RETURN_NOT_OK(Reserve(1));
  UnsafeAppend(value);
  return Status::OK();
}

Status BooleanBuilder::AppendValues(const uint8_t* values, int64_t n,
                                    const uint8_t* valid_bytes) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  for (int64_t i = 0; i < n; ++i) values_.UnsafeAppend(values[i] != 0);
  UnsafeAppendToBitmap(valid_bytes, n);
  return Status::OK();
}

Status BooleanBuilder::AppendValues(const std::vector<bool>& values,
                                    const std::vector<bool>& is_valid) {
  if (!is_valid.empty() && is_valid.size() != values.size()) {
    return Status::Invalid("AppendValues: ", values.size(), " values but ",
                           is_valid.size(), " validity flags");
  }
  QUIVER_RETURN_NOT_OK(Reserve(static_cast<int64_t>(values.size())));
  for (bool v : values) values_.UnsafeAppend(v);
  if (is_valid.empty()) {
    UnsafeAppendToBitmap(static_cast<int64_t>(values.size()), true);
  } else {
    UnsafeAppendToBitmap(is_valid);
  }
  return Status::OK();
}

Status BooleanBuilder::AppendNulls(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  values_.UnsafeAppend(n, false);
  UnsafeAppendToBitmap(n, false);
  return Status::OK();
}

Status BooleanBuilder::AppendEmptyValues(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  values_.UnsafeAppend(n, false);
  UnsafeAppendToBitmap(n, true);
  return Status::OK();
}

Status BooleanBuilder::FinishInternal(ArrayDataPtr* out) {
  QUIVER_ASSIGN_OR_RAISE(auto validity, FinishValidity());
  QUIVER_ASSIGN_OR_RAISE(auto values, values_.Finish());
  *out = ArrayData::Make(type_, length_, {std::move(validity), std::move(values)},
                         null_count_);
  return Status::OK();
}

void BooleanBuilder::Reset() {
  ArrayBuilder::Reset();
  values_.Reset();
}

// ---------------------------------------------------------------------------
// FixedSizeBinaryBuilder and Decimal128Builder

FixedSizeBinaryBuilder::FixedSizeBinaryBuilder(TypePtr type, MemoryPool* pool)
    : ArrayBuilder(std::move(type), pool), bytes_(pool_) {
  if (type_->id() != TypeId::kFixedSizeBinary && type_->id() != TypeId::kDecimal &&
      type_->id() != TypeId::kInterval) {
    Status::TypeError("FixedSizeBinaryBuilder for type ", type_->ToString()).Abort();
  }
  byte_width_ = type_->byte_width();
}

Status FixedSizeBinaryBuilder::Resize(int64_t capacity) {
  QUIVER_RETURN_NOT_OK(bytes_.Reserve((capacity - length_) * byte_width_));
  return ArrayBuilder::Resize(capacity);
}

Status FixedSizeBinaryBuilder::Append(std::string_view value) {
  if (static_cast<int64_t>(value.size()) != byte_width_) {
    return Status::Invalid(type_->ToString(), ": value of ", value.size(),
                           " bytes, expected ", byte_width_);
  }
  return Append(reinterpret_cast<const uint8_t*>(value.data()));
}

Status FixedSizeBinaryBuilder::Append(const uint8_t* value) {
  QUIVER_RETURN_NOT_OK(Reserve(1));
  bytes_.UnsafeAppend(value, byte_width_);
  UnsafeAppendToBitmap(true);
  return Status::OK();
}

Status FixedSizeBinaryBuilder::AppendValues(const uint8_t* data, int64_t n,
                                            const uint8_t* valid_bytes) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  bytes_.UnsafeAppend(data, n * byte_width_);
  UnsafeAppendToBitmap(valid_bytes, n);
  return Status::OK();
}

Status FixedSizeBinaryBuilder::AppendNulls(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  QUIVER_RETURN_NOT_OK(bytes_.AppendZeros(n * byte_width_));
  UnsafeAppendToBitmap(n, false);
  return Status::OK();
}

Status FixedSizeBinaryBuilder::AppendEmptyValues(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  QUIVER_RETURN_NOT_OK(bytes_.AppendZeros(n * byte_width_));
  UnsafeAppendToBitmap(n, true);
  return Status::OK();
}

Status FixedSizeBinaryBuilder::FinishInternal(ArrayDataPtr* out) {
  QUIVER_ASSIGN_OR_RAISE(auto validity, FinishValidity());
  QUIVER_ASSIGN_OR_RAISE(auto values, bytes_.Finish());
  *out = ArrayData::Make(type_, length_, {std::move(validity), std::move(values)},
                         null_count_);
  return Status::OK();
}

void FixedSizeBinaryBuilder::Reset() {
  ArrayBuilder::Reset();
  bytes_.Reset();
}

IntervalBuilder::IntervalBuilder(TypePtr type, MemoryPool* pool)
    : FixedSizeBinaryBuilder(std::move(type), pool) {
  if (type_->id() != TypeId::kInterval) {
    Status::TypeError("IntervalBuilder for type ", type_->ToString()).Abort();
  }
}

Status IntervalBuilder::Expect(IntervalUnit unit) const {
  if (type_->interval_unit() == unit) return Status::OK();
  return Status::TypeError("a ", IntervalUnitName(unit), " interval appended to ",
                           type_->ToString(), " values");
}

Status IntervalBuilder::AppendMonths(int32_t months) {
  QUIVER_RETURN_NOT_OK(Expect(IntervalUnit::kYearMonth));
  uint8_t bytes[4];
  std::memcpy(bytes, &months, 4);
  return Append(bytes);
}

Status IntervalBuilder::Append(const DayTimeInterval& v) {
  QUIVER_RETURN_NOT_OK(Expect(IntervalUnit::kDayTime));
  uint8_t bytes[8];
  std::memcpy(bytes, &v.days, 4);
  std::memcpy(bytes + 4, &v.milliseconds, 4);
  return Append(bytes);
}

Status IntervalBuilder::Append(const MonthDayNanoInterval& v) {
  QUIVER_RETURN_NOT_OK(Expect(IntervalUnit::kMonthDayNano));
  uint8_t bytes[16];
  std::memcpy(bytes, &v.months, 4);
  std::memcpy(bytes + 4, &v.days, 4);
  std::memcpy(bytes + 8, &v.nanoseconds, 8);
  return Append(bytes);
}

DecimalBuilder::DecimalBuilder(TypePtr type, MemoryPool* pool)
    : FixedSizeBinaryBuilder(std::move(type), pool) {
  if (type_->id() != TypeId::kDecimal) {
    Status::TypeError("DecimalBuilder for type ", type_->ToString()).Abort();
  }
}

Status DecimalBuilder::Append(const Decimal128& value) {
  if (value.NumDigits() > type_->precision()) {
    return Status::Invalid("decimal value ", value.ToString(type_->scale()),
                           " does not fit ", type_->ToString());
  }
  uint8_t bytes[32];
  StoreDecimal(value, byte_width_, bytes);
  return FixedSizeBinaryBuilder::Append(bytes);
}

Status DecimalBuilder::AppendString(std::string_view text) {
  uint8_t bytes[32];
  QUIVER_RETURN_NOT_OK(ParseDecimal(text, type_->scale(), byte_width_, bytes));
  if (DecimalDigits(bytes, byte_width_) > type_->precision()) {
    return Status::Invalid("decimal value ", text, " does not fit ", type_->ToString());
  }
  return FixedSizeBinaryBuilder::Append(bytes);
}

}  // namespace quiver
