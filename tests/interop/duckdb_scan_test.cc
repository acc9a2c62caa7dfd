// Quiver -> DuckDB: Quiver tables exported as C streams, registered as
// views, queried with SQL; every answer is checked against values computed
// in C++ from the source vectors.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "duckdb_test_util.h"
#include "quiver/columnar/builder.h"

namespace quiver {
namespace {

using duckdb_test::CanonColumn;
using duckdb_test::ExpectedColumn;
using duckdb_test::MakeSourceData;
using duckdb_test::MakeSourceTable;
using duckdb_test::Opt;
using duckdb_test::ReaderOf;
using duckdb_test::SourceData;

constexpr int64_t kScanRows = 10007;

// The first difference between two columns of canonical text.
::testing::AssertionResult SameTexts(const std::vector<std::string>& got,
                                     const std::vector<std::string>& expected) {
  if (got.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << got.size() << " values, expected " << expected.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected[i]) {
      return ::testing::AssertionFailure()
             << "row " << i << ": got " << got[i] << ", expected " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

class DuckDBScanTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    source_ = new SourceData(MakeSourceData(kScanRows));
    auto table = MakeSourceTable(*source_, 1000);
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    table_ = new TablePtr(*table);
  }
  static void TearDownTestSuite() {
    delete source_;
    delete table_;
  }

  void SetUp() override {
    // The library must load: without it these tests fail, never skip.
    auto db = duckdb::Database::Open();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    auto conn = duckdb::Connection::Open(*db);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    conn_ = conn.MoveValueUnsafe();
    ASSERT_TRUE(conn_->Execute("SET TimeZone = 'UTC'").ok());
  }

  // Registers the source table as "src" (a fresh stream: one scan each),
  // runs `sql` and checks the result.
  Result<TablePtr> Query(const std::string& sql) {
    QUIVER_RETURN_NOT_OK(conn_->RegisterArrowStream("src", ReaderOf(*table_)));
    QUIVER_ASSIGN_OR_RAISE(TablePtr result, conn_->QueryTable(sql));
    QUIVER_RETURN_NOT_OK(result->ValidateFull());
    return result;
  }

  // The single row of `result` as canonical text per column.
  static std::vector<std::string> Row(const Table& result, int64_t row = 0) {
    std::vector<std::string> out;
    for (const auto& column : result.columns()) out.push_back(CanonColumn(*column)[row]);
    return out;
  }

  static SourceData* source_;
  static TablePtr* table_;
  std::unique_ptr<duckdb::Connection> conn_;
};

SourceData* DuckDBScanTest::source_ = nullptr;
TablePtr* DuckDBScanTest::table_ = nullptr;

// What DuckDB makes of each Quiver type it scans (and returns as Arrow).
const std::map<std::string, std::string>& DuckDBResultTypes() {
  static const std::map<std::string, std::string> types = {
      {"id", "int64"},
      {"flag", "bool"},
      {"i8", "int8"},
      {"i16", "int16"},
      {"i32", "int32"},
      {"i64", "int64"},
      {"u8", "uint8"},
      {"u16", "uint16"},
      {"u32", "uint32"},
      {"u64", "uint64"},
      {"f32", "float"},
      {"f64", "double"},
      {"dec", "decimal128(18, 3)"},
      {"d32", "date32[day]"},
      {"d64", "date32[day]"},
      {"t32", "time64[us]"},
      {"t64", "time64[us]"},
      {"t64n", "time64[ns]"},
      {"ts_s", "timestamp[s]"},
      {"ts_ms", "timestamp[ms]"},
      {"ts_us", "timestamp[us]"},
      {"ts_ns", "timestamp[ns]"},
      {"tz_us", "timestamp[us, tz=UTC]"},
      {"tz_ms", "timestamp[us, tz=UTC]"},
      {"dur_us", "int64"},  // INTERVAL, read back through epoch_us()
      {"dur_ms", "int64"},
      {"s", "string"},
      {"ls", "string"},
      {"b", "binary"},
      {"lb", "binary"},
      {"fsb", "binary"},
      {"l", "list<l: int32>"},
      {"ll", "list<l: int32>"},
      {"fsl", "fixed_size_list<: int32>[2]"},
      {"st", "struct<a: int32, b: string>"},
      {"m", "map<string, int32>"},
      {"dict", "string"},
      {"nul", "int32"},
  };
  return types;
}

TEST_F(DuckDBScanTest, EveryColumnComesBackInOrder) {
  auto result = Query(
      "SELECT * EXCLUDE (dur_us, dur_ms), epoch_us(dur_us) AS dur_us, "
      "epoch_us(dur_ms) AS dur_ms FROM src ORDER BY id");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ((*result)->num_rows(), kScanRows);
  for (const auto& [name, type] : duckdb_test::SourceColumns()) {
    SCOPED_TRACE(name + " (" + type->ToString() + ")");
    ChunkedArrayPtr column = (*result)->GetColumnByName(name);
    ASSERT_NE(column, nullptr);
    EXPECT_EQ(column->type()->ToString(), DuckDBResultTypes().at(name));
    EXPECT_TRUE(SameTexts(CanonColumn(*column), ExpectedColumn(*source_, name, true)));
  }
}

// ---- Aggregates ----

// Sum of the non-null values as DuckDB prints SUM of integers (HUGEINT).
template <typename T>
std::string IntegerSum(const std::vector<Opt<T>>& v) {
  __int128 sum = 0;
  for (const auto& x : v) sum += x ? static_cast<__int128>(*x) : 0;
  return Decimal128(sum).ToString(0);
}

template <typename T>
int64_t Count(const std::vector<Opt<T>>& v) {
  int64_t n = 0;
  for (const auto& x : v) n += x ? 1 : 0;
  return n;
}

// MIN and MAX of the canonical texts, ordered by the values (not the text).
template <typename T>
std::pair<std::string, std::string> MinMax(const std::vector<Opt<T>>& v,
                                           const std::vector<std::string>& texts) {
  int64_t lo = -1, hi = -1;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i]) continue;
    if (lo < 0 || *v[i] < *v[lo]) lo = static_cast<int64_t>(i);
    if (hi < 0 || *v[hi] < *v[i]) hi = static_cast<int64_t>(i);
  }
  return {texts[lo], texts[hi]};
}

