// Client.sql: `quiver sql` from Python (docs/sql.md). DuckDB in this
// process, a client of the session's node, where every published table the
// node can read is a view scanned zero-copy in cluster memory; locked down
// as `quiver sql` is (no file unless allow_files, no extension, no setting).
#pragma once

#include <optional>
#include <string>

#include "arrow_py.h"

namespace quiver::python {

// Runs `query` and returns its result (in DuckDB's memory), or with
// `publish` copies the result into node `node`'s region (default: the
// session's), publishes it under that name and returns it as read back
// from the cluster. Blocks, GIL released; Ctrl-C interrupts DuckDB.
std::shared_ptr<PyTable> RunSql(Session& s, const std::string& query, bool allow_files,
                                std::optional<std::string> publish,
                                std::optional<uint32_t> node);

}  // namespace quiver::python
