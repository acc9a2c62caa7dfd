// The chaos parent's workers and fault loop (chaos_parent.h): worker
// processes spawned with pipes, their lines read with poll(2), and the
// faults -- SIGKILL and SIGSTOP of workers and daemons -- on a seeded
// schedule while they work.
#include "chaos_parent.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <thread>

#include "control/client/admin.h"

extern char** environ;

namespace quiver::cli::chaos {

namespace {

int MsUntil(Clock::time_point t) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 100));
}

// The last `n` lines of a file, each indented, for reports.
std::string Tail(const std::string& path, size_t n) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) {
    lines.push_back(line);
    if (lines.size() > n) lines.erase(lines.begin());
  }
  std::string out;
  for (const auto& l : lines) out += "\n      | " + Escape(l);
  return out;
}

// How a process ended, from a wait status.
std::string Ended(int status) {
  if (WIFSIGNALED(status)) {
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "exit code " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

uint64_t Tally::TotalOps() const {
  uint64_t n = 0;
  for (const auto& [kind, t] : ops) n += t.ok + t.errors + t.wrong + t.hangs;
  return n;
}

int64_t UsedBytes(const control::LocalCluster& cluster, uint32_t node) {
  return control::client::UsedBytesOf(cluster.config().nodes[node], 5000);
}

bool AllOnline(const control::LocalCluster& cluster) {
  for (const auto& node : cluster.config().nodes) {
    auto st = control::client::QueryClusterStatus(node, 2000);
    if (!st.ok() || st->nodes.size() != cluster.config().nodes.size()) return false;
    for (const auto& n : st->nodes) {
      if (!n.online) return false;
    }
  }
  return true;
}

Soak::Soak(const ChaosOptions& options, control::LocalCluster* cluster,
           const std::string& work_dir)
    : options_(options),
      cluster_(cluster),
      work_dir_(work_dir),
      random_(Mix64(options.seed ^ 0xC4A05C4A05ULL)) {
  workers_.resize(static_cast<size_t>(options.workers));
  for (int i = 0; i < options.workers; ++i) {
    logs_.push_back(work_dir_ + "/worker" + std::to_string(i) + ".log");
  }
}

Soak::~Soak() {
  for (auto& w : workers_) {
    if (w.pid > 0) {
      kill(w.pid, SIGKILL);
      waitpid(w.pid, nullptr, 0);
    }
    if (w.in >= 0) close(w.in);
    if (w.out >= 0) close(w.out);
  }
}

uint64_t Soak::Uniform(uint64_t lo, uint64_t hi) {
  return std::uniform_int_distribution<uint64_t>(lo, hi)(random_);
}

std::string Soak::Who(const WorkerProc& w) const {
  return "worker " + std::to_string(w.id) + " (node " + std::to_string(w.node) +
         ", pid " + std::to_string(w.pid) + ")";
}

Status Soak::Spawn(int slot) {
  WorkerProc& w = workers_[slot];
  w = WorkerProc{};
  w.slot = slot;
  w.id = next_id_++;
  w.node = cluster_->config().nodes[slot % cluster_->nodes()].id;
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return Status::FromErrno(errno, "pipe");
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return Status::FromErrno(errno, "pipe");
  }
  std::vector<std::string> args = {control::ExecutablePath(),
                                   "chaos-worker",
                                   "--config",
                                   cluster_->config_path(),
                                   "--state-dir",
                                   cluster_->dir(),
                                   "--work-dir",
                                   work_dir_,
                                   "--node",
                                   std::to_string(w.node),
                                   "--id",
                                   std::to_string(w.id),
                                   "--seed",
                                   std::to_string(Mix64(options_.seed + w.id))};
  // One worker runs the command line; one plants a wrong value until one
  // is seen.
  if (slot == std::min(1, options_.workers - 1)) args.push_back("--cli");
  if (slot == 0 && options_.plant_wrong && !tally_.planted_seen) {
    args.push_back("--plant-wrong");
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, logs_[slot].c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0600);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    return Status::FromErrno(rc, "starting a chaos worker");
  }
  fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
  w.pid = pid;
  w.in = in[1];
  w.out = out[0];
  w.heard = Clock::now();
  ++tally_.workers_started;
  return Status::OK();
}

