// Helpers for the multi-process cluster tests: child processes with pipes.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace quiver::testing {

// A child process whose stdin and stdout are pipes to the test.
class Child {
 public:
  static Child Start(const std::vector<std::string>& argv);
  Child() = default;
  Child(Child&& o) noexcept;
  Child& operator=(Child&& o) noexcept;
  ~Child();

  bool started() const { return pid_ > 0; }
  // Reads stdout until a line containing `needle` (returns it) or
  // `timeout_ms`/EOF (returns "").
  std::string WaitForLine(const std::string& needle, int timeout_ms);
  // Everything read from stdout so far.
  const std::string& output() const { return out_; }
  // Closes stdin (a --hold reader then exits) and waits; returns the exit
  // code (128 + signal if killed).
  int Finish(int timeout_ms = 60000);
  void Kill(int sig);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_fd_ = -1;
  std::string out_;
  size_t scanned_ = 0;
};

// Path of a built binary (quiver, quiverd).
std::string BinaryPath(const std::string& name);

}  // namespace quiver::testing
