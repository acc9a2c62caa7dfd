// List views with DuckDB (the pinned libduckdb.so) through the C Data
// Interface: DuckDB's LIST results as list_view (arrow_output_version '1.5'
// with arrow_output_list_view), and Quiver's list views (unordered,
// overlapping, sliced) scanned by DuckDB as LIST values.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/status_macros.h"
#include "duckdb/connection.h"
#include "duckdb_test_util.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/pretty_print.h"

namespace quiver {
namespace {

using duckdb_test::FormatRows;

TEST(DuckDBListViews, DuckDBListsArriveAsListViews) {
  ASSERT_OK_AND_ASSIGN(auto conn, duckdb_test::OpenConnection());
  const std::string sql =
      "SELECT CASE WHEN i % 5 = 3 THEN NULL ELSE "
      "list_transform(range(i % 4), x -> CASE WHEN x = 2 THEN NULL ELSE x * i END) "
      "END AS l FROM range(2500) t(i) ORDER BY i";
  ASSERT_OK_AND_ASSIGN(auto lists, conn->QueryTable(sql));
  ASSERT_EQ(lists->schema()->field(0)->type()->id(), TypeId::kList);
  ASSERT_OK(conn->Execute("SET arrow_output_version = '1.5'"));
  ASSERT_OK(conn->Execute("SET arrow_output_list_view = true"));
  ASSERT_OK_AND_ASSIGN(auto views, conn->QueryTable(sql));
  ASSERT_EQ(views->schema()->field(0)->type()->id(), TypeId::kListView)
      << views->schema()->ToString();
  ASSERT_OK(views->ValidateFull());
  // The same values as DuckDB's plain lists, row by row.
  const auto expected = FormatRows(*lists, 0);
  const auto got = FormatRows(*views, 0);
  ASSERT_EQ(got.size(), 2500u);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(got[3], "null");
  EXPECT_EQ(got[7], "[0, 7, null]");
}

TEST(DuckDBListViews, QuiverListViewsScannedAsLists) {
  // Over [0, 1, ..., 9, null]: unordered and overlapping views, empty ones,
  // a null slot with a view that lies outside the child (never read). DuckDB
  // 1.5.6 misreads some views reaching beyond the sum of their batch's view
  // sizes (docs/c-data.md): each batch here adds up to at least the child
  // values its views reach.
  auto ints = std::make_shared<Int32Builder>();
  for (int v = 0; v < 10; ++v) ASSERT_OK(ints->Append(v));
  ASSERT_OK(ints->AppendNull());
  ASSERT_OK_AND_ASSIGN(auto child, ints->Finish());
  ASSERT_OK_AND_ASSIGN(auto lv, LargeListViewArray::Make(
                                    {8, 0, 2, 99, 5, 0, 3}, {3, 4, 5, 7, 0, 10, 2}, child,
                                    {true, true, true, false, true, true, true}));
  Int32Builder ids;
  for (int i = 0; i < 7; ++i) ASSERT_OK(ids.Append(i));
  ASSERT_OK_AND_ASSIGN(auto id_array, ids.Finish());
  auto batch = RecordBatch::FromArrays({"i", "l"}, {id_array, lv}).ValueOrDie();
  // Two batches, the second a slice at a non-zero offset (rows 3..6).
  ASSERT_OK_AND_ASSIGN(auto conn,
                       duckdb_test::OpenWithTable({batch->Slice(0, 3), batch->Slice(3)}));
  ASSERT_OK_AND_ASSIGN(auto text,
                       conn->QueryTable("SELECT l::VARCHAR AS v, len(l) AS n FROM t "
                                        "ORDER BY i"));
  EXPECT_EQ(FormatRows(*text, 0),
            (std::vector<std::string>{
                "\"[8, 9, NULL]\"", "\"[0, 1, 2, 3]\"", "\"[2, 3, 4, 5, 6]\"", "null",
                "\"[]\"", "\"[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\"", "\"[3, 4]\""}));
  EXPECT_EQ(FormatRows(*text, 1),
            (std::vector<std::string>{"3", "4", "5", "null", "0", "10", "2"}));
}

}  // namespace
}  // namespace quiver