TEST_F(DuckDBScanTest, AggregatesPerType) {
  const SourceData& d = *source_;
  std::string sql = "SELECT ";
  std::vector<std::string> expected;
  auto add = [&](const std::string& column, int64_t count,
                 std::pair<std::string, std::string> min_max, const std::string& sum) {
    sql += "COUNT(" + column + "), MIN(" + column + "), MAX(" + column + "), ";
    expected.insert(expected.end(),
                    {std::to_string(count), min_max.first, min_max.second});
    if (!sum.empty()) {
      sql += "SUM(" + column + "), ";
      expected.push_back(sum);
    }
  };
  auto texts = [&](const std::string& c) { return ExpectedColumn(d, c, true); };
  add("i8", Count(d.i8), MinMax(d.i8, texts("i8")), IntegerSum(d.i8));
  add("i16", Count(d.i16), MinMax(d.i16, texts("i16")), IntegerSum(d.i16));
  add("i32", Count(d.i32), MinMax(d.i32, texts("i32")), IntegerSum(d.i32));
  add("i64", Count(d.i64), MinMax(d.i64, texts("i64")), IntegerSum(d.i64));
  add("u8", Count(d.u8), MinMax(d.u8, texts("u8")), IntegerSum(d.u8));
  add("u16", Count(d.u16), MinMax(d.u16, texts("u16")), IntegerSum(d.u16));
  add("u32", Count(d.u32), MinMax(d.u32, texts("u32")), IntegerSum(d.u32));
  add("u64", Count(d.u64), MinMax(d.u64, texts("u64")), IntegerSum(d.u64));
  // Multiples of 0.5 and 0.25 of small magnitude: the sums are exact in
  // double whatever the order DuckDB adds in.
  double f32_sum = 0, f64_sum = 0;
  for (const auto& x : d.f32) f32_sum += x ? *x : 0;
  for (const auto& x : d.f64) f64_sum += x ? *x : 0;
  add("f32", Count(d.f32), MinMax(d.f32, texts("f32")),
      duckdb_test::CanonDouble(f32_sum));
  add("f64", Count(d.f64), MinMax(d.f64, texts("f64")),
      duckdb_test::CanonDouble(f64_sum));
  __int128 dec_sum = 0;
  for (const auto& x : d.dec) dec_sum += x ? *x : 0;
  add("dec", Count(d.dec), MinMax(d.dec, texts("dec")), Decimal128(dec_sum).ToString(3));
  add("d32", Count(d.days), MinMax(d.days, texts("d32")), "");
  add("d64", Count(d.days), MinMax(d.days, texts("d64")), "");
  add("t32", Count(d.time_ms), MinMax(d.time_ms, texts("t32")), "");
  add("t64", Count(d.time_us), MinMax(d.time_us, texts("t64")), "");
  for (const char* ts : {"ts_s", "ts_ms", "ts_us", "ts_ns", "tz_us", "tz_ms"}) {
    add(ts, Count(d.secs), MinMax(d.secs, texts(ts)), "");
  }
  add("s", Count(d.str), MinMax(d.str, texts("s")), "");
  add("ls", Count(d.str), MinMax(d.str, texts("ls")), "");
  add("b", Count(d.bin), MinMax(d.bin, texts("b")), "");
  add("lb", Count(d.bin), MinMax(d.bin, texts("lb")), "");
  add("fsb", Count(d.fixed), MinMax(d.fixed, texts("fsb")), "");
  add("dict", Count(d.dict), MinMax(d.dict, texts("dict")), "");
  sql += "COUNT(*) FROM src";
  expected.push_back(std::to_string(kScanRows));

  auto result = Query(sql);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ((*result)->num_rows(), 1);
  std::vector<std::string> got = Row(**result);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], expected[i])
        << (*result)->schema()->field(static_cast<int>(i))->name();
  }
}

