// `quiver put` beside DuckDB reading the same file into its own memory,
// measured in the same run (issue 13's target: put at least 0.8 of DuckDB's
// speed, a time ratio of at most 1.25).
//
// The files: 20 * 2^20 rows (QUIVER_BENCH_ROWS overrides) of (a BIGINT,
// b INTEGER, c DOUBLE, s VARCHAR of 9-10 bytes), written by DuckDB as Parquet
// and as CSV in $TMPDIR. Each iteration of
//   - /quiver: what `quiver put` does -- DuckDB's reader streamed as Arrow,
//     Client::Load copying it into 64 MiB chunks round robin over the three
//     nodes' regions, Publish; then (untimed) Unpublish and free;
//   - /duckdb_own: `CREATE TABLE own AS SELECT * FROM read_...(file)`, the
//     same reader filling DuckDB's own storage; then (untimed) DROP;
//   - /arrow_stream: DuckDB's reader streamed as Arrow and dropped (what
//     the copy into cluster memory adds to, for the record).
// Both use every core DuckDB sees, and run as `quiver put` does: with a
// streaming buffer of 100 MB (DuckDB's threads read ahead while Load copies)
// and glibc keeping freed memory (DuckDB's Arrow arrays are allocated and
// freed per 2048 rows; returning them to the kernel each time costs a page
// fault and a page clearing per page).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
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
std::string g_dir;

std::string File(const char* ext) { return g_dir + "/put_bench." + ext; }

Status Setup() {
  g_rows = bench::BenchRows(20LL * 1024 * 1024);
  const char* tmp = std::getenv("TMPDIR");
  g_dir =
      std::string(tmp ? tmp : "/tmp") + "/quiver-put-bench-" + std::to_string(getpid());
  if (mkdir(g_dir.c_str(), 0700) != 0) return Status::IOError("mkdir ", g_dir);
  const int nodes = 3;
  const uint64_t bytes = static_cast<uint64_t>(g_rows) * 40;
  control::LocalClusterOptions o;
  o.nodes = nodes;
  o.region_size =
      ((bytes / nodes + (256ULL << 20)) + (1ULL << 30) - 1) & ~((1ULL << 30) - 1);
  o.name_prefix = "putbench";
  o.limits.session_quota = {1.0, 0};
  o.limits.node_quota = {1.0, 0};
  QUIVER_ASSIGN_OR_RAISE(g_cluster, control::LocalCluster::Start(o));
  QUIVER_ASSIGN_OR_RAISE(g_client, Client::Connect({g_cluster->config_path(), 0}));
  QUIVER_RETURN_NOT_OK(g_client->WaitAllOnline(60000));
  QUIVER_ASSIGN_OR_RAISE(g_db, duckdb::Database::Open());
  QUIVER_ASSIGN_OR_RAISE(g_conn, duckdb::Connection::Open(g_db));
  // As `quiver put` sets it: DuckDB's threads may read ahead of the copy.
  QUIVER_RETURN_NOT_OK(g_conn->Execute(duckdb::kLoadSettings));
  const std::string rows =
      "SELECT range AS a, (range % 1000)::INTEGER AS b, (range * 0.5)::DOUBLE AS c, "
      "'item-' || (range % 100000) AS s FROM range(" +
      std::to_string(g_rows) + ")";
  QUIVER_RETURN_NOT_OK(g_conn->Execute("COPY (" + rows + ") TO " +
                                       duckdb::QuoteLiteral(File("parquet")) +
                                       " (FORMAT parquet)"));
  QUIVER_RETURN_NOT_OK(g_conn->Execute("COPY (" + rows + ") TO " +
                                       duckdb::QuoteLiteral(File("csv")) +
                                       " (FORMAT csv, HEADER)"));
  return Status::OK();
}

std::string Read(const char* ext) {
  return std::string("SELECT * FROM read_") + ext + "(" +
         duckdb::QuoteLiteral(File(ext)) + ")";
}

