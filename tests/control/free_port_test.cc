// FreeTcpPort (control/local_cluster.h): ports for the listeners of local
// clusters come from below the kernel's ephemeral range, where no
// outgoing connection can take them before the listener binds.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "control/local_cluster.h"

namespace quiver::control {
namespace {

TEST(FreeTcpPortTest, PortsComeFromBelowTheEphemeralRangeAndCanBeBound) {
  int low = 0, high = 0;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  ASSERT_TRUE(range >> low >> high);
  ASSERT_GE(low, 11000) << "this machine leaves no room below its ephemeral range";
  std::set<int> seen;
  for (int i = 0; i < 50; ++i) {
    auto port = FreeTcpPort();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    EXPECT_GE(*port, 10000);
    EXPECT_LT(*port, low);
    seen.insert(*port);
    // And free: a listener binds it.
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(*port));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << *port;
    close(fd);
  }
  EXPECT_GT(seen.size(), 40u) << "ports are not spread";
  EXPECT_TRUE(FreeTcpPort("not an address").status().IsInvalid());
}

TEST(FreeTcpPortTest, APortInUseIsNotGiven) {
  // Hold a listener on each of many ports, then ask: never one of those.
  std::set<int> held;
  std::vector<int> fds;
  for (int i = 0; i < 200; ++i) {
    auto port = FreeTcpPort();
    ASSERT_TRUE(port.ok());
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(*port));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        listen(fd, 1) == 0) {
      held.insert(*port);
      fds.push_back(fd);
    } else {
      close(fd);
    }
  }
  ASSERT_GT(held.size(), 150u);
  for (int i = 0; i < 500; ++i) {
    auto port = FreeTcpPort();
    ASSERT_TRUE(port.ok());
    EXPECT_EQ(held.count(*port), 0u) << *port << " is held by a listener";
  }
  for (int fd : fds) close(fd);
}

}  // namespace
}  // namespace quiver::control