// ---- Filters, GROUP BY, JOIN ----

TEST_F(DuckDBScanTest, FilterAndGroupBy) {
  // Computed in C++: rows where flag AND i32 > 0, grouped by i16 % 5.
  struct Group {
    int64_t n = 0;
    __int128 total = 0;
    bool any_total = false;
    Opt<std::string> top;
  };
  const SourceData& d = *source_;
  std::map<int, Group> groups;  // INT32_MAX stands for the NULL key
  for (int64_t i = 0; i < d.rows(); ++i) {
    if (!d.flag[i] || !*d.flag[i] || !d.i32[i] || *d.i32[i] <= 0) continue;
    Group& g = groups[d.i16[i] ? *d.i16[i] % 5 : INT32_MAX];
    ++g.n;
    if (d.i64[i]) {
      g.total += *d.i64[i];
      g.any_total = true;
    }
    if (d.str[i] && (!g.top || *g.top < *d.str[i])) g.top = d.str[i];
  }
  std::vector<std::string> expected;
  for (const auto& [k, g] : groups) {
    expected.push_back((k == INT32_MAX ? "null" : std::to_string(k)) + "|" +
                       std::to_string(g.n) + "|" +
                       (g.any_total ? Decimal128(g.total).ToString(0) : "null") + "|" +
                       (g.top ? "\"" + *g.top + "\"" : "null"));
  }
  auto result = Query(
      "SELECT i16 % 5 AS k, COUNT(*) AS n, SUM(i64) AS total, MAX(s) AS top FROM src "
      "WHERE flag AND i32 > 0 GROUP BY k ORDER BY k NULLS LAST");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ((*result)->num_rows(), static_cast<int64_t>(expected.size()));
  for (int64_t r = 0; r < (*result)->num_rows(); ++r) {
    auto row = Row(**result, r);
    EXPECT_EQ(row[0] + "|" + row[1] + "|" + row[2] + "|" + row[3], expected[r]);
  }
}

