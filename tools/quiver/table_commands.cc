// quiver ls | rm | get: the published tables of the cluster `quiver up`
// keeps (docs/put.md).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "attach.h"
#include "duckdb/connection.h"
#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc.h"

namespace quiver::cli {

namespace {

constexpr const char* kIpcFile = "ipc file";
constexpr const char* kIpcStream = "ipc stream";

// How the name of `path` says to write it: kIpcFile (.arrow, .ipc,
// .feather), kIpcStream (.arrows), or DuckDB's COPY options (Parquet, CSV,
// JSON). Invalid for any other name: bad input, found before the cluster
// is asked.
Result<std::string> OutputFormatOf(const std::string& path) {
  std::string lower = path;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (EndsWith(lower, ".arrows")) return std::string(kIpcStream);
  if (EndsWith(lower, ".arrow") || EndsWith(lower, ".ipc") ||
      EndsWith(lower, ".feather")) {
    return std::string(kIpcFile);
  }
  if (EndsWith(lower, ".parquet") || EndsWith(lower, ".pq")) {
    return std::string("FORMAT parquet");
  }
  if (EndsWith(lower, ".csv")) return std::string("FORMAT csv, HEADER true");
  if (EndsWith(lower, ".json") || EndsWith(lower, ".jsonl") ||
      EndsWith(lower, ".ndjson")) {
    return std::string("FORMAT json");
  }
  return Status::Invalid(path,
                         ": the format is not known by the file's name (.arrow, .arrows, "
                         ".ipc, .feather, .parquet, .csv, .json)");
}

// Writes `table` to `tmp` in `format` (OutputFormatOf): Arrow IPC by
// Quiver, Parquet, CSV and JSON by DuckDB's writers.
Status WriteAs(const TablePtr& table, const std::string& name, const std::string& format,
               const std::string& tmp) {
  if (format == kIpcFile || format == kIpcStream) {
    QUIVER_ASSIGN_OR_RAISE(auto out, io::FileOutputStream::Open(tmp));
    QUIVER_RETURN_NOT_OK(ipc::WriteTable(
        *table, format == kIpcStream ? ipc::IpcFormat::kStream : ipc::IpcFormat::kFile,
        out.get()));
    return out->Close();
  }
  const std::string& options = format;
  QUIVER_ASSIGN_OR_RAISE(auto db, duckdb::Database::Open());
  QUIVER_ASSIGN_OR_RAISE(auto conn, duckdb::Connection::Open(db));
  QUIVER_RETURN_NOT_OK(conn->RegisterTable(name, table));
  // A Ctrl-C stops DuckDB's COPY where it is (the flag is polled: a signal
  // handler may not call into DuckDB).
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done.load()) {
      if (Interrupted()) {
        conn->Interrupt();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  Status st = conn->Execute("COPY (SELECT * FROM " + duckdb::QuoteIdentifier(name) +
                            ") TO " + duckdb::QuoteLiteral(tmp) + " (" + options + ")");
  done = true;
  watcher.join();
  return st;
}

// A table the cluster does not have, said plainly (the client's status
// names the node and socket it asked); exit 1 as for every answer of the
// cluster's (commands.h). Other failures as the client says them.
int TableFailed(const std::string& command, const std::string& name, Client& client,
                const Status& st) {
  if (st.IsNotFound()) {
    auto tables = client.List();
    const bool listed =
        tables.ok() && std::any_of(tables->begin(), tables->end(),
                                   [&](const TableInfo& t) { return t.name == name; });
    if (!listed) {
      std::fprintf(stderr,
                   "quiver: %s: no table '%s' is published (`quiver ls` lists the "
                   "tables)\n",
                   command.c_str(), Escape(name).c_str());
      return kExitFailed;
    }
  }
  return Fail(command + " " + name, st, kExitFailed);
}

}  // namespace

int LsCommand(const Args& args) {
  CommandLine cl("ls", "[OPTIONS]",
                 "The published tables of the cluster of `quiver up`: rows, chunks, "
                 "nodes, state.");
  ClusterFlags flags;
  AddClusterFlags(&cl, &flags);
  if (auto code = cl.Parse(args)) return *code;
  int code = kExitOk;
  auto attached = AttachCluster("ls", flags, &code);
  if (!attached) return code;
  auto tables = attached->client->List();
  if (!tables.ok()) return Fail("ls", tables.status(), kExitFailed);
  std::sort(tables->begin(), tables->end(),
            [](const TableInfo& a, const TableInfo& b) { return a.name < b.name; });
  size_t width = 4;
  for (const auto& t : *tables) width = std::max(width, Escape(t.name).size());
  auto list = [](const std::vector<uint32_t>& nodes) {
    std::string out;
    for (uint32_t n : nodes) out += (out.empty() ? "" : ",") + std::to_string(n);
    return out;
  };
  std::printf("%-*s %14s %7s  %-12s %-12s %s\n", static_cast<int>(width), "name", "rows",
              "chunks", "on nodes", "published by", "state");
  for (const auto& t : *tables) {
    std::string state = t.lost         ? "lost: " + t.lost_reason
                        : t.incomplete ? "incomplete: " + t.incomplete_reason
                                       : "ok";
    if (t.local_only) {
      state += ", local to node " + std::to_string(attached->client->node_id());
    }
    std::printf("%-*s %14llu %7u  %-12s %-12s %s\n", static_cast<int>(width),
                Escape(t.name).c_str(), static_cast<unsigned long long>(t.rows), t.chunks,
                list(t.nodes).c_str(), list(t.publishers).c_str(), Escape(state).c_str());
  }
  return kExitOk;
}

int RmCommand(const Args& in) {
  CommandLine cl("rm", "[OPTIONS] NAME...",
                 "Unpublish tables (their memory returns when no one reads them).");
  ClusterFlags flags;
  AddClusterFlags(&cl, &flags, /*with_node=*/false);
  Args names;
  cl.Positionals("NAME", &names, "the tables to unpublish");
  if (auto code = cl.Parse(in)) return *code;
  if (names.empty()) return cl.Usage("no table named");
  int code = kExitOk;
  auto attached = AttachCluster("rm", flags, &code);
  if (!attached) return code;
  for (const auto& name : names) {
    Status st = attached->client->Unpublish(name);
    if (!st.ok()) {
      code = TableFailed("rm", name, *attached->client, st);
      continue;
    }
    std::printf("removed %s\n", Escape(name).c_str());
  }
  return code;
}

int GetCommand(const Args& in) {
  CommandLine cl("get", "[OPTIONS] NAME -o FILE",
                 "Write a published table to FILE in the format its name gives: "
                 "Arrow IPC (.arrow .ipc .feather; .arrows: stream), .parquet, .csv, "
                 ".json.");
  ClusterFlags flags;
  AddClusterFlags(&cl, &flags);
  std::string out;
  cl.Text("-o,--output", &out, "the file to write (required)")->type_name("FILE");
  Args args;
  cl.Positionals("NAME", &args, "the table");
  if (auto code = cl.Parse(in)) return *code;
  if (args.size() != 1 || out.empty()) {
    return cl.Usage(args.size() > 1 ? "one table at a time"
                    : args.empty()  ? "which table?"
                                    : "-o FILE is missing");
  }
  auto format = OutputFormatOf(out);
  if (!format.ok()) return Fail("get", format.status());
  int code = kExitOk;
  auto attached = AttachCluster("get", flags, &code);
  if (!attached) return code;
  const std::string& name = args[0];
  auto table = attached->client->GetHugeTable(name);
  if (!table.ok()) {
    return TableFailed("get", name, *attached->client, table.status());
  }
  // Written beside the target and renamed over it when complete: an
  // interrupted or failed get leaves no partial file.
  const std::string tmp = out + ".quiver-" + std::to_string(getpid()) + ".tmp";
  CatchInterrupts();
  Status st = WriteAs(*table, name, *format, tmp);
  if (Interrupted()) {
    std::remove(tmp.c_str());
    std::fprintf(stderr, "quiver: get: interrupted: %s not written\n",
                 Escape(out).c_str());
    return 130;
  }
  if (st.ok() && std::rename(tmp.c_str(), out.c_str()) != 0) {
    st = Status::IOError("renaming ", tmp, " to ", out, ": ", std::strerror(errno));
  }
  if (!st.ok()) {
    std::remove(tmp.c_str());
    return Fail("get " + name + " -o " + out, st, kExitFailed);
  }
  std::printf("wrote %s: %lld rows of %s\n", Escape(out).c_str(),
              static_cast<long long>((*table)->num_rows()), Escape(name).c_str());
  return kExitOk;
}

}  // namespace quiver::cli
