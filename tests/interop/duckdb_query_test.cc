// DuckDB -> Quiver: query results imported through the C Stream / C Data
// Interface, every value checked against what the SQL computes (done again
// in C++), every batch ValidateFull()ed, and the import shown zero-copy.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "common/status_macros.h"
#include "duckdb_test_util.h"
#include "quiver/columnar/pretty_print.h"

namespace quiver {
namespace {

using duckdb_test::CanonColumn;
using duckdb_test::CanonDouble;
using duckdb_test::CanonFloat;

class DuckDBQueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The library must load: without it these tests fail, never skip.
    auto db = duckdb::Database::Open();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    auto conn = duckdb::Connection::Open(*db);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    conn_ = conn.MoveValueUnsafe();
    ASSERT_TRUE(conn_->Execute("SET TimeZone = 'UTC'").ok());
  }

  // Every batch of `sql`, each ValidateFull()ed, gathered into a table.
  Result<TablePtr> Query(const std::string& sql, int64_t* batches = nullptr) {
    QUIVER_ASSIGN_OR_RAISE(auto reader, conn_->QueryArrow(sql));
    std::vector<RecordBatchPtr> all;
    while (true) {
      QUIVER_ASSIGN_OR_RAISE(RecordBatchPtr batch, reader->Next());
      if (batch == nullptr) break;
      QUIVER_RETURN_NOT_OK(batch->ValidateFull());
      all.push_back(std::move(batch));
    }
    if (batches != nullptr) *batches = static_cast<int64_t>(all.size());
    return Table::FromRecordBatches(all, reader->schema());
  }

  std::unique_ptr<duckdb::Connection> conn_;
};

TEST_F(DuckDBQueryTest, RangeValuesAsComputedInCpp) {
  constexpr int64_t kRows = 100000;
  int64_t batches = 0;
  auto table = Query(
      "SELECT i, i * 2 AS twice, 'x' || i AS s, "
      "CASE WHEN i % 7 = 0 THEN NULL ELSE i / 4 END AS q "
      "FROM range(" +
          std::to_string(kRows) + ") t(i) ORDER BY i",
      &batches);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ((*table)->num_rows(), kRows);
  EXPECT_GT(batches, 1) << "DuckDB hands over one array per data chunk";
  EXPECT_EQ((*table)->schema()->ToString(),
            quiver::schema({field("i", int64()), field("twice", int64()),
                            field("s", utf8()), field("q", float64())})
                ->ToString());
  auto i = CanonColumn(*(*table)->column(0));
  auto twice = CanonColumn(*(*table)->column(1));
  auto s = CanonColumn(*(*table)->column(2));
  auto q = CanonColumn(*(*table)->column(3));
  for (int64_t r = 0; r < kRows; ++r) {
    ASSERT_EQ(i[r], std::to_string(r));
    ASSERT_EQ(twice[r], std::to_string(r * 2));
    ASSERT_EQ(s[r], "\"x" + std::to_string(r) + "\"");
    ASSERT_EQ(q[r], r % 7 == 0 ? "null" : CanonDouble(static_cast<double>(r) / 4));
  }
}

// One column of the every-type query: its SQL over i, the Quiver type it
// must arrive as, and its value for row i as computed in C++.
struct TypeCase {
  std::string sql;
  std::string type;
  std::function<std::string(int64_t)> expected;
};

std::string Q(const std::string& s) { return "\"" + s + "\""; }
std::string Dec(__int128 unscaled, int32_t scale) {
  return Decimal128(unscaled).ToString(scale);
}

