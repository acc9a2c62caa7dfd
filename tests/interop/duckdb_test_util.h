// Helpers of the DuckDB interop tests (duckdb_*_test.cc).
//
// SourceData is the tests' ground truth: plain C++ vectors of deterministic
// values, one per column. The Quiver table is built from them with the
// builders (batches that are slices at non-zero offsets), and every result
// DuckDB gives is checked against values computed from the vectors, never
// against the Quiver arrays themselves. Values are compared as canonical
// text (Canon), so that one comparison serves every type.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "duckdb/connection.h"
#include "quiver/columnar/table.h"

namespace quiver::duckdb_test {

template <typename T>
using Opt = std::optional<T>;
using IntList = std::vector<Opt<int32_t>>;
using MapEntries = std::vector<std::pair<std::string, Opt<int32_t>>>;

struct SourceData {
  std::vector<int64_t> id;
  std::vector<Opt<bool>> flag;
  std::vector<Opt<int8_t>> i8;
  std::vector<Opt<int16_t>> i16;
  std::vector<Opt<int32_t>> i32;
  std::vector<Opt<int64_t>> i64;
  std::vector<Opt<uint8_t>> u8;
  std::vector<Opt<uint16_t>> u16;
  std::vector<Opt<uint32_t>> u32;
  std::vector<Opt<uint64_t>> u64;
  std::vector<Opt<float>> f32;
  std::vector<Opt<double>> f64;
  std::vector<Opt<int64_t>> dec;        // decimal128(18, 3), unscaled
  std::vector<Opt<int32_t>> days;       // date32; date64 holds days * 86400000
  std::vector<Opt<int32_t>> time_ms;    // time32[ms]
  std::vector<Opt<int64_t>> time_us;    // time64[us]; time64[ns] holds us * 1000
  std::vector<Opt<int64_t>> secs;       // timestamp seconds; finer units add a fraction
  std::vector<Opt<int64_t>> dur_us;     // duration[us]
  std::vector<Opt<int64_t>> dur_ms;     // duration[ms]
  std::vector<Opt<std::string>> str;    // utf8 and large_utf8
  std::vector<Opt<std::string>> bin;    // binary and large_binary (with zero bytes)
  std::vector<Opt<std::string>> fixed;  // fixed_size_binary[4]
  std::vector<Opt<IntList>> lists;      // list and large_list
  std::vector<Opt<std::array<Opt<int32_t>, 2>>> pairs;  // fixed_size_list[2]
  std::vector<Opt<std::pair<Opt<int32_t>, Opt<std::string>>>> structs;
  std::vector<Opt<MapEntries>> maps;   // map<utf8, int32>, keys unique per map
  std::vector<Opt<std::string>> dict;  // dictionary<int32, utf8>

  int64_t rows() const { return static_cast<int64_t>(id.size()); }
  // The timestamp of row i in `unit` (seconds plus a per-row fraction).
  Opt<int64_t> Timestamp(int64_t i, TimeUnit unit) const;
};

SourceData MakeSourceData(int64_t rows);

// Every column of the source table, in order, with its Quiver type.
std::vector<std::pair<std::string, TypePtr>> SourceColumns();

// The source table: the columns named in `columns` (all when empty), cut
// into batches of about `batch_rows` rows; each batch is a slice at a
// non-zero offset of arrays that hold a few other rows before it.
Result<TablePtr> MakeSourceTable(const SourceData& d, int64_t batch_rows,
                                 const std::vector<std::string>& columns = {});

// The canonical text of a value: "null", integers and temporal values as
// their integer, floats with round-trip precision, decimals with their
// scale, strings and bytes quoted raw, "[a,b]" for lists, "{a,b}" for
// structs, "{k:v,...}" for maps, dictionaries as their value.
std::string Canon(const Array& array, int64_t i);
std::vector<std::string> CanonColumn(const ChunkedArray& column);
std::string CanonDouble(double v);
std::string CanonFloat(float v);

// The canonical text of source column `name`, row by row, as Quiver holds
// it (duckdb = false) or as DuckDB returns it after scanning it (duckdb =
// true: date64 as date32 days, time32[ms] as microseconds, time zones as
// microseconds, dictionaries decoded).
std::vector<std::string> ExpectedColumn(const SourceData& d, const std::string& name,
                                        bool duckdb);

// A connection to a new in-memory DuckDB (the connection keeps it alive).
Result<std::unique_ptr<duckdb::Connection>> OpenConnection();
// The same, with `batches` (one schema) registered as the table `name`.
Result<std::unique_ptr<duckdb::Connection>> OpenWithTable(
    const std::vector<RecordBatchPtr>& batches, const std::string& name = "t");

// Every row of column `c` of `table`, printed (FormatValue).
std::vector<std::string> FormatRows(const Table& table, int c);

// Calls fn(batch, k) for row k of every batch of `table`, in order; the
// batch's columns are held by the caller for the call. Returns the rows seen.
int64_t ForEachRow(const Table& table,
                   const std::function<void(const std::vector<ArrayPtr>&, int64_t)>& fn);

// A reader over the table's batches, for one registration.
std::shared_ptr<RecordBatchReader> ReaderOf(const TablePtr& table);

}  // namespace quiver::duckdb_test
