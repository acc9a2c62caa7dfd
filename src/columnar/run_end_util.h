// Reading run-end encoded ArrayData (internal): run ends as int64, the run
// holding a logical position, and a walk over the runs of a logical range.
// The run ends child is read through its own offset; "physical index" k
// indexes both children (run end k, value k).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "quiver/columnar/array_data.h"
#include "quiver/columnar/buffer.h"

namespace quiver::run_end {

// Run end k of a run ends child (int16, int32 or int64).
inline int64_t RunEndAt(const ArrayData& run_ends, int64_t k) {
  switch (run_ends.type->id()) {
    case TypeId::kInt16:
      return run_ends.GetValues<int16_t>(1)[k];
    case TypeId::kInt32:
      return run_ends.GetValues<int32_t>(1)[k];
    default:
      return run_ends.GetValues<int64_t>(1)[k];
  }
}

// The first run whose end lies beyond `position` (run ends increasing):
// run_ends.length when none does. Binary search.
inline int64_t FindRun(const ArrayData& run_ends, int64_t position) {
  int64_t lo = 0;
  int64_t hi = run_ends.length;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (RunEndAt(run_ends, mid) <= position) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Calls fn(k, n) for each run k covering logical [begin, begin + len) of the
// run-end encoded `d` (its offset applied), n the slots of the range in it.
// Returns false when fn does, or when the runs (or values) end before the
// range does or do not increase: such an array is invalid, and nothing
// beyond its children is read.
template <typename Fn>
bool ForEachRun(const ArrayData& d, int64_t begin, int64_t len, Fn&& fn) {
  const ArrayData& ends = *d.child_data[0];
  const int64_t runs = std::min(ends.length, d.child_data[1]->length);
  int64_t pos = d.offset + begin;
  const int64_t stop = pos + len;
  int64_t k = FindRun(ends, pos);
  while (pos < stop) {
    if (k >= runs) return false;
    const int64_t end = std::min(RunEndAt(ends, k), stop);
    if (end <= pos) return false;
    if (!fn(k, end - pos)) return false;
    pos = end;
    ++k;
  }
  return true;
}

// The largest run end `run_end_type` (int16, int32 or int64) holds.
int64_t MaxRunEnd(const DataType& run_end_type);

// `ends` as a buffer of `run_end_type` values, from `pool`; CapacityError
// when one does not fit.
Result<std::shared_ptr<Buffer>> PackRunEnds(const std::vector<int64_t>& ends,
                                            const DataType& run_end_type,
                                            MemoryPool* pool);

// The slots of `d` (valid) as a run-end encoded array of offset 0 whose last
// run end is its length: `d` itself when it already is, else run ends
// rebased and clipped (allocated from `pool`) over a zero-copy slice of the
// values its slots use. What a slice becomes in IPC.
Result<ArrayDataPtr> Unslice(const ArrayDataPtr& d, MemoryPool* pool);

}  // namespace quiver::run_end
