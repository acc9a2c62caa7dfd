// Nodes in separate network namespaces, joined by veth pairs on a bridge,
// talking TCP while sharing the region files: hosts sharing CXL memory.
// Needs root and iproute2 (the test command runs as root); a missing
// capability fails the test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <sstream>

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
  // Runs a command in node i's namespace with UCX_TLS=tcp: no UCX transport
  // the transport allows (it uses UCX between processes of one host only),
  // so its data goes on its TLS streams, over TCP as between hosts.
  std::vector<std::string> In(int i) const {
    return {"ip", "netns", "exec", Ns(i), "env", "UCX_TLS=tcp"};
  }
  struct NodeUsage {
    double used = 0;  // MiB, as `quiver status` prints it (0.1 MiB steps)
    uint64_t objects = 0;
  };
  // Node `node`'s region usage, as its own daemon reports it.
  Result<NodeUsage> Usage(const std::string& config, int node) const {
    std::vector<std::string> argv = In(node);
    for (std::string a :
         {BinaryPath("quiver"), std::string("status"), std::string("--config"), config,
          std::string("--node"), std::to_string(node)}) {
      argv.push_back(a);
    }
    Child status = Child::Start(argv);
    if (status.Finish() != 0) return Status::IOError("quiver status: ", status.output());
    std::istringstream lines(status.output());
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream f(line);
      std::string id, state, control, base, backing, size, free;
      double used = 0;
      uint64_t objects = 0;
      if (f >> id >> state >> control >> base >> backing >> size >> used >> free >>
              objects &&
          id == std::to_string(node)) {
        return NodeUsage{used, objects};
      }
    }
    return Status::IOError("no line for node ", node, " in:\n", status.output());
  }

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

// One cluster, two kinds of node: nodes 0 and 1 share memory (one memory
// group), node 2 shares none with them (its own group, its own namespace,
// the transport's TLS streams over TCP, each opened with a ticket of the
// reader's session). Every node publishes a slice of one HugeTable and reads
// the whole of it: nodes 0 and 1 read each other's slices zero-copy and node
// 2's over the transport; node 2 reads theirs over the transport, into its
// own region. A reader of node 2 killed while holding those copies leaves
// node 2's region as it was.
TEST_F(NetnsCluster, ANodeSharingNoMemoryGetsTablesOverTheTransport) {
  control::LocalClusterOptions o;
  o.nodes = kNodes;
  o.region_size = 64ULL << 20;
  o.quiverd = BinaryPath("quiverd");
  o.name_prefix = "mixed";
  o.memory_groups = {"a", "a", "b"};
  o.transport = true;
  for (int i = 0; i < kNodes; ++i) {
    o.exec_prefix.push_back(In(i));
    o.hosts.push_back(Ip(i));
  }
  auto cluster = control::LocalCluster::Start(o);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  const std::string config = (*cluster)->config_path();
  std::vector<Child> workers;
  for (int i = 0; i < kNodes; ++i) {
    std::vector<std::string> argv = In(i);
    for (std::string a :
         {BinaryPath("quiver"), std::string("demo-node"), std::string("--config"), config,
          std::string("--node"), std::to_string(i), std::string("--rows"),
          std::string("300000")}) {
      argv.push_back(a);
    }
    // Each node builds in its own memory: node 2 reads from two homes.
    workers.push_back(Child::Start(argv));
    ASSERT_TRUE(workers.back().started());
  }
  for (int i = 0; i < kNodes; ++i) {
    const std::string& out = workers[i].output();
    EXPECT_EQ(workers[i].Finish(300000), 0) << "node " << i << ":\n" << out;
    EXPECT_NE(out.find("sums_ok=1"), std::string::npos) << out;
    EXPECT_NE(out.find("full_sums_ok=1"), std::string::npos) << out;
    // Node 2 holds every row in its own memory: the others' came over the
    // transport (from nodes 0 and 1 at once). Nodes 0 and 1 read each other's slice
    // zero-copy, so not all of their rows are in their own region.
    EXPECT_NE(out.find(i == 2 ? "own_region=1" : "own_region=0"), std::string::npos)
        << "node " << i << ":\n"
        << out;
  }
  // Node 2 cannot allocate in node 0's region: a clear error, not a fault.
  {
    std::vector<std::string> argv = In(2);
    for (std::string a :
         {BinaryPath("quiver"), std::string("demo-node"), std::string("--config"), config,
          std::string("--node"), std::string("2"), std::string("--rows"),
          std::string("3000"), std::string("--name"), std::string("refused"),
          std::string("--owner"), std::string("0"), std::string("--no-full")}) {
      argv.push_back(a);
    }
    Child refused = Child::Start(argv);
    EXPECT_NE(refused.Finish(120000), 0) << refused.output();
    EXPECT_NE(refused.output().find("different memory groups"), std::string::npos)
        << refused.output();
  }
  // The copies belong to the reader's session at node 2: killed while it
  // holds them, the reader leaves node 2's region as it found it.
  const auto before = Usage(config, 2);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  std::vector<std::string> argv = In(2);
  for (std::string a :
       {BinaryPath("quiver"), std::string("demo-read"), std::string("--config"), config,
        std::string("--node"), std::string("2"), std::string("--chunks"),
        std::string("3"), std::string("--rows"), std::string("300000"),
        std::string("--hold")}) {
    argv.push_back(a);
  }
  Child reader = Child::Start(argv);
  ASSERT_NE(reader.WaitForLine("pinned", 120000), "") << reader.output();
  EXPECT_NE(reader.output().find("sums_ok=1"), std::string::npos) << reader.output();
  const auto holding = Usage(config, 2);
  ASSERT_TRUE(holding.ok()) << holding.status().ToString();
  EXPECT_GT(holding->objects, before->objects);
  EXPECT_GT(holding->used, before->used);
  reader.Kill(SIGKILL);
  EXPECT_EQ(reader.Finish(), 128 + SIGKILL);
  Result<NodeUsage> after = before;
  for (int i = 0; i < 200; ++i) {
    after = Usage(config, 2);
    ASSERT_TRUE(after.ok()) << after.status().ToString();
    if (after->objects == before->objects && after->used == before->used) break;
    usleep(50000);
  }
  EXPECT_EQ(after->objects, before->objects);
  EXPECT_EQ(after->used, before->used);
  EXPECT_TRUE((*cluster)->Stop().ok());
}

}  // namespace
}  // namespace quiver
