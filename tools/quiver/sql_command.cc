// quiver sql: DuckDB on one node of the cluster `quiver up` keeps, where
// every published table is a table (docs/sql.md).
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <future>
#include <iostream>
#include <memory>
#include <string>

#include "attach.h"
#include "commands.h"
#include "duckdb/connection.h"
#include "quiver/client.h"
#include "sql_format.h"

namespace quiver::cli {

namespace {

// DuckDB over the published tables of the cluster, as one node sees them.
class SqlSession {
 public:
  SqlSession(std::unique_ptr<Client> client, std::unique_ptr<duckdb::Connection> conn,
             SqlFormat format)
      : client_(std::move(client)), conn_(std::move(conn)), format_(format) {}

  // Every published table is a table of the statements: a name no table of
  // DuckDB has is looked up in the cluster when a statement uses it, and the
  // table (a HugeTable: rows in order; a gap or an overlap makes it
  // unavailable rather than partial) is scanned zero-copy where its chunks
  // are, pinned while the statement runs. A statement pins only what it
  // names, and always sees what is published when it starts.
  Status ResolveTables() {
    return conn_->SetTableResolver(
        [this](const std::string& name) { return client_->GetTableForSql(name); });
  }

  // Runs `sql` and prints its result; returns the exit code.
  int Run(const std::string& sql) {
    auto result = conn_->QueryTable(sql);
    conn_->DropResolved();  // the result holds what it read
    if (!result.ok()) return SqlError(result.status());
    const int width = isatty(fileno(stdout)) ? TerminalWidth() : 0;
    Status st = WriteSqlResult(**result, format_, width, stdout);
    return st.ok() ? kExitOk : Fail("sql: output", st, kExitFailed);
  }

  // Runs `sql` and publishes its result as `name`, copied into this node's
  // memory (DuckDB's result lives in DuckDB's heap).
  int Publish(const std::string& sql, const std::string& name) {
    Status free = client_->CheckNameFree(name);  // before the query runs
    if (!free.ok()) return Fail("sql: --publish " + name, free, kExitFailed);
    auto result = conn_->QueryArrow(sql);
    if (!result.ok()) return SqlError(result.status());
    LoadOptions load;
    load.nodes = {client_->node_id()};
    auto table = client_->Load(result->get(), load);
    if (!table.ok()) return Fail("sql: --publish " + name, table.status(), kExitFailed);
    Status st = client_->Publish(*table, name);
    if (!st.ok()) return Fail("sql: --publish " + name, st, kExitFailed);
    std::printf("published %s: %lld rows in node %u's memory\n", Escape(name).c_str(),
                static_cast<long long>((*table)->num_rows()), client_->node_id());
    return kExitOk;
  }

  // Reads statements from stdin until EOF or .quit; a statement ends with a
  // line ending in ';'. The prompt shows only on a terminal. Exit code 1 if
  // any statement failed.
  int Interactive() {
    const bool tty = isatty(fileno(stdin)) != 0;
    int code = kExitOk;
    std::string statement, line;
    auto prompt = [&] {
      if (!tty) return;
      std::fputs(statement.empty() ? "quiver> " : "   ...> ", stdout);
      std::fflush(stdout);
    };
    for (prompt(); std::getline(std::cin, line); prompt()) {
      const std::string trimmed = Trim(line);
      if (statement.empty() && trimmed.empty()) continue;
      if (statement.empty() && trimmed[0] == '.') {
        if (trimmed == ".quit" || trimmed == ".exit") return code;
        if (trimmed == ".tables") {
          ListTables();
        } else {
          std::fprintf(stderr, "quiver: sql: unknown command %s (.tables, .quit)\n",
                       Escape(trimmed).c_str());
          code = kExitFailed;
        }
        continue;
      }
      statement += line + "\n";
      if (trimmed.back() != ';') continue;
      if (Run(statement) != kExitOk) code = kExitFailed;
      statement.clear();
    }
    if (!Trim(statement).empty() && Run(statement) != kExitOk) code = kExitFailed;
    if (tty) std::fputs("\n", stdout);
    return code;
  }

