// `quiver put`, `ls`, `rm` and `get` as a user runs them against a cluster
// of `quiver up`: files DuckDB writes (every type it writes to Parquet, and
// CSV) loaded into cluster memory over three nodes, queried from every node
// and compared with DuckDB reading the same files; bad files, interrupts and
// kills leave region usage where it was and no table behind.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "cluster/cluster_util.h"
#include "cluster/up_util.h"
#include "control/local_cluster.h"
#include "quiver/client.h"

namespace quiver {
namespace {

using testing::BinaryPath;
using testing::Child;
using testing::Eventually;
using testing::Ran;

// One column of each type DuckDB writes to Parquet, NULLs included; `id`
// orders the rows. Written as Parquet, CSV and JSON.
constexpr const char* kTypes = R"(SELECT i AS id,
 (i % 2 = 0) AS b, (i % 100)::TINYINT AS i8, ((i % 4000) * 7)::SMALLINT AS i16,
 (i * 1000)::INTEGER AS i32, (i * 100000)::BIGINT AS i64, (i % 200)::UTINYINT AS u8,
 (i * 3)::USMALLINT AS u16, (i * 1000)::UINTEGER AS u32, (i * 100000)::UBIGINT AS u64,
 (i * 12345678901)::HUGEINT AS i128, (i / 7)::FLOAT AS f32, (i / 7)::DOUBLE AS f64,
 ((i % 9000) / 10)::DECIMAL(4,1) AS d4, (i / 100)::DECIMAL(9,2) AS d9,
 (i / 1000)::DECIMAL(18,3) AS d18, (i / 3)::DECIMAL(38,10) AS d38,
 'str_' || i AS s, ('blob' || i)::BLOB AS bl, DATE '2000-01-01' + (i % 5000)::INT AS dt,
 TIME '01:02:03' + INTERVAL (i % 3600) SECOND AS tm,
 TIMESTAMP '2020-01-01 00:00:00' + INTERVAL (i) SECOND AS ts,
 (TIMESTAMP '2020-01-01 00:00:00' + INTERVAL (i) SECOND)::TIMESTAMPTZ AS tstz,
 INTERVAL (i % 40) DAY + INTERVAL (i % 13) MONTH AS iv,
 ('00000000-0000-0000-0000-' || lpad(i::VARCHAR, 12, '0'))::UUID AS uid,
 [i, i + 1, NULL] AS li, {'a': i, 'b': 'x' || i} AS st, MAP {'k': i} AS mp,
 CASE WHEN i % 5 = 0 THEN NULL ELSE i END AS nullable,
 (['red', 'green', 'blue'])[i % 3 + 1]::ENUM('red', 'green', 'blue') AS en
FROM range(20000) t(i))";

class PutTest : public testing::UpFixture {
 protected:
  Ran Up3() {
    return QuiverArgs({"up", "--nodes", "3", "--size", "256M", "--dir", state_});
  }
  Ran Q(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin() + 1, {"--dir", state_});
    return QuiverArgs(args, input);
  }
  // DuckDB (through `quiver sql`) writes `query`'s rows to `file`.
  void Write(const std::string& query, const std::string& file,
             const std::string& options) {
    Ran r = Q({"sql", "--allow-files",
               "COPY (" + query + ") TO '" + file + "' (" + options + ")"});
    ASSERT_EQ(r.code, 0) << r.out;
  }
  // CSV of `query` run on `node` (or the first node when empty).
  std::string Csv(const std::string& query, const std::string& node = "") {
    std::vector<std::string> args = {"sql", "--allow-files", "--format", "csv"};
    if (!node.empty()) args.insert(args.end(), {"--node", node});
    args.push_back(query);
    Ran r = Q(args);
    EXPECT_EQ(r.code, 0) << query << "\n" << r.out;
    return r.out;
  }
  // Bytes in use over the regions of `nodes` (default: every node), as
  // node 0 sees them.
  uint64_t Used(const std::vector<uint32_t>& nodes = {}) {
    auto client = Client::Connect({.config_path = state_ + "/cluster.toml", .node = 0});
    if (!client.ok()) return ~0ULL;
    auto status = (*client)->GetClusterStatus();
    if (!status.ok()) return ~0ULL;
    uint64_t used = 0;
    for (const auto& n : status->nodes) {
      if (nodes.empty() || std::find(nodes.begin(), nodes.end(), n.node) != nodes.end()) {
        used += n.used;
      }
    }
    return used;
  }
  bool Listed(const std::string& name) {
    Ran r = Q({"ls"});
    EXPECT_EQ(r.code, 0) << r.out;
    return r.out.find("\n" + name + " ") != std::string::npos;
  }
};

