// Internals of connection.cc shared with the files that produce and consume
// Arrow streams for DuckDB.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "duckdb/connection.h"

namespace quiver::duckdb {

// A database's replacement scan (Connection::SetTableResolver): the
// resolver, the connection it answers for, and the registry keys of the
// sources the statement running there resolved. Thread-safe.
struct TableResolution {
  std::shared_ptr<const Library> library;
  std::shared_ptr<ScanRegistry> registry;
  std::mutex mu;
  capi::duckdb_connection conn = nullptr;  // the resolver's connection
  uint64_t conn_id = 0;
  Connection::TableResolver resolver;
  std::vector<std::string> keys;

  // A statement of connection `id` starts: what the last one resolved goes;
  // `closing`: the connection goes, and its resolver with it.
  void DropResolved(uint64_t id, bool closing = false);
  // Sets (or with a null resolver, clears) the resolver of connection `id`.
  void Set(capi::duckdb_connection c, uint64_t id, Connection::TableResolver r);
  // DuckDB's callback: `data` is a heap std::shared_ptr<TableResolution>.
  static void Callback(capi::duckdb_replacement_scan_info info, const char* name,
                       void* data);
};

struct Connection::State {
  std::shared_ptr<Database> db;
  capi::duckdb_connection conn = nullptr;
  uint64_t id = 0;  // DuckDB's connection id

  // Before each statement: what the last one resolved by name goes.
  void StatementStarts() const;

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