void Put(benchmark::State& state, const char* ext) {
  for (auto _ : state) {
    auto reader = g_conn->StreamArrow(Read(ext));
    if (!reader.ok()) return state.SkipWithError(reader.status().ToString().c_str());
    auto table = g_client->Load(reader->get());
    reader->reset();
    if (!table.ok()) return state.SkipWithError(table.status().ToString().c_str());
    if (Status st = g_client->Publish(*table, "t"); !st.ok()) {
      return state.SkipWithError(st.ToString().c_str());
    }
    state.PauseTiming();
    if ((*table)->num_rows() != g_rows) {
      return state.SkipWithError("the table put has the wrong number of rows");
    }
    Status st = g_client->Unpublish("t");
    table->reset();
    if (st.ok()) st = g_client->Drain();
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * g_rows);
}

void Own(benchmark::State& state, const char* ext) {
  for (auto _ : state) {
    Status st = g_conn->Execute("CREATE TABLE own AS " + Read(ext));
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    state.PauseTiming();
    auto n = g_conn->QueryTable("SELECT count(*) FROM own");
    st = g_conn->Execute("DROP TABLE own");
    if (!n.ok() || !st.ok()) return state.SkipWithError("counting or dropping own");
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * g_rows);
}

// DuckDB's reader streamed as Arrow and dropped: what Load adds to it.
void StreamOnly(benchmark::State& state, const char* ext) {
  for (auto _ : state) {
    auto reader = g_conn->StreamArrow(Read(ext));
    if (!reader.ok()) return state.SkipWithError(reader.status().ToString().c_str());
    int64_t rows = 0;
    for (;;) {
      auto batch = (*reader)->Next();
      if (!batch.ok()) return state.SkipWithError(batch.status().ToString().c_str());
      if (*batch == nullptr) break;
      rows += (*batch)->num_rows();
    }
    if (rows != g_rows) return state.SkipWithError("wrong number of rows");
  }
  state.SetItemsProcessed(state.iterations() * g_rows);
}

void BM_Put_parquet_quiver(benchmark::State& s) { Put(s, "parquet"); }
void BM_Put_parquet_arrow_stream(benchmark::State& s) { StreamOnly(s, "parquet"); }
void BM_Put_csv_arrow_stream(benchmark::State& s) { StreamOnly(s, "csv"); }
void BM_Put_parquet_duckdb_own(benchmark::State& s) { Own(s, "parquet"); }
void BM_Put_csv_quiver(benchmark::State& s) { Put(s, "csv"); }
void BM_Put_csv_duckdb_own(benchmark::State& s) { Own(s, "csv"); }

#define PUT_BENCH(f)                     \
  BENCHMARK(f)                           \
      ->Iterations(bench::QuickOr(5, 2)) \
      ->UseRealTime()                    \
      ->Unit(benchmark::kMillisecond)
PUT_BENCH(BM_Put_parquet_duckdb_own);
PUT_BENCH(BM_Put_parquet_arrow_stream);
PUT_BENCH(BM_Put_parquet_quiver);
PUT_BENCH(BM_Put_csv_duckdb_own);
PUT_BENCH(BM_Put_csv_arrow_stream);
PUT_BENCH(BM_Put_csv_quiver);

}  // namespace
}  // namespace quiver

int main(int argc, char** argv) {
  using namespace quiver;
  // As `quiver put` does (both sides run under it).
  duckdb::KeepFreedMemory();
  Status setup = Setup();
  int rc = 1;
  if (!setup.ok()) {
    std::fprintf(stderr, "put_bench: %s\n", setup.ToString().c_str());
  } else {
    rc = bench::RunWithRatios(
        argc, argv,
        {{"BM_Put_parquet_quiver", "BM_Put_parquet_duckdb_own", "time"},
         {"BM_Put_csv_quiver", "BM_Put_csv_duckdb_own", "time"}});
  }
  g_conn.reset();
  g_db.reset();
  g_client.reset();
  g_cluster.reset();
  std::remove(File("parquet").c_str());
  std::remove(File("csv").c_str());
  rmdir(g_dir.c_str());
  return rc;
}