 private:
  static std::string Trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
  }
  static int TerminalWidth() {
    winsize ws{};
    return ioctl(fileno(stdout), TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
  }

  void ListTables() {
    auto tables = client_->List();
    if (!tables.ok()) {
      std::fprintf(stderr, "quiver: sql: listing the tables: %s\n",
                   Escape(tables.status().message()).c_str());
      return;
    }
    for (const auto& t : *tables) {
      std::string why =
          t.lost ? "lost: " + t.lost_reason : (t.incomplete ? t.incomplete_reason : "");
      if (why.empty()) {
        std::printf("%s\n", Escape(t.name).c_str());
      } else {
        std::printf("%s (unavailable: %s)\n", Escape(t.name).c_str(),
                    Escape(why).c_str());
      }
    }
    std::fflush(stdout);
  }

  // DuckDB's message as it is; a query naming a table that is published
  // but cannot be read says why (its node is down).
  int SqlError(const Status& st) {
    std::string text;  // DuckDB's lines as they are, each made safe
    size_t at = 0;
    for (size_t nl; (nl = st.message().find('\n', at)) != std::string::npos;
         at = nl + 1) {
      text += Escape(st.message().substr(at, nl - at)) + "\n";
    }
    text += Escape(st.message().substr(at));
    std::fprintf(stderr, "quiver: sql: %s\n", text.c_str());
    if (duckdb::RefusedByLockDown(st)) {
      std::fprintf(stderr,
                   "quiver: sql: by default a query reaches only the cluster's tables, "
                   "no file, extension or setting; --allow-files lets it read and write "
                   "files (docs/sql.md)\n");
    }
    return kExitFailed;
  }

  std::unique_ptr<Client> client_;
  std::unique_ptr<duckdb::Connection> conn_;
  SqlFormat format_;
};

}  // namespace

int SqlCommand(const Args& in) {
  CommandLine cl("sql", "[OPTIONS] [QUERY]",
                 "DuckDB on a node of the cluster of `quiver up`, every published table "
                 "a table (scanned zero-copy). No QUERY: statements ending in ';' from "
                 "stdin (.tables, .quit).");
  ClusterFlags flags;
  AddClusterFlags(&cl, &flags);
  std::string format_text = "table", publish;
  bool allow_files = false;
  cl.Text("--format", &format_text, "how rows are printed: table, csv, json or arrow")
      ->type_name("F");
  cl.Text("--publish", &publish,
          "publish the result as table NAME instead of printing it")
      ->type_name("NAME");
  cl.Flag("--allow-files", &allow_files,
          "let the query read and write files (off: only the cluster's tables)");
  Args args;
  cl.Positionals("QUERY", &args, "one SQL statement (options come before it)");
  // Whatever follows the query is the query's: `quiver sql "..." -h` is not
  // a call for help.
  cl.app().positionals_at_end();
  if (auto code = cl.Parse(in)) return *code;
  auto format = ParseSqlFormat(format_text);
  if (!format.ok()) return Fail("sql", format.status());
  if (args.size() > 1) return cl.Usage("one QUERY (quote it)");
  if (!publish.empty() && args.empty()) return cl.Usage("--publish needs a QUERY");
  if (*format == SqlFormat::kArrow && isatty(fileno(stdout)) && publish.empty()) {
    std::fprintf(stderr,
                 "quiver: sql: --format arrow writes binary; redirect stdout to a file "
                 "or a pipe\n");
    return kExitBadInput;
  }
  // DuckDB loads (a 50 MB library) while the cluster is attached.
  auto opening = std::async(
      std::launch::async, [allow_files]() -> Result<std::unique_ptr<duckdb::Connection>> {
        QUIVER_ASSIGN_OR_RAISE(auto db, duckdb::Database::Open());
        QUIVER_ASSIGN_OR_RAISE(auto conn, duckdb::Connection::Open(db));
        QUIVER_RETURN_NOT_OK(duckdb::LockDown(conn.get(), allow_files));
        return conn;
      });
  int code = kExitOk;
  auto attached = AttachCluster("sql", flags, &code);
  auto conn = opening.get();
  if (!attached) return code;
  if (!conn.ok()) return Fail("sql: DuckDB", conn.status(), kExitFailed);
  SqlSession session(std::move(attached->client), std::move(*conn), *format);
  Status st = session.ResolveTables();
  if (!st.ok()) return Fail("sql: DuckDB", st, kExitFailed);
  if (!publish.empty()) return session.Publish(args[0], publish);
  if (args.empty()) return session.Interactive();
  return session.Run(args[0]);
}

}  // namespace quiver::cli
