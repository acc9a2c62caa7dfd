// A test fixture for commands run against a cluster `quiver up` keeps:
// each test its own state directory; TearDown stops and kills whatever a
// test left (daemons found through /proc by their cluster file) and
// removes the region files.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cluster/cluster_util.h"

extern char** environ;

namespace quiver::testing {

// Peak resident memory (KiB) of `args` run to completion, stdout discarded;
// -1 if it could not run or failed.
inline long PeakRssKb(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0) return -1;
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    return -1;
  }
  return usage.ru_maxrss;
}

struct Ran {
  int code = -1;
  std::string out;  // stdout and stderr
};

class UpFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/quiver-up-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
    state_ = tmp_ + "/state";
  }
  void TearDown() override {
    // Whatever a failed test left: regions of the cluster file, daemons.
    std::vector<std::string> regions = Regions();
    if (!Daemons().empty()) Quiver("down --dir " + state_ + " --timeout 5");
    for (pid_t p : Daemons()) kill(p, SIGKILL);
    for (const auto& r : regions) unlink(r.c_str());
    std::filesystem::remove_all(tmp_);
  }

  // Runs `quiver ARGS` with QUIVER_DIR set to `env_dir` (unset if empty),
  // and `env` (VAR=VALUE ...) if given.
  Ran Quiver(const std::string& args, const std::string& env_dir = "",
             const std::string& more_env = "") {
    const std::string env =
        (env_dir.empty() ? "-u QUIVER_DIR" : "QUIVER_DIR=" + env_dir) + " " + more_env;
    Child c = Child::Start(
        {"/bin/sh", "-c",
         "exec env " + env + " " + BinaryPath("quiver") + " " + args + " 2>&1"});
    Ran r;
    r.code = c.Finish(60000);
    r.out = c.output();
    return r;
  }
  // Runs `quiver ARGS...` (no shell quoting needed), with `input` on its
  // stdin; stdout and stderr together.
  Ran QuiverArgs(const std::vector<std::string>& args, const std::string& input = "") {
    std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1",
                                     BinaryPath("quiver")};
    argv.insert(argv.end(), args.begin(), args.end());
    Child c = Child::Start(argv);
    if (!input.empty()) c.Send(input);
    Ran r;
    r.code = c.Finish(120000);
    r.out = c.output();
    return r;
  }
  Ran Up() { return Quiver("up --nodes 2 --size 64M --dir " + state_); }

  // Live (not zombie) daemons started with this state dir's cluster file.
  std::vector<pid_t> Daemons() const {
    const std::string config = state_ + "/cluster.toml";
    std::vector<pid_t> found;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream f(e.path() / "cmdline", std::ios::binary);
      std::string cmdline((std::istreambuf_iterator<char>(f)), {});
      if (cmdline.find("quiverd") != std::string::npos &&
          cmdline.find(std::string("--config") + '\0' + config + '\0') !=
              std::string::npos) {
        found.push_back(static_cast<pid_t>(std::stol(name)));
      }
    }
    return found;
  }
  // The region files the cluster file names (none without one).
  std::vector<std::string> Regions() const {
    std::vector<std::string> paths;
    auto cfg = memory::LoadClusterConfig(state_ + "/cluster.toml");
    if (cfg.ok()) {
      for (const auto& n : cfg->nodes) paths.push_back(n.path);
    }
    return paths;
  }
  void KillAllDaemons() {
    for (pid_t p : Daemons()) kill(p, SIGKILL);
    ASSERT_TRUE(Eventually([&] { return Daemons().empty(); }));
  }
  static bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

  // `quiver sql --node NODE` over `table` (an int64 column v of `table_kb`
  // KiB) does not copy it: a count touches none of its pages (its peak
  // resident size grows by less than a quarter of the table over `SELECT
  // 1`); a sum maps each page once (less than 1.5 times the table).
  void ExpectScanIsZeroCopy(const std::string& table, const std::string& node,
                            long table_kb) {
    auto run = [&](const std::string& q) {
      return PeakRssKb({BinaryPath("quiver"), "sql", "--dir", state_, "--node", node, q});
    };
    const long base = run("SELECT 1");
    const long count = run("SELECT count(*) FROM " + table);
    const long sum = run("SELECT sum(v) FROM " + table);
    ASSERT_GT(base, 0);
    ASSERT_GT(count, 0);
    ASSERT_GT(sum, 0);
    EXPECT_LT(count - base, table_kb / 4) << base << " " << count;
    EXPECT_LT(sum - base, table_kb * 3 / 2) << base << " " << sum;
  }

  std::string tmp_, state_;
};

}  // namespace quiver::testing
