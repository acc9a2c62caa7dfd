#include "duckdb/connection.h"

#include <malloc.h>

#include <atomic>

#include "duckdb/connection_internal.h"
#include "duckdb/scan_function.h"

namespace quiver::duckdb {

// ---- Database ----

Result<std::shared_ptr<Database>> Database::Open(std::shared_ptr<const Library> library) {
  if (library == nullptr) {
    QUIVER_ASSIGN_OR_RAISE(library, Library::Default());
  }
  std::shared_ptr<Database> db(new Database());
  db->library_ = std::move(library);
  char* error = nullptr;
  const capi::Api& api = db->library_->api();
  if (api.open_ext(nullptr, &db->db_, nullptr, &error) != capi::kDuckDBSuccess) {
    Status st = Status::IOError("cannot open an in-memory DuckDB database: ",
                                error != nullptr ? error : "(no message)");
    if (error != nullptr) api.free(error);
    db->db_ = nullptr;
    return st;
  }
  return db;
}

Database::~Database() {
  if (db_ != nullptr) library_->api().close(&db_);
}

Result<std::shared_ptr<ScanRegistry>> Database::GetScanRegistry(
    capi::duckdb_connection conn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (registry_ == nullptr) {
    auto registry = std::make_shared<ScanRegistry>();
    QUIVER_RETURN_NOT_OK(RegisterScanFunction(library_, conn, registry));
    registry_ = std::move(registry);
  }
  return registry_;
}

std::shared_ptr<TableResolution> Database::ExistingResolution() {
  std::lock_guard<std::mutex> lock(mu_);
  return resolution_;
}

std::shared_ptr<TableResolution> Database::GetResolution() {
  std::lock_guard<std::mutex> lock(mu_);
  if (resolution_ == nullptr) {
    auto r = std::make_shared<TableResolution>();
    r->library = library_;
    library_->api().add_replacement_scan(
        db_, &TableResolution::Callback, new std::shared_ptr<TableResolution>(r),
        [](void* data) { delete static_cast<std::shared_ptr<TableResolution>*>(data); });
    resolution_ = std::move(r);
  }
  return resolution_;
}

// ---- Tables resolved by name ----

void TableResolution::DropResolved(uint64_t id, bool closing) {
  std::lock_guard<std::mutex> lock(mu);
  if (id != conn_id || registry == nullptr) return;
  for (const auto& key : keys) registry->Remove(key);
  keys.clear();
  if (closing) {
    conn = nullptr;
    conn_id = 0;
    resolver = nullptr;
  }
}

void TableResolution::Set(capi::duckdb_connection c, uint64_t id,
                          Connection::TableResolver r) {
  std::lock_guard<std::mutex> lock(mu);
  if (registry != nullptr) {
    for (const auto& key : keys) registry->Remove(key);
  }
  keys.clear();
  conn = c;
  conn_id = id;
  resolver = std::move(r);
}

void TableResolution::Callback(capi::duckdb_replacement_scan_info info, const char* name,
                               void* data) {
  TableResolution& r = **static_cast<std::shared_ptr<TableResolution>*>(data);
  const capi::Api& api = r.library->api();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.resolver || r.registry == nullptr) return;
  auto fail = [&](const Status& st) {
    api.replacement_scan_set_error(info, st.message().c_str());
  };
  auto table = r.resolver(name);
  if (!table.ok()) {
    if (!table.status().IsNotFound()) {
      fail(table.status());
    }
    return;
  }
  auto source = ScanSource::Make(r.library, r.conn, r.conn_id, name, nullptr, *table);
  if (!source.ok()) return fail(source.status());
  std::string key = r.registry->Add(std::move(*source));
  r.keys.push_back(key);
  api.replacement_scan_set_function_name(info, kScanFunctionName);
  capi::duckdb_value value = api.create_varchar(key.c_str());
  api.replacement_scan_add_parameter(info, value);
  api.destroy_value(&value);
}

// ---- Connection state ----

void Connection::State::StatementStarts() const {
  if (auto r = db->ExistingResolution()) r->DropResolved(id);
}

Status Connection::State::Query(const std::string& sql, capi::duckdb_result* out) const {
  StatementStarts();
  if (api().query(conn, sql.c_str(), out) == capi::kDuckDBSuccess) return Status::OK();
  Status st = FromDuckDBError(api().result_error_type(out), api().result_error(out),
                              "DuckDB query failed");
  api().destroy_result(out);
  return st;
}

