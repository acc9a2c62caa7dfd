// A materialized DuckDB result as an Arrow C stream: the schema from
// duckdb_to_arrow_schema over the result's column types and names, one
// array per data chunk from duckdb_data_chunk_to_arrow. DuckDB's arrays own
// their memory (they do not point into the result), so they outlive the
// stream; the stream itself keeps the connection state alive.
#include <cerrno>
#include <cstring>
#include <vector>

#include "duckdb/connection_internal.h"

namespace quiver::duckdb {

namespace {

struct ResultStream {
  std::shared_ptr<const Connection::State> state;
  capi::duckdb_result result{};
  capi::duckdb_arrow_options options = nullptr;
  std::string last_error;

  const capi::Api& api() const { return state->api(); }
  ~ResultStream() {
    if (options != nullptr) api().destroy_arrow_options(&options);
    api().destroy_result(&result);
  }

  // Takes `error` (non-null) over; returns the errno value of the stream.
  int Fail(capi::duckdb_error_data error, const char* what) {
    Status st = FromDuckDBError(api().error_data_error_type(error),
                                api().error_data_message(error), what);
    api().destroy_error_data(&error);
    last_error = st.ToString();
    return st.IsOutOfMemory() ? ENOMEM : EIO;
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
  const capi::idx_t n = api.column_count(&p->result);
  std::vector<capi::duckdb_logical_type> types(n);
  std::vector<const char*> names(n);
  for (capi::idx_t i = 0; i < n; ++i) {
    types[i] = api.column_logical_type(&p->result, i);
    names[i] = api.column_name(&p->result, i);
  }
  capi::duckdb_error_data error =
      api.to_arrow_schema(p->options, types.data(), names.data(), n, out);
  for (auto& t : types) api.destroy_logical_type(&t);
  return error == nullptr ? 0 : p->Fail(error, "DuckDB could not convert the schema");
}

int GetNext(ArrowArrayStream* stream, ArrowArray* out) {
  ResultStream* p = PrivateOf(stream);
  if (p == nullptr || out == nullptr) return EINVAL;
  const capi::Api& api = p->api();
  capi::duckdb_data_chunk chunk = api.fetch_chunk(p->result);
  if (chunk == nullptr) {
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

}  // namespace

Status ExportResultStream(std::shared_ptr<const Connection::State> state,
                          capi::duckdb_result result, ArrowArrayStream* out) {
  auto* p = new ResultStream;
  p->state = std::move(state);
  p->result = result;
  p->options = p->api().result_get_arrow_options(&p->result);
  if (p->options == nullptr) {
    delete p;
    return Status::UnknownError("DuckDB returned no Arrow options for a result");
  }
  out->get_schema = &GetSchema;
  out->get_next = &GetNext;
  out->get_last_error = &GetLastError;
  out->release = &Release;
  out->private_data = p;
  return Status::OK();
}

}  // namespace quiver::duckdb
