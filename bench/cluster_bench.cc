// The control plane against the thesis's figures, each beside its
// reference measured in the same run:
//   Table 5.5  initialising a 1 GiB uint64 table, local vs remote memory,
//              broken down (malloc, pre-write flush, write, writer flush +
//              seal, serialise the descriptor, send it)
//   Fig. 5.1   descriptor-only publish vs SendTableFull, by table size
//              (and publish at 1 GiB vs 1 MiB: the cost must not grow)
//   Table 5.4  remote Malloc (an RPC to the owner) vs the local allocator
//   §5.4.1     Ping over the node's Unix socket and a peer's TCP port vs a
//              raw socket round trip (the machine's limit)
// It starts its own 2-node cluster (quiverd next to this binary's build
// tree) and is a client of node 0.
#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "bench_util.h"
#include "quiver/client.h"
#include "quiver/coherence/flush.h"
#include "quiver/columnar/array.h"
#include "quiver/control/local_cluster.h"

namespace quiver {
namespace {

using Clock = std::chrono::steady_clock;

std::unique_ptr<control::LocalCluster> g_cluster;
std::unique_ptr<Client> g_client;
// A second cluster whose daemons run on CPU 0 only, for the latency figures
// with client and daemon on one CPU: on this kind of virtual machine, waking
// a thread on another CPU costs about 20 us, which dominates every round
// trip (BM_SocketRoundTrip shows the machine's floor both ways).
std::unique_ptr<control::LocalCluster> g_pinned_cluster;
std::unique_ptr<control::NodeClient> g_pinned[2];

// Runs the calling thread on CPU 0 (or on every CPU again) while alive.
class OnCpu0 {
 public:
  explicit OnCpu0(bool on) : on_(on) {
    if (!on_) return;
    sched_getaffinity(0, sizeof(old_), &old_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    sched_setaffinity(0, sizeof(one), &one);
  }
  ~OnCpu0() {
    if (on_) sched_setaffinity(0, sizeof(old_), &old_);
  }

 private:
  bool on_;
  cpu_set_t old_{};
};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A uint64 batch over `n` values at `p` (cluster memory).
RecordBatchPtr Uint64Batch(uint8_t* p, int64_t n) {
  auto data = ArrayData::Make(uint64(), n, {nullptr, Buffer::WrapMutable(p, n * 8)}, 0);
  return RecordBatch::Make(schema({field("v", uint64(), false)}), n, {data});
}

// Table 5.5. Memory comes from the raw paths so that each step is timed
// alone: the local allocator or a Malloc RPC, then protocol step 2, the
// write, step 4 with the seal, the descriptor, the publish.
void BM_Init1GiB(benchmark::State& state) {
  const bool remote = state.range(0) != 0;
  const int64_t n = (1LL << 30) / 8;
  double t_malloc = 0, t_pre = 0, t_write = 0, t_seal = 0, t_ser = 0, t_send = 0;
  auto* alloc = g_client->cluster()->local_region()->allocator();
  int iteration = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    uint8_t* p;
    if (remote) {
      rpc::MallocRequest req;
      req.set_size(n * 8);
      rpc::MallocReply rep;
      Status st =
          g_client->rpc(1)->Call(&rpc::Node::Stub::Malloc, &req, &rep, 60000, "Malloc");
      if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
      p = reinterpret_cast<uint8_t*>(rep.address());
    } else {
      auto r = alloc->Allocate(n * 8);
      if (!r.ok()) return state.SkipWithError(r.status().ToString().c_str());
      p = *r;
      (void)alloc->SetTag(p, 1);  // node 0 + 1
    }
    auto t1 = Clock::now();
    // Step 2 on every node: here, and node 1's daemon for its node.
    (void)coherence::FlushRange(p, n * 8);
    rpc::FlushRequest fr;
    auto* range = fr.add_ranges();
    range->set_address(reinterpret_cast<uint64_t>(p));
    range->set_length(n * 8);
    rpc::Empty e;
    Status st = g_client->rpc(1)->Call(&rpc::Node::Stub::Flush, &fr, &e, 60000, "Flush");
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    auto t2 = Clock::now();
    auto* v = reinterpret_cast<uint64_t*>(p);
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<uint64_t>(i);
    auto t3 = Clock::now();
    auto batch = Uint64Batch(p, n);
    st = g_client->Seal(*batch);  // step 4 (remote only) and step 5
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    auto t4 = Clock::now();
    auto desc = control::EncodeDescriptor(*batch, g_client->local_pool());
    if (!desc.ok()) return state.SkipWithError(desc.status().ToString().c_str());
    auto t5 = Clock::now();
    const std::string name = "init-" + std::to_string(iteration++);
    st = g_client->Publish(batch, name, {0, false, /*sealed=*/true});
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    auto t6 = Clock::now();
    state.SetIterationTime(Seconds(t6 - t0));
    t_malloc += Seconds(t1 - t0);
    t_pre += Seconds(t2 - t1);
    t_write += Seconds(t3 - t2);
    t_seal += Seconds(t4 - t3);
    t_ser += Seconds(t5 - t4);
    t_send += Seconds(t6 - t5);
    batch.reset();
    st = g_client->Unpublish(name);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    rpc::FreeRequest f;
    f.set_address(reinterpret_cast<uint64_t>(p));
    if (remote) {
      (void)g_client->rpc(1)->Call(&rpc::Node::Stub::Free, &f, &e, 60000, "Free");
    } else {
      (void)alloc->Free(p);
    }
  }
  const double k = 1e3 / static_cast<double>(state.iterations());
  state.counters["malloc_ms"] = t_malloc * k;
  state.counters["preflush_ms"] = t_pre * k;
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

// Figure 5.1: a table of `bytes` (uint64) made readable on the other node.
// One table per size, made once and kept for the whole run: Google Benchmark
// calls a benchmark function several times (iteration estimate,
// repetitions), and a new 1 GiB table per call would exhaust the region.
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
  auto batch = *made;
  int i = 0;
  for (auto _ : state) {
    const std::string name = "pub-" + std::to_string(i++);
    auto t0 = Clock::now();
    Status st = g_client->Publish(batch, name);
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

void BM_SendTableFull(benchmark::State& state) {
  auto made = TableOf(state.range(0));
  if (!made.ok()) return state.SkipWithError(made.status().ToString().c_str());
  auto table = Table::FromRecordBatches({*made});
  int i = 0;
  for (auto _ : state) {
    const std::string name = "full-" + std::to_string(i++);
    auto t0 = Clock::now();
    auto r = g_client->SendTableFull(*table, name, 0, {1});
    state.SetIterationTime(Seconds(Clock::now() - t0));
    if (!r.ok()) return state.SkipWithError(r.status().ToString().c_str());
    Status st = g_client->Unpublish(name);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_SendTableFull)
    ->RangeMultiplier(16)
    ->Range(1 << 20, 1 << 30)
    ->Iterations(bench::QuickOr(2, 1))
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// Table 5.4.
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

void MallocRemote(benchmark::State& state, control::NodeClient* owner, bool cpu0) {
  OnCpu0 pin(cpu0);
  for (auto _ : state) {
    rpc::MallocRequest req;
    req.set_size(4096);
    rpc::MallocReply rep;
    auto t0 = Clock::now();
    Status st = owner->Call(&rpc::Node::Stub::Malloc, &req, &rep, 10000, "Malloc");
    state.SetIterationTime(Seconds(Clock::now() - t0));
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    rpc::FreeRequest f;
    f.set_address(rep.address());
    rpc::Empty e;
    (void)owner->Call(&rpc::Node::Stub::Free, &f, &e, 10000, "Free");
  }
}
void BM_Malloc_remote(benchmark::State& state) {
  MallocRemote(state, g_client->rpc(1), false);
}
void BM_Malloc_remote_same_cpu(benchmark::State& state) {
  MallocRemote(state, g_pinned[1].get(), true);
}
BENCHMARK(BM_Malloc_remote)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Malloc_remote_same_cpu)->UseManualTime()->Unit(benchmark::kMicrosecond);

// §5.4.1.
void PingLoop(benchmark::State& state, control::NodeClient* node, bool cpu0) {
  OnCpu0 pin(cpu0);
  for (auto _ : state) {
    rpc::PingRequest req;
    rpc::PingReply rep;
    Status st = node->Call(&rpc::Node::Stub::Ping, &req, &rep, 10000, "Ping");
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
  }
}
void BM_Ping_local_unix(benchmark::State& state) {
  PingLoop(state, g_client->rpc(0), false);
}
void BM_Ping_peer_tcp(benchmark::State& state) {
  PingLoop(state, g_client->rpc(1), false);
}
void BM_Ping_local_unix_same_cpu(benchmark::State& state) {
  PingLoop(state, g_pinned[0].get(), true);
}
void BM_Ping_peer_tcp_same_cpu(benchmark::State& state) {
  PingLoop(state, g_pinned[1].get(), true);
}
BENCHMARK(BM_Ping_local_unix)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Ping_peer_tcp)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Ping_local_unix_same_cpu)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Ping_peer_tcp_same_cpu)->Unit(benchmark::kMicrosecond);

// The machine's limit for a request/reply between processes: one byte
// each way over a Unix socket to an echo thread.
void SocketRoundTrip(benchmark::State& state, bool cpu0) {
  OnCpu0 pin(cpu0);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    return state.SkipWithError("socketpair");
  std::thread echo([fd = sv[1]] {  // inherits this thread's CPUs
    char c;
    while (read(fd, &c, 1) == 1) {
      if (write(fd, &c, 1) != 1) break;
    }
  });
  char c = 'x';
  for (auto _ : state) {
    if (write(sv[0], &c, 1) != 1 || read(sv[0], &c, 1) != 1) {
      state.SkipWithError("echo failed");
      break;
    }
  }
  close(sv[0]);
  echo.join();
  close(sv[1]);
}
void BM_SocketRoundTrip(benchmark::State& state) { SocketRoundTrip(state, false); }
void BM_SocketRoundTrip_same_cpu(benchmark::State& state) {
  SocketRoundTrip(state, true);
}
BENCHMARK(BM_SocketRoundTrip)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SocketRoundTrip_same_cpu)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace quiver

