// quiver: the command line of the Quiver cluster data system.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "columnar/utf8.h"
#include "commands.h"

namespace quiver::cli {

std::string EscapeText(std::string_view text, bool (*plain)(uint8_t),
                       std::string (*escaped)(uint8_t)) {
  std::string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  int64_t left = static_cast<int64_t>(text.size());
  while (left > 0) {
    const int64_t valid = internal::Utf8ValidPrefixLength(p, left);
    for (int64_t i = 0; i < valid; ++i) {
      if (plain(p[i])) {
        out.push_back(static_cast<char>(p[i]));
      } else {
        out += escaped(p[i]);
      }
    }
    p += valid;
    left -= valid;
    if (left > 0) {  // a byte that starts no valid UTF-8 sequence here
      out += escaped(*p);
      ++p;
      --left;
    }
  }
  return out;
}

std::string Escape(std::string_view text) {
  return EscapeText(
      text, [](uint8_t b) { return b >= 0x20 && b != 0x7f; },
      [](uint8_t b) {
        char buf[5];
        std::snprintf(buf, sizeof(buf), "\\x%02x", b);
        return std::string(buf);
      });
}

int Fail(const std::string& what, const Status& st, int code) {
  std::string msg = st.message();
  for (auto& c : msg) {
    if (c == '\n') c = ' ';  // one line
  }
  std::fprintf(stderr, "quiver: %s: %s\n", Escape(what).c_str(), Escape(msg).c_str());
  return code;
}

namespace {
volatile sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }
}  // namespace

void CatchInterrupts() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool Interrupted() { return g_interrupted != 0; }

namespace {

constexpr const char* kMainUsage = R"(usage: quiver <command> [args]

commands:
  demo [--rows N] [--backing shm|incoherent] [--nodes K]
       [--stall-ms MS] [--keep-logs]
                               start a cluster on this host, build a HugeTable in
                               every node's memory, publish it as descriptors, sum
                               it on every node, compare with full IPC copies;
                               give up when no step completes for MS ms, keep the
                               daemons' logs
  up [--nodes N] [--size S] [--dir D]
                               start a cluster on this host that keeps running in
                               the background (N nodes, 3; regions of S, 1G; state
                               in D, default $QUIVER_DIR, else $XDG_RUNTIME_DIR/quiver,
                               else /tmp/quiver-UID); a stale one there is cleaned
  down [--dir D] [--timeout S] stop it (SIGKILL after S seconds, 10), remove its
                               regions, sockets and credentials (logs stay)
  status [--dir D | --config F] [--node N]
                               nodes, regions, memory use, published tables and
                               the object store's use per node (no flags: the
                               cluster of `quiver up`)
  sql [--dir D] [--node N] [--format table|csv|json|arrow] [--publish NAME] [QUERY]
                               DuckDB on node N (the first running one) of the
                               cluster of `quiver up`, every published table a
                               table (scanned zero-copy); no QUERY: read
                               statements ending in ';' from stdin (.tables,
                               .quit); --publish NAME: publish the result
  put [--dir D] [--node N] [--format csv|parquet|json|arrow] [--chunk-size B]
      FILE... NAME             load CSV, Parquet, JSON or Arrow IPC files (globs
                               too) into cluster memory as one table, spread over
                               the nodes (--node N: all on node N), published once
                               complete; an error or an interrupt leaves nothing
  ls [--dir D] [--node N]      the published tables: rows, chunks, nodes, state
  rm [--dir D] NAME...         unpublish tables (memory returns when no one reads)
  get [--dir D] [--node N] NAME -o FILE
                               write a table to FILE: Arrow IPC (.arrow .ipc
                               .feather; .arrows: stream), .parquet, .csv, .json
  store ls|stat [ID]|rm ID... --config F [--node N]
                               the object store's objects, one object or every
                               node's counters, delete objects (tables with parts)
  cluster init CONFIG [--force]
                               make the cluster's TLS credentials (a CA, and each
                               node's daemon and client certificate and key) in
                               the config's credentials directory
  node --config F --id N       run a node daemon (same as quiverd)
  serve [--listen HOST:PORT] [--token-file F] [--pool-mib N]
        [--table NAME=FILE]... [--generate NAME=ROWS]... [--insecure-no-token]
                               load tables into DuckDB and answer scans over UCX
                               (Arrow's Dissociated IPC protocol) until interrupted
  scan HOST:PORT SQL [--token-file F] [--out FILE] [--limit N] [--min-rows N]
       [--window N] [--bodies measure|packed|addresses] [--progress]
                               run SQL on a serve'ing host, print the rows (or save
                               an Arrow IPC stream) and what moved how fast
  interop-demo [--rows N]      build a table, round-trip it through Arrow IPC and
                               DuckDB, print what happened
  ipc cat FILE [--limit N]     print the schema and rows of an Arrow IPC stream or file
  ipc roundtrip IN OUT         read an IPC stream or file, validate it fully, write it
       [--compression C]       back in the same format, batch for batch (empty ones
                               too; C: none, lz4, zstd)
  chaos [--seed N] [--duration S] [--nodes N] [--workers N] [--size S]
        [--lease-ms MS] [--grace-ms MS] [--plant-wrong] [--keep]
                               soak a fresh cluster on this host: workers publish,
                               read, hold and unpublish self-checking tables and
                               store objects while clients and daemons are
                               SIGKILLed and SIGSTOPped; exit 1 on any wrong
                               value, hang, unexplained daemon exit or leaked
                               byte (docs/chaos.md)
  bench [all|NAME...] [--quick] [--out DIR] [--repetitions N] [--list]
                               run the benchmark suite, write DIR/results.json,
                               DIR/report.md (beside the published figures) and plots
  help                         this text; `quiver COMMAND --help` (or -h) lists
                               the command's options, one line each

exit codes: 0 ok; 1 failed at run time (no cluster, no such table, a daemon
down, no room, a check failed); 2 bad usage or bad input (docs/cli.md)
)";

}  // namespace
}  // namespace quiver::cli

int main(int argc, char** argv) {
  using namespace quiver::cli;
  if (argc < 2 || std::strcmp(argv[1], "help") == 0 ||
      std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kMainUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitBadInput : kExitOk;
  }
  std::string command = argv[1];
  Args args(argv + 2, argv + argc);
  if (command == "ipc") return IpcCommand(args);
  if (command == "demo") return ClusterDemoCommand(args);
  if (command == "demo-node") return DemoNodeCommand(args);
  if (command == "demo-read") return DemoReadCommand(args);
  if (command == "interop-demo") return DemoCommand(args);
  if (command == "node") return NodeCommand(args);
  if (command == "status") return StatusCommand(args);
  if (command == "up") return UpCommand(args);
  if (command == "down") return DownCommand(args);
  if (command == "bench") return BenchCommand(args);
  if (command == "cluster") return ClusterCommand(args);
  if (command == "store") return StoreCommand(args);
  if (command == "serve") return ServeCommand(args);
  if (command == "scan") return ScanCommand(args);
  if (command == "sql") return SqlCommand(args);
  if (command == "put") return PutCommand(args);
  if (command == "ls") return LsCommand(args);
  if (command == "rm") return RmCommand(args);
  if (command == "get") return GetCommand(args);
  if (command == "chaos") return ChaosCommand(args);
  if (command == "chaos-worker") return ChaosWorkerCommand(args);
  std::fprintf(stderr, "quiver: unknown command '%s' (try 'quiver help')\n",
               command.c_str());
  return kExitBadInput;
}
