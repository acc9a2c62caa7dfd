// Run-end encoded arrays with DuckDB (the pinned libduckdb.so) through the
// C Data Interface: Quiver's REE columns (strings with null runs, int64
// values with int16 run ends), whole and sliced at non-zero offsets that
// fall inside runs, scanned by DuckDB as plain VARCHAR and BIGINT values.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "duckdb/connection.h"
#include "duckdb_test_util.h"
#include "quiver/columnar/builder.h"

namespace quiver {
namespace {

constexpr int kRows = 5000;

// Row i's string: runs of 1 to 7 rows, every fifth run null.
std::optional<std::string> Text(int i) {
  const int run = i / 7 + (i % 7 < 3 ? 0 : 1000);  // two runs per 7 rows
  if (run % 5 == 3) return std::nullopt;
  return "run " + std::to_string(run);
}

// Row i's integer: runs of 13 rows.
int64_t Number(int i) { return static_cast<int64_t>(i / 13) * 1000003 - 7; }

// Builds column i (0..kRows-1), the REE text column and the REE int64
// column, each run as long as the rows that share a value.
Result<RecordBatchPtr> Batch() {
  Int32Builder ids;
  auto strings = std::make_shared<StringBuilder>();
  auto ints = std::make_shared<Int64Builder>();
  RunEndEncodedBuilder text(nullptr, strings, int32());
  RunEndEncodedBuilder numbers(nullptr, ints, int16());
  for (int i = 0; i < kRows; ++i) {
    QUIVER_RETURN_NOT_OK(ids.Append(i));
    if (i > 0 && Text(i) == Text(i - 1)) {
      QUIVER_RETURN_NOT_OK(text.ExtendRun());
    } else if (Text(i)) {
      QUIVER_RETURN_NOT_OK(text.Append());
      QUIVER_RETURN_NOT_OK(strings->Append(*Text(i)));
    } else {
      QUIVER_RETURN_NOT_OK(text.AppendNull());
    }
    if (i > 0 && Number(i) == Number(i - 1)) {
      QUIVER_RETURN_NOT_OK(numbers.ExtendRun());
    } else {
      QUIVER_RETURN_NOT_OK(numbers.Append());
      QUIVER_RETURN_NOT_OK(ints->Append(Number(i)));
    }
  }
  QUIVER_ASSIGN_OR_RAISE(auto id_array, ids.Finish());
  QUIVER_ASSIGN_OR_RAISE(auto text_array, text.Finish());
  QUIVER_ASSIGN_OR_RAISE(auto number_array, numbers.Finish());
  return RecordBatch::FromArrays({"i", "s", "n"}, {id_array, text_array, number_array});
}

TEST(DuckDBRunEndEncoded, QuiverRunsReadAsTheirValues) {
  ASSERT_OK_AND_ASSIGN(auto batch, Batch());
  ASSERT_OK(batch->ValidateFull());
  const ArrayPtr column = batch->column(1);  // held: column() makes a new Array
  const auto& runs = static_cast<const RunEndEncodedArray&>(*column);
  ASSERT_LT(runs.run_ends()->length(), kRows / 2);  // real runs, not one per row
  // Three batches: whole rows 0..999, then slices starting inside runs.
  std::vector<RecordBatchPtr> parts = {batch->Slice(0, 1000), batch->Slice(1002, 1999),
                                       batch->Slice(3001)};
  for (const auto& p : parts) ASSERT_OK(p->ValidateFull());
  ASSERT_OK_AND_ASSIGN(auto conn, duckdb_test::OpenWithTable(parts));
  ASSERT_OK_AND_ASSIGN(auto result, conn->QueryTable("SELECT i, s, n FROM t ORDER BY i"));
  ASSERT_EQ(result->schema()->field(1)->type()->id(), TypeId::kString)
      << result->schema()->ToString();
  ASSERT_EQ(result->schema()->field(2)->type()->id(), TypeId::kInt64);
  std::vector<int> seen;
  const int64_t rows =
      duckdb_test::ForEachRow(*result, [&](const std::vector<ArrayPtr>& c, int64_t k) {
        const int i = static_cast<const Int32Array&>(*c[0]).Value(k);
        const auto& s = static_cast<const StringArray&>(*c[1]);
        const auto& n = static_cast<const Int64Array&>(*c[2]);
        seen.push_back(i);
        const auto want = Text(i);
        EXPECT_EQ(s.IsNull(k), !want.has_value()) << i;
        if (want && !s.IsNull(k)) {
          EXPECT_EQ(s.GetView(k), *want) << i;
        }
        EXPECT_FALSE(n.IsNull(k)) << i;
        EXPECT_EQ(n.Value(k), Number(i)) << i;
      });
  EXPECT_EQ(rows, 1000 + 1999 + (kRows - 3001));
  // Exactly the rows of the three parts, none shifted.
  std::vector<int> want;
  for (int i = 0; i < kRows; ++i) {
    if (i < 1000 || i >= 1002) want.push_back(i);
  }
  EXPECT_EQ(seen, want);
  // DuckDB computes on the decoded values.
  ASSERT_OK_AND_ASSIGN(
      auto counts, conn->QueryTable("SELECT count(s) AS c, sum(n)::BIGINT AS t FROM t"));
  int64_t non_null = 0;
  int64_t total = 0;
  for (int i : want) {
    non_null += Text(i) ? 1 : 0;
    total += Number(i);
  }
  const auto text = duckdb_test::FormatRows(*counts, 0);
  ASSERT_EQ(text.size(), 1u);
  EXPECT_EQ(text[0], std::to_string(non_null));
  EXPECT_EQ(duckdb_test::FormatRows(*counts, 1)[0], std::to_string(total));
}

}  // namespace
}  // namespace quiver
