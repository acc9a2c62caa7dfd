// `quiver chaos`, the soak of docs/chaos.md, run as a user runs it: a real
// cluster of daemons, worker processes and faults (SIGKILL, SIGSTOP of
// workers and daemons). The soak itself checks every value and waits on
// state (nodes online, memory back at its baseline), never on timing; the
// tests look only at its exit code and its report.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_util.h"

namespace quiver {
namespace {

using testing::ProcessResult;
using testing::RunQuiver;

// A failed run keeps its directory (/tmp/quiver-chaos-XXXXXX: the logs)
// and names it in its report; the tests remove it.
class ChaosTest : public testing::TempDirTest {
 protected:
  void RemoveKept(const ProcessResult& r) {
    const std::string prefix = "/tmp/quiver-chaos-";
    const size_t at = r.out.find(prefix);
    if (at == std::string::npos) return;
    std::error_code ec;
    std::filesystem::remove_all(r.out.substr(at, prefix.size() + 6), ec);
  }
};

std::string Report(const ProcessResult& r) {
  return "exit " + std::to_string(r.code) + "\n--- stdout\n" + r.out + "\n--- stderr\n" +
         r.err;
}

// The promise: under a minute of faults every read is exact or a clear
// error, nothing hangs, no daemon dies on its own, and once everything is
// unpublished and deleted every node's memory is back at its baseline.
// Six workers on four nodes keep a 2-core machine busy without starving
// the daemons' heartbeats.
// The sanitizer build (scripts/test.sh) runs it for QUIVER_CHAOS_SECONDS
// instead, to keep the test command within its time.
TEST_F(ChaosTest, AMinuteOfFaultsGivesNoWrongValueNoHangAndNoLeak) {
  const char* seconds = std::getenv("QUIVER_CHAOS_SECONDS");
  const std::string duration = seconds != nullptr && *seconds != '\0' ? seconds : "60";
  ProcessResult r =
      RunQuiver({"chaos", "--duration", duration, "--seed", "1", "--workers", "6"}, dir_);
  EXPECT_EQ(r.code, 0) << Report(r);
  EXPECT_NE(r.out.find("quiver chaos: OK"), std::string::npos) << Report(r);
  // Faults did happen, and work went on between them.
  for (const char* says : {"worker kills", "daemon kills", "daemon restarts", "publish",
                           "read", "release", "store.put", "cli.put"}) {
    EXPECT_NE(r.out.find(says), std::string::npos) << says << "\n" << Report(r);
  }
  EXPECT_EQ(r.out.find("daemon kills 0,"), std::string::npos) << Report(r);
  RemoveKept(r);
}

// The checker can fail: a reader told to expect one wrong value makes the
// run fail, naming the value.
TEST_F(ChaosTest, APlantedWrongValueFailsTheRun) {
  ProcessResult r =
      RunQuiver({"chaos", "--duration", "10", "--seed", "2", "--plant-wrong"}, dir_);
  EXPECT_EQ(r.code, 1) << Report(r);
  EXPECT_NE(r.out.find("WRONG"), std::string::npos) << Report(r);
  EXPECT_NE(r.out.find("(planted)"), std::string::npos) << Report(r);
  EXPECT_NE(r.out.find("quiver chaos: FAILED: wrong values"), std::string::npos)
      << Report(r);
  RemoveKept(r);
}

TEST_F(ChaosTest, BadFlagsAreRefused) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"chaos", "--nodes", "0"},
                                             {"chaos", "--workers", "x"},
                                             {"chaos", "--size", "lots"},
                                             {"chaos", "--frobnicate"},
                                             {"chaos-worker", "--node", "1"}}) {
    ProcessResult r = RunQuiver(args, dir_);
    EXPECT_EQ(r.code, 2) << args[1] << "\n" << Report(r);
    EXPECT_FALSE(r.err.empty()) << Report(r);
  }
}

}  // namespace
}  // namespace quiver
