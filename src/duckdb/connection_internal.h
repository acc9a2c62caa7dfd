// Internals of connection.cc shared with the files that produce and consume
// Arrow streams for DuckDB.
#pragma once

#include <memory>
#include <string>

#include "duckdb/connection.h"

namespace quiver::duckdb {

struct Connection::State {
  std::shared_ptr<Database> db;
  capi::duckdb_connection conn = nullptr;
  uint64_t id = 0;  // DuckDB's connection id

  const capi::Api& api() const { return db->library().api(); }
  // Runs `sql`; on success *out holds DuckDB's result, which the caller
  // destroys. On failure the result is destroyed and DuckDB's error returned.
  Status Query(const std::string& sql, capi::duckdb_result* out) const;
  // Prepares one statement to run as a streaming result (nothing runs
  // yet). On success the caller owns both handles.
  Status PrepareStreaming(const std::string& sql,
                          capi::duckdb_prepared_statement* prepared,
                          capi::duckdb_pending_result* pending) const;
  ~State();
};

// Exports `result`, materialized or streaming (taken over: destroyed with
// the stream), as a C stream that keeps `state` alive.
Status ExportResultStream(std::shared_ptr<const Connection::State> state,
                          capi::duckdb_result result, ArrowArrayStream* out);
// Exports a prepared streaming query (both handles taken over) as a C
// stream whose schema comes from the statement and whose first get_next
// runs the query: until then nothing runs, so an interrupt of the
// connection stops the query wherever it is.
Status ExportPendingStream(std::shared_ptr<const Connection::State> state,
                           capi::duckdb_prepared_statement prepared,
                           capi::duckdb_pending_result pending, ArrowArrayStream* out);

}  // namespace quiver::duckdb
