// quiver demo: a 3-node cluster on this host, a HugeTable built by every
// node in its own memory, published as descriptors, summed on every node,
// then sent again as full Arrow IPC copies for comparison.
//
// `quiver demo` starts the daemons (LocalCluster) and one `quiver
// demo-node` process per node, follows their progress through the nodes'
// state words, and prints the side-by-side result. Exit 1 on any mismatch.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "cli_parse.h"
#include "commands.h"
#include "control/client/admin.h"
#include "control/local_cluster.h"
#include "quiver/client.h"
#include "quiver/columnar/builder.h"
#include "quiverd/daemon_main.h"

namespace quiver::cli {

namespace {

using Clock = std::chrono::steady_clock;

// The nodes' state-word bits the demo steps through.
enum Phase : uint64_t {
  kBuilt = 1,
  kPublished = 2,
  kSummed = 4,
  kSentFull = 8,
  kSummedFull = 16,
  kDone = 32,
};
constexpr uint64_t kAllPhases = 63;
constexpr int kPhaseTimeoutMs = 30 * 60 * 1000;
// The demo gives up when no phase completes for this long (--stall-ms).
constexpr uint64_t kStallMs = 10 * 60 * 1000;

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// The demo table's columns (the thesis's: int64, int8, uint16) at global row i.
inline int64_t ColA(uint64_t i) { return static_cast<int64_t>(i); }
inline int8_t ColB(uint64_t i) {
  return static_cast<int8_t>(static_cast<int>(i % 256) - 128);
}
inline uint16_t ColC(uint64_t i) { return static_cast<uint16_t>(i % 65536); }

struct Sums {
  int64_t a = 0, b = 0;
  uint64_t c = 0, rows = 0;
  bool operator==(const Sums& o) const {
    return a == o.a && b == o.b && c == o.c && rows == o.rows;
  }
  std::string ToString() const {
    std::ostringstream s;
    s << a << " / " << b << " / " << c;
    return s.str();
  }
};

// The sums of rows [0, n) in closed form, independent of any data.
Sums ExpectedSums(uint64_t n) {
  Sums s;
  s.rows = n;
  // sum of i for i < n (fits: n <= 4e9 keeps n^2/2 < 9.2e18)
  s.a = static_cast<int64_t>(n % 2 == 0 ? (n / 2) * (n - 1) : n * ((n - 1) / 2));
  const uint64_t q = n / 256, r = n % 256;
  s.b = -128 * static_cast<int64_t>(q);
  for (uint64_t k = 0; k < r; ++k) s.b += static_cast<int64_t>(k) - 128;
  const uint64_t q2 = n / 65536, r2 = n % 65536;
  s.c = q2 * (65535ULL * 65536ULL / 2) + (r2 == 0 ? 0 : r2 * (r2 - 1) / 2);
  return s;
}

Result<RecordBatchPtr> BuildSlice(MemoryPool* pool, uint64_t first, uint64_t n) {
  Int64Builder a(pool);
  Int8Builder b(pool);
  UInt16Builder c(pool);
  QUIVER_RETURN_NOT_OK(a.Reserve(static_cast<int64_t>(n)));
  QUIVER_RETURN_NOT_OK(b.Reserve(static_cast<int64_t>(n)));
  QUIVER_RETURN_NOT_OK(c.Reserve(static_cast<int64_t>(n)));
  for (uint64_t i = first; i < first + n; ++i) {
    a.UnsafeAppend(ColA(i));
    b.UnsafeAppend(ColB(i));
    c.UnsafeAppend(ColC(i));
  }
  QUIVER_ASSIGN_OR_RAISE(auto aa, a.Finish());
  QUIVER_ASSIGN_OR_RAISE(auto ba, b.Finish());
  QUIVER_ASSIGN_OR_RAISE(auto ca, c.Finish());
  return RecordBatch::FromArrays({"a_int64", "b_int8", "c_uint16"}, {aa, ba, ca});
}

// The demo table's sums; a table of one int64 column gives only the first.
Result<Sums> SumTable(const Table& t) {
  Sums s;
  s.rows = static_cast<uint64_t>(t.num_rows());
  const bool one =
      t.num_columns() == 1 && t.schema()->field(0)->type()->id() == TypeId::kInt64;
  if (t.num_columns() != 3 && !one) {
    return Status::Invalid("expected the demo's 3 columns or one int64 column, got ",
                           t.schema()->ToString());
  }
  for (const auto& chunk : t.column(0)->chunks()) {
    const auto* v = std::static_pointer_cast<Int64Array>(chunk)->raw_values();
    int64_t acc = 0;
    for (int64_t i = 0; i < chunk->length(); ++i) acc += v[i];
    s.a += acc;
  }
  if (one) return s;
  for (const auto& chunk : t.column(1)->chunks()) {
    const auto* v = std::static_pointer_cast<Int8Array>(chunk)->raw_values();
    int64_t acc = 0;
    for (int64_t i = 0; i < chunk->length(); ++i) acc += v[i];
    s.b += acc;
  }
  for (const auto& chunk : t.column(2)->chunks()) {
    const auto* v = std::static_pointer_cast<UInt16Array>(chunk)->raw_values();
    uint64_t acc = 0;
    for (int64_t i = 0; i < chunk->length(); ++i) acc += v[i];
    s.c += acc;
  }
  return s;
}

// Every buffer of `t` lies in one of the cluster's regions (and, with
// `node` set, in that node's region): the zero-copy check by address.
bool AllInCluster(const Table& t, memory::ClusterMap* map,
                  const memory::NodeConfig* node) {
  bool ok = true;
  auto visit = [&](const Buffer& b) {
    if (map->RegionOf(b.data(), static_cast<uint64_t>(b.size())) == nullptr) ok = false;
    if (node != nullptr &&
        !node->Contains(reinterpret_cast<uint64_t>(b.data()), b.size())) {
      ok = false;
    }
  };
  for (const auto& col : t.columns()) {
    for (const auto& chunk : col->chunks()) ForEachBuffer(*chunk->data(), visit);
  }
  return ok;
}

struct NodeResult {
  std::map<std::string, std::string> kv;
  double num(const std::string& k) const {
    auto it = kv.find(k);
    return it == kv.end() ? 0.0 : std::strtod(it->second.c_str(), nullptr);
  }
  std::string str(const std::string& k) const {
    auto it = kv.find(k);
    return it == kv.end() ? "" : it->second;
  }
};

}  // namespace

// ---------------------------------------------------------------------------
// quiver demo-node: one node's part (run by `quiver demo`, and by tests).

int DemoNodeCommand(const Args& in) {
  CommandLine cl("demo-node", "--config F --node N [OPTIONS]",
                 "One node's part of `quiver demo` (run by it, and by tests).");
  std::string config, name = "demo", result_path;
  uint64_t node_flag = 0, rows = 1000000, owner_flag = ~0ULL >> 1;
  bool skip_full = false;
  cl.Text("--config", &config, "the cluster file (required)")->type_name("F");
  cl.Count("--node", &node_flag, 0xFFFF, "this node");
  cl.Count("--rows", &rows, 1ULL << 40, "rows of the whole table");
  cl.Count("--owner", &owner_flag, 0xFFFF, "the node whose region holds the slice")
      ->default_str("this node");
  cl.Text("--name", &name, "the table's name")->type_name("T");
  cl.Text("--result", &result_path, "write the sums to FILE")->type_name("FILE");
  cl.Flag("--no-full", &skip_full, "skip the full IPC copies");
  if (auto code = cl.Parse(in)) return *code;
  if (config.empty()) return cl.Usage("--config F is missing");
  const auto node = static_cast<uint32_t>(node_flag);
  auto client_r = Client::Connect({config, node});
  if (!client_r.ok()) return Fail("connecting", client_r.status());
  auto& client = *client_r;
  const auto& cfg = client->config();
  const uint64_t k = cfg.nodes.size();
  uint32_t index = 0;
  while (cfg.nodes[index].id != node) ++index;
  const uint64_t first = rows * index / k, n = rows * (index + 1) / k - first;
  const uint32_t owner = owner_flag > 0xFFFF ? node : static_cast<uint32_t>(owner_flag);
  if (client->pool(owner) == nullptr)
    return Fail("--owner", Status::Invalid("no node ", owner));
  std::ostringstream out;
  bool ok = true;
  auto phase = [&](uint64_t bit) -> Status {
    QUIVER_RETURN_NOT_OK(client->SetState(bit, bit));
    return client->SyncWait(bit, bit, kPhaseTimeoutMs);
  };
  auto run = [&]() -> Status {
    QUIVER_RETURN_NOT_OK(client->WaitAllOnline(60000));
    auto t0 = Clock::now();
    QUIVER_ASSIGN_OR_RAISE(auto batch, BuildSlice(client->pool(owner), first, n));
    out << "build_ms=" << Ms(Clock::now() - t0) << "\n";
    QUIVER_RETURN_NOT_OK(phase(kBuilt));

    // Descriptor-only publishing: readable on every node when it returns.
    t0 = Clock::now();
    QUIVER_RETURN_NOT_OK(client->Publish(batch, name, {.first_row = first}));
    out << "publish_ms=" << Ms(Clock::now() - t0) << "\n";
    QUIVER_ASSIGN_OR_RAISE(std::string desc,
                           control::EncodeDescriptor(*batch, client->local_pool()));
    out << "descriptor_bytes=" << desc.size() << "\n";
    out << "publish_sent_bytes=" << desc.size() * (k - 1) << "\n";
    QUIVER_RETURN_NOT_OK(phase(kPublished));

    t0 = Clock::now();
    QUIVER_ASSIGN_OR_RAISE(auto table,
                           client->GetHugeTable(name, {60000, static_cast<uint32_t>(k)}));
    out << "get_ms=" << Ms(Clock::now() - t0) << "\n";
    const bool zero_copy = AllInCluster(*table, client->cluster(), nullptr);
    // 1 where every row is in this node's memory: what other nodes
    // published came over the transport (nodes outside their memory group).
    const bool own_region = AllInCluster(*table, client->cluster(), cfg.FindNode(node));
    t0 = Clock::now();
    QUIVER_ASSIGN_OR_RAISE(Sums sums, SumTable(*table));
    out << "sum_ms=" << Ms(Clock::now() - t0) << "\n";
    const Sums want = ExpectedSums(rows);
    const bool sums_ok = sums == want;
    ok = ok && sums_ok && zero_copy;
    out << "sums=" << sums.ToString() << "\nsums_ok=" << sums_ok
        << "\nzero_copy=" << zero_copy << "\nown_region=" << own_region
        << "\nrows_seen=" << sums.rows << "\n";
    table.reset();
    QUIVER_RETURN_NOT_OK(phase(kSummed));

    if (!skip_full) {
      // The baseline: the same slice as an Arrow IPC stream with its data to
      // every other node, where it lands in that node's own memory.
      auto slice = Table::FromRecordBatches({batch});
      QUIVER_RETURN_NOT_OK(slice.status());
      t0 = Clock::now();
      QUIVER_ASSIGN_OR_RAISE(auto sent,
                             client->SendTableFull(*slice, name + ".full", first));
      out << "full_ms=" << Ms(Clock::now() - t0) << "\n";
      out << "full_sent_bytes=" << sent.bytes_sent << "\n";
      // This node's own slice is already here.
      QUIVER_RETURN_NOT_OK(client->Publish(batch, name + ".full",
                                           {.first_row = first, .local_only = true}));
      QUIVER_RETURN_NOT_OK(phase(kSentFull));
      QUIVER_ASSIGN_OR_RAISE(
          auto full,
          client->GetHugeTable(name + ".full", {60000, static_cast<uint32_t>(k)}));
      QUIVER_ASSIGN_OR_RAISE(Sums fsums, SumTable(*full));
      // The copies received are in this node's memory; so is the own slice
      // unless it was built elsewhere (--owner).
      const bool local = AllInCluster(*full, client->cluster(),
                                      owner == node ? cfg.FindNode(node) : nullptr);
      const bool full_ok = fsums == want;
      ok = ok && full_ok && local;
      out << "full_sums=" << fsums.ToString() << "\nfull_sums_ok=" << full_ok
          << "\nfull_local=" << local << "\n";
      full.reset();
    }
    QUIVER_RETURN_NOT_OK(phase(kSummedFull));
    return phase(kDone);
  };
  Status st = run();
  if (!st.ok()) {
    out << "error=" << st.ToString() << "\n";
    ok = false;
  }
  out << "ok=" << ok << "\n";
  if (!result_path.empty()) {
    std::ofstream f(result_path);
    f << out.str();
  } else {
    std::fputs(out.str().c_str(), stdout);
  }
  if (!st.ok()) return Fail("demo-node " + std::to_string(node), st, kExitFailed);
  return ok ? kExitOk : kExitFailed;
}

// ---------------------------------------------------------------------------
// quiver demo-read: reads a published demo table on one node, checks it and
// optionally holds it (pinned) until stdin closes. For tests and scripts.

int DemoReadCommand(const Args& in) {
  CommandLine cl("demo-read", "--config F --node N --name T [OPTIONS]",
                 "Read a published demo table on one node, check it, and hold it "
                 "(pinned) until stdin closes with --hold.");
  std::string config, name = "demo";
  uint64_t node_flag = 0, chunks_flag = 1, rows = 0;
  bool hold = false;
  cl.Text("--config", &config, "the cluster file (required)")->type_name("F");
  cl.Count("--node", &node_flag, 0xFFFF, "the node to read on");
  cl.Text("--name", &name, "the table's name")->type_name("T");
  cl.Count("--chunks", &chunks_flag, 1u << 20, "chunks the table has");
  cl.Count("--rows", &rows, 1ULL << 40, "rows the table has");
  cl.Flag("--hold", &hold, "hold the table until stdin closes");
  if (auto code = cl.Parse(in)) return *code;
  if (config.empty()) return cl.Usage("--config F is missing");
  const auto node = static_cast<uint32_t>(node_flag);
  const auto chunks = static_cast<uint32_t>(chunks_flag);
  auto client = Client::Connect({config, node});
  if (!client.ok()) return Fail("connecting", client.status());
  auto table = (*client)->GetHugeTable(name, {30000, chunks});
  if (!table.ok()) return Fail("get " + name, table.status(), kExitFailed);
  auto sums = SumTable(**table);
  if (!sums.ok()) return Fail("sum", sums.status(), kExitFailed);
  const bool zero_copy = AllInCluster(**table, (*client)->cluster(), nullptr);
  const bool sums_ok = rows == 0 || *sums == ExpectedSums(rows);
  std::printf("rows=%" PRIu64 " sums=%s sums_ok=%d zero_copy=%d\n", sums->rows,
              sums->ToString().c_str(), sums_ok, zero_copy);
  if (hold) {
    std::printf("pinned\n");
    std::fflush(stdout);
    // "sum" sums the held arrays again (their memory must not have changed,
    // whatever happened to the table's name or its daemons meanwhile).
    char line[256];
    while (std::fgets(line, sizeof(line), stdin) != nullptr) {
      if (std::string(line) != "sum\n") continue;
      auto again = SumTable(**table);
      if (!again.ok()) return Fail("sum", again.status(), kExitFailed);
      std::printf("resum rows=%" PRIu64 " sums=%s sums_ok=%d\n", again->rows,
                  again->ToString().c_str(), rows == 0 || *again == ExpectedSums(rows));
      std::fflush(stdout);
    }
  }
  return sums_ok && zero_copy ? kExitOk : kExitFailed;
}

// ---------------------------------------------------------------------------
// quiver demo

namespace {

uint64_t MemAvailable() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

std::string DecimalBytes(double b) {
  char buf[64];
  if (b >= 1e9) {
    std::snprintf(buf, sizeof(buf), "%.2f GB", b / 1e9);
  } else if (b >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.1f MB", b / 1e6);
  } else if (b >= 1e3) {
    std::snprintf(buf, sizeof(buf), "%.1f KB", b / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f B", b);
  }
  return buf;
}

std::string Millis(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), ms < 10 ? "%.3f ms" : "%.1f ms", ms);
  return buf;
}

// Follows the workers until all have exited, printing each phase as every
// node reaches it (the nodes' state words). Returns "" when they all ran to
// their end, "interrupted" on ^C, or why it stopped them early: a worker
// failed, a daemon died, or nothing moved for `stall_ms`. Stopped workers get
// SIGTERM, then SIGKILL; `codes` receives every worker's exit code.
std::string WatchWorkers(control::LocalCluster* cluster,
                         const std::vector<pid_t>& workers, uint64_t stall_ms,
                         std::vector<int>* codes) {
  const int nodes = static_cast<int>(workers.size());
  const char* names[] = {"built their slices",     "published descriptors",
                         "summed the HugeTable",   "sent full copies",
                         "summed the full copies", "done"};
  uint64_t reported = 0;
  const auto start = Clock::now();
  auto last_progress = start;
  int alive = nodes;
  std::string why;
  while (alive > 0 && why.empty()) {
    if (Interrupted()) why = "interrupted";
    for (int i = 0; i < nodes; ++i) {
      int status = 0;
      if ((*codes)[i] == -1 && waitpid(workers[i], &status, WNOHANG) == workers[i]) {
        (*codes)[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        --alive;
        if ((*codes)[i] != 0 && why.empty()) {
          why = "the worker of node " + std::to_string(i) + " failed (exit " +
                std::to_string((*codes)[i]) + "); stopped the others";
        }
      }
      if (why.empty() && cluster->Exited(i)) {
        // Its log goes with the cluster's folder: its end goes into the message.
        std::ifstream f(cluster->log_path(i));
        std::string log((std::istreambuf_iterator<char>(f)), {});
        if (log.size() > 800) log = "..." + log.substr(log.size() - 800);
        why =
            "quiverd of node " + std::to_string(i) + " died; the end of its log:\n" + log;
      }
    }
    auto status = control::client::QueryClusterStatus(cluster->config().nodes[0], 2000);
    if (status.ok()) {
      uint64_t all = kAllPhases;
      for (const auto& n : status->nodes) all &= n.flags;
      for (int b = 0; b < 6; ++b) {
        if ((all & (1ULL << b)) && !(reported & (1ULL << b))) {
          reported |= 1ULL << b;
          last_progress = Clock::now();
          std::printf("  [%7.1f s] all nodes %s\n",
                      std::chrono::duration<double>(Clock::now() - start).count(),
                      names[b]);
          std::fflush(stdout);
        }
      }
    }
    if (why.empty() &&
        Clock::now() - last_progress > std::chrono::milliseconds(stall_ms)) {
      why = "no node made progress for " + std::to_string(stall_ms / 1000) +
            " s; stopped the workers";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Whatever still runs is stopped: politely, then for good.
  for (int i = 0; i < nodes; ++i) {
    if ((*codes)[i] == -1) kill(workers[i], SIGTERM);
  }
  for (int waited = 0; waited < 100 && alive > 0; ++waited) {
    for (int i = 0; i < nodes; ++i) {
      int status = 0;
      if ((*codes)[i] == -1 && waitpid(workers[i], &status, WNOHANG) == workers[i]) {
        (*codes)[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        --alive;
      }
    }
    if (alive > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (int i = 0; i < nodes; ++i) {
    if ((*codes)[i] == -1) {
      kill(workers[i], SIGKILL);
      waitpid(workers[i], nullptr, 0);
      (*codes)[i] = 128 + SIGKILL;
    }
  }
  return why;
}

}  // namespace

int ClusterDemoCommand(const Args& in) {
  CommandLine cl("demo", "[OPTIONS]",
                 "Start a cluster on this host, build a HugeTable in every node's "
                 "memory, publish it as descriptors, sum it on every node, compare "
                 "with full IPC copies.");
  uint64_t rows = 150000000, nodes_flag = 3, stall_ms = kStallMs;
  std::string backing_text = "shm";
  bool keep_logs = false;
  cl.Count("--rows", &rows, 1ULL << 40, "rows of the table");
  cl.Count("--nodes", &nodes_flag, 16, "nodes (1-16)");
  cl.Text("--backing", &backing_text, "shm or incoherent")->type_name("B");
  cl.Count("--stall-ms", &stall_ms, 24ULL * 3600 * 1000,
           "give up when no step completes for this long");
  cl.Flag("--keep-logs", &keep_logs, "keep the daemons' logs");
  if (auto code = cl.Parse(in)) return *code;
  const int nodes = static_cast<int>(nodes_flag);
  if (nodes < 1) return cl.Usage("--nodes is at least 1");
  if (rows < static_cast<uint64_t>(nodes)) return cl.Usage("--rows is at least --nodes");
  memory::BackingKind backing;
  if (backing_text == "shm") {
    backing = memory::BackingKind::kShm;
  } else if (backing_text == "incoherent") {
    backing = memory::BackingKind::kIncoherent;
  } else {
    return Fail("--backing",
                Status::Invalid("'", backing_text, "' is not shm or incoherent"));
  }
  // Each node holds its slice and a full copy of every other node's slice.
  const uint64_t slice_bytes = (rows / nodes + 1) * 12 + (1 << 20);
  uint64_t region = slice_bytes * nodes * 5 / 4 + (64ULL << 20);
  region = (region + (2ULL << 20) - 1) / (2ULL << 20) * (2ULL << 20);
  const uint64_t need = region * nodes + slice_bytes * nodes * 2;
  const uint64_t avail = MemAvailable();
  if (avail != 0 && need > avail) {
    return Fail("demo", Status::OutOfMemory(rows, " rows need about ",
                                            DecimalBytes(static_cast<double>(need)),
                                            " of memory but ",
                                            DecimalBytes(static_cast<double>(avail)),
                                            " are available; use --rows"));
  }
  const std::string self = control::ExecutablePath();
  control::LocalClusterOptions lo;
  lo.nodes = nodes;
  lo.region_size = region;
  lo.backing = backing;
  lo.name_prefix = "demo";
  // Logs normally go with the cluster's folder; kept, they go elsewhere.
  std::string logs;
  if (keep_logs) {
    char tmpl[] = "/tmp/quiver-demo-logs-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      return Fail("--keep-logs", Status::FromErrno(errno, "mkdtemp"), kExitFailed);
    }
    logs = lo.log_dir = tmpl;
  }
  std::printf("quiver demo: %d nodes on this host, %s regions of %s each, %" PRIu64
              " rows (int64, int8, uint16)\n",
              nodes, memory::BackingKindName(backing),
              DecimalBytes(static_cast<double>(region)).c_str(), rows);
  std::fflush(stdout);
  auto cluster_r = control::LocalCluster::Start(lo);
  if (!cluster_r.ok())
    return Fail("starting the cluster", cluster_r.status(), kExitFailed);
  auto& cluster = *cluster_r;
  std::printf("  daemons up (config %s)\n", cluster->config_path().c_str());
  std::fflush(stdout);  // a reader of a pipe sees each step as it happens
  std::vector<pid_t> workers;
  std::vector<std::string> results;
  for (int i = 0; i < nodes; ++i) {
    results.push_back(cluster->dir() + "/result" + std::to_string(i));
    const std::string worker_log =
        (keep_logs ? logs : cluster->dir()) + "/worker" + std::to_string(i) + ".log";
    auto pid = control::SpawnLogged(
        {self, "demo-node", "--config", cluster->config_path(), "--node",
         std::to_string(i), "--rows", std::to_string(rows), "--result", results.back()},
        worker_log, /*append=*/false);
    if (!pid.ok()) return Fail("starting workers", pid.status(), kExitFailed);
    workers.push_back(*pid);
  }
  std::vector<int> codes(nodes, -1);
  // ^C or SIGTERM: stop the workers and the daemons and remove the
  // regions' backing files, which would otherwise stay in /dev/shm.
  CatchInterrupts();
  const std::string stopped = WatchWorkers(cluster.get(), workers, stall_ms, &codes);
  if (stopped == "interrupted") {
    (void)cluster->Stop();
    std::fprintf(stderr, "quiver demo: interrupted; cluster stopped and cleaned up\n");
    return 130;
  }
  std::vector<NodeResult> res(nodes);
  bool ok = true;
  for (int i = 0; i < nodes; ++i) {
    std::ifstream f(results[i]);
    std::string line;
    while (std::getline(f, line)) {
      auto eq = line.find('=');
      if (eq != std::string::npos) res[i].kv[line.substr(0, eq)] = line.substr(eq + 1);
    }
    if (codes[i] != 0 || res[i].str("ok") != "1") {
      ok = false;
      std::ifstream log((keep_logs ? logs : cluster->dir()) + "/worker" +
                        std::to_string(i) + ".log");
      std::string text((std::istreambuf_iterator<char>(log)), {});
      std::printf("  node %d FAILED (exit %d): %s %s\n", i, codes[i],
                  res[i].str("error").c_str(), text.c_str());
    }
  }
  if (!stopped.empty()) {
    // Stopped early: no figures to compare, only what went wrong.
    (void)cluster->Stop();
    std::printf("\n  %s\n", stopped.c_str());
    if (keep_logs) std::printf("\n  daemon and worker logs kept in %s\n", logs.c_str());
    std::printf("\nquiver demo: FAILED\n");
    return kExitFailed;
  }
  double pub = 0, full = 0, pub_bytes = 0, full_bytes = 0, get = 0, sum = 0;
  for (const auto& r : res) {
    pub = std::max(pub, r.num("publish_ms"));
    full = std::max(full, r.num("full_ms"));
    get = std::max(get, r.num("get_ms"));
    sum = std::max(sum, r.num("sum_ms"));
    pub_bytes += r.num("publish_sent_bytes");
    full_bytes += r.num("full_sent_bytes");
  }
  std::printf("\n  %-40s %-24s %-24s\n", "", "descriptor publish",
              "SendTableFull (IPC copy)");
  std::printf("  %-40s %-24s %-24s\n", "time until readable on every node (max)",
              Millis(pub).c_str(), Millis(full).c_str());
  std::printf("  %-40s %-24s %-24s\n", "bytes sent between nodes (all nodes)",
              DecimalBytes(pub_bytes).c_str(), DecimalBytes(full_bytes).c_str());
  for (int i = 0; i < nodes; ++i) {
    char label[64];
    std::snprintf(label, sizeof(label), "node %d sums (int64 / int8 / uint16)", i);
    std::printf(
        "  %-40s %-24s %-24s\n", label,
        (res[i].str("sums") + (res[i].str("sums_ok") == "1" ? " ok" : " WRONG")).c_str(),
        (res[i].str("full_sums") + (res[i].str("full_sums_ok") == "1" ? " ok" : " WRONG"))
            .c_str());
  }
  const Sums want = ExpectedSums(rows);
  std::printf("  %-40s %s\n", "expected sums", want.ToString().c_str());
  std::printf("  %-40s %s (zero-copy, checked by address on every node)\n",
              "Get + assemble HugeTable (max)", Millis(get).c_str());
  std::printf("  %-40s %s\n", "sum over the HugeTable (max)", Millis(sum).c_str());
  if (pub > 0) {
    std::printf(
        "\n  descriptor publishing was %.0fx faster than SendTableFull and sent %.0fx "
        "fewer bytes\n",
        full / pub, pub_bytes > 0 ? full_bytes / pub_bytes : 0.0);
  }
  Status st = cluster->Stop();  // removes the cluster's folder and all in it
  if (keep_logs) std::printf("\n  daemon and worker logs kept in %s\n", logs.c_str());
  std::printf("%s\n", ok ? "\nquiver demo: OK, every node's sums agree"
                         : "\nquiver demo: FAILED");
  return ok && st.ok() ? kExitOk : kExitFailed;
}

int NodeCommand(const Args& args) {
  std::vector<std::string> a = {"quiver node"};
  a.insert(a.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& x : a) argv.push_back(x.data());
  argv.push_back(nullptr);
  return control::daemon::DaemonMain(static_cast<int>(a.size()), argv.data());
}

}  // namespace quiver::cli
