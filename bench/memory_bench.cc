// Cluster memory benchmarks (issue 3), each beside its reference from the
// same run:
//   - region malloc/free (random 0-5000 B, as the thesis's Table 5.4; and
//     1 MiB-1 GiB) beside glibc malloc/free;
//   - FlushRange of 1 GiB, untouched and touched, beside a raw
//     clflushopt+sfence loop over the same memory (Table 5.2);
//   - read/write bandwidth of the own region, another node's region and the
//     private heap, 1 and 2 threads, 8/16/32/64-bit elements (Figure 5.2),
//     and strided reads/writes from 8 B to 4 KiB (Figure 5.3).
// The cluster is two shm nodes on this host; node 1's region is created by a
// child process, so this process maps it exactly as another node would.
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "bench_util.h"
#include "quiver/coherence/flush.h"
#include "quiver/memory/region.h"

namespace quiver {
namespace {

using memory::ClusterConfig;
using memory::ClusterMap;

constexpr uint64_t kGiB = 1ULL << 30;
constexpr uint64_t kRegionSize = 3 * kGiB;
constexpr uint64_t kBandwidthBytes = 512ULL << 20;

// The benchmark cluster: node 0 is this process, node 1 a child.
class BenchCluster {
 public:
  static BenchCluster& Get() {
    static BenchCluster* c = new BenchCluster();
    return *c;
  }
  uint8_t* own() { return map_->local_region()->data(); }
  uint8_t* remote() { return map_->region(1)->data(); }
  uint8_t* heap() { return heap_; }
  memory::RegionAllocator* allocator() { return map_->local_region()->allocator(); }

 private:
  BenchCluster() {
    config_.name = "bench" + std::to_string(getpid());

    config_.granule = memory::PlatformCacheLineSize();
    for (uint32_t i = 0; i < 2; ++i) {
      memory::NodeConfig n;
      n.id = i;
      n.control = "127.0.0.1:0";
      n.base = 0x300000000000ULL + i * 0x10000000000ULL;
      n.size = kRegionSize;
      n.path = "/dev/shm/quiver-" + config_.name + "-" + std::to_string(i);
      config_.nodes.push_back(n);
    }
    ClusterMap::Options options;
    options.create_own_region = true;
    options.remove_own_region_on_close = true;
    options.wait_ready_ms = 30000;
    child_ = fork();
    if (child_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      auto m = ClusterMap::Open(config_, 1, options);
      if (!m.ok()) _exit(1);
      pause();
      _exit(0);
    }
    auto m = ClusterMap::Open(config_, 0, options);
    m.status().Abort("benchmark cluster");
    map_ = std::move(m).ValueOrDie();
    heap_ = static_cast<uint8_t*>(std::aligned_alloc(4096, kBandwidthBytes));
    // Fault everything in once so no benchmark pays first-touch costs.
    std::memset(own(), 1, kRegionSize / 2);
    std::memset(remote(), 1, kBandwidthBytes);
    std::memset(heap_, 1, kBandwidthBytes);
    std::atexit([] { Get().Shutdown(); });
  }
  void Shutdown() {
    map_.reset();
    kill(child_, SIGTERM);
    waitpid(child_, nullptr, 0);
    for (const auto& n : config_.nodes) unlink(n.path.c_str());
  }

