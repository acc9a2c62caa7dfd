// `quiver up`, `quiver status` and `quiver down` as a user runs them: real
// processes, each test with its own state directory. The daemons outlive
// `quiver up`, so they are found (and, whatever happens, killed in
// TearDown) through /proc by their cluster file.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "cluster/cluster_util.h"
#include "cluster/up_util.h"

namespace quiver {
namespace {

using testing::BinaryPath;
using testing::Child;
using testing::Eventually;

using UpTest = testing::UpFixture;
using testing::Ran;

TEST_F(UpTest, UpStatusPublishDown) {
  Ran up = Up();
  ASSERT_EQ(up.code, 0) << up.out;
  for (const char* says :
       {"state dir", "cluster file", "node 1", "quiver status", "quiver down"}) {
    EXPECT_NE(up.out.find(says), std::string::npos) << says << " in\n" << up.out;
  }
  EXPECT_EQ(Daemons().size(), 2u);
  struct stat st {};
  ASSERT_EQ(stat(state_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const std::vector<std::string> regions = Regions();
  ASSERT_EQ(regions.size(), 2u);

  // A client publishes; `quiver status` finds the cluster through QUIVER_DIR.
  Child actor =
      Child::Start({BinaryPath("cluster_actor"), "--config", state_ + "/cluster.toml",
                    "--node", "1", "--publish", "up_table", "--rows", "1000"});
  ASSERT_NE(actor.WaitForLine("ready", 30000), "") << actor.output();
  Ran status = Quiver("status", state_);
  ASSERT_EQ(status.code, 0) << status.out;
  EXPECT_NE(status.out.find("daemon of node 0: running"), std::string::npos)
      << status.out;
  EXPECT_NE(status.out.find("daemon of node 1: running"), std::string::npos)
      << status.out;
  EXPECT_NE(status.out.find("up_table"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("64.0"), std::string::npos) << status.out;  // --size 64M
  EXPECT_EQ(actor.Finish(), 0) << actor.output();
  // The old flags still work.
  status = Quiver("status --config " + state_ + "/cluster.toml --node 1");
  EXPECT_EQ(status.code, 0) << status.out;
  EXPECT_NE(status.out.find("asked node 1"), std::string::npos) << status.out;

  Ran down = Quiver("down", state_);
  ASSERT_EQ(down.code, 0) << down.out;
  EXPECT_NE(down.out.find("stopped 2 daemons"), std::string::npos) << down.out;
  EXPECT_TRUE(Daemons().empty());
  for (const auto& r : regions) EXPECT_FALSE(Exists(r)) << r;
  for (const char* gone :
       {"/node0.sock", "/node1.sock", "/pids", "/cluster.toml", "/credentials"}) {
    EXPECT_FALSE(Exists(state_ + gone)) << gone;
  }
  EXPECT_TRUE(Exists(state_ + "/node0.log"));  // the logs stay

  // Nothing runs now: `down` and `status` say so and fail.
  down = Quiver("down --dir " + state_);
  EXPECT_EQ(down.code, 1) << down.out;
  EXPECT_NE(down.out.find("no cluster in " + state_), std::string::npos) << down.out;
  status = Quiver("status --dir " + state_);
  EXPECT_EQ(status.code, 1) << status.out;
  EXPECT_NE(status.out.find("quiver up"), std::string::npos) << status.out;
  // The same directory takes a new cluster.
  up = Up();
  EXPECT_EQ(up.code, 0) << up.out;
  EXPECT_EQ(Quiver("down --dir " + state_).code, 0);
}

TEST_F(UpTest, SecondUpIsRefused) {
  ASSERT_EQ(Up().code, 0);
  const std::vector<pid_t> first = Daemons();
  Ran again = Up();
  EXPECT_EQ(again.code, 1) << again.out;
  EXPECT_NE(
      again.out.find("a cluster is already running in " + state_ + " (nodes 2, pids"),
      std::string::npos)
      << again.out;
  EXPECT_NE(again.out.find("quiver down"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("--dir OTHER"), std::string::npos) << again.out;
  EXPECT_EQ(Daemons(), first);  // untouched
}

TEST_F(UpTest, StaleDirIsCleanedByUp) {
  ASSERT_EQ(Up().code, 0);
  const std::vector<std::string> old_regions = Regions();
  KillAllDaemons();
  Ran status = Quiver("status --dir " + state_);
  EXPECT_EQ(status.code, 1) << status.out;
  EXPECT_NE(status.out.find("daemon of node 0: DOWN"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("stale"), std::string::npos) << status.out;

  Ran up = Up();
  ASSERT_EQ(up.code, 0) << up.out;
  EXPECT_NE(up.out.find("was not running"), std::string::npos) << up.out;
  EXPECT_NE(up.out.find("Cleaned up what it left: 2 region files"), std::string::npos)
      << up.out;
  for (const auto& r : old_regions) EXPECT_FALSE(Exists(r)) << r;
  EXPECT_EQ(Daemons().size(), 2u);
  EXPECT_EQ(Quiver("status", state_).code, 0);
}

TEST_F(UpTest, StaleDirIsCleanedByDown) {
  ASSERT_EQ(Up().code, 0);
  const std::vector<std::string> regions = Regions();
  KillAllDaemons();
  Ran down = Quiver("down --dir " + state_);
  EXPECT_EQ(down.code, 0) << down.out;
  EXPECT_NE(down.out.find("no daemon of the cluster in " + state_ + " was running"),
            std::string::npos)
      << down.out;
  EXPECT_NE(down.out.find("cleaned up what it left"), std::string::npos) << down.out;
  for (const auto& r : regions) EXPECT_FALSE(Exists(r)) << r;
  EXPECT_FALSE(Exists(state_ + "/cluster.toml"));
}

TEST_F(UpTest, KilledDaemonShowsDown) {
  ASSERT_EQ(Quiver("up --nodes 3 --size 64M --dir " + state_).code, 0);
  std::ifstream pids(state_ + "/pids");
  pid_t victim = -1;
  for (long node = 0, pid = 0; pids >> node >> pid;) {
    if (node == 1) victim = static_cast<pid_t>(pid);
  }
  ASSERT_GT(victim, 0);
  kill(victim, SIGKILL);
  ASSERT_TRUE(Eventually([&] { return Daemons().size() == 2; }));
  Ran status = Quiver("status --dir " + state_);
  EXPECT_EQ(status.code, 1) << status.out;
  EXPECT_NE(status.out.find("daemon of node 1: DOWN (pid " + std::to_string(victim)),
            std::string::npos)
      << status.out;
  EXPECT_NE(status.out.find("daemon of node 0: running"), std::string::npos)
      << status.out;
  EXPECT_NE(status.out.find("daemon of node 2: running"), std::string::npos)
      << status.out;
  Ran down = Quiver("down --dir " + state_);
  EXPECT_EQ(down.code, 0) << down.out;
  EXPECT_NE(down.out.find("stopped 2 daemons"), std::string::npos) << down.out;
  EXPECT_TRUE(Daemons().empty());
}

// A node whose daemon died: its table is unavailable, naming the node;
// `quiver up` restarts that daemon alone on its region (the others keep
// their pids) and the table is read again, whole.
TEST_F(UpTest, UpRestartsTheNodesThatAreDown) {
  ASSERT_EQ(Quiver("up --nodes 3 --size 64M --dir " + state_).code, 0);
  Child actor =
      Child::Start({BinaryPath("cluster_actor"), "--config", state_ + "/cluster.toml",
                    "--node", "1", "--publish", "kept", "--rows", "1000"});
  ASSERT_NE(actor.WaitForLine("ready", 30000), "") << actor.output();
  ASSERT_EQ(actor.Finish(), 0) << actor.output();
  auto count = [&] {
    return QuiverArgs({"sql", "--dir", state_, "--node", "0", "--format", "csv",
                       "SELECT count(*) FROM kept"});
  };
  Ran before = count();
  ASSERT_EQ(before.code, 0) << before.out;
  ASSERT_NE(before.out.find("1000"), std::string::npos) << before.out;

  std::ifstream pids(state_ + "/pids");
  std::map<long, pid_t> by_node;
  for (long node = 0, pid = 0; pids >> node >> pid;)
    by_node[node] = static_cast<pid_t>(pid);
  ASSERT_EQ(by_node.size(), 3u);
  kill(by_node[1], SIGKILL);
  ASSERT_TRUE(Eventually([&] { return Daemons().size() == 2; }));
  Ran status = Quiver("status --dir " + state_);
  EXPECT_EQ(status.code, 1) << status.out;
  EXPECT_NE(
      status.out.find("`quiver up --dir " + state_ + "` starts the nodes that are down"),
      std::string::npos)
      << status.out;
  ASSERT_TRUE(Eventually([&] {
    Ran r = count();
    return r.code != 0 && r.out.find("node 1") != std::string::npos;
  })) << count().out;

  Ran up = Quiver("up --dir " + state_);
  ASSERT_EQ(up.code, 0) << up.out;
  EXPECT_NE(up.out.find("node 1 (pid " + std::to_string(by_node[1]) + " gone) down"),
            std::string::npos)
      << up.out;
  EXPECT_EQ(Daemons().size(), 3u);
  std::ifstream after(state_ + "/pids");
  std::map<long, pid_t> now;
  for (long node = 0, pid = 0; after >> node >> pid;) now[node] = static_cast<pid_t>(pid);
  EXPECT_EQ(now[0], by_node[0]);
  EXPECT_EQ(now[2], by_node[2]);
  EXPECT_NE(now[1], by_node[1]);
  EXPECT_GT(now[1], 0);
  ASSERT_TRUE(Eventually(
      [&] {
        Ran r = count();
        return r.code == 0 && r.out.find("1000") != std::string::npos;
      },
      30000))
      << count().out;

  // Every node up again: a second `quiver up` is refused as before.
  EXPECT_EQ(Quiver("up --dir " + state_).code, 1);
  Ran down = Quiver("down --dir " + state_);
  EXPECT_EQ(down.code, 0) << down.out;
  EXPECT_NE(down.out.find("stopped 3 daemons"), std::string::npos) << down.out;
  EXPECT_TRUE(Daemons().empty());
}

TEST_F(UpTest, DefaultDirIsInTheRuntimeDir) {
  state_ = tmp_ + "/quiver";  // $XDG_RUNTIME_DIR/quiver (TearDown cleans it)
  const std::string runtime = "XDG_RUNTIME_DIR=" + tmp_;
  Ran up = Quiver("up --nodes 1 --size 64M", "", runtime);
  ASSERT_EQ(up.code, 0) << up.out;
  EXPECT_NE(up.out.find("state dir     " + state_), std::string::npos) << up.out;
  EXPECT_EQ(Daemons().size(), 1u);
  Ran status = Quiver("status", "", runtime);
  EXPECT_EQ(status.code, 0) << status.out;
  EXPECT_NE(status.out.find("daemon of node 0: running"), std::string::npos)
      << status.out;
  EXPECT_EQ(Quiver("down", "", runtime).code, 0);
  EXPECT_TRUE(Daemons().empty());
}

// A pid in the pids file that now belongs to another process is not
// signalled, by `down` or by `up`.
TEST_F(UpTest, ReusedPidIsNotSignalled) {
  ASSERT_EQ(Up().code, 0);
  KillAllDaemons();
  Child other = Child::Start({"/bin/sleep", "600"});
  ASSERT_TRUE(other.started());
  std::ofstream(state_ + "/pids", std::ios::trunc)
      << "0 " << other.pid() << "\n1 " << getpid() << "\n";
  Ran down = Quiver("down --dir " + state_);
  EXPECT_EQ(down.code, 0) << down.out;
  EXPECT_NE(down.out.find("no daemon of the cluster"), std::string::npos) << down.out;
  EXPECT_EQ(waitpid(other.pid(), nullptr, WNOHANG), 0);  // still running
  other.Kill(SIGKILL);
  other.Finish();
}

TEST_F(UpTest, BadInputIsRefused) {
  Ran r = Quiver("up --size 12Q --dir " + state_);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("12Q"), std::string::npos) << r.out;
  // A directory with other things in it is not taken.
  std::filesystem::create_directories(state_);
  std::ofstream(state_ + "/notes.txt") << "mine\n";
  r = Up();
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("holds no Quiver cluster"), std::string::npos) << r.out;
  EXPECT_TRUE(Exists(state_ + "/notes.txt"));
  EXPECT_TRUE(Daemons().empty());
}

}  // namespace
}  // namespace quiver
