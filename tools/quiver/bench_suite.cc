// quiver bench: a run's JSON output read back and the catalogue of figures
// (bench_catalogue.cc) resolved against it.
#include "bench_suite.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

namespace quiver::cli::bench {

namespace {

double NanosPer(const std::string& unit) {
  if (unit == "s") return 1e9;
  if (unit == "ms") return 1e6;
  if (unit == "us") return 1e3;
  return 1;
}

}  // namespace

Stats MakeStats(std::vector<double> samples) {
  Stats s;
  s.samples = samples;
  s.repetitions = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  const size_t k = samples.size();
  s.median = k % 2 ? samples[k / 2] : (samples[k / 2 - 1] + samples[k / 2]) / 2;
  return s;
}

std::string CanonicalName(const std::string& run_name) {
  static const std::regex fixed("/(iterations|repeats):[0-9]+");
  return std::regex_replace(run_name, fixed, "");
}

Status Results::Load(const std::string& program, const std::string& json_path) {
  std::ifstream in(json_path);
  if (!in) return Status::IOError("cannot read ", json_path);
  std::stringstream text;
  text << in.rdbuf();
  // Google Benchmark writes NaN (the spread of a counter that is 0 in every
  // repetition) and infinities as bare words, which JSON has not: null.
  static const std::regex not_json(R"((:\s*)-?(NaN|nan|Infinity|inf)\b)");
  nlohmann::json doc =
      nlohmann::json::parse(std::regex_replace(text.str(), not_json, "$1null"), nullptr,
                            /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("benchmarks") ||
      !doc["benchmarks"].is_array()) {
    return Status::Invalid(json_path, ": not a Google Benchmark JSON file");
  }
  auto& runs = runs_[program];
  context_[program] = doc.value("context", nlohmann::json::object());
  for (const auto& b : doc["benchmarks"]) {
    if (!b.is_object() || !b.contains("run_name")) continue;
    Runs& r = runs[CanonicalName(b.value("run_name", ""))];
    if (b.value("error_occurred", false)) {
      r.error = b.value("error_message", "error");
      continue;
    }
    const std::string type = b.value("run_type", "iteration");
    if (type == "iteration") {
      r.iterations.push_back(b);
    } else if (b.value("aggregate_name", "") == "median") {
      r.median = b;
    }
  }
  return Status::OK();
}

const nlohmann::json& Results::Context(const std::string& program) const {
  static const nlohmann::json empty = nlohmann::json::object();
  auto it = context_.find(program);
  return it == context_.end() ? empty : it->second;
}

Result<Stats> Results::Get(const std::string& program, const std::string& bench,
                           const Metric& metric) const {
  auto p = runs_.find(program);
  if (p == runs_.end()) return Status::Invalid("program ", program, " did not run");
  auto it = p->second.find(bench);
  if (it == p->second.end()) return Status::Invalid(bench, " not in the output");
  const Runs& r = it->second;
  if (!r.error.empty()) return Status::Invalid(bench, " failed: ", r.error);
  auto value = [&](const nlohmann::json& run) -> Result<double> {
    switch (metric.kind) {
      case Metric::kTime: {
        const double t = run.value("real_time", 0.0);
        return t * NanosPer(run.value("time_unit", "ns")) / NanosPer(metric.unit);
      }
      case Metric::kBytesPerSecond:
        if (!run.contains("bytes_per_second") || !run["bytes_per_second"].is_number())
          break;
        return run["bytes_per_second"].get<double>() / 1e9;
      case Metric::kCounter:
        if (!run.contains(metric.counter) || !run[metric.counter].is_number()) break;
        return run[metric.counter].get<double>();
    }
    return Status::Invalid(
        bench, " has no ",
        metric.kind == Metric::kCounter ? metric.counter : std::string("bytes/s"));
  };
  std::vector<double> samples;
  for (const auto& run : r.iterations) {
    QUIVER_ASSIGN_OR_RAISE(double v, value(run));
    samples.push_back(v);
  }
  if (samples.empty() && r.median) {  // only aggregates were reported
    QUIVER_ASSIGN_OR_RAISE(double v, value(*r.median));
    samples.push_back(v);
  }
  if (samples.empty()) return Status::Invalid(bench, " has no runs");
  return MakeStats(std::move(samples));
}

std::vector<Figure> Resolve(const Results& results, const std::vector<std::string>& ran) {
  std::vector<Figure> out;
  for (const auto& spec : Figures()) {
    if (std::find(ran.begin(), ran.end(), spec.program) == ran.end()) continue;
    Figure f;
    f.spec = &spec;
    auto v = results.Get(spec.program, spec.bench, spec.metric);
    auto r = results.Get(spec.program, spec.ref_bench, spec.ref_metric);
    if (!v.ok()) {
      f.problem = v.status().message();
    } else if (!r.ok()) {
      f.value = *v;
      f.problem = "reference: " + r.status().message();
    } else {
      f.value = *v;
      f.reference = *r;
      if (f.reference.median == 0) {
        f.problem = "reference " + spec.ref_bench + " is 0";
      } else {
        f.ratio = f.value.median / f.reference.median;
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::string RatioString(double r, const char* times) {
  char buf[64];
  if (r > 0 && r < 0.01) {  // "0.000095x (1/10548)" reads better than 9.5e-05
    std::snprintf(buf, sizeof(buf), "%.2g%s (1/%.0f)", r, times, 1 / r);
  } else if (r >= 100) {
    std::snprintf(buf, sizeof(buf), "%.0f%s", r, times);
  } else if (r >= 10) {
    std::snprintf(buf, sizeof(buf), "%.1f%s", r, times);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g%s", r, times);
  }
  return buf;
}

std::string Num(double v) {
  char buf[64];
  const double a = std::fabs(v);
  if (a == 0) return "0";
  if (a >= 1000)
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  else if (a >= 100)
    std::snprintf(buf, sizeof(buf), "%.1f", v);
  else if (a >= 10)
    std::snprintf(buf, sizeof(buf), "%.2f", v);
  else if (a >= 0.01)
    std::snprintf(buf, sizeof(buf), "%.3f", v);
  else
    std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

}  // namespace quiver::cli::bench
