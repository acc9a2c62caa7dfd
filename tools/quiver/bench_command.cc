// quiver bench: runs the benchmark programs of bench/ (found next to this
// binary, <build>/bench/<name>_bench) with Google Benchmark's JSON output and
// repetitions, shows a progress bar on stderr, and writes results.json,
// report.md and PNG plots (gnuplot) into the output directory.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>

#include "bench_report.h"
#include "bench_suite.h"
#include "cli_parse.h"
#include "commands.h"
#include "control/local_cluster.h"

extern char** environ;

namespace quiver::cli {

namespace {

using Clock = std::chrono::steady_clock;
using bench::ProgramRun;
using bench::ProgramSpec;

std::string NowUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string StripAnsi(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !(s[i] >= '@' && s[i] <= '~')) ++i;
      continue;
    }
    o += s[i];
  }
  return o;
}

// --- The progress bar ------------------------------------------------------------

class Progress {
 public:
  Progress(std::vector<double> weights) : weights_(std::move(weights)) {
    tty_ = isatty(2) != 0;
    for (double w : weights_) total_weight_ += w;
    start_ = Clock::now();
  }
  void StartProgram(size_t index, const std::string& name, size_t benchmarks) {
    index_ = index;
    name_ = name;
    total_ = benchmarks;
    done_ = 0;
    current_.clear();
    if (!tty_) {
      std::fprintf(stderr, "quiver bench: [%zu/%zu] %s: %zu benchmarks\n", index + 1,
                   weights_.size(), name.c_str(), benchmarks);
    }
    Draw(true);
  }
  void Benchmark(size_t done, const std::string& current) {
    done_ = done;
    current_ = current;
    Draw(false);
  }
  void Tick() { Draw(false); }
  void EndProgram(double seconds, const std::string& error) {
    done_weight_ += weights_[index_];
    if (!tty_) {
      std::fprintf(stderr, "quiver bench: [%zu/%zu] %s: %s in %.1f s\n", index_ + 1,
                   weights_.size(), name_.c_str(),
                   error.empty() ? "done" : ("FAILED (" + error + ")").c_str(), seconds);
    } else if (!error.empty()) {
      std::fprintf(stderr, "\r\033[K%s: %s\n", name_.c_str(), error.c_str());
    }
  }
  void Finish() {
    if (tty_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  void Draw(bool force) {
    if (!tty_) return;
    auto now = Clock::now();
    if (!force && now - last_draw_ < std::chrono::milliseconds(200)) return;
    last_draw_ = now;
    double frac = done_weight_;
    if (total_ > 0) frac += weights_[index_] * static_cast<double>(done_) / total_;
    frac = total_weight_ > 0 ? std::min(1.0, frac / total_weight_) : 0;
    struct winsize ws {};
    int cols = 100;
    if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 40) cols = ws.ws_col;
    constexpr int kBar = 24;
    const int filled = static_cast<int>(frac * kBar + 0.5);
    const int elapsed = static_cast<int>(Seconds(now - start_));
    char head[160];
    std::snprintf(head, sizeof(head), "[%s%s] %3d%%  %d:%02d  %s %zu/%zu ",
                  std::string(filled, '#').c_str(),
                  std::string(kBar - filled, '-').c_str(), static_cast<int>(frac * 100),
                  elapsed / 60, elapsed % 60, name_.c_str(), done_, total_);
    std::string line = head + current_;
    if (static_cast<int>(line.size()) > cols - 1) line.resize(cols - 1);
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
  }

  std::vector<double> weights_;
  double total_weight_ = 0, done_weight_ = 0;
  bool tty_ = false;
  size_t index_ = 0, total_ = 0, done_ = 0;
  std::string name_, current_;
  Clock::time_point start_, last_draw_{};
};

// --- Running one program -----------------------------------------------------------

struct Spawned {
  pid_t pid = -1;
  int out = -1;  // stdout and stderr of the child
};

// Starts argv with `env`, in its own process group (so that a timeout or ^C
// reaches the daemons it starts too), stdout+stderr into a pipe.
Result<Spawned> Spawn(const std::vector<std::string>& args,
                      const std::vector<std::string>& env) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::FromErrno(errno, "pipe");
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  Spawned s;
  int rc = posix_spawn(&s.pid, args[0].c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return Status::FromErrno(rc, "starting " + args[0]);
  }
  s.out = fds[0];
  return s;
}

