// The cases Quiver writes for Apache Arrow JS to read (js_interop_test.cc):
// deterministic pseudo-random tables over every Quiver type, built with
// Quiver's builders, together with the canonical JSON of the values that
// were appended (json_values_util.h). The JSON comes from the generator's
// own record of what it appended, never from reading the arrays back, so a
// wrong array cannot agree with itself.
//
// Not thread-safe; generation is deterministic for a given seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "json_values_util.h"
#include "quiver/columnar/record_batch.h"

namespace quiver::interop::js {

struct InteropCase {
  std::string name;
  SchemaPtr schema;
  std::vector<RecordBatchPtr> batches;
  // [{"length": rows, "columns": [[value, ...] per column]} per batch]
  Json expected_batches = Json::array();
  // Only the stream format can carry this case (a replaced dictionary).
  bool stream_only = false;
  // Writer options that change the bytes: the alignment of message bodies
  // (the format's minimum is 8) and the pre-1.0 message framing.
  int32_t alignment = 64;
  bool legacy_format = false;
  // The writer must emit at least this many dictionary deltas / replacements.
  int64_t min_dictionary_deltas = 0;
  int64_t min_replaced_dictionaries = 0;
};

// Every case: random tables over all types (batches are slices at offsets
// that are not multiples of 8), nested combinations, dictionaries of every
// index type, an empty table, zero-row batches, dictionary deltas and a
// dictionary replacement.
Result<std::vector<InteropCase>> MakeJsInteropCases();

// The case file read by tests/interop/js/read_check.mjs.
Json CaseToJson(const InteropCase& c, const std::string& stream_file,
                const std::string& file_file);

// Every TypeId that occurs in `type`, its children and dictionary values.
void CollectTypeIds(const DataType& type, std::vector<bool>* seen);

}  // namespace quiver::interop::js
