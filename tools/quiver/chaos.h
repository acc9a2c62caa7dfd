// quiver chaos: a soak that proves (or disproves) Quiver's first promise --
// a reader gets exactly the table that was published, or a clear error,
// never a wrong value -- under SIGKILLed and SIGSTOPped clients and
// daemons (docs/chaos.md).
//
// Three parts, one process each kind:
//   chaos_command.cc  `quiver chaos`: the parent. Starts a LocalCluster,
//                     records every node's used bytes, runs the workers and
//                     the fault loop (chaos_parent.cc), then stops the chaos,
//                     cleans up, checks for leaks and prints the summary.
//   chaos_worker.cc   `quiver chaos-worker` (hidden): one client of one node
//                     looping seeded random operations (publish, read, hold,
//                     unpublish; chaos_store.cc: object store and the command
//                     line) and reporting each outcome as a line on stdout.
//
// This header holds what both sides share: the self-checking values every
// table and object carries (a reader verifies every value from the table's
// name or the object's id alone), and the line protocol between worker and
// parent. Everything here is a pure function or a plain struct: any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"

namespace quiver::cli::chaos {

// --- Self-checking values --------------------------------------------------

// SplitMix64's finalizer: a bijective 64-bit mix.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The tag of a table: a hash of its whole name (FNV-1a, then mixed).
inline uint64_t NameTag(std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ULL;
  return Mix64(h);
}

// Column `v` (int64) at row `row` of the table tagged `tag`.
inline int64_t ValueAt(uint64_t tag, uint64_t row) {
  return static_cast<int64_t>(Mix64(tag + row * 0xD1B54A32D192ED03ULL));
}
// Column `s` (utf8) is null at some rows...
inline bool TextNullAt(uint64_t tag, uint64_t row) { return Mix64(tag ^ ~row) % 13 == 0; }
// ...and elsewhere the decimal text of a second mix of `v`.
inline std::string TextAt(uint64_t tag, uint64_t row) {
  return std::to_string(
      Mix64(static_cast<uint64_t>(ValueAt(tag, row)) ^ 0xA5A5A5A55A5A5A5AULL));
}

// What a table's name says about it. Names are made by the workers:
//   c-<worker>-<n>-r<rows>            a whole table of 1-3 batches
//   h-<worker>-<n>-r<rows>-p<parts>   a HugeTable published in `parts`
//                                     parts; part j holds rows
//                                     [rows*j/parts, rows*(j+1)/parts)
// A plain value.
struct TableName {
  bool huge = false;
  uint64_t rows = 0;
  uint32_t parts = 1;
  uint64_t PartStart(uint32_t j) const { return rows * j / parts; }
};
// Nothing for names the soak did not make (the command line's, others').
std::optional<TableName> ParseTableName(std::string_view name);

// Byte `i` of the data of the store object whose id's first eight bytes
// are `prefix` (ObjectId::Prefix()).
inline uint8_t ObjectByteAt(uint64_t prefix, uint64_t i) {
  return static_cast<uint8_t>(Mix64(prefix ^ (i >> 3) * 0x9E3779B97F4A7C15ULL) >>
                              ((i & 7) * 8));
}
// An object's metadata names its data size: "chaos size=<n>".
std::string ObjectMetadata(uint64_t data_size);
std::optional<uint64_t> ParseObjectMetadata(std::string_view metadata);

// --- The worker -> parent line protocol -------------------------------------
//
// One line per event, fields separated by tabs (details may hold spaces):
//   hello <pid>                       the worker runs
//   start <kind> <detail>             an operation begins (for hang reports)
//   op <kind> <result> <ms> <detail>  an operation ended; result is "ok",
//                                     "err:<StatusCodeName>", "WRONG" or
//                                     "HANG" (took over kOpHangMs)
//   bye                               the worker stopped as asked
// The parent closes the worker's stdin to ask it to stop.

constexpr int kOpHangMs = 30000;      // an operation slower than this is a HANG
constexpr int kSilentHangMs = 35000;  // a running worker silent this long is hung

// One parsed line (a plain value; the parent's main thread parses them).
struct Line {
  std::string type;  // hello, start, op, bye
  std::string kind, result, detail;
  double ms = 0;
};
// Nothing for a line that is not of the protocol (kept in the worker log).
std::optional<Line> ParseLine(std::string_view text);
std::string FormatOp(std::string_view kind, std::string_view result, double ms,
                     std::string_view detail);

// A detail made safe for one field of one line: tabs and newlines become
// spaces, the rest as Escape() does.
std::string OneField(std::string_view text);

// --- The worker's command line ----------------------------------------------

// The worker's flags (a plain value, copied into its Worker).
struct WorkerOptions {
  std::string config;     // the cluster file
  std::string state_dir;  // the cluster's state directory (for `quiver put --dir`)
  std::string work_dir;   // scratch files (CSV files of the cli operation)
  uint32_t node = 0;
  uint64_t id = 0;           // unique per worker process of one run (names)
  uint64_t seed = 0;         // this worker's random sequence
  bool cli = false;          // also run the command line (`quiver put/sql/rm`)
  bool plant_wrong = false;  // expect one wrong value once (tests the checker)
};

int WorkerMain(const WorkerOptions& options);  // chaos_worker.cc

}  // namespace quiver::cli::chaos