TEST_F(PutTest, CsvAndParquetEqualDuckDBFromEveryNode) {
  ASSERT_EQ(Up3().code, 0);
  const std::string parquet = tmp_ + "/types.parquet", csv = tmp_ + "/types.csv",
                    json = tmp_ + "/types.json";
  Write(kTypes, parquet, "FORMAT parquet");
  Write(kTypes, csv, "FORMAT csv, HEADER true");
  Write(kTypes, json, "FORMAT json");
  // Chunks of about 1 MB: the table lies in every node's region.
  for (const auto& [file, name] :
       {std::pair{parquet, "tp"}, std::pair{csv, "tc"}, std::pair{json, "tj"}}) {
    Ran put = Q({"put", "--chunk-size", "1000000", file, name});
    ASSERT_EQ(put.code, 0) << put.out;
    EXPECT_NE(put.out.find(std::string("put ") + name + ": 20000 rows"),
              std::string::npos)
        << put.out;
    EXPECT_NE(put.out.find("on nodes 0, 1, 2"), std::string::npos) << put.out;
  }
  // The summary counts what lies in children too: three million int64 list
  // values (22.9 MiB) beside one million offsets and validity bits.
  const std::string lists = tmp_ + "/lists.parquet";
  Write("SELECT [i, i + 1, i + 2] AS l FROM range(1000000) t(i)", lists,
        "FORMAT parquet");
  Ran listed = Q({"put", lists, "lists"});
  ASSERT_EQ(listed.code, 0) << listed.out;
  const size_t rows_at = listed.out.find("put lists: 1000000 rows, ");
  ASSERT_NE(rows_at, std::string::npos) << listed.out;
  const double mib = std::strtod(listed.out.c_str() + rows_at + 25, nullptr);
  EXPECT_NE(listed.out.find(" MiB in ", rows_at), std::string::npos) << listed.out;
  EXPECT_GT(mib, 26.0) << listed.out;  // 22.9 values + 3.8 offsets + validity
  EXPECT_LT(mib, 28.0) << listed.out;
  Ran ls = Q({"ls"});
  ASSERT_EQ(ls.code, 0) << ls.out;
  EXPECT_NE(ls.out.find("on nodes"), std::string::npos) << ls.out;
  for (const char* name : {"\ntp ", "\ntc ", "\ntj "}) {
    const size_t at = ls.out.find(name);
    ASSERT_NE(at, std::string::npos) << ls.out;
    const std::string line = ls.out.substr(at + 1, ls.out.find('\n', at + 1) - at - 1);
    EXPECT_NE(line.find(" 20000 "), std::string::npos) << line;
    EXPECT_NE(line.find(" 0,1,2 "), std::string::npos) << line;  // where its chunks are
    EXPECT_NE(line.find(" ok"), std::string::npos) << line;
  }
  const std::string direct_parquet = Csv("SELECT * FROM '" + parquet + "' ORDER BY id");
  const std::string direct_csv = Csv("SELECT * FROM '" + csv + "' ORDER BY id");
  const std::string direct_json = Csv("SELECT * FROM '" + json + "' ORDER BY id");
  ASSERT_GT(direct_parquet.size(), 20000u * 100);
  const std::string agg =
      "SELECT count(*), sum(i64), sum(d38), max(s), min(ts), sum(f64), "
      "count(nullable), max(li[2]), max(st.b), count(DISTINCT en) FROM ";
  const std::string agg_direct = Csv(agg + "'" + parquet + "'");
  for (const char* node : {"0", "1", "2"}) {
    SCOPED_TRACE(node);
    EXPECT_EQ(Csv("SELECT * FROM tp ORDER BY id", node), direct_parquet);
    EXPECT_EQ(Csv("SELECT * FROM tc ORDER BY id", node), direct_csv);
    EXPECT_EQ(Csv("SELECT * FROM tj ORDER BY id", node), direct_json);
    EXPECT_EQ(Csv(agg + "tp", node), agg_direct);
    // A join of the two tables put from different files.
    EXPECT_EQ(
        Csv("SELECT count(*) AS n, sum(tp.i64 - tc.i64) AS d FROM tp JOIN tc USING (id)",
            node),
        "n,d\n20000,0\n");
  }

  // Globs: two CSV parts are one table.
  Write("SELECT * FROM range(0, 700) t(x)", tmp_ + "/part1.csv", "FORMAT csv, HEADER");
  Write("SELECT * FROM range(700, 1000) t(x)", tmp_ + "/part2.csv", "FORMAT csv, HEADER");
  Ran put = Q({"put", tmp_ + "/part*.csv", "parts"});
  ASSERT_EQ(put.code, 0) << put.out;
  EXPECT_EQ(Csv("SELECT count(*), sum(x), count(DISTINCT x) FROM parts"),
            "count_star(),sum(x),count(DISTINCT x)\n1000,499500,1000\n");

  // get writes each format; DuckDB (or put, for Arrow IPC) reads back the
  // same rows.
  for (const char* ext : {".parquet", ".csv", ".json"}) {
    SCOPED_TRACE(ext);
    const std::string out = tmp_ + "/back" + ext;
    Ran get = Q({"get", "tp", "-o", out});
    ASSERT_EQ(get.code, 0) << get.out;
    EXPECT_NE(get.out.find("20000 rows of tp"), std::string::npos) << get.out;
    EXPECT_EQ(Csv("SELECT count(*), sum(i64), max(s) FROM '" + out + "'"),
              Csv("SELECT count(*), sum(i64), max(s) FROM tp"));
  }
  EXPECT_EQ(Csv("SELECT * FROM '" + tmp_ + "/back.parquet' ORDER BY id"), direct_parquet);
  for (const char* ext : {".arrow", ".arrows"}) {
    SCOPED_TRACE(ext);
    const std::string out = tmp_ + "/back" + ext;
    ASSERT_EQ(Q({"get", "tp", "-o", out}).code, 0);
    const std::string name = std::string("again") + (ext[6] == 's' ? "s" : "");
    Ran again = Q({"put", out, name});
    ASSERT_EQ(again.code, 0) << again.out;
    EXPECT_EQ(Csv("SELECT * FROM " + name + " ORDER BY id", "1"), direct_parquet);
  }
}

