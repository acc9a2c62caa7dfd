// Plumbing of the Arrow JS interop tests (js_interop_test.cc): running the
// node scripts under tests/interop/js, a scratch directory, writing and
// reading IPC files with Quiver, and comparing what Quiver read with the
// canonical JSON a peer wrote (json_values_util.h).
//
// Comparisons return a list of human-readable problems, each naming the
// case, format, batch, column and row, instead of asserting, so that the
// tests can also check that a wrong value is reported. Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "js_cases_util.h"
#include "json_values_util.h"
#include "quiver/columnar/ipc.h"

namespace quiver::interop::js {

// The apache-arrow version the tests require (package.json pins it too).
inline constexpr char kPinnedArrowJsVersion[] = "21.2.0";

struct CommandResult {
  int exit_code = -1;  // the process's exit status; -1 if it did not exit normally
  std::string output;  // stdout and stderr, interleaved
};

// Runs `node tests/interop/js/<script> <arg>` from the source tree, finding
// node on PATH (exit code 127 when the shell cannot find it).
CommandResult RunNodeScript(const std::string& script, const std::string& arg);

// The problems with the "apache-arrow VERSION DIR" line a script prints
// first: it must name the pinned version, loaded from the repository's
// node_modules. Empty when all is well.
std::vector<std::string> CheckArrowJsBanner(const std::string& output);

// A fresh directory under the system temp dir, removed on destruction
// unless Keep() was called (to leave the evidence of a failure behind).
class TempDir {
 public:
  static Result<TempDir> Make(const std::string& prefix);
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)), keep_(other.keep_) {
    other.path_.clear();
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }
  void Keep() { keep_ = true; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
  bool keep_ = false;
};

// Writes the case's batches as a complete IPC stream or file at `path`.
Status WriteCase(const InteropCase& c, ipc::IpcFormat format, const std::string& path,
                 ipc::WriteStats* stats);

// What Quiver read from one IPC file: the schema, the batches (each already
// ValidateFull()ed) and, for streams, the reader's statistics.
struct ReadResult {
  SchemaPtr schema;
  std::vector<RecordBatchPtr> batches;
  ipc::ReadStats stats;
};
// Reads `path` (memory-mapped) with the stream or file reader.
Result<ReadResult> ReadIpcFile(const std::string& path, ipc::IpcFormat format);

// Compares a schema with the "schema" object of a case file.
std::vector<std::string> CompareSchema(const Json& expected, const Schema& actual,
                                       const std::string& where);
// Compares batches with the "batches" array of a case file.
std::vector<std::string> CompareBatches(const Json& expected,
                                        const std::vector<RecordBatchPtr>& batches,
                                        const Schema& schema, const std::string& where);

}  // namespace quiver::interop::js
