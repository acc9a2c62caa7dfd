// Appending one array to another, for dictionary deltas (internal).
#pragma once

#include "quiver/columnar/array_data.h"

namespace quiver::ipc::internal {

// A new array holding the values of `a` followed by those of `b` (same type),
// in memory from `pool`. Both must have passed Validate(): only their first
// and last offsets are trusted. For dictionary-encoded values the result uses
// the dictionary of `b`, which extends that of `a` in a stream of deltas.
Result<ArrayDataPtr> Concatenate(const ArrayData& a, const ArrayData& b,
                                 MemoryPool* pool);

}  // namespace quiver::ipc::internal