  ClusterConfig config_;
  std::unique_ptr<ClusterMap> map_;
  uint8_t* heap_ = nullptr;
  pid_t child_ = -1;
};

// ---------------------------------------------------------------------------
// malloc / free

template <bool kRegion>
void BM_MallocFreeRandom(benchmark::State& state) {
  auto* alloc = BenchCluster::Get().allocator();
  std::mt19937_64 rng(42);
  constexpr int kLive = 4096;
  std::vector<void*> live(kLive, nullptr);
  auto allocate = [&](uint64_t size) -> void* {
    if constexpr (kRegion) return alloc->Allocate(size).ValueOrDie();
    return std::malloc(size);
  };
  auto release = [&](void* p) {
    if constexpr (kRegion) {
      (void)alloc->Free(static_cast<uint8_t*>(p));
    } else {
      std::free(p);
    }
  };
  for (auto& p : live) p = allocate(rng() % 5001);
  for (auto _ : state) {
    size_t i = rng() % kLive;
    release(live[i]);
    void* fresh = allocate(rng() % 5001);
    // A copy: DoNotOptimize on the vector element itself (its "+m,r"
    // operand) lost the stores to `live` with GCC 12 at -O3, leaving freed
    // pointers in it and leaking the new blocks.
    benchmark::DoNotOptimize(fresh);
    live[i] = fresh;
  }
  for (void* p : live) release(p);
  state.SetItemsProcessed(state.iterations());
}

template <bool kRegion>
void BM_MallocFreeLarge(benchmark::State& state) {
  auto* alloc = BenchCluster::Get().allocator();
  const auto size = static_cast<uint64_t>(state.range(0));
  for (auto _ : state) {
    void* p;
    if constexpr (kRegion) {
      p = alloc->Allocate(size).ValueOrDie();
    } else {
      p = std::malloc(size);
    }
    benchmark::DoNotOptimize(p);
    if constexpr (kRegion) {
      (void)alloc->Free(static_cast<uint8_t*>(p));
    } else {
      std::free(p);
    }
  }
  state.SetItemsProcessed(state.iterations());
}

// ---------------------------------------------------------------------------
// Flush

uint8_t* FlushTarget(int which) {
  return which == 0 ? BenchCluster::Get().own() : BenchCluster::Get().remote();
}

#if defined(__x86_64__)
// The floor: the flush instruction over every line, no dispatch, no checks.
void RawFlushLoop(uint8_t* p, uint64_t len) {
  asm volatile("sfence" ::: "memory");
  for (uint64_t off = 0; off < len; off += 64) {
    asm volatile("clflushopt %0" : "+m"(p[off]));
  }
  asm volatile("sfence" ::: "memory");
}
#else
void RawFlushLoop(uint8_t* p, uint64_t len) { coherence::FlushRangeHardware(p, len); }
#endif

template <bool kRaw, bool kTouched>
void BM_Flush1GiB(benchmark::State& state) {
  uint8_t* p = FlushTarget(static_cast<int>(state.range(0)));
  const uint64_t len = kGiB;
  for (auto _ : state) {
    state.PauseTiming();
    if (kTouched) {
      std::memset(p, static_cast<int>(state.iterations()), len);
    } else {
      RawFlushLoop(p, len);  // nothing of it left in the caches
    }
    state.ResumeTiming();
    if (kRaw) {
      RawFlushLoop(p, len);
    } else {
      (void)coherence::FlushRange(p, len);
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(len));
}

// ---------------------------------------------------------------------------
// Bandwidth

uint8_t* BandwidthTarget(int which) {
  switch (which) {
    case 0:
      return BenchCluster::Get().own();
    case 1:
      return BenchCluster::Get().remote();
    default:
      return BenchCluster::Get().heap();
  }
}

template <typename T>
void BM_Read(benchmark::State& state) {
  const uint64_t per_thread = kBandwidthBytes / state.threads();
  const T* p =
      reinterpret_cast<const T*>(BandwidthTarget(static_cast<int>(state.range(0))) +
                                 per_thread * state.thread_index());
  const uint64_t n = per_thread / sizeof(T);
  for (auto _ : state) {
    T sum = 0;
    for (uint64_t i = 0; i < n; ++i) sum += p[i];
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(per_thread));
}

template <typename T>
void BM_Write(benchmark::State& state) {
  const uint64_t per_thread = kBandwidthBytes / state.threads();
  T* p = reinterpret_cast<T*>(BandwidthTarget(static_cast<int>(state.range(0))) +
                              per_thread * state.thread_index());
  const uint64_t n = per_thread / sizeof(T);
  T v = 0;
  for (auto _ : state) {
    ++v;
    for (uint64_t i = 0; i < n; ++i) p[i] = static_cast<T>(v + i);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(per_thread));
}

// Strided access to 64-bit elements: stride in bytes; bytes counted are the
// bytes of the elements accessed.
void BM_StridedRead(benchmark::State& state) {
  const uint64_t* p = reinterpret_cast<const uint64_t*>(
      BandwidthTarget(static_cast<int>(state.range(0))));
  const uint64_t step = static_cast<uint64_t>(state.range(1)) / 8;
  const uint64_t n = kBandwidthBytes / 8;
  for (auto _ : state) {
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i += step) sum += p[i];
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n / step * 8));
}

void BM_StridedWrite(benchmark::State& state) {
  uint64_t* p =
      reinterpret_cast<uint64_t*>(BandwidthTarget(static_cast<int>(state.range(0))));
  const uint64_t step = static_cast<uint64_t>(state.range(1)) / 8;
  const uint64_t n = kBandwidthBytes / 8;
  uint64_t v = 0;
  for (auto _ : state) {
    ++v;
    for (uint64_t i = 0; i < n; i += step) p[i] = v;
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n / step * 8));
}

// Arg 0 of the bandwidth benchmarks: 0 own region, 1 node 1's region, 2 heap.
void Targets(benchmark::internal::Benchmark* b) {
  b->ArgName("target");
  for (int t : {0, 1, 2}) b->Arg(t);
}
void StrideArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"target", "stride"});
  for (int t : {0, 1, 2}) {
    for (int s = 8; s <= 4096; s *= 2) b->Args({t, s});
  }
}

