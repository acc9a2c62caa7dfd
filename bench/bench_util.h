// Shared pieces of Quiver's benchmarks.
//
// Every figure is printed beside a reference measured in the same run
// (memcpy of the same bytes, a raw loop, a baseline method), because these
// machines are shared and noisy: only ratios from one run mean something.
// RatioReporter prints Google Benchmark's usual table, then one line per
// registered pair: "<figure>  <value>  vs <reference>  <value>  ratio x".
#pragma once

#include <benchmark/benchmark.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "quiver/columnar/builder.h"
#include "quiver/columnar/record_batch.h"

namespace quiver::bench {

// Rows [first, first + n) of the thesis's table: a int64 = i, b int8 = i,
// c uint16 = 7i (wrapping).
inline RecordBatchPtr MakeThesisBatch(int64_t first, int64_t n) {
  Int64Builder a;
  Int8Builder b;
  UInt16Builder c;
  (void)a.Reserve(n);
  (void)b.Reserve(n);
  (void)c.Reserve(n);
  for (int64_t i = first; i < first + n; ++i) {
    a.UnsafeAppend(i);
    b.UnsafeAppend(static_cast<int8_t>(i));
    c.UnsafeAppend(static_cast<uint16_t>(i * 7));
  }
  auto s = schema({field("a", int64()), field("b", int8()), field("c", uint16())});
  return RecordBatch::Make(
      s, n, {a.Finish().ValueOrDie(), b.Finish().ValueOrDie(), c.Finish().ValueOrDie()});
}

// The quick suite (`quiver bench --quick`) runs the programs with
// QUIVER_BENCH_QUICK=1: benchmarks with a fixed iteration count then run
// `quick` iterations instead of `full`. Names change only in their
// "/iterations:N" part.
// The floor of any call to a daemon: one byte each way between two
// processes over blocking sockets. EchoLoop runs in the child (never
// returns); RoundTrips times the exchanges and reaps the child.
[[noreturn]] inline void EchoLoop(int fd) {
  char c;
  while (read(fd, &c, 1) == 1) {
    if (write(fd, &c, 1) != 1) break;
  }
  _exit(0);
}

inline void RoundTrips(benchmark::State& state, int fd, pid_t child) {
  char c = 'x';
  for (auto _ : state) {
    if (write(fd, &c, 1) != 1 || read(fd, &c, 1) != 1) {
      state.SkipWithError("echo failed");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  close(fd);
  waitpid(child, nullptr, 0);
}

// One-byte round trips over a Unix socket pair to a forked child.
inline void UnixRoundTrips(benchmark::State& state) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    return state.SkipWithError("socketpair");
  pid_t child = fork();
  if (child == 0) {
    close(sv[0]);
    EchoLoop(sv[1]);
  }
  close(sv[1]);
  RoundTrips(state, sv[0], child);
}

// $QUIVER_BENCH_ROWS, else `fallback`: the row count of a program's table.
inline int64_t BenchRows(int64_t fallback) {
  const char* env = std::getenv("QUIVER_BENCH_ROWS");
  return env ? std::atoll(env) : fallback;
}

inline bool QuickMode() {
  const char* q = std::getenv("QUIVER_BENCH_QUICK");
  return q != nullptr && *q != 0 && *q != '0';
}
inline int64_t QuickOr(int64_t full, int64_t quick) { return QuickMode() ? quick : full; }

// Which reference a benchmark is compared with, and on which counter.
struct RatioSpec {
  std::string figure;     // benchmark name (prefix match on run name)
  std::string reference;  // benchmark name of the reference
  // "bytes_per_second", "items_per_second" or "time" (real time per iteration).
  std::string metric = "bytes_per_second";
};

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  explicit RatioReporter(std::vector<RatioSpec> specs) : specs_(std::move(specs)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
      Entry& e = results_[Normalize(r.benchmark_name())];
      e.real_time_ns =
          r.GetAdjustedRealTime() * (r.time_unit == benchmark::kNanosecond    ? 1.0
                                     : r.time_unit == benchmark::kMicrosecond ? 1e3
                                     : r.time_unit == benchmark::kMillisecond ? 1e6
                                                                              : 1e9);
      for (const auto& [name, counter] : r.counters) e.counters[name] = counter.value;
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    if (specs_.empty()) return;
    std::printf("\n%-58s %14s   %-40s %14s %8s\n", "figure", "value", "reference",
                "value", "ratio");
    for (const auto& s : specs_) {
      for (const auto& [name, e] : results_) {
        if (name.rfind(s.figure, 0) != 0) continue;
        // The reference with the same argument suffix, if there is one.
        std::string suffix = name.substr(s.figure.size());
        const Entry* ref = Find(s.reference + suffix);
        if (ref == nullptr) ref = Find(s.reference);
        if (ref == nullptr) continue;
        double v = Metric(e, s.metric), rv = Metric(*ref, s.metric);
        // For times, a ratio above 1 means "slower than the reference".
        double ratio = rv == 0 ? 0 : v / rv;
        std::printf("%-58s %14s   %-40s %14s %7.3fx\n", name.c_str(),
                    Format(v, s.metric).c_str(), (s.reference + suffix).c_str(),
                    Format(rv, s.metric).c_str(), ratio);
      }
    }
  }

 private:
  struct Entry {
    double real_time_ns = 0;
    std::map<std::string, double> counters;
  };
  const Entry* Find(const std::string& name) const {
    auto it = results_.find(name);
    if (it != results_.end()) return &it->second;
    for (const auto& [n, e] : results_) {  // aggregate runs carry a suffix
      if (n.rfind(name + "_", 0) == 0) return &e;
    }
    return nullptr;
  }
  // Drops the "/iterations:N" and "/manual_time" parts Google Benchmark
  // adds, so a figure and its reference pair up by their arguments alone;
  // an aggregate's suffix ("_median") stays.
  static std::string Normalize(std::string name) {
    if (size_t pos = name.find("/iterations:"); pos != std::string::npos) {
      size_t end = name.find_first_of("/_", pos + 1);
      name.erase(pos, end == std::string::npos ? std::string::npos : end - pos);
    }
    const std::string manual = "/manual_time";
    if (size_t pos = name.find(manual); pos != std::string::npos) {
      name.erase(pos, manual.size());
    }
    return name;
  }
  static double Metric(const Entry& e, const std::string& metric) {
    if (metric == "time") return e.real_time_ns;
    auto it = e.counters.find(metric);
    return it == e.counters.end() ? 0 : it->second;
  }
  static std::string Format(double v, const std::string& metric) {
    char buf[64];
    if (metric == "time") {
      if (v >= 1e9)
        std::snprintf(buf, sizeof(buf), "%.3f s", v / 1e9);
      else if (v >= 1e6)
        std::snprintf(buf, sizeof(buf), "%.3f ms", v / 1e6);
      else if (v >= 1e3)
        std::snprintf(buf, sizeof(buf), "%.3f us", v / 1e3);
      else
        std::snprintf(buf, sizeof(buf), "%.1f ns", v);
    } else if (metric == "bytes_per_second") {
      std::snprintf(buf, sizeof(buf), "%.2f GB/s", v / 1e9);
    } else {
      std::snprintf(buf, sizeof(buf), "%.1f M/s", v / 1e6);
    }
    return buf;
  }

  std::vector<RatioSpec> specs_;
  std::map<std::string, Entry> results_;
};

// Runs the registered benchmarks with a RatioReporter; use as main().
inline int RunWithRatios(int argc, char** argv, std::vector<RatioSpec> specs) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter(std::move(specs));
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}

}  // namespace quiver::bench
