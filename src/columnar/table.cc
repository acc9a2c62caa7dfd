#include "quiver/columnar/table.h"

#include <algorithm>
#include <sstream>

namespace quiver {

// ---------------------------------------------------------------------------
// ChunkedArray

ChunkedArray::ChunkedArray(std::vector<ArrayPtr> chunks, TypePtr type)
    : chunks_(std::move(chunks)), type_(std::move(type)) {
  for (const auto& c : chunks_) length_ += c->length();
}

Result<ChunkedArrayPtr> ChunkedArray::Make(std::vector<ArrayPtr> chunks, TypePtr type) {
  if (type == nullptr) {
    if (chunks.empty()) return Status::Invalid("chunked array of no chunks needs a type");
    type = chunks[0]->type();
  }
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (!chunks[i]->type()->Equals(*type)) {
      return Status::TypeError("chunk ", i, " has type ", chunks[i]->type()->ToString(),
                               ", expected ", type->ToString());
    }
  }
  return std::make_shared<ChunkedArray>(std::move(chunks), std::move(type));
}

int64_t ChunkedArray::null_count() const {
  int64_t n = 0;
  for (const auto& c : chunks_) n += c->null_count();
  return n;
}

ChunkedArrayPtr ChunkedArray::Slice(int64_t offset, int64_t length) const {
  offset = std::clamp<int64_t>(offset, 0, length_);
  length = std::clamp<int64_t>(length, 0, length_ - offset);
  std::vector<ArrayPtr> out;
  for (const auto& c : chunks_) {
    if (length == 0) break;
    if (offset >= c->length()) {
      offset -= c->length();
      continue;
    }
    int64_t take = std::min(length, c->length() - offset);
    out.push_back(c->Slice(offset, take));
    length -= take;
    offset = 0;
  }
  return std::make_shared<ChunkedArray>(std::move(out), type_);
}

bool ChunkedArray::Equals(const ChunkedArray& other) const {
  if (length_ != other.length_ || !type_->Equals(*other.type_)) return false;
  // Walk both chunk lists in step, comparing overlapping pieces.
  size_t ai = 0, bi = 0;
  int64_t ao = 0, bo = 0;
  while (ai < chunks_.size() && bi < other.chunks_.size()) {
    const Array& a = *chunks_[ai];
    const Array& b = *other.chunks_[bi];
    int64_t n = std::min(a.length() - ao, b.length() - bo);
    if (n > 0 && !a.RangeEquals(ao, ao + n, bo, b)) return false;
    ao += n;
    bo += n;
    if (ao == a.length()) {
      ++ai;
      ao = 0;
    }
    if (bo == b.length()) {
      ++bi;
      bo = 0;
    }
  }
  return true;
}

Status ChunkedArray::Validate() const {
  for (size_t i = 0; i < chunks_.size(); ++i) {
    if (!chunks_[i]->type()->Equals(*type_)) {
      return Status::Invalid("chunk ", i, " has type ", chunks_[i]->type()->ToString(),
                             ", expected ", type_->ToString());
    }
    Status st = chunks_[i]->Validate();
    if (!st.ok()) return st.WithContext("chunk " + std::to_string(i));
  }
  return Status::OK();
}

Status ChunkedArray::ValidateFull() const {
  QUIVER_RETURN_NOT_OK(Validate());
  for (size_t i = 0; i < chunks_.size(); ++i) {
    Status st = chunks_[i]->ValidateFull();
    if (!st.ok()) return st.WithContext("chunk " + std::to_string(i));
  }
  return Status::OK();
}

std::string ChunkedArray::ToString() const {
  std::ostringstream ss;
  ss << "[\n";
  for (size_t i = 0; i < chunks_.size(); ++i) {
    ss << chunks_[i]->ToString();
    if (i + 1 < chunks_.size()) ss << ",";
    ss << "\n";
  }
  ss << "]";
  return ss.str();
}

// ---------------------------------------------------------------------------
// Table

TablePtr Table::Make(SchemaPtr schema, std::vector<ChunkedArrayPtr> columns,
                     int64_t num_rows) {
  if (num_rows < 0) num_rows = columns.empty() ? 0 : columns[0]->length();
  return TablePtr(new Table(std::move(schema), std::move(columns), num_rows));
}