TEST_F(DuckDBScanTest, DictionaryGroupsWithStringPredicates) {
  const SourceData& d = *source_;
  struct Group {
    int64_t n = 0;
    int64_t first = -1;
    __int128 sum = 0;
  };
  std::map<std::string, Group> groups;  // "" stands for the NULL key (first)
  for (int64_t i = 0; i < d.rows(); ++i) {
    const bool has_7 = d.str[i] && d.str[i]->find('7') != std::string::npos;
    if (!(has_7 || !d.bin[i])) continue;
    Group& g = groups[d.dict[i] ? "\"" + *d.dict[i] + "\"" : ""];
    ++g.n;
    if (g.first < 0) g.first = i;
    g.sum += d.u32[i] ? *d.u32[i] : 0;
  }
  auto result = Query(
      "SELECT dict, COUNT(*) AS n, MIN(id) AS first, SUM(u32) AS su FROM src "
      "WHERE s LIKE '%7%' OR b IS NULL GROUP BY dict ORDER BY dict NULLS FIRST");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ((*result)->num_rows(), static_cast<int64_t>(groups.size()));
  int64_t r = 0;
  for (const auto& [key, g] : groups) {
    auto row = Row(**result, r++);
    EXPECT_EQ(row[0], key.empty() ? "null" : key);
    EXPECT_EQ(row[1], std::to_string(g.n));
    EXPECT_EQ(row[2], std::to_string(g.first));
    EXPECT_EQ(row[3], Decimal128(g.sum).ToString(0));
  }
}

// A small dimension table: keys 0..9 without 7.
TablePtr DimensionTable() {
  Int32Builder keys(int32(), nullptr);
  StringBuilder names;
  DoubleBuilder weights(float64(), nullptr);
  for (int k = 0; k < 10; ++k) {
    if (k == 7) continue;
    EXPECT_TRUE(keys.Append(k).ok());
    EXPECT_TRUE(names.Append("name-" + std::to_string(k)).ok());
    EXPECT_TRUE(weights.Append(k * 1.5).ok());
  }
  auto batch = RecordBatch::FromArrays(
      {"key", "name", "weight"}, {keys.Finish().ValueOrDie(), names.Finish().ValueOrDie(),
                                  weights.Finish().ValueOrDie()});
  // Two batches, the second a slice at an offset.
  RecordBatchPtr b = batch.ValueOrDie();
  return Table::FromRecordBatches({b->Slice(0, 4), b->Slice(4)}).ValueOrDie();
}

TEST_F(DuckDBScanTest, JoinOfTwoQuiverTables) {
  const SourceData& d = *source_;
  struct Group {
    int64_t n = 0;
    __int128 total = 0;
    bool any = false;
    double weight = 0;
  };
  std::map<std::string, Group> groups;
  for (int64_t i = 0; i < d.rows(); ++i) {
    if (!d.u8[i] || *d.u8[i] % 10 == 7) continue;
    const int k = *d.u8[i] % 10;
    Group& g = groups["name-" + std::to_string(k)];
    ++g.n;
    g.weight += k * 1.5;
    if (d.i64[i]) {
      g.total += *d.i64[i];
      g.any = true;
    }
  }
  ASSERT_TRUE(conn_->RegisterArrowStream("dim", ReaderOf(DimensionTable())).ok());
  auto result = Query(
      "SELECT d.name, COUNT(*) AS n, SUM(f.i64) AS total, SUM(d.weight) AS w "
      "FROM src f JOIN dim d ON f.u8 % 10 = d.key GROUP BY d.name ORDER BY d.name");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ((*result)->num_rows(), static_cast<int64_t>(groups.size()));
  int64_t r = 0;
  for (const auto& [name, g] : groups) {
    auto row = Row(**result, r++);
    EXPECT_EQ(row[0], "\"" + name + "\"");
    EXPECT_EQ(row[1], std::to_string(g.n));
    EXPECT_EQ(row[2], g.any ? Decimal128(g.total).ToString(0) : "null");
    EXPECT_EQ(row[3], duckdb_test::CanonDouble(g.weight));
  }
}

