#include "quiver/memory/cluster_config.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

namespace quiver::memory {
namespace {

const char* kValid = R"(
[cluster]
name = "test"
credentials = "creds"

[[node]]
id = 0
control = "127.0.0.1:7600"
base = "0x300000000000"
size = "64MiB"

[[node]]
id = 1
control = "127.0.0.1:7601"
base = 0x300010000000
size = 67108864
backing = "incoherent"
path = "/dev/shm/quiver-test-custom"
)";

// Replaces the first occurrence of `from` in kValid.
std::string With(const std::string& from, const std::string& to) {
  std::string s = kValid;
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

// Whether `fn` returns within 60 s, tried in a child process: a call that
// hangs (the bug some tests look for) is killed instead of hanging the test.
bool ReturnsPromptly(const std::function<void()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t pid = fork();
  if (pid == 0) {
    fn();
    _exit(write(fds[1], "x", 1) == 1 ? 0 : 1);
  }
  close(fds[1]);
  pollfd p{fds[0], POLLIN, 0};
  const bool returned = poll(&p, 1, 60000) == 1;
  close(fds[0]);
  if (!returned) kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return returned;
}

void ExpectError(const std::string& toml, const std::string& needle) {
  auto r = ParseClusterConfig(toml, "test.toml");
  ASSERT_FALSE(r.ok()) << "expected an error mentioning '" << needle << "'";
  EXPECT_NE(r.status().message().find(needle), std::string::npos)
      << "error '" << r.status().ToString() << "' does not mention '" << needle << "'";
}

TEST(ClusterConfigTest, ParsesAndFillsDefaults) {
  auto r = ParseClusterConfig(kValid);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ClusterConfig& c = *r;
  EXPECT_EQ(c.name, "test");
  EXPECT_EQ(c.granule, PlatformCacheLineSize());
  ASSERT_EQ(c.nodes.size(), 2u);
  EXPECT_EQ(c.nodes[0].base, 0x300000000000ULL);
  EXPECT_EQ(c.nodes[0].size, 64ULL << 20);
  EXPECT_EQ(c.nodes[0].backing, BackingKind::kShm);
  EXPECT_EQ(c.nodes[0].path, "/dev/shm/quiver-test-0");
  EXPECT_EQ(c.nodes[0].socket, "/tmp/quiver-test-0.sock");
  EXPECT_EQ(c.nodes[1].backing, BackingKind::kIncoherent);
  EXPECT_EQ(c.nodes[1].path, "/dev/shm/quiver-test-custom");
  EXPECT_EQ(c.NodeOfAddress(0x300010000010ULL)->id, 1u);
  EXPECT_EQ(c.NodeOfAddress(0x2FFFFFFFFFFFULL), nullptr);
  // ToToml round-trips.
  auto again = ParseClusterConfig(c.ToToml());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->nodes[1].base, c.nodes[1].base);
  EXPECT_EQ(again->nodes[1].backing, c.nodes[1].backing);
}

TEST(ClusterConfigTest, ByteSizes) {
  EXPECT_EQ(ParseByteSize("4096").ValueOrDie(), 4096u);
  EXPECT_EQ(ParseByteSize("64KiB").ValueOrDie(), 65536u);
  EXPECT_EQ(ParseByteSize("1.5 GiB").ValueOrDie(), 3ULL << 29);
  EXPECT_EQ(ParseByteSize("2g").ValueOrDie(), 2ULL << 30);
  EXPECT_FALSE(ParseByteSize("GiB").ok());
  EXPECT_FALSE(ParseByteSize("12 parsecs").ok());
  EXPECT_FALSE(ParseByteSize("0.5").ok());
}

TEST(ClusterConfigTest, ErrorsNameTheField) {
  ExpectError("[cluster\nname=", "test.toml:");  // TOML syntax, with position
  ExpectError(With("name = \"test\"", "name = \"a b\""), "cluster.name");
  ExpectError(With("credentials = \"creds\"", "credentials = \"creds\"\ngranule = 48"),
              "cluster.granule");
  ExpectError(With("credentials = \"creds\"", "credentials = \"creds\"\ngranule = 16"),
              "cache line");
  ExpectError(With("id = 1", "id = 0"), "node id 0 appears twice");
  ExpectError(With("base = 0x300010000000", "base = 0x300000100000"), "overlaps node 0");
  ExpectError(With("base = \"0x300000000000\"", "base = \"0x300000000100\""),
              "node 0.base 0x300000000100 is not aligned");
  ExpectError(With("base = \"0x300000000000\"", "base = \"0x1000\""), "is below");
  ExpectError(With("base = \"0x300000000000\"", "base = \"0x7ffffff00000\""),
              "outside user space");
  ExpectError(With("size = \"64MiB\"", "size = \"64KiB\""), "smaller than the minimum");
  ExpectError(With("size = \"64MiB\"", "size = \"2000000\""), "is not a multiple of");
  ExpectError(With("backing = \"incoherent\"", "backing = \"magic\""), "node 1.backing");
  ExpectError(With("control = \"127.0.0.1:7600\"", "control = \"nowhere\""),
              "node 0.control");
  ExpectError(With("control = \"127.0.0.1:7600\"\n", ""), "control is missing");
  ExpectError(With("size = \"64MiB\"", "size = \"64MiB\"\nsise = 1"),
              "unknown key 'sise'");
  ExpectError(
      With("path = \"/dev/shm/quiver-test-custom\"", "path = \"/dev/shm/quiver-test-0\""),
      "is used by another node");
  ExpectError(With("backing = \"incoherent\"\npath = \"/dev/shm/quiver-test-custom\"",
                   "backing = \"device\"\npath = \"/nonexistent/dax0.0\""),
              "node 1.path");
  ExpectError("[cluster]\nname = \"x\"\n", "no [[node]]");
}

TEST(ClusterConfigTest, DeviceNeedsHugePageAlignment) {
  std::string s = With("backing = \"incoherent\"\npath = \"/dev/shm/quiver-test-custom\"",
                       "backing = \"device\"\npath = \"/dev/zero\"");
  s = s.replace(s.find("base = 0x300010000000"), 21, "base = 0x300010001000");
  ExpectError(s, "(device-DAX)");
}

TEST(ClusterConfigTest, TheOldSharedTokenIsRefused) {
  // Nodes authenticate with certificates: a token would only suggest otherwise.
  ExpectError(With("credentials = \"creds\"", "credentials = \"creds\"\ntoken = \"x\""),
              "cluster.token is no longer used");
  auto r = ParseClusterConfig(kValid);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->ToToml().find("token"), std::string::npos);
}