// The query process does not copy the put table: a count touches none of
// its pages, a sum maps each page once (counted once in the resident size).
TEST_F(PutTest, ScanOfAPutTableIsZeroCopy) {
  ASSERT_EQ(QuiverArgs({"up", "--nodes", "2", "--size", "512M", "--dir", state_}).code,
            0);
  constexpr int64_t kRows = 20'000'000;  // 160 MB of int64
  constexpr long kTableKb = kRows * 8 / 1024;
  const std::string file = tmp_ + "/big.parquet";
  Write("SELECT range AS v FROM range(" + std::to_string(kRows) + ")", file,
        "FORMAT parquet");
  Ran put = Q({"put", file, "big"});
  ASSERT_EQ(put.code, 0) << put.out;
  EXPECT_NE(put.out.find("on nodes 0, 1"), std::string::npos) << put.out;
  ExpectScanIsZeroCopy("big", "1", kTableKb);
  EXPECT_EQ(Csv("SELECT count(*), sum(v) FROM big"),
            "count_star(),sum(v)\n20000000,199999990000000\n");

  // A get interrupted while DuckDB writes leaves neither the file nor its
  // temporary.
  const std::string out = tmp_ + "/out.parquet";
  Child get =
      Child::Start({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", BinaryPath("quiver"),
                    "get", "--dir", state_, "big", "-o", out});
  auto temporary = [&] {
    for (const auto& e : std::filesystem::directory_iterator(tmp_)) {
      if (e.path().filename().string().rfind("out.parquet.quiver-", 0) == 0) return true;
    }
    return false;
  };
  ASSERT_TRUE(Eventually(temporary, 60000));
  get.Kill(SIGINT);
  EXPECT_EQ(get.Finish(), 130) << get.output();
  EXPECT_NE(get.output().find("interrupted"), std::string::npos) << get.output();
  EXPECT_FALSE(temporary());
  EXPECT_FALSE(Exists(out));
}

