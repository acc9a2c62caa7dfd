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
#include "duckdb_test_util.h"
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
  ASSERT_OK_AND_ASSIGN(auto conn, duckdb_test::OpenWithTable({slice}));
  ASSERT_OK_AND_ASSIGN(auto result,
                       conn->QueryTable("SELECT i, s, hex(b) AS b FROM t ORDER BY i"));
  ASSERT_EQ(result->num_rows(), slice->num_rows());
  const int64_t checked =
      duckdb_test::ForEachRow(*result, [](const std::vector<ArrayPtr>& c, int64_t k) {
        const int i = static_cast<const Int32Array&>(*c[0]).Value(k);
        const auto& texts = static_cast<const StringArray&>(*c[1]);
        const auto& blobs = static_cast<const StringArray&>(*c[2]);
        EXPECT_EQ(texts.IsNull(k), i % 9 == 4) << i;
        if (texts.IsNull(k)) return;
        EXPECT_EQ(texts.GetView(k), Value(i)) << i;
        EXPECT_EQ(blobs.GetView(k),
                  Hex(std::string(1, static_cast<char>(i % 256)) + Value(i)))
            << i;
      });
  EXPECT_EQ(checked, slice->num_rows());
}

TEST(DuckDBViews, DuckDBStringViewsImportAsTheSameText) {
  ASSERT_OK_AND_ASSIGN(auto conn, duckdb_test::OpenConnection());
  ASSERT_OK(conn->Execute("SET arrow_output_version = '1.4'"));
  ASSERT_OK(conn->Execute("SET produce_arrow_string_view = true"));
  const std::string sql =
      "SELECT i, CASE WHEN i % 11 = 5 THEN NULL ELSE 'value ' || i || "
      "repeat('x', (i % 30)::INTEGER) END AS s FROM range(20000) t(i) ORDER BY i";
  ASSERT_OK_AND_ASSIGN(auto table, conn->QueryTable(sql));
  ASSERT_EQ(table->schema()->field(1)->type()->id(), TypeId::kStringView)
      << table->schema()->ToString();
  ASSERT_OK(table->ValidateFull());
  int64_t row = 0;
  const int64_t rows =
      duckdb_test::ForEachRow(*table, [&](const std::vector<ArrayPtr>& c, int64_t k) {
        const auto& s = static_cast<const BinaryViewArray&>(*c[1]);
        EXPECT_EQ(s.IsNull(k), row % 11 == 5) << row;
        if (!s.IsNull(k)) {
          EXPECT_EQ(s.GetView(k), "value " + std::to_string(row) +
                                      std::string(static_cast<size_t>(row % 30), 'x'))
              << row;
        }
        ++row;
      });
  EXPECT_EQ(rows, 20000);
}

}  // namespace
}  // namespace quiver
