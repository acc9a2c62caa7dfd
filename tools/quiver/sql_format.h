// How `quiver sql` prints a result (docs/sql.md): an aligned table, CSV
// (RFC 4180), JSON (one array of objects) or an Arrow IPC stream.
#pragma once

#include <cstdio>
#include <string>

#include "quiver/columnar/table.h"

namespace quiver::cli {

enum class SqlFormat { kTable, kCsv, kJson, kArrow };

// "table", "csv", "json" or "arrow"; Invalid otherwise.
Result<SqlFormat> ParseSqlFormat(const std::string& text);

// Writes `table` to `out` in `format`. The table format truncates long
// values with "…" only when `width` (the terminal's columns) is positive
// and the table would not fit in it. kArrow writes to file descriptor
// `fileno(out)`.
Status WriteSqlResult(const Table& table, SqlFormat format, int width, std::FILE* out);

}  // namespace quiver::cli
