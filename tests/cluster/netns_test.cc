// Nodes in separate network namespaces, joined by veth pairs on a bridge,
// talking TCP while sharing the region files: hosts sharing CXL memory.
// Needs root and iproute2 (the test command runs as root); a missing
// capability fails the test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "cluster/cluster_util.h"
#include "control/local_cluster.h"

namespace quiver {
namespace {

using testing::BinaryPath;
using testing::Child;

class NetnsCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string id = std::to_string(getpid() % 1000000);
    prefix_ = "qv" + id;
    subnet_ = "10.199." + std::to_string(getpid() % 250) + ".";
    ASSERT_EQ(Run("ip link add " + Bridge() + " type bridge"), 0)
        << "cannot create a bridge";
    ASSERT_EQ(Run("ip link set " + Bridge() + " up"), 0);
    for (int i = 0; i < kNodes; ++i) {
      const std::string ns = Ns(i), v = prefix_ + "v" + std::to_string(i),
                        p = prefix_ + "p" + std::to_string(i);
      ASSERT_EQ(Run("ip netns add " + ns), 0) << "cannot create namespace " << ns;
      namespaces_.push_back(ns);
      ASSERT_EQ(Run("ip link add " + v + " type veth peer name " + p), 0);
      ASSERT_EQ(Run("ip link set " + v + " master " + Bridge() + " up"), 0);
      ASSERT_EQ(Run("ip link set " + p + " netns " + ns), 0);
      ASSERT_EQ(Run("ip -n " + ns + " addr add " + Ip(i) + "/24 dev " + p), 0);
      ASSERT_EQ(Run("ip -n " + ns + " link set " + p + " up"), 0);
      ASSERT_EQ(Run("ip -n " + ns + " link set lo up"), 0);
    }
  }
  void TearDown() override {
    for (const auto& ns : namespaces_) Run("ip netns del " + ns);
    Run("ip link del " + Bridge());
  }
  static int Run(const std::string& cmd) { return std::system((cmd + " 2>&1").c_str()); }
  std::string Bridge() const { return prefix_ + "br"; }
  std::string Ns(int i) const { return prefix_ + "n" + std::to_string(i); }
  std::string Ip(int i) const { return subnet_ + std::to_string(i + 1); }

  static constexpr int kNodes = 3;
  std::string prefix_, subnet_;
  std::vector<std::string> namespaces_;
};

TEST_F(NetnsCluster, NodesInSeparateNamespacesShareRegionsAndTalkTcp) {
  // Each daemon binds its namespace's address, so peers can only reach it
  // through the veth pairs and the bridge.
  control::LocalClusterOptions o;
  o.nodes = kNodes;
  o.region_size = 64ULL << 20;
  o.quiverd = BinaryPath("quiverd");
  o.name_prefix = "netns";
  for (int i = 0; i < kNodes; ++i) {
    o.exec_prefix.push_back({"ip", "netns", "exec", Ns(i)});
    o.hosts.push_back(Ip(i));
  }
  auto cluster = control::LocalCluster::Start(o);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  for (const auto& n : (*cluster)->config().nodes) {
    EXPECT_EQ(n.control.rfind(subnet_, 0), 0u) << n.control;
  }
  // Every node's worker runs in its node's namespace; the two even nodes
  // build in their neighbour's memory (remote allocation over TCP).
  std::vector<Child> workers;
  for (int i = 0; i < kNodes; ++i) {
    std::vector<std::string> argv = {"ip",
                                     "netns",
                                     "exec",
                                     Ns(i),
                                     BinaryPath("quiver"),
                                     "demo-node",
                                     "--config",
                                     (*cluster)->config_path(),
                                     "--node",
                                     std::to_string(i),
                                     "--rows",
                                     "300000"};
    if (i % 2 == 0) {
      argv.push_back("--owner");
      argv.push_back(std::to_string((i + 1) % kNodes));
    }
    workers.push_back(Child::Start(argv));
    ASSERT_TRUE(workers.back().started());
  }
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_EQ(workers[i].Finish(300000), 0) << "node " << i << ":\n"
                                            << workers[i].output();
    EXPECT_NE(workers[i].output().find("sums_ok=1"), std::string::npos);
    EXPECT_NE(workers[i].output().find("full_sums_ok=1"), std::string::npos);
  }
  // The cluster as node 2 sees it, from inside its namespace.
  Child status =
      Child::Start({"ip", "netns", "exec", Ns(2), BinaryPath("quiver"), "status",
                    "--config", (*cluster)->config_path(), "--node", "2"});
  EXPECT_EQ(status.Finish(), 0) << status.output();
  EXPECT_NE(status.output().find("demo.full"), std::string::npos) << status.output();
  EXPECT_EQ(status.output().find("OFFLINE"), std::string::npos) << status.output();
  EXPECT_TRUE((*cluster)->Stop().ok());
}

}  // namespace
}  // namespace quiver
