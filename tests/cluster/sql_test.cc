// `quiver sql` as a user runs it against a cluster of `quiver up`: tables
// published by the test actor (an int64 column v = 0..R-1) and by
// `quiver sql --publish`, queried from every node, in every format, and
// compared with what DuckDB computes over the same data.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <numeric>

#include "cluster/cluster_util.h"
#include "cluster/up_util.h"
#include "quiver/columnar/builder.h"

namespace quiver {
namespace {

using testing::BinaryPath;
using testing::Child;
using testing::Ran;

class SqlTest : public testing::UpFixture {
 protected:
  // `quiver sql --dir STATE ARGS...`.
  Ran Sql(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {"sql", "--dir", state_});
    return QuiverArgs(args, input);
  }
  // The actor publishes `name` (v int64 = 0..rows-1) on `node` and exits;
  // the table stays published.
  void Publish(const std::string& name, int64_t rows, int node) {
    Child actor = Child::Start({BinaryPath("cluster_actor"), "--config",
                                state_ + "/cluster.toml", "--node", std::to_string(node),
                                "--publish", name, "--rows", std::to_string(rows)});
    ASSERT_NE(actor.WaitForLine("ready", 60000), "") << actor.output();
    ASSERT_EQ(actor.Finish(), 0) << actor.output();
  }
  // Everything after the header line of CSV output.
  static std::string CsvBody(const std::string& csv) {
    const size_t nl = csv.find('\n');
    return nl == std::string::npos ? "" : csv.substr(nl + 1);
  }
};

TEST_F(SqlTest, QueriesFromEveryNodeMatchDuckDB) {
  ASSERT_EQ(Up().code, 0);
  Publish("t1", 1000, 1);
  Ran pub =
      Sql({"--publish", "nums", "SELECT range AS x, range % 7 AS k FROM range(10000)"});
  ASSERT_EQ(pub.code, 0) << pub.out;
  EXPECT_NE(pub.out.find("published nums: 10000 rows"), std::string::npos) << pub.out;
  // A taken name is refused before the query runs (it would fail if run).
  Ran again = Sql({"--publish", "nums", "SELECT error('the query ran')"});
  EXPECT_EQ(again.code, 1) << again.out;
  EXPECT_NE(again.out.find("a table named nums is already published"), std::string::npos)
      << again.out;
  EXPECT_EQ(again.out.find("the query ran"), std::string::npos) << again.out;

  const std::string group = "SELECT k, count(*), sum(x) FROM nums GROUP BY k ORDER BY k";
  Ran expect = Sql({"--format", "csv",
                    "SELECT range % 7 AS k, count(*), sum(range) FROM range(10000) "
                    "GROUP BY k ORDER BY k"});
  ASSERT_EQ(expect.code, 0) << expect.out;
  ASSERT_NE(CsvBody(expect.out), "");
  for (const char* node : {"0", "1"}) {
    SCOPED_TRACE(node);
    Ran r = Sql({"--node", node, "--format", "csv", "SELECT count(*), sum(v) FROM t1"});
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(CsvBody(r.out), "1000,499500\n");  // sum of 0..999
    // SQL names are not case sensitive: T1 is t1.
    r = Sql({"--node", node, "--format", "csv", "SELECT count(*) FROM T1"});
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(CsvBody(r.out), "1000\n");
    r = Sql({"--node", node, "--format", "csv", group});
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(CsvBody(r.out), CsvBody(expect.out));
    // A join of the actor's table and the one sql published.
    r = Sql({"--node", node, "--format", "csv",
             "SELECT count(*), sum(v * k) FROM t1 JOIN nums ON t1.v = nums.x"});
    ASSERT_EQ(r.code, 0) << r.out;
    Ran direct = Sql({"--format", "csv",
                      "SELECT count(*), sum(range * (range % 7)) FROM range(1000)"});
    EXPECT_EQ(CsvBody(r.out), CsvBody(direct.out));
  }
  // The published result is in cluster memory: `quiver status` lists it.
  Ran status = QuiverArgs({"status", "--dir", state_});
  EXPECT_NE(status.out.find("nums"), std::string::npos) << status.out;
}

// A HugeTable of two chunks, one in each node's memory, is one table.
TEST_F(SqlTest, HugeTableOverTwoNodes) {
  ASSERT_EQ(Up().code, 0);
  {
    auto client = Client::Connect({.config_path = state_ + "/cluster.toml", .node = 0});
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    for (uint32_t part : {1u, 0u}) {  // rows 500 * part .. 500 * part + 499
      std::vector<int64_t> values(500);
      std::iota(values.begin(), values.end(), int64_t{500} * part);
      Int64Builder b((*client)->pool(part));
      ASSERT_TRUE(b.AppendValues(values).ok());
      auto batch = RecordBatch::FromArrays({"v"}, {b.Finish().ValueOrDie()}).ValueOrDie();
      Status st = (*client)->Publish(batch, "huge", {.first_row = 500 * part});
      ASSERT_TRUE(st.ok()) << st.ToString();
      if (part == 1) {  // rows 0..499 are missing: no partial table
        Ran r = Sql({"SELECT count(*) FROM huge"});
        EXPECT_EQ(r.code, 1) << r.out;
        EXPECT_NE(r.out.find("table huge is published but unavailable: "),
                  std::string::npos)
            << r.out;
        EXPECT_NE(r.out.find("gap"), std::string::npos) << r.out;
      }
    }
    ASSERT_TRUE((*client)->Close().ok());
  }
  for (const char* node : {"0", "1"}) {
    Ran r = Sql({"--node", node, "--format", "csv",
                 "SELECT count(*), sum(v), min(v), max(v), count(DISTINCT v) FROM huge"});
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(CsvBody(r.out), "1000,499500,0,999,1000\n") << node;
  }
}

TEST_F(SqlTest, Formats) {
  ASSERT_EQ(Up().code, 0);
  Ran pub = Sql({"--publish", "my table",
                 "SELECT range AS id, CASE WHEN range = 1 THEN NULL ELSE 'v,\"' || range "
                 "END AS s, range * 2.5::DOUBLE AS d FROM range(3)"});
  ASSERT_EQ(pub.code, 0) << pub.out;
  const std::string q = "SELECT * FROM \"my table\" ORDER BY id";

  Ran table = Sql({q});
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_EQ(table.out,
            "id | s    | d\n"
            "---+------+----\n"
            " 0 | v,\"0 |   0\n"
            " 1 | NULL | 2.5\n"
            " 2 | v,\"2 |   5\n"
            "(3 rows)\n");

  Ran csv = Sql({"--format", "csv", q});
  ASSERT_EQ(csv.code, 0) << csv.out;
  EXPECT_EQ(csv.out, "id,s,d\n0,\"v,\"\"0\",0\n1,,2.5\n2,\"v,\"\"2\",5\n");

  Ran json = Sql({"--format", "json", q});
  ASSERT_EQ(json.code, 0) << json.out;
  EXPECT_EQ(json.out,
            "[\n{\"id\":0,\"s\":\"v,\\\"0\",\"d\":0},\n{\"id\":1,\"s\":null,\"d\":2.5},\n"
            "{\"id\":2,\"s\":\"v,\\\"2\",\"d\":5}\n]\n");
  Ran empty = Sql({"--format", "json", q + " LIMIT 0"});
  EXPECT_EQ(empty.out, "[]\n");

  // Arrow IPC to a file, read back by `quiver ipc cat`.
  const std::string file = tmp_ + "/out.arrow";
  Child c =
      Child::Start({"/bin/sh", "-c", "exec \"$0\" \"$@\" > " + file, BinaryPath("quiver"),
                    "sql", "--dir", state_, "--format", "arrow", q});
  ASSERT_EQ(c.Finish(120000), 0);
  Ran cat = QuiverArgs({"ipc", "cat", file});
  ASSERT_EQ(cat.code, 0) << cat.out;
  EXPECT_NE(cat.out.find("rows: 3"), std::string::npos) << cat.out;
  EXPECT_NE(cat.out.find("\"v,\\\"2\""), std::string::npos) << cat.out;
}

TEST_F(SqlTest, PipedInteractiveMode) {
  ASSERT_EQ(Up().code, 0);
  Publish("t1", 10, 0);
  Ran r = Sql({"--format", "csv"},
              "SELECT count(*) FROM t1;\n.tables\nSELECT sum(v)\n  FROM t1;\n"
              "SELECT nonsense FROM;\nSELECT 42 AS answer;\n.quit\nSELECT 1;\n");
  EXPECT_EQ(r.code, 1) << r.out;                                 // one statement failed
  EXPECT_EQ(r.out.find("quiver>"), std::string::npos) << r.out;  // no prompt on a pipe
  const size_t count = r.out.find("count_star()\n10\n");
  const size_t tables = r.out.find("\nt1\n");
  const size_t sum = r.out.find("sum(v)\n45\n");
  const size_t error = r.out.find("Parser Error");
  const size_t answer = r.out.find("answer\n42\n");
  EXPECT_NE(count, std::string::npos) << r.out;
  EXPECT_NE(error, std::string::npos) << r.out;
  EXPECT_NE(answer, std::string::npos) << r.out;
  EXPECT_LT(count, tables) << r.out;
  EXPECT_LT(tables, sum) << r.out;
  EXPECT_LT(sum, answer) << r.out;
  EXPECT_EQ(r.out.find("\n1\n"), std::string::npos) << r.out;  // stopped at .quit

  // EOF ends the session; a last statement without ';' runs too.
  r = Sql({}, "SELECT 7 AS seven");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("seven\n-----\n    7\n(1 row)\n"), std::string::npos) << r.out;
}