BENCHMARK_TEMPLATE(BM_MallocFreeRandom, true)->Name("BM_MallocFreeRandom/region");
BENCHMARK_TEMPLATE(BM_MallocFreeRandom, false)->Name("BM_MallocFreeRandom/glibc");
BENCHMARK_TEMPLATE(BM_MallocFreeLarge, true)
    ->Name("BM_MallocFreeLarge/region")
    ->RangeMultiplier(32)
    ->Range(1 << 20, 1 << 30);
BENCHMARK_TEMPLATE(BM_MallocFreeLarge, false)
    ->Name("BM_MallocFreeLarge/glibc")
    ->RangeMultiplier(32)
    ->Range(1 << 20, 1 << 30);
BENCHMARK_TEMPLATE(BM_Flush1GiB, false, false)
    ->Name("BM_Flush1GiB/untouched/FlushRange")
    ->ArgName("remote")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(bench::QuickOr(5, 1))
    ->Repetitions(3)               // median of three: one 12 ms figure is noisy
    ->DisplayAggregatesOnly(true)  // the JSON file keeps every repetition
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Flush1GiB, true, false)
    ->Name("BM_Flush1GiB/untouched/raw")
    ->ArgName("remote")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(bench::QuickOr(5, 1))
    ->Repetitions(3)               // median of three: one 12 ms figure is noisy
    ->DisplayAggregatesOnly(true)  // the JSON file keeps every repetition
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Flush1GiB, false, true)
    ->Name("BM_Flush1GiB/touched/FlushRange")
    ->ArgName("remote")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(bench::QuickOr(5, 1))
    ->Repetitions(3)               // median of three: one 12 ms figure is noisy
    ->DisplayAggregatesOnly(true)  // the JSON file keeps every repetition
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Flush1GiB, true, true)
    ->Name("BM_Flush1GiB/touched/raw")
    ->ArgName("remote")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(bench::QuickOr(5, 1))
    ->Repetitions(3)               // median of three: one 12 ms figure is noisy
    ->DisplayAggregatesOnly(true)  // the JSON file keeps every repetition
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

#define QUIVER_BANDWIDTH(fn, T) \
  BENCHMARK_TEMPLATE(fn, T)     \
      ->Apply(Targets)          \
      ->Threads(1)              \
      ->Threads(2)              \
      ->UseRealTime()           \
      ->Unit(benchmark::kMillisecond);
QUIVER_BANDWIDTH(BM_Read, uint8_t)
QUIVER_BANDWIDTH(BM_Read, uint16_t)
QUIVER_BANDWIDTH(BM_Read, uint32_t)
QUIVER_BANDWIDTH(BM_Read, uint64_t)
QUIVER_BANDWIDTH(BM_Write, uint8_t)
QUIVER_BANDWIDTH(BM_Write, uint16_t)
QUIVER_BANDWIDTH(BM_Write, uint32_t)
QUIVER_BANDWIDTH(BM_Write, uint64_t)
#undef QUIVER_BANDWIDTH
BENCHMARK(BM_StridedRead)
    ->Apply(StrideArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StridedWrite)
    ->Apply(StrideArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace quiver

int main(int argc, char** argv) {
  using quiver::bench::RatioSpec;
  std::vector<RatioSpec> specs = {
      {"BM_MallocFreeRandom/region", "BM_MallocFreeRandom/glibc", "time"},
      {"BM_MallocFreeLarge/region", "BM_MallocFreeLarge/glibc", "time"},
      {"BM_Flush1GiB/untouched/FlushRange", "BM_Flush1GiB/untouched/raw", "time"},
      {"BM_Flush1GiB/touched/FlushRange", "BM_Flush1GiB/touched/raw", "time"},
  };
  // Remote region and heap, each against the own region, same shape.
  for (const char* fn : {"BM_Read<uint8_t>", "BM_Read<uint16_t>", "BM_Read<uint32_t>",
                         "BM_Read<uint64_t>", "BM_Write<uint8_t>", "BM_Write<uint16_t>",
                         "BM_Write<uint32_t>", "BM_Write<uint64_t>"}) {
    for (const char* threads : {"/real_time/threads:1", "/real_time/threads:2"}) {
      std::string f = fn;
      specs.push_back({f + "/target:1" + threads, f + "/target:0" + threads});
      specs.push_back({f + "/target:2" + threads, f + "/target:0" + threads});
    }
  }
  for (const char* fn : {"BM_StridedRead", "BM_StridedWrite"}) {
    for (int s = 8; s <= 4096; s *= 2) {
      std::string suffix = "/stride:" + std::to_string(s) + "/real_time";
      specs.push_back({std::string(fn) + "/target:1" + suffix,
                       std::string(fn) + "/target:0" + suffix});
    }
  }
  return quiver::bench::RunWithRatios(argc, argv, std::move(specs));
}
