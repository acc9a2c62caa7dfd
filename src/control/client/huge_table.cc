#include "quiver/control/huge_table.h"

#include <algorithm>

namespace quiver::control {

Result<TablePtr> AssembleHugeTable(std::vector<PositionedChunk> chunks) {
  if (chunks.empty()) return Status::Invalid("HugeTable has no chunks");
  for (const auto& c : chunks) {
    if (c.batch == nullptr) return Status::Invalid("HugeTable chunk without a batch");
  }
  std::sort(chunks.begin(), chunks.end(),
            [](const auto& a, const auto& b) { return a.first_row < b.first_row; });
  const SchemaPtr& schema = chunks[0].batch->schema();
  uint64_t next = 0;
  std::vector<RecordBatchPtr> batches;
  for (const auto& c : chunks) {
    const auto rows = static_cast<uint64_t>(c.batch->num_rows());
    if (!c.batch->schema()->Equals(*schema)) {
      return Status::Invalid("HugeTable chunk of node ", c.publisher, " at row ",
                             c.first_row, " has schema\n", c.batch->schema()->ToString(),
                             "\nwhich differs from\n", schema->ToString());
    }
    if (c.first_row > next) {
      return Status::Invalid("HugeTable has a gap: rows [", next, ", ", c.first_row,
                             ") are in no chunk (next chunk from node ", c.publisher,
                             ")");
    }
    if (c.first_row < next) {
      return Status::Invalid("HugeTable chunks overlap: the chunk of node ", c.publisher,
                             " starts at row ", c.first_row, ", before row ", next,
                             " where the previous chunk ends");
    }
    next = c.first_row + rows;
    batches.push_back(c.batch);
  }
  return Table::FromRecordBatches(batches, schema);
}

}  // namespace quiver::control
