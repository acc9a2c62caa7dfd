// Library: DuckDB's C library, loaded at run time with dlopen.
//
// Quiver does not link DuckDB: the tests, the demo and the Thallus-style
// server load the libduckdb.so of the pinned npm package (or the one
// $QUIVER_DUCKDB_LIBRARY names) and resolve the C API functions of capi.h.
// A Library is immutable once loaded and safe to share between threads. It
// is never unloaded: DuckDB may still run threads and static destructors of
// its own, which dlclose would pull the code from under.
#pragma once

#include <memory>
#include <string>

#include "duckdb/capi.h"
#include "quiver/util/result.h"

namespace quiver::duckdb {

// Converts a DuckDB error into a Status, keeping DuckDB's message: the one
// boundary where DuckDB's errors enter Quiver. `context` says what failed.
Status FromDuckDBError(capi::duckdb_error_type type, const char* message,
                       const std::string& context);

class Library {
 public:
  // Loads the library at `path` and resolves every function Quiver uses.
  // Errors name the path and dlerror()'s text, or the missing function.
  static Result<std::shared_ptr<const Library>> Open(const std::string& path);
  // The process-wide library at DefaultPath(), loaded on first use. The
  // outcome (the library or the error) is kept for the process's life.
  static Result<std::shared_ptr<const Library>> Default();
  // $QUIVER_DUCKDB_LIBRARY if set and non-empty, else the pinned npm
  // package's libduckdb.so.
  static std::string DefaultPath();

  const std::string& path() const { return path_; }
  // DuckDB's version string, e.g. "v1.5.6".
  std::string version() const;
  const capi::Api& api() const { return api_; }

 private:
  Library() = default;
  std::string path_;
  capi::Api api_{};
};

}  // namespace quiver::duckdb
