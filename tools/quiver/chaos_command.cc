// `quiver chaos`: the soak's parent (chaos.h has the overview, docs/chaos.md
// the invariants). Starts a fresh cluster, records every node's used bytes,
// runs the workers under faults for --duration seconds, ends the faults,
// stops the workers, unpublishes and deletes everything, waits for every
// node's memory to return to its baseline, stops the cluster, checks that
// nothing is left, and prints what happened. Exit 0 only when no read saw
// a wrong value, nothing hung, no daemon or worker died on its own and no
// byte leaked; 1 otherwise, naming the invariant; 2 on bad usage.
//
// `quiver chaos-worker` (hidden) is one worker (chaos_worker.cc).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <thread>

#include "chaos_parent.h"
#include "quiver/client.h"
#include "quiver/store.h"

namespace quiver::cli {

namespace {

using chaos::ChaosOptions;
using chaos::Clock;
using chaos::Soak;
using chaos::Tally;

constexpr const char* kChaosUsage =
    "usage: quiver chaos [--seed N] [--duration S (60)] [--nodes N (4)] [--workers N "
    "(8)]\n"
    "                    [--size S (256M)] [--lease-ms MS (4000)] [--grace-ms MS "
    "(2000)]\n"
    "                    [--plant-wrong] [--keep]\n";

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// Unpublishes every table and deletes every store object, as long as some
// are left (orphaned tables may be refused until their sessions have ended
// everywhere), for up to `timeout_ms`. What is left is a problem.
void CleanUp(const control::LocalCluster& cluster, int timeout_ms, Tally* tally) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::unique_ptr<Client> client;
  Status last;
  while (client == nullptr && Clock::now() < deadline) {
    auto c = Client::Connect({.config_path = cluster.config_path(), .node = 0});
    if (c.ok()) {
      client = std::move(*c);
    } else {
      last = c.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  if (client == nullptr) {
    tally->problems.push_back("clean-up: cannot connect: " + last.ToString());
    return;
  }
  store::StoreOptions so;
  so.pin_cache_bytes = 0;  // a clean-up keeps no pins
  so.prefault_ahead = 0;
  store::ObjectStore store(*client, so);
  size_t tables = 0, objects = 0;
  for (;;) {
    tables = objects = 0;
    auto listed = client->List();
    if (listed.ok()) {
      for (const auto& t : *listed) {
        ++tables;
        Status st = client->Unpublish(t.name);
        if (!st.ok()) last = st.WithContext("unpublishing '" + t.name + "'");
      }
    } else {
      last = listed.status();
      ++tables;
    }
    auto found = store.List();
    if (found.ok()) {
      for (const auto& o : *found) {
        ++objects;
        Status st = store.Delete({o.id});
        if (!st.ok()) last = st.WithContext("deleting " + o.id.Hex());
      }
    } else {
      last = found.status();
      ++objects;
    }
    if ((tables == 0 && objects == 0) || Clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (tables != 0 || objects != 0) {
    tally->problems.push_back("clean-up: " + std::to_string(tables) + " tables and " +
                              std::to_string(objects) + " objects still there after " +
                              std::to_string(timeout_ms / 1000) +
                              " s; last error: " + last.ToString());
  }
  (void)client->Close();
}

void PrintSummary(const ChaosOptions& o, double seconds, const Tally& t,
                  const std::vector<int64_t>& leaked,
                  const std::vector<std::string>& left) {
  std::printf(
      "\nquiver chaos: seed %llu, %.1f s of faults, %d nodes x %s, %d workers "
      "(lease %u ms, grace %u ms)\n\n",
      static_cast<unsigned long long>(o.seed), seconds, o.nodes, o.size_text.c_str(),
      o.workers, o.lease_ms, o.grace_ms);
  std::printf("  %-14s %9s %8s %6s %6s %8s %10s %10s\n", "operation", "ok", "errors",
              "wrong", "hangs", "skipped", "mean ms", "max ms");
  for (const auto& [kind, k] : t.ops) {
    const uint64_t n = k.ok + k.errors + k.wrong + k.hangs + k.skipped;
    std::printf(
        "  %-14s %9llu %8llu %6llu %6llu %8llu %10.1f %10.1f\n", kind.c_str(),
        static_cast<unsigned long long>(k.ok), static_cast<unsigned long long>(k.errors),
        static_cast<unsigned long long>(k.wrong),
        static_cast<unsigned long long>(k.hangs),
        static_cast<unsigned long long>(k.skipped), n ? k.total_ms / n : 0.0, k.max_ms);
  }
  auto codes = [](const std::map<std::string, uint64_t>& m) {
    std::string out;
    for (const auto& [code, n] : m) {
      out += (out.empty() ? "" : ", ") + code + " " + std::to_string(n);
    }
    return out.empty() ? std::string("none") : out;
  };
  std::printf("\n  errors by code       %s\n", codes(t.codes).c_str());
  for (const auto& [kind, k] : t.ops) {
    if (k.by_code.empty()) continue;
    std::printf("    %-18s %s\n", kind.c_str(), codes(k.by_code).c_str());
    for (const auto& [code, detail] : k.example) {
      const std::string text =
          detail.size() > 200 ? detail.substr(0, 200) + "..." : detail;
      std::printf("      e.g. %s: %s\n", code.c_str(), text.c_str());
    }
  }
  std::printf(
      "\n  worker kills %llu, worker stops %llu, workers started %llu, hung workers "
      "killed %llu\n  daemon kills %llu, daemon restarts %llu, daemon stops %llu\n",
      static_cast<unsigned long long>(t.worker_kills),
      static_cast<unsigned long long>(t.worker_stops),
      static_cast<unsigned long long>(t.workers_started),
      static_cast<unsigned long long>(t.hung_workers_killed),
      static_cast<unsigned long long>(t.daemon_kills),
      static_cast<unsigned long long>(t.daemon_restarts),
      static_cast<unsigned long long>(t.daemon_stops));
  int64_t total = 0;
  std::string per_node;
  for (size_t i = 0; i < leaked.size(); ++i) {
    total += leaked[i] < 0 ? -leaked[i] : leaked[i];
    per_node += (i ? ", " : "") + std::string("node ") + std::to_string(i) + ": " +
                (leaked[i] > 0 ? "+" : "") + std::to_string(leaked[i]);
  }
  std::printf("\n  wrong values              %zu\n", t.wrong.size());
  std::printf("  hangs                     %zu\n", t.hangs.size());
  std::printf("  unexplained daemon exits  %zu\n", t.unexplained.size());
  std::printf("  worker crashes            %zu\n", t.crashes.size());
  std::printf("  leaked bytes              %lld (%s)\n", static_cast<long long>(total),
              per_node.c_str());
  std::printf("  left after stop           %s\n",
              left.empty() ? "nothing" : std::to_string(left.size()).c_str());
  auto list = [](const char* what, const std::vector<std::string>& lines) {
    if (lines.empty()) return;
    std::printf("\n%s:\n", what);
    for (const auto& l : lines) std::printf("  %s\n", l.c_str());
  };
  list("WRONG", t.wrong);
  list("HANG", t.hangs);
  list("UNEXPLAINED DAEMON EXITS", t.unexplained);
  list("WORKER CRASHES", t.crashes);
  list("PROBLEMS", t.problems);
  list("MALFORMED READS (refused as malformed: bytes changed under a table)", t.suspect);
  list("LEFT AFTER STOP", left);
}

}  // namespace

int ChaosCommand(const Args& in) {
  Args args = in;
  ChaosOptions o;
  auto seed = TakeCount(&args, "seed", std::random_device{}() % 1000000, ~0ULL >> 1);
  auto duration = TakeCount(&args, "duration", 60, 7 * 24 * 3600);
  auto nodes = TakeCount(&args, "nodes", 4, 16);
  auto workers = TakeCount(&args, "workers", 8, 64);
  auto lease = TakeCount(&args, "lease-ms", 4000, 600000);
  auto grace = TakeCount(&args, "grace-ms", 2000, 600000);
  for (const Status& st : {seed.status(), duration.status(), nodes.status(),
                           workers.status(), lease.status(), grace.status()}) {
    if (!st.ok()) return Fail("chaos", st);
  }
  o.size_text = TakeOption(&args, "size", "256M");
  auto size = memory::ParseByteSize(o.size_text);
  if (!size.ok()) return Fail("--size", size.status());
  o.plant_wrong = TakeFlag(&args, "plant-wrong");
  o.keep = TakeFlag(&args, "keep");
  if (!args.empty() || *nodes == 0 || *workers == 0 || *size == 0 || *lease < 100) {
    std::fputs(kChaosUsage, stderr);
    return kExitBadInput;
  }
  o.seed = *seed;
  o.duration_s = *duration;
  o.nodes = static_cast<int>(*nodes);
  o.workers = static_cast<int>(*workers);
  o.region_size = *size;
  o.lease_ms = static_cast<uint32_t>(*lease);
  o.grace_ms = static_cast<uint32_t>(*grace);
  signal(SIGPIPE, SIG_IGN);
  CatchInterrupts();  // a Ctrl-C ends the faults early and cleans up

  char tmpl[] = "/tmp/quiver-chaos-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Fail("chaos", Status::FromErrno(errno, "mkdtemp"));
  const std::string top = tmpl, state = top + "/state", work = top + "/work";
  mkdir(work.c_str(), 0700);
  control::LocalClusterOptions co;
  co.nodes = o.nodes;
  co.region_size = o.region_size;
  co.state_dir = state;  // `quiver put --dir` finds it
  co.name_prefix = "chaos";
  co.limits.session_quota = {1.0, 0};
  co.limits.node_quota = {1.0, 0};
  co.limits.session_lease_ms = o.lease_ms;
  co.limits.restart_grace_ms = o.grace_ms;
  auto started = control::LocalCluster::Start(co);
  if (!started.ok()) {
    std::error_code ec;
    std::filesystem::remove_all(top, ec);
    return Fail("chaos: starting the cluster", started.status(), kExitFailed);
  }
  auto& cluster = *started;
  std::printf(
      "quiver chaos: seed %llu, %llu s, %d nodes x %s (shm), %d workers; cluster in %s\n",
      static_cast<unsigned long long>(o.seed),
      static_cast<unsigned long long>(o.duration_s), o.nodes, o.size_text.c_str(),
      o.workers, state.c_str());
  std::fflush(stdout);
  std::vector<int64_t> baseline(static_cast<size_t>(o.nodes), -1);
  for (int waited = 0; waited < 300 && !chaos::AllOnline(*cluster); ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (int i = 0; i < o.nodes; ++i) {
    baseline[i] = chaos::UsedBytes(*cluster, static_cast<uint32_t>(i));
  }

  Soak soak(o, cluster.get(), work);
  Tally* tally = &soak.tally();
  const auto t0 = Clock::now();
  if (Status st = soak.StartWorkers(); !st.ok()) {
    tally->problems.push_back(st.ToString());
  } else {
    soak.RunChaos(t0 + std::chrono::seconds(o.duration_s));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf(
      "  faults over after %.1f s: bringing every node back, stopping the workers\n",
      seconds);
  std::fflush(stdout);
  const bool online = soak.EndChaos();
  soak.StopWorkers();

  // Everything unpublished and deleted: every node back to its baseline.
  std::vector<int64_t> leaked(static_cast<size_t>(o.nodes), 0);
  if (online) {
    const int settle_ms = static_cast<int>(o.grace_ms + o.lease_ms) + 10000;
    CleanUp(*cluster, std::max(settle_ms, 30000), tally);
    const auto deadline =
        Clock::now() + std::chrono::milliseconds(std::max(settle_ms, 30000));
    for (;;) {
      bool same = true;
      for (int i = 0; i < o.nodes; ++i) {
        const int64_t used = chaos::UsedBytes(*cluster, static_cast<uint32_t>(i));
        leaked[i] = used < 0 || baseline[i] < 0 ? 0 : used - baseline[i];
        same &= used >= 0 && leaked[i] == 0;
      }
      if (same || Clock::now() > deadline) break;
      soak.Pump(200);
    }
  }

  // Stopped as `quiver down` stops it: nothing may be left.
  (void)cluster->Stop();
  std::vector<std::string> left;
  if (cluster->stop_summary().killed > 0) {
    tally->hangs.push_back(std::to_string(cluster->stop_summary().killed) +
                           " daemon(s) did not stop on SIGTERM within 10 s");
  }
  for (const auto& n : cluster->config().nodes) {
    for (const std::string& path : {n.path, n.socket}) {
      if (Exists(path)) left.push_back(path);
    }
  }
  for (const char* f : {"/pids", "/cluster.toml", "/credentials"}) {
    if (Exists(state + f)) left.push_back(state + f);
  }
  int64_t leaked_total = 0;
  for (int64_t l : leaked) leaked_total += l < 0 ? -l : l;
  PrintSummary(o, seconds, *tally, leaked, left);

  std::string failed;
  auto fail = [&failed](const std::string& what, size_t n) {
    if (n > 0)
      failed += (failed.empty() ? "" : ", ") + what + " (" + std::to_string(n) + ")";
  };
  fail("wrong values", tally->wrong.size());
  fail("malformed reads", tally->suspect.size());
  fail("hangs", tally->hangs.size());
  fail("unexplained daemon exits", tally->unexplained.size());
  fail("worker crashes", tally->crashes.size());
  fail("leaked bytes", static_cast<size_t>(leaked_total));
  fail("files left after stop", left.size());
  fail("soak problems", tally->problems.size() + (online ? 0 : 1));
  if (o.plant_wrong && !tally->planted_seen)
    fail("the planted wrong value was not seen", 1);

  // A failed run keeps its directory: the daemons' and workers' logs.
  if (failed.empty() && !o.keep) {
    std::error_code ec;
    std::filesystem::remove_all(top, ec);
  }
  if (failed.empty()) {
    std::printf(
        "\nquiver chaos: OK: %llu operations, every read exact or a clear error, "
        "nothing hung, nothing leaked\n",
        static_cast<unsigned long long>(tally->TotalOps()));
    return kExitOk;
  }
  std::printf("\nquiver chaos: FAILED: %s\n  daemon logs:", failed.c_str());
  for (int i = 0; i < o.nodes; ++i) std::printf(" %s", cluster->log_path(i).c_str());
  std::printf("\n  worker logs: %s/worker*.log%s\n", work.c_str(),
              o.keep ? "" : " (kept: the run failed)");
  return kExitFailed;
}

int ChaosWorkerCommand(const Args& in) {
  Args args = in;
  chaos::WorkerOptions o;
  o.config = TakeOption(&args, "config", "");
  o.state_dir = TakeOption(&args, "state-dir", "");
  o.work_dir = TakeOption(&args, "work-dir", "/tmp");
  auto node = TakeCount(&args, "node", 0, memory::kMaxNodeId);
  auto id = TakeCount(&args, "id", 0, ~0ULL >> 1);
  auto seed = TakeCount(&args, "seed", 0, ~0ULL);
  for (const Status& st : {node.status(), id.status(), seed.status()}) {
    if (!st.ok()) return Fail("chaos-worker", st);
  }
  o.cli = TakeFlag(&args, "cli");
  o.plant_wrong = TakeFlag(&args, "plant-wrong");
  if (o.config.empty() || !args.empty()) {
    std::fputs(
        "usage: quiver chaos-worker --config F --state-dir D --work-dir W --node N --id "
        "K "
        "--seed S [--cli] [--plant-wrong]\n",
        stderr);
    return kExitBadInput;
  }
  o.node = static_cast<uint32_t>(*node);
  o.id = *id;
  o.seed = *seed;
  return chaos::WorkerMain(o);
}

}  // namespace quiver::cli
