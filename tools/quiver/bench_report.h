// quiver bench: what a run writes (results.json, report.md, PNG plots).
#pragma once

#include <string>
#include <vector>

#include "bench_suite.h"

namespace quiver::cli::bench {

// One benchmark program as it ran.
struct ProgramRun {
  std::string name;
  std::string binary;
  std::string json;  // relative to the output directory
  std::string log;   // its console output, relative to the output directory
  int exit_code = -1;
  double seconds = 0;
  std::string error;  // non-empty: it failed (timeout, crash, no output)
};

struct RunInfo {
  std::string out_dir;
  std::string command;  // the command line, for the report
  bool quick = false;
  int repetitions = 0;
  std::string started;  // ISO 8601, UTC
  double wall_seconds = 0;
  std::vector<ProgramRun> programs;
};

struct ReportOutcome {
  std::vector<std::string> plots;     // PNG files written, relative to out_dir
  std::vector<std::string> problems;  // what is missing or failed
};

// Makes the plots, then writes report.md and results.json into info.out_dir.
ReportOutcome WriteOutputs(const RunInfo& info, const Results& results,
                           const std::vector<Figure>& figures);

// The path of gnuplot, or "" if it is not installed.
std::string FindGnuplot();

}  // namespace quiver::cli::bench
