// The control plane against the machine's limits and the thesis's figures,
// each beside its reference measured in the same run:
//   §5.4.1     Ping over the node's Unix socket and a peer's TLS port vs a
//              raw socket round trip between two processes (the floor)
//   Table 5.4  remote Malloc (a call to the owner, which flushes the new
//              range on every node) vs the raw round trip and the local
//              allocator
//   publish    descriptor publish on 2 nodes vs a Ping; on 8 nodes vs 2
//              (the home registers on every peer in parallel)
//   Table 5.5  initialising a 1 GiB uint64 table, local vs remote memory,
//              broken down (malloc with step 2, write, seal, serialise, send)
//   Fig. 5.1   descriptor publish vs SendTableFull by table size, and
//              publish at 1 GiB vs 1 MiB (the cost must not grow)
//   far Get    Client::Get on a node outside the table's memory group (the
//              rows come over UCX into its own region) vs memcpy of the same
//              bytes and vs SendTableFull of the same table
// It starts its own clusters (quiverd next to this binary's build tree,
// fresh credentials) and is a client of node 0.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <sstream>

#include "bench_util.h"
#include "control/local_cluster.h"
#include "quiver/client.h"
#include "quiver/columnar/array.h"

namespace quiver {
namespace {

using Clock = std::chrono::steady_clock;

std::unique_ptr<control::LocalCluster> g_cluster, g_cluster8;
std::unique_ptr<Client> g_client, g_client8;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A uint64 batch over `n` values at `p` (cluster memory).
RecordBatchPtr Uint64Batch(uint8_t* p, int64_t n) {
  auto data = ArrayData::Make(uint64(), n, {nullptr, Buffer::WrapMutable(p, n * 8)}, 0);
  return RecordBatch::Make(schema({field("v", uint64(), false)}), n, {data});
}

// ---------------------------------------------------------------------------
// The floor: one byte each way between two processes, blocking sockets.

using bench::EchoLoop;
using bench::RoundTrips;

void BM_SocketRoundTrip(benchmark::State& state) { bench::UnixRoundTrips(state); }
BENCHMARK(BM_SocketRoundTrip)->Unit(benchmark::kMicrosecond);

void BM_TcpRoundTrip(benchmark::State& state) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return state.SkipWithError("listen");
  }
  pid_t child = fork();
  if (child == 0) {
    int fd = accept(listener, nullptr, nullptr);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    EchoLoop(fd);
  }
  close(listener);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return state.SkipWithError("connect");
  }
  RoundTrips(state, fd, child);
}
BENCHMARK(BM_TcpRoundTrip)->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// §5.4.1: Ping.

void PingLoop(benchmark::State& state, uint32_t node) {
  for (auto _ : state) {
    Status st = g_client->Ping(node);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
  }
}
void BM_Ping_local_unix(benchmark::State& state) { PingLoop(state, 0); }
void BM_Ping_peer_tcp(benchmark::State& state) { PingLoop(state, 1); }
BENCHMARK(BM_Ping_local_unix)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Ping_peer_tcp)->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// Table 5.4: Malloc through the owner (with protocol step 2 on every node)
// and the allocator itself.

void BM_Malloc_local(benchmark::State& state) {
  auto* alloc = g_client->cluster()->local_region()->allocator();
  for (auto _ : state) {
    auto t0 = Clock::now();
    auto p = alloc->Allocate(4096);
    state.SetIterationTime(Seconds(Clock::now() - t0));
    if (!p.ok()) return state.SkipWithError(p.status().ToString().c_str());
    (void)alloc->Free(*p);
  }
}
BENCHMARK(BM_Malloc_local)->UseManualTime()->Unit(benchmark::kMicrosecond);

