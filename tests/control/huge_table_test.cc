#include "quiver/control/huge_table.h"

#include <gtest/gtest.h>

#include "quiver/columnar/builder.h"

namespace quiver::control {
namespace {

RecordBatchPtr Batch(int64_t first, int64_t n) {
  Int64Builder b;
  for (int64_t i = first; i < first + n; ++i) EXPECT_TRUE(b.Append(i).ok());
  return RecordBatch::FromArrays({"row"}, {b.Finish().ValueOrDie()}).ValueOrDie();
}

TEST(HugeTableTest, OrdersChunksByFirstRow) {
  auto t = AssembleHugeTable(
      {{20, 2, Batch(20, 5)}, {0, 0, Batch(0, 10)}, {10, 1, Batch(10, 10)}});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ((*t)->num_rows(), 25);
  ASSERT_EQ((*t)->column(0)->num_chunks(), 3);
  int64_t row = 0;
  for (const auto& chunk : (*t)->column(0)->chunks()) {
    auto a = std::static_pointer_cast<Int64Array>(chunk);
    for (int64_t i = 0; i < a->length(); ++i) ASSERT_EQ(a->Value(i), row++);
  }
}

TEST(HugeTableTest, RejectsGapsOverlapsAndSchemaMismatch) {
  auto gap = AssembleHugeTable({{0, 0, Batch(0, 10)}, {12, 1, Batch(12, 3)}});
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.status().message().find("gap: rows [10, 12)"), std::string::npos)
      << gap.status().ToString();
  auto overlap = AssembleHugeTable({{0, 0, Batch(0, 10)}, {8, 1, Batch(8, 3)}});
  ASSERT_FALSE(overlap.ok());
  EXPECT_NE(overlap.status().message().find("overlap"), std::string::npos);
  auto late = AssembleHugeTable({{5, 3, Batch(5, 3)}});
  EXPECT_NE(late.status().message().find("gap: rows [0, 5)"), std::string::npos);
  StringBuilder s;
  ASSERT_TRUE(s.Append("x").ok());
  auto other = RecordBatch::FromArrays({"row"}, {s.Finish().ValueOrDie()}).ValueOrDie();
  auto mismatch = AssembleHugeTable({{0, 0, Batch(0, 1)}, {1, 1, other}});
  EXPECT_NE(mismatch.status().message().find("differs"), std::string::npos);
  EXPECT_FALSE(AssembleHugeTable({}).ok());
}

}  // namespace
}  // namespace quiver::control