Status Soak::StartWorkers() {
  started_ = Clock::now();
  for (int i = 0; i < options_.workers; ++i) QUIVER_RETURN_NOT_OK(Spawn(i));
  return Status::OK();
}

void Soak::HandleLine(WorkerProc& w, const std::string& text) {
  w.heard = Clock::now();
  auto line = ParseLine(text);
  if (!line) return;
  if (line->type == "start") {
    w.current = line->kind + " " + line->detail;
    return;
  }
  if (line->type != "op") return;
  w.current.clear();
  OpTally& t = tally_.ops[line->kind];
  t.total_ms += line->ms;
  t.max_ms = std::max(t.max_ms, line->ms);
  const std::string full = Who(w) + ": " + line->kind + " " + line->result + " " +
                           std::to_string(static_cast<int64_t>(line->ms)) +
                           " ms: " + line->detail;
  if (line->result == "ok") {
    ++t.ok;
  } else if (line->result == "skip") {
    ++t.skipped;
  } else if (line->result == "WRONG") {
    ++t.wrong;
    tally_.wrong.push_back(full);
    if (line->detail.find("(planted)") != std::string::npos) tally_.planted_seen = true;
    std::printf("  WRONG %s\n", full.c_str());
    std::fflush(stdout);
  } else if (line->result == "HANG") {
    ++t.hangs;
    tally_.hangs.push_back(full);
    std::printf("  HANG %s\n", full.c_str());
    std::fflush(stdout);
  } else {
    const std::string code =
        line->result.rfind("err:", 0) == 0 ? line->result.substr(4) : line->result;
    ++t.errors;
    if (t.by_code[code]++ == 0) t.example[code] = line->detail;
    const bool reads = line->kind == "read" || line->kind == "hold" ||
                       line->kind == "release" || line->kind.rfind("store.", 0) == 0;
    if (reads && (code == "Invalid" || code == "Serialization error") &&
        tally_.suspect.size() < 50) {
      tally_.suspect.push_back(full);
    }
    ++tally_.codes[code];
  }
}

void Soak::Drain(WorkerProc& w) {
  if (w.out < 0) return;
  char buf[16384];
  for (;;) {
    const ssize_t n = read(w.out, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0 || errno != EAGAIN) {
        close(w.out);
        w.out = -1;
      }
      break;
    }
    w.buffer.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = w.buffer.find('\n')) != std::string::npos;) {
      const std::string line = w.buffer.substr(0, nl);
      w.buffer.erase(0, nl + 1);
      HandleLine(w, line);
    }
  }
}

void Soak::ReadAll(int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<size_t> who;
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (workers_[i].out >= 0) {
      fds.push_back({workers_[i].out, POLLIN, 0});
      who.push_back(i);
    }
  }
  if (fds.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    return;
  }
  if (poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
  for (size_t k = 0; k < fds.size(); ++k) {
    if (fds[k].revents != 0) Drain(workers_[who[k]]);
  }
}

void Soak::KillWorker(WorkerProc& w, bool hung) {
  kill(w.pid, SIGKILL);
  waitpid(w.pid, nullptr, 0);
  w.pid = -1;
  Drain(w);  // what it wrote before it died still counts
  if (w.in >= 0) close(w.in);
  if (w.out >= 0) close(w.out);
  w.in = w.out = -1;
  if (hung) {
    ++tally_.hung_workers_killed;
  } else {
    ++tally_.worker_kills;
  }
  if (!stopping_) {
    Status st = Spawn(w.slot);
    if (!st.ok()) tally_.problems.push_back(st.ToString());
  }
}

void Soak::Reap() {
  for (auto& w : workers_) {
    if (w.pid <= 0) continue;
    int status = 0;
    if (waitpid(w.pid, &status, WNOHANG) != w.pid) continue;
    Drain(w);
    const bool clean = stopping_ && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!clean) {
      const std::string what = Who(w) + " " + Ended(status) + " on its own" +
                               (w.current.empty() ? "" : ", in: " + w.current) +
                               "; its stderr: " + logs_[w.slot];
      tally_.crashes.push_back(what);
      std::printf("  CRASH %s\n", what.c_str());
      std::fflush(stdout);
    }
    w.pid = -1;
    if (w.in >= 0) close(w.in);
    if (w.out >= 0) close(w.out);
    w.in = w.out = -1;
    if (!stopping_) {
      Status st = Spawn(w.slot);
      if (!st.ok()) tally_.problems.push_back(st.ToString());
    }
  }
}