TEST(ClusterConfigTest, ControlPortsAreChecked) {
  const std::string from = "control = \"127.0.0.1:7601\"";
  ExpectError(With(from, "control = \"127.0.0.1:99999\""),
              "node 1.control '127.0.0.1:99999': port 99999 is not in 1..65535");
  ExpectError(With(from, "control = \"127.0.0.1:0\""), "port 0 is not in 1..65535");
  ExpectError(With(from, "control = \"127.0.0.1:x\""),
              "port 'x' is not a decimal number");
  ExpectError(With(from, "control = \"127.0.0.1:\""), "port '' is not a decimal number");
  ExpectError(With(from, "control = \"127.0.0.1:-1\""), "is not a decimal number");
  ExpectError(With(from, "control = \":7601\""), "the host is empty");
  ExpectError(With(from, "control = \"::1:7601\""), "must be in brackets");
  ExpectError(With(from, "control = \"[::1]7601\""), "must be [address]:port");
  for (const char* good : {"[::1]:7000", "localhost:65535", "10.0.0.2:1"}) {
    auto r = ParseClusterConfig(With(from, std::string("control = \"") + good + "\""));
    ASSERT_TRUE(r.ok()) << good << ": " << r.status().ToString();
    EXPECT_EQ(r->nodes[1].control, good);
  }
}