Result<TablePtr> Table::FromRecordBatches(const std::vector<RecordBatchPtr>& batches,
                                          SchemaPtr schema) {
  if (schema == nullptr) {
    if (batches.empty()) return Status::Invalid("table of no batches needs a schema");
    schema = batches[0]->schema();
  }
  std::vector<std::vector<ArrayPtr>> chunks(schema->num_fields());
  int64_t rows = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    if (!batches[b]->schema()->Equals(*schema)) {
      return Status::Invalid("batch ", b, " has schema\n",
                             batches[b]->schema()->ToString(),
                             "\nwhich differs from the table's\n", schema->ToString());
    }
    for (int i = 0; i < schema->num_fields(); ++i) {
      chunks[i].push_back(batches[b]->column(i));
    }
    rows += batches[b]->num_rows();
  }
  std::vector<ChunkedArrayPtr> columns;
  for (int i = 0; i < schema->num_fields(); ++i) {
    columns.push_back(
        std::make_shared<ChunkedArray>(std::move(chunks[i]), schema->field(i)->type()));
  }
  return Make(std::move(schema), std::move(columns), rows);
}

ChunkedArrayPtr Table::GetColumnByName(std::string_view name) const {
  int i = schema_->GetFieldIndex(name);
  return i < 0 ? nullptr : columns_[i];
}

TablePtr Table::Slice(int64_t offset, int64_t length) const {
  offset = std::clamp<int64_t>(offset, 0, num_rows_);
  length = std::clamp<int64_t>(length, 0, num_rows_ - offset);
  std::vector<ChunkedArrayPtr> cols;
  for (const auto& c : columns_) cols.push_back(c->Slice(offset, length));
  return Make(schema_, std::move(cols), length);
}

Result<std::vector<RecordBatchPtr>> Table::ToRecordBatches() const {
  QUIVER_RETURN_NOT_OK(Validate());
  std::vector<RecordBatchPtr> out;
  const int n = num_columns();
  std::vector<int> chunk(n, 0);
  std::vector<int64_t> pos(n, 0);  // position inside the current chunk
  int64_t row = 0;
  while (row < num_rows_) {
    int64_t take = num_rows_ - row;
    for (int i = 0; i < n; ++i) {
      while (columns_[i]->chunk(chunk[i])->length() == pos[i]) {
        ++chunk[i];
        pos[i] = 0;
      }
      take = std::min(take, columns_[i]->chunk(chunk[i])->length() - pos[i]);
    }
    std::vector<ArrayPtr> cols;
    for (int i = 0; i < n; ++i) {
      cols.push_back(columns_[i]->chunk(chunk[i])->Slice(pos[i], take));
      pos[i] += take;
    }
    out.push_back(RecordBatch::Make(schema_, take, cols));
    row += take;
  }
  return out;
}

bool Table::Equals(const Table& other, bool check_metadata) const {
  if (num_rows_ != other.num_rows_ || columns_.size() != other.columns_.size()) {
    return false;
  }
  if (!schema_->Equals(*other.schema_, check_metadata)) return false;
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (!columns_[i]->Equals(*other.columns_[i])) return false;
  }
  return true;
}

Status Table::Validate() const {
  if (schema_->num_fields() != num_columns()) {
    return Status::Invalid("table has ", num_columns(), " columns but its schema has ",
                           schema_->num_fields(), " fields");
  }
  for (int i = 0; i < num_columns(); ++i) {
    if (columns_[i]->length() != num_rows_) {
      return Status::Invalid("column '", schema_->field(i)->name(), "' has ",
                             columns_[i]->length(), " rows, the table has ", num_rows_);
    }
    if (!columns_[i]->type()->Equals(*schema_->field(i)->type())) {
      return Status::Invalid("column '", schema_->field(i)->name(), "' has type ",
                             columns_[i]->type()->ToString(), " but the schema says ",
                             schema_->field(i)->type()->ToString());
    }
    QUIVER_RETURN_NOT_OK(columns_[i]->Validate());
  }
  return Status::OK();
}

Status Table::ValidateFull() const {
  QUIVER_RETURN_NOT_OK(Validate());
  for (const auto& c : columns_) QUIVER_RETURN_NOT_OK(c->ValidateFull());
  return Status::OK();
}

std::string Table::ToString() const {
  std::ostringstream ss;
  ss << schema_->ToString() << "\n----\n";
  for (int i = 0; i < num_columns(); ++i) {
    ss << schema_->field(i)->name() << ":\n" << columns_[i]->ToString() << "\n";
  }
  return ss.str();
}

}  // namespace quiver