TEST_F(DuckDBScanTest, NestedValuesInSql) {
  const SourceData& d = *source_;
  __int128 list_items = 0, list_total = 0, first = 0, second = 0, struct_a = 0;
  int64_t struct_b = 0, map_entries = 0;
  __int128 map_total = 0;
  for (int64_t i = 0; i < d.rows(); ++i) {
    if (d.lists[i]) {
      list_items += static_cast<int64_t>(d.lists[i]->size());
      for (const auto& v : *d.lists[i]) list_total += v ? *v : 0;
    }
    if (d.pairs[i]) {
      first += (*d.pairs[i])[0] ? *(*d.pairs[i])[0] : 0;
      second += (*d.pairs[i])[1] ? *(*d.pairs[i])[1] : 0;
    }
    if (d.structs[i]) {
      struct_a += d.structs[i]->first ? *d.structs[i]->first : 0;
      struct_b += d.structs[i]->second ? 1 : 0;
    }
    if (d.maps[i]) {
      map_entries += static_cast<int64_t>(d.maps[i]->size());
      for (const auto& [k, v] : *d.maps[i]) map_total += v ? *v : 0;
    }
  }
  auto result = Query(
      "SELECT SUM(len(l)), SUM(list_sum(l)), SUM(len(ll)), SUM(list_sum(ll)), "
      "SUM(fsl[1]), SUM(fsl[2]), SUM(st.a), COUNT(st.b), SUM(cardinality(m)), "
      "SUM(list_sum(map_values(m))) FROM src");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  auto I = [](__int128 v) { return Decimal128(v).ToString(0); };
  std::vector<std::string> expected = {
      I(list_items),  I(list_total), I(list_items), I(list_total),
      I(first),       I(second),     I(struct_a),   std::to_string(struct_b),
      I(map_entries), I(map_total)};
  EXPECT_EQ(Row(**result), expected);
}

// ---- Errors and lifetimes ----

// Yields its batches, then fails.
class FailingReader : public RecordBatchReader {
 public:
  explicit FailingReader(TablePtr table) : inner_(ReaderOf(table)) {}
  SchemaPtr schema() const override { return inner_->schema(); }
  Result<RecordBatchPtr> Next() override {
    QUIVER_ASSIGN_OR_RAISE(auto batch, inner_->Next());
    if (batch == nullptr) return Status::IOError("the disk caught fire");
    return batch;
  }

 private:
  std::shared_ptr<RecordBatchReader> inner_;
};

TEST_F(DuckDBScanTest, ReaderErrorFailsTheQueryWithItsMessage) {
  ASSERT_TRUE(
      conn_->RegisterArrowStream("bad", std::make_shared<FailingReader>(*table_)).ok());
  auto result = conn_->QueryTable("SELECT COUNT(*) FROM bad");
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("the disk caught fire"), std::string::npos)
      << result.status().ToString();
  EXPECT_NE(result.status().message().find("'bad'"), std::string::npos);
}

TEST_F(DuckDBScanTest, AStreamIsReadOnce) {
  ASSERT_TRUE(conn_->RegisterArrowStream("once", ReaderOf(*table_)).ok());
  auto first = conn_->QueryTable("SELECT COUNT(*) AS n FROM once");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(Row(**first)[0], std::to_string(kScanRows));
  auto second = conn_->QueryTable("SELECT COUNT(*) FROM once");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("already scanned"), std::string::npos)
      << second.status().ToString();
  // Registering again makes it readable again.
  ASSERT_TRUE(conn_->RegisterArrowStream("once", ReaderOf(*table_)).ok());
  EXPECT_TRUE(conn_->QueryTable("SELECT COUNT(*) FROM once").ok());
}

TEST_F(DuckDBScanTest, UnregisterDropsTheView) {
  ASSERT_TRUE(conn_->RegisterArrowStream("gone", ReaderOf(*table_)).ok());
  ASSERT_TRUE(conn_->Unregister("gone").ok());
  auto result = conn_->QueryTable("SELECT * FROM gone");
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("Catalog Error"), std::string::npos)
      << result.status().ToString();
  EXPECT_EQ(conn_->Unregister("gone").code(), StatusCode::kKeyError);
}

