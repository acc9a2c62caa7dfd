#include "quiver/columnar/record_batch.h"

#include <algorithm>
#include <sstream>

namespace quiver {

RecordBatchPtr RecordBatch::Make(SchemaPtr schema, int64_t num_rows,
                                 std::vector<ArrayDataPtr> columns) {
  return RecordBatchPtr(new RecordBatch(std::move(schema), num_rows, std::move(columns)));
}

RecordBatchPtr RecordBatch::Make(SchemaPtr schema, int64_t num_rows,
                                 const std::vector<ArrayPtr>& columns) {
  std::vector<ArrayDataPtr> data;
  data.reserve(columns.size());
  for (const auto& c : columns) data.push_back(c->data());
  return Make(std::move(schema), num_rows, std::move(data));
}

Result<RecordBatchPtr> RecordBatch::FromArrays(const std::vector<std::string>& names,
                                               const std::vector<ArrayPtr>& columns) {
  if (names.size() != columns.size()) {
    return Status::Invalid("record batch: ", names.size(), " names for ", columns.size(),
                           " columns");
  }
  FieldVector fields;
  int64_t rows = columns.empty() ? 0 : columns[0]->length();
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i]->length() != rows) {
      return Status::Invalid("record batch column '", names[i], "' has ",
                             columns[i]->length(), " rows, expected ", rows);
    }
    fields.push_back(field(names[i], columns[i]->type()));
  }
  return Make(quiver::schema(std::move(fields)), rows, columns);
}

Result<RecordBatchPtr> RecordBatch::FromStructArray(const ArrayPtr& array) {
  if (array->type_id() != TypeId::kStruct) {
    return Status::TypeError("record batch from a non-struct array of type ",
                             array->type()->ToString());
  }
  if (array->null_count() != 0) {
    return Status::Invalid("record batch from a struct array with top-level nulls");
  }
  const auto& st = static_cast<const StructArray&>(*array);
  std::vector<ArrayPtr> cols;
  for (int i = 0; i < st.num_fields(); ++i) cols.push_back(st.field(i));
  return Make(quiver::schema(array->type()->fields()), array->length(), cols);
}

ArrayPtr RecordBatch::ToStructArray() const {
  return MakeArray(
      ArrayData::Make(struct_(schema_->fields()), num_rows_, {nullptr}, columns_, 0));
}

ArrayPtr RecordBatch::GetColumnByName(std::string_view name) const {
  int i = schema_->GetFieldIndex(name);
  return i < 0 ? nullptr : column(i);
}

RecordBatchPtr RecordBatch::Slice(int64_t offset, int64_t length) const {
  offset = std::clamp<int64_t>(offset, 0, num_rows_);
  length = std::clamp<int64_t>(length, 0, num_rows_ - offset);
  std::vector<ArrayDataPtr> cols;
  cols.reserve(columns_.size());
  for (const auto& c : columns_) cols.push_back(c->Slice(offset, length));
  return Make(schema_, length, std::move(cols));
}

RecordBatchPtr RecordBatch::ReplaceSchemaMetadata(MetadataPtr metadata) const {
  return Make(schema_->WithMetadata(std::move(metadata)), num_rows_, columns_);
}

bool RecordBatch::Equals(const RecordBatch& other, bool check_metadata) const {
  if (num_rows_ != other.num_rows_ || columns_.size() != other.columns_.size()) {
    return false;
  }
  if (!schema_->Equals(*other.schema_, check_metadata)) return false;
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (!MakeArray(columns_[i])->Equals(*MakeArray(other.columns_[i]))) return false;
  }
  return true;
}

namespace {
Status CheckColumns(const RecordBatch& batch) {
  const Schema& s = *batch.schema();
  if (s.num_fields() != batch.num_columns()) {
    return Status::Invalid("record batch has ", batch.num_columns(),
                           " columns but its schema has ", s.num_fields(), " fields");
  }
  for (int i = 0; i < batch.num_columns(); ++i) {
    const ArrayData& c = *batch.column_data(i);
    if (c.length != batch.num_rows()) {
      return Status::Invalid("column ", i, " ('", s.field(i)->name(), "') has ", c.length,
                             " rows, the batch has ", batch.num_rows());
    }
    if (!c.type->Equals(*s.field(i)->type())) {
      return Status::Invalid("column ", i, " ('", s.field(i)->name(), "') has type ",
                             c.type->ToString(), " but the schema says ",
                             s.field(i)->type()->ToString());
    }
  }
  return Status::OK();
}
}  // namespace

Status RecordBatch::Validate() const {
  QUIVER_RETURN_NOT_OK(CheckColumns(*this));
  for (int i = 0; i < num_columns(); ++i) {
    Status st = column(i)->Validate();
    if (!st.ok()) return st.WithContext("column '" + column_name(i) + "'");
  }
  return Status::OK();
}

Status RecordBatch::ValidateFull() const {
  QUIVER_RETURN_NOT_OK(CheckColumns(*this));
  for (int i = 0; i < num_columns(); ++i) {
    Status st = column(i)->ValidateFull();
    if (!st.ok()) return st.WithContext("column '" + column_name(i) + "'");
  }
  return Status::OK();
}

std::string RecordBatch::ToString() const {
  std::ostringstream ss;
  for (int i = 0; i < num_columns(); ++i) {
    ss << column_name(i) << ":   " << column(i)->ToString() << "\n";
  }
  return ss.str();
}

Result<std::vector<RecordBatchPtr>> RecordBatchReader::ReadAll() {
  std::vector<RecordBatchPtr> out;
  while (true) {
    QUIVER_ASSIGN_OR_RAISE(auto batch, Next());
    if (batch == nullptr) break;
    out.push_back(std::move(batch));
  }
  return out;
}

namespace {
class VectorReader final : public RecordBatchReader {
 public:
  VectorReader(SchemaPtr schema, std::vector<RecordBatchPtr> batches)
      : schema_(std::move(schema)), batches_(std::move(batches)) {}
  SchemaPtr schema() const override { return schema_; }
  Result<RecordBatchPtr> Next() override {
    if (next_ >= batches_.size()) return RecordBatchPtr();
    return batches_[next_++];
  }

 private:
  SchemaPtr schema_;
  std::vector<RecordBatchPtr> batches_;
  size_t next_ = 0;
};
}  // namespace

std::shared_ptr<RecordBatchReader> RecordBatchReader::FromBatches(
    SchemaPtr schema, std::vector<RecordBatchPtr> batches) {
  return std::make_shared<VectorReader>(std::move(schema), std::move(batches));
}

}  // namespace quiver