// Each statement of an interactive session sees the tables as they are
// then: one published after it started, one removed, one published again.
TEST_F(SqlTest, InteractiveSessionSeesTablesAsTheyChange) {
  ASSERT_EQ(Up().code, 0);
  Publish("first", 10, 0);
  Child sql =
      Child::Start({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", BinaryPath("quiver"),
                    "sql", "--dir", state_, "--format", "csv"});
  ASSERT_TRUE(sql.Send("SELECT sum(v) AS s1 FROM first;"));
  ASSERT_NE(sql.WaitForLine("45", 60000), "") << sql.output();
  Publish("later", 100, 1);
  ASSERT_TRUE(sql.Send("SELECT sum(v) AS s2 FROM later;"));
  ASSERT_NE(sql.WaitForLine("4950", 60000), "") << sql.output();
  ASSERT_EQ(QuiverArgs({"rm", "--dir", state_, "first"}).code, 0);
  ASSERT_TRUE(sql.Send("SELECT count(*) FROM first;"));
  ASSERT_NE(sql.WaitForLine("does not exist", 60000), "") << sql.output();
  Publish("first", 20, 1);  // the name again, other rows
  ASSERT_TRUE(sql.Send("SELECT sum(v) AS s3 FROM first;"));
  ASSERT_NE(sql.WaitForLine("190", 60000), "") << sql.output();
  EXPECT_EQ(sql.Finish(), 1) << sql.output();  // one statement failed
}

