#include "sql.h"

#include <map>

#include "duckdb/connection.h"

namespace quiver::python {

namespace {

// One DuckDB database of a session, locked down as `quiver sql` locks its
// own (duckdb::LockDown): nothing but the cluster's tables unless
// allow_files.
struct SqlState {
  std::shared_ptr<duckdb::Database> db;
  std::unique_ptr<duckdb::Connection> conn;
};

Result<std::shared_ptr<SqlState>> OpenSql(bool allow_files) {
  auto state = std::make_shared<SqlState>();
  QUIVER_ASSIGN_OR_RAISE(state->db, duckdb::Database::Open());
  QUIVER_ASSIGN_OR_RAISE(state->conn, duckdb::Connection::Open(state->db));
  QUIVER_RETURN_NOT_OK(duckdb::LockDown(state->conn.get(), allow_files));
  return state;
}

// The message `quiver sql` prints for a failed query: DuckDB's, the
// lock-down's explanation when a query was refused by it (then
// PermissionDenied, whatever DuckDB's error type), and why a published
// table it names could not be read.
Status SqlError(const Status& st) {
  std::string text = st.message();
  StatusCode code = st.code();
  if (duckdb::RefusedByLockDown(st)) {
    code = StatusCode::kPermissionDenied;  // refused by the lock-down
    text +=
        "\nby default a query reaches only the cluster's tables, no file, extension or "
        "setting; allow_files=True lets it read and write files (docs/sql.md)";
  }
  return Status(code, text);
}

}  // namespace

std::shared_ptr<PyTable> RunSql(Session& s, const std::string& query, bool allow_files,
                                std::optional<std::string> publish,
                                std::optional<uint32_t> node) {
  SessionUse use(s);
  Client& client = use.client();
  if (node && !publish && *node != client.node_id()) {
    ThrowClass(
        "InvalidArgument",
        "this process is a client of node " + std::to_string(client.node_id()) +
            ", where DuckDB runs (a process is of one node): node= places a "
            "result given publish=; to query as node " +
            std::to_string(*node) +
            " sees the cluster, connect a process with node=" + std::to_string(*node));
  }
  if (node && client.config().FindNode(*node) == nullptr) {
    ThrowClass("InvalidArgument", "no node " + std::to_string(*node) + " in the cluster");
  }
  std::unique_lock<std::mutex> lock(s.sql_mu, std::defer_lock);
  {
    // Another thread's query holds it and takes the GIL between slices.
    py::gil_scoped_release release;
    lock.lock();
  }
  std::shared_ptr<void>& slot = s.sql_state[allow_files ? 1 : 0];
  if (slot == nullptr) {
    std::optional<Result<std::shared_ptr<SqlState>>> opened;
    {
      py::gil_scoped_release release;
      opened.emplace(OpenSql(allow_files));
    }
    slot = Unwrap(std::move(*opened));
  }
  auto state = std::static_pointer_cast<SqlState>(slot);
  duckdb::Connection* conn = state->conn.get();

  Status st;
  TablePtr result;
  // Published tables are fetched as the query names them (zero-copy
  // HugeTables, as `quiver sql` reads them) and let go when it ends,
  // however it ends: nothing stays pinned between queries.
  st = conn->SetTableResolver(
      [&client](const std::string& name) { return client.GetTableForSql(name); });
  Check(st);
  struct Drop {
    duckdb::Connection* conn;
    ~Drop() {
      py::gil_scoped_release release;
      conn->DropResolved();
    }
  } drop{conn};
  RunInterruptible(
      [&] {
        if (publish) {
          st = client.CheckNameFree(*publish);  // before the query runs
          if (!st.ok()) return;
        }
        if (!publish) {
          auto r = conn->QueryTable(query);
          if (r.ok()) {
            result = std::move(*r);
          } else {
            st = SqlError(r.status());
          }
          return;
        }
        auto reader = conn->QueryArrow(query);
        if (!reader.ok()) {
          st = SqlError(reader.status());
          return;
        }
        LoadOptions load;
        load.nodes = {node ? *node : client.node_id()};
        auto table = client.Load(reader->get(), load);
        if (!table.ok()) {
          st = table.status().WithContext("publish " + *publish);
          return;
        }
        st = client.Publish(*table, *publish);
        if (!st.ok()) {
          st = st.WithContext("publish " + *publish);
          return;
        }
        table->reset();
        auto got = client.GetHugeTable(*publish);
        if (got.ok()) {
          result = std::move(*got);
        } else {
          st = got.status();
        }
      },
      [&] { conn->Interrupt(); });
  Check(st);
  return WrapTable(std::move(result));
}

}  // namespace quiver::python
