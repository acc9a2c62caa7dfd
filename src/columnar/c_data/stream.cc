// The C Stream Interface: RecordBatchReader <-> ArrowArrayStream, and tables
// as streams.
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "columnar/c_data/c_data_internal.h"
#include "quiver/columnar/c_data.h"

namespace quiver {

namespace {

// ---- Export ----

struct ExportedStream {
  std::shared_ptr<RecordBatchReader> reader;
  std::string last_error;
};

ExportedStream* PrivateOf(ArrowArrayStream* stream) {
  if (stream == nullptr || stream->release == nullptr) return nullptr;
  return static_cast<ExportedStream*>(stream->private_data);
}

// Records `st` as the stream's last error and returns its errno value.
int Fail(ExportedStream* p, const Status& st) {
  p->last_error = st.ToString();
  return internal::ErrnoFromStatus(st);
}

// The callbacks must not let a C++ exception into the consumer's C frames:
// an allocation failure inside the reader becomes ENOMEM like any error.
template <typename F>
int Guarded(ExportedStream* p, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(p, Status::OutOfMemory("allocation failed in the stream producer"));
  } catch (const std::exception& e) {
    return Fail(p, Status::UnknownError("exception in the stream producer: ", e.what()));
  }
}

int StreamGetSchema(ArrowArrayStream* stream, ArrowSchema* out) {
  ExportedStream* p = PrivateOf(stream);
  if (p == nullptr || out == nullptr) return EINVAL;
  return Guarded(p, [&] {
    Status st = ExportSchema(*p->reader->schema(), out);
    return st.ok() ? 0 : Fail(p, st);
  });
}

int StreamGetNext(ArrowArrayStream* stream, ArrowArray* out) {
  ExportedStream* p = PrivateOf(stream);
  if (p == nullptr || out == nullptr) return EINVAL;
  return Guarded(p, [&] {
    auto next = p->reader->Next();
    if (!next.ok()) return Fail(p, next.status());
    const RecordBatchPtr& batch = *next;
    if (batch == nullptr) {
      std::memset(out, 0, sizeof(*out));  // released: the end of the stream
      return 0;
    }
    if (!batch->schema()->Equals(*p->reader->schema())) {
      return Fail(p,
                  Status::Invalid("the reader produced a batch of schema ",
                                  batch->schema()->ToString(), " in a stream of schema ",
                                  p->reader->schema()->ToString()));
    }
    Status st = ExportRecordBatch(*batch, out);
    return st.ok() ? 0 : Fail(p, st);
  });
}

const char* StreamGetLastError(ArrowArrayStream* stream) {
  ExportedStream* p = PrivateOf(stream);
  if (p == nullptr || p->last_error.empty()) return nullptr;
  return p->last_error.c_str();
}

void StreamRelease(ArrowArrayStream* stream) {
  if (stream == nullptr || stream->release == nullptr) return;
  delete static_cast<ExportedStream*>(stream->private_data);
  stream->private_data = nullptr;
  stream->release = nullptr;
}

// ---- Import ----

// A RecordBatchReader over a moved C stream, released with the reader.
class ImportedStreamReader : public RecordBatchReader {
 public:
  explicit ImportedStreamReader(ArrowArrayStream* source) {
    std::memcpy(&stream_, source, sizeof(stream_));
    source->release = nullptr;
  }
  ~ImportedStreamReader() override {
    if (stream_.release != nullptr) stream_.release(&stream_);
  }

  Status Init() {
    if (stream_.get_schema == nullptr || stream_.get_next == nullptr ||
        stream_.get_last_error == nullptr) {
      return Status::Invalid("the ArrowArrayStream lacks a callback");
    }
    ArrowSchema schema;
    std::memset(&schema, 0, sizeof(schema));
    const int rc = stream_.get_schema(&stream_, &schema);
    if (rc != 0) return StreamError("get_schema", rc);
    QUIVER_ASSIGN_OR_RAISE(schema_, ImportSchema(&schema));
    return Status::OK();
  }

  SchemaPtr schema() const override { return schema_; }

  Result<RecordBatchPtr> Next() override {
    if (done_) return RecordBatchPtr();
    ArrowArray array;
    std::memset(&array, 0, sizeof(array));
    const int rc = stream_.get_next(&stream_, &array);
    if (rc != 0) return StreamError("get_next", rc);
    if (array.release == nullptr) {
      done_ = true;
      return RecordBatchPtr();
    }
    return ImportRecordBatch(&array, schema_);
  }

 private:
  Status StreamError(const char* call, int rc) {
    const char* text = stream_.get_last_error(&stream_);
    std::string message = text != nullptr ? std::string(text) : std::strerror(rc);
    return Status(internal::StatusCodeFromErrno(rc),
                  std::string("C stream ") + call + " failed (errno " +
                      std::to_string(rc) + "): " + message);
  }

  ArrowArrayStream stream_;
  SchemaPtr schema_;
  bool done_ = false;
};

}  // namespace

Status ExportRecordBatchReader(std::shared_ptr<RecordBatchReader> reader,
                               ArrowArrayStream* out) {
  if (reader == nullptr) return Status::Invalid("cannot export a null reader");
  if (reader->schema() == nullptr) return Status::Invalid("the reader has no schema");
  auto* p = new ExportedStream;
  p->reader = std::move(reader);
  out->get_schema = &StreamGetSchema;
  out->get_next = &StreamGetNext;
  out->get_last_error = &StreamGetLastError;
  out->private_data = p;
  out->release = &StreamRelease;
  return Status::OK();
}

Result<std::shared_ptr<RecordBatchReader>> ImportRecordBatchReader(
    ArrowArrayStream* stream) {
  if (stream == nullptr || stream->release == nullptr) {
    return Status::Invalid("the ArrowArrayStream is NULL or already released");
  }
  auto reader = std::make_shared<ImportedStreamReader>(stream);
  QUIVER_RETURN_NOT_OK(reader->Init());
  return std::shared_ptr<RecordBatchReader>(std::move(reader));
}

Status ExportTable(const TablePtr& table, ArrowArrayStream* out) {
  if (table == nullptr) return Status::Invalid("cannot export a null table");
  QUIVER_ASSIGN_OR_RAISE(auto batches, table->ToRecordBatches());
  return ExportRecordBatchReader(
      RecordBatchReader::FromBatches(table->schema(), std::move(batches)), out);
}

Result<TablePtr> ImportTable(ArrowArrayStream* stream) {
  QUIVER_ASSIGN_OR_RAISE(auto reader, ImportRecordBatchReader(stream));
  QUIVER_ASSIGN_OR_RAISE(auto batches, reader->ReadAll());
  return Table::FromRecordBatches(batches, reader->schema());
}

}  // namespace quiver