void Soak::CheckSilence() {
  const auto now = Clock::now();
  for (auto& w : workers_) {
    if (w.pid <= 0 || w.stopped) continue;
    if (now - w.heard < std::chrono::milliseconds(kSilentHangMs)) continue;
    std::string state;
    std::ifstream wchan("/proc/" + std::to_string(w.pid) + "/wchan");
    std::getline(wchan, state);
    const std::string what = Who(w) + ": silent for " +
                             std::to_string(kSilentHangMs / 1000) + " s" +
                             (w.current.empty() ? "" : " in: " + w.current) +
                             (state.empty() ? "" : " (waiting in " + state + ")");
    tally_.hangs.push_back(what);
    std::printf("  HANG %s\n", what.c_str());
    std::fflush(stdout);
    KillWorker(w, /*hung=*/true);
  }
}

void Soak::CheckDaemons() {
  for (int i = 0; i < cluster_->nodes(); ++i) {
    if (down_.count(i) != 0) continue;  // we killed it
    const pid_t pid = cluster_->pid(i);
    if (pid <= 0) continue;
    // Peek at how it ended before LocalCluster reaps it.
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
        info.si_pid != pid) {
      continue;
    }
    const std::string how = info.si_code == CLD_EXITED
                                ? "exit code " + std::to_string(info.si_status)
                                : "signal " + std::to_string(info.si_status) + " (" +
                                      strsignal(info.si_status) + ")";
    if (!cluster_->Exited(i)) continue;
    const std::string what = "daemon of node " + std::to_string(i) + " (pid " +
                             std::to_string(pid) + ") exited on its own: " + how +
                             "; log " + cluster_->log_path(i) +
                             Tail(cluster_->log_path(i), 8);
    tally_.unexplained.push_back(what);
    std::printf("  UNEXPLAINED EXIT %s\n", what.c_str());
    std::fflush(stdout);
    daemon_stopped_.erase(i);
    down_[i] = Clock::now();  // restarted as if we had killed it
  }
}

void Soak::Timers() {
  const auto now = Clock::now();
  for (auto& w : workers_) {
    if (w.stopped && now >= w.cont_at) {
      if (w.pid > 0) kill(w.pid, SIGCONT);
      w.stopped = false;
      w.heard = now;
    }
  }
  for (auto it = daemon_stopped_.begin(); it != daemon_stopped_.end();) {
    if (now < it->second) {
      ++it;
      continue;
    }
    if (cluster_->pid(it->first) > 0) kill(cluster_->pid(it->first), SIGCONT);
    it = daemon_stopped_.erase(it);
  }
  bool due = false;
  for (const auto& [node, at] : down_) due |= now >= at;
  if (!due) return;
  CheckDaemons();  // any other exit is noted before RestartStopped takes it
  auto restarted = cluster_->RestartStopped();
  if (!restarted.ok()) {
    const std::string what = "restarting: " + restarted.status().ToString();
    tally_.unexplained.push_back(what);
    std::printf("  UNEXPLAINED EXIT %s\n", what.c_str());
    std::fflush(stdout);
    for (auto& [node, at] : down_) at = Clock::now() + std::chrono::seconds(1);
    return;
  }
  tally_.daemon_restarts += restarted->size();
  for (int node : *restarted) down_.erase(node);
  // Down but not restarted means running again: nothing to wait for.
  for (auto it = down_.begin(); it != down_.end();) {
    it = cluster_->Running(it->first) ? down_.erase(it) : std::next(it);
  }
}

