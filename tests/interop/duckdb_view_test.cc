// binary_view / string_view with DuckDB (the pinned libduckdb.so), both
// ways through the C Data Interface: Quiver's views (inline and out of line,
// nulls, several data buffers, a slice) scanned by DuckDB read as the same
// VARCHAR and BLOB values; DuckDB's own string_view output (when asked for
// it) imported into Quiver equals the text DuckDB computes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/status_macros.h"
#include "duckdb/connection.h"
#include "quiver/columnar/builder.h"

namespace quiver {
namespace {

std::string Value(int i) {
  std::string v = "row " + std::to_string(i);
  if (i % 3 != 0) v += " — with a tail longer than twelve bytes " + std::to_string(i * 7);
  return v;
}

std::string Hex(std::string_view bytes) {
  static const char* kDigits = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

TEST(DuckDBViews, QuiverViewsReadAsTheSameValues) {
  constexpr int kRows = 5000;
  BinaryViewBuilder s(utf8_view(), nullptr, 4096), b(binary_view(), nullptr, 4096);
  for (int i = 0; i < kRows; ++i) {
    if (i % 9 == 4) {
      ASSERT_OK(s.AppendNull());
      ASSERT_OK(b.AppendNull());
      continue;
    }
    ASSERT_OK(s.Append(Value(i)));
    ASSERT_OK(b.Append(std::string(1, static_cast<char>(i % 256)) + Value(i)));
  }
  ASSERT_OK_AND_ASSIGN(auto sa, s.Finish());
  ASSERT_OK_AND_ASSIGN(auto ba, b.Finish());
  ASSERT_GT(sa->data()->buffers.size(), 4u);  // several data buffers
  Int32Builder ib;
  for (int i = 0; i < kRows; ++i) ASSERT_OK(ib.Append(i));
  ASSERT_OK_AND_ASSIGN(auto ia, ib.Finish());
  ASSERT_OK_AND_ASSIGN(auto batch,
                       RecordBatch::FromArrays({"i", "s", "b"}, {ia, sa, ba}));
  const int64_t from = 123;
  auto slice = batch->Slice(from, kRows - 2 * from);
  ASSERT_OK_AND_ASSIGN(auto db, duckdb::Database::Open());
  ASSERT_OK_AND_ASSIGN(auto conn, duckdb::Connection::Open(db));
  ASSERT_OK(conn->RegisterTable("t", Table::FromRecordBatches({slice}).ValueOrDie()));
  ASSERT_OK_AND_ASSIGN(auto result,
                       conn->QueryTable("SELECT i, s, hex(b) AS b FROM t ORDER BY i"));
  ASSERT_EQ(result->num_rows(), slice->num_rows());
  ASSERT_OK_AND_ASSIGN(auto rows, result->ToRecordBatches());
  int64_t checked = 0;
  for (const auto& r : rows) {
    // column() makes a new Array each time: hold them while reading.
    const ArrayPtr c0 = r->column(0), c1 = r->column(1), c2 = r->column(2);
    const auto& ids = static_cast<const Int32Array&>(*c0);
    const auto& texts = static_cast<const StringArray&>(*c1);
    const auto& blobs = static_cast<const StringArray&>(*c2);
    for (int64_t k = 0; k < r->num_rows(); ++k, ++checked) {
      const int i = ids.Value(k);
      ASSERT_EQ(texts.IsNull(k), i % 9 == 4) << i;
      if (texts.IsNull(k)) continue;
      ASSERT_EQ(texts.GetView(k), Value(i)) << i;
      ASSERT_EQ(blobs.GetView(k),
                Hex(std::string(1, static_cast<char>(i % 256)) + Value(i)))
          << i;
    }
  }
  EXPECT_EQ(checked, slice->num_rows());
}

TEST(DuckDBViews, DuckDBStringViewsImportAsTheSameText) {
  ASSERT_OK_AND_ASSIGN(auto db, duckdb::Database::Open());
  ASSERT_OK_AND_ASSIGN(auto conn, duckdb::Connection::Open(db));
  ASSERT_OK(conn->Execute("SET arrow_output_version = '1.4'"));
  ASSERT_OK(conn->Execute("SET produce_arrow_string_view = true"));
  const std::string sql =
      "SELECT i, CASE WHEN i % 11 = 5 THEN NULL ELSE 'value ' || i || "
      "repeat('x', (i % 30)::INTEGER) END AS s FROM range(20000) t(i) ORDER BY i";
  ASSERT_OK_AND_ASSIGN(auto table, conn->QueryTable(sql));
  ASSERT_EQ(table->schema()->field(1)->type()->id(), TypeId::kStringView)
      << table->schema()->ToString();
  ASSERT_OK(table->ValidateFull());
  ASSERT_OK_AND_ASSIGN(auto batches, table->ToRecordBatches());
  int64_t row = 0;
  for (const auto& batch : batches) {
    const ArrayPtr column = batch->column(1);
    const auto& s = static_cast<const BinaryViewArray&>(*column);
    for (int64_t k = 0; k < batch->num_rows(); ++k, ++row) {
      ASSERT_EQ(s.IsNull(k), row % 11 == 5) << row;
      if (s.IsNull(k)) continue;
      ASSERT_EQ(s.GetView(k), "value " + std::to_string(row) +
                                  std::string(static_cast<size_t>(row % 30), 'x'))
          << row;
    }
  }
  EXPECT_EQ(row, 20000);
}

}  // namespace
}  // namespace quiver
