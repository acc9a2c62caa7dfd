// Connections that never authenticate, or never open a session, against a
// real daemon: they cannot lock honest clients out (each listener's pool
// of connections still setting up pushes its oldest out, and a connection
// has one second to finish its TLS handshake and open its session), and
// they cannot make the daemon hold memory (a frame before the session may
// carry 64 KiB; a big frame's buffers are released once it is handled).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cluster/cluster_util.h"
#include "control/rpc/frame.h"
#include "control/tls/tls_context.h"

namespace quiver {
namespace {

using control::PeerRole;
using control::rpc::Method;
using testing::ClusterSpec;
using testing::Eventually;
using testing::RawSession;
using testing::StartCluster;

// A raw socket to a node's control port (TCP, no TLS) or its Unix socket.
int Dial(const memory::NodeConfig& node, bool unix_socket) {
  int fd = -1;
  if (unix_socket) {
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", node.socket.c_str());
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  const auto colon = node.control.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(node.control.substr(colon + 1))));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Whether the daemon has closed `fd` (a read sees the end, or an error).
bool ClosedByPeer(int fd) {
  char b;
  const ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

// The daemon's resident memory, in bytes (from /proc).
int64_t Resident(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      int64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
    std::getline(in, key);
  }
  return -1;
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QUIVER_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define QUIVER_TEST_ASAN 1
#endif

// Under AddressSanitizer freed memory is held in a quarantine (256 MiB by
// default) by design, so a daemon's resident memory says nothing about
// what it still holds: the daemons this test starts run without one. A
// no-op in other builds.
class NoQuarantine {
 public:
  NoQuarantine() {
#ifdef QUIVER_TEST_ASAN
    const char* old = std::getenv("ASAN_OPTIONS");
    if (old != nullptr) old_ = old;
    had_ = old != nullptr;
    const std::string mine = old_ + (old_.empty() ? "" : ":") +
                             "quarantine_size_mb=0:thread_local_quarantine_size_kb=0";
    setenv("ASAN_OPTIONS", mine.c_str(), 1);
#endif
  }
  ~NoQuarantine() {
#ifdef QUIVER_TEST_ASAN
    if (had_) {
      setenv("ASAN_OPTIONS", old_.c_str(), 1);
    } else {
      unsetenv("ASAN_OPTIONS");
    }
#endif
  }

 private:
  [[maybe_unused]] std::string old_;
  [[maybe_unused]] bool had_ = false;
};

bool Pings(RawSession* s) {
  wire::PingRequest ping;
  ping.set_payload("hello");
  return s != nullptr && s->Call(Method::kPing, ping).ok();
}

// 1,024 TCP connections that never send a byte, and 200 silent ones on the
// Unix socket: an honest TLS client and an honest local client still open
// sessions at once, and every silent connection is closed within seconds.
TEST(AttackConnectionsTest, SilentConnectionsLockNoOneOut) {
  ClusterSpec spec;
  spec.nodes = 2;
  auto cluster = StartCluster(spec);
  ASSERT_NE(cluster, nullptr);
  const auto& node = cluster->config().nodes[0];
  std::vector<int> silent;
  for (int i = 0; i < 1024; ++i) {
    const int fd = Dial(node, false);
    if (fd >= 0) silent.push_back(fd);
  }
  for (int i = 0; i < 200; ++i) {
    const int fd = Dial(node, true);
    if (fd >= 0) silent.push_back(fd);
  }
  ASSERT_GT(silent.size(), 1000u);
  auto tls = RawSession::Open(*cluster, 0, PeerRole::kClient, 1);
  EXPECT_TRUE(Pings(tls.get())) << "an honest TLS client was locked out";
  auto local = RawSession::Open(*cluster, 0, PeerRole::kClient, 0, /*unix_socket=*/true);
  EXPECT_TRUE(Pings(local.get())) << "an honest local client was locked out";
  EXPECT_TRUE(Eventually(
      [&] {
        for (int fd : silent) {
          if (!ClosedByPeer(fd)) return false;
        }
        return true;
      },
      10000))
      << "silent connections stay open";
  for (int fd : silent) close(fd);
  // The honest sessions were never disturbed.
  EXPECT_TRUE(Pings(tls.get()));
  EXPECT_TRUE(Pings(local.get()));
}

// 40 connections (no session) each announce a 17 MiB frame and send all
// but its last byte: the daemon refuses the frame at its header (64 KiB
// before a session) and holds none of it. Then 30 sessions each send one
// 16 MiB Ping and stay open: their buffers are released once answered.
// Resident memory stays within 64 MiB of what it was.
TEST(AttackConnectionsTest, BigFramesHoldNoMemory) {
  NoQuarantine no_quarantine;
  ClusterSpec spec;
  spec.nodes = 1;
  auto cluster = StartCluster(spec);
  ASSERT_NE(cluster, nullptr);
  const pid_t daemon = cluster->pid(0);
  const auto& node = cluster->config().nodes[0];
  auto probe = RawSession::Open(*cluster, 0, PeerRole::kClient, 0, /*unix_socket=*/true);
  ASSERT_TRUE(Pings(probe.get()));
  const int64_t base = Resident(daemon);
  ASSERT_GT(base, 0);
  constexpr size_t kBig = (17u << 20) - 64;
  std::string header;
  control::rpc::AppendFrameHeader(control::rpc::FrameKind::kRequest,
                                  control::rpc::MethodByte(Method::kPing), 1, kBig,
                                  &header);
  const std::string body(1 << 20, 'x');
  std::vector<int> partial;
  for (int i = 0; i < 40; ++i) {
    const int fd = Dial(node, true);
    ASSERT_GE(fd, 0);
    partial.push_back(fd);
    ASSERT_EQ(send(fd, header.data(), header.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(header.size()));
    for (size_t sent = 0; sent + body.size() < kBig;) {
      const ssize_t n = send(fd, body.data(), body.size(), MSG_NOSIGNAL);
      if (n <= 0) break;  // the daemon closed it: the frame was refused
      sent += static_cast<size_t>(n);
    }
  }
  EXPECT_TRUE(Eventually([&] {
    for (int fd : partial) {
      if (!ClosedByPeer(fd)) return false;
    }
    return true;
  }));
  EXPECT_LT(Resident(daemon) - base, int64_t{64} << 20)
      << "partial frames before a session held memory";
  for (int fd : partial) close(fd);

  std::vector<std::unique_ptr<RawSession>> sessions;
  wire::PingRequest big;
  big.set_payload(std::string(16u << 20, 'p'));
  for (int i = 0; i < 30; ++i) {
    sessions.push_back(
        RawSession::Open(*cluster, 0, PeerRole::kClient, 0, /*unix_socket=*/true));
    ASSERT_NE(sessions.back(), nullptr);
    auto r = sessions.back()->Call(Method::kPing, big, 60000);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  EXPECT_TRUE(Pings(probe.get()));
  EXPECT_LT(Resident(daemon) - base, int64_t{64} << 20)
      << "30 idle sessions keep the buffers of the big frames they sent";
}

}  // namespace
}  // namespace quiver