// Runs a program to completion; calls on_line for every line of its output.
// Returns its exit code (128 + signal), or an error on timeout or ^C.
template <typename OnLine, typename OnTick>
Result<int> RunProgram(const std::vector<std::string>& args,
                       const std::vector<std::string>& env, double timeout_s,
                       OnLine on_line, OnTick on_tick) {
  QUIVER_ASSIGN_OR_RAISE(Spawned s, Spawn(args, env));
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  std::string pending;
  std::string why;
  char buf[8192];
  for (;;) {
    if (Interrupted()) {
      why = "interrupted";
      break;
    }
    if (Clock::now() > deadline) {
      why = "timed out after " + std::to_string(static_cast<int>(timeout_s)) + " s";
      break;
    }
    struct pollfd p = {s.out, POLLIN, 0};
    int n = poll(&p, 1, 200);
    if (n < 0 && errno != EINTR) break;
    if (n > 0) {
      ssize_t got = read(s.out, buf, sizeof(buf));
      if (got <= 0) break;  // EOF: the program and its children closed the pipe
      pending.append(buf, static_cast<size_t>(got));
      size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        on_line(pending.substr(0, nl + 1));
        pending.erase(0, nl + 1);
      }
    }
    on_tick();
  }
  if (!pending.empty()) on_line(pending);
  if (!why.empty()) {
    kill(-s.pid, SIGTERM);
    for (int i = 0; i < 100 && waitpid(s.pid, nullptr, WNOHANG) == 0; ++i) usleep(50000);
    kill(-s.pid, SIGKILL);
    waitpid(s.pid, nullptr, 0);
    close(s.out);
    return Status::IOError(why);
  }
  close(s.out);
  int status = 0;
  while (waitpid(s.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The benchmark instances a program would run with `filter_args`.
Result<std::vector<std::string>> ListBenchmarks(const std::string& binary,
                                                const std::vector<std::string>& env,
                                                const std::vector<std::string>& extra) {
  std::vector<std::string> args = {binary, "--benchmark_list_tests=true"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<std::string> names;
  QUIVER_ASSIGN_OR_RAISE(
      int code, RunProgram(
                    args, env, 120,
                    [&](const std::string& line) {
                      std::string l = StripAnsi(line);
                      while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) {
                        l.pop_back();
                      }
                      if (l.rfind("BM_", 0) == 0) names.push_back(l);
                    },
                    [] {}));
  if (code != 0) return Status::IOError(binary, " --benchmark_list_tests exited ", code);
  return names;
}

// The environment of a program: ours, with the quick switches set (quick)
// or removed (full).
std::vector<std::string> ProgramEnv(const ProgramSpec& p, bool quick) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string v = *e;
    if (v.rfind("QUIVER_BENCH_QUICK=", 0) == 0 || v.rfind("QUIVER_BENCH_ROWS=", 0) == 0) {
      continue;
    }
    env.push_back(v);
  }
  if (quick) {
    for (const auto& [k, v] : p.quick_env) env.push_back(k + "=" + v);
  }
  return env;
}

// The first word of a console line, if it names one of `names` (or one of
// their aggregates, "<name>_median").
std::string MatchBenchmark(const std::string& raw, const std::set<std::string>& names) {
  std::string l = StripAnsi(raw);
  size_t end = l.find_first_of(" \t\r\n");
  std::string word = l.substr(0, end);
  if (names.count(word)) return word;
  size_t us = word.rfind('_');
  if (us != std::string::npos && word.find('/', us) == std::string::npos &&
      names.count(word.substr(0, us))) {
    return word.substr(0, us);
  }
  return "";
}

int ListCommand() {
  std::printf("benchmark programs (quiver bench NAME...):\n");
  for (const auto& p : bench::Programs()) {
    std::printf("  %-11s %s\n", p.name.c_str(), p.description.c_str());
  }
  std::printf("\nreport sections:\n");
  for (const auto& s : bench::Sections()) {
    std::set<std::string> programs;
    for (const auto& f : bench::Figures()) {
      if (f.section == s.id) programs.insert(f.program);
    }
    std::string from;
    for (const auto& p : programs) from += (from.empty() ? "" : ", ") + p;
    std::printf("  %-68s %s\n", s.title.c_str(),
                s.missing.empty() ? from.c_str() : "(not measurable yet)");
  }
  return kExitOk;
}

}  // namespace

