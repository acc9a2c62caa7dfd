// RunEndEncodedArray (array.h).
#include <cstring>
#include <limits>

#include "columnar/run_end_util.h"
#include "quiver/columnar/array.h"

namespace quiver {

namespace run_end {

int64_t MaxRunEnd(const DataType& run_end_type) {
  switch (run_end_type.id()) {
    case TypeId::kInt16:
      return std::numeric_limits<int16_t>::max();
    case TypeId::kInt32:
      return std::numeric_limits<int32_t>::max();
    default:
      return std::numeric_limits<int64_t>::max();
  }
}

Result<std::shared_ptr<Buffer>> PackRunEnds(const std::vector<int64_t>& ends,
                                            const DataType& run_end_type,
                                            MemoryPool* pool) {
  const int width = run_end_type.byte_width();
  const int64_t max_end = MaxRunEnd(run_end_type);
  const auto n = static_cast<int64_t>(ends.size());
  QUIVER_ASSIGN_OR_RAISE(auto out, AllocateZeroedBuffer(n * width, pool));
  uint8_t* dst = out->mutable_data();
  for (int64_t k = 0; k < n; ++k) {
    const int64_t end = ends[static_cast<size_t>(k)];
    if (end > max_end) {
      return Status::CapacityError("run end ", end, " does not fit ",
                                   run_end_type.ToString());
    }
    if (width == 2) {
      const auto v = static_cast<int16_t>(end);
      std::memcpy(dst + 2 * k, &v, 2);
    } else if (width == 4) {
      const auto v = static_cast<int32_t>(end);
      std::memcpy(dst + 4 * k, &v, 4);
    } else {
      std::memcpy(dst + 8 * k, &end, 8);
    }
  }
  return out;
}

Result<ArrayDataPtr> Unslice(const ArrayDataPtr& d, MemoryPool* pool) {
  const ArrayData& ends = *d->child_data[0];
  if (d->offset == 0 && ends.length > 0 && RunEndAt(ends, ends.length - 1) == d->length) {
    return d;
  }
  if (d->offset == 0 && d->length == 0 && ends.length == 0) return d;
  std::vector<int64_t> rebased;
  int64_t first = -1;
  int64_t pos = 0;
  if (!ForEachRun(*d, 0, d->length, [&](int64_t k, int64_t n) {
        if (first < 0) first = k;
        pos += n;
        rebased.push_back(pos);
        return true;
      })) {
    return Status::Invalid(d->type->ToString(), ": the run ends do not cover offset ",
                           d->offset, " + length ", d->length);
  }
  QUIVER_ASSIGN_OR_RAISE(auto buffer, PackRunEnds(rebased, *ends.type, pool));
  const auto runs = static_cast<int64_t>(rebased.size());
  auto new_ends = ArrayData::Make(ends.type, runs, {nullptr, std::move(buffer)}, 0);
  auto values = d->child_data[1]->Slice(first < 0 ? 0 : first, runs);
  return ArrayData::Make(d->type, d->length, {nullptr},
                         {std::move(new_ends), std::move(values)}, 0);
}

}  // namespace run_end

RunEndEncodedArray::RunEndEncodedArray(ArrayDataPtr data) : Array(std::move(data)) {
  if (data_->child_data.size() == 2 && data_->child_data[0] != nullptr &&
      data_->child_data[1] != nullptr) {
    run_ends_ = MakeArray(data_->child_data[0]);
    values_ = MakeArray(data_->child_data[1]);
  }
}

int64_t RunEndEncodedArray::run_end(int64_t k) const {
  return run_end::RunEndAt(*data_->child_data[0], k);
}

int64_t RunEndEncodedArray::FindPhysicalIndex(int64_t i) const {
  return run_end::FindRun(*data_->child_data[0], data_->offset + i);
}

int64_t RunEndEncodedArray::FindPhysicalOffset() const {
  return run_end::FindRun(*data_->child_data[0], data_->offset);
}

int64_t RunEndEncodedArray::FindPhysicalLength() const {
  if (length() == 0) return 0;
  return FindPhysicalIndex(length() - 1) + 1 - FindPhysicalOffset();
}

Result<std::shared_ptr<RunEndEncodedArray>> RunEndEncodedArray::Make(
    int64_t length, const ArrayPtr& run_ends, const ArrayPtr& values, int64_t offset) {
  if (run_ends == nullptr || values == nullptr) {
    return Status::Invalid("run_end_encoded: run ends and values are both needed");
  }
  if (length < 0 || offset < 0) {
    return Status::Invalid("run_end_encoded: negative length ", length, " or offset ",
                           offset);
  }
  QUIVER_ASSIGN_OR_RAISE(auto type, MakeRunEndEncoded(run_ends->type(), values->type()));
  auto data = ArrayData::Make(std::move(type), length, {nullptr},
                              {run_ends->data(), values->data()}, 0, offset);
  auto out = std::make_shared<RunEndEncodedArray>(std::move(data));
  QUIVER_RETURN_NOT_OK(out->ValidateFull());
  return out;
}

}  // namespace quiver