int main(int argc, char** argv) {
  using namespace quiver;
  control::LocalClusterOptions o;
  o.nodes = 2;
  o.region_size = 6ULL << 30;  // 1 GiB tables plus their full copies
  o.name_prefix = "bench";
  auto cluster = control::LocalCluster::Start(o);
  if (!cluster.ok()) {
    std::fprintf(stderr, "cluster_bench: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  g_cluster = std::move(*cluster);
  auto client = Client::Connect({g_cluster->config_path(), 0});
  if (!client.ok() || !(*client)->WaitAllOnline(30000).ok()) {
    std::fprintf(stderr, "cluster_bench: cannot connect\n");
    return 1;
  }
  g_client = std::move(*client);
  control::LocalClusterOptions po;
  po.nodes = 2;
  po.region_size = 64ULL << 20;
  po.name_prefix = "bench-cpu0";
  po.base = 0x380000000000ULL;
  po.daemon_args = {"--cpus", "0"};
  auto pinned = control::LocalCluster::Start(po);
  if (!pinned.ok()) {
    std::fprintf(stderr, "cluster_bench: %s\n", pinned.status().ToString().c_str());
    return 1;
  }
  g_pinned_cluster = std::move(*pinned);
  const auto& pc = g_pinned_cluster->config();
  for (uint32_t i = 0; i < 2; ++i) {
    g_pinned[i] =
        control::NodeClient::Make(control::NodeTarget(pc.nodes[i], i == 0), pc.token, i,
                                  0, static_cast<int32_t>(getpid()));
  }
  int rc = bench::RunWithRatios(argc, argv,
                                {{"BM_Init1GiB/remote:1", "BM_Init1GiB/remote:0", "time"},
                                 {"BM_SendTableFull/", "BM_Publish/", "time"},
                                 {"BM_Publish/1073741824", "BM_Publish/1048576", "time"},
                                 {"BM_Malloc_remote", "BM_Malloc_local", "time"},
                                 {"BM_Ping_local_unix", "BM_SocketRoundTrip", "time"},
                                 {"BM_Ping_peer_tcp", "BM_SocketRoundTrip", "time"}});
  g_pinned[0].reset();
  g_pinned[1].reset();
  (void)g_pinned_cluster->Stop();
  g_client.reset();
  (void)g_cluster->Stop();
  return rc;
}
