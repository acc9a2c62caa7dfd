// A DuckDB result as an Arrow C stream: the schema from
// duckdb_to_arrow_schema over the result's column types and names, one
// array per data chunk from duckdb_data_chunk_to_arrow. DuckDB's arrays own
// their memory (they do not point into the result), so they outlive the
// stream; the stream itself keeps the connection state alive.
//
// Two kinds: a materialized result (duckdb_query), and a prepared streaming
// query that runs at the first get_next and computes each chunk when it is
// fetched. Before it runs, its schema comes from the prepared statement.
#include <cerrno>
#include <cstring>
#include <vector>

#include "duckdb/connection_internal.h"

namespace quiver::duckdb {

namespace {

struct ResultStream {
  std::shared_ptr<const Connection::State> state;
  capi::duckdb_result result{};
  bool has_result = false;
  // A streaming query not yet run.
  capi::duckdb_prepared_statement prepared = nullptr;
  capi::duckdb_pending_result pending = nullptr;
  capi::duckdb_arrow_options options = nullptr;
  std::string last_error;

  const capi::Api& api() const { return state->api(); }
  ~ResultStream() {
    if (options != nullptr) api().destroy_arrow_options(&options);
    if (has_result) api().destroy_result(&result);
    if (pending != nullptr) api().destroy_pending(&pending);
    if (prepared != nullptr) api().destroy_prepare(&prepared);
  }

  int Fail(const Status& st) {
    last_error = st.ToString();
    return st.IsOutOfMemory() ? ENOMEM : EIO;
  }
  // Takes `error` (non-null) over; returns the errno value of the stream.
  int Fail(capi::duckdb_error_data error, const char* what) {
    Status st = FromDuckDBError(api().error_data_error_type(error),
                                api().error_data_message(error), what);
    api().destroy_error_data(&error);
    return Fail(st);
  }
  // The result's failure, if it has one.
  Status ResultError() {
    const char* message = api().result_error(&result);
    if (message == nullptr) return Status::OK();
    return FromDuckDBError(api().result_error_type(&result), message,
                           "DuckDB query failed");
  }

  // Runs a prepared streaming query; then the stream reads its result.
  int Run() {
    const bool ok = api().execute_pending(pending, &result) == capi::kDuckDBSuccess;
    has_result = true;
    api().destroy_pending(&pending);
    api().destroy_prepare(&prepared);
    if (!ok) {
      Status st = ResultError();
      return Fail(st.ok() ? Status::UnknownError("DuckDB query failed") : st);
    }
    if (options != nullptr) api().destroy_arrow_options(&options);
    options = api().result_get_arrow_options(&result);
    if (options == nullptr) {
      return Fail(Status::UnknownError("DuckDB returned no Arrow options for a result"));
    }
    return 0;
  }
};

ResultStream* PrivateOf(ArrowArrayStream* stream) {
  if (stream == nullptr || stream->release == nullptr) return nullptr;
  return static_cast<ResultStream*>(stream->private_data);
}

int GetSchema(ArrowArrayStream* stream, ArrowSchema* out) {
  ResultStream* p = PrivateOf(stream);
  if (p == nullptr || out == nullptr) return EINVAL;
  const capi::Api& api = p->api();
  const bool before_run = p->prepared != nullptr;
  const capi::idx_t n = before_run ? api.prepared_statement_column_count(p->prepared)
                                   : api.column_count(&p->result);
  std::vector<capi::duckdb_logical_type> types(n);
  std::vector<char*> owned_names;
  std::vector<const char*> names(n);
  for (capi::idx_t i = 0; i < n; ++i) {
    if (before_run) {
      types[i] = api.prepared_statement_column_logical_type(p->prepared, i);
      owned_names.push_back(api.prepared_statement_column_name(p->prepared, i));
      names[i] = owned_names.back();
    } else {
      types[i] = api.column_logical_type(&p->result, i);
      names[i] = api.column_name(&p->result, i);
    }
  }
  capi::duckdb_error_data error =
      api.to_arrow_schema(p->options, types.data(), names.data(), n, out);
  for (auto& t : types) api.destroy_logical_type(&t);
  for (char* name : owned_names) api.free(name);
  return error == nullptr ? 0 : p->Fail(error, "DuckDB could not convert the schema");
}

int GetNext(ArrowArrayStream* stream, ArrowArray* out) {
  ResultStream* p = PrivateOf(stream);
  if (p == nullptr || out == nullptr) return EINVAL;
  if (!p->last_error.empty()) return EIO;  // a failed stream stays failed
  if (p->pending != nullptr) {
    if (int rc = p->Run(); rc != 0) return rc;
  }
  const capi::Api& api = p->api();
  capi::duckdb_data_chunk chunk = api.fetch_chunk(p->result);
  if (chunk == nullptr) {
    // The end of the result, or (streaming) a failure computing the chunk.
    Status st = p->ResultError();
    if (!st.ok()) return p->Fail(st);
    std::memset(out, 0, sizeof(*out));  // released: the end of the result
    return 0;
  }
  capi::duckdb_error_data error = api.data_chunk_to_arrow(p->options, chunk, out);
  api.destroy_data_chunk(&chunk);
  return error == nullptr ? 0 : p->Fail(error, "DuckDB could not convert a data chunk");
}

const char* GetLastError(ArrowArrayStream* stream) {
  ResultStream* p = PrivateOf(stream);
  if (p == nullptr || p->last_error.empty()) return nullptr;
  return p->last_error.c_str();
}

void Release(ArrowArrayStream* stream) {
  if (stream == nullptr || stream->release == nullptr) return;
  delete static_cast<ResultStream*>(stream->private_data);
  stream->private_data = nullptr;
  stream->release = nullptr;
}

void Export(ResultStream* p, ArrowArrayStream* out) {
  out->get_schema = &GetSchema;
  out->get_next = &GetNext;
  out->get_last_error = &GetLastError;
  out->release = &Release;
  out->private_data = p;
}

}  // namespace

Status ExportResultStream(std::shared_ptr<const Connection::State> state,
                          capi::duckdb_result result, ArrowArrayStream* out) {
  auto* p = new ResultStream;
  p->state = std::move(state);
  p->result = result;
  p->has_result = true;
  p->options = p->api().result_get_arrow_options(&p->result);
  if (p->options == nullptr) {
    delete p;
    return Status::UnknownError("DuckDB returned no Arrow options for a result");
  }
  Export(p, out);
  return Status::OK();
}

Status ExportPendingStream(std::shared_ptr<const Connection::State> state,
                           capi::duckdb_prepared_statement prepared,
                           capi::duckdb_pending_result pending, ArrowArrayStream* out) {
  auto* p = new ResultStream;
  p->state = std::move(state);
  p->prepared = prepared;
  p->pending = pending;
  p->api().connection_get_arrow_options(p->state->conn, &p->options);
  if (p->options == nullptr) {
    delete p;
    return Status::UnknownError("DuckDB returned no Arrow options for a connection");
  }
  Export(p, out);
  return Status::OK();
}

}  // namespace quiver::duckdb
