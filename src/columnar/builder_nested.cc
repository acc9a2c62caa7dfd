// List, large list, list view, map, fixed-size list, struct, union and
// run-end encoded builders.
#include <limits>

#include "columnar/run_end_util.h"
#include "quiver/columnar/builder.h"

namespace quiver {

namespace {

Status CheckChildType(const TypePtr& declared, const ArrayBuilder& child,
                      const char* what) {
  if (!declared->Equals(*child.type())) {
    return Status::TypeError(what, ": child builder has type ", child.type()->ToString(),
                             " but the type declares ", declared->ToString());
  }
  return Status::OK();
}

// Appends n nulls to a child, or empty values when its field is not nullable.
Status AppendChildNulls(ArrayBuilder* child, const Field& field, int64_t n) {
  return field.nullable() ? child->AppendNulls(n) : child->AppendEmptyValues(n);
}

Result<ArrayDataPtr> FinishChild(ArrayBuilder* child) {
  ArrayDataPtr data;
  QUIVER_RETURN_NOT_OK(child->FinishInternal(&data));
  child->Reset();
  return data;
}

}  // namespace

// ---------------------------------------------------------------------------
// BaseOffsetListBuilder

template <typename OffsetType>
BaseOffsetListBuilder<OffsetType>::BaseOffsetListBuilder(
    MemoryPool* pool, std::shared_ptr<ArrayBuilder> value_builder, TypePtr type,
    TypeId expected, const char* kind, int64_t extra_offsets)
    : ArrayBuilder(std::move(type), pool),
      offsets_(pool_),
      extra_offsets_(extra_offsets) {
  if (type_->id() != expected) {
    Status::TypeError(kind, " builder given type ", type_->ToString()).Abort();
  }
  CheckChildType(type_->value_type(), *value_builder, type_->name().c_str()).Abort();
  children_.push_back(std::move(value_builder));
}

template <typename OffsetType>
Status BaseOffsetListBuilder<OffsetType>::Resize(int64_t capacity) {
  QUIVER_RETURN_NOT_OK(offsets_.Reserve(capacity + extra_offsets_ - offsets_.length()));
  return ArrayBuilder::Resize(capacity);
}

template <typename OffsetType>
Status BaseOffsetListBuilder<OffsetType>::AppendNextOffset() {
  const int64_t n = value_builder()->length();
  if (n > std::numeric_limits<OffsetType>::max()) {
    return Status::CapacityError(type_->ToString(), " cannot hold more than ",
                                 std::numeric_limits<OffsetType>::max(), " child values");
  }
  offsets_.UnsafeAppend(static_cast<OffsetType>(n));
  return Status::OK();
}

template <typename OffsetType>
Status BaseOffsetListBuilder<OffsetType>::Append(bool is_valid) {
  QUIVER_RETURN_NOT_OK(Reserve(1));
  QUIVER_RETURN_NOT_OK(AppendNextOffset());
  UnsafeAppendToBitmap(is_valid);
  return Status::OK();
}

template <typename OffsetType>
Status BaseOffsetListBuilder<OffsetType>::AppendNulls(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  for (int64_t i = 0; i < n; ++i) QUIVER_RETURN_NOT_OK(AppendNextOffset());
  UnsafeAppendToBitmap(n, false);
  return Status::OK();
}

template <typename OffsetType>
Status BaseOffsetListBuilder<OffsetType>::AppendEmptyValues(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  for (int64_t i = 0; i < n; ++i) QUIVER_RETURN_NOT_OK(AppendNextOffset());
  UnsafeAppendToBitmap(n, true);
  return Status::OK();
}

template <typename OffsetType>
void BaseOffsetListBuilder<OffsetType>::Reset() {
  ArrayBuilder::Reset();
  offsets_.Reset();
}

template class BaseOffsetListBuilder<int32_t>;
template class BaseOffsetListBuilder<int64_t>;

// ---------------------------------------------------------------------------
// BaseListBuilder

template <typename OffsetType>
BaseListBuilder<OffsetType>::BaseListBuilder(MemoryPool* pool,
                                             std::shared_ptr<ArrayBuilder> value_builder,
                                             TypePtr type)
    : BaseOffsetListBuilder<OffsetType>(
          pool, value_builder,
          type ? std::move(type)
               : (sizeof(OffsetType) == 4 ? list(value_builder->type())
                                          : large_list(value_builder->type())),
          sizeof(OffsetType) == 4 ? TypeId::kList : TypeId::kLargeList, "list",
          /*extra_offsets=*/1) {}

template <typename OffsetType>
Status BaseListBuilder<OffsetType>::AppendValues(const OffsetType* offsets, int64_t n,
                                                 const uint8_t* valid_bytes) {
  auto& own = this->offsets_;
  const int64_t child_length = this->value_builder()->length();
  int64_t previous = own.length() > 0 ? own.data()[own.length() - 1] : 0;
  for (int64_t i = 0; i < n; ++i) {
    if (offsets[i] < previous || offsets[i] > child_length) {
      return Status::Invalid(this->type_->ToString(), ": offset ", offsets[i], " at ", i,
                             " is outside [", previous, ", ", child_length, "]");
    }
    previous = offsets[i];
  }
  QUIVER_RETURN_NOT_OK(this->Reserve(n));
  QUIVER_RETURN_NOT_OK(own.Append(offsets, n));
  this->UnsafeAppendToBitmap(valid_bytes, n);
  return Status::OK();
}

template <typename OffsetType>
Status BaseListBuilder<OffsetType>::FinishInternal(ArrayDataPtr* out) {
  QUIVER_RETURN_NOT_OK(this->offsets_.Reserve(1));
  QUIVER_RETURN_NOT_OK(this->AppendNextOffset());
  QUIVER_ASSIGN_OR_RAISE(auto values, FinishChild(this->value_builder()));
  QUIVER_ASSIGN_OR_RAISE(auto validity, this->FinishValidity());
  QUIVER_ASSIGN_OR_RAISE(auto offsets, this->offsets_.Finish());
  *out = ArrayData::Make(this->type_, this->length_,
                         {std::move(validity), std::move(offsets)}, {std::move(values)},
                         this->null_count_);
  return Status::OK();
}

template class BaseListBuilder<int32_t>;
template class BaseListBuilder<int64_t>;

// ---------------------------------------------------------------------------
// BaseListViewBuilder

template <typename OffsetType>
BaseListViewBuilder<OffsetType>::BaseListViewBuilder(
    MemoryPool* pool, std::shared_ptr<ArrayBuilder> value_builder, TypePtr type)
    : BaseOffsetListBuilder<OffsetType>(
          pool, value_builder,
          type ? std::move(type)
               : (sizeof(OffsetType) == 4 ? list_view(value_builder->type())
                                          : large_list_view(value_builder->type())),
          sizeof(OffsetType) == 4 ? TypeId::kListView : TypeId::kLargeListView,
          "list view", /*extra_offsets=*/0) {}

template <typename OffsetType>
Status BaseListViewBuilder<OffsetType>::FinishInternal(ArrayDataPtr* out) {
  const int64_t length = this->length_;
  const int64_t child_length = this->value_builder()->length();
  // Each list ends where the next starts, the last at the child's end.
  TypedBufferBuilder<OffsetType> sizes(this->pool_);
  QUIVER_RETURN_NOT_OK(sizes.Reserve(length));
  const OffsetType* starts = this->offsets_.data();
  for (int64_t i = 0; i < length; ++i) {
    const int64_t end = i + 1 < length ? starts[i + 1] : child_length;
    sizes.UnsafeAppend(static_cast<OffsetType>(end - starts[i]));
  }
  QUIVER_ASSIGN_OR_RAISE(auto values, FinishChild(this->value_builder()));
  QUIVER_ASSIGN_OR_RAISE(auto validity, this->FinishValidity());
  QUIVER_ASSIGN_OR_RAISE(auto offsets, this->offsets_.Finish());
  QUIVER_ASSIGN_OR_RAISE(auto size_buffer, sizes.Finish());
  *out =
      ArrayData::Make(this->type_, length,
                      {std::move(validity), std::move(offsets), std::move(size_buffer)},
                      {std::move(values)}, this->null_count_);
  return Status::OK();
}

template class BaseListViewBuilder<int32_t>;
template class BaseListViewBuilder<int64_t>;

// ---------------------------------------------------------------------------
// MapBuilder

MapBuilder::MapBuilder(MemoryPool* pool, std::shared_ptr<ArrayBuilder> key_builder,
                       std::shared_ptr<ArrayBuilder> item_builder, bool keys_sorted)
    : MapBuilder(pool, key_builder, item_builder,
                 map(key_builder->type(), item_builder->type(), keys_sorted)) {}

MapBuilder::MapBuilder(MemoryPool* pool, std::shared_ptr<ArrayBuilder> key_builder,
                       std::shared_ptr<ArrayBuilder> item_builder, TypePtr type)
    : ArrayBuilder(std::move(type), pool),
      key_builder_(std::move(key_builder)),
      item_builder_(std::move(item_builder)),
      offsets_(pool_) {
  if (type_->id() != TypeId::kMap) {
    Status::TypeError("MapBuilder given type ", type_->ToString()).Abort();
  }
  CheckChildType(type_->key_type(), *key_builder_, "map key").Abort();
  CheckChildType(type_->item_type(), *item_builder_, "map item").Abort();
  children_ = {key_builder_, item_builder_};
}

Status MapBuilder::Resize(int64_t capacity) {
  QUIVER_RETURN_NOT_OK(offsets_.Reserve(capacity + 1 - offsets_.length()));
  return ArrayBuilder::Resize(capacity);
}

Status MapBuilder::AdjustEntries() {
  const int64_t n = key_builder_->length();
  if (n != item_builder_->length()) {
    return Status::Invalid("map: ", n, " keys but ", item_builder_->length(),
                           " items were appended");
  }
  if (n > std::numeric_limits<int32_t>::max()) {
    return Status::CapacityError("map cannot hold more than 2^31-1 entries");
  }
  offsets_.UnsafeAppend(static_cast<int32_t>(n));
  return Status::OK();
}

Status MapBuilder::Append() {
  QUIVER_RETURN_NOT_OK(Reserve(1));
  QUIVER_RETURN_NOT_OK(AdjustEntries());
  UnsafeAppendToBitmap(true);
  return Status::OK();
}

Status MapBuilder::AppendNulls(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  for (int64_t i = 0; i < n; ++i) QUIVER_RETURN_NOT_OK(AdjustEntries());
  UnsafeAppendToBitmap(n, false);
  return Status::OK();
}

Status MapBuilder::AppendEmptyValues(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  for (int64_t i = 0; i < n; ++i) QUIVER_RETURN_NOT_OK(AdjustEntries());
  UnsafeAppendToBitmap(n, true);
  return Status::OK();
}

Status MapBuilder::FinishInternal(ArrayDataPtr* out) {
  QUIVER_RETURN_NOT_OK(offsets_.Reserve(1));
  QUIVER_RETURN_NOT_OK(AdjustEntries());
  QUIVER_ASSIGN_OR_RAISE(auto keys, FinishChild(key_builder_.get()));
  QUIVER_ASSIGN_OR_RAISE(auto items, FinishChild(item_builder_.get()));
  const int64_t entries_length = keys->length;
  auto entries = ArrayData::Make(type_->field(0)->type(), entries_length, {nullptr},
                                 {std::move(keys), std::move(items)}, 0);
  QUIVER_ASSIGN_OR_RAISE(auto validity, FinishValidity());
  QUIVER_ASSIGN_OR_RAISE(auto offsets, offsets_.Finish());
  *out = ArrayData::Make(type_, length_, {std::move(validity), std::move(offsets)},
                         {std::move(entries)}, null_count_);
  return Status::OK();
}

void MapBuilder::Reset() {
  ArrayBuilder::Reset();
  offsets_.Reset();
}

// ---------------------------------------------------------------------------
// FixedSizeListBuilder

FixedSizeListBuilder::FixedSizeListBuilder(MemoryPool* pool,
                                           std::shared_ptr<ArrayBuilder> value_builder,
                                           int32_t list_size)
    : FixedSizeListBuilder(pool, value_builder,
                           fixed_size_list(value_builder->type(), list_size)) {}

FixedSizeListBuilder::FixedSizeListBuilder(MemoryPool* pool,
                                           std::shared_ptr<ArrayBuilder> value_builder,
                                           TypePtr type)
    : ArrayBuilder(std::move(type), pool) {
  if (type_->id() != TypeId::kFixedSizeList) {
    Status::TypeError("FixedSizeListBuilder given type ", type_->ToString()).Abort();
  }
  CheckChildType(type_->value_type(), *value_builder, "fixed_size_list").Abort();
  list_size_ = type_->list_size();
  children_.push_back(std::move(value_builder));
}

Status FixedSizeListBuilder::Append() {
  QUIVER_RETURN_NOT_OK(Reserve(1));
  UnsafeAppendToBitmap(true);
  return Status::OK();
}

Status FixedSizeListBuilder::AppendNulls(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  QUIVER_RETURN_NOT_OK(
      AppendChildNulls(value_builder(), *type_->value_field(), n * list_size_));
  UnsafeAppendToBitmap(n, false);
  return Status::OK();
}

Status FixedSizeListBuilder::AppendEmptyValues(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  QUIVER_RETURN_NOT_OK(value_builder()->AppendEmptyValues(n * list_size_));
  UnsafeAppendToBitmap(n, true);
  return Status::OK();
}

Status FixedSizeListBuilder::FinishInternal(ArrayDataPtr* out) {
  const int64_t expected = length_ * list_size_;
  if (value_builder()->length() != expected) {
    return Status::Invalid(type_->ToString(), ": ", length_, " lists need ", expected,
                           " child values, ", value_builder()->length(),
                           " were appended");
  }
  QUIVER_ASSIGN_OR_RAISE(auto values, FinishChild(value_builder()));
  QUIVER_ASSIGN_OR_RAISE(auto validity, FinishValidity());
  *out = ArrayData::Make(type_, length_, {std::move(validity)}, {std::move(values)},
                         null_count_);
  return Status::OK();
}

// ---------------------------------------------------------------------------
// StructBuilder

StructBuilder::StructBuilder(TypePtr type, MemoryPool* pool,
                             std::vector<std::shared_ptr<ArrayBuilder>> field_builders)
    : ArrayBuilder(std::move(type), pool) {
  if (type_->id() != TypeId::kStruct ||
      type_->num_fields() != static_cast<int>(field_builders.size())) {
    Status::TypeError("StructBuilder: type ", type_->ToString(), " given ",
                      field_builders.size(), " field builders")
        .Abort();
  }
  for (int i = 0; i < type_->num_fields(); ++i) {
    CheckChildType(type_->field(i)->type(), *field_builders[i], "struct field").Abort();
  }
  children_ = std::move(field_builders);
}

Status StructBuilder::Append(bool is_valid) {
  QUIVER_RETURN_NOT_OK(Reserve(1));
  UnsafeAppendToBitmap(is_valid);
  return Status::OK();
}

Status StructBuilder::AppendNulls(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  for (int i = 0; i < num_children(); ++i) {
    QUIVER_RETURN_NOT_OK(AppendChildNulls(child(i), *type_->field(i), n));
  }
  UnsafeAppendToBitmap(n, false);
  return Status::OK();
}

Status StructBuilder::AppendEmptyValues(int64_t n) {
  QUIVER_RETURN_NOT_OK(Reserve(n));
  for (int i = 0; i < num_children(); ++i) {
    QUIVER_RETURN_NOT_OK(child(i)->AppendEmptyValues(n));
  }
  UnsafeAppendToBitmap(n, true);
  return Status::OK();
}

Status StructBuilder::FinishInternal(ArrayDataPtr* out) {
  std::vector<ArrayDataPtr> children;
  for (int i = 0; i < num_children(); ++i) {
    if (child(i)->length() != length_) {
      return Status::Invalid("struct field '", type_->field(i)->name(), "' has ",
                             child(i)->length(), " values, the struct has ", length_);
    }
  }
  for (int i = 0; i < num_children(); ++i) {
    QUIVER_ASSIGN_OR_RAISE(auto c, FinishChild(child(i)));
    children.push_back(std::move(c));
  }
  QUIVER_ASSIGN_OR_RAISE(auto validity, FinishValidity());
  *out = ArrayData::Make(type_, length_, {std::move(validity)}, std::move(children),
                         null_count_);
  return Status::OK();
}

// ---------------------------------------------------------------------------
// UnionBuilder

UnionBuilder::UnionBuilder(TypePtr type, MemoryPool* pool,
                           std::vector<std::shared_ptr<ArrayBuilder>> child_builders)
    : ArrayBuilder(std::move(type), pool), codes_(pool_), offsets_(pool_) {
  if (!IsUnion(type_->id()) ||
      type_->num_fields() != static_cast<int>(child_builders.size())) {
    Status::TypeError("UnionBuilder: type ", type_->ToString(), " given ",
                      child_builders.size(), " child builders")
        .Abort();
  }
  for (int i = 0; i < type_->num_fields(); ++i) {
    CheckChildType(type_->field(i)->type(), *child_builders[i], "union field").Abort();
  }
  children_ = std::move(child_builders);
}

ArrayBuilder* UnionBuilder::builder_for(int8_t type_code) const {
  const int k = type_->child_id(type_code);
  return k < 0 ? nullptr : children_[static_cast<size_t>(k)].get();
}

Status UnionBuilder::Resize(int64_t capacity) {
  QUIVER_RETURN_NOT_OK(codes_.Reserve(capacity - codes_.size()));
  if (dense()) QUIVER_RETURN_NOT_OK(offsets_.Reserve(capacity * 4 - offsets_.size()));
  return ArrayBuilder::Resize(capacity);
}

Status UnionBuilder::Append(int8_t type_code) {
  const int k = type_->child_id(type_code);
  if (k < 0) {
    return Status::Invalid("type code ", static_cast<int>(type_code), " is not one of ",
                           type_->ToString());
  }
  QUIVER_RETURN_NOT_OK(Reserve(1));
  if (dense()) {
    const int64_t at = child(k)->length();
    if (at > std::numeric_limits<int32_t>::max()) {
      return Status::CapacityError("a dense union child of more than 2^31-1 values");
    }
    const auto offset = static_cast<int32_t>(at);
    offsets_.UnsafeAppend(&offset, 4);
  } else {
    for (int i = 0; i < num_children(); ++i) {
      if (i != k) QUIVER_RETURN_NOT_OK(child(i)->AppendEmptyValue());
    }
  }
  codes_.UnsafeAppend(&type_code, 1);
  UnsafeAppendToBitmap(true);
  return Status::OK();
}

Status UnionBuilder::AppendSlots(int64_t n, bool null) {
  if (num_children() == 0) {
    if (n == 0) return Status::OK();
    return Status::Invalid("a union of no children holds no value");
  }
  QUIVER_RETURN_NOT_OK(Reserve(n));
  ArrayBuilder* first = child(0);
  if (dense() && first->length() + n > std::numeric_limits<int32_t>::max()) {
    return Status::CapacityError("a dense union child of more than 2^31-1 values");
  }
  for (int64_t i = 0; dense() && i < n; ++i) {
    const auto offset = static_cast<int32_t>(first->length() + i);
    offsets_.UnsafeAppend(&offset, 4);
  }
  QUIVER_RETURN_NOT_OK(null ? AppendChildNulls(first, *type_->field(0), n)
                            : first->AppendEmptyValues(n));
  for (int i = 1; !dense() && i < num_children(); ++i) {
    QUIVER_RETURN_NOT_OK(child(i)->AppendEmptyValues(n));
  }
  const int8_t code = type_->type_codes()[0];
  for (int64_t i = 0; i < n; ++i) codes_.UnsafeAppend(&code, 1);
  UnsafeAppendToBitmap(n, true);
  return Status::OK();
}

Status UnionBuilder::AppendNulls(int64_t n) { return AppendSlots(n, true); }
Status UnionBuilder::AppendEmptyValues(int64_t n) { return AppendSlots(n, false); }

Status UnionBuilder::FinishInternal(ArrayDataPtr* out) {
  for (int i = 0; !dense() && i < num_children(); ++i) {
    if (child(i)->length() != length_) {
      return Status::Invalid("sparse union field '", type_->field(i)->name(), "' has ",
                             child(i)->length(), " values, the union has ", length_);
    }
  }
  std::vector<ArrayDataPtr> children;
  for (int i = 0; i < num_children(); ++i) {
    QUIVER_ASSIGN_OR_RAISE(auto c, FinishChild(child(i)));
    children.push_back(std::move(c));
  }
  QUIVER_ASSIGN_OR_RAISE(auto unused_validity, FinishValidity());  // all valid: none
  (void)unused_validity;
  QUIVER_ASSIGN_OR_RAISE(auto codes, codes_.Finish());
  std::vector<std::shared_ptr<Buffer>> buffers{nullptr, std::move(codes)};
  if (dense()) {
    QUIVER_ASSIGN_OR_RAISE(auto offsets, offsets_.Finish());
    buffers.push_back(std::move(offsets));
  }
  *out = ArrayData::Make(type_, length_, std::move(buffers), std::move(children), 0);
  return Status::OK();
}

void UnionBuilder::Reset() {
  ArrayBuilder::Reset();
  codes_.Reset();
  offsets_.Reset();
}

// ---------------------------------------------------------------------------
// RunEndEncodedBuilder

RunEndEncodedBuilder::RunEndEncodedBuilder(MemoryPool* pool,
                                           std::shared_ptr<ArrayBuilder> value_builder,
                                           TypePtr run_end_type, TypePtr type)
    : ArrayBuilder(type ? std::move(type)
                        : run_end_encoded(std::move(run_end_type), value_builder->type()),
                   pool) {
  if (type_->id() != TypeId::kRunEndEncoded) {
    Status::TypeError("run-end encoded builder given type ", type_->ToString()).Abort();
  }
  CheckChildType(type_->value_type(), *value_builder, "run_end_encoded").Abort();
  children_.push_back(std::move(value_builder));
}

Status RunEndEncodedBuilder::Append(int64_t run_length) {
  if (run_length <= 0) {
    return Status::Invalid(type_->ToString(), ": a run of ", run_length,
                           " slots (runs hold at least one)");
  }
  const int64_t max_end = run_end::MaxRunEnd(*type_->run_end_type());
  if (run_length > max_end - length_) {
    return Status::CapacityError(type_->ToString(), " cannot hold more than ", max_end,
                                 " slots");
  }
  run_ends_.push_back(length_ + run_length);
  length_ += run_length;
  return Status::OK();
}

Status RunEndEncodedBuilder::ExtendRun(int64_t n) {
  if (run_ends_.empty()) {
    return Status::Invalid(type_->ToString(), ": no run to extend");
  }
  if (n < 0) return Status::Invalid(type_->ToString(), ": extending a run by ", n);
  if (n > run_end::MaxRunEnd(*type_->run_end_type()) - length_) {
    return Status::CapacityError(type_->ToString(), " cannot hold more than ",
                                 run_end::MaxRunEnd(*type_->run_end_type()), " slots");
  }
  run_ends_.back() += n;
  length_ += n;
  return Status::OK();
}

Status RunEndEncodedBuilder::AppendNulls(int64_t n) {
  if (n == 0) return Status::OK();
  QUIVER_RETURN_NOT_OK(Append(n));
  Status st = value_builder()->AppendNull();
  if (!st.ok()) {  // leave the builder as it was
    run_ends_.pop_back();
    length_ -= n;
  }
  return st;
}

Status RunEndEncodedBuilder::AppendEmptyValues(int64_t n) {
  if (n == 0) return Status::OK();
  QUIVER_RETURN_NOT_OK(Append(n));
  Status st = value_builder()->AppendEmptyValue();
  if (!st.ok()) {
    run_ends_.pop_back();
    length_ -= n;
  }
  return st;
}

Status RunEndEncodedBuilder::FinishInternal(ArrayDataPtr* out) {
  const auto runs = static_cast<int64_t>(run_ends_.size());
  if (value_builder()->length() != runs) {
    return Status::Invalid(type_->ToString(), ": ", runs, " runs but ",
                           value_builder()->length(),
                           " values appended (one value a run)");
  }
  QUIVER_ASSIGN_OR_RAISE(auto ends,
                         run_end::PackRunEnds(run_ends_, *type_->run_end_type(), pool_));
  QUIVER_ASSIGN_OR_RAISE(auto values, FinishChild(value_builder()));
  auto run_end_data =
      ArrayData::Make(type_->run_end_type(), runs, {nullptr, std::move(ends)}, 0);
  *out = ArrayData::Make(type_, length_, {nullptr},
                         {std::move(run_end_data), std::move(values)}, 0);
  return Status::OK();
}

void RunEndEncodedBuilder::Reset() {
  ArrayBuilder::Reset();
  run_ends_.clear();
}

}  // namespace quiver