TEST_F(DuckDBScanTest, TypesDuckDBCannotScanAreReportedWithItsReason) {
  // DuckDB 1.5 scans neither half floats, nor decimals of negative scale,
  // nor decimal256, nor structs without fields (see docs/c-data.md).
  const std::vector<std::pair<TypePtr, std::string>> cases = {
      {float16(), "Unsupported Internal Arrow Type e"},
      {decimal128(10, -2), "DuckDB cannot scan"},
      {decimal256(38, 5), "Unsupported Internal Arrow Type for Decimal d:38,5,256"},
      {struct_({}), "STRUCT with no fields"},
  };
  for (const auto& [type, reason] : cases) {
    SCOPED_TRACE(type->ToString());
    auto empty = MakeEmptyArray(type);
    ASSERT_TRUE(empty.ok());
    auto batch = RecordBatch::FromArrays({"x"}, {*empty});
    ASSERT_TRUE(batch.ok());
    Status st = conn_->RegisterArrowStream(
        "t", RecordBatchReader::FromBatches((*batch)->schema(), {*batch}));
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find(reason), std::string::npos) << st.ToString();
  }
}

TEST_F(DuckDBScanTest, RegisteredBuffersOutliveTheSourceTable) {
  // The registration keeps the batches alive: the table may go away.
  auto table = MakeSourceTable(*source_, 3000, {"id", "s"});
  ASSERT_TRUE(table.ok());
  ASSERT_TRUE(conn_->RegisterArrowStream("tmp", ReaderOf(*table)).ok());
  table->reset();
  auto result = conn_->QueryTable("SELECT SUM(id) AS s, COUNT(s) AS n FROM tmp");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(Row(**result)[0], std::to_string(kScanRows * (kScanRows - 1) / 2));
  EXPECT_EQ(Row(**result)[1], std::to_string(Count(source_->str)));
}

// A name no view has is resolved when a statement uses it (DuckDB's
// replacement scan), and the table is held only until the next statement.
TEST_F(DuckDBScanTest, NamesAreResolvedWhenAStatementUsesThem) {
  std::vector<std::string> asked;
  std::weak_ptr<Table> held;
  ASSERT_TRUE(conn_
                  ->SetTableResolver([&](const std::string& name) -> Result<TablePtr> {
                    asked.push_back(name);
                    if (name == "lazy") {
                      QUIVER_ASSIGN_OR_RAISE(auto fresh, MakeSourceTable(*source_, 1000));
                      held = fresh;
                      return fresh;
                    }
                    if (name == "down")
                      return Status::Unavailable("node 2 does not answer");
                    return Status::NotFound("no table '", name, "' is published");
                  })
                  .ok());
  ASSERT_TRUE(conn_->QueryTable("SELECT 1").ok());
  EXPECT_TRUE(asked.empty()) << "a statement naming no table fetched one";
  auto r = conn_->QueryTable("SELECT COUNT(*) FROM lazy");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Row(**r)[0], std::to_string(kScanRows));
  EXPECT_EQ(asked, std::vector<std::string>{"lazy"});
  EXPECT_FALSE(held.expired()) << "let go before the next statement";
  ASSERT_TRUE(conn_->QueryTable("SELECT 2").ok());
  EXPECT_TRUE(held.expired()) << "still held after the next statement started";
  auto missing = conn_->QueryTable("SELECT * FROM nosuch");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nosuch"), std::string::npos)
      << missing.status().ToString();
  auto down = conn_->QueryTable("SELECT * FROM down");
  ASSERT_FALSE(down.ok());
  EXPECT_NE(down.status().message().find("node 2 does not answer"), std::string::npos)
      << down.status().ToString();
  // A registered view comes first; a null resolver answers no more.
  ASSERT_TRUE(conn_->RegisterTable("lazy", *table_).ok());
  asked.clear();
  ASSERT_TRUE(conn_->QueryTable("SELECT COUNT(*) FROM lazy").ok());
  EXPECT_TRUE(asked.empty());
  ASSERT_TRUE(conn_->SetTableResolver(nullptr).ok());
  EXPECT_FALSE(conn_->QueryTable("SELECT * FROM other").ok());
  EXPECT_TRUE(asked.empty());
}

}  // namespace
}  // namespace quiver

