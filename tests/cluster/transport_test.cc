// quiver serve and quiver scan as processes: scans between processes of one
// host (shared memory, cma) and across network namespaces (on the TLS
// stream over TCP), values checked against DuckDB run here on the same file;
// a client SIGKILLed in the middle of a scan leaves the server's memory at
// its baseline; what a peer without the token sends to any port of the
// server changes nothing.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "cluster/cluster_util.h"
#include "common/status_macros.h"
#include "duckdb/connection.h"
#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc/reader.h"
#include "quiver/transport/client.h"
#include "transport/front_door.h"

namespace quiver {
namespace {

using testing::BinaryPath;
using testing::Child;
using testing::Eventually;

class TransportProcesses : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("quiver-transport-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    token_ = (dir_ / "token").string();
    std::FILE* f = std::fopen(token_.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("transport-test-token\n", f);
    std::fclose(f);
    // The data: every kind of column DuckDB writes to Parquet that Quiver
    // reads, with nulls, written by DuckDB here.
    parquet_ = (dir_ / "data.parquet").string();
    ASSERT_OK_AND_ASSIGN(db_, duckdb::Database::Open());
    ASSERT_OK_AND_ASSIGN(conn_, duckdb::Connection::Open(db_));
    ASSERT_OK(conn_->Execute(
        "COPY (SELECT i AS id, (i % 1000)::INTEGER AS k, i * 0.25 AS v, "
        "CASE WHEN i % 13 = 0 THEN NULL ELSE 'name-' || (i % 4001)::VARCHAR END AS s, "
        "i % 3 = 0 AS flag, DATE '2001-02-03' + (i % 9000)::INTEGER AS d, "
        "TIMESTAMP '2020-01-01' + to_microseconds(i) AS ts, "
        "(i % 100000)::DECIMAL(12, 3) AS dec, [i % 5, i % 7] AS pair "
        "FROM range(300000) t(i)) TO '" +
        parquet_ + "' (FORMAT parquet)"));
  }
  void TearDown() override {
    if (server_.started()) {
      server_.Kill(SIGTERM);
      server_.Finish(10000);
    }
    std::filesystem::remove_all(dir_);
  }

  // `quiver serve` on 127.0.0.1 (in namespace `ns` if given, with `env`).
  void StartServer(const std::string& listen, const std::vector<std::string>& prefix = {},
                   const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = prefix;
    for (const std::string& a :
         {BinaryPath("quiver"), std::string("serve"), std::string("--listen"), listen,
          std::string("--token-file"), token_, std::string("--pool-mib"),
          std::string("64"), std::string("--table"), "t=" + parquet_}) {
      argv.push_back(a);
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    server_ = Child::Start(argv);
    const std::string line = server_.WaitForLine("listening on", 60000);
    ASSERT_FALSE(line.empty()) << "quiver serve did not start: " << server_.output();
    port_ = line.substr(line.rfind(':') + 1);
    port_ = port_.substr(0, port_.find(','));
  }

  // `quiver scan` of `sql` into a file; returns the table read back.
  TablePtr Scan(const std::string& host, const std::string& sql,
                const std::string& bodies, const std::vector<std::string>& prefix = {}) {
    const std::string out = (dir_ / ("scan-" + bodies + ".arrows")).string();
    std::vector<std::string> argv = prefix;
    for (const std::string& a :
         {BinaryPath("quiver"), std::string("scan"), host + ":" + port_, sql,
          std::string("--token-file"), token_, std::string("--bodies"), bodies,
          std::string("--min-rows"), std::string("50000"), std::string("--out"), out}) {
      argv.push_back(a);
    }
    Child scan = Child::Start(argv);
    const int rc = scan.Finish(120000);
    EXPECT_EQ(rc, 0) << "quiver scan (" << bodies << ") failed: " << scan.output();
    auto data = io::MemoryMapFile(out);
    if (!data.ok()) return nullptr;
    auto reader = ipc::OpenBatchReader(*data);
    if (!reader.ok()) return nullptr;
    auto batches = (*reader)->ReadAll();
    if (!batches.ok()) return nullptr;
    for (const auto& b : *batches) EXPECT_TRUE(b->ValidateFull().ok());
    return Table::FromRecordBatches(*batches, (*reader)->schema()).ValueOrDie();
  }

  TablePtr Local(const std::string& sql) {
    auto t = conn_->QueryTable(sql);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : nullptr;
  }

  std::string Query() const {
    return "SELECT * FROM read_parquet('" + parquet_ + "') ORDER BY id";
  }

  std::filesystem::path dir_;
  std::string token_, parquet_, port_;
  std::shared_ptr<duckdb::Database> db_;
  std::unique_ptr<duckdb::Connection> conn_;
  Child server_;
};

// Tables equal value for value, whatever their chunking.
void ExpectSameRows(const TablePtr& got, const TablePtr& want) {
  ASSERT_NE(got, nullptr);
  ASSERT_NE(want, nullptr);
  ASSERT_TRUE(got->schema()->Equals(*want->schema()))
      << got->schema()->ToString() << "\nvs\n"
      << want->schema()->ToString();
  ASSERT_EQ(got->num_rows(), want->num_rows());
  EXPECT_TRUE(got->Equals(*want));
}

TEST_F(TransportProcesses, ScansBetweenProcessesEqualDuckDBReadingTheFileHere) {
  StartServer("127.0.0.1:0");
  const auto want = Local(Query());
  for (const std::string bodies : {"packed", "addresses", "measure"}) {
    SCOPED_TRACE(bodies);
    ExpectSameRows(Scan("127.0.0.1", "SELECT * FROM t ORDER BY id", bodies), want);
  }
  // A query DuckDB answers differently than a plain scan.
  ExpectSameRows(
      Scan("127.0.0.1",
           "SELECT k, count(*) AS n, sum(v) AS total FROM t GROUP BY k ORDER BY k",
           "measure"),
      Local("SELECT k, count(*) AS n, sum(v) AS total FROM read_parquet('" + parquet_ +
            "') GROUP BY k ORDER BY k"));
}

TEST_F(TransportProcesses, TheServerReachesNoFileAndNoSettingOfItsHost) {
  StartServer("127.0.0.1:0");
  transport::ClientOptions o;
  o.token = "transport-test-token";
  ASSERT_OK_AND_ASSIGN(auto client, transport::Client::Connect("127.0.0.1:" + port_, o));
  for (const std::string sql :
       {"SELECT * FROM read_csv('/etc/passwd')", "SET enable_external_access = true",
        "COPY t TO '/tmp/quiver-transport-leak.csv'"}) {
    auto scan = client->InitScan(sql);
    ASSERT_FALSE(scan.ok()) << sql;
    EXPECT_NE(scan.status().message().find("transport server"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists("/tmp/quiver-transport-leak.csv"));
  auto bad_dataset = client->InitScan("SELECT 1", {"nope"});
  ASSERT_FALSE(bad_dataset.ok());
  EXPECT_NE(bad_dataset.status().message().find("no dataset 'nope'"), std::string::npos);
}

TEST_F(TransportProcesses, AClientKilledMidScanLeavesTheServerAtItsBaseline) {
  StartServer("127.0.0.1:0");
  transport::ClientOptions o;
  o.token = "transport-test-token";
  ASSERT_OK_AND_ASSIGN(auto watcher, transport::Client::Connect("127.0.0.1:" + port_, o));
  // No memory held, no scan, no connection but the watcher's, nothing in
  // flight but (perhaps) the answer to the watcher's last question.
  auto at_baseline = [&] {
    transport::ServerStats after;
    const bool ok = Eventually(
        [&] {
          auto s = watcher->Stats();
          if (!s.ok()) return false;
          after = *s;
          return after.pool_bytes_in_use == 0 && after.scans == 0 &&
                 after.connections == 1 && after.sends <= 1;
        },
        // Generous: noticing a killed peer can take UCX seconds under ASan on
        // a loaded machine (it failed once at 5 s).
        30000);
    EXPECT_TRUE(ok) << "pool bytes " << after.pool_bytes_in_use << ", scans "
                    << after.scans << ", connections " << after.connections << ", sends "
                    << after.sends;
  };
  for (const std::string bodies : {"packed", "addresses"}) {
    SCOPED_TRACE(bodies);
    // One batch at a time, of a result of 15 billion rows: the client is in
    // the middle of the scan whenever it is killed. `exec`: the pid killed
    // is the client's, not a shell's.
    Child scan = Child::Start(
        {"sh", "-c",
         "exec " + BinaryPath("quiver") + " scan 127.0.0.1:" + port_ +
             " 'SELECT * FROM t, range(100000)' --token-file " + token_ + " --bodies " +
             bodies + " --window 1 --min-rows 10000 --progress --limit 0 2>&1"});
    ASSERT_FALSE(scan.WaitForLine("batch 2:", 60000).empty()) << scan.output();
    ASSERT_OK_AND_ASSIGN(auto during, watcher->Stats());
    EXPECT_EQ(during.scans, 1u);  // the scan is open on the server
    scan.Kill(SIGKILL);
    scan.Finish(10000);
    EXPECT_EQ(scan.output().find("quiver scan:"), std::string::npos)
        << "the scan ended before it was killed:\n"
        << scan.output();
    at_baseline();
  }
  // The server still serves, and is back at its baseline once a client
  // that ends normally has gone.
  ExpectSameRows(Scan("127.0.0.1", "SELECT * FROM t ORDER BY id", "measure"),
                 Local(Query()));
  at_baseline();
}

// Every port of `quiver serve` (its TLS front door; UCX opens none) takes
// garbage, the bytes that aborted or wrote through UCX's own listeners,
// cut-short and oversized handshakes and silent sockets, and goes on
// serving; a client without the token cannot scan.
TEST_F(TransportProcesses, GarbageToEveryPortOfQuiverServeLeavesItServing) {
  StartServer("127.0.0.1:0");
  const auto want = Local(Query());
  ExpectSameRows(Scan("127.0.0.1", "SELECT * FROM t ORDER BY id", "measure"), want);
  const auto ports = testing::ListeningTcpPorts(server_.pid());
  ASSERT_EQ(ports.size(), 1u) << "the front door and nothing else";
  EXPECT_EQ(std::to_string(ports[0].port), port_);
  for (const auto& port : ports) {
    for (const auto& g : testing::AttackerBytes()) {
      SCOPED_TRACE(g.name);
      ASSERT_TRUE(testing::SendGarbage(port, g.bytes, 200));
      ASSERT_EQ(kill(server_.pid(), 0), 0) << "quiver serve died: " << server_.output();
    }
  }
  std::vector<int> silent;
  for (int i = 0; i < 100; ++i) silent.push_back(testing::Dial(ports[0]));
  ExpectSameRows(Scan("127.0.0.1", "SELECT * FROM t ORDER BY id", "packed"), want);
  for (int fd : silent) {
    EXPECT_TRUE(testing::ClosedByPeer(fd, 3000));
    close(fd);
  }
  // The wrong token: refused in the handshake, nothing runs.
  const std::string wrong = (dir_ / "wrong-token").string();
  std::FILE* f = std::fopen(wrong.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("transport-test-tokem\n", f);
  std::fclose(f);
  Child refused =
      Child::Start({"sh", "-c",
                    "exec " + BinaryPath("quiver") + " scan 127.0.0.1:" + port_ +
                        " 'SELECT count(*) FROM t' --token-file " + wrong + " 2>&1"});
  EXPECT_NE(refused.Finish(60000), 0);
  EXPECT_NE(refused.output().find("wrong token"), std::string::npos) << refused.output();
  ExpectSameRows(Scan("127.0.0.1", "SELECT * FROM t ORDER BY id", "addresses"), want);
  ASSERT_EQ(kill(server_.pid(), 0), 0);
}

TEST_F(TransportProcesses, AServerKilledMidScanIsAnErrorForItsClientNotAHang) {
  StartServer("127.0.0.1:0");
  for (transport::BodyMode mode :
       {transport::BodyMode::kPacked, transport::BodyMode::kAddresses}) {
    transport::ClientOptions o;
    o.token = "transport-test-token";
    o.bodies = mode;
    o.timeout_ms = 20000;
    ASSERT_OK_AND_ASSIGN(auto client,
                         transport::Client::Connect("127.0.0.1:" + port_, o));
    transport::ScanOptions so;
    so.min_rows = 10000;
    so.window_batches = 1;
    ASSERT_OK_AND_ASSIGN(uint64_t scan,
                         client->InitScan("SELECT * FROM t, range(20)", so));
    ASSERT_OK_AND_ASSIGN(auto reader, client->Iterate(scan));
    ASSERT_OK_AND_ASSIGN(auto first, reader->Next());
    ASSERT_NE(first, nullptr);
    server_.Kill(SIGKILL);
    server_.Finish(10000);
    const auto start = std::chrono::steady_clock::now();
    Status st;
    for (;;) {
      auto b = reader->Next();
      if (!b.ok()) {
        st = b.status();
        break;
      }
      ASSERT_NE(*b, nullptr) << "the scan ended as if complete after its server died";
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(st.IsIOError()) << st.ToString();
    EXPECT_LT(seconds, 15.0) << st.ToString();
    // The first batch stays readable: it is in the client's memory.
    EXPECT_TRUE(first->ValidateFull().ok());
    if (mode == transport::BodyMode::kPacked) StartServer("127.0.0.1:0");
  }
}

class TransportNetns : public TransportProcesses {
 protected:
  void SetUp() override {
    TransportProcesses::SetUp();
    const std::string id = std::to_string(getpid() % 100000);
    for (int i = 0; i < 2; ++i) ns_.push_back("qvt" + id + "n" + std::to_string(i));
    const std::string a = "qvt" + id + "a", b = "qvt" + id + "b";
    subnet_ = "10.198." + std::to_string(getpid() % 250) + ".";
    for (const auto& ns : ns_) ASSERT_EQ(Run("ip netns add " + ns), 0) << ns;
    ASSERT_EQ(Run("ip link add " + a + " type veth peer name " + b), 0);
    ASSERT_EQ(Run("ip link set " + a + " netns " + ns_[0]), 0);
    ASSERT_EQ(Run("ip link set " + b + " netns " + ns_[1]), 0);
    ASSERT_EQ(Run("ip -n " + ns_[0] + " addr add " + subnet_ + "1/24 dev " + a), 0);
    ASSERT_EQ(Run("ip -n " + ns_[1] + " addr add " + subnet_ + "2/24 dev " + b), 0);
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(Run("ip -n " + ns_[i] + " link set " + (i == 0 ? a : b) + " up"), 0);
      ASSERT_EQ(Run("ip -n " + ns_[i] + " link set lo up"), 0);
    }
  }
  void TearDown() override {
    TransportProcesses::TearDown();
    for (const auto& ns : ns_) Run("ip netns del " + ns);
  }
  static int Run(const std::string& cmd) { return std::system((cmd + " 2>&1").c_str()); }
  std::vector<std::string> In(int i) const {
    return {"ip", "netns", "exec", ns_[i], "env", "UCX_TLS=tcp"};
  }
  std::vector<std::string> ns_;
  std::string subnet_;
};

// Across namespaces no UCX transport may be used (UCX_TLS=tcp leaves none
// Quiver allows): every batch comes on the TLS stream.
TEST_F(TransportNetns, ScansAcrossNamespacesOverTcpEqualDuckDBHere) {
  StartServer(subnet_ + "1:0", In(0));
  const auto want = Local(Query());
  for (const std::string bodies : {"measure", "packed"}) {
    SCOPED_TRACE(bodies);
    ExpectSameRows(Scan(subnet_ + "1", "SELECT * FROM t ORDER BY id", bodies, In(1)),
                   want);
  }
}

}  // namespace
}  // namespace quiver
