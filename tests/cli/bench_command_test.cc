// `quiver bench`, run as a separate process over a fast subset of the suite
// (the descriptor and memory programs, quick mode): results.json must parse
// and give every figure its reference ratio, report.md must have a section
// per published result, and every plot must be a PNG. No timing assertions:
// the numbers are whatever this machine measures.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_util.h"

namespace quiver {
namespace {

using testing::ReadFile;
using Ran = testing::ProcessResult;

Ran Quiver(const std::vector<std::string>& args, const std::string& dir) {
  return testing::RunQuiver(args, dir);
}

#ifdef QUIVER_HAVE_BENCH
bool HaveGnuplot() {
  std::istringstream path(std::getenv("PATH") ? std::getenv("PATH") : "");
  std::string dir;
  while (std::getline(path, dir, ':')) {
    if (!dir.empty() && access((dir + "/gnuplot").c_str(), X_OK) == 0) return true;
  }
  return false;
}
#endif

class BenchCommandTest : public testing::TempDirTest {
 protected:
  static bool BenchBuilt() {
    for (const char* b : {"descriptor_bench", "memory_bench"}) {
      const std::string p = std::string(QUIVER_BINARY_DIR) + "/bench/" + b;
      if (access(p.c_str(), X_OK) != 0) return false;
    }
    return true;
  }
};

// Only in builds with the benchmarks (the sanitizer build has none).
#ifdef QUIVER_HAVE_BENCH
TEST_F(BenchCommandTest, QuickSubsetWritesResultsReportAndPlots) {
  ASSERT_TRUE(BenchBuilt()) << "benchmark programs missing next to quiver";
  const std::string out = dir_ + "/out";
  Ran r = Quiver({"bench", "descriptor", "memory", "--quick", "--out", out}, dir_);
  ASSERT_EQ(r.code, 0) << r.err << r.out;

  // results.json: every figure has its unit, repetitions, spread and ratio.
  auto doc = nlohmann::json::parse(ReadFile(out + "/results.json"), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << "results.json does not parse";
  EXPECT_EQ(doc["mode"], "quick");
  ASSERT_TRUE(doc["figures"].is_array());
  ASSERT_GT(doc["figures"].size(), 50u);  // Tables 5.2-5.4, Figures 5.2, 5.3
  std::set<std::string> sections_with_figures;
  for (const auto& f : doc["figures"]) {
    SCOPED_TRACE(f.value("id", "?"));
    ASSERT_TRUE(f["ratio"].is_number()) << f.dump();
    EXPECT_TRUE(std::isfinite(f["ratio"].get<double>()));
    EXPECT_FALSE(f.value("unit", "").empty());
    EXPECT_GE(f.value("repetitions", 0), 1);
    EXPECT_LE(f["min"].get<double>(), f["median"].get<double>());
    EXPECT_LE(f["median"].get<double>(), f["max"].get<double>());
    EXPECT_TRUE(f["reference"]["median"].is_number());
    EXPECT_FALSE(f["reference"].value("benchmark", "").empty());
    sections_with_figures.insert(f.value("section", ""));
  }
  for (const char* s :
       {"table-5.2", "table-5.3", "table-5.4", "figure-5.2", "figure-5.3"}) {
    EXPECT_TRUE(sections_with_figures.count(s)) << s;
  }
  EXPECT_TRUE(doc["problems"].empty()) << doc["problems"].dump();

  // report.md: one section per published result, the published numbers quoted.
  const std::string report = ReadFile(out + "/report.md");
  ASSERT_TRUE(doc["sections"].is_array());
  for (const auto& s : doc["sections"]) {
    EXPECT_NE(report.find("## " + s.value("title", "?")), std::string::npos)
        << s.value("title", "?");
  }
  for (const char* heading :
       {"## Table 5.2", "## Table 5.3", "## Table 5.4", "## Table 5.5", "## Figure 5.1",
        "## Figure 5.2", "## Figure 5.3", "## Section 5.4.1", "## Object store",
        "## Thallus"}) {
    EXPECT_NE(report.find(heading), std::string::npos) << heading;
  }
  for (const char* quoted :
       {"53.12 ms", "88.57 ms", "0.058 ms", "3.13 ms", "300.44 ms"}) {
    EXPECT_NE(report.find(quoted), std::string::npos) << quoted;
  }
  // Not run here: said so, not invented.
  EXPECT_NE(report.find("Not measured in this run: run `quiver bench cluster`"),
            std::string::npos);

  // Plots: each listed file is a PNG.
  ASSERT_TRUE(HaveGnuplot()) << "gnuplot not installed (scripts/setup.sh installs it)";
  std::set<std::string> plots;
  for (const auto& p : doc["plots"]) plots.insert(p.get<std::string>());
  for (const char* want : {"stride.png", "bandwidth.png", "published.png"}) {
    EXPECT_TRUE(plots.count(want)) << want;
  }
  for (const auto& p : plots) {
    const std::string png = ReadFile(out + "/" + p);
    ASSERT_GE(png.size(), 8u) << p;
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << p;
    EXPECT_NE(report.find("](" + p + ")"), std::string::npos) << p;
  }
}
#endif  // QUIVER_HAVE_BENCH

TEST_F(BenchCommandTest, BadInputIsOneLineAndExitCode2) {
  Ran r = Quiver({"bench", "no-such-bench", "--out", dir_ + "/x"}, dir_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown benchmark 'no-such-bench'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

#ifdef QUIVER_HAVE_BENCH
  std::ofstream(dir_ + "/a-file") << "x";
  r = Quiver({"bench", "descriptor", "--out", dir_ + "/a-file/sub"}, dir_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cannot write to --out"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
#endif

  r = Quiver({"bench", "--no-such-option"}, dir_);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace quiver