void MallocThrough(benchmark::State& state, uint32_t node) {
  int64_t made = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    auto a = g_client->RemoteAllocate(node, 4096, 64);
    state.SetIterationTime(Seconds(Clock::now() - t0));
    if (!a.ok()) return state.SkipWithError(a.status().ToString().c_str());
    (void)g_client->RemoteFree(node, *a);
    if (++made % 256 == 0) (void)g_client->Drain();  // frees, off the clock
  }
  (void)g_client->Drain();
}
void BM_Malloc_remote(benchmark::State& state) { MallocThrough(state, 1); }
void BM_Malloc_own_daemon(benchmark::State& state) { MallocThrough(state, 0); }
BENCHMARK(BM_Malloc_remote)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Malloc_own_daemon)->UseManualTime()->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// Table 5.5: initialising a 1 GiB table in local or remote memory.

void BM_Init1GiB(benchmark::State& state) {
  const bool remote = state.range(0) != 0;
  const uint32_t owner = remote ? 1 : 0;
  const int64_t n = (1LL << 30) / 8;
  double t_malloc = 0, t_write = 0, t_seal = 0, t_ser = 0, t_send = 0;
  int iteration = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    auto a = g_client->RemoteAllocate(owner, n * 8, 64);  // steps 1 and 2
    if (!a.ok()) return state.SkipWithError(a.status().ToString().c_str());
    auto* p = reinterpret_cast<uint8_t*>(*a);
    auto t1 = Clock::now();
    auto* v = reinterpret_cast<uint64_t*>(p);
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<uint64_t>(i);
    auto t2 = Clock::now();
    auto batch = Uint64Batch(p, n);
    Status st = g_client->Seal(*batch);  // steps 4 and 5
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    auto t3 = Clock::now();
    auto desc = control::EncodeDescriptor(*batch, g_client->local_pool());
    if (!desc.ok()) return state.SkipWithError(desc.status().ToString().c_str());
    auto t4 = Clock::now();
    const std::string name = "init-" + std::to_string(iteration++);
    st = g_client->Publish(batch, name);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    auto t5 = Clock::now();
    state.SetIterationTime(Seconds(t5 - t0));
    t_malloc += Seconds(t1 - t0);
    t_write += Seconds(t2 - t1);
    t_seal += Seconds(t3 - t2);
    t_ser += Seconds(t4 - t3);
    t_send += Seconds(t5 - t4);
    batch.reset();
    st = g_client->Unpublish(name);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    (void)g_client->RemoteFree(owner, *a);
    (void)g_client->Drain();
  }
  const double k = 1e3 / static_cast<double>(state.iterations());
  state.counters["malloc_ms"] = t_malloc * k;
  state.counters["write_ms"] = t_write * k;
  state.counters["flush_seal_ms"] = t_seal * k;
  state.counters["serialise_ms"] = t_ser * k;
  state.counters["send_ms"] = t_send * k;
  state.SetBytesProcessed(state.iterations() * n * 8);
}
BENCHMARK(BM_Init1GiB)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("remote")
    ->Iterations(bench::QuickOr(3, 1))
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------
// Figure 5.1: a table of `bytes` (uint64) made readable on the other node.
// One table per size, kept for the whole run: Google Benchmark calls a
// benchmark several times, and a new 1 GiB table each time would exhaust
// the region.

Result<RecordBatchPtr> TableOf(int64_t bytes) {
  static std::map<int64_t, RecordBatchPtr> made;
  auto& batch = made[bytes];
  if (batch != nullptr) return batch;
  const int64_t n = bytes / 8;
  uint8_t* p = nullptr;
  QUIVER_RETURN_NOT_OK(g_client->local_pool()->Allocate(n * 8, 64, &p));
  auto* v = reinterpret_cast<uint64_t*>(p);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<uint64_t>(i);
  batch = Uint64Batch(p, n);
  return batch;
}

