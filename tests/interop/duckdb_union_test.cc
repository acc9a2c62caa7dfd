// Unions with DuckDB (the pinned libduckdb.so) through the C Data Interface:
// Quiver's sparse unions (nulls in the members) scanned by DuckDB as UNION
// values, and read back as the same sparse union; dense unions, which DuckDB
// does not have, refused by name.
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

// Row i: an int32 member (i * 3) when i is even, else a string member; every
// seventh row's member value is null.
Result<RecordBatchPtr> UnionBatch(const TypePtr& type, int rows) {
  Int32Builder ids;
  QUIVER_ASSIGN_OR_RAISE(auto builder, MakeBuilder(type));
  auto* u = static_cast<UnionBuilder*>(builder.get());
  for (int i = 0; i < rows; ++i) {
    QUIVER_RETURN_NOT_OK(ids.Append(i));
    const bool is_int = i % 2 == 0;
    QUIVER_RETURN_NOT_OK(u->Append(is_int ? 0 : 1));
    ArrayBuilder* child = u->child_builder(is_int ? 0 : 1);
    if (i % 7 == 3) {
      QUIVER_RETURN_NOT_OK(child->AppendNull());
    } else if (is_int) {
      QUIVER_RETURN_NOT_OK(static_cast<Int32Builder*>(child)->Append(i * 3));
    } else {
      QUIVER_RETURN_NOT_OK(
          static_cast<StringBuilder*>(child)->Append("s" + std::to_string(i)));
    }
  }
  QUIVER_ASSIGN_OR_RAISE(auto id_array, ids.Finish());
  QUIVER_ASSIGN_OR_RAISE(auto union_array, u->Finish());
  return RecordBatch::FromArrays({"i", "u"}, {id_array, union_array});
}

TEST(DuckDBUnions, QuiverSparseUnionsReadAsTheSameValues) {
  auto type = sparse_union({field("n", int32()), field("s", utf8())});
  ASSERT_OK_AND_ASSIGN(auto batch, UnionBatch(type, 1000));
  // Whole: DuckDB 1.5 reads a sliced sparse union's children without the
  // union's offset (docs/c-data.md).
  const RecordBatchPtr& slice = batch;
  ASSERT_OK_AND_ASSIGN(auto conn, duckdb_test::OpenWithTable({slice}));
  // Member names and values as DuckDB sees them.
  ASSERT_OK_AND_ASSIGN(
      auto text,
      conn->QueryTable("SELECT i, union_tag(u)::VARCHAR AS tag, u::VARCHAR AS v "
                       "FROM t ORDER BY i"));
  ASSERT_EQ(text->num_rows(), slice->num_rows());
  const int64_t checked =
      duckdb_test::ForEachRow(*text, [](const std::vector<ArrayPtr>& c, int64_t k) {
        const int i = static_cast<const Int32Array&>(*c[0]).Value(k);
        const auto& tags = static_cast<const StringArray&>(*c[1]);
        const auto& values = static_cast<const StringArray&>(*c[2]);
        // DuckDB takes a union whose member value is null as a NULL union.
        EXPECT_EQ(values.IsNull(k), i % 7 == 3) << i;
        if (values.IsNull(k)) return;
        EXPECT_EQ(tags.GetView(k), i % 2 == 0 ? "n" : "s") << i;
        EXPECT_EQ(values.GetView(k),
                  i % 2 == 0 ? std::to_string(i * 3) : "s" + std::to_string(i))
            << i;
      });
  EXPECT_EQ(checked, slice->num_rows());
  // And back: DuckDB exports the UNION as the same sparse union.
  ASSERT_OK_AND_ASSIGN(auto back, conn->QueryTable("SELECT i, u FROM t ORDER BY i"));
  ASSERT_OK(back->ValidateFull());
  ASSERT_TRUE(back->schema()->field(1)->type()->Equals(*type))
      << back->schema()->field(1)->type()->ToString();
  const ArrayPtr original = slice->column(1);
  const auto got = duckdb_test::FormatRows(*back, 1);
  ASSERT_EQ(static_cast<int64_t>(got.size()), slice->num_rows());
  for (int64_t row = 0; row < slice->num_rows(); ++row) {
    // A NULL union comes back as a null of the first member.
    const std::string want = row % 7 == 3 ? "{n: null}" : FormatValue(*original, row);
    EXPECT_EQ(got[static_cast<size_t>(row)], want) << row;
  }
}

// DuckDB has no dense unions: registering one fails, naming the type.
TEST(DuckDBUnions, DenseUnionsAreRefusedByDuckDB) {
  auto type = dense_union({field("n", int32()), field("s", utf8())});
  ASSERT_OK_AND_ASSIGN(auto batch, UnionBatch(type, 10));
  ASSERT_OK_AND_ASSIGN(auto conn, duckdb_test::OpenConnection());
  Status st = conn->RegisterTable("t", Table::FromRecordBatches({batch}).ValueOrDie());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("Union"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("'t'"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace quiver
