// Concatenate: one array (or record batch) holding the values of several,
// in order, in new memory from a pool.
//
// Used to coalesce small batches into large ones (a DuckDB result arrives
// in chunks of 2048 rows; the transport sends batches of 64K rows and more)
// and to append dictionary deltas. Inputs must have passed Validate(): only
// their first and last offsets are trusted, not every one. Every output
// buffer is at most the sum of the inputs' buffers of the same kind, so a
// pool with that much room (plus 64 bytes of padding per buffer) suffices.
#pragma once

#include <vector>

#include "quiver/columnar/array_data.h"
#include "quiver/columnar/record_batch.h"

namespace quiver {

// The values of `arrays` (one type; at least one array) followed one after
// the other. Dictionary-encoded arrays take the dictionary of the last of
// them, which must start with the values of every earlier one (the same
// dictionary, or a growing one as in a stream of deltas); otherwise
// Invalid. TypeError for mixed types; CapacityError when 32-bit offsets
// would overflow.
Result<ArrayDataPtr> Concatenate(const std::vector<const ArrayData*>& arrays,
                                 MemoryPool* pool = nullptr);

// At most the bytes Concatenate allocates on account of `array` (its
// [offset, offset + length) only, whatever its buffers' full size), with
// 64 bytes of alignment and padding per buffer: a pool of the sum over the
// inputs always suffices. Dictionaries are shared, not copied: not counted.
// `array` must have passed Validate().
int64_t ConcatenateBound(const ArrayData& array);

// The rows of `batches` (equal schemas, at least one) as one batch.
Result<RecordBatchPtr> ConcatenateBatches(const std::vector<RecordBatchPtr>& batches,
                                          MemoryPool* pool = nullptr);

}  // namespace quiver