TEST(ClusterConfigTest, NodeIdsLeaveTheTagValueFree) {
  ExpectError(With("id = 1", "id = 65535"), "node[1].id 65535 is larger than 65534");
  auto r = ParseClusterConfig(With("id = 1", "id = 65534"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ClusterConfig c = *r;
  c.nodes[1].id = 65535;  // built in code: the validator refuses it too
  EXPECT_FALSE(ValidateClusterConfig(c).ok());
}

TEST(ClusterConfigTest, SocketPathsAreAbsoluteAndFit) {
  const std::string from = "size = \"64MiB\"";
  ExpectError(With(from, "size = \"64MiB\"\nsocket = \"run/q.sock\""),
              "node 0.socket 'run/q.sock' must be an absolute path");
  const std::string long_path = "/tmp/" + std::string(103, 's');  // 108 bytes
  ExpectError(With(from, "size = \"64MiB\"\nsocket = \"" + long_path + "\""),
              "a Unix socket path must be shorter than 108");
  const std::string fits = "/tmp/" + std::string(102, 's');  // 107 bytes
  auto r = ParseClusterConfig(With(from, "size = \"64MiB\"\nsocket = \"" + fits + "\""));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->nodes[0].socket, fits);
}

TEST(ClusterConfigTest, DeviceBackingMustBeADeviceOrAFile) {
  char dir[] = "/tmp/quiver-config-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string toml =
      With("backing = \"incoherent\"\npath = \"/dev/shm/quiver-test-custom\"",
           "backing = \"device\"\npath = \"" + fifo + "\"");
  // Opening a FIFO read-only waits for a writer unless O_NONBLOCK.
  ASSERT_TRUE(ReturnsPromptly([&] { (void)ParseClusterConfig(toml); }))
      << "validating a FIFO device path hangs";
  auto r = ParseClusterConfig(toml);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is a FIFO; a device backing must be"),
            std::string::npos)
      << r.status().ToString();
  std::filesystem::remove_all(dir);
}

// A folder under /tmp, removed with everything in it at the end.
class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/quiver-config-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  // LoadClusterConfig, after a child process showed it does not hang.
  Result<ClusterConfig> LoadPromptly(const std::string& path) {
    if (!ReturnsPromptly([&] { (void)LoadClusterConfig(path); })) {
      ADD_FAILURE() << "LoadClusterConfig('" << path << "') hangs";
      return Status::UnknownError("hangs");
    }
    return LoadClusterConfig(path);
  }
  void ExpectLoadError(const std::string& path, const std::string& needle) {
    auto r = LoadPromptly(path);
    ASSERT_FALSE(r.ok()) << path << " loaded";
    EXPECT_NE(r.status().message().find(needle), std::string::npos)
        << "error '" << r.status().ToString() << "' does not mention '" << needle << "'";
  }
  std::string dir_;
};

TEST_F(ConfigFileTest, LoadsARegularFileAndASymlinkToOne) {
  const std::string path = Write("cluster.toml", kValid);
  auto r = LoadPromptly(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->name, "test");
  const std::string link = dir_ + "/link.toml";
  ASSERT_EQ(symlink(path.c_str(), link.c_str()), 0);
  auto via_link = LoadPromptly(link);
  ASSERT_TRUE(via_link.ok()) << via_link.status().ToString();
}

TEST_F(ConfigFileTest, AFifoIsRefusedAtOnce) {
  const std::string fifo = dir_ + "/cluster.toml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ExpectLoadError(fifo, "'" + fifo + "' is not a regular file (it is a FIFO)");
}

TEST_F(ConfigFileTest, DevicesAndDirectoriesAreRefused) {
  ExpectLoadError("/dev/zero", "'/dev/zero' is not a regular file");
  ExpectLoadError(dir_, "'" + dir_ + "' is not a regular file (it is a directory)");
}