Status Connection::State::PrepareStreaming(const std::string& sql,
                                           capi::duckdb_prepared_statement* prepared,
                                           capi::duckdb_pending_result* pending) const {
  *prepared = nullptr;
  *pending = nullptr;
  StatementStarts();
  Status st;
  if (api().prepare(conn, sql.c_str(), prepared) != capi::kDuckDBSuccess) {
    st = FromDuckDBError(capi::kErrorInvalid, api().prepare_error(*prepared),
                         "DuckDB query failed");
  } else if (api().pending_prepared_streaming(*prepared, pending) !=
             capi::kDuckDBSuccess) {
    st = FromDuckDBError(capi::kErrorInvalid, api().pending_error(*pending),
                         "DuckDB query failed");
  }
  if (!st.ok()) {
    api().destroy_pending(pending);
    api().destroy_prepare(prepared);
  }
  return st;
}

Connection::State::~State() {
  if (conn != nullptr) api().disconnect(&conn);
}

// ---- Connection ----

Connection::Connection(std::shared_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<Connection>> Connection::Open(std::shared_ptr<Database> db) {
  if (db == nullptr) return Status::Invalid("cannot connect to a null database");
  auto state = std::make_shared<State>();
  state->db = std::move(db);
  if (state->api().connect(state->db->handle(), &state->conn) != capi::kDuckDBSuccess) {
    state->conn = nullptr;
    return Status::IOError("cannot connect to the DuckDB database");
  }
  state->id = ConnectionId(state->api(), state->conn);
  return std::unique_ptr<Connection>(new Connection(std::move(state)));
}

Connection::~Connection() {
  // Its resolver, if it has the database's, answers for no one now.
  if (auto r = state_->db->ExistingResolution()) r->DropResolved(state_->id, true);
  // The views name registry keys: they go first, then the sources. A
  // destructor cannot report a failure; Unregister() can.
  for (const auto& [name, key] : registrations_) {
    Status ignored = Execute("DROP VIEW IF EXISTS " + QuoteIdentifier(name));
    (void)ignored;
    auto registry = state_->db->GetScanRegistry(state_->conn);
    if (registry.ok()) (*registry)->Remove(key);
  }
}

Status Connection::Execute(std::string_view sql) {
  capi::duckdb_result result;
  QUIVER_RETURN_NOT_OK(state_->Query(std::string(sql), &result));
  state_->api().destroy_result(&result);
  return Status::OK();
}

Status Connection::QueryArrowStream(std::string_view sql, ArrowArrayStream* out) {
  capi::duckdb_result result;
  QUIVER_RETURN_NOT_OK(state_->Query(std::string(sql), &result));
  return ExportResultStream(state_, result, out);
}

Result<std::shared_ptr<RecordBatchReader>> Connection::QueryArrow(std::string_view sql) {
  ArrowArrayStream stream;
  QUIVER_RETURN_NOT_OK(QueryArrowStream(sql, &stream));
  return ImportRecordBatchReader(&stream);
}

namespace {

// A streaming result's reader, which Cancel interrupts in DuckDB. What
// fails once it was cancelled is Cancelled (DuckDB reports its interrupt
// as an error of its own), so callers can tell it from a failed query.
class StreamingReader : public RecordBatchReader {
 public:
  StreamingReader(std::shared_ptr<const Connection::State> state,
                  std::shared_ptr<RecordBatchReader> inner)
      : state_(std::move(state)), inner_(std::move(inner)) {}
  SchemaPtr schema() const override { return inner_->schema(); }
  Result<RecordBatchPtr> Next() override {
    auto batch = inner_->Next();
    if (!batch.ok() && cancelled_.load()) {
      return Status::Cancelled("the query was cancelled (", batch.status().message(),
                               ")");
    }
    return batch;
  }
  void Cancel() override {
    cancelled_.store(true);
    state_->api().interrupt(state_->conn);
  }

 private:
  std::shared_ptr<const Connection::State> state_;
  std::shared_ptr<RecordBatchReader> inner_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace

Result<std::shared_ptr<RecordBatchReader>> Connection::StreamArrow(std::string_view sql) {
  capi::duckdb_prepared_statement prepared;
  capi::duckdb_pending_result pending;
  QUIVER_RETURN_NOT_OK(state_->PrepareStreaming(std::string(sql), &prepared, &pending));
  ArrowArrayStream stream;
  QUIVER_RETURN_NOT_OK(ExportPendingStream(state_, prepared, pending, &stream));
  QUIVER_ASSIGN_OR_RAISE(auto inner, ImportRecordBatchReader(&stream));
  return std::make_shared<StreamingReader>(state_, std::move(inner));
}

void Connection::Interrupt() { state_->api().interrupt(state_->conn); }

double Connection::Progress() const {
  const auto p = state_->api().query_progress(state_->conn);
  return p.percentage >= 0 && p.percentage <= 100 ? p.percentage : -1;
}

Result<TablePtr> Connection::QueryTable(std::string_view sql) {
  ArrowArrayStream stream;
  QUIVER_RETURN_NOT_OK(QueryArrowStream(sql, &stream));
  return ImportTable(&stream);
}

Status Connection::Register(const std::string& name,
                            std::shared_ptr<RecordBatchReader> reader, TablePtr table) {
  QUIVER_ASSIGN_OR_RAISE(auto registry, state_->db->GetScanRegistry(state_->conn));
  QUIVER_ASSIGN_OR_RAISE(
      auto source,
      ScanSource::Make(state_->db->shared_library(), state_->conn, state_->id, name,
                       std::move(reader), std::move(table)));
  const std::string key = registry->Add(std::move(source));
  Status st = Execute("CREATE OR REPLACE TEMP VIEW " + QuoteIdentifier(name) +
                      " AS SELECT * FROM " + kScanFunctionName + "('" + key + "')");
  if (!st.ok()) {
    registry->Remove(key);
    return st;
  }
  // The view now names the new key: the source it replaced can go.
  auto old = registrations_.find(name);
  if (old != registrations_.end()) registry->Remove(old->second);
  registrations_[name] = key;
  return Status::OK();
}

Status Connection::RegisterArrowStream(const std::string& name,
                                       std::shared_ptr<RecordBatchReader> reader) {
  if (reader == nullptr) return Status::Invalid("cannot register a null reader");
  return Register(name, std::move(reader), nullptr);
}

Status Connection::RegisterTable(const std::string& name, TablePtr table) {
  if (table == nullptr) return Status::Invalid("cannot register a null table");
  return Register(name, nullptr, std::move(table));
}

Status Connection::SetTableResolver(TableResolver resolver) {
  QUIVER_ASSIGN_OR_RAISE(auto registry, state_->db->GetScanRegistry(state_->conn));
  auto r = state_->db->GetResolution();
  {
    std::lock_guard<std::mutex> lock(r->mu);
    r->registry = std::move(registry);
  }
  if (resolver) {
    r->Set(state_->conn, state_->id, std::move(resolver));
  } else {
    r->Set(nullptr, 0, nullptr);
  }
  return Status::OK();
}

void Connection::DropResolved() { state_->StatementStarts(); }

Status Connection::Unregister(const std::string& name) {
  auto it = registrations_.find(name);
  if (it == registrations_.end()) {
    return Status::KeyError("no Arrow stream is registered as '", name, "'");
  }
  QUIVER_RETURN_NOT_OK(Execute("DROP VIEW IF EXISTS " + QuoteIdentifier(name)));
  QUIVER_ASSIGN_OR_RAISE(auto registry, state_->db->GetScanRegistry(state_->conn));
  registry->Remove(it->second);
  registrations_.erase(it);
  return Status::OK();
}

namespace {

std::string Quote(std::string_view text, char quote) {
  std::string out(1, quote);
  for (char c : text) {
    if (c == quote) out += quote;
    out += c;
  }
  return out + quote;
}

}  // namespace

void KeepFreedMemory() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

std::string QuoteIdentifier(std::string_view name) { return Quote(name, '"'); }
std::string QuoteLiteral(std::string_view text) { return Quote(text, '\''); }

Status LockDown(Connection* conn, bool allow_files) {
  std::vector<const char*> settings = {"SET autoinstall_known_extensions = false",
                                       "SET autoload_known_extensions = false",
                                       "SET allow_community_extensions = false"};
  if (!allow_files) settings.push_back("SET enable_external_access = false");
  settings.push_back("SET lock_configuration = true");
  for (const char* sql : settings) {
    QUIVER_RETURN_NOT_OK(conn->Execute(sql).WithContext(sql));
  }
  return Status::OK();
}

bool RefusedByLockDown(const Status& st) {
  const std::string& m = st.message();
  return m.find("disabled through configuration") != std::string::npos ||
         m.find("disabled by configuration") != std::string::npos ||
         m.find("configuration has been locked") != std::string::npos;
}

}  // namespace quiver::duckdb
