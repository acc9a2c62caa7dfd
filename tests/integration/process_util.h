// Helpers for tests that need several real processes: forked children that
// run a function and report through their exit code, pipes to hand-shake
// between them, and per-test cluster configs with unique names and paths.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <string>

#include "quiver/memory/cluster_config.h"

namespace quiver::testing {

// A one-byte-message pipe between processes (create before fork).
class Pipe {
 public:
  Pipe() {
    if (pipe2(fds_, O_CLOEXEC) != 0) std::abort();
  }
  ~Pipe() {
    close(fds_[0]);
    close(fds_[1]);
  }
  void Send(char c = 'x') {
    if (write(fds_[1], &c, 1) != 1) std::abort();
  }
  // Waits up to timeout_ms for one byte; returns it, or 0 on timeout/EOF.
  char Receive(int timeout_ms = 30000) {
    pollfd p{fds_[0], POLLIN, 0};
    if (poll(&p, 1, timeout_ms) != 1) return 0;
    char c = 0;
    return read(fds_[0], &c, 1) == 1 ? c : 0;
  }

 private:
  int fds_[2];
};

// A forked child process running `body`; its return value is the exit code.
class Child {
 public:
  explicit Child(const std::function<int()>& body) {
    pid_ = fork();
    if (pid_ == 0) {
      int code = 99;
      try {
        code = body();
      } catch (...) {
        code = 98;
      }
      _exit(code);
    }
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      (void)Wait();
    }
  }
  pid_t pid() const { return pid_; }
  void Kill(int sig = SIGKILL) { kill(pid_, sig); }
  // Exit code, 128+signal if killed, -1 on error.
  int Wait() {
    int status = 0;
    if (waitpid(pid_, &status, 0) != pid_) return -1;
    reaped_ = true;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// A cluster config for one test: unique name and backing paths, `nodes`
// regions of `size` bytes starting at a base reserved for tests.
inline memory::ClusterConfig TestCluster(
    const std::string& tag, int nodes, uint64_t size = 64ULL << 20,
    memory::BackingKind backing = memory::BackingKind::kShm) {
  static std::atomic<int> counter{0};
  memory::ClusterConfig c;
  c.name = "t" + std::to_string(getpid()) + "-" + tag + "-" + std::to_string(counter++);
  c.credentials = "unused";
  c.granule = memory::PlatformCacheLineSize();
  for (int i = 0; i < nodes; ++i) {
    memory::NodeConfig n;
    n.id = static_cast<uint32_t>(i);
    n.control = "127.0.0.1:" + std::to_string(17000 + i);
    n.base = 0x300000000000ULL + static_cast<uint64_t>(i) * 0x10000000000ULL;
    n.size = size;
    n.backing = backing;
    n.path = "/dev/shm/quiver-" + c.name + "-" + std::to_string(i);
    n.socket = "/tmp/quiver-" + c.name + "-" + std::to_string(i) + ".sock";
    c.nodes.push_back(n);
  }
  return c;
}

// Removes a test cluster's backing files when the test ends.
class ClusterFiles {
 public:
  explicit ClusterFiles(const memory::ClusterConfig& c) : c_(c) {}
  ~ClusterFiles() {
    for (const auto& n : c_.nodes) unlink(n.path.c_str());
  }

 private:
  memory::ClusterConfig c_;
};

}  // namespace quiver::testing
