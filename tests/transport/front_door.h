// What an attacker without a key can send to a process's TCP ports: the
// listening ports of a process (from /proc), and bytes that crashed or
// subverted UCX 1.13 behind ports it opened itself (its socket-address
// connection manager and its TCP transport), for the transport's tests and
// the cluster's. Header-only: both test binaries use it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "quiver/util/little_endian.h"

namespace quiver::testing {

struct ListeningPort {
  std::string host;  // to connect to: 127.0.0.1 for a wildcard address
  uint16_t port = 0;
};

// The TCP ports process `pid` listens on (IPv4 and IPv6).
inline std::vector<ListeningPort> ListeningTcpPorts(pid_t pid) {
  std::set<std::string> inodes;
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(fd_dir, ec)) {
    std::error_code link_ec;
    const std::string target = std::filesystem::read_symlink(e.path(), link_ec).string();
    if (target.rfind("socket:[", 0) == 0)
      inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<ListeningPort> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/net/" +
                     std::string(table).substr(10));
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout,
          inode;
      f >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (state != "0A" || inodes.count(inode) == 0) continue;  // 0A: LISTEN
      const size_t colon = local.find(':');
      ListeningPort p;
      p.port = static_cast<uint16_t>(std::stoul(local.substr(colon + 1), nullptr, 16));
      const std::string address = local.substr(0, colon);
      p.host = "127.0.0.1";
      if (address.size() == 8 && address != "00000000") {
        in_addr a{};
        a.s_addr = static_cast<uint32_t>(std::stoul(address, nullptr, 16));
        p.host = inet_ntoa(a);
      }
      out.push_back(p);
    }
  }
  return out;
}

// A TCP connection to `p`, or -1.
inline int Dial(const ListeningPort& p) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(p.port);
  inet_pton(AF_INET, p.host.c_str(), &a.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Waits up to `ms` for the peer to close `fd` (or reset it).
inline bool ClosedByPeer(int fd, int ms) {
  for (int waited = 0; waited <= ms; waited += 50) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) > 0) {
      char buf[4096];
      const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
    }
  }
  return false;
}

struct Garbage {
  std::string name;
  std::string bytes;
};

// Bytes no peer without a key should be able to hurt a process with.
inline std::vector<Garbage> AttackerBytes() {
  std::vector<Garbage> out;
  out.push_back({"17 zero bytes", std::string(17, '\0')});
  std::mt19937 random(17);
  std::string noise(64 << 10, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  out.push_back({"64 KiB of random bytes", noise});
  // UCX 1.13's TCP transport: its public magic number, then an active
  // message header of 4 GiB (an assertion, abort) and a PUT request that
  // writes to an address of the attacker's choosing.
  std::string magic;
  util::AppendLE<uint64_t>(&magic, 0xCAFEBABE12345678ull);
  std::string huge = magic;
  util::AppendLE<uint8_t>(&huge, 0);
  util::AppendLE<uint32_t>(&huge, 0xFFFFFF00u);
  out.push_back({"UCX TCP magic, then a 4 GiB message header", huge});
  std::string put = magic;
  util::AppendLE<uint8_t>(&put, 33);  // UCT_TCP_EP_PUT_REQ_AM_ID
  util::AppendLE<uint32_t>(&put, 20);
  util::AppendLE<uint64_t>(&put, 0x1000);  // where to write
  util::AppendLE<uint64_t>(&put, 8);
  util::AppendLE<uint32_t>(&put, 1);
  put += "AAAAAAAA";
  out.push_back({"UCX TCP magic, then a write to 0x1000", put});
  // TLS: a handshake record of the largest length, and one cut short.
  out.push_back({"an oversized TLS handshake record",
                 std::string("\x16\x03\x01\xff\xff", 5) + std::string(1000, '\x01')});
  out.push_back({"a truncated ClientHello",
                 std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) +
                     std::string(20, '\x42')});
  out.push_back({"a TLS alert", std::string("\x15\x03\x03\x00\x02\x02\x28", 7)});
  out.push_back({"an HTTP request", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"});
  return out;
}

// Sends `bytes` to `p` on a connection of its own and closes it after
// `hold_ms` (the peer may answer or close first). False if no connection.
inline bool SendGarbage(const ListeningPort& p, const std::string& bytes, int hold_ms) {
  const int fd = Dial(p);
  if (fd < 0) return false;
  size_t at = 0;
  while (at < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (n <= 0) break;
    at += static_cast<size_t>(n);
  }
  (void)ClosedByPeer(fd, hold_ms);
  close(fd);
  return true;
}

}  // namespace quiver::testing