TEST_F(SqlTest, Errors) {
  Ran r = Sql({"SELECT 1"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("no cluster in " + state_ + ": start one with `quiver up`"),
            std::string::npos)
      << r.out;

  ASSERT_EQ(Up().code, 0);
  Publish("far", 100, 1);
  r = Sql({"SELEC 1"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("Parser Error: syntax error at or near \"SELEC\""),
            std::string::npos)
      << r.out;
  r = Sql({"SELECT * FROM nowhere"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("Table with name nowhere does not exist"), std::string::npos)
      << r.out;
  r = Sql({"--node", "5", "SELECT 1"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no node 5"), std::string::npos) << r.out;
  r = Sql({"--format", "xml", "SELECT 1"});
  EXPECT_EQ(r.code, 2) << r.out;
  r = Sql({"--publish", "x"});  // no query
  EXPECT_EQ(r.code, 2) << r.out;

  // Node 1 goes down: its table is lost, and a query of it says where.
  const std::vector<pid_t> before = Daemons();
  auto cluster = control::LocalCluster::Attach(state_);
  ASSERT_TRUE(cluster.ok());
  kill((*cluster)->pid(1), SIGKILL);
  ASSERT_TRUE(testing::Eventually([&] { return Daemons().size() == 1; }, 30000));
  ASSERT_TRUE(testing::Eventually(
      [&] {
        r = Sql({"--node", "0", "SELECT count(*) FROM far"});
        return r.out.find("unavailable") != std::string::npos;
      },
      60000))
      << r.out;
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("table far is published but unavailable: "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("node 1"), std::string::npos) << r.out;
  r = Sql({"--node", "1", "SELECT 1"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("daemon of node 1 is not running"), std::string::npos) << r.out;
  r = Sql({"--node", "0", "SELECT 1 AS one"});  // the rest still works
  EXPECT_EQ(r.code, 0) << r.out;
}

// The scan reads the table where it is in cluster memory. A count touches
// none of its pages; a sum maps each page once (shared pages count in the
// resident size) but never copies them, which would count twice.
TEST_F(SqlTest, ScanIsZeroCopy) {
  ASSERT_EQ(QuiverArgs({"up", "--nodes", "2", "--size", "512M", "--dir", state_}).code,
            0);
  constexpr int64_t kRows = 25'000'000;  // 200 MB of int64
  constexpr long kTableKb = kRows * 8 / 1024;
  Publish("big", kRows, 1);
  ExpectScanIsZeroCopy("big", "0", kTableKb);
  Ran r = Sql({"--format", "csv", "SELECT count(*), sum(v) FROM big"});
  EXPECT_EQ(CsvBody(r.out), "25000000,312499987500000\n") << r.out;
}

// A cluster is shared: by default a query reaches its tables and nothing
// else. Reading a file (read_csv, read_text), writing one (COPY ... TO),
// attaching a database, installing or loading an extension, or changing a
// setting to allow any of it, is refused with a message that says how to
// allow files; `--allow-files` reads and writes files as this user.
TEST_F(SqlTest, FilesAndExtensionsAreOffUnlessAllowed) {
  ASSERT_EQ(Up().code, 0);
  const std::string csv = "/tmp/quiver-sql-files-" + std::to_string(getpid()) + ".csv";
  for (const std::string& q :
       {std::string("SELECT * FROM read_csv('/etc/passwd')"),
        std::string("SELECT * FROM read_text('/etc/hostname')"),
        "COPY (SELECT 1 AS x) TO '" + csv + "'", std::string("ATTACH '/tmp/x.db' AS x"),
        std::string("INSTALL httpfs"), std::string("LOAD httpfs"),
        std::string("SET enable_external_access = true"),
        std::string("SET autoinstall_known_extensions = true")}) {
    Ran r = Sql({q});
    EXPECT_EQ(r.code, 1) << q << "\n" << r.out;
    EXPECT_NE(r.out.find("--allow-files"), std::string::npos) << q << "\n" << r.out;
  }
  EXPECT_FALSE(std::ifstream(csv).good()) << "COPY ... TO wrote a file";
  // --publish may not smuggle a file into cluster memory either.
  Ran pub = Sql({"--publish", "passwd", "SELECT * FROM read_csv('/etc/passwd')"});
  EXPECT_EQ(pub.code, 1) << pub.out;
  EXPECT_EQ(Sql({"SELECT count(*) FROM passwd"}).code, 1);

  Ran wrote = Sql({"--allow-files", "COPY (SELECT 42 AS x) TO '" + csv + "'"});
  EXPECT_EQ(wrote.code, 0) << wrote.out;
  Ran read =
      Sql({"--allow-files", "--format", "csv", "SELECT x FROM read_csv('" + csv + "')"});
  EXPECT_EQ(read.code, 0) << read.out;
  EXPECT_EQ(CsvBody(read.out).substr(0, 3), "42\n") << read.out;
  // Extensions are neither installed nor loaded behind a query's back with
  // files allowed either, and the settings stay locked.
  Ran settings = Sql({"--allow-files", "--format", "csv",
                      "SELECT current_setting('autoinstall_known_extensions') AS i, "
                      "current_setting('autoload_known_extensions') AS l"});
  EXPECT_EQ(settings.code, 0) << settings.out;
  EXPECT_EQ(CsvBody(settings.out).substr(0, 11), "false,false") << settings.out;
  EXPECT_EQ(Sql({"--allow-files", "SET autoload_known_extensions = true"}).code, 1);
  std::remove(csv.c_str());
}

}  // namespace
}  // namespace quiver
