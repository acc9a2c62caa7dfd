// ChunkedArray and Table: logical columns made of several arrays (chunks),
// as produced by reading several record batches or, in a cluster, by chunks
// that live on different nodes. Immutable; safe to share between threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "quiver/columnar/record_batch.h"

namespace quiver {

class ChunkedArray;
class Table;
using ChunkedArrayPtr = std::shared_ptr<ChunkedArray>;
using TablePtr = std::shared_ptr<Table>;

class ChunkedArray {
 public:
  // All chunks must have `type` (checked by Validate, not here).
  ChunkedArray(std::vector<ArrayPtr> chunks, TypePtr type);
  // Type taken from the first chunk; there must be at least one.
  static Result<ChunkedArrayPtr> Make(std::vector<ArrayPtr> chunks,
                                      TypePtr type = nullptr);

  const TypePtr& type() const { return type_; }
  int64_t length() const { return length_; }
  int64_t null_count() const;
  int num_chunks() const { return static_cast<int>(chunks_.size()); }
  const ArrayPtr& chunk(int i) const { return chunks_[i]; }
  const std::vector<ArrayPtr>& chunks() const { return chunks_; }

  // Zero-copy slice across chunk boundaries (empty chunks are dropped).
  ChunkedArrayPtr Slice(int64_t offset, int64_t length) const;
  ChunkedArrayPtr Slice(int64_t offset) const { return Slice(offset, length_ - offset); }

  // Logical equality, independent of how values are split into chunks.
  bool Equals(const ChunkedArray& other) const;
  Status Validate() const;
  Status ValidateFull() const;
  std::string ToString() const;

 private:
  std::vector<ArrayPtr> chunks_;
  TypePtr type_;
  int64_t length_ = 0;
};

class Table {
 public:
  static TablePtr Make(SchemaPtr schema, std::vector<ChunkedArrayPtr> columns,
                       int64_t num_rows = -1);
  // Every batch must have the same schema (compared without metadata).
  static Result<TablePtr> FromRecordBatches(const std::vector<RecordBatchPtr>& batches,
                                            SchemaPtr schema = nullptr);

  const SchemaPtr& schema() const { return schema_; }
  int64_t num_rows() const { return num_rows_; }
  int num_columns() const { return static_cast<int>(columns_.size()); }
  const ChunkedArrayPtr& column(int i) const { return columns_[i]; }
  const std::vector<ChunkedArrayPtr>& columns() const { return columns_; }
  ChunkedArrayPtr GetColumnByName(std::string_view name) const;

  TablePtr Slice(int64_t offset, int64_t length) const;
  TablePtr Slice(int64_t offset) const { return Slice(offset, num_rows_ - offset); }

  // Record batches that cover the table, split where any column's chunks
  // split (zero-copy).
  Result<std::vector<RecordBatchPtr>> ToRecordBatches() const;

  bool Equals(const Table& other, bool check_metadata = false) const;
  Status Validate() const;
  Status ValidateFull() const;
  std::string ToString() const;

 private:
  Table(SchemaPtr schema, std::vector<ChunkedArrayPtr> columns, int64_t num_rows)
      : schema_(std::move(schema)), columns_(std::move(columns)), num_rows_(num_rows) {}

  SchemaPtr schema_;
  std::vector<ChunkedArrayPtr> columns_;
  int64_t num_rows_;
};

}  // namespace quiver
