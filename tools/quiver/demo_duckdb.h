// The DuckDB part of `quiver demo`.
#pragma once

#include "demo_table.h"

namespace quiver::cli {

// Exposes `table` to DuckDB through the Arrow C Data/Stream interfaces, runs
// SQL over it, imports the results back into Quiver and checks them against
// `expect`. Prints one line per step; returns false on any mismatch.
bool DuckDbRoundTrip(const TablePtr& table, const DemoExpect& expect);

}  // namespace quiver::cli