void BM_Publish(benchmark::State& state) {
  auto made = TableOf(state.range(0));
  if (!made.ok()) return state.SkipWithError(made.status().ToString().c_str());
  int i = 0;
  for (auto _ : state) {
    const std::string name = "fig-" + std::to_string(i++);
    auto t0 = Clock::now();
    Status st = g_client->Publish(*made, name);
    state.SetIterationTime(Seconds(Clock::now() - t0));
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    st = g_client->Unpublish(name);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Publish)
    ->RangeMultiplier(16)
    ->Range(1 << 20, 1 << 30)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// Unpublish is all or nothing across homes: a look-up at this node, a check
// at every node (in parallel), then the removal at the homes, which tell
// their peers before answering. Beside BM_Ping_local_unix and
// BM_Ping_peer_tcp, the round trips it is made of.
void BM_Unpublish(benchmark::State& state) {
  auto made = TableOf(1 << 20);
  if (!made.ok()) return state.SkipWithError(made.status().ToString().c_str());
  int i = 0;
  for (auto _ : state) {
    const std::string name = "unpub-" + std::to_string(i++);
    Status st = g_client->Publish(*made, name);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    auto t0 = Clock::now();
    st = g_client->Unpublish(name);
    state.SetIterationTime(Seconds(Clock::now() - t0));
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
  }
}
BENCHMARK(BM_Unpublish)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_SendTableFull(benchmark::State& state) {
  auto made = TableOf(state.range(0));
  if (!made.ok()) return state.SkipWithError(made.status().ToString().c_str());
  auto table = Table::FromRecordBatches({*made});
  int i = 0;
  for (auto _ : state) {
    const std::string name = "full-" + std::to_string(i++);
    auto t0 = Clock::now();
    auto r = g_client->SendTableFull(*table, name, std::nullopt, {1});
    state.SetIterationTime(Seconds(Clock::now() - t0));
    if (!r.ok()) return state.SkipWithError(r.status().ToString().c_str());
    // The copy is on node 1 only: its publisher (this client) removes it there.
    Status st = g_client->Unpublish(name);
    if (!st.ok() && !st.IsNotFound()) return state.SkipWithError(st.ToString().c_str());
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_SendTableFull)
    ->RangeMultiplier(16)
    ->Range(1 << 20, 1 << 30)
    ->Iterations(bench::QuickOr(2, 1))
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

Result<std::pair<std::unique_ptr<control::LocalCluster>, std::unique_ptr<Client>>> Start(
    int nodes, uint64_t region, uint64_t base, const std::string& prefix) {
  control::LocalClusterOptions o;
  o.nodes = nodes;
  o.region_size = region;
  o.name_prefix = prefix;
  o.base = base;
  o.limits.malloc_rate = 1000000;  // the benchmarks allocate fast on purpose
  o.limits.node_malloc_rate = 1000000;
  o.limits.session_quota = {1.0, 0};
  o.limits.node_quota = {1.0, 0};
  QUIVER_ASSIGN_OR_RAISE(auto cluster, control::LocalCluster::Start(o));
  QUIVER_ASSIGN_OR_RAISE(auto client, Client::Connect({cluster->config_path(), 0}));
  QUIVER_RETURN_NOT_OK(client->WaitAllOnline(60000));
  return std::make_pair(std::move(cluster), std::move(client));
}

// ---------------------------------------------------------------------------
// Publishing to every node: 2 nodes vs 8; and to this node only (the
// publish without its fan-out, beside a Ping of the node's daemon).

void PublishLoop(benchmark::State& state, Client* client, bool local_only = false) {
  Int64Builder v(client->local_pool());
  (void)v.Reserve(1000);
  for (int64_t i = 0; i < 1000; ++i) v.UnsafeAppend(i);
  auto col = v.Finish();
  if (!col.ok()) return state.SkipWithError(col.status().ToString().c_str());
  auto made = RecordBatch::FromArrays({"v"}, {*col});
  PublishOptions options;
  options.local_only = local_only;
  static int i = 0;  // names unique over every call of this benchmark
  for (auto _ : state) {
    const std::string name = "pub-" + std::to_string(i++);
    auto t0 = Clock::now();
    Status st = client->Publish(*made, name, options);
    state.SetIterationTime(Seconds(Clock::now() - t0));
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    st = client->Unpublish(name);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
  }
}
void BM_Publish_local_only(benchmark::State& state) {
  PublishLoop(state, g_client.get(), true);
}
BENCHMARK(BM_Publish_local_only)->UseManualTime()->Unit(benchmark::kMicrosecond);
void BM_Publish_nodes(benchmark::State& state) {
  if (state.range(0) == 8 && g_client8 == nullptr) {
    // Started only now, last: its heartbeats would load every other figure.
    auto eight = Start(8, 64ULL << 20, 0x500000000000ULL, "bench8");
    if (!eight.ok()) return state.SkipWithError(eight.status().ToString().c_str());
    std::tie(g_cluster8, g_client8) = std::move(*eight);
  }
  PublishLoop(state, state.range(0) == 2 ? g_client.get() : g_client8.get());
}
BENCHMARK(BM_Publish_nodes)
    ->Arg(2)
    ->Arg(8)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// A far Get: node 0 (memory group "a", this process) publishes; node 1
// (group "b", a process forked before this one had any thread) gets the
// table, whose rows come over the transport into its own region.

std::unique_ptr<control::LocalCluster> g_far;
std::unique_ptr<Client> g_far_client;
FILE* g_far_to = nullptr;    // commands to the reader: "NAME COUNT"
FILE* g_far_from = nullptr;  // its answers: COUNT seconds, or "error ..."
pid_t g_far_pid = -1;

// The reader: answers each "NAME COUNT" with the seconds of COUNT Gets.
[[noreturn]] void FarReaderLoop(const std::string& config, FILE* in, FILE* out) {
  std::unique_ptr<Client> client;
  char line[512];
  while (std::fgets(line, sizeof(line), in) != nullptr) {
    std::istringstream words(line);
    std::string name;
    int count = 0;
    words >> name >> count;
    std::ostringstream answer;
    Status st;
    if (client == nullptr) {
      auto c = Client::Connect({config, 1});
      if (c.ok()) client = std::move(*c);
      st = c.status();
    }
    // One Get first, untimed: it makes the persistent endpoint to the home
    // (UCX set-up and the crossover measurement happen once per client).
    for (int i = -1; st.ok() && i < count; ++i) {
      auto t0 = Clock::now();
      auto table = client->Get(name);
      const double s = Seconds(Clock::now() - t0);
      st = table.status();
      if (st.ok() && (*table)->num_rows() == 0) st = Status::Invalid("no rows");
      table = Status::Cancelled("dropped");
      if (st.ok()) st = client->Drain();  // the copy's memory back before the next
      if (i >= 0) answer << s << " ";
    }
    if (!st.ok()) {
      std::string text = st.ToString();
      for (char& ch : text) ch = ch == '\n' ? ' ' : ch;
      answer.str("error " + text);
    }
    std::fprintf(out, "%s\n", answer.str().c_str());
    std::fflush(out);
  }
  client.reset();
  _exit(0);
}

Status StartFar() {
  control::LocalClusterOptions o;
  o.nodes = 2;
  o.region_size = 1ULL << 30;
  o.name_prefix = "benchfar";
  o.base = 0x600000000000ULL;
  o.memory_groups = {"a", "b"};
  o.transport = true;
  o.limits.session_quota = {1.0, 0};
  o.limits.node_quota = {1.0, 0};
  QUIVER_ASSIGN_OR_RAISE(g_far, control::LocalCluster::Start(o));
  int to[2], from[2];
  // Close-on-exec: no daemon spawned later may hold the reader's pipes open.
  if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) {
    return Status::IOError("pipe");
  }
  const pid_t pid = fork();
  if (pid < 0) return Status::IOError("fork");
  if (pid == 0) {
    close(to[1]);
    close(from[0]);
    FarReaderLoop(g_far->config_path(), fdopen(to[0], "r"), fdopen(from[1], "w"));
  }
  g_far_pid = pid;
  close(to[0]);
  close(from[1]);
  g_far_to = fdopen(to[1], "w");
  g_far_from = fdopen(from[0], "r");
  return Status::OK();
}

void BM_Memcpy(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(n, 1), dst(n, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::DoNotOptimize(dst.data());
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Memcpy)->Arg(16 << 20)->Arg(256 << 20)->Unit(benchmark::kMillisecond);

void BM_FarGet(benchmark::State& state) {
  const std::string name = "far-" + std::to_string(state.range(0));
  static std::map<std::string, RecordBatchPtr> published;
  if (g_far_client == nullptr) {
    auto c = Client::Connect({g_far->config_path(), 0});
    if (!c.ok()) return state.SkipWithError(c.status().ToString().c_str());
    g_far_client = std::move(*c);
  }
  if (published[name] == nullptr) {
    const int64_t n = state.range(0) / 8;
    uint8_t* p = nullptr;
    Status st = g_far_client->local_pool()->Allocate(n * 8, 64, &p);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    auto* v = reinterpret_cast<uint64_t*>(p);
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<uint64_t>(i);
    published[name] = Uint64Batch(p, n);
    st = g_far_client->Publish(published[name], name);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
  }
  std::fprintf(g_far_to, "%s %lld\n", name.c_str(),
               static_cast<long long>(state.max_iterations));
  std::fflush(g_far_to);
  char line[65536];
  if (std::fgets(line, sizeof(line), g_far_from) == nullptr) {
    return state.SkipWithError("the far reader is gone");
  }
  if (std::strncmp(line, "error", 5) == 0) return state.SkipWithError(line);
  std::istringstream times(line);
  for (auto _ : state) {
    double s = 0;
    times >> s;
    state.SetIterationTime(s);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_FarGet)
    ->Arg(16 << 20)
    ->Arg(256 << 20)
    ->Iterations(bench::QuickOr(5, 3))
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace quiver

int main(int argc, char** argv) {
  using namespace quiver;
  // Before this process has any thread: the far reader is forked.
  if (Status st = StartFar(); !st.ok()) {
    std::fprintf(stderr, "cluster_bench: %s\n", st.ToString().c_str());
    return 1;
  }
  // 1 GiB tables plus their full copies.
  auto two = Start(2, 6ULL << 30, 0x300000000000ULL, "bench");
  if (!two.ok()) {
    std::fprintf(stderr, "cluster_bench: %s\n", two.status().ToString().c_str());
    return 1;
  }
  std::tie(g_cluster, g_client) = std::move(*two);
  int rc = bench::RunWithRatios(argc, argv,
                                {{"BM_Ping_local_unix", "BM_SocketRoundTrip", "time"},
                                 {"BM_Ping_peer_tcp", "BM_TcpRoundTrip", "time"},
                                 {"BM_Malloc_remote", "BM_TcpRoundTrip", "time"},
                                 {"BM_Malloc_own_daemon", "BM_SocketRoundTrip", "time"},
                                 {"BM_Malloc_remote", "BM_Malloc_local", "time"},
                                 {"BM_Publish_nodes/2", "BM_Ping_peer_tcp", "time"},
                                 {"BM_Publish_local_only", "BM_Ping_local_unix", "time"},
                                 {"BM_Publish_nodes/8", "BM_Publish_nodes/2", "time"},
                                 {"BM_Init1GiB/remote:1", "BM_Init1GiB/remote:0", "time"},
                                 {"BM_SendTableFull/", "BM_Publish/", "time"},
                                 {"BM_Publish/1073741824", "BM_Publish/1048576", "time"},
                                 {"BM_FarGet/", "BM_Memcpy/"},
                                 {"BM_FarGet/", "BM_SendTableFull/"}});
  std::fclose(g_far_to);  // the reader exits
  std::fclose(g_far_from);
  waitpid(g_far_pid, nullptr, 0);
  g_far_client.reset();
  (void)g_far->Stop();
  g_client8.reset();
  g_client.reset();
  if (g_cluster8) (void)g_cluster8->Stop();
  (void)g_cluster->Stop();
  return rc;
}