std::vector<TypeCase> TypeCases() {
  // Seconds since the epoch of TIMESTAMP '2000-01-01' + i * 3599 seconds.
  auto secs = [](int64_t i) { return int64_t{946684800} + i * 3599; };
  return {
      {"CASE WHEN i % 11 = 0 THEN NULL ELSE i % 2 = 0 END", "bool",
       [](int64_t i) { return i % 11 == 0 ? "null" : (i % 2 == 0 ? "true" : "false"); }},
      {"(i % 256 - 128)::TINYINT", "int8",
       [](int64_t i) { return std::to_string(i % 256 - 128); }},
      {"(i * 7 % 65536 - 32768)::SMALLINT", "int16",
       [](int64_t i) { return std::to_string(i * 7 % 65536 - 32768); }},
      {"(i * 100003 - 150000000)::INTEGER", "int32",
       [](int64_t i) { return std::to_string(i * 100003 - 150000000); }},
      {"i * 3000000000000 - 4000000000000000", "int64",
       [](int64_t i) { return std::to_string(i * 3000000000000 - 4000000000000000); }},
      {"(i % 256)::UTINYINT", "uint8", [](int64_t i) { return std::to_string(i % 256); }},
      {"(i * 21)::USMALLINT", "uint16", [](int64_t i) { return std::to_string(i * 21); }},
      {"(i * 1400000)::UINTEGER", "uint32",
       [](int64_t i) { return std::to_string(i * 1400000); }},
      {"i::UBIGINT * 6000000000000000", "uint64",
       [](int64_t i) {
         return std::to_string(static_cast<uint64_t>(i) * 6000000000000000ULL);
       }},
      {"i::FLOAT / 8::FLOAT", "float",
       [](int64_t i) { return CanonFloat(static_cast<float>(i) / 8.0f); }},
      {"i::DOUBLE / 3", "double",
       [](int64_t i) { return CanonDouble(static_cast<double>(i) / 3); }},
      // DuckDB's INTERVAL is months, days and microseconds: Arrow's
      // month_day_nano with nanoseconds = microseconds * 1000.
      {"CASE WHEN i % 5 = 0 THEN NULL ELSE to_months(i % 30 - 9) + to_days(i % 7) + "
       "to_microseconds(i * 1001 - 1000000) END",
       "month_day_nano_interval",
       [](int64_t i) {
         return i % 5 == 0 ? std::string("null")
                           : std::to_string(i % 30 - 9) + "M" + std::to_string(i % 7) +
                                 "d" + std::to_string((i * 1001 - 1000000) * 1000) + "ns";
       }},
      {"((i % 100) * 1.5)::DECIMAL(4,1)", "decimal128(4, 1)",
       [](int64_t i) { return Dec((i % 100) * 15, 1); }},
      {"((i - 1500) * 1.25)::DECIMAL(9,2)", "decimal128(9, 2)",
       [](int64_t i) { return Dec((i - 1500) * 125, 2); }},
      {"(i * 1.001)::DECIMAL(18,3)", "decimal128(18, 3)",
       [](int64_t i) { return Dec(i * 1001, 3); }},
      {"i::DECIMAL(38,10)", "decimal128(38, 10)",
       [](int64_t i) { return Dec(static_cast<__int128>(i) * 10000000000LL, 10); }},
      {"i::HUGEINT * 100000000000000000000::HUGEINT", "decimal128(38, 0)",
       [](int64_t i) {
         return Dec(static_cast<__int128>(i) * 10000000000LL * 10000000000LL, 0);
       }},
      {"DATE '2000-01-01' + i::INTEGER", "date32[day]",
       [](int64_t i) { return std::to_string(10957 + i); }},
      {"make_time(i % 24, i % 60, (i % 60) + 0.25)", "time64[us]",
       [](int64_t i) {
         return std::to_string(((i % 24 * 60 + i % 60) * 60 + i % 60) * 1000000 + 250000);
       }},
      {"TIMESTAMP '2000-01-01' + to_seconds(i * 3599)", "timestamp[us]",
       [secs](int64_t i) { return std::to_string(secs(i) * 1000000); }},
      {"(TIMESTAMP '2000-01-01' + to_seconds(i * 3599))::TIMESTAMP_S", "timestamp[s]",
       [secs](int64_t i) { return std::to_string(secs(i)); }},
      {"(TIMESTAMP '2000-01-01' + to_seconds(i * 3599))::TIMESTAMP_MS", "timestamp[ms]",
       [secs](int64_t i) { return std::to_string(secs(i) * 1000); }},
      {"(TIMESTAMP '2000-01-01' + to_seconds(i * 3599))::TIMESTAMP_NS", "timestamp[ns]",
       [secs](int64_t i) { return std::to_string(secs(i) * 1000000000); }},
      {"(TIMESTAMP '2000-01-01' + to_seconds(i * 3599))::TIMESTAMPTZ",
       "timestamp[us, tz=UTC]",
       [secs](int64_t i) { return std::to_string(secs(i) * 1000000); }},
      {"CASE WHEN i % 13 = 0 THEN NULL ELSE 'v' || i END", "string",
       [](int64_t i) { return i % 13 == 0 ? "null" : Q("v" + std::to_string(i)); }},
      {"('b' || i)::BLOB", "binary",
       [](int64_t i) { return Q("b" + std::to_string(i)); }},
      {"'00000000-0000-0000-0000-' || lpad(i::VARCHAR, 12, '0')", "string",
       [](int64_t i) {
         std::string digits = std::to_string(i);
         return Q("00000000-0000-0000-0000-" + std::string(12 - digits.size(), '0') +
                  digits);
       }},
      {"[i, i + 1, NULL]", "list<l: int64>",
       [](int64_t i) {
         return "[" + std::to_string(i) + "," + std::to_string(i + 1) + ",null]";
       }},
      {"CASE WHEN i % 5 = 0 THEN NULL ELSE range(i % 4) END", "list<l: int64>",
       [](int64_t i) -> std::string {
         if (i % 5 == 0) return "null";
         std::string out = "[";
         for (int64_t j = 0; j < i % 4; ++j)
           out += (j > 0 ? "," : "") + std::to_string(j);
         return out + "]";
       }},
      {"[[i], [], [i, i]]", "list<l: list<l: int64>>",
       [](int64_t i) {
         const std::string v = std::to_string(i);
         return "[[" + v + "],[],[" + v + "," + v + "]]";
       }},
      {"{'a': i, 'b': 'n' || i}", "struct<a: int64, b: string>",
       [](int64_t i) {
         return "{" + std::to_string(i) + "," + Q("n" + std::to_string(i)) + "}";
       }},
      {"MAP {'k' || (i % 3): i}", "map<string, int64>",
       [](int64_t i) {
         return "{" + Q("k" + std::to_string(i % 3)) + ":" + std::to_string(i) + "}";
       }},
      {"[i, -i]::INTEGER[2]", "fixed_size_list<: int32>[2]",
       [](int64_t i) {
         return "[" + std::to_string(i) + "," + std::to_string(-i) + "]";
       }},
      {"('e' || (i % 3))::mood", "dictionary<values=string, indices=uint8, ordered=0>",
       [](int64_t i) { return Q("e" + std::to_string(i % 3)); }},
      {"NULL", "int32", [](int64_t) { return std::string("null"); }},
  };
}

