// Human-readable text of arrays, in the layout of Arrow C++'s PrettyPrint:
//
//   [                 -- is_valid: all not null       -- dictionary:
//     1,              -- child 0 type: int32            [
//     null,             [                                 "a"
//     3                   1                             ]
//   ]                   ]                             -- indices:
//                                                       [ ... ]
//
// One value per line, nested arrays indented by 2 more spaces, strings
// quoted (with \", \\, \n, \t, \r and \xNN escapes for control characters and
// bytes that are not UTF-8), binary and fixed_size_binary as upper-case hex,
// decimals with their scale, dates/times/timestamps/durations as their stored
// integers, floats in the shortest form that reads back to the same value
// (float16 values as their float value: 0x2E66 prints as 0.099975586).
// Long arrays show their first and last `window` values around a "..." line.
// The output is deterministic. All functions are thread-safe.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "quiver/columnar/array.h"

namespace quiver {

struct PrettyPrintOptions {
  // Spaces in front of every line, the first one included.
  int indent = 0;
  // Arrays of more than 2 * window values print only the first and last
  // `window` of them.
  int64_t window = 10;
  // The same for arrays whose values are themselves arrays (list,
  // large_list, fixed_size_list, map), whose values take many lines each.
  int64_t container_window = 2;
  // Text of a null value.
  std::string null_rep = "null";
};

// Writes the text of `array` to `out` (no trailing newline). Returns the
// error of array.Validate() without writing anything if the array is not
// structurally sound, so that printing never reads outside its buffers.
Status PrettyPrint(const Array& array, const PrettyPrintOptions& options,
                   std::ostream* out);

// The value at logical index i on one line, for row-oriented output: "null",
// 42, 1.5, "text" (quoted and escaped as above), 0A1B (binary), [1, 2]
// (lists), {a: 1, b: "x"} (structs), {"k": 1} (maps); dictionary arrays show
// the dictionary value the index refers to. `array` must have passed
// Validate(); an index outside [0, length) gives "<out of range>".
std::string FormatValue(const Array& array, int64_t i);

}  // namespace quiver
