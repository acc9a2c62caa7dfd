#include "quiver/memory/cluster_config.h"

#include <gtest/gtest.h>

namespace quiver::memory {
namespace {

const char* kValid = R"(
[cluster]
name = "test"
token = "secret"

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
  ExpectError(With("token = \"secret\"\n", ""), "cluster.token");
  ExpectError(With("token = \"secret\"", "token = \"secret\"\ngranule = 48"),
              "cluster.granule");
  ExpectError(With("token = \"secret\"", "token = \"secret\"\ngranule = 16"),
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
  ExpectError("[cluster]\nname = \"x\"\ntoken = \"t\"\n", "no [[node]]");
}

TEST(ClusterConfigTest, DeviceNeedsHugePageAlignment) {
  std::string s = With("backing = \"incoherent\"\npath = \"/dev/shm/quiver-test-custom\"",
                       "backing = \"device\"\npath = \"/dev/zero\"");
  s = s.replace(s.find("base = 0x300010000000"), 21, "base = 0x300010001000");
  ExpectError(s, "(device-DAX)");
}

TEST(ClusterConfigTest, MissingFileIsIOError) {
  auto r = LoadClusterConfig("/nonexistent/quiver.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsIOError());
  EXPECT_NE(r.status().message().find("/nonexistent/quiver.toml"), std::string::npos);
}

}  // namespace
}  // namespace quiver::memory