void Soak::Act() {
  const uint64_t pick = Uniform(0, 99);
  std::vector<int> up;
  for (int i = 0; i < cluster_->nodes(); ++i) {
    if (down_.count(i) == 0 && daemon_stopped_.count(i) == 0 && cluster_->pid(i) > 0) {
      up.push_back(i);
    }
  }
  WorkerProc& w = workers_[Uniform(0, workers_.size() - 1)];
  if (pick < 25) {
    if (w.pid > 0) KillWorker(w, /*hung=*/false);
  } else if (pick < 50) {
    if (w.pid > 0 && !w.stopped) {
      const uint64_t most = std::min<uint64_t>(2000, options_.lease_ms / 2);
      kill(w.pid, SIGSTOP);
      w.stopped = true;
      w.cont_at = Clock::now() +
                  std::chrono::milliseconds(Uniform(100, std::max<uint64_t>(100, most)));
      ++tally_.worker_stops;
    }
  } else if (pick < 70) {
    // At most one daemon down at a time.
    if (down_.empty() && !up.empty()) {
      const int node = up[Uniform(0, up.size() - 1)];
      Status st = cluster_->Kill(node, SIGKILL);
      if (st.ok()) {
        ++tally_.daemon_kills;
        down_[node] = Clock::now() + std::chrono::milliseconds(Uniform(0, 3000));
      }
    }
  } else if (!up.empty()) {
    const int node = up[Uniform(0, up.size() - 1)];
    kill(cluster_->pid(node), SIGSTOP);
    daemon_stopped_[node] = Clock::now() + std::chrono::milliseconds(Uniform(100, 1000));
    ++tally_.daemon_stops;
  }
}

void Soak::Progress() {
  uint64_t ok = 0, errors = 0;
  for (const auto& [kind, t] : tally_.ops) {
    ok += t.ok;
    errors += t.errors;
  }
  std::printf(
      "  [%5.0f s] %llu ops: %llu ok, %llu errors, %zu wrong, %zu hangs; faults: %llu "
      "worker kills, %llu worker stops, %llu daemon kills, %llu daemon stops\n",
      Seconds(Clock::now() - started_),
      static_cast<unsigned long long>(tally_.TotalOps()),
      static_cast<unsigned long long>(ok), static_cast<unsigned long long>(errors),
      tally_.wrong.size(), tally_.hangs.size(),
      static_cast<unsigned long long>(tally_.worker_kills),
      static_cast<unsigned long long>(tally_.worker_stops),
      static_cast<unsigned long long>(tally_.daemon_kills),
      static_cast<unsigned long long>(tally_.daemon_stops));
  std::fflush(stdout);
}

void Soak::Pump(int ms) {
  const auto until = Clock::now() + std::chrono::milliseconds(ms);
  do {
    ReadAll(MsUntil(until));
    Reap();
    CheckSilence();
    CheckDaemons();
    Timers();
  } while (Clock::now() < until);
}

void Soak::RunChaos(Clock::time_point until) {
  next_action_ = Clock::now() + std::chrono::milliseconds(Uniform(300, 1500));
  next_progress_ = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < until && !Interrupted()) {
    ReadAll(MsUntil(std::min(next_action_, until)));
    Reap();
    CheckSilence();
    CheckDaemons();
    Timers();
    const auto now = Clock::now();
    if (now >= next_action_ && now < until) {
      Act();
      next_action_ = Clock::now() + std::chrono::milliseconds(Uniform(300, 1500));
    }
    if (now >= next_progress_) {
      Progress();
      next_progress_ += std::chrono::seconds(10);
    }
  }
}

bool Soak::EndChaos() {
  for (auto& w : workers_) {
    if (w.stopped) w.cont_at = Clock::now();
  }
  for (auto& [node, at] : daemon_stopped_) at = Clock::now();
  for (auto& [node, at] : down_) at = Clock::now();
  Timers();
  // Every node back, seeing every other (restarts retried meanwhile).
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    if (down_.empty() && daemon_stopped_.empty() && AllOnline(*cluster_)) return true;
    Pump(100);
  }
  tally_.problems.push_back("the cluster did not come back online within 60 s");
  return false;
}

void Soak::StopWorkers() {
  stopping_ = true;
  for (auto& w : workers_) {
    if (w.stopped && w.pid > 0) kill(w.pid, SIGCONT);
    w.stopped = false;
    if (w.in >= 0) close(w.in);
    w.in = -1;
  }
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  for (;;) {
    bool running = false;
    for (const auto& w : workers_) running |= w.pid > 0;
    if (!running) return;
    if (Clock::now() > deadline) break;
    ReadAll(100);
    Reap();
  }
  for (auto& w : workers_) {
    if (w.pid <= 0) continue;
    const std::string what = Who(w) + ": did not stop within 60 s of being asked" +
                             (w.current.empty() ? "" : ", in: " + w.current);
    tally_.hangs.push_back(what);
    std::printf("  HANG %s\n", what.c_str());
    KillWorker(w, /*hung=*/true);
  }
}

}  // namespace quiver::cli::chaos
