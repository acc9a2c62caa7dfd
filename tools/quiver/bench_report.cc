// quiver bench: results.json, report.md and the gnuplot plots of a run.
#include "bench_report.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

extern char** environ;

namespace quiver::cli::bench {

namespace {

using nlohmann::json;

// --- Small helpers -------------------------------------------------------------

// Byte counts are whole numbers; everything else gets Num's digits.
std::string Value(double v, const std::string& unit) {
  if (unit == "B") return std::to_string(static_cast<int64_t>(std::llround(v)));
  return Num(v);
}

std::string WithUnit(double v, const std::string& unit) {
  return Value(v, unit) + " " + unit;
}

std::string Spread(const Stats& s, const std::string& unit) {
  if (s.repetitions <= 1 || s.min == s.max) return WithUnit(s.median, unit);
  return WithUnit(s.median, unit) + " [" + Value(s.min, unit) + "–" + Value(s.max, unit) +
         "]";
}

std::string RatioText(double r) { return RatioString(r, "×"); }

// The value in milliseconds, for a time unit; NaN otherwise.
double ToMs(double v, const std::string& unit) {
  if (unit == "s") return v * 1e3;
  if (unit == "ms") return v;
  if (unit == "us") return v / 1e3;
  if (unit == "ns") return v / 1e6;
  return NAN;
}

std::string ReadFirstLine(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      auto colon = line.find(':');
      if (colon == std::string::npos) return "";
      auto v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "";
}

json MachineJson(const Results& results, const RunInfo& info) {
  json m;
  m["cpu"] = ReadFirstLine("/proc/cpuinfo", "model name");
  m["cpus"] = sysconf(_SC_NPROCESSORS_ONLN);
  m["memory"] = ReadFirstLine("/proc/meminfo", "MemTotal");
  struct utsname u;
  if (uname(&u) == 0) {
    m["kernel"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
    m["host"] = u.nodename;
  }
  for (const auto& p : info.programs) {
    const json& c = results.Context(p.name);
    if (c.contains("caches")) {
      m["caches"] = c["caches"];
      m["mhz_per_cpu"] = c.value("mhz_per_cpu", 0);
      m["benchmark_library_build"] = c.value("library_build_type", "");
      if (c.contains("load_avg")) m["load_avg"] = c["load_avg"];
      break;
    }
  }
  return m;
}

std::string MachineText(const json& m) {
  std::ostringstream o;
  o << m.value("cpu", std::string("unknown CPU")) << ", " << m.value("cpus", 0)
    << " CPUs";
  if (m.contains("caches")) {
    for (const auto& c : m["caches"]) {
      if (c.value("type", "") == "Instruction") continue;
      o << ", L" << c.value("level", 0) << " " << c.value("size", 0) / 1024 << " KiB";
    }
  }
  o << ", " << m.value("memory", std::string("?")) << " RAM, "
    << m.value("kernel", std::string("?"));
  if (m.contains("load_avg") && m["load_avg"].is_array() && !m["load_avg"].empty()) {
    o << "; load average " << Num(m["load_avg"][0].get<double>())
      << " when the first program started (other work on the machine shows here)";
  }
  return o.str();
}

json StatsJson(const Stats& s) {
  json j;
  j["repetitions"] = s.repetitions;
  j["min"] = s.min;
  j["median"] = s.median;
  j["max"] = s.max;
  j["samples"] = s.samples;
  return j;
}

std::string MetricName(const Metric& m) {
  switch (m.kind) {
    case Metric::kTime:
      return "real time per iteration";
    case Metric::kBytesPerSecond:
      return "bytes per second";
    case Metric::kCounter:
      return "counter " + m.counter;
  }
  return "";
}

// --- Plots -----------------------------------------------------------------------

struct Plotter {
  std::string gnuplot;
  std::string out_dir;
  std::string terminal;
  ReportOutcome* outcome;

  std::string Dir() const { return out_dir + "/plots"; }

  // Writes plots/<name>.dat and plots/<name>.gp, runs gnuplot in plots/ and
  // checks that ../<name>.png is a PNG.
  void Make(const std::string& name, const std::string& data, const std::string& script) {
    const std::string dat = Dir() + "/" + name + ".dat", gp = Dir() + "/" + name + ".gp";
    const std::string png = out_dir + "/" + name + ".png";
    {
      std::ofstream d(dat), g(gp);
      d << data;
      g << "# Run again with: cd " << Dir() << " && gnuplot " << name << ".gp\n"
        << "set terminal " << terminal << "\n"
        << "set output '../" << name << ".png'\n"
        << "set datafile missing 'NaN'\n"
        << script;
      if (!d || !g) {
        outcome->problems.push_back("plot " + name + ": cannot write " + Dir());
        return;
      }
    }
    std::remove(png.c_str());
    const std::string log = Dir() + "/" + name + ".log";
    const std::string cd = "cd '" + Dir() + "'";
    std::vector<std::string> args = {gnuplot, "-e", cd, gp};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, gnuplot.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    int status = 0;
    if (rc == 0) waitpid(pid, &status, 0);
    std::ifstream in(png, std::ios::binary);
    char sig[8] = {};
    in.read(sig, 8);
    static const char kPng[8] = {'\x89', 'P', 'N', 'G', '\r', '\n', '\x1a', '\n'};
    if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !in ||
        std::memcmp(sig, kPng, 8) != 0) {
      outcome->problems.push_back("plot " + name + ": gnuplot failed (see plots/" + name +
                                  ".log)");
      return;
    }
    outcome->plots.push_back(name + ".png");
  }
};

// "med min max" for one benchmark, NaN when missing.
std::string Triple(const Results& r, const std::string& program, const std::string& bench,
                   const Metric& m, double scale = 1) {
  auto s = r.Get(program, bench, m);
  if (!s.ok()) return "NaN NaN NaN";
  std::ostringstream o;
  o << s->median * scale << " " << s->min * scale << " " << s->max * scale;
  return o.str();
}

void StridePlot(Plotter& p, const Results& r) {
  std::ostringstream d;
  d << "# stride_bytes, then median min max GB/s for: read local, read remote, "
       "read heap, write local, write remote, write heap\n";
  for (int stride = 8; stride <= 4096; stride *= 2) {
    d << stride;
    for (const char* op : {"Read", "Write"}) {
      for (int target : {0, 1, 2}) {
        d << " "
          << Triple(r, "memory",
                    std::string("BM_Strided") + op + "/target:" + std::to_string(target) +
                        "/stride:" + std::to_string(stride) + "/real_time",
                    BytesPerSecond());
      }
    }
    d << "\n";
  }
  std::string s =
      "set multiplot layout 1,2 title 'Figure 5.3 on this machine: strided access to "
      "8-byte elements over 512 MiB (median, bars min-max)'\n"
      "set logscale x 2\nset logscale y\nset grid\n"
      "set xlabel 'stride (bytes)'\nset ylabel 'throughput of the elements accessed "
      "(GB/s)'\n"
      "set key bottom left\nset xrange [6:5500]\n";
  for (int op = 0; op < 2; ++op) {
    const int c = 2 + op * 9;
    s += std::string("set title '") +
         (op == 0 ? "(a) strided read" : "(b) strided write") +
         "'\nplot 'stride.dat' using 1:" + std::to_string(c) + ":" +
         std::to_string(c + 1) + ":" + std::to_string(c + 2) +
         " with yerrorlines lw 2 title 'local region', "
         "'' using 1:" +
         std::to_string(c + 3) + ":" + std::to_string(c + 4) + ":" +
         std::to_string(c + 5) +
         " with yerrorlines lw 2 title 'remote region (node 1)', "
         "'' using 1:" +
         std::to_string(c + 6) + ":" + std::to_string(c + 7) + ":" +
         std::to_string(c + 8) + " with yerrorlines lw 1 dt 2 title 'private heap'\n";
  }
  s += "unset multiplot\n";
  p.Make("stride", d.str(), s);
}

void BandwidthPlot(Plotter& p, const Results& r) {
  std::ostringstream d;
  d << "# element width, then GB/s (median) for read and write: local 1t, local 2t, "
       "remote 1t, remote 2t, heap 1t, heap 2t\n";
  const char* types[] = {"uint8_t", "uint16_t", "uint32_t", "uint64_t"};
  const int bits[] = {8, 16, 32, 64};
  for (int i = 0; i < 4; ++i) {
    d << "\"" << bits[i] << "-bit\"";
    for (const char* op : {"Read", "Write"}) {
      for (int target : {0, 1, 2}) {
        for (int threads : {1, 2}) {
          auto s = r.Get("memory",
                         std::string("BM_") + op + "<" + types[i] +
                             ">/target:" + std::to_string(target) +
                             "/real_time/threads:" + std::to_string(threads),
                         BytesPerSecond());
          d << " " << (s.ok() ? std::to_string(s->median) : std::string("NaN"));
        }
      }
    }
    d << "\n";
  }
  std::string s =
      "set multiplot layout 1,2 title 'Figure 5.2 on this machine: bandwidth over 512 "
      "MiB by element width, threads and memory (median of the repetitions)'\n"
      "set style data histograms\nset style histogram clustered gap 1\n"
      "set style fill solid 0.85 border -1\nset grid ytics\n"
      "set xlabel 'element width'\nset ylabel 'bandwidth (GB/s)'\nset yrange [0:*]\n"
      "set key below horizontal maxcols 3 font ',9'\n";
  const char* names[] = {"local, 1 thread",   "local, 2 threads", "remote, 1 thread",
                         "remote, 2 threads", "heap, 1 thread",   "heap, 2 threads"};
  for (int op = 0; op < 2; ++op) {
    s += std::string("set title '") + (op == 0 ? "(a) read" : "(b) write") + "'\nplot ";
    for (int k = 0; k < 6; ++k) {
      const int col = 2 + op * 6 + k;
      s += std::string(k == 0 ? "'bandwidth.dat'" : ", ''") + " using " +
           std::to_string(col) + (k == 0 ? ":xtic(1)" : "") + " title '" + names[k] + "'";
    }
    s += ", 5.3 with lines lw 2 dt 2 lc rgb 'black' title 'ThymesisFlow, about 5.3 GB/s "
         "(thesis)'\n";
  }
  s += "unset multiplot\n";
  p.Make("bandwidth", d.str(), s);
}

void PublishPlot(Plotter& p, const Results& r) {
  std::ostringstream d;
  d << "# table MiB, then median min max ms: Publish, SendTableFull\n";
  for (int64_t size :
       {int64_t{1} << 20, int64_t{1} << 24, int64_t{1} << 28, int64_t{1} << 30}) {
    const std::string s = std::to_string(size);
    d << size / (1 << 20) << " "
      << Triple(r, "cluster", "BM_Publish/" + s + "/manual_time", Time("ms")) << " "
      << Triple(r, "cluster", "BM_SendTableFull/" + s + "/manual_time", Time("ms"))
      << "\n";
  }
  p.Make(
      "publish", d.str(),
      "set title 'Figure 5.1 on this machine: making a uint64 table readable on the "
      "other node (median, bars min-max)'\n"
      "set logscale xy\nset grid\nset xlabel 'table size (MiB)'\n"
      "set ylabel 'time until readable on the other node (ms)'\n"
      "set xrange [0.7:1500]\nset key top left\n"
      "plot 'publish.dat' using 1:5:6:7 with yerrorlines lw 2 pt 7 title "
      "'SendTableFull (Arrow IPC copy of the data)', "
      "'' using 1:2:3:4 with yerrorlines lw 2 pt 5 title 'Publish (descriptor only)'\n");
}

void InitPlot(Plotter& p, const Results& r) {
  // Quiver's malloc includes the pre-write flush (the thesis's two steps).
  const char* counters[] = {"malloc_ms", "write_ms", "flush_seal_ms", "serialise_ms",
                            "send_ms"};
  std::ostringstream d;
  d << "# bar, then ms: malloc + pre-write flush, write, writer flush + seal, "
       "serialise, send, total\n";
  for (int remote : {0, 1}) {
    d << "\"Quiver, " << (remote ? "remote" : "local") << "\"";
    double total = 0;
    for (const char* c : counters) {
      auto s = r.Get("cluster",
                     "BM_Init1GiB/remote:" + std::to_string(remote) + "/manual_time",
                     Counter(c, "ms"));
      d << " " << (s.ok() ? std::to_string(s->median) : std::string("NaN"));
      if (s.ok()) total += s->median;
    }
    d << " " << total << "\n";
  }
  // The thesis's Table 5.5, from the catalogue's quotes.
  for (const char* where : {"local", "remote"}) {
    d << "\"thesis, " << where << " (POWER9)\"";
    double total = 0;
    for (const char* c : counters) {
      double v = 0;  // "not necessary" is drawn as nothing
      for (const auto& f : Figures()) {
        if (f.id == std::string("table-5.5/") + where + "/" + c && f.published) {
          v = f.published->value;
        }
      }
      d << " " << v;
      total += v;
    }
    d << " " << total << "\n";
  }
  p.Make("init", d.str(),
         "set title 'Table 5.5: initialising a 1 GiB uint64 table, step by step "
         "(Quiver: median of the repetitions)'\n"
         "set style data histograms\nset style histogram rowstacked\n"
         "set style fill solid 0.85 border -1\nset boxwidth 0.6\nset grid ytics\n"
         "set ylabel 'time (ms)'\nset yrange [0:*]\nset key outside right\n"
         "set offsets 0,0,graph 0.08,0\n"
         "plot 'init.dat' using 2:xtic(1) title 'malloc + pre-write flush (every "
         "node)', '' using 3 title 'write 1 GiB', '' using 4 title 'writer flush + "
         "seal', '' using 5 title 'serialise descriptor', '' using 6 title 'send "
         "descriptor', '' using 0:7:(sprintf('%.0f ms', $7)) with labels offset 0,0.8 "
         "notitle\n");
}

// Quiver beside every published time, log scale.
void PublishedPlot(Plotter& p, const std::vector<Figure>& figures) {
  const char* ids[][2] = {{"table-5.2/touched/remote", "flush 1 GiB, touched, remote"},
                          {"table-5.2/untouched/local", "flush 1 GiB, empty, local"},
                          {"table-5.3/serialise", "serialise descriptor"},
                          {"table-5.3/deserialise", "deserialise descriptor"},
                          {"table-5.4/local", "malloc, local"},
                          {"table-5.4/remote", "malloc, remote"},
                          {"ping/peer-tcp", "ping (RPC)"},
                          {"table-5.5/local/total", "init 1 GiB, local"},
                          {"table-5.5/remote/total", "init 1 GiB, remote"}};
  std::ostringstream d;
  d << "# operation, published ms, Quiver median ms\n";
  int rows = 0;
  for (const auto& [id, label] : ids) {
    for (const auto& f : figures) {
      if (f.spec->id != id || !f.spec->published || f.value.repetitions == 0) continue;
      const double q = ToMs(f.value.median, f.spec->metric.unit);
      const double pub = ToMs(f.spec->published->value, f.spec->metric.unit);
      if (std::isnan(q) || std::isnan(pub)) continue;
      d << "\"" << label << "\" " << pub << " " << q << "\n";
      ++rows;
    }
  }
  if (rows == 0) return;
  p.Make("published", d.str(),
         "set title 'Quiver on this machine beside the published figures (POWER9 + "
         "ThymesisFlow)'\n"
         "set style data histograms\nset style histogram clustered gap 1\n"
         "set style fill solid 0.85 border -1\nset logscale y\nset grid ytics\n"
         "set ylabel 'time (ms, log scale)'\nset xtics rotate by -25 font ',9'\n"
         "set key top right\nset bmargin 7\n"
         "plot 'published.dat' using 2:xtic(1) title 'published (Groet thesis)', '' "
         "using 3 title 'Quiver (this run)'\n");
}

// --- report.md -------------------------------------------------------------------

std::string EscapeCell(const std::string& s) {  // for a markdown table cell
  std::string o;
  for (char c : s) {
    if (c == '|') {
      o += "\\|";
    } else if (c == '<') {
      o += "&lt;";
    } else if (c == '>') {
      o += "&gt;";
    } else {
      o += c;
    }
  }
  return o;
}

void SectionTable(std::ostream& o, const std::vector<const Figure*>& figs) {
  bool any_pub = false;
  for (const auto* f : figs) any_pub |= f->spec->published.has_value();
  o << "| figure |" << (any_pub ? " published |" : "")
    << " Quiver, median [min–max] | reference (same run) | reference, median | ratio |\n";
  o << "|---|" << (any_pub ? "---|" : "") << "---|---|---|---|\n";
  for (const auto* f : figs) {
    const auto& s = *f->spec;
    o << "| " << EscapeCell(s.label) << " |";
    if (any_pub) o << " " << (s.published ? EscapeCell(s.published->quote) : "") << " |";
    if (!f->ok()) {
      o << " " << (f->value.repetitions ? Spread(f->value, s.metric.unit) : "—") << " | "
        << EscapeCell(s.ref_label) << " | — | **missing: " << EscapeCell(f->problem)
        << "** |\n";
      continue;
    }
    o << " " << Spread(f->value, s.metric.unit) << " | " << EscapeCell(s.ref_label)
      << " | " << WithUnit(f->reference.median, s.ref_metric.unit) << " | "
      << RatioText(f->ratio) << " |\n";
  }
}

std::string Plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

void WriteReportMd(const RunInfo& info, const json& machine,
                   const std::vector<Figure>& figures, const ReportOutcome& outcome) {
  std::ofstream o(info.out_dir + "/report.md");
  size_t with_ratio = 0;
  for (const auto& f : figures) with_ratio += f.ok() ? 1 : 0;
  std::set<std::string> ran;
  for (const auto& p : info.programs) {
    if (p.error.empty()) ran.insert(p.name);
  }
  o << "# Quiver benchmark report\n\n";
  o << "`" << info.command << "`, started " << info.started << ", "
    << (info.quick ? "quick suite" : "full suite") << ", " << info.repetitions
    << " repetitions per benchmark, " << Num(info.wall_seconds) << " s of running.\n\n";
  o << "**This machine:** " << MachineText(machine) << ".\n\n";
  o << "Every Quiver figure below is the median of its repetitions, with the smallest "
       "and largest in brackets, followed by its **reference**: another benchmark of "
       "the same run that bounds it (memcpy or the private heap for bandwidth, the "
       "bare flush loop for flushes, SendTableFull for publishing, local memory for "
       "remote, a raw socket round trip for RPCs). **ratio** = Quiver's median / the "
       "reference's median: for times, below 1 is faster than the reference; for "
       "GB/s, above 1 is faster. Published numbers were measured on other hardware "
       "(named in each section); compare ratios and orders of magnitude, not "
       "absolute values.\n\n";
  if (info.quick) {
    o << "The quick suite runs each benchmark for a shorter minimum time, 1 iteration "
         "where a benchmark has a fixed count, and the IPC table with 2^24 rows "
         "instead of 150 * 2^20: expect more spread than in the full suite "
         "(`quiver bench`).\n\n";
  }
  o << "| program | exit | seconds | raw output |\n|---|---|---|---|\n";
  for (const auto& p : info.programs) {
    o << "| " << p.name << " | "
      << (p.error.empty() ? std::to_string(p.exit_code)
                          : "**" + EscapeCell(p.error) + "**")
      << " | " << Num(p.seconds) << " | [" << p.json << "](" << p.json << "), [" << p.log
      << "](" << p.log << ") |\n";
  }
  o << "\n"
    << Plural(figures.size(), "figure") << ", " << with_ratio
    << " with their reference ratio";
  if (!outcome.problems.empty()) {
    o << "; problems:\n\n";
    for (const auto& p : outcome.problems) o << "- " << p << "\n";
    o << "\n";
  } else {
    o << ".\n\n";
  }
  if (!outcome.plots.empty()) {
    o << "Plots: ";
    for (size_t i = 0; i < outcome.plots.size(); ++i) {
      o << (i ? ", " : "") << "[" << outcome.plots[i] << "](" << outcome.plots[i] << ")";
    }
    o << " (data and gnuplot scripts in `plots/`).\n\n";
  }
  auto has_plot = [&](const std::string& name) {
    for (const auto& p : outcome.plots) {
      if (p == name) return true;
    }
    return false;
  };
  const std::map<std::string, std::vector<std::pair<std::string, std::string>>> plots = {
      {"table-5.5",
       {{"init.png", "Table 5.5: initialisation, stacked by step, Quiver and thesis"},
        {"published.png", "Quiver beside the published times"}}},
      {"figure-5.1", {{"publish.png", "Figure 5.1: publish vs SendTableFull, log-log"}}},
      {"figure-5.2", {{"bandwidth.png", "Figure 5.2: bandwidth by width and threads"}}},
      {"figure-5.3", {{"stride.png", "Figure 5.3: bandwidth vs stride"}}},
  };
  std::set<std::string> described;
  for (const auto& sec : Sections()) {
    o << "## " << sec.title << "\n\n";
    if (!sec.source.empty()) {
      // The machines in full the first time, by a short name afterwards.
      const bool first = described.insert(sec.hardware).second;
      o << "**Published** — " << sec.source << "; measured on "
        << (first ? sec.hardware : ShortHardware(sec.hardware) + ", as above")
        << ":\n\n> " << sec.published << "\n\n";
    }
    if (!sec.missing.empty()) {
      o << "**Quiver:** no figure. " << sec.missing << "\n\n";
      continue;
    }
    o << "**Quiver** — " << sec.method << "\n\n";
    std::vector<const Figure*> figs;
    std::set<std::string> programs;
    for (const auto& f : Figures()) {
      if (f.section == sec.id) programs.insert(f.program);
    }
    for (const auto& f : figures) {
      if (f.spec->section == sec.id) figs.push_back(&f);
    }
    if (figs.empty()) {
      o << "Not measured in this run: run `quiver bench";
      for (const auto& p : programs) o << " " << p;
      o << "`.\n\n";
      continue;
    }
    SectionTable(o, figs);
    o << "\n";
    std::vector<std::string> not_run;
    for (const auto& p : programs) {
      if (!ran.count(p)) not_run.push_back(p);
    }
    if (!not_run.empty()) {
      o << "More figures of this section come from `quiver bench";
      for (const auto& p : not_run) o << " " << p;
      o << "`, not run here.\n\n";
    }
    auto it = plots.find(sec.id);
    if (it != plots.end()) {
      for (const auto& [png, alt] : it->second) {
        if (has_plot(png)) o << "![" << alt << "](" << png << ")\n\n";
      }
    }
  }
}

}  // namespace

std::string FindGnuplot() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/gnuplot";
    if (end > start && access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

ReportOutcome WriteOutputs(const RunInfo& info, const Results& results,
                           const std::vector<Figure>& figures) {
  ReportOutcome outcome;
  for (const auto& p : info.programs) {
    if (!p.error.empty()) outcome.problems.push_back(p.name + ": " + p.error);
  }
  for (const auto& f : figures) {
    if (!f.ok()) outcome.problems.push_back(f.spec->id + ": " + f.problem);
  }
  std::set<std::string> ran;
  for (const auto& p : info.programs) {
    if (results.Has(p.name)) ran.insert(p.name);
  }

  // Plots.
  Plotter plotter{FindGnuplot(), info.out_dir,
                  "pngcairo size 1200,650 enhanced font 'sans,10'", &outcome};
  if (plotter.gnuplot.empty()) {
    outcome.problems.push_back(
        "no plots: gnuplot is not installed (scripts/setup.sh installs gnuplot-nox)");
  } else {
    std::string mkdir = info.out_dir + "/plots";
    ::mkdir(mkdir.c_str(), 0755);
    if (ran.count("memory")) {
      StridePlot(plotter, results);
      BandwidthPlot(plotter, results);
    }
    if (ran.count("cluster")) {
      PublishPlot(plotter, results);
      InitPlot(plotter, results);
    }
    PublishedPlot(plotter, figures);
  }

  const json machine = MachineJson(results, info);
  WriteReportMd(info, machine, figures, outcome);

  // results.json.
  json doc;
  doc["tool"] = "quiver bench";
  doc["format_version"] = 1;
  doc["command"] = info.command;
  doc["mode"] = info.quick ? "quick" : "full";
  doc["repetitions"] = info.repetitions;
  doc["started"] = info.started;
  doc["wall_seconds"] = info.wall_seconds;
  doc["machine"] = machine;
  doc["ratio_definition"] =
      "median of the figure / median of its reference, both from this run; for "
      "times below 1 is faster than the reference, for GB/s above 1 is faster";
  json programs = json::array();
  for (const auto& p : info.programs) {
    programs.push_back({{"name", p.name},
                        {"binary", p.binary},
                        {"exit_code", p.exit_code},
                        {"seconds", p.seconds},
                        {"json", p.json},
                        {"log", p.log},
                        {"error", p.error.empty() ? json(nullptr) : json(p.error)}});
  }
  doc["programs"] = programs;
  json sections = json::array();
  for (const auto& s : Sections()) {
    json ids = json::array();
    for (const auto& f : figures) {
      if (f.spec->section == s.id) ids.push_back(f.spec->id);
    }
    sections.push_back(
        {{"id", s.id},
         {"title", s.title},
         {"source", s.source},
         {"hardware", s.hardware},
         {"published", s.published},
         {"quiver_method", s.method},
         {"not_measurable", s.missing.empty() ? json(nullptr) : json(s.missing)},
         {"figures", ids}});
  }
  doc["sections"] = sections;
  json figs = json::array();
  for (const auto& f : figures) {
    const auto& s = *f.spec;
    json j = StatsJson(f.value);
    j["id"] = s.id;
    j["section"] = s.section;
    j["label"] = s.label;
    j["program"] = s.program;
    j["benchmark"] = s.bench;
    j["metric"] = MetricName(s.metric);
    j["unit"] = s.metric.unit;
    j["higher_is_better"] = s.metric.higher_is_better();
    json ref = StatsJson(f.reference);
    ref["label"] = s.ref_label;
    ref["benchmark"] = s.ref_bench;
    ref["metric"] = MetricName(s.ref_metric);
    ref["unit"] = s.ref_metric.unit;
    j["reference"] = ref;
    j["ratio"] = f.ok() ? json(f.ratio) : json(nullptr);
    j["problem"] = f.ok() ? json(nullptr) : json(f.problem);
    if (s.published) {
      j["published"] = {{"value", s.published->value},
                        {"unit", s.metric.unit},
                        {"quote", s.published->quote},
                        {"source", s.published->source},
                        {"hardware", s.published->hardware}};
    } else {
      j["published"] = nullptr;
    }
    figs.push_back(j);
  }
  doc["figures"] = figs;
  doc["plots"] = outcome.plots;
  doc["problems"] = outcome.problems;
  std::ofstream out(info.out_dir + "/results.json");
  out << doc.dump(1) << "\n";
  if (!out) outcome.problems.push_back("cannot write results.json");
  return outcome;
}

}  // namespace quiver::cli::bench
