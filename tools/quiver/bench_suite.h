// quiver bench: what the suite measures and what was published.
//
// The catalogue names every figure `quiver bench` reports: which benchmark
// program and benchmark produce it, which benchmark of the same run is its
// reference, and, where the works Quiver implements published a number for
// it, that number with its source and hardware. Results holds what the
// programs measured (their Google Benchmark JSON files) and resolves the
// catalogue against it.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "quiver/util/result.h"
#include "quiver/util/status.h"

namespace quiver::cli::bench {

// A benchmark program of bench/ (<build>/bench/<name>_bench).
struct ProgramSpec {
  std::string name;         // "memory"
  std::string description;  // one line
  // Extra arguments and environment of the quick suite (smaller tables,
  // fewer iterations); the full suite runs the program as written.
  std::vector<std::string> quick_args;
  std::vector<std::pair<std::string, std::string>> quick_env;
  // Rough run time on a 2-core machine, for the progress bar's weighting.
  double quick_seconds = 10, full_seconds = 60;
  // Benchmarks (a Google Benchmark filter) run in a process of their own
  // per repetition, so that each repetition starts from a fresh region: the
  // random malloc/free figure depends on the allocator's history (how
  // fragmented the free tree is), which should not carry over.
  std::string isolate;
};
const std::vector<ProgramSpec>& Programs();
const ProgramSpec* FindProgram(const std::string& name);

// What is read from a benchmark's run.
struct Metric {
  enum Kind { kTime, kBytesPerSecond, kCounter };
  Kind kind = kTime;
  std::string unit;     // kTime: "s", "ms", "us", "ns"; kBytesPerSecond: "GB/s"
  std::string counter;  // kCounter: the user counter's name (unit as given)
  bool higher_is_better() const { return kind == kBytesPerSecond; }
};
Metric Time(const std::string& unit);
Metric BytesPerSecond();
Metric Counter(const std::string& name, const std::string& unit);

// A number published by one of the works, quoted with its source.
struct Published {
  double value = 0;    // in the figure's unit (for plots and results.json)
  std::string quote;   // as published, e.g. "88.57 ms (σ 1.53)"
  std::string source;  // work, table/figure
  std::string hardware;
};

struct FigureSpec {
  std::string section;  // Section::id
  std::string id;       // stable, unique: "table-5.2/touched/remote"
  std::string label;    // a row of the section's table
  std::string program;
  std::string bench;  // run name without /iterations:N and /repeats:N
  Metric metric;
  std::string ref_label;
  std::string ref_bench;  // same program
  Metric ref_metric;
  std::optional<Published> published;
};

struct Section {
  std::string id;
  std::string title;
  std::string source;     // the published work and where in it
  std::string hardware;   // what it was measured on
  std::string published;  // the published result, quoted (markdown)
  std::string method;     // what Quiver measures here, and against what
  std::string missing;    // non-empty: Quiver cannot measure this yet, and why
};
const std::vector<Section>& Sections();
// A few words for a Section::hardware (after the first full mention).
std::string ShortHardware(const std::string& hardware);
const std::vector<FigureSpec>& Figures();

// Median and spread of one quantity over the repetitions of a run.
struct Stats {
  int repetitions = 0;
  double min = 0, median = 0, max = 0;
  std::vector<double> samples;
};
Stats MakeStats(std::vector<double> samples);

// The run name without "/iterations:N" and "/repeats:N" (the quick suite
// runs fewer iterations; figures are looked up by this form).
std::string CanonicalName(const std::string& run_name);

class Results {
 public:
  // Loads one program's Google Benchmark JSON output.
  Status Load(const std::string& program, const std::string& json_path);
  bool Has(const std::string& program) const { return runs_.count(program) != 0; }
  const nlohmann::json& Context(const std::string& program) const;
  // The metric over the repetitions of `bench`; an error names what is missing.
  Result<Stats> Get(const std::string& program, const std::string& bench,
                    const Metric& metric) const;

 private:
  struct Runs {
    std::vector<nlohmann::json> iterations;  // one per repetition
    std::optional<nlohmann::json> median;    // the median aggregate, if any
    std::string error;
  };
  std::map<std::string, std::map<std::string, Runs>> runs_;
  std::map<std::string, nlohmann::json> context_;
};

// A catalogue figure resolved against a run.
struct Figure {
  const FigureSpec* spec = nullptr;
  Stats value, reference;
  double ratio = 0;     // value.median / reference.median
  std::string problem;  // non-empty: no ratio (what is missing)
  bool ok() const { return problem.empty(); }
};
// Every figure of the programs that ran.
std::vector<Figure> Resolve(const Results& results, const std::vector<std::string>& ran);

// Formats `v` with a sensible number of digits.
std::string Num(double v);
// A ratio, e.g. "1.04x", "1836x", "0.000095x (1/10548)"; `times` is the sign.
std::string RatioString(double r, const char* times = "x");

}  // namespace quiver::cli::bench
