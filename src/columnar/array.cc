#include "quiver/columnar/array.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "quiver/columnar/layout.h"

namespace quiver {

ArrayPtr Array::Slice(int64_t offset, int64_t length) const {
  offset = std::clamp<int64_t>(offset, 0, data_->length);
  length = std::clamp<int64_t>(length, 0, data_->length - offset);
  return MakeArray(data_->Slice(offset, length));
}

NullArray::NullArray(int64_t length)
    : Array(ArrayData::Make(null(), length, {nullptr}, length)) {}

int64_t BooleanArray::true_count() const {
  int64_t n = 0;
  for (int64_t i = 0; i < length(); ++i) n += (IsValid(i) && Value(i)) ? 1 : 0;
  return n;
}

int64_t BooleanArray::false_count() const {
  return length() - null_count() - true_count();
}

template <typename OffsetType>
BaseListArray<OffsetType>::BaseListArray(ArrayDataPtr data) : Array(std::move(data)) {
  if (!data_->child_data.empty() && data_->child_data[0] != nullptr) {
    values_ = MakeArray(data_->child_data[0]);
  }
}
template class BaseListArray<int32_t>;
template class BaseListArray<int64_t>;

MapArray::MapArray(ArrayDataPtr data) : ListArray(std::move(data)) {
  if (values_ != nullptr && values_->data()->child_data.size() == 2 &&
      values_->data()->child_data[0] != nullptr &&
      values_->data()->child_data[1] != nullptr) {
    const ArrayDataPtr& entries = values_->data();
    keys_ = MakeArray(entries->child_data[0]->Slice(entries->offset, entries->length));
    items_ = MakeArray(entries->child_data[1]->Slice(entries->offset, entries->length));
  }
}

FixedSizeListArray::FixedSizeListArray(ArrayDataPtr data) : Array(std::move(data)) {
  if (!data_->child_data.empty() && data_->child_data[0] != nullptr) {
    values_ = MakeArray(data_->child_data[0]);
  }
}

StructArray::StructArray(ArrayDataPtr data) : Array(std::move(data)) {}

ArrayPtr StructArray::field(int i) const {
  const ArrayDataPtr& child = data_->child_data[i];
  if (data_->offset == 0 && child->length == data_->length) return MakeArray(child);
  return MakeArray(child->Slice(data_->offset, data_->length));
}

ArrayPtr StructArray::GetFieldByName(std::string_view name) const {
  const TypePtr& t = data_->type;
  for (int i = 0; i < t->num_fields(); ++i) {
    if (t->field(i)->name() == name) return field(i);
  }
  return nullptr;
}

Result<std::shared_ptr<StructArray>> StructArray::Make(
    const std::vector<ArrayPtr>& children, const std::vector<std::string>& names) {
  if (children.size() != names.size()) {
    return Status::Invalid("struct: ", children.size(), " children but ", names.size(),
                           " names");
  }
  if (children.empty()) return Status::Invalid("struct needs at least one child");
  FieldVector fields;
  std::vector<ArrayDataPtr> child_data;
  int64_t length = children[0]->length();
  for (size_t i = 0; i < children.size(); ++i) {
    if (children[i]->length() != length) {
      return Status::Invalid("struct child ", i, " has length ", children[i]->length(),
                             ", expected ", length);
    }
    fields.push_back(quiver::field(names[i], children[i]->type()));
    child_data.push_back(children[i]->data());
  }
  auto data = ArrayData::Make(struct_(std::move(fields)), length, {nullptr},
                              std::move(child_data), 0);
  return std::make_shared<StructArray>(std::move(data));
}

UnionArray::UnionArray(ArrayDataPtr data) : Array(std::move(data)) {}

namespace {
Result<TypePtr> UnionTypeFor(TypeId id, const std::vector<ArrayPtr>& children,
                             TypePtr type) {
  if (type == nullptr) {
    FieldVector fields;
    for (size_t k = 0; k < children.size(); ++k) {
      fields.push_back(field(std::to_string(k), children[k]->type()));
    }
    return id == TypeId::kSparseUnion ? MakeSparseUnion(std::move(fields))
                                      : MakeDenseUnion(std::move(fields));
  }
  if (type->id() != id) {
    return Status::TypeError("expected a ",
                             id == TypeId::kSparseUnion ? "sparse" : "dense",
                             " union type, got ", type->ToString());
  }
  return type;
}

Result<std::shared_ptr<Buffer>> CopyToBuffer(const void* data, int64_t size) {
  QUIVER_ASSIGN_OR_RAISE(auto buf, AllocateResizableBuffer(size, nullptr));
  if (size > 0) std::memcpy(buf->mutable_data(), data, static_cast<size_t>(size));
  buf->ZeroPadding();
  return std::shared_ptr<Buffer>(std::move(buf));
}
}  // namespace

Result<std::shared_ptr<UnionArray>> UnionArray::MakeSparse(
    const std::vector<int8_t>& type_codes, const std::vector<ArrayPtr>& children,
    TypePtr type) {
  QUIVER_ASSIGN_OR_RAISE(type, UnionTypeFor(TypeId::kSparseUnion, children, type));
  QUIVER_ASSIGN_OR_RAISE(
      auto ids, CopyToBuffer(type_codes.data(), static_cast<int64_t>(type_codes.size())));
  std::vector<ArrayDataPtr> child_data;
  for (const auto& c : children) child_data.push_back(c->data());
  auto data = ArrayData::Make(std::move(type), static_cast<int64_t>(type_codes.size()),
                              {nullptr, std::move(ids)}, std::move(child_data), 0);
  auto out = std::make_shared<UnionArray>(std::move(data));
  QUIVER_RETURN_NOT_OK(out->ValidateFull());
  return out;
}

Result<std::shared_ptr<UnionArray>> UnionArray::MakeDense(
    const std::vector<int8_t>& type_codes, const std::vector<int32_t>& offsets,
    const std::vector<ArrayPtr>& children, TypePtr type) {
  QUIVER_ASSIGN_OR_RAISE(type, UnionTypeFor(TypeId::kDenseUnion, children, type));
  if (offsets.size() != type_codes.size()) {
    return Status::Invalid("dense union: ", type_codes.size(), " type codes but ",
                           offsets.size(), " offsets");
  }
  const auto n = static_cast<int64_t>(type_codes.size());
  QUIVER_ASSIGN_OR_RAISE(auto ids, CopyToBuffer(type_codes.data(), n));
  QUIVER_ASSIGN_OR_RAISE(auto offs, CopyToBuffer(offsets.data(), n * 4));
  std::vector<ArrayDataPtr> child_data;
  for (const auto& c : children) child_data.push_back(c->data());
  auto data =
      ArrayData::Make(std::move(type), n, {nullptr, std::move(ids), std::move(offs)},
                      std::move(child_data), 0);
  auto out = std::make_shared<UnionArray>(std::move(data));
  QUIVER_RETURN_NOT_OK(out->ValidateFull());
  return out;
}

template <typename OffsetType>
BaseListViewArray<OffsetType>::BaseListViewArray(ArrayDataPtr data)
    : Array(std::move(data)) {
  if (!data_->child_data.empty() && data_->child_data[0] != nullptr) {
    values_ = MakeArray(data_->child_data[0]);
  }
}

template <typename OffsetType>
Result<std::shared_ptr<BaseListViewArray<OffsetType>>>
BaseListViewArray<OffsetType>::Make(const std::vector<OffsetType>& offsets,
                                    const std::vector<OffsetType>& sizes,
                                    const ArrayPtr& values,
                                    const std::vector<bool>& valid, TypePtr type) {
  constexpr TypeId kId =
      sizeof(OffsetType) == 4 ? TypeId::kListView : TypeId::kLargeListView;
  if (values == nullptr) return Status::Invalid("list view: no values array");
  if (type == nullptr) {
    type = kId == TypeId::kListView ? list_view(values->type())
                                    : large_list_view(values->type());
  }
  if (type->id() != kId) {
    return Status::TypeError("expected a ", kId == TypeId::kListView ? "" : "large_",
                             "list_view type, got ", type->ToString());
  }
  if (sizes.size() != offsets.size()) {
    return Status::Invalid("list view: ", offsets.size(), " offsets but ", sizes.size(),
                           " sizes");
  }
  if (!valid.empty() && valid.size() != offsets.size()) {
    return Status::Invalid("list view: ", offsets.size(), " offsets but ", valid.size(),
                           " validity flags");
  }
  const auto n = static_cast<int64_t>(offsets.size());
  std::shared_ptr<Buffer> validity;
  int64_t null_count = 0;
  if (!valid.empty()) {
    QUIVER_ASSIGN_OR_RAISE(auto bits,
                           AllocateZeroedBuffer(bit_util::BytesForBits(n), nullptr));
    for (int64_t i = 0; i < n; ++i) {
      if (valid[static_cast<size_t>(i)]) {
        bit_util::SetBit(bits->mutable_data(), i);
      } else {
        ++null_count;
      }
    }
    validity = std::move(bits);
  }
  const auto width = static_cast<int64_t>(sizeof(OffsetType));
  QUIVER_ASSIGN_OR_RAISE(auto offs, CopyToBuffer(offsets.data(), n * width));
  QUIVER_ASSIGN_OR_RAISE(auto szs, CopyToBuffer(sizes.data(), n * width));
  auto data = ArrayData::Make(std::move(type), n,
                              {std::move(validity), std::move(offs), std::move(szs)},
                              {values->data()}, null_count);
  auto out = std::make_shared<BaseListViewArray>(std::move(data));
  QUIVER_RETURN_NOT_OK(out->ValidateFull());
  return out;
}

template class BaseListViewArray<int32_t>;
template class BaseListViewArray<int64_t>;

DictionaryArray::DictionaryArray(ArrayDataPtr data) : Array(std::move(data)) {
  auto idx = std::make_shared<ArrayData>(*data_);
  idx->type = data_->type->index_type();
  idx->dictionary = nullptr;
  indices_ = MakeArray(std::move(idx));
  if (data_->dictionary != nullptr) dictionary_ = MakeArray(data_->dictionary);
}

int64_t DictionaryArray::GetValueIndex(int64_t i) const {
  const ArrayData& d = *indices_->data();
  switch (d.type->id()) {
    case TypeId::kInt8:
      return d.GetValues<int8_t>(1)[i];
    case TypeId::kInt16:
      return d.GetValues<int16_t>(1)[i];
    case TypeId::kInt32:
      return d.GetValues<int32_t>(1)[i];
    case TypeId::kInt64:
      return d.GetValues<int64_t>(1)[i];
    case TypeId::kUInt8:
      return d.GetValues<uint8_t>(1)[i];
    case TypeId::kUInt16:
      return d.GetValues<uint16_t>(1)[i];
    case TypeId::kUInt32:
      return d.GetValues<uint32_t>(1)[i];
    case TypeId::kUInt64:
      return static_cast<int64_t>(d.GetValues<uint64_t>(1)[i]);
    default:
      return -1;
  }
}

ArrayPtr MakeArray(ArrayDataPtr data) {
  switch (data->type->id()) {
    case TypeId::kNull:
      return std::make_shared<NullArray>(std::move(data));
    case TypeId::kBool:
      return std::make_shared<BooleanArray>(std::move(data));
    case TypeId::kInt8:
      return std::make_shared<Int8Array>(std::move(data));
    case TypeId::kInt16:
      return std::make_shared<Int16Array>(std::move(data));
    case TypeId::kInt32:
      return std::make_shared<Int32Array>(std::move(data));
    case TypeId::kInt64:
      return std::make_shared<Int64Array>(std::move(data));
    case TypeId::kUInt8:
      return std::make_shared<UInt8Array>(std::move(data));
    case TypeId::kUInt16:
      return std::make_shared<UInt16Array>(std::move(data));
    case TypeId::kUInt32:
      return std::make_shared<UInt32Array>(std::move(data));
    case TypeId::kUInt64:
      return std::make_shared<UInt64Array>(std::move(data));
    case TypeId::kHalfFloat:
      return std::make_shared<HalfFloatArray>(std::move(data));
    case TypeId::kFloat:
      return std::make_shared<FloatArray>(std::move(data));
    case TypeId::kDouble:
      return std::make_shared<DoubleArray>(std::move(data));
    case TypeId::kDecimal:
      return std::make_shared<DecimalArray>(std::move(data));
    case TypeId::kDate32:
      return std::make_shared<Date32Array>(std::move(data));
    case TypeId::kDate64:
      return std::make_shared<Date64Array>(std::move(data));
    case TypeId::kTime32:
      return std::make_shared<Time32Array>(std::move(data));
    case TypeId::kTime64:
      return std::make_shared<Time64Array>(std::move(data));
    case TypeId::kTimestamp:
      return std::make_shared<TimestampArray>(std::move(data));
    case TypeId::kDuration:
      return std::make_shared<DurationArray>(std::move(data));
    case TypeId::kInterval:
      return std::make_shared<IntervalArray>(std::move(data));
    case TypeId::kString:
    case TypeId::kBinary:
      return std::make_shared<BinaryArray>(std::move(data));
    case TypeId::kLargeString:
    case TypeId::kLargeBinary:
      return std::make_shared<LargeBinaryArray>(std::move(data));
    case TypeId::kFixedSizeBinary:
      return std::make_shared<FixedSizeBinaryArray>(std::move(data));
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      return std::make_shared<BinaryViewArray>(std::move(data));
    case TypeId::kList:
      return std::make_shared<ListArray>(std::move(data));
    case TypeId::kLargeList:
      return std::make_shared<LargeListArray>(std::move(data));
    case TypeId::kListView:
      return std::make_shared<ListViewArray>(std::move(data));
    case TypeId::kLargeListView:
      return std::make_shared<LargeListViewArray>(std::move(data));
    case TypeId::kMap:
      return std::make_shared<MapArray>(std::move(data));
    case TypeId::kFixedSizeList:
      return std::make_shared<FixedSizeListArray>(std::move(data));
    case TypeId::kStruct:
      return std::make_shared<StructArray>(std::move(data));
    case TypeId::kDictionary:
      return std::make_shared<DictionaryArray>(std::move(data));
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion:
      return std::make_shared<UnionArray>(std::move(data));
    case TypeId::kRunEndEncoded:
      return std::make_shared<RunEndEncodedArray>(std::move(data));
  }
  return std::make_shared<Array>(std::move(data));
}

namespace {

Result<ArrayDataPtr> MakeNullData(const TypePtr& type, int64_t length, MemoryPool* pool,
                                  bool all_null);

// A union's nulls are its children's: every slot names the first child, a
// null there (sparse: at the same position; dense: all at offset 0).
Result<ArrayDataPtr> MakeNullUnion(const TypePtr& type, int64_t length, MemoryPool* pool,
                                   bool all_null) {
  if (length > 0 && type->num_fields() == 0) {
    return Status::Invalid("a union of no children holds no value, not ", length);
  }
  const bool dense = type->id() == TypeId::kDenseUnion;
  QUIVER_ASSIGN_OR_RAISE(auto ids, AllocateZeroedBuffer(length, pool));
  if (length > 0) {
    std::memset(ids->mutable_data(), type->type_codes()[0], static_cast<size_t>(length));
  }
  std::vector<std::shared_ptr<Buffer>> buffers{nullptr, std::move(ids)};
  if (dense) {
    QUIVER_ASSIGN_OR_RAISE(auto offsets, AllocateZeroedBuffer(4 * length, pool));
    buffers.push_back(std::move(offsets));
  }
  std::vector<ArrayDataPtr> children;
  for (int k = 0; k < type->num_fields(); ++k) {
    const int64_t n = dense ? (k == 0 && length > 0 ? 1 : 0) : length;
    QUIVER_ASSIGN_OR_RAISE(auto child,
                           MakeNullData(type->field(k)->type(), n, pool, all_null));
    children.push_back(std::move(child));
  }
  return ArrayData::Make(type, length, std::move(buffers), std::move(children), 0);
}

// One run (none when empty) of a null value: the nulls of a run-end
// encoded array are its values'.
Result<ArrayDataPtr> MakeNullRunEndEncoded(const TypePtr& type, int64_t length,
                                           bool all_null, MemoryPool* pool) {
  const int width = type->run_end_type()->byte_width();
  const int64_t max_end = width == 2   ? std::numeric_limits<int16_t>::max()
                          : width == 4 ? std::numeric_limits<int32_t>::max()
                                       : std::numeric_limits<int64_t>::max();
  if (length > max_end) {
    return Status::CapacityError(type->ToString(), ": ", length,
                                 " slots do not fit one run end");
  }
  const int64_t runs = length > 0 ? 1 : 0;
  QUIVER_ASSIGN_OR_RAISE(auto ends, AllocateZeroedBuffer(width * runs, pool));
  if (runs > 0) {  // little-endian: the low bytes of the int64
    const int64_t end = length;
    std::memcpy(ends->mutable_data(), &end, static_cast<size_t>(width));
  }
  auto run_ends =
      ArrayData::Make(type->run_end_type(), runs, {nullptr, std::move(ends)}, 0);
  QUIVER_ASSIGN_OR_RAISE(auto values,
                         MakeNullData(type->value_type(), runs, pool, all_null));
  return ArrayData::Make(type, length, {nullptr},
                         {std::move(run_ends), std::move(values)}, 0);
}

Result<ArrayDataPtr> MakeNullData(const TypePtr& type, int64_t length, MemoryPool* pool,
                                  bool all_null) {
  if (length < 0) return Status::Invalid("negative array length ", length);
  const TypeId id = type->id();
  if (id == TypeId::kNull) return ArrayData::Make(type, length, {nullptr}, length);
  if (IsUnion(id)) return MakeNullUnion(type, length, pool, all_null);
  if (id == TypeId::kRunEndEncoded) {
    return MakeNullRunEndEncoded(type, length, all_null, pool);
  }
  std::shared_ptr<Buffer> validity;
  if (all_null) {
    QUIVER_ASSIGN_OR_RAISE(validity,
                           AllocateZeroedBuffer(bit_util::BytesForBits(length), pool));
  }
  const int64_t null_count = all_null ? length : 0;
  std::vector<std::shared_ptr<Buffer>> buffers{validity};
  // The other buffers zeroed: values 0, offsets, sizes and views all empty
  // (views inline, no variadic data buffer), no data bytes.
  const DataTypeLayout layout = LayoutOf(*type);
  for (size_t i = 1; i < layout.buffers.size(); ++i) {
    const BufferLayout& b = layout.buffers[i];
    int64_t elements = 0, bytes = 0;
    if (!b.Elements(0, length, &elements) || !b.BytesFor(elements, &bytes)) {
      return Status::Invalid("an array of ", length, " ", type->ToString(), ": the ",
                             b.name, " buffer size overflows");
    }
    QUIVER_ASSIGN_OR_RAISE(auto buf, AllocateZeroedBuffer(bytes, pool));
    buffers.push_back(std::move(buf));
  }
  std::vector<ArrayDataPtr> children;
  if (id == TypeId::kList || id == TypeId::kLargeList || id == TypeId::kMap ||
      IsListView(id)) {  // empty lists of an empty child
    QUIVER_ASSIGN_OR_RAISE(auto child, MakeNullData(type->value_type(), 0, pool, false));
    children.push_back(std::move(child));
  } else if (id == TypeId::kFixedSizeList) {
    QUIVER_ASSIGN_OR_RAISE(
        auto child,
        MakeNullData(type->value_type(), length * type->list_size(), pool, true));
    children.push_back(std::move(child));
  } else if (id == TypeId::kStruct) {
    for (const auto& f : type->fields()) {
      QUIVER_ASSIGN_OR_RAISE(auto child, MakeNullData(f->type(), length, pool, true));
      children.push_back(std::move(child));
    }
  }
  auto data =
      ArrayData::Make(type, length, std::move(buffers), std::move(children), null_count);
  if (id == TypeId::kDictionary) {
    QUIVER_ASSIGN_OR_RAISE(data->dictionary,
                           MakeNullData(type->value_type(), 0, pool, false));
  }
  return data;
}

}  // namespace

Result<ArrayPtr> MakeArrayOfNull(const TypePtr& type, int64_t length, MemoryPool* pool) {
  QUIVER_ASSIGN_OR_RAISE(auto data, MakeNullData(type, length, pool, true));
  return MakeArray(std::move(data));
}

Result<ArrayPtr> MakeEmptyArray(const TypePtr& type, MemoryPool* pool) {
  QUIVER_ASSIGN_OR_RAISE(auto data, MakeNullData(type, 0, pool, false));
  return MakeArray(std::move(data));
}

}  // namespace quiver

