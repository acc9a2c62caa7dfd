// SQL over cluster memory (what `quiver sql` does) beside DuckDB over the
// same rows loaded into its own memory, measured in the same run (issue 13's
// target: at least 0.8 of DuckDB's own speed, i.e. a time ratio of at most
// 1.25).
//
// The table: the thesis's (a int64 = i, b int8 = i, c uint16 = 7i),
// 150 * 2^20 rows (QUIVER_BENCH_ROWS overrides), published as a HugeTable
// whose 2^24-row chunks lie round-robin in the three nodes' regions. The
// client (node 0) opens it with GetHugeTable (zero-copy, pinned) and
// registers it in DuckDB as a view over `quiver_scan`; the reference is
// `CREATE TABLE own AS SELECT * FROM t`, DuckDB's own storage.
//   - BM_Sql_aggregate: GROUP BY b with count, sum(a), avg(c)
//   - BM_Sql_join: the table joined with a 16-row dimension on b, summed
//   - BM_Sql_filter_count: a selective filter on a and count
// Each as /quiver and /duckdb_own; the ratios compare the two.
#include <cstdlib>
#include <memory>
#include <string>

#include "bench_util.h"
#include "control/local_cluster.h"
#include "duckdb/connection.h"
#include "quiver/client.h"

namespace quiver {
namespace {

std::unique_ptr<control::LocalCluster> g_cluster;
std::unique_ptr<Client> g_client;
std::shared_ptr<duckdb::Database> g_db;
std::unique_ptr<duckdb::Connection> g_conn;
int64_t g_rows = 0;

// Rows [first, first + n) of the thesis table, built in `pool`.
Result<RecordBatchPtr> ThesisBatch(int64_t first, int64_t n, MemoryPool* pool) {
  Int64Builder a(pool);
  Int8Builder b(pool);
  UInt16Builder c(pool);
  QUIVER_RETURN_NOT_OK(a.Reserve(n));
  QUIVER_RETURN_NOT_OK(b.Reserve(n));
  QUIVER_RETURN_NOT_OK(c.Reserve(n));
  for (int64_t i = first; i < first + n; ++i) {
    a.UnsafeAppend(i);
    b.UnsafeAppend(static_cast<int8_t>(i));
    c.UnsafeAppend(static_cast<uint16_t>(i * 7));
  }
  QUIVER_ASSIGN_OR_RAISE(auto ca, a.Finish());
  QUIVER_ASSIGN_OR_RAISE(auto cb, b.Finish());
  QUIVER_ASSIGN_OR_RAISE(auto cc, c.Finish());
  return RecordBatch::FromArrays({"a", "b", "c"}, {ca, cb, cc});
}

Status Setup() {
  g_rows = bench::BenchRows(150LL * 1024 * 1024);
  const int nodes = 3;
  const uint64_t bytes = static_cast<uint64_t>(g_rows) * 11;
  control::LocalClusterOptions o;
  o.nodes = nodes;
  // A third of the table per node, with room for allocation granules.
  o.region_size =
      ((bytes / nodes + (256ULL << 20)) + (1ULL << 30) - 1) & ~((1ULL << 30) - 1);
  o.name_prefix = "sqlbench";
  o.limits.malloc_rate = 1000000;
  o.limits.node_malloc_rate = 1000000;
  o.limits.session_quota = {1.0, 0};
  o.limits.node_quota = {1.0, 0};
  QUIVER_ASSIGN_OR_RAISE(g_cluster, control::LocalCluster::Start(o));
  QUIVER_ASSIGN_OR_RAISE(g_client, Client::Connect({g_cluster->config_path(), 0}));
  QUIVER_RETURN_NOT_OK(g_client->WaitAllOnline(60000));
  const int64_t chunk = int64_t{1} << 24;
  int k = 0;
  for (int64_t first = 0; first < g_rows; first += chunk, ++k) {
    QUIVER_ASSIGN_OR_RAISE(auto batch, ThesisBatch(first, std::min(chunk, g_rows - first),
                                                   g_client->pool(k % nodes)));
    QUIVER_RETURN_NOT_OK(
        g_client->Publish(batch, "t", {.first_row = static_cast<uint64_t>(first)}));
  }
  QUIVER_ASSIGN_OR_RAISE(auto table, g_client->GetHugeTable("t"));
  QUIVER_ASSIGN_OR_RAISE(g_db, duckdb::Database::Open());
  QUIVER_ASSIGN_OR_RAISE(g_conn, duckdb::Connection::Open(g_db));
  QUIVER_RETURN_NOT_OK(g_conn->RegisterTable("t", table));
  QUIVER_RETURN_NOT_OK(g_conn->Execute("CREATE TABLE own AS SELECT * FROM t"));
  QUIVER_RETURN_NOT_OK(g_conn->Execute(
      "CREATE TABLE dim AS SELECT range::TINYINT AS b, range * 10 AS w FROM range(16)"));
  // Both sources must answer the same before anything is timed.
  for (const char* q : {"SELECT count(*), sum(a), sum(b), sum(c) FROM "}) {
    QUIVER_ASSIGN_OR_RAISE(auto x, g_conn->QueryTable(std::string(q) + "t"));
    QUIVER_ASSIGN_OR_RAISE(auto y, g_conn->QueryTable(std::string(q) + "own"));
    if (!x->Equals(*y)) {
      return Status::Invalid("the cluster table and DuckDB's copy differ:\n",
                             x->ToString(), "\n", y->ToString());
    }
  }
  return Status::OK();
}

void Query(benchmark::State& state, const std::string& sql) {
  for (auto _ : state) {
    auto result = g_conn->QueryTable(sql);
    if (!result.ok()) return state.SkipWithError(result.status().ToString().c_str());
    benchmark::DoNotOptimize(*result);
  }
  state.SetItemsProcessed(state.iterations() * g_rows);
}

std::string Aggregate(const char* from) {
  return std::string("SELECT b, count(*), sum(a), avg(c) FROM ") + from + " GROUP BY b";
}
std::string Join(const char* from) {
  return std::string("SELECT sum(x.a + d.w), count(*) FROM ") + from +
         " x JOIN dim d ON x.b = d.b";
}
std::string FilterCount(const char* from) {
  return std::string("SELECT count(*) FROM ") + from + " WHERE a % 1000 = 7 AND c > 100";
}

void BM_Sql_aggregate_quiver(benchmark::State& s) { Query(s, Aggregate("t")); }
void BM_Sql_aggregate_duckdb_own(benchmark::State& s) { Query(s, Aggregate("own")); }
void BM_Sql_join_quiver(benchmark::State& s) { Query(s, Join("t")); }
void BM_Sql_join_duckdb_own(benchmark::State& s) { Query(s, Join("own")); }
void BM_Sql_filter_count_quiver(benchmark::State& s) { Query(s, FilterCount("t")); }
void BM_Sql_filter_count_duckdb_own(benchmark::State& s) { Query(s, FilterCount("own")); }

#define SQL_BENCH(f)                     \
  BENCHMARK(f)                           \
      ->Iterations(bench::QuickOr(5, 2)) \
      ->UseRealTime()                    \
      ->Unit(benchmark::kMillisecond)
SQL_BENCH(BM_Sql_aggregate_duckdb_own);
SQL_BENCH(BM_Sql_aggregate_quiver);
SQL_BENCH(BM_Sql_join_duckdb_own);
SQL_BENCH(BM_Sql_join_quiver);
SQL_BENCH(BM_Sql_filter_count_duckdb_own);
SQL_BENCH(BM_Sql_filter_count_quiver);

}  // namespace
}  // namespace quiver

int main(int argc, char** argv) {
  using namespace quiver;
  if (Status st = Setup(); !st.ok()) {
    std::fprintf(stderr, "sql_bench: %s\n", st.ToString().c_str());
    return 1;
  }
  int rc = bench::RunWithRatios(
      argc, argv,
      {{"BM_Sql_aggregate_quiver", "BM_Sql_aggregate_duckdb_own", "time"},
       {"BM_Sql_join_quiver", "BM_Sql_join_duckdb_own", "time"},
       {"BM_Sql_filter_count_quiver", "BM_Sql_filter_count_duckdb_own", "time"}});
  g_conn.reset();
  g_db.reset();
  g_client.reset();
  g_cluster.reset();
  return rc;
}