TEST_F(ConfigFileTest, AFileOverOneMebibyteIsRefused) {
  // Valid TOML all the way, so only the size can make it fail.
  std::string big = kValid;
  big += "\n" + std::string(2 << 20, '#') + "\n";
  ExpectLoadError(Write("big.toml", big), "is larger than 1048576 bytes");
  // Just under the limit still loads.
  std::string fits = kValid;
  fits += "#" + std::string(kMaxConfigFileBytes - fits.size() - 2, '-') + "\n";
  ASSERT_EQ(fits.size(), kMaxConfigFileBytes);
  auto r = LoadPromptly(Write("fits.toml", fits));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

TEST_F(ConfigFileTest, RelativeCredentialsAreResolvedNextToTheFile) {
  const std::string text = std::string(kValid);
  // Parsing alone keeps the path as written.
  EXPECT_EQ(ParseClusterConfig(text).ValueOrDie().credentials, "creds");
  ASSERT_EQ(mkdir((dir_ + "/sub").c_str(), 0700), 0);
  const std::string path = Write("sub/cluster.toml", text);
  auto r = LoadPromptly(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->credentials, dir_ + "/sub/creds");
  // From another working directory, through a relative config path.
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  auto relative = LoadPromptly("sub/cluster.toml");
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(relative.ok()) << relative.status().ToString();
  EXPECT_EQ(relative->credentials, dir_ + "/sub/creds");
  // Absolute paths are kept; ToToml round-trips the value.
  auto absolute =
      LoadPromptly(Write("abs.toml", With("credentials = \"creds\"",
                                          "credentials = \"/etc/quiver/creds\"")));
  ASSERT_TRUE(absolute.ok()) << absolute.status().ToString();
  EXPECT_EQ(absolute->credentials, "/etc/quiver/creds");
  EXPECT_EQ(ParseClusterConfig(absolute->ToToml()).ValueOrDie().credentials,
            "/etc/quiver/creds");
}

TEST(ClusterLimitsTest, DefaultsWhenAbsent) {
  auto c = ParseClusterConfig(kValid).ValueOrDie();
  EXPECT_EQ(c.limits, ClusterLimits{});
  EXPECT_EQ(c.limits.session_quota.Resolve(1000), 500u);
  EXPECT_EQ(c.ToToml().find("[limits]"), std::string::npos) << c.ToToml();
}

TEST(ClusterLimitsTest, ParsesEveryKind) {
  const std::string text = std::string(kValid) + R"(
[limits]
session_quota = "25%"
node_quota = "4GiB"
max_malloc = 1048576
malloc_rate = 5
node_malloc_rate = 1000000000
max_sessions_per_node = 1
max_connections = 1000000
max_waiting_calls = 7
session_lease_ms = 100
restart_grace_ms = 0
spin_us = 0
)";
  auto r = ParseClusterConfig(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ClusterLimits& l = r->limits;
  EXPECT_EQ(l.session_quota.fraction, 0.25);
  EXPECT_EQ(l.session_quota.bytes, 0u);
  EXPECT_EQ(l.session_quota.Resolve(1 << 20), 1u << 18);
  EXPECT_EQ(l.session_quota.ToString(), "25%");
  EXPECT_EQ(l.node_quota.bytes, 4ULL << 30);
  EXPECT_EQ(l.node_quota.Resolve(1 << 20), 4ULL << 30);
  EXPECT_EQ(l.node_quota.ToString(), "4294967296");
  EXPECT_EQ(l.max_malloc.bytes, 1u << 20);
  EXPECT_EQ(l.malloc_rate, 5u);
  EXPECT_EQ(l.node_malloc_rate, 1000000000u);
  EXPECT_EQ(l.max_sessions_per_node, 1u);
  EXPECT_EQ(l.max_connections, 1000000u);
  EXPECT_EQ(l.max_waiting_calls, 7u);
  EXPECT_EQ(l.session_lease_ms, 100u);
  EXPECT_EQ(l.restart_grace_ms, 0u);
  EXPECT_EQ(l.spin_us, 0u);
  // Round trip: every value survives, and only [limits] differs from kValid.
  const std::string toml = r->ToToml();
  EXPECT_NE(toml.find("[limits]"), std::string::npos);
  auto again = ParseClusterConfig(toml);
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << toml;
  EXPECT_EQ(again->limits, l);
}

TEST(ClusterLimitsTest, PercentagesRoundTripExactly) {
  for (const char* p : {"29%", "0.1%", "33.3%", "100%", "57.000001%"}) {
    auto c = ParseClusterConfig(std::string(kValid) + "\n[limits]\nnode_quota = \"" + p +
                                "\"\n");
    ASSERT_TRUE(c.ok()) << p << ": " << c.status().ToString();
    EXPECT_EQ(c->limits.node_quota.ToString(), p);
    auto again = ParseClusterConfig(c->ToToml()).ValueOrDie();
    EXPECT_EQ(again.limits.node_quota.fraction, c->limits.node_quota.fraction) << p;
  }
  // A fraction set in code that no short decimal gives still round-trips.
  ClusterConfig c = ParseClusterConfig(kValid).ValueOrDie();
  c.limits.max_malloc.fraction = 1.0 / 3;
  auto again = ParseClusterConfig(c.ToToml());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->limits.max_malloc.fraction, 1.0 / 3);
  QuotaSpec all{1.0, 0};
  EXPECT_EQ(all.Resolve(~0ULL), ~0ULL);
}

