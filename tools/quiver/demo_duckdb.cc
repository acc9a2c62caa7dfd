#include "demo_duckdb.h"

#include <chrono>
#include <cstdio>
#include <string>

#include "commands.h"
#include "duckdb/connection.h"
#include "quiver/columnar/pretty_print.h"

namespace quiver::cli {

namespace {

// cents -> "123.45"
std::string Cents(__int128 cents) { return Decimal128(cents).ToString(2); }

// One value of a result table, as text, whatever its type.
std::string Cell(const Table& t, int column, int64_t row) {
  const ChunkedArray& col = *t.column(column);
  for (const auto& chunk : col.chunks()) {
    if (row < chunk->length()) return FormatValue(*chunk, row);
    row -= chunk->length();
  }
  return "<missing>";
}

struct Checker {
  bool ok = true;
  void Check(const std::string& what, const std::string& expected,
             const std::string& duckdb) {
    bool same = expected == duckdb;
    ok = ok && same;
    std::printf("  %-42s %22s %22s  %s\n", what.c_str(), expected.c_str(), duckdb.c_str(),
                same ? "ok" : "MISMATCH");
  }
};

double Ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                   start)
      .count();
}

}  // namespace

bool DuckDbRoundTrip(const TablePtr& table, const DemoExpect& expect) {
  auto start = std::chrono::steady_clock::now();
  auto db = duckdb::Database::Open();
  if (!db.ok()) return Fail("DuckDB", db.status()) == 0;
  auto conn = duckdb::Connection::Open(*db);
  if (!conn.ok()) return Fail("DuckDB", conn.status()) == 0;
  Status st = (*conn)->RegisterTable("demo", table);
  if (!st.ok()) return Fail("DuckDB: registering the table", st) == 0;
  std::printf("  %-34s %10.3f ms   %s\n", "DuckDB: load library, register", Ms(start),
              "table 'demo' scanned zero-copy through the Arrow C Data Interface");

  start = std::chrono::steady_clock::now();
  auto totals = (*conn)->QueryTable(
      "SELECT count(*), sum(amount), count(score), count(DISTINCT category) FROM demo");
  if (!totals.ok()) return Fail("DuckDB query", totals.status()) == 0;
  auto groups = (*conn)->QueryTable(
      "SELECT category::VARCHAR AS category, count(*) AS n, sum(amount) AS total, "
      "max(id) AS max_id FROM demo GROUP BY ALL ORDER BY category");
  if (!groups.ok()) return Fail("DuckDB query", groups.status()) == 0;
  auto join = (*conn)->QueryTable(
      "SELECT count(*) FROM demo a JOIN demo b ON a.id = b.id + 1 "
      "WHERE a.category = b.category");
  if (!join.ok()) return Fail("DuckDB query", join.status()) == 0;
  auto head =
      (*conn)->QueryTable("SELECT id, name, amount FROM demo ORDER BY id LIMIT 1000");
  if (!head.ok()) return Fail("DuckDB query", head.status()) == 0;
  std::printf("  %-34s %10.3f ms   %s\n", "DuckDB: 4 queries, results imported",
              Ms(start), "results come back as Arrow through the C Stream Interface");

  // The join counts neighbours with the same category; count it in C++ too.
  int64_t same_neighbours = 0;
  {
    std::string prev;
    int64_t row = 0;
    for (const auto& chunk : table->column(1)->chunks()) {
      for (int64_t i = 0; i < chunk->length(); ++i, ++row) {
        std::string cur = FormatValue(*chunk, i);
        if (row > 0 && cur == prev) ++same_neighbours;
        prev = cur;
      }
    }
  }

  std::printf("\n  %-42s %22s %22s\n", "check", "computed in C++", "DuckDB over Quiver");
  Checker c;
  c.Check("count(*)", std::to_string(expect.rows), Cell(**totals, 0, 0));
  c.Check("sum(amount)", Cents(expect.amount_cents), Cell(**totals, 1, 0));
  c.Check("count(score) (nulls skipped)",
          std::to_string(expect.rows - expect.null_scores), Cell(**totals, 2, 0));
  c.Check("count(DISTINCT category)", std::to_string(expect.by_category.size()),
          Cell(**totals, 3, 0));
  int64_t row = 0;
  for (const auto& [cat, g] : expect.by_category) {
    c.Check("'" + cat + "': count", std::to_string(g.count), Cell(**groups, 1, row));
    c.Check("'" + cat + "': sum(amount)", Cents(g.amount_cents), Cell(**groups, 2, row));
    c.Check("'" + cat + "': max(id)", std::to_string(g.max_id), Cell(**groups, 3, row));
    ++row;
  }
  c.Check("self-join, same category as previous id", std::to_string(same_neighbours),
          Cell(**join, 0, 0));
  // The first rows, back from DuckDB, equal Quiver's own columns.
  auto mine = table->Slice(0, 1000);
  bool rows_equal = (*head)->num_rows() == mine->num_rows();
  for (int col : {0, 1, 2}) {
    const int source = col == 0 ? 0 : (col == 1 ? 4 : 2);
    for (int64_t r = 0; rows_equal && r < mine->num_rows(); ++r) {
      rows_equal = Cell(**head, col, r) == Cell(*mine, source, r);
    }
  }
  c.Check("first rows (id, name, amount) equal",
          std::to_string(mine->num_rows()) + " rows",
          rows_equal ? std::to_string((*head)->num_rows()) + " rows" : "differ");
  return c.ok;
}

}  // namespace quiver::cli
