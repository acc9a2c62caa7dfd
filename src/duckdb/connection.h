// Database and Connection: an in-memory DuckDB driven through its C API,
// exchanging data with Quiver through the Arrow C Data / C Stream Interface.
//
// Query results come back as Quiver record batches imported zero-copy from
// the Arrow arrays DuckDB produces; Quiver readers and tables are exposed to
// SQL as views over the quiver_scan table function (scan_function.h), which
// hands DuckDB the batches through the C Data Interface. Every DuckDB error
// becomes a Status carrying DuckDB's message (FromDuckDBError).
//
// Thread-safety: a Database may be shared by connections on several
// threads; a Connection, like DuckDB's, is used by one thread at a time.
// Readers returned by QueryArrow keep the connection's DuckDB state alive,
// so they may outlive the Connection object.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "duckdb/library.h"
#include "quiver/columnar/c_data.h"

namespace quiver::duckdb {

class ScanRegistry;
struct TableResolution;

// An in-memory DuckDB database, closed when the last holder lets it go.
class Database {
 public:
  // Opens a new in-memory database with `library` (Library::Default() when
  // null).
  static Result<std::shared_ptr<Database>> Open(
      std::shared_ptr<const Library> library = nullptr);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const Library& library() const { return *library_; }
  const std::shared_ptr<const Library>& shared_library() const { return library_; }
  capi::duckdb_database handle() const { return db_; }

  // The sources behind the database's quiver_scan views; registers the
  // table function (through `conn`) on first use.
  Result<std::shared_ptr<ScanRegistry>> GetScanRegistry(capi::duckdb_connection conn);
  // The database's replacement scan (Connection::SetTableResolver),
  // installed in DuckDB on first use.
  std::shared_ptr<TableResolution> GetResolution();
  std::shared_ptr<TableResolution> ExistingResolution();  // null if none yet

 private:
  Database() = default;
  std::shared_ptr<const Library> library_;
  capi::duckdb_database db_ = nullptr;
  std::mutex mu_;
  std::shared_ptr<ScanRegistry> registry_;       // null until first used
  std::shared_ptr<TableResolution> resolution_;  // null until first used
};

class Connection {
 public:
  static Result<std::unique_ptr<Connection>> Open(std::shared_ptr<Database> db);
  // Drops the views of the registered streams, then lets the connection go
  // (DuckDB disconnects once no reader of QueryArrow uses it any more).
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs `sql`, discarding any result. Blocks until DuckDB is done.
  Status Execute(std::string_view sql);

  // Runs `sql` (materialized in DuckDB) and returns its result as an Arrow
  // C stream, one array per DuckDB data chunk (at most 2048 rows each), in
  // DuckDB's Arrow conversion. The caller owns `*out` and must release it;
  // the stream keeps the connection alive.
  Status QueryArrowStream(std::string_view sql, ArrowArrayStream* out);
  // The same result imported into Quiver (zero-copy: the batches' buffers
  // are DuckDB's, released when the last of them goes).
  Result<std::shared_ptr<RecordBatchReader>> QueryArrow(std::string_view sql);
  // Runs one statement as DuckDB's streaming result: each batch is computed
  // when the reader asks for it, so a result larger than memory can be
  // read (the server of docs/transport.md serves queries this way), and the
  // reader's Cancel interrupts the query. Until the reader is exhausted or
  // destroyed the connection must run nothing else (DuckDB closes an open
  // streaming result when it does).
  Result<std::shared_ptr<RecordBatchReader>> StreamArrow(std::string_view sql);
  // Asks DuckDB to stop what this connection is running: the query, or the
  // next fetch of a streaming result, fails as Cancelled. Safe from any
  // thread.
  void Interrupt();
  // How far the query this connection runs has come, in percent, as
  // DuckDB estimates it (for a scan of files: the share of their bytes
  // read); -1 when DuckDB cannot tell or nothing runs. Called between
  // fetches of a streaming result, by the thread that reads it.
  double Progress() const;
  // Every batch of QueryArrow gathered into a table.
  Result<TablePtr> QueryTable(std::string_view sql);

  // Exposes `reader` to SQL as the temporary view `name` of this
  // connection (replacing any view or registration of that name). DuckDB
  // reads the batches through the C Data Interface, zero-copy where its
  // layout allows, and reads only the columns a query uses. A reader can be
  // read once: the first query that scans the view consumes it, a later
  // scan fails with an error saying so. An error of the reader fails the
  // query with the reader's message. The reader is kept until the
  // registration is replaced, unregistered or the connection destroyed.
  Status RegisterArrowStream(const std::string& name,
                             std::shared_ptr<RecordBatchReader> reader);
  // Like RegisterArrowStream, for a table: every query scans it afresh.
  Status RegisterTable(const std::string& name, TablePtr table);
  // Drops the view and the source registered as `name`.
  Status Unregister(const std::string& name);

  // Finds the table a name stands for, when a statement names one that no
  // table or view of the database has. NotFound: DuckDB says the table does
  // not exist; any other error fails the statement with its message.
  using TableResolver = std::function<Result<TablePtr>(const std::string& name)>;
  // Makes `resolver` answer for the names statements of this connection use
  // and nothing has (DuckDB's replacement scans): a table is fetched only
  // when a statement names it, and held until the next statement of this
  // connection starts (or the connection goes): a statement holds only
  // what it reads. One resolver per database, the last one set; it runs on
  // the thread that runs the statement. Null removes it.
  Status SetTableResolver(TableResolver resolver);
  // Lets go now of what the last statement resolved (its results stay
  // valid: they hold what they read).
  void DropResolved();

  // The DuckDB state a connection shares with the readers it returns.
  struct State;

 private:
  explicit Connection(std::shared_ptr<State> state);
  Status Register(const std::string& name, std::shared_ptr<RecordBatchReader> reader,
                  TablePtr table);
  std::shared_ptr<State> state_;
  std::map<std::string, std::string> registrations_;  // view name -> registry key
};

// Settings for a connection whose streaming results feed a consumer that
// copies them (quiver put): DuckDB's threads may compute up to 100 MB ahead
// of the reader instead of DuckDB's default of about 1 MB, so reading and
// copying overlap; and DuckDB estimates the query's progress (Progress()),
// which it does only with its progress bar on (printing it stays off).
constexpr const char* kLoadSettings =
    "SET streaming_buffer_size = '100MB'; SET enable_progress_bar = true; "
    "SET enable_progress_bar_print = false";

// Makes this process's allocator keep freed memory rather than return it to
// the kernel: DuckDB allocates and frees its Arrow arrays for every 2048
// rows, and each return costs a page fault and a cleared page per page on
// the next allocation. Process-wide; for tools that stream large results.
void KeepFreedMemory();

// What DuckDB may reach beyond the tables Quiver gives it, for every
// DuckDB that runs queries of users (`quiver sql`, Client.sql in Python,
// `quiver serve`; docs/sql.md "What a query may touch"): no extension
// installed or loaded behind a query's back (no network), no file read or
// written unless `allow_files` (read_csv, COPY, ATTACH...), and the
// configuration locked so that no query turns either back on. Run it on a
// connection before any user's statement; it holds for the whole database.
Status LockDown(Connection* conn, bool allow_files);
// Whether `st` is DuckDB refusing what LockDown turned off (the caller then
// says how to allow files).
bool RefusedByLockDown(const Status& st);

// `name` as a double-quoted SQL identifier.
std::string QuoteIdentifier(std::string_view name);
// `text` as a single-quoted SQL string literal (file names in COPY, read_csv).
std::string QuoteLiteral(std::string_view text);

}  // namespace quiver::duckdb