namespace quiver {

int32_t IntervalArray::GetMonths(int64_t i) const {
  int32_t v;
  std::memcpy(&v, GetValue(i), 4);
  return v;
}

DayTimeInterval IntervalArray::GetDayTime(int64_t i) const {
  DayTimeInterval v;
  std::memcpy(&v.days, GetValue(i), 4);
  std::memcpy(&v.milliseconds, GetValue(i) + 4, 4);
  return v;
}

MonthDayNanoInterval IntervalArray::GetMonthDayNano(int64_t i) const {
  MonthDayNanoInterval v;
  std::memcpy(&v.months, GetValue(i), 4);
  std::memcpy(&v.days, GetValue(i) + 4, 4);
  std::memcpy(&v.nanoseconds, GetValue(i) + 8, 8);
  return v;
}

std::string FormatInterval(IntervalUnit unit, const uint8_t* value) {
  int32_t a, b;
  std::memcpy(&a, value, 4);
  switch (unit) {
    case IntervalUnit::kYearMonth:
      return std::to_string(a) + "M";
    case IntervalUnit::kDayTime:
      std::memcpy(&b, value + 4, 4);
      return std::to_string(a) + "d" + std::to_string(b) + "ms";
    case IntervalUnit::kMonthDayNano: {
      int64_t ns;
      std::memcpy(&b, value + 4, 4);
      std::memcpy(&ns, value + 8, 8);
      return std::to_string(a) + "M" + std::to_string(b) + "d" + std::to_string(ns) +
             "ns";
    }
  }
  return "?";
}

}  // namespace quiver
