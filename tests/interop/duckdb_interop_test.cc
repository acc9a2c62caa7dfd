// Quiver -> DuckDB -> Quiver round trips, tables registered for repeated
// queries, and the loading of DuckDB's library.
#include <gtest/gtest.h>

#include <cstdlib>

#include "duckdb_test_util.h"

namespace quiver {
namespace {

using duckdb_test::MakeSourceData;
using duckdb_test::MakeSourceTable;
using duckdb_test::ReaderOf;

class DuckDBInteropTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The library must load: without it these tests fail, never skip.
    auto db = duckdb::Database::Open();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = *db;
    auto conn = duckdb::Connection::Open(db_);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    conn_ = conn.MoveValueUnsafe();
    ASSERT_TRUE(conn_->Execute("SET TimeZone = 'UTC'").ok());
  }

  std::shared_ptr<duckdb::Database> db_;
  std::unique_ptr<duckdb::Connection> conn_;
};

// The columns whose types DuckDB maps to themselves (docs/c-data.md).
const std::vector<std::string> kIdentityColumns = {
    "id",    "flag",  "i8",    "i16", "i32", "i64", "u8",   "u16",  "u32",
    "u64",   "f32",   "f64",   "dec", "d32", "t64", "t64n", "ts_s", "ts_ms",
    "ts_us", "ts_ns", "tz_us", "s",   "b",   "l",   "fsl",  "st",   "m"};

TEST_F(DuckDBInteropTest, QuiverDuckDBQuiverRoundTrip) {
  auto source = MakeSourceTable(MakeSourceData(5003), 700, kIdentityColumns);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  ASSERT_TRUE(conn_->RegisterArrowStream("src", ReaderOf(*source)).ok());
  auto back = conn_->QueryTable("SELECT * FROM src ORDER BY id");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE((*back)->ValidateFull().ok());
  EXPECT_TRUE((*back)->schema()->Equals(*(*source)->schema()))
      << (*back)->schema()->ToString() << "\nvs\n"
      << (*source)->schema()->ToString();
  EXPECT_TRUE((*back)->Equals(**source));
}

TEST_F(DuckDBInteropTest, RegisteredTablesServeEveryQuery) {
  auto source = MakeSourceTable(MakeSourceData(2000), 300, {"id", "i32", "s"});
  ASSERT_TRUE(source.ok());
  ASSERT_TRUE(conn_->RegisterTable("t", *source).ok());
  for (int round = 0; round < 3; ++round) {
    auto n = conn_->QueryTable("SELECT COUNT(*) AS n, SUM(id) AS s FROM t");
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(duckdb_test::CanonColumn(*(*n)->column(0))[0], "2000");
    EXPECT_EQ(duckdb_test::CanonColumn(*(*n)->column(1))[0], "1999000");
  }
  // A self-join scans the table twice in one query.
  auto pairs = conn_->QueryTable("SELECT COUNT(*) FROM t a JOIN t b ON a.id = b.id + 1");
  ASSERT_TRUE(pairs.ok()) << pairs.status().ToString();
  EXPECT_EQ(duckdb_test::CanonColumn(*(*pairs)->column(0))[0], "1999");
}

TEST_F(DuckDBInteropTest, ViewsBelongToTheirConnection) {
  auto source = MakeSourceTable(MakeSourceData(10), 10, {"id"});
  ASSERT_TRUE(source.ok());
  ASSERT_TRUE(conn_->RegisterTable("mine", *source).ok());
  auto other = duckdb::Connection::Open(db_);
  ASSERT_TRUE(other.ok());
  // The view is temporary, and the table function refuses another
  // connection's keys even when called by hand.
  EXPECT_FALSE((*other)->QueryTable("SELECT * FROM mine").ok());
  auto direct = (*other)->QueryTable("SELECT * FROM quiver_scan('q0')");
  ASSERT_FALSE(direct.ok());
  EXPECT_NE(direct.status().message().find("registered on this connection"),
            std::string::npos)
      << direct.status().ToString();
  EXPECT_TRUE(conn_->QueryTable("SELECT * FROM mine").ok());
}

TEST_F(DuckDBInteropTest, ConnectionDestructionDropsItsViews) {
  auto source = MakeSourceTable(MakeSourceData(10), 10, {"id"});
  ASSERT_TRUE(source.ok());
  auto second = duckdb::Connection::Open(db_);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE((*second)->RegisterTable("tmp", *source).ok());
  std::weak_ptr<Table> watch = *source;
  source->reset();
  EXPECT_FALSE(watch.expired()) << "the registration holds the table";
  second->reset();
  EXPECT_TRUE(watch.expired()) << "destroying the connection released the table";
}

TEST(DuckDBLibraryTest, MissingLibraryNamesThePathAndDlerror) {
  auto lib = duckdb::Library::Open("/nonexistent/dir/libduckdb.so");
  ASSERT_FALSE(lib.ok());
  EXPECT_TRUE(lib.status().IsIOError());
  EXPECT_NE(lib.status().message().find("/nonexistent/dir/libduckdb.so"),
            std::string::npos);
  EXPECT_NE(lib.status().message().find("No such file"), std::string::npos)
      << lib.status().ToString();
}

TEST(DuckDBLibraryTest, LibraryWithoutDuckDBsFunctions) {
  auto lib = duckdb::Library::Open("libm.so.6");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("lacks the function duckdb_open_ext"),
            std::string::npos)
      << lib.status().ToString();
}

TEST(DuckDBLibraryTest, EnvironmentChoosesTheLibrary) {
  const char* old = std::getenv("QUIVER_DUCKDB_LIBRARY");
  const std::string saved = old != nullptr ? old : "";
  ASSERT_EQ(setenv("QUIVER_DUCKDB_LIBRARY", "/custom/libduckdb.so", 1), 0);
  EXPECT_EQ(duckdb::Library::DefaultPath(), "/custom/libduckdb.so");
  ASSERT_EQ(unsetenv("QUIVER_DUCKDB_LIBRARY"), 0);
  EXPECT_NE(duckdb::Library::DefaultPath().find("node-bindings-linux-x64/libduckdb.so"),
            std::string::npos);
  if (old != nullptr) setenv("QUIVER_DUCKDB_LIBRARY", saved.c_str(), 1);
}

TEST(DuckDBLibraryTest, PinnedVersionLoads) {
  auto lib = duckdb::Library::Default();
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  // package.json pins @duckdb/node-bindings 1.5.6-r.1, DuckDB v1.5.6.
  EXPECT_EQ((*lib)->version().rfind("v1.5", 0), 0u) << (*lib)->version();
}

}  // namespace
}  // namespace quiver