TEST(ClusterLimitsTest, BadValuesNameTheKey) {
  auto limits = [](const std::string& line) {
    return std::string(kValid) + "\n[limits]\n" + line + "\n";
  };
  ExpectError(limits("session_quota = \"0%\""), "limits.session_quota '0%'");
  ExpectError(limits("session_quota = \"150%\""), "must be in (0, 100]");
  ExpectError(limits("session_quota = \"x%\""), "is not a percentage");
  ExpectError(limits("node_quota = 0"), "limits.node_quota must not be 0");
  ExpectError(limits("node_quota = -5"), "limits.node_quota must not be negative");
  ExpectError(limits("node_quota = 0.5"), "limits.node_quota must be a percentage");
  ExpectError(limits("max_malloc = \"12 parsecs\""), "limits.max_malloc");
  ExpectError(limits("malloc_rate = 0"), "limits.malloc_rate 0 is not in 1..1000000000");
  ExpectError(limits("node_malloc_rate = 1000000001"), "limits.node_malloc_rate");
  ExpectError(limits("max_sessions_per_node = 0"), "limits.max_sessions_per_node 0");
  ExpectError(limits("max_connections = 1000001"), "limits.max_connections 1000001");
  ExpectError(limits("max_waiting_calls = 4294967297"), "limits.max_waiting_calls");
  ExpectError(limits("session_lease_ms = 99"),
              "limits.session_lease_ms 99 is not in 100..");
  ExpectError(limits("restart_grace_ms = 3600001"), "limits.restart_grace_ms");
  ExpectError(limits("spin_us = 10001"), "limits.spin_us");
  ExpectError(limits("malloc_rate = \"fast\""), "limits.malloc_rate");
  ExpectError(limits("max_mallocs = 1"), "limits: unknown key 'max_mallocs'");
  ExpectError("limits = 3\n" + std::string(kValid), "limits must be a table");
  // Configs built in code are validated the same way.
  ClusterConfig c = ParseClusterConfig(kValid).ValueOrDie();
  c.limits.session_quota = QuotaSpec{1.5, 0};
  EXPECT_FALSE(ValidateClusterConfig(c).ok());
  c.limits = ClusterLimits{};
  c.limits.max_connections = 0;
  EXPECT_FALSE(ValidateClusterConfig(c).ok());
}

TEST(ClusterConfigTest, MissingFileIsIOError) {
  auto r = LoadClusterConfig("/nonexistent/quiver.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsIOError());
  EXPECT_NE(r.status().message().find("/nonexistent/quiver.toml"), std::string::npos);
}

TEST(ClusterConfig, MemoryGroupsSayWhichNodesMapEachOthersRegions) {
  // The default: one group, every node maps every region.
  auto one = ParseClusterConfig(kValid);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_TRUE(one->SharesMemory(0, 1));
  EXPECT_FALSE(one->SharesMemory(0, 7));
  // Node 1 in a group of its own, serving its tables over the transport.
  std::string two = kValid;
  two += "memory = \"rack-2\"\ntransport = \"[::1]:7700\"\n";
  auto split = ParseClusterConfig(two);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  EXPECT_FALSE(split->SharesMemory(0, 1));
  EXPECT_TRUE(split->SharesMemory(1, 1));
  EXPECT_EQ(split->FindNode(1)->memory, "rack-2");
  EXPECT_EQ(split->FindNode(1)->transport, "[::1]:7700");
  EXPECT_EQ(split->FindNode(0)->transport, "");
  auto back = ParseClusterConfig(split->ToToml());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->FindNode(1)->memory, "rack-2");
  EXPECT_EQ(back->FindNode(1)->transport, "[::1]:7700");
  // Bad values are named.
  auto port = ParseClusterConfig(std::string(kValid) + "transport = \"h:0\"\n");
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.status().message().find("node 1.transport 'h:0': port 0"),
            std::string::npos)
      << port.status().ToString();
  auto group = ParseClusterConfig(std::string(kValid) + "memory = \"a b\"\n");
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.status().message().find("node 1.memory 'a b' may contain only"),
            std::string::npos)
      << group.status().ToString();
  // Two hosts may each have the same device path; one host may not.
  const std::string same_path = With(
      "size = \"64MiB\"", "size = \"64MiB\"\npath = \"/dev/shm/quiver-test-custom\"");
  EXPECT_FALSE(ParseClusterConfig(same_path).ok());
  auto hosts = ParseClusterConfig(same_path + "memory = \"b\"\n");
  EXPECT_TRUE(hosts.ok()) << hosts.status().ToString();
}

}  // namespace
}  // namespace quiver::memory
