// `quiver demo` at scale and under failure: 8 nodes on this machine, and a
// daemon that dies or hangs mid-run makes the demo fail with a message,
// never wait forever.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "cluster/cluster_util.h"

namespace quiver {
namespace {

using testing::BinaryPath;
using testing::Child;

// The pid of the quiverd serving node `node` of the cluster `config`.
pid_t DaemonPid(const std::string& config, int node) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(e.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(f)), {});
    for (auto& c : cmd) c = c == '\0' ? ' ' : c;
    if (cmd.find("quiverd --config " + config + " --id " + std::to_string(node) + " ") !=
        std::string::npos) {
      return std::stoi(pid);
    }
  }
  return -1;
}

// Starts a demo big enough to still be running a moment later and returns
// its cluster's config path.
std::string StartLongDemo(Child* demo, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {BinaryPath("quiver"), "demo", "--rows", "30000000"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  *demo = Child::Start(argv);
  const std::string up = demo->WaitForLine("daemons up", 60000);
  const auto at = up.find("config ");
  if (at == std::string::npos) return "";
  return up.substr(at + 7, up.find(')', at) - at - 7);
}

TEST(DemoTest, EightNodesOnThisMachine) {
  Child demo =
      Child::Start({BinaryPath("quiver"), "demo", "--nodes", "8", "--rows", "2000000"});
  EXPECT_EQ(demo.Finish(600000), 0) << demo.output();
  EXPECT_NE(demo.output().find("quiver demo: OK"), std::string::npos) << demo.output();
  for (int i = 0; i < 8; ++i) {
    EXPECT_NE(demo.output().find("node " + std::to_string(i) + " sums"),
              std::string::npos);
  }
}

TEST(DemoTest, ADaemonThatDiesFailsTheDemoWithAMessage) {
  Child demo;
  const std::string config = StartLongDemo(&demo);
  ASSERT_FALSE(config.empty()) << demo.output();
  const pid_t victim = DaemonPid(config, 1);
  ASSERT_GT(victim, 0) << demo.output();
  kill(victim, SIGKILL);
  EXPECT_EQ(demo.Finish(300000), 1) << demo.output();
  EXPECT_NE(demo.output().find("quiver demo: FAILED"), std::string::npos)
      << demo.output();
  const bool said = demo.output().find("quiverd of node 1 died") != std::string::npos ||
                    demo.output().find("failed (exit") != std::string::npos;
  EXPECT_TRUE(said) << demo.output();
  // Nothing is left behind.
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(config).parent_path()));
}

TEST(DemoTest, ADaemonThatHangsFailsTheDemoWithAMessage) {
  Child demo;
  const std::string config = StartLongDemo(&demo, {"--stall-ms", "12000"});
  ASSERT_FALSE(config.empty()) << demo.output();
  const pid_t victim = DaemonPid(config, 1);
  ASSERT_GT(victim, 0) << demo.output();
  kill(victim, SIGSTOP);
  EXPECT_EQ(demo.Finish(300000), 1) << demo.output();
  EXPECT_NE(demo.output().find("quiver demo: FAILED"), std::string::npos)
      << demo.output();
  const bool said = demo.output().find("no node made progress") != std::string::npos ||
                    demo.output().find("failed (exit") != std::string::npos;
  EXPECT_TRUE(said) << demo.output();
  kill(victim, SIGCONT);
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(config).parent_path()));
}

}  // namespace
}  // namespace quiver
