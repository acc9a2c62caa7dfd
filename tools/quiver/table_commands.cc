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

// Every argument left must be positional and there must be `n` of them.
bool Positional(const Args& args, size_t n) {
  return args.size() == n && std::none_of(args.begin(), args.end(), [](const auto& a) {
           return a.rfind("--", 0) == 0;
         });
}

// Writes `table` to `path` in the format its extension names: Arrow IPC
// (.arrow, .ipc, .feather: file format; .arrows: stream format) by Quiver,
// Parquet, CSV and JSON by DuckDB's writers.
Status WriteByExtension(const TablePtr& table, const std::string& name,
                        const std::string& path, const std::string& tmp) {
  std::string lower = path;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (EndsWith(lower, ".arrow") || EndsWith(lower, ".ipc") ||
      EndsWith(lower, ".feather") || EndsWith(lower, ".arrows")) {
    QUIVER_ASSIGN_OR_RAISE(auto out, io::FileOutputStream::Open(tmp));
    QUIVER_RETURN_NOT_OK(ipc::WriteTable(
        *table,
        EndsWith(lower, ".arrows") ? ipc::IpcFormat::kStream : ipc::IpcFormat::kFile,
        out.get()));
    return out->Close();
  }
  std::string options;
  if (EndsWith(lower, ".parquet") || EndsWith(lower, ".pq")) {
    options = "FORMAT parquet";
  } else if (EndsWith(lower, ".csv")) {
    options = "FORMAT csv, HEADER true";
  } else if (EndsWith(lower, ".json") || EndsWith(lower, ".jsonl") ||
             EndsWith(lower, ".ndjson")) {
    options = "FORMAT json";
  } else {
    return Status::Invalid(
        path,
        ": the format is not known by the file's name (.arrow, .arrows, "
        ".ipc, .feather, .parquet, .csv, .json)");
  }
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

}  // namespace

int LsCommand(const Args& in) {
  Args args = in;
  int code = kExitOk;
  auto attached = AttachCluster("ls", &args, &code);
  if (!attached) return code;
  if (!Positional(args, 0)) {
    std::fputs("usage: quiver ls [--dir D] [--node N]\n", stderr);
    return kExitBadInput;
  }
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
  Args args = in;
  int code = kExitOk;
  auto attached = AttachCluster("rm", &args, &code);
  if (!attached) return code;
  if (args.empty() || !Positional(args, args.size())) {
    std::fputs("usage: quiver rm [--dir D] NAME...\n", stderr);
    return kExitBadInput;
  }
  for (const auto& name : args) {
    Status st = attached->client->Unpublish(name);
    if (!st.ok()) {
      code = Fail("rm " + name, st, st.IsNotFound() ? kExitBadInput : kExitFailed);
      continue;
    }
    std::printf("removed %s\n", Escape(name).c_str());
  }
  return code;
}

int GetCommand(const Args& in) {
  Args args = in;
  std::string out = TakeOption(&args, "output", "");
  for (size_t i = 0; i + 1 < args.size(); ++i) {  // -o FILE
    if (args[i] == "-o") {
      out = args[i + 1];
      args.erase(args.begin() + static_cast<long>(i),
                 args.begin() + static_cast<long>(i) + 2);
      break;
    }
  }
  int code = kExitOk;
  auto attached = AttachCluster("get", &args, &code);
  if (!attached) return code;
  if (!Positional(args, 1) || out.empty()) {
    std::fputs(
        "usage: quiver get [--dir D] [--node N] NAME -o FILE (.arrow .arrows .ipc "
        ".feather .parquet .csv .json)\n",
        stderr);
    return kExitBadInput;
  }
  const std::string& name = args[0];
  auto table = attached->client->GetHugeTable(name);
  if (!table.ok()) {
    return Fail("get " + name, table.status(),
                table.status().IsNotFound() ? kExitBadInput : kExitFailed);
  }
  // Written beside the target and renamed over it when complete: an
  // interrupted or failed get leaves no partial file.
  const std::string tmp = out + ".quiver-" + std::to_string(getpid()) + ".tmp";
  CatchInterrupts();
  Status st = WriteByExtension(*table, name, out, tmp);
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
