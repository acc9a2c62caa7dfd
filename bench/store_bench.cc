// The object store (docs/store.md) against the machine's limits and the
// published figures, each beside its reference measured in the same run:
//   Table I (seeds/002)  create+write+seal, batched Get (retrieval latency)
//                        and read throughput, objects homed on this node
//                        and on node 1, for the six workloads 1000 x 1 kB
//                        ... 10 x 100000 kB; references: memcpy of the same
//                        bytes, a raw Unix socket round trip, reading the
//                        same bytes from private memory
//   Ray's microbenchmarks  single-client put GB/s (vs memcpy), Get calls/s
//                        and put calls/s of 1 kB objects (vs the raw round
//                        trip), multi-client put GB/s (two threads, vs two
//                        threads of memcpy)
//   Spilling             spill (Evict) and restore (Get) of 4 x 100 MB vs
//                        write(2) and read(2) of the same bytes to files in
//                        the same directory
// It starts its own 2-node cluster (node 0 spills to a directory in the
// cluster's) and is a client of node 0.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "control/local_cluster.h"
#include "quiver/client.h"
#include "quiver/store.h"

namespace quiver {
namespace {

using Clock = std::chrono::steady_clock;
using store::ObjectId;

std::unique_ptr<control::LocalCluster> g_cluster;
std::unique_ptr<Client> g_client;
std::unique_ptr<store::ObjectStore> g_store;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Ids unique over the whole run.
std::vector<ObjectId> FreshIds(int64_t n) {
  std::vector<ObjectId> ids;
  ids.reserve(n);
  for (int64_t i = 0; i < n; ++i) ids.push_back(ObjectId::FromRandom());
  return ids;
}

// Minor page faults the calling thread has taken so far (not the store's
// prefaulting thread, which takes them ahead of use).
int64_t MinorFaults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

// A private source of `bytes` bytes, written once (pages present).
const std::vector<uint8_t>& Source(int64_t bytes) {
  static std::vector<uint8_t> src;
  if (static_cast<int64_t>(src.size()) < bytes) {
    src.assign(bytes, 0);
    for (int64_t i = 0; i < bytes; ++i) src[i] = static_cast<uint8_t>(i * 131);
  }
  return src;
}

store::CreateOptions At(int64_t home) {
  store::CreateOptions o;
  o.node = static_cast<uint32_t>(home);
  return o;
}

// Creates, writes (memcpy from private memory) and seals `ids`.
Status Put(const std::vector<ObjectId>& ids, int64_t bytes, int64_t home) {
  const auto& src = Source(bytes);
  for (const auto& id : ids) {
    QUIVER_ASSIGN_OR_RAISE(auto buf, g_store->Create(id, bytes, {}, At(home)));
    std::memcpy(buf->mutable_data(), src.data(), bytes);
    QUIVER_RETURN_NOT_OK(g_store->Seal(id));
  }
  return Status::OK();
}

// Put, timed as the iteration's time; adds the page faults taken to *faults.
Status TimedPut(benchmark::State& state, const std::vector<ObjectId>& ids, int64_t bytes,
                int64_t home, int64_t* faults) {
  const int64_t f0 = MinorFaults();
  auto t0 = Clock::now();
  Status st = Put(ids, bytes, home);
  state.SetIterationTime(Seconds(Clock::now() - t0));
  *faults += MinorFaults() - f0;
  return st;
}

// Page faults per iteration, a counter: each costs microseconds in a VM, so
// a put that faults its pages in cannot run at memcpy's speed.
void CountFaults(benchmark::State& state, int64_t faults) {
  state.counters["faults"] =
      benchmark::Counter(static_cast<double>(faults), benchmark::Counter::kAvgIterations);
}

// ---------------------------------------------------------------------------
// Table I. Arguments: home node, objects, bytes each.

void BM_TableI_CreateSeal(benchmark::State& state) {
  const int64_t home = state.range(0), n = state.range(1), bytes = state.range(2);
  int64_t faults = 0;
  for (auto _ : state) {
    auto ids = FreshIds(n);
    Status st = TimedPut(state, ids, bytes, home, &faults);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    st = g_store->Delete(ids);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
  }
  state.SetBytesProcessed(state.iterations() * n * bytes);
  CountFaults(state, faults);
}

// One batched Get of all the objects (retrieval latency); with `read`, every
// byte of them is read too (read throughput). Repeated Gets find the pins
// the store kept (docs/store.md, "Repeated Gets"); with `cold`, those are
// dropped (untimed) before each Get, so that it asks the home.
void GetLoop(benchmark::State& state, bool read, bool cold = false) {
  const int64_t home = state.range(0), n = state.range(1), bytes = state.range(2);
  auto ids = FreshIds(n);
  Status st = Put(ids, bytes, home);
  if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
  uint64_t sink = 0;
  for (auto _ : state) {
    if (cold) {
      g_store->DropCachedPins();
      (void)g_client->Drain();
    }
    auto t0 = Clock::now();
    auto got = g_store->Get(ids, 0);
    if (!got.ok()) return state.SkipWithError(got.status().ToString().c_str());
    if (read) {
      for (const auto& o : *got) {
        const auto* p = reinterpret_cast<const uint64_t*>(o.data->data());
        for (int64_t i = 0; i < bytes / 8; ++i) sink += p[i];
      }
    }
    state.SetIterationTime(Seconds(Clock::now() - t0));
    for (const auto& o : *got) {
      if (!o.status.ok()) return state.SkipWithError(o.status.ToString().c_str());
      (void)g_store->Release(o.id);
    }
  }
  benchmark::DoNotOptimize(sink);
  state.SetBytesProcessed(state.iterations() * n * bytes);
  st = g_client->Drain();
  if (st.ok()) st = g_store->Delete(ids);
  if (!st.ok()) state.SkipWithError(st.ToString().c_str());
}
void BM_TableI_Get(benchmark::State& state) { GetLoop(state, false); }
void BM_TableI_GetFirst(benchmark::State& state) { GetLoop(state, false, true); }
void BM_TableI_Read(benchmark::State& state) { GetLoop(state, true); }

// The reference for reading: the same bytes in private memory.
void BM_ReadPrivate(benchmark::State& state) {
  const int64_t n = state.range(0), bytes = state.range(1);
  std::vector<std::vector<uint64_t>> objects(n, std::vector<uint64_t>(bytes / 8, 3));
  uint64_t sink = 0;
  for (auto _ : state) {
    for (const auto& o : objects) {
      for (uint64_t v : o) sink += v;
    }
  }
  benchmark::DoNotOptimize(sink);
  state.SetBytesProcessed(state.iterations() * n * bytes);
}

// The reference for writing: memcpy of the same bytes into private memory
// whose pages are present.
void BM_Memcpy(benchmark::State& state) {
  const int64_t n = state.range(0), bytes = state.range(1);
  const auto& src = Source(bytes);
  std::vector<std::vector<uint8_t>> dst(n, std::vector<uint8_t>(bytes, 1));
  for (auto _ : state) {
    for (auto& d : dst) std::memcpy(d.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * bytes);
}

const std::vector<std::pair<int64_t, int64_t>>& Workloads() {
  static const std::vector<std::pair<int64_t, int64_t>> w = {
      {1000, 1000},   {500, 10000},   {200, 100000},
      {100, 1000000}, {50, 10000000}, {10, 100000000}};
  return w;
}

void TableIArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"home", "objects", "bytes"});
  for (int64_t home : {0, 1}) {
    for (auto [n, bytes] : Workloads()) b->Args({home, n, bytes});
  }
}
void RefArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"objects", "bytes"});
  for (auto [n, bytes] : Workloads()) b->Args({n, bytes});
}

