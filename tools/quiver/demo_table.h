// The table `quiver demo` generates, and the aggregates it checks.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "quiver/columnar/table.h"

namespace quiver::cli {

// Per-category aggregates computed in C++ while generating, to check what
// the IPC reader and DuckDB report.
struct DemoExpect {
  int64_t rows = 0;
  int64_t null_scores = 0;
  __int128 amount_cents = 0;  // SUM(amount) in cents
  struct Group {
    int64_t count = 0;
    __int128 amount_cents = 0;
    int64_t max_id = INT64_MIN;
  };
  std::map<std::string, Group> by_category;
};

// Builds `rows` rows in batches of `batch_rows`: id int64, category
// dictionary<int8, utf8>, amount decimal128(12, 2), ts timestamp[us, UTC],
// name utf8, tags list<utf8>, flag bool, score float64 (every 7th null).
Result<TablePtr> MakeDemoTable(int64_t rows, int64_t batch_rows, DemoExpect* expect);

}  // namespace quiver::cli