namespace quiver {
namespace {

// Quiver -> DuckDB for intervals: DuckDB reads month and month_day_nano
// values as the INTERVAL the same parts make (nanoseconds as whole
// microseconds). Its reading of day_time (days, then milliseconds, as the
// format says) is not checked: DuckDB 1.5.6 turns {-3 days, 37 ms} into
// 45335 hours, whatever the producer.
TEST(DuckDBIntervalScanTest, EveryIntervalUnitReadsAsTheSameInterval) {
  constexpr int kScanRows = 5000;
  IntervalBuilder m(month_interval()), d(day_time_interval()),
      n(month_day_nano_interval());
  for (int i = 0; i < kScanRows; ++i) {
    if (i % 7 == 0) {
      ASSERT_TRUE(m.AppendNull().ok() && d.AppendNull().ok() && n.AppendNull().ok());
      continue;
    }
    ASSERT_TRUE(m.AppendMonths(i % 40 - 20).ok());
    ASSERT_TRUE(d.Append(DayTimeInterval{i % 9 - 4, i * 37 % 86400000}).ok());
    ASSERT_TRUE(
        n.Append(MonthDayNanoInterval{i % 13, -(i % 5), int64_t{i} * 123457000}).ok());
  }
  auto batch = RecordBatch::FromArrays(
      {"m", "d", "n"},
      {m.Finish().ValueOrDie(), d.Finish().ValueOrDie(), n.Finish().ValueOrDie()});
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  auto db = duckdb::Database::Open();
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto conn = duckdb::Connection::Open(*db);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  ASSERT_TRUE(
      (*conn)->RegisterTable("t", Table::FromRecordBatches({*batch}).ValueOrDie()).ok());
  // Row numbers from the scan's order, then each value compared in SQL with
  // the interval DuckDB makes of the same parts.
  auto result = (*conn)->QueryTable(
      "WITH r AS (SELECT row_number() OVER () - 1 AS i, m, d, n FROM t) "
      "SELECT count(*) AS rows, "
      "count(*) FILTER (WHERE i % 7 = 0 AND m IS NULL AND d IS NULL AND n IS NULL) AS "
      "nulls, "
      "count(*) FILTER (WHERE m = to_months((i % 40 - 20)::INTEGER)) AS m_ok, "
      "count(*) FILTER (WHERE d IS NOT NULL) AS d_valid, "
      "count(*) FILTER (WHERE n = to_months((i % 13)::INTEGER) + to_days((-(i % "
      "5))::INTEGER) + "
      "  to_microseconds((i * 123457)::BIGINT)) AS n_ok FROM r");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  auto row = (*result)->ToRecordBatches().ValueOrDie()[0];
  const int64_t valid = kScanRows - (kScanRows + 6) / 7;
  auto count = [&](int c) {
    return static_cast<const Int64Array&>(*row->column(c)).Value(0);
  };
  EXPECT_EQ(count(0), kScanRows);
  EXPECT_EQ(count(1), kScanRows - valid);
  EXPECT_EQ(count(2), valid);
  EXPECT_EQ(count(3), valid);
  EXPECT_EQ(count(4), valid);
}

// Quiver -> DuckDB for decimals: DuckDB reads decimal32, decimal64 and
// decimal128 as the same DECIMAL values; their text in DuckDB equals
// Quiver's. (DuckDB 1.5.6 scans no decimal256: see the test above.)
TEST(DuckDBDecimalScanTest, EveryWidthReadsAsTheSameDecimal) {
  auto db = duckdb::Database::Open();
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto conn = duckdb::Connection::Open(*db);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  for (const TypePtr& type : {decimal32(9, 2), decimal64(18, 4), decimal128(38, 10)}) {
    SCOPED_TRACE(type->ToString());
    DecimalBuilder b(type);
    constexpr int kScanRows = 3000;
    for (int i = 0; i < kScanRows; ++i) {
      if (i % 11 == 0) {
        ASSERT_TRUE(b.AppendNull().ok());
        continue;
      }
      // Values of every length the precision allows, both signs.
      std::string digits;
      const int n = 1 + i % type->precision();
      for (int k = 0; k < n; ++k) digits.push_back(static_cast<char>('1' + (i + k) % 9));
      const size_t scale = static_cast<size_t>(type->scale());
      if (scale > 0) {
        if (digits.size() <= scale) digits.insert(0, scale + 1 - digits.size(), '0');
        digits.insert(digits.size() - scale, ".");
      }
      if (i % 2 == 0) digits.insert(0, "-");
      ASSERT_TRUE(b.AppendString(digits).ok()) << digits;
    }
    auto array = b.Finish().ValueOrDie();
    auto batch = RecordBatch::FromArrays({"x"}, {array}).ValueOrDie();
    Status registered =
        (*conn)->RegisterTable("t", Table::FromRecordBatches({batch}).ValueOrDie());
    ASSERT_TRUE(registered.ok()) << registered.ToString();
    auto result = (*conn)->QueryTable(
        "SELECT x::VARCHAR AS s FROM t ORDER BY row_number() OVER ()");
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    auto got = (*result)->column(0);
    ASSERT_EQ(got->length(), kScanRows);
    const auto& decimals = static_cast<const DecimalArray&>(*array);
    int64_t row = 0;
    for (const auto& chunk : got->chunks()) {
      const auto& s = static_cast<const StringArray&>(*chunk);
      for (int64_t r = 0; r < s.length(); ++r, ++row) {
        ASSERT_EQ(s.IsNull(r), decimals.IsNull(row)) << row;
        if (!s.IsNull(r)) {
          ASSERT_EQ(s.GetString(r), decimals.FormatValue(row)) << row;
        }
      }
    }
  }
}

}  // namespace
}  // namespace quiver