BENCHMARK(BM_TableI_CreateSeal)
    ->Apply(TableIArgs)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TableI_Get)
    ->Apply(TableIArgs)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TableI_GetFirst)
    ->Apply(TableIArgs)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TableI_Read)
    ->Apply(TableIArgs)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadPrivate)->Apply(RefArgs)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Memcpy)->Apply(RefArgs)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------
// Ray's microbenchmarks: one client.

// Put throughput: 100 MB objects, created, written from private memory and
// sealed (the Delete between them is not timed).
void BM_Ray_Put(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  int64_t faults = 0;
  for (auto _ : state) {
    auto ids = FreshIds(1);
    Status st = TimedPut(state, ids, bytes, 0, &faults);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    st = g_store->Delete(ids);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  CountFaults(state, faults);
}
// Warm-up: a first put into region pages this process never touched takes
// a fault per page (the "faults" counter shows it); steady-state puts reuse
// memory, as Ray's benchmark does.
BENCHMARK(BM_Ray_Put)
    ->Arg(100000000)
    ->MinWarmUpTime(0.5)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
void BM_Ray_PutMemcpy(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  const auto& src = Source(bytes);
  std::vector<uint8_t> dst(bytes, 1);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}
BENCHMARK(BM_Ray_PutMemcpy)
    ->Arg(100000000)
    ->MinWarmUpTime(0.5)
    ->Unit(benchmark::kMillisecond);

// Get calls: one 1 kB object, Get and Release (the second Get on finds the
// pin the store kept: no round trip).
void BM_Ray_GetCalls(benchmark::State& state) {
  auto ids = FreshIds(1);
  Status st = Put(ids, 1000, 0);
  if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
  for (auto _ : state) {
    auto got = g_store->Get(ids, 0);
    if (!got.ok() || !(*got)[0].status.ok()) return state.SkipWithError("get failed");
    (void)g_store->Release(ids[0]);
  }
  state.SetItemsProcessed(state.iterations());
  (void)g_client->Drain();
  (void)g_store->Delete(ids);
}
BENCHMARK(BM_Ray_GetCalls)->Unit(benchmark::kMicrosecond);

// Put calls: 1 kB objects put with CreateAndSeal, as ray.put does (they
// travel with the request: one round trip), and for comparison created,
// written and sealed (two).
void PutCalls(benchmark::State& state, bool create_seal) {
  const auto& src = Source(1000);
  const std::string_view data(reinterpret_cast<const char*>(src.data()), 1000);
  std::vector<ObjectId> made;
  for (auto _ : state) {
    auto ids = FreshIds(1);
    Status st = create_seal ? Put(ids, 1000, 0) : g_store->CreateAndSeal(ids[0], data);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    made.push_back(ids[0]);
  }
  state.SetItemsProcessed(state.iterations());
  (void)g_store->Delete(made);
}
void BM_Ray_PutCalls(benchmark::State& state) { PutCalls(state, false); }
BENCHMARK(BM_Ray_PutCalls)->Unit(benchmark::kMicrosecond);
void BM_Ray_CreateSealCalls(benchmark::State& state) { PutCalls(state, true); }
BENCHMARK(BM_Ray_CreateSealCalls)->Unit(benchmark::kMicrosecond);

// Multi-client put: two clients' threads putting 100 MB objects at once
// (one ObjectStore is thread-safe; a process maps the regions once), beside
// two threads of memcpy.
void BM_Ray_MultiPut(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  for (auto _ : state) {
    auto ids = FreshIds(1);
    Status st = Put(ids, bytes, 0);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    state.PauseTiming();
    st = g_store->Delete(ids);
    state.ResumeTiming();
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}
BENCHMARK(BM_Ray_MultiPut)
    ->Arg(100000000)
    ->MinWarmUpTime(0.5)
    ->Threads(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Ray_PutMemcpy)
    ->Arg(100000000)
    ->MinWarmUpTime(0.5)
    ->Threads(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------
// Spilling: 4 objects of 100 MB spilled by Evict and restored by Get, beside
// writing and reading the same bytes as files in the same directory with
// write(2)/read(2) (what the spill does, minus its checksum and trailer).

constexpr int kSpillObjects = 4;

std::string SpillDirectory() { return g_cluster->dir() + "/spill0"; }

void BM_Spill(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  for (auto _ : state) {
    state.PauseTiming();
    auto ids = FreshIds(kSpillObjects);
    Status st = Put(ids, bytes, 0);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    state.ResumeTiming();
    auto freed = g_store->Evict(kSpillObjects * bytes, 0);
    state.PauseTiming();
    if (!freed.ok()) return state.SkipWithError(freed.status().ToString().c_str());
    auto stats = g_store->Stats(0);
    if (!stats.ok() || stats->objects_spilled < kSpillObjects) {
      return state.SkipWithError("the objects were not spilled");
    }
    st = g_store->Delete(ids);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * kSpillObjects * bytes);
}

void BM_Restore(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  for (auto _ : state) {
    state.PauseTiming();
    auto ids = FreshIds(kSpillObjects);
    Status st = Put(ids, bytes, 0);
    if (st.ok()) st = g_store->Evict(kSpillObjects * bytes, 0).status();
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    state.ResumeTiming();
    auto got = g_store->Get(ids, 0);
    state.PauseTiming();
    if (!got.ok()) return state.SkipWithError(got.status().ToString().c_str());
    for (const auto& o : *got) {
      if (!o.status.ok() || o.data->size() != bytes ||
          std::memcmp(o.data->data(), Source(bytes).data(), bytes) != 0) {
        return state.SkipWithError("a restored object differs");
      }
    }
    got->clear();
    for (const auto& id : ids) (void)g_store->Release(id);
    (void)g_client->Drain();
    st = g_store->Delete(ids);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * kSpillObjects * bytes);
}

// Writes (or reads) a whole file of `n` bytes at `p`, as a spill does.
bool Transfer(const std::string& path, uint8_t* p, int64_t n, bool write) {
  const int fd =
      write ? ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)
            : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  while (n > 0) {
    const auto len = static_cast<size_t>(std::min<int64_t>(n, 1 << 30));
    const ssize_t done = write ? ::write(fd, p, len) : ::read(fd, p, len);
    if (done <= 0) break;
    p += done;
    n -= done;
  }
  return ::close(fd) == 0 && n == 0;
}
bool WriteFile(const std::string& path, const uint8_t* p, int64_t n) {
  return Transfer(path, const_cast<uint8_t*>(p), n, true);
}
bool ReadFile(const std::string& path, uint8_t* p, int64_t n) {
  return Transfer(path, p, n, false);
}

std::string RefFile(int i) {
  return SpillDirectory() + "/reference-" + std::to_string(i);
}

void BM_DiskWrite(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  const auto& src = Source(bytes);
  for (auto _ : state) {
    for (int i = 0; i < kSpillObjects; ++i) {
      if (!WriteFile(RefFile(i), src.data(), bytes)) return state.SkipWithError("write");
    }
    state.PauseTiming();
    for (int i = 0; i < kSpillObjects; ++i) ::unlink(RefFile(i).c_str());
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * kSpillObjects * bytes);
}

void BM_DiskRead(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  const auto& src = Source(bytes);
  std::vector<uint8_t> dst(bytes * kSpillObjects);
  for (auto _ : state) {
    state.PauseTiming();
    for (int i = 0; i < kSpillObjects; ++i) {
      if (!WriteFile(RefFile(i), src.data(), bytes)) return state.SkipWithError("write");
    }
    state.ResumeTiming();
    for (int i = 0; i < kSpillObjects; ++i) {
      if (!ReadFile(RefFile(i), dst.data() + i * bytes, bytes)) {
        return state.SkipWithError("read");
      }
    }
    state.PauseTiming();
    for (int i = 0; i < kSpillObjects; ++i) ::unlink(RefFile(i).c_str());
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * kSpillObjects * bytes);
}

// A warm-up first (the first files written in a fresh directory are much
// slower, for the spill and the reference alike), then enough iterations
// to average the page cache's writeback.
void DiskArgs(benchmark::internal::Benchmark* b) {
  b->Arg(100000000)->MinWarmUpTime(0.5)->MinTime(1.0)->UseRealTime()->Unit(
      benchmark::kMillisecond);
}
BENCHMARK(BM_Spill)->Apply(DiskArgs);
BENCHMARK(BM_DiskWrite)->Apply(DiskArgs);
BENCHMARK(BM_Restore)->Apply(DiskArgs);
BENCHMARK(BM_DiskRead)->Apply(DiskArgs);

// The floor of any call to a daemon: one byte each way over a Unix socket
// between two processes.
void BM_SocketRoundTrip(benchmark::State& state) { bench::UnixRoundTrips(state); }
BENCHMARK(BM_SocketRoundTrip)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace quiver

int main(int argc, char** argv) {
  using namespace quiver;
  control::LocalClusterOptions o;
  o.nodes = 2;
  o.region_size = 3ULL << 30;  // Table I's largest workload is 1 GB
  o.name_prefix = "storebench";
  o.base = 0x380000000000ULL;
  o.limits.malloc_rate = 1000000;  // the benchmarks create fast on purpose
  o.limits.node_malloc_rate = 1000000;
  o.limits.session_quota = {1.0, 0};
  o.limits.node_quota = {1.0, 0};
  o.daemon_args = {"--store-spill", "{dir}/spill{node}"};
  auto cluster = control::LocalCluster::Start(o);
  if (!cluster.ok()) {
    std::fprintf(stderr, "store_bench: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  g_cluster = std::move(*cluster);
  auto client = Client::Connect({g_cluster->config_path(), 0});
  if (!client.ok() || !(*client)->WaitAllOnline(60000).ok()) {
    std::fprintf(stderr, "store_bench: cannot connect to the cluster\n");
    return 1;
  }
  g_client = std::move(*client);
  g_store = std::make_unique<store::ObjectStore>(*g_client);
  std::vector<bench::RatioSpec> ratios;
  for (auto [n, bytes] : Workloads()) {
    const std::string w =
        "objects:" + std::to_string(n) + "/bytes:" + std::to_string(bytes);
    for (const char* home : {"home:0/", "home:1/"}) {
      ratios.push_back({std::string("BM_TableI_CreateSeal/") + home + w, "BM_Memcpy/" + w,
                        "bytes_per_second"});
      ratios.push_back({std::string("BM_TableI_Read/") + home + w, "BM_ReadPrivate/" + w,
                        "bytes_per_second"});
      ratios.push_back(
          {std::string("BM_TableI_Get/") + home + w, "BM_SocketRoundTrip", "time"});
      ratios.push_back(
          {std::string("BM_TableI_GetFirst/") + home + w, "BM_SocketRoundTrip", "time"});
    }
    ratios.push_back(
        {"BM_TableI_Read/home:1/" + w, "BM_TableI_Read/home:0/" + w, "bytes_per_second"});
  }
  ratios.push_back({"BM_Ray_Put/", "BM_Ray_PutMemcpy/", "bytes_per_second"});
  ratios.push_back({"BM_Ray_GetCalls", "BM_SocketRoundTrip", "time"});
  ratios.push_back({"BM_Ray_PutCalls", "BM_SocketRoundTrip", "time"});
  ratios.push_back({"BM_Ray_CreateSealCalls", "BM_SocketRoundTrip", "time"});
  ratios.push_back(
      {"BM_Ray_MultiPut/100000000/min_warmup_time:0.500/real_time/threads:2",
       "BM_Ray_PutMemcpy/100000000/min_warmup_time:0.500/real_time/threads:2",
       "bytes_per_second"});
  ratios.push_back({"BM_Spill/", "BM_DiskWrite/", "bytes_per_second"});
  ratios.push_back({"BM_Restore/", "BM_DiskRead/", "bytes_per_second"});
  int rc = bench::RunWithRatios(argc, argv, ratios);
  g_store.reset();
  g_client.reset();
  (void)g_cluster->Stop();
  return rc;
}