TEST_F(DuckDBQueryTest, EveryTypeDuckDBProduces) {
  constexpr int64_t kRows = 3000;
  ASSERT_TRUE(conn_->Execute("CREATE TYPE mood AS ENUM ('e0', 'e1', 'e2')").ok());
  const std::vector<TypeCase> cases = TypeCases();
  std::string sql = "SELECT i";
  for (size_t c = 0; c < cases.size(); ++c) {
    sql += ", " + cases[c].sql + " AS c" + std::to_string(c);
  }
  sql += " FROM generate_series(0, " + std::to_string(kRows - 1) + ") g(i) ORDER BY i";
  int64_t batches = 0;
  auto table = Query(sql, &batches);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ((*table)->num_rows(), kRows);
  EXPECT_GT(batches, 1);
  for (size_t c = 0; c < cases.size(); ++c) {
    SCOPED_TRACE(cases[c].sql);
    const ChunkedArray& column = *(*table)->column(static_cast<int>(c) + 1);
    EXPECT_EQ(column.type()->ToString(), cases[c].type);
    auto texts = CanonColumn(column);
    for (int64_t i = 0; i < kRows; ++i) {
      ASSERT_EQ(texts[i], cases[c].expected(i)) << "row " << i;
    }
  }
}

TEST_F(DuckDBQueryTest, ImportIsZeroCopy) {
  ArrowArrayStream stream;
  ASSERT_TRUE(
      conn_->QueryArrowStream("SELECT i, 'row ' || i AS s FROM range(5000) t(i)", &stream)
          .ok());
  ArrowSchema c_schema;
  ASSERT_EQ(stream.get_schema(&stream, &c_schema), 0);
  auto schema = ImportSchema(&c_schema);
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  int64_t rows = 0;
  while (true) {
    ArrowArray array;
    ASSERT_EQ(stream.get_next(&stream, &array), 0);
    if (array.release == nullptr) break;
    // DuckDB's buffer addresses, before the import takes the array over.
    const void* ints = array.children[0]->buffers[1];
    const void* offsets = array.children[1]->buffers[1];
    const void* chars = array.children[1]->buffers[2];
    auto batch = ImportRecordBatch(&array, *schema);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    EXPECT_EQ(array.release, nullptr) << "the import took DuckDB's array over";
    ASSERT_TRUE((*batch)->ValidateFull().ok());
    const ArrayData& i = *(*batch)->column_data(0);
    const ArrayData& s = *(*batch)->column_data(1);
    EXPECT_EQ(i.buffers[1]->data(), ints);
    EXPECT_EQ(s.buffers[1]->data(), offsets);
    EXPECT_EQ(s.buffers[2]->data(), chars);
    // The Buffers' owner is the moved C array, whose release is DuckDB's.
    EXPECT_NE(i.buffers[1]->owner(), nullptr);
    EXPECT_EQ(i.buffers[1]->owner(), s.buffers[2]->owner());
    rows += (*batch)->num_rows();
  }
  EXPECT_EQ(rows, 5000);
  stream.release(&stream);
}