namespace quiver {
namespace {

// A table of many morsels is scanned by every DuckDB thread: each row once.
TEST(DuckDBParallelScan, EveryRowOnceWhateverTheThreads) {
  const int64_t batch_rows = 300000, batches = 7;  // 2.1 M rows: parallel
  std::vector<RecordBatchPtr> parts;
  for (int64_t b = 0; b < batches; ++b) {
    Int64Builder a;
    Int32Builder k;
    ASSERT_TRUE(a.Reserve(batch_rows).ok());
    ASSERT_TRUE(k.Reserve(batch_rows).ok());
    for (int64_t i = b * batch_rows; i < (b + 1) * batch_rows; ++i) {
      a.UnsafeAppend(i);
      k.UnsafeAppend(static_cast<int32_t>(i % 10));
    }
    auto batch = RecordBatch::FromArrays(
        {"a", "k"}, {a.Finish().ValueOrDie(), k.Finish().ValueOrDie()});
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    parts.push_back(*batch);
  }
  auto table = Table::FromRecordBatches(parts);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  auto db = duckdb::Database::Open();
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto conn = duckdb::Connection::Open(*db);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  ASSERT_TRUE((*conn)->RegisterTable("big", *table).ok());
  const int64_t n = batch_rows * batches;
  for (int threads : {1, 2, 4}) {
    SCOPED_TRACE(threads);
    ASSERT_TRUE((*conn)->Execute("SET threads = " + std::to_string(threads)).ok());
    auto result = (*conn)->QueryTable(
        "SELECT count(*)::BIGINT, sum(a)::BIGINT, count(DISTINCT a)::BIGINT, "
        "min(a), max(a), sum(k)::BIGINT FROM big");
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    ASSERT_EQ((*result)->num_rows(), 1);
    auto value = [&](int c) {
      return static_cast<const Int64Array&>(*(*result)->column(c)->chunk(0)).Value(0);
    };
    EXPECT_EQ(value(0), n);
    EXPECT_EQ(value(1), n * (n - 1) / 2);
    EXPECT_EQ(value(2), n);
    EXPECT_EQ(value(3), 0);
    EXPECT_EQ(value(4), n - 1);
    EXPECT_EQ(value(5), (n / 10) * 45);
  }
}

}  // namespace
}  // namespace quiver