TEST_F(PutTest, BadInputLeavesNothing) {
  ASSERT_EQ(Up3().code, 0);
  const uint64_t baseline = Used();
  ASSERT_NE(baseline, ~0ULL);
  // A CSV whose 300,001st row is malformed: several chunks are written
  // before DuckDB finds it.
  const std::string good = tmp_ + "/good.csv", bad = tmp_ + "/bad.csv";
  Write("SELECT range AS id, 'x' || range AS s FROM range(300000)", good,
        "FORMAT csv, HEADER");
  {
    std::ifstream in(good);
    std::ofstream out(bad);
    out << in.rdbuf() << "oops,y\n";
  }
  Ran r = Q({"put", "--chunk-size", "1000000", bad, "bad"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("Could not convert string \"oops\""), std::string::npos) << r.out;
  EXPECT_EQ(Used(), baseline);

  r = Q({"put", tmp_ + "/missing.csv", "m"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("missing.csv: No such file or directory"), std::string::npos)
      << r.out;
  r = Q({"put", tmp_ + "/none*.parquet", "m"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no file matches"), std::string::npos) << r.out;
  {
    std::ofstream(tmp_ + "/trunc.parquet") << "PAR1 not really parquet";
    std::ofstream(tmp_ + "/garbage.arrow") << "ARROW1\0\0 garbage";
    std::ofstream(tmp_ + "/data.txt") << "1,2\n";
  }
  r = Q({"put", tmp_ + "/trunc.parquet", "m"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("trunc.parquet"), std::string::npos) << r.out;
  r = Q({"put", tmp_ + "/garbage.arrow", "m"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("garbage.arrow"), std::string::npos) << r.out;
  r = Q({"put", tmp_ + "/data.txt", "m"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--format"), std::string::npos) << r.out;
  r = Q({"put", good, tmp_ + "/trunc.parquet", "m"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("one table is put from files of one format"), std::string::npos)
      << r.out;
  r = Q({"put", good});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("usage: quiver put"), std::string::npos) << r.out;
  EXPECT_EQ(Used(), baseline);
  EXPECT_FALSE(Listed("bad"));
  EXPECT_FALSE(Listed("m"));

  // A name already published is refused, and the table stays.
  ASSERT_EQ(Q({"put", good, "t"}).code, 0);
  r = Q({"put", good, "t"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("a table named t is already published"), std::string::npos)
      << r.out;
  EXPECT_EQ(Csv("SELECT count(*) FROM t"), "count_star()\n300000\n");
  // rm, then nothing is left; rm and get of what is not there say so (exit
  // 1: the cluster's answer at run time, docs/cli.md).
  r = Q({"rm", "t"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(Listed("t"));
  EXPECT_TRUE(Eventually([&] { return Used() == baseline; }, 30000));
  r = Q({"rm", "t"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("no table 't' is published"), std::string::npos) << r.out;
  r = Q({"get", "t", "-o", tmp_ + "/t.parquet"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("quiver: get: no table 't' is published"), std::string::npos)
      << r.out;
  EXPECT_FALSE(Exists(tmp_ + "/t.parquet"));
}

// Two puts of one name at once: one table, whole, and the loser's memory
// back.
TEST_F(PutTest, RacingPutsOfOneNameLeaveExactlyOneWholeTable) {
  ASSERT_EQ(Up3().code, 0);
  const std::string file = tmp_ + "/race.parquet";
  Write("SELECT range AS v FROM range(3000000)", file, "FORMAT parquet");
  const uint64_t baseline = Used();
  ASSERT_NE(baseline, ~0ULL);
  auto start = [&] {
    return Child::Start({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", BinaryPath("quiver"),
                         "put", "--dir", state_, "--chunk-size", "2000000", file,
                         "race"});
  };
  Child a = start(), b = start();
  const int ca = a.Finish(120000), cb = b.Finish(120000);
  // Exactly one wins, whole (were both to lose, each home having found the
  // other's chunks first, they back off and try again); the loser is told
  // the name is taken and takes its memory back.
  EXPECT_EQ((ca == 0) + (cb == 0), 1) << a.output() << "\n" << b.output();
  for (int code : {ca, cb}) EXPECT_TRUE(code == 0 || code == 1) << code;
  const std::string& lost = ca == 0 ? b.output() : a.output();
  EXPECT_NE(lost.find("table 'race'"), std::string::npos) << lost;
  if (ca == 0 || cb == 0) {
    EXPECT_EQ(Csv("SELECT count(*) AS n, sum(v) AS s, count(DISTINCT v) AS d FROM race"),
              "n,s,d\n3000000,4499998500000,3000000\n");
    // Only the winner's 24 MB stay (and a little padding per chunk).
    const uint64_t used = Used();
    EXPECT_GE(used, baseline + 24'000'000);
    EXPECT_LT(used, baseline + 26'000'000);
    ASSERT_EQ(Q({"rm", "race"}).code, 0);
  } else {
    EXPECT_FALSE(Listed("race"));
  }
  EXPECT_TRUE(Eventually([&] { return Used() == baseline; }, 30000));
}

// A region that cannot take a chunk passes it to the next node; a table
// that fits nowhere fails naming why and leaves nothing.
TEST_F(PutTest, FullRegionsPassChunksOnOrFail) {
  ASSERT_EQ(Up().code, 0);  // 2 nodes of 64 MiB
  const std::string filler = tmp_ + "/filler.parquet", big = tmp_ + "/big.parquet",
                    huge = tmp_ + "/huge.parquet";
  Write("SELECT range AS v FROM range(5000000)", filler, "FORMAT parquet");  // 40 MB
  Write("SELECT range AS v FROM range(7000000)", big, "FORMAT parquet");     // 56 MB
  Write("SELECT range AS v FROM range(20000000)", huge, "FORMAT parquet");   // 160 MB
  Ran r = Q({"put", "--node", "0", filler, "filler"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("on node 0 "), std::string::npos) << r.out;
  // Round robin would put half of `big` on node 0, which has room for less.
  r = Q({"put", "--chunk-size", "4000000", big, "big"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("on nodes 0, 1"), std::string::npos) << r.out;
  EXPECT_EQ(Csv("SELECT count(*), sum(v), min(v), max(v) FROM big", "1"),
            "count_star(),sum(v),min(v),max(v)\n7000000,24499996500000,0,6999999\n");
  const uint64_t before = Used();
  r = Q({"put", huge, "huge"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("no node has room for the next"), std::string::npos) << r.out;
  EXPECT_EQ(Used(), before);
  EXPECT_FALSE(Listed("huge"));
  r = Q({"put", "--node", "1", big, "big1"});  // node 1 alone has no room for it
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(Used(), before);
  EXPECT_FALSE(Listed("big1"));
}

// Each put starts its round robin at the node with the most room: tables of
// one chunk land on different nodes instead of all on the first.
TEST_F(PutTest, SmallTablesSpreadOverTheNodes) {
  ASSERT_EQ(Up3().code, 0);
  const std::string csv = tmp_ + "/small.csv";
  Write("SELECT range AS v FROM range(1000)", csv, "FORMAT csv");
  std::set<std::string> homes;
  for (const char* name : {"s0", "s1", "s2"}) {
    Ran r = Q({"put", csv, name});
    ASSERT_EQ(r.code, 0) << r.out;
    const size_t at = r.out.find("on node ");
    ASSERT_NE(at, std::string::npos) << r.out;
    homes.insert(r.out.substr(at, 9));
  }
  EXPECT_EQ(homes.size(), 3u) << "three one-chunk tables on the nodes " << homes.size();
}

// On a terminal put draws a progress bar on stderr (DuckDB's estimate of
// the share read); a file of no rows is a table of its columns and no rows.
TEST_F(PutTest, ProgressOnATerminalAndEmptyFiles) {
  ASSERT_EQ(Up().code, 0);
  const std::string file = tmp_ + "/p.parquet";
  Write("SELECT range AS v FROM range(3000000)", file, "FORMAT parquet");
  // script(1) runs put on a pseudo-terminal.
  Child c = Child::Start({"script", "-qfec",
                          BinaryPath("quiver") + " put --dir " + state_ +
                              " --chunk-size 1000000 " + file + " p",
                          "/dev/null"});
  ASSERT_EQ(c.Finish(120000), 0) << c.output();
  EXPECT_NE(c.output().find("\r["), std::string::npos) << c.output();
  EXPECT_NE(c.output().find("% "), std::string::npos) << c.output();
  EXPECT_NE(c.output().find(" written, "), std::string::npos) << c.output();
  EXPECT_NE(c.output().find("put p: 3000000 rows"), std::string::npos) << c.output();
  Ran piped = Q({"put", file, "p2"});  // not a terminal: no bar
  ASSERT_EQ(piped.code, 0) << piped.out;
  EXPECT_EQ(piped.out.find('\r'), std::string::npos) << piped.out;

  { std::ofstream(tmp_ + "/empty.csv") << "a,b\n"; }
  Ran r = Q({"put", tmp_ + "/empty.csv", "empty"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("put empty: 0 rows (a table of 2 columns and no rows)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(Csv("SELECT count(*) AS n FROM empty"), "n\n0\n");
  EXPECT_EQ(Csv("SELECT column_name FROM (DESCRIBE empty)"), "column_name\na\nb\n");
}

// SIGINT in the middle of a put, SIGKILL, and a daemon SIGKILLed under it:
// region usage comes back to where it was and no table is left.
TEST_F(PutTest, InterruptAndKillLeaveNothing) {
  ASSERT_EQ(Up3().code, 0);
  const uint64_t baseline = Used();
  ASSERT_NE(baseline, ~0ULL);
  const std::string file = tmp_ + "/big.parquet";
  Write("SELECT range AS a, range * 2 AS b, 'row ' || range AS s FROM range(8000000)",
        file, "FORMAT parquet");
  for (int sig : {SIGINT, SIGKILL}) {
    SCOPED_TRACE(sig);
    Child put =
        Child::Start({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", BinaryPath("quiver"),
                      "put", "--dir", state_, "--chunk-size", "2000000", file, "big"});
    // Chunks are being written when the signal comes.
    ASSERT_TRUE(Eventually([&] { return Used() > baseline + 4'000'000; }, 60000));
    put.Kill(sig);
    const int code = put.Finish();
    if (sig == SIGINT) {
      EXPECT_EQ(code, 130) << put.output();
      EXPECT_NE(put.output().find("interrupted: nothing published"), std::string::npos)
          << put.output();
      EXPECT_EQ(Used(), baseline);  // freed before it exits
    } else {
      EXPECT_EQ(code, 128 + SIGKILL);
      EXPECT_TRUE(Eventually([&] { return Used() == baseline; }, 30000)) << Used();
    }
    EXPECT_FALSE(Listed("big"));
  }
  // A node's daemon SIGKILLed in the middle: the put fails naming it, and
  // what it wrote on the others comes back.
  const std::vector<uint32_t> live = {0, 2};
  const uint64_t live_baseline = Used(live);
  Child put =
      Child::Start({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", BinaryPath("quiver"),
                    "put", "--dir", state_, "--chunk-size", "2000000", file, "big"});
  ASSERT_TRUE(Eventually([&] { return Used() > baseline + 4'000'000; }, 60000));
  auto cluster = control::LocalCluster::Attach(state_);
  ASSERT_TRUE(cluster.ok());
  kill((*cluster)->pid(1), SIGKILL);
  EXPECT_EQ(put.Finish(), 1) << put.output();
  EXPECT_NE(put.output().find("node 1"), std::string::npos) << put.output();
  EXPECT_EQ(Used(live), live_baseline);
  EXPECT_FALSE(Listed("big"));

  // And `quiver down` leaves no process, socket or region file.
  const std::vector<std::string> regions = Regions();
  ASSERT_EQ(regions.size(), 3u);
  Ran down = Q({"down"});  // two daemons left
  ASSERT_EQ(down.code, 0) << down.out;
  EXPECT_TRUE(Daemons().empty());
  for (const auto& r : regions) EXPECT_FALSE(Exists(r)) << r;
  for (const auto& e : std::filesystem::recursive_directory_iterator(state_)) {
    EXPECT_FALSE(e.is_socket()) << e.path();
  }
}

}  // namespace
}  // namespace quiver
