// HugeTables: one logical table whose chunks were published by different
// nodes and live in different nodes' regions, ordered by row index.
#pragma once

#include <cstdint>
#include <vector>

#include "quiver/columnar/table.h"

namespace quiver::control {

struct PositionedChunk {
  uint64_t first_row = 0;  // where the chunk's rows start in the whole table
  uint32_t publisher = 0;  // node that published it (for error messages)
  RecordBatchPtr batch;
};

// Orders the chunks by first_row and assembles them into one Table whose
// columns are chunked arrays (zero-copy). Fails, naming the chunks, when the
// schemas differ, the first chunk does not start at row 0, or two chunks
// leave a gap or overlap.
Result<TablePtr> AssembleHugeTable(std::vector<PositionedChunk> chunks);

}  // namespace quiver::control