TEST_F(DuckDBQueryTest, ErrorsCarryDuckDBsMessage) {
  auto bad = conn_->QueryArrow("SELEC 1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Parser Error"), std::string::npos)
      << bad.status().ToString();
  auto missing = conn_->QueryTable("SELECT * FROM no_such_table");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no_such_table"), std::string::npos);
  Status st = conn_->Execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES ('abc')");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("Conversion Error"), std::string::npos) << st.ToString();
}

// DuckDB exports a UNION as a sparse union ('+us:0,1,...'), which Quiver imports.
TEST_F(DuckDBQueryTest, UnionsAreSparseUnions) {
  auto u = conn_->QueryTable(
      "SELECT union_value(k := 1)::UNION(k INTEGER, s VARCHAR) AS u "
      "UNION ALL SELECT union_value(s := 'x')::UNION(k INTEGER, s VARCHAR)");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  ASSERT_EQ((*u)->num_columns(), 1);
  const auto& type = *(*u)->schema()->field(0)->type();
  EXPECT_EQ(type.id(), TypeId::kSparseUnion) << type.ToString();
  ASSERT_EQ(type.num_fields(), 2);
  ASSERT_EQ((*u)->num_rows(), 2);
  ASSERT_TRUE((*u)->ValidateFull().ok());
  std::vector<std::string> values;
  for (const auto& chunk : (*u)->column(0)->chunks()) {
    for (int64_t i = 0; i < chunk->length(); ++i)
      values.push_back(FormatValue(*chunk, i));
  }
  std::sort(values.begin(), values.end());
  EXPECT_EQ(values, (std::vector<std::string>{"{k: 1}", "{s: \"x\"}"}));
}

TEST_F(DuckDBQueryTest, EmptyResultHasItsSchema) {
  auto table = Query("SELECT 1::SMALLINT AS a, 'x' AS b WHERE false");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ((*table)->num_rows(), 0);
  EXPECT_EQ((*table)->schema()->ToString(),
            quiver::schema({field("a", int16()), field("b", utf8())})->ToString());
}

TEST_F(DuckDBQueryTest, ResultsOutliveTheConnection) {
  auto reader = conn_->QueryArrow("SELECT i FROM range(10000) t(i)");
  ASSERT_TRUE(reader.ok());
  conn_.reset();  // the reader keeps DuckDB's result and connection alive
  auto all = (*reader)->ReadAll();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  int64_t rows = 0;
  for (const auto& b : *all) rows += b->num_rows();
  EXPECT_EQ(rows, 10000);
  // And the batches outlive the reader.
  reader->reset();
  EXPECT_EQ((*all)[0]->column(0)->length(), (*all)[0]->num_rows());
  EXPECT_EQ(CanonColumn(*ChunkedArray::Make({(*all)[0]->column(0)}).ValueOrDie())[7],
            "7");
}

