#include "quiver/columnar/array_data.h"

#include "quiver/columnar/bit_util.h"

namespace quiver {

ArrayDataPtr ArrayData::Make(TypePtr type, int64_t length,
                             std::vector<std::shared_ptr<Buffer>> buffers,
                             int64_t null_count, int64_t offset) {
  auto data = std::make_shared<ArrayData>();
  data->type = std::move(type);
  data->length = length;
  data->buffers = std::move(buffers);
  data->null_count = null_count;
  data->offset = offset;
  if (data->type && data->type->id() == TypeId::kNull) {
    data->null_count = length;
  } else if (data->buffers.empty() || data->buffers[0] == nullptr) {
    data->null_count = 0;
  }
  return data;
}

ArrayDataPtr ArrayData::Make(TypePtr type, int64_t length,
                             std::vector<std::shared_ptr<Buffer>> buffers,
                             std::vector<ArrayDataPtr> child_data, int64_t null_count,
                             int64_t offset) {
  auto data = Make(std::move(type), length, std::move(buffers), null_count, offset);
  data->child_data = std::move(child_data);
  return data;
}

ArrayDataPtr ArrayData::Slice(int64_t off, int64_t len) const {
  auto copy = std::make_shared<ArrayData>(*this);
  copy->offset = offset + off;
  copy->length = len;
  if (type->id() == TypeId::kNull) {
    copy->null_count = len;
  } else if (null_count == 0 || buffers.empty() || buffers[0] == nullptr) {
    copy->null_count = 0;
  } else if (off == 0 && len == length) {
    copy->null_count = null_count;
  } else {
    copy->null_count = kUnknownNullCount;
  }
  return copy;
}

Result<ArrayDataPtr> ArrayData::SliceSafe(int64_t off, int64_t len) const {
  if (off < 0 || len < 0 || off > length || len > length - off) {
    return Status::IndexError("slice [", off, ", +", len, ") is outside an array of ",
                              length, " values");
  }
  return Slice(off, len);
}

int64_t ArrayData::GetNullCount() const {
  if (null_count != kUnknownNullCount) return null_count;
  if (type->id() == TypeId::kNull) {
    null_count = length;
  } else if (buffers.empty() || buffers[0] == nullptr) {
    null_count = 0;
  } else {
    null_count = length - bit_util::CountSetBits(buffers[0]->data(), offset, length);
  }
  return null_count;
}

bool ArrayData::IsValid(int64_t i) const {
  if (type->id() == TypeId::kNull) return false;
  if (buffers.empty() || buffers[0] == nullptr || null_count == 0) return true;
  return bit_util::GetBit(buffers[0]->data(), offset + i);
}

void ForEachBuffer(const ArrayData& data, const std::function<void(const Buffer&)>& fn) {
  for (const auto& b : data.buffers) {
    if (b != nullptr && b->size() > 0) fn(*b);
  }
  for (const auto& c : data.child_data) {
    if (c != nullptr) ForEachBuffer(*c, fn);
  }
  if (data.dictionary != nullptr) ForEachBuffer(*data.dictionary, fn);
}

}  // namespace quiver
