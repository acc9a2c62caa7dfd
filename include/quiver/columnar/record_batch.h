// RecordBatch: equally long columns with a schema. Immutable; safe to share
// between threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "quiver/columnar/array.h"

namespace quiver {

class RecordBatch;
using RecordBatchPtr = std::shared_ptr<RecordBatch>;

class RecordBatch {
 public:
  // Does not validate; call Validate() on untrusted input.
  static RecordBatchPtr Make(SchemaPtr schema, int64_t num_rows,
                             std::vector<ArrayDataPtr> columns);
  static RecordBatchPtr Make(SchemaPtr schema, int64_t num_rows,
                             const std::vector<ArrayPtr>& columns);
  // Builds a batch from named arrays; all arrays must have the same length.
  static Result<RecordBatchPtr> FromArrays(const std::vector<std::string>& names,
                                           const std::vector<ArrayPtr>& columns);
  // A batch from a struct array (its children become columns).
  static Result<RecordBatchPtr> FromStructArray(const ArrayPtr& array);
  // This batch as one struct array (zero-copy).
  ArrayPtr ToStructArray() const;

  const SchemaPtr& schema() const { return schema_; }
  int64_t num_rows() const { return num_rows_; }
  int num_columns() const { return static_cast<int>(columns_.size()); }
  ArrayPtr column(int i) const { return MakeArray(columns_[i]); }
  const ArrayDataPtr& column_data(int i) const { return columns_[i]; }
  const std::vector<ArrayDataPtr>& column_data() const { return columns_; }
  const std::string& column_name(int i) const { return schema_->field(i)->name(); }
  ArrayPtr GetColumnByName(std::string_view name) const;

  RecordBatchPtr Slice(int64_t offset, int64_t length) const;
  RecordBatchPtr Slice(int64_t offset) const { return Slice(offset, num_rows_ - offset); }
  RecordBatchPtr ReplaceSchemaMetadata(MetadataPtr metadata) const;

  bool Equals(const RecordBatch& other, bool check_metadata = false) const;
  // Column lengths and types agree with the schema; each column Validate()s.
  Status Validate() const;
  Status ValidateFull() const;
  std::string ToString() const;

 private:
  RecordBatch(SchemaPtr schema, int64_t num_rows, std::vector<ArrayDataPtr> columns)
      : schema_(std::move(schema)), num_rows_(num_rows), columns_(std::move(columns)) {}

  SchemaPtr schema_;
  int64_t num_rows_;
  std::vector<ArrayDataPtr> columns_;
};

// A source of record batches of one schema: an IPC stream, an imported C
// stream, a query result. Not thread-safe: one consumer at a time.
class RecordBatchReader {
 public:
  virtual ~RecordBatchReader() = default;
  virtual SchemaPtr schema() const = 0;
  // The next batch, or nullptr once the source is exhausted.
  virtual Result<RecordBatchPtr> Next() = 0;
  // Asks the source to stop early, from any thread: a Next running or to
  // come may then fail as Cancelled. Readers whose source cannot be
  // stopped ignore it (the default).
  virtual void Cancel() {}
  // Every remaining batch.
  Result<std::vector<RecordBatchPtr>> ReadAll();
  // A reader over batches held in memory (all must have `schema`).
  static std::shared_ptr<RecordBatchReader> FromBatches(
      SchemaPtr schema, std::vector<RecordBatchPtr> batches);
};

}  // namespace quiver