int BenchCommand(const Args& in) {
  CommandLine cl("bench", "[all|NAME...] [OPTIONS]",
                 "Run the benchmark suite, write DIR/results.json, DIR/report.md "
                 "(beside the published figures) and plots.");
  bool quick = false, list = false;
  std::string out_dir = "bench-results", reps_text;
  cl.Flag("--quick", &quick, "fewer, shorter repetitions");
  cl.Flag("--list", &list, "list the benchmarks and what they measure");
  cl.Text("--out", &out_dir, "where the results go")->type_name("DIR");
  cl.Text("--repetitions", &reps_text, "repetitions of each (1-100; 5, --quick 3)")
      ->type_name("N");
  Args args;
  cl.Positionals("NAME", &args, "the programs to run (all: every one)");
  if (auto code = cl.Parse(in)) return *code;
  if (list) return ListCommand();
  int repetitions = quick ? 3 : 5;
  if (!reps_text.empty()) {
    char* end = nullptr;
    long r = std::strtol(reps_text.c_str(), &end, 10);
    if (*end != 0 || r < 1 || r > 100) {
      return Fail("bench", Status::Invalid("--repetitions must be 1 to 100, not '",
                                           reps_text, "'"));
    }
    repetitions = static_cast<int>(r);
  }

  // Which programs, in the catalogue's order.
  std::set<std::string> wanted;
  for (const auto& a : args) {
    if (a == "all") {
      for (const auto& p : bench::Programs()) wanted.insert(p.name);
      continue;
    }
    const ProgramSpec* p = bench::FindProgram(a);
    if (p == nullptr) {
      std::string known = "all";
      for (const auto& q : bench::Programs()) known += ", " + q.name;
      return Fail("bench",
                  Status::Invalid("unknown benchmark '", a, "' (known: ", known, ")"));
    }
    wanted.insert(p->name);
  }
  if (wanted.empty()) {
    for (const auto& p : bench::Programs()) wanted.insert(p.name);
  }
  std::vector<const ProgramSpec*> programs;
  for (const auto& p : bench::Programs()) {
    if (wanted.count(p.name)) programs.push_back(&p);
  }

  // The binaries, before anything runs.
  const char* dir_env = std::getenv("QUIVER_BENCH_DIR");
  const std::string bench_dir =
      dir_env && *dir_env ? dir_env : control::ExecutableDir() + "/bench";
  for (const auto* p : programs) {
    const std::string bin = bench_dir + "/" + p->name + "_bench";
    if (access(bin.c_str(), X_OK) != 0) {
      return Fail("bench", Status::Invalid("benchmark program ", bin,
                                           " not found (build with "
                                           "-DQUIVER_BUILD_BENCH=ON, or set "
                                           "QUIVER_BENCH_DIR)"));
    }
  }

  // The output directory must be writable.
  {
    std::error_code ec;
    std::filesystem::create_directories(out_dir + "/raw", ec);
    const std::string probe = out_dir + "/.quiver-bench-probe";
    std::ofstream f(probe);
    if (ec || !f) {
      std::string why = ec ? ec.message() : std::strerror(errno);
      return Fail("bench",
                  Status::IOError("cannot write to --out '", out_dir, "': ", why));
    }
    f.close();
    std::remove(probe.c_str());
  }
  if (bench::FindGnuplot().empty()) {
    std::fprintf(stderr,
                 "quiver: bench: gnuplot not found, no plots will be made "
                 "(scripts/setup.sh installs gnuplot-nox)\n");
  }

  bench::RunInfo info;
  info.out_dir = out_dir;
  info.quick = quick;
  info.repetitions = repetitions;
  info.started = NowUtc();
  info.command = "quiver bench";
  for (const auto& a : in) info.command += " " + a;

  CatchInterrupts();

  std::vector<double> weights;
  for (const auto* p : programs)
    weights.push_back(quick ? p->quick_seconds : p->full_seconds);
  Progress progress(weights);
  bench::Results results;
  const auto wall_start = Clock::now();
  for (size_t i = 0; i < programs.size() && !Interrupted(); ++i) {
    const ProgramSpec& p = *programs[i];
    ProgramRun run;
    run.name = p.name;
    run.binary = bench_dir + "/" + p.name + "_bench";
    run.json = "raw/" + p.name + ".json";
    run.log = "raw/" + p.name + ".log";
    const auto env = ProgramEnv(p, quick);
    std::vector<std::string> extra = quick ? p.quick_args : std::vector<std::string>{};
    const auto started = Clock::now();
    // The program's invocations: everything (but the isolated benchmarks)
    // with all repetitions, then each isolated benchmark once per repetition
    // in a process of its own.
    struct Invocation {
      std::vector<std::string> args;
      std::string json;
    };
    std::vector<Invocation> invocations;
    std::vector<std::string> main_args = extra;
    if (!p.isolate.empty()) main_args.push_back("--benchmark_filter=-" + p.isolate);
    invocations.push_back({main_args, run.json});
    if (!p.isolate.empty()) {
      for (int k = 1; k <= repetitions; ++k) {
        std::vector<std::string> a = extra;
        a.push_back("--benchmark_filter=" + p.isolate);
        invocations.push_back(
            {a, "raw/" + p.name + ".isolated-" + std::to_string(k) + ".json"});
      }
    }
    std::vector<std::string> all_names;
    std::string list_error;
    for (size_t k = 0; k < invocations.size() && k < 2; ++k) {
      auto names = ListBenchmarks(run.binary, env, invocations[k].args);
      if (!names.ok()) {
        list_error = names.status().message();
        break;
      }
      const size_t times = k == 0 ? 1 : invocations.size() - 1;
      for (size_t t = 0; t < times; ++t) {
        all_names.insert(all_names.end(), names->begin(), names->end());
      }
    }
    if (!list_error.empty()) {
      run.error = list_error;
      progress.StartProgram(i, p.name, 0);
      progress.EndProgram(0, run.error);
      info.programs.push_back(run);
      continue;
    }
    size_t done = 0;
    progress.StartProgram(i, p.name, all_names.size());
    std::ofstream log(out_dir + "/" + run.log);
    const double timeout = quick ? 600 : 1800;
    for (const auto& inv : invocations) {
      if (Interrupted()) break;
      std::set<std::string> pending(all_names.begin(), all_names.end());
      std::vector<std::string> argv = {
          run.binary, "--benchmark_out=" + out_dir + "/" + inv.json,
          "--benchmark_out_format=json",
          "--benchmark_repetitions=" +
              std::to_string(&inv == &invocations[0] ? repetitions : 1)};
      argv.insert(argv.end(), inv.args.begin(), inv.args.end());
      std::remove((out_dir + "/" + inv.json).c_str());
      log << "$";
      for (const auto& a : argv) log << " " << a;
      log << "\n";
      auto code = RunProgram(
          argv, env, timeout,
          [&](const std::string& line) {
            log << StripAnsi(line);
            std::string name = MatchBenchmark(line, pending);
            if (!name.empty()) {
              pending.erase(name);
              progress.Benchmark(++done, name);
            }
          },
          [&] { progress.Tick(); });
      if (!code.ok()) {
        if (run.error.empty()) run.error = code.status().message();
      } else {
        run.exit_code = std::max(run.exit_code, *code);
        if (*code != 0 && run.error.empty()) {
          run.error = "exited with code " + std::to_string(*code);
        }
      }
      Status loaded = results.Load(p.name, out_dir + "/" + inv.json);
      if (!loaded.ok() && run.error.empty()) run.error = loaded.message();
    }
    log.close();
    run.seconds = Seconds(Clock::now() - started);
    progress.EndProgram(run.seconds, run.error);
    info.programs.push_back(run);
  }
  progress.Finish();
  info.wall_seconds = Seconds(Clock::now() - wall_start);
  if (Interrupted()) {
    std::fprintf(stderr, "quiver: bench: interrupted; writing what ran\n");
  }

  std::vector<std::string> ran;
  for (const auto& r : info.programs) {
    if (results.Has(r.name)) ran.push_back(r.name);
  }
  const auto figures = bench::Resolve(results, ran);
  const auto outcome = bench::WriteOutputs(info, results, figures);

  // A short summary: the figures that have a published counterpart.
  std::printf("%-44s %22s %20s %22s %9s\n", "figure", "Quiver (median)", "published",
              "reference (median)", "ratio");
  for (const auto& f : figures) {
    if (!f.spec->published) continue;
    const auto& s = *f.spec;
    std::string label = s.section + ": " + s.label;
    if (label.size() > 44) label.resize(44);
    std::string pub = s.published->quote.substr(0, s.published->quote.find(" ("));
    if (!f.ok()) {
      std::printf("%-44s %22s %20s %22s %9s\n", label.c_str(), "—", pub.c_str(),
                  "missing", "—");
      continue;
    }
    std::printf("%-44s %22s %20s %22s %9s\n", label.c_str(),
                (bench::Num(f.value.median) + " " + s.metric.unit).c_str(), pub.c_str(),
                (bench::Num(f.reference.median) + " " + s.ref_metric.unit).c_str(),
                bench::RatioString(f.ratio).c_str());
  }
  size_t with_ratio = 0;
  for (const auto& f : figures) with_ratio += f.ok() ? 1 : 0;
  std::printf(
      "\n%zu figures, %zu with their reference ratio; %.0f s. Wrote %s/results.json, "
      "%s/report.md",
      figures.size(), with_ratio, info.wall_seconds, out_dir.c_str(), out_dir.c_str());
  for (const auto& p : outcome.plots) std::printf(", %s/%s", out_dir.c_str(), p.c_str());
  std::printf("\n");
  for (const auto& p : outcome.problems)
    std::fprintf(stderr, "quiver: bench: %s\n", p.c_str());
  if (Interrupted()) return kExitFailed;
  return outcome.problems.empty() ? kExitOk : kExitFailed;
}

}  // namespace quiver::cli
