// Running the `quiver` binary from the CLI tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace quiver::testing {

struct ProcessResult {
  int code = -1;  // exit code, or 128 + signal
  std::string out, err;
};

std::string ReadFile(const std::string& path);

// Runs the built `quiver` with `args`; its stdout and stderr go through
// files in `dir`.
ProcessResult RunQuiver(const std::vector<std::string>& args, const std::string& dir);

// A fixture with a fresh temporary folder, removed afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  std::string dir_;
};

}  // namespace quiver::testing