// A streaming query computes each batch when it is asked for: a result of
// ten trillion rows is read from its start (a materialized one would never
// come back), and equals the materialized result where both finish.
TEST_F(DuckDBQueryTest, StreamedResultsComeBatchByBatch) {
  ASSERT_OK_AND_ASSIGN(auto reader,
                       conn_->StreamArrow("SELECT i FROM range(10000000000000) t(i)"));
  int64_t next = 0;
  for (int b = 0; b < 3; ++b) {
    ASSERT_OK_AND_ASSIGN(auto batch, reader->Next());
    ASSERT_NE(batch, nullptr);
    ASSERT_OK(batch->ValidateFull());
    ASSERT_EQ(batch->column(0)->type()->id(), TypeId::kInt64);
    const int64_t* values = batch->column_data()[0]->GetValues<int64_t>(1);
    for (int64_t r = 0; r < batch->num_rows(); ++r) ASSERT_EQ(values[r], next++);
  }
  EXPECT_GT(next, 0);
  reader = nullptr;  // the unfinished stream goes; the connection serves again

  const std::string sql = "SELECT i, i % 7 AS m, 'v' || i AS s FROM range(50000) t(i)";
  ASSERT_OK_AND_ASSIGN(auto streamed, conn_->StreamArrow(sql));
  ASSERT_OK_AND_ASSIGN(auto batches, streamed->ReadAll());
  ASSERT_OK_AND_ASSIGN(auto a, Table::FromRecordBatches(batches, streamed->schema()));
  ASSERT_OK_AND_ASSIGN(auto b, Query(sql));
  EXPECT_TRUE(a->Equals(*b));
}

TEST_F(DuckDBQueryTest, StreamedQueryErrorsCarryDuckDBsMessage) {
  auto parse = conn_->StreamArrow("SELEC 1");
  ASSERT_FALSE(parse.ok());
  EXPECT_NE(parse.status().message().find("Parser Error"), std::string::npos)
      << parse.status().ToString();
  auto two = conn_->StreamArrow("SELECT 1; SELECT 2");
  ASSERT_FALSE(two.ok());
  // An error met while computing a batch fails that Next.
  ASSERT_OK_AND_ASSIGN(
      auto reader,
      conn_->StreamArrow("SELECT CAST(CASE WHEN i < 100000 THEN '1' ELSE 'x' END AS "
                         "INTEGER) AS v FROM range(200000) t(i)"));
  Status st;
  while (st.ok()) {
    auto batch = reader->Next();
    if (!batch.ok()) {
      st = batch.status();
      break;
    }
    ASSERT_NE(*batch, nullptr) << "the conversion error never came";
  }
  EXPECT_NE(st.message().find("Conversion Error"), std::string::npos) << st.ToString();
}

// Cancel, from another thread, stops a query whose first batch would take
// hours (an aggregate over ten trillion rows): Next fails as Cancelled.
TEST_F(DuckDBQueryTest, CancelInterruptsAStreamedQuery) {
  ASSERT_OK_AND_ASSIGN(
      auto reader, conn_->StreamArrow("SELECT sum(i) FROM range(10000000000000) t(i)"));
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    reader->Cancel();
  });
  auto batch = reader->Next();
  canceller.join();
  ASSERT_FALSE(batch.ok());
  // Cancelled, not a failed query: `quiver put` tells the two apart.
  EXPECT_EQ(batch.status().code(), StatusCode::kCancelled) << batch.status().ToString();
  EXPECT_NE(batch.status().message().find("nterrupt"), std::string::npos)
      << batch.status().ToString();
  // The connection runs the next query.
  ASSERT_OK_AND_ASSIGN(auto table, Query("SELECT 42 AS x"));
  EXPECT_EQ(table->num_rows(), 1);
  reader = nullptr;
  // Cancelled before it ran: it never runs.
  ASSERT_OK_AND_ASSIGN(
      reader, conn_->StreamArrow("SELECT sum(i) FROM range(10000000000000) t(i)"));
  EXPECT_EQ(reader->schema()->ToString(),
            quiver::schema({field("sum(i)", decimal128(38, 0))})->ToString());
  reader->Cancel();
  auto never = reader->Next();
  ASSERT_FALSE(never.ok());
  EXPECT_EQ(never.status().code(), StatusCode::kCancelled) << never.status().ToString();
  EXPECT_NE(never.status().message().find("nterrupt"), std::string::npos)
      << never.status().ToString();
}

}  // namespace
}  // namespace quiver
