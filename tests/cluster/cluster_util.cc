#include "cluster/cluster_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

extern char** environ;

namespace quiver::testing {

std::string BinaryPath(const std::string& name) {
  return std::string(QUIVER_BINARY_DIR) + "/" + name;
}

Child Child::Start(const std::vector<std::string>& argv_in) {
  Child c;
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return c;
  std::vector<std::string> a = argv_in;
  std::vector<char*> argv;
  for (auto& x : a) argv.push_back(x.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    return c;
  }
  c.pid_ = pid;
  c.in_ = in[1];
  c.out_fd_ = out[0];
  return c;
}

Child::Child(Child&& o) noexcept { *this = std::move(o); }

Child& Child::operator=(Child&& o) noexcept {
  std::swap(pid_, o.pid_);
  std::swap(in_, o.in_);
  std::swap(out_fd_, o.out_fd_);
  std::swap(out_, o.out_);
  std::swap(scanned_, o.scanned_);
  return *this;
}

Child::~Child() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (in_ >= 0) close(in_);
  if (out_fd_ >= 0) close(out_fd_);
}

std::string Child::WaitForLine(const std::string& needle, int timeout_ms) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    size_t pos = out_.find(needle, scanned_);
    if (pos != std::string::npos) {
      size_t start = out_.rfind('\n', pos);
      start = start == std::string::npos ? 0 : start + 1;
      size_t end = out_.find('\n', pos);
      if (end != std::string::npos) {
        scanned_ = end + 1;
        return out_.substr(start, end - start);
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0 || out_fd_ < 0) return "";
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    ssize_t n = read(out_fd_, buf, sizeof(buf));
    if (n <= 0) {
      close(out_fd_);
      out_fd_ = -1;
      pos = out_.find(needle, scanned_);
      return pos == std::string::npos ? "" : out_.substr(pos);
    }
    out_.append(buf, static_cast<size_t>(n));
  }
}

int Child::Finish(int timeout_ms) {
  if (in_ >= 0) {
    close(in_);
    in_ = -1;
  }
  if (pid_ <= 0) return -1;
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int status = 0;
  for (;;) {
    // Keep draining stdout so the child never blocks on a full pipe.
    if (out_fd_ >= 0) {
      pollfd p{out_fd_, POLLIN, 0};
      if (poll(&p, 1, 10) > 0) {
        char buf[4096];
        ssize_t n = read(out_fd_, buf, sizeof(buf));
        if (n > 0) {
          out_.append(buf, static_cast<size_t>(n));
        } else {
          close(out_fd_);
          out_fd_ = -1;
        }
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (waitpid(pid_, &status, WNOHANG) == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void Child::Kill(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

}  // namespace quiver::testing
