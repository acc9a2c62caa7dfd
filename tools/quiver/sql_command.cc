// quiver sql: DuckDB on one node of the cluster `quiver up` keeps, where
// every published table is a table (docs/sql.md).
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "attach.h"
#include "commands.h"
#include "duckdb/connection.h"
#include "quiver/client.h"
#include "sql_format.h"

namespace quiver::cli {

namespace {

constexpr const char* kSqlUsage =
    "usage: quiver sql [--node N] [--dir D] [--format table|csv|json|arrow] "
    "[--publish NAME] [--allow-files] [QUERY]\n";

// DuckDB over the published tables of the cluster, as one node sees them.
class SqlSession {
 public:
  SqlSession(std::unique_ptr<Client> client, std::unique_ptr<duckdb::Connection> conn,
             SqlFormat format)
      : client_(std::move(client)), conn_(std::move(conn)), format_(format) {}

  // Makes every published table a view of its name: zero-copy, the view
  // scans the chunks where they are in cluster memory. Lost tables are
  // remembered to explain a query that names them. Called again before each
  // interactive statement: tables published since are added, removed ones
  // dropped (their pins released), and one published again under its name
  // (other chunks or rows) opened again.
  Status RegisterTables() {
    QUIVER_ASSIGN_OR_RAISE(auto tables, client_->List());
    std::set<std::string> listed;
    unavailable_.clear();
    for (const auto& t : tables) {
      listed.insert(t.name);
      if (t.lost) {
        unavailable_[t.name] = "lost: " + t.lost_reason;
        Forget(t.name);
        continue;
      }
      auto seen = registered_.find(t.name);
      if (seen != registered_.end() && seen->second == std::pair{t.chunks, t.rows})
        continue;
      // Every table as a HugeTable (a whole table's chunks start at row 0
      // and follow each other): rows in order, and a gap (a chunk not yet
      // published) or an overlap makes it unavailable rather than partial.
      auto table = client_->GetHugeTable(t.name);
      if (table.ok()) {
        QUIVER_RETURN_NOT_OK(conn_->RegisterTable(t.name, *table));
        registered_[t.name] = {t.chunks, t.rows};
      } else {
        unavailable_[t.name] = table.status().message();
        Forget(t.name);
      }
    }
    std::vector<std::string> gone;
    for (const auto& [name, seen] : registered_) {
      if (listed.count(name) == 0) gone.push_back(name);
    }
    for (const auto& name : gone) Forget(name);
    return Status::OK();
  }

  // Runs `sql` and prints its result; returns the exit code.
  int Run(const std::string& sql) {
    auto result = conn_->QueryTable(sql);
    if (!result.ok()) return SqlError(result.status());
    const int width = isatty(fileno(stdout)) ? TerminalWidth() : 0;
    Status st = WriteSqlResult(**result, format_, width, stdout);
    return st.ok() ? kExitOk : Fail("sql: output", st, kExitFailed);
  }

  // Runs `sql` and publishes its result as `name`, copied into this node's
  // memory (DuckDB's result lives in DuckDB's heap).
  int Publish(const std::string& sql, const std::string& name) {
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
          Refresh();
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
      if (RunFresh(statement) != kExitOk) code = kExitFailed;
      statement.clear();
    }
    if (!Trim(statement).empty() && RunFresh(statement) != kExitOk) code = kExitFailed;
    if (tty) std::fputs("\n", stdout);
    return code;
  }

 private:
  static std::string Trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
  }
  // The tables as they are now; a failure to list them is said and the
  // session goes on with those it has.
  void Refresh() {
    Status st = RegisterTables();
    if (!st.ok()) {
      std::fprintf(stderr, "quiver: sql: listing the tables: %s\n",
                   Escape(st.message()).c_str());
    }
  }
  int RunFresh(const std::string& sql) {
    Refresh();
    return Run(sql);
  }

  static int TerminalWidth() {
    winsize ws{};
    return ioctl(fileno(stdout), TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
  }

  void ListTables() {
    for (const auto& [n, seen] : registered_) std::printf("%s\n", Escape(n).c_str());
    for (const auto& [n, why] : unavailable_) {
      std::printf("%s (unavailable: %s)\n", Escape(n).c_str(), Escape(why).c_str());
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
    for (const auto& [name, why] : unavailable_) {
      if (st.message().find(name) != std::string::npos) {
        std::fprintf(stderr, "quiver: sql: table %s is published but unavailable: %s\n",
                     Escape(name).c_str(), Escape(why).c_str());
      }
    }
    return kExitFailed;
  }

  std::unique_ptr<Client> client_;
  std::unique_ptr<duckdb::Connection> conn_;
  SqlFormat format_;
  // Drops the view of `name` (if any) and the table it held.
  void Forget(const std::string& name) {
    if (registered_.erase(name) > 0) (void)conn_->Unregister(name);
  }

  std::map<std::string, std::pair<uint32_t, uint64_t>> registered_;  // -> chunks, rows
  std::map<std::string, std::string> unavailable_;                   // name -> why
};

}  // namespace

int SqlCommand(const Args& in) {
  Args args = in;
  const std::string publish = TakeOption(&args, "publish", "");
  const bool allow_files = TakeFlag(&args, "allow-files");
  auto format = ParseSqlFormat(TakeOption(&args, "format", "table"));
  if (!format.ok()) return Fail("sql", format.status());
  Args positional = args;  // what is left once --dir and --node are taken
  (void)TakeOption(&positional, "dir", "");
  (void)TakeOption(&positional, "node", "");
  if (positional.size() > 1 ||
      (!positional.empty() && positional[0].rfind("--", 0) == 0) ||
      (!publish.empty() && positional.empty())) {
    std::fputs(kSqlUsage, stderr);
    return kExitBadInput;
  }
  if (*format == SqlFormat::kArrow && isatty(fileno(stdout)) && publish.empty()) {
    std::fprintf(stderr,
                 "quiver: sql: --format arrow writes binary; redirect stdout to a file "
                 "or a pipe\n");
    return kExitBadInput;
  }
  int code = kExitOk;
  auto attached = AttachCluster("sql", &args, &code);
  if (!attached) return code;
  auto db = duckdb::Database::Open();
  if (!db.ok()) return Fail("sql: DuckDB", db.status(), kExitFailed);
  auto conn = duckdb::Connection::Open(*db);
  if (!conn.ok()) return Fail("sql: DuckDB", conn.status(), kExitFailed);
  Status locked = duckdb::LockDown(conn->get(), allow_files);
  if (!locked.ok()) return Fail("sql: DuckDB", locked, kExitFailed);
  SqlSession session(std::move(attached->client), std::move(*conn), *format);
  Status st = session.RegisterTables();
  if (!st.ok()) return Fail("sql: listing the tables", st, kExitFailed);
  if (!publish.empty()) return session.Publish(args[0], publish);
  if (args.empty()) return session.Interactive();
  return session.Run(args[0]);
}

}  // namespace quiver::cli
