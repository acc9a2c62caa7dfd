// quiver_scan: the DuckDB table function through which SQL reads Quiver
// record batches, handed over through the Arrow C Data Interface.
//
// Why not duckdb_arrow_scan: in DuckDB 1.5 that C entry point registers
// DuckDB's `arrow_scan` with projection pushdown on, yet never passes the
// projection to the stream, so any query that reads a subset of the columns
// decodes the wrong children (DuckDB issue #17012) and may crash; it also
// never releases the schemas it asks for. quiver_scan is a table function
// of DuckDB's C API instead: its bind reports the columns (with the types
// DuckDB's own Arrow conversion gives them), it supports projection
// pushdown, and each output chunk is one exported slice of a Quiver batch
// (ExportRecordBatch) converted by duckdb_data_chunk_from_arrow, whose
// vectors reference the Arrow buffers (zero-copy where DuckDB's layout
// matches Arrow's).
//
// A source is registered per connection under a generated key; the view
// the connection creates calls quiver_scan('<key>'). Only the connection
// that registered a source can bind it, so its conversions always run
// within a query of that connection.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "duckdb/library.h"
#include "quiver/columnar/table.h"

namespace quiver::duckdb {

// The name of the table function.
constexpr const char* kScanFunctionName = "quiver_scan";

// What a registered view reads: a reader (one scan) or a table (any number
// of scans). Immutable after Make, except for the one-shot reader.
class ScanSource {
 public:
  // `conn` is the registering connection, `conn_id` its DuckDB id. Fails
  // with DuckDB's reason if DuckDB cannot scan the schema.
  static Result<std::shared_ptr<ScanSource>> Make(
      std::shared_ptr<const Library> library, capi::duckdb_connection conn,
      uint64_t conn_id, std::string name, std::shared_ptr<RecordBatchReader> reader,
      TablePtr table);
  ~ScanSource();
  ScanSource(const ScanSource&) = delete;
  ScanSource& operator=(const ScanSource&) = delete;

  const capi::Api& api() const { return library_->api(); }
  const std::string& name() const { return name_; }
  const SchemaPtr& schema() const { return schema_; }
  capi::duckdb_connection connection() const { return conn_; }
  uint64_t connection_id() const { return conn_id_; }
  // DuckDB's logical type of each column (owned by the source).
  const std::vector<capi::duckdb_logical_type>& types() const { return types_; }
  // The number of rows, -1 if unknown (a reader).
  int64_t rows() const { return table_ ? table_->num_rows() : -1; }
  // The registered table (null for a stream).
  const TablePtr& table() const { return table_; }

  // The batches for one scan: a new reader over the table, or the reader
  // the first time and an error afterwards.
  Result<std::shared_ptr<RecordBatchReader>> OpenScan();

 private:
  ScanSource() = default;
  Status ComputeTypes();

  std::shared_ptr<const Library> library_;
  capi::duckdb_connection conn_ = nullptr;
  uint64_t conn_id_ = 0;
  std::string name_;
  SchemaPtr schema_;
  TablePtr table_;
  std::mutex mu_;
  std::shared_ptr<RecordBatchReader> reader_;  // null once handed out
  std::vector<capi::duckdb_logical_type> types_;
};

// The sources of one database, by key. Thread-safe.
class ScanRegistry {
 public:
  std::string Add(std::shared_ptr<ScanSource> source);
  void Remove(const std::string& key);
  // The source under `key` if `conn_id` registered it, else null.
  std::shared_ptr<ScanSource> Find(const std::string& key, uint64_t conn_id) const;

 private:
  mutable std::mutex mu_;
  uint64_t next_key_ = 0;
  std::map<std::string, std::shared_ptr<ScanSource>> sources_;
};

// Registers quiver_scan in the database of `conn`, reading `registry`
// (which DuckDB keeps alive until the database closes).
Status RegisterScanFunction(const std::shared_ptr<const Library>& library,
                            capi::duckdb_connection conn,
                            std::shared_ptr<ScanRegistry> registry);

// DuckDB's id of the connection.
uint64_t ConnectionId(const capi::Api& api, capi::duckdb_connection conn);

}  // namespace quiver::duckdb
