// The transport (docs/transport.md): scans of a generated table through the
// UCX server and client, beside the best the machine does otherwise with the
// same bytes in the same run:
//
//   BM_Scan/<bodies>/<tls>/<rows %>/<cols %>   a scan through Server/Client,
//       the server in a process of its own:
//       bodies 0 packed, 1 addresses, 2 measured; tls 0 UCX's choice
//       (shared memory and cma here), 1 TCP only
//   BM_SerializedTcp/<rows %>/<cols %>   the same batches as an ordinary
//       Arrow IPC stream over a TCP loopback socket (writer and reader of
//       the columnar layer; 4 MiB socket buffers): serialising RPC done well
//   BM_SerializedGrpc/<rows %>/<cols %>   the same stream by gRPC
//       server-streaming in 4 MiB messages (bench/grpc_baseline.cc): the
//       serialising RPC Thallus compared with
//   BM_ScanBatch/<tls>/<K rows>, BM_SerializedTcpBatch/<K rows>   all rows
//       and columns in batches of K*1024 rows, by the transport and by the
//       serialising baseline (which coalesces to the same size)
//   BM_RawUcx/<tls>   tagged sends of the scan's body sizes between two UCX
//       workers, no Arrow at all: what the transport could reach
//   BM_Memcpy   one copy of the scan's bytes
//   BM_QueryUcx/<pct>, BM_QueryGrpc/<pct>, BM_QueryTcp/<pct>   end to end,
//       DuckDB included: a query selecting pct% of a 4-column table, through
//       the transport and through the serialising baselines
//
// The server side stands in for DuckDB with a reader of 2048-row slices
// (DuckDB's chunk size), so the transport's own coalescing copy is counted.
// Scans report the CPU time per batch of the client (this process) and of
// the server (its process, from /proc), in microseconds: client_cpu_us,
// server_cpu_us and cpu_us_per_batch (both).
// QUIVER_BENCH_QUICK=1 makes the table 1M rows instead of 8M.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <thread>

#include "bench_util.h"
#include "duckdb/connection.h"
#include "quiver/columnar/concatenate.h"
#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc/reader.h"
#include "quiver/columnar/ipc/writer.h"
#include "quiver/transport/client.h"
#include "quiver/transport/server.h"
#include "serialized_baseline.h"
#include "transport/ucx.h"

namespace quiver {
namespace {

constexpr int64_t kChunk = 2048;

// 8 columns: 4 int64, 2 double, 2 strings of about 12 bytes.
const RecordBatchPtr& Table() {
  static RecordBatchPtr table = [] {
    const int64_t rows = bench::QuickOr(8 << 20, 1 << 20);
    std::vector<ArrayPtr> columns;
    std::vector<std::string> names;
    for (int c = 0; c < 4; ++c) {
      Int64Builder b;
      (void)b.Reserve(rows);
      for (int64_t i = 0; i < rows; ++i) b.UnsafeAppend(i * (c + 1));
      columns.push_back(b.Finish().ValueOrDie());
      names.push_back("i" + std::to_string(c));
    }
    for (int c = 0; c < 2; ++c) {
      DoubleBuilder b;
      (void)b.Reserve(rows);
      for (int64_t i = 0; i < rows; ++i) b.UnsafeAppend(static_cast<double>(i) * 0.5 + c);
      columns.push_back(b.Finish().ValueOrDie());
      names.push_back("d" + std::to_string(c));
    }
    for (int c = 0; c < 2; ++c) {
      StringBuilder b;
      for (int64_t i = 0; i < rows; ++i)
        (void)b.Append("value-" + std::to_string(i % 100000));
      columns.push_back(b.Finish().ValueOrDie());
      names.push_back("s" + std::to_string(c));
    }
    return RecordBatch::FromArrays(names, columns).ValueOrDie();
  }();
  return table;
}

// The first rows% of the rows and cols% of the columns, in DuckDB-sized
// chunks (zero-copy slices).
std::vector<RecordBatchPtr> Selection(int rows_pct, int cols_pct) {
  const RecordBatchPtr& t = Table();
  const int64_t rows = t->num_rows() * rows_pct / 100;
  const int cols = std::max(1, t->num_columns() * cols_pct / 100);
  std::vector<ArrayPtr> columns;
  std::vector<std::string> names;
  for (int c = 0; c < cols; ++c) {
    columns.push_back(t->column(c)->Slice(0, rows));
    names.push_back(t->column_name(c));
  }
  auto projected = RecordBatch::FromArrays(names, columns).ValueOrDie();
  std::vector<RecordBatchPtr> chunks;
  for (int64_t at = 0; at < rows; at += kChunk) {
    chunks.push_back(projected->Slice(at, std::min(kChunk, rows - at)));
  }
  return chunks;
}

int64_t BytesOf(const std::vector<RecordBatchPtr>& batches) {
  int64_t n = 0;
  for (const auto& b : batches) {
    for (int c = 0; c < b->num_columns(); ++c) {
      const auto& d = b->column_data(c);
      const int64_t width = d->type->byte_width();
      if (width > 0) {
        n += b->num_rows() * width;
      } else {  // strings: offsets and the bytes they span
        const auto* o = d->GetValues<int32_t>(1);
        n += (b->num_rows() + 1) * 4 + (o[b->num_rows()] - o[0]);
      }
    }
  }
  return n;
}

// The servers run in processes of their own (forked before this process
// touches UCX), as a scan between processes of one host would: a UCX server
// per transport choice, and in the first one also the serialising baseline,
// a TCP server that answers a request line with an Arrow IPC stream.
uint16_t g_ports[2] = {0, 0};
uint16_t g_tcp_port = 0;
uint16_t g_grpc_port = 0;
int g_stop[2] = {-1, -1};
pid_t g_servers[2] = {-1, -1};

// DuckDB of the server process: table q, the query benchmarks' data.
std::shared_ptr<duckdb::Database> g_duckdb;

// What a request names: "rows=R cols=C" (the generated table, in DuckDB's
// chunk size) or SQL over table q.
Result<std::shared_ptr<RecordBatchReader>> Serve(const std::string& request) {
  if (request.rfind("rows=", 0) == 0) {
    int rows = 100, cols = 100;
    std::sscanf(request.c_str(), "rows=%d cols=%d", &rows, &cols);
    auto chunks = Selection(rows, cols);
    return RecordBatchReader::FromBatches(chunks[0]->schema(), chunks);
  }
  QUIVER_ASSIGN_OR_RAISE(auto conn, duckdb::Connection::Open(g_duckdb));
  return conn->QueryArrow(request);
}

void TuneSocket(int fd) {
  int big = 4 << 20, one = 1;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// The baseline: per connection, one request line, then the result as an
// IPC stream of batches coalesced to 64K rows, as the transport sends them.
void ServeTcp(int listener) {
  for (;;) {
    int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) return;
    TuneSocket(fd);
    std::string request;
    char c;
    while (read(fd, &c, 1) == 1 && c != '\n') request += c;
    auto sink = io::FileOutputStream::FromFd(fd, /*owns_fd=*/true).ValueOrDie();
    (void)bench::WriteCoalescedStream(Serve, request, sink.get());
    (void)sink->Close();
  }
}

Status StartServers() {
  for (int tls = 0; tls < 2; ++tls) {
    int port_pipe[2], stop_pipe[2];
    if (pipe(port_pipe) != 0 || pipe(stop_pipe) != 0) return Status::IOError("pipe");
    const pid_t pid = fork();
    if (pid < 0) return Status::IOError("fork");
    if (pid == 0) {
      close(port_pipe[0]);
      close(stop_pipe[1]);
      for (int earlier = 0; earlier < tls; ++earlier) close(g_stop[earlier]);
      (void)Table();  // built before the first scan is timed
      g_duckdb = duckdb::Database::Open().ValueOrDie();
      (void)duckdb::Connection::Open(g_duckdb).ValueOrDie()->Execute(
          "CREATE TABLE q AS SELECT i AS id, i % 1000 AS k, i * 0.5 AS v, "
          "'row-' || (i % 977)::VARCHAR AS s FROM range(" +
          std::to_string(Table()->num_rows()) + ") t(i)");
      transport::ServerOptions o;
      o.listen = "127.0.0.1:0";
      o.pool_size = uint64_t{512} << 20;
      o.ucx_transports = tls == 1 ? "tcp" : "";
      auto server = transport::Server::Start(
          o, [](const std::string& sql, const std::string&) { return Serve(sql); });
      uint16_t ports[3] = {server.ok() ? (*server)->port() : uint16_t{0}, 0, 0};
      std::unique_ptr<bench::GrpcBaselineServer> grpc;
      if (tls == 0) {
        int listener = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof(addr);
        if (bind(listener, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
            listen(listener, 4) == 0 &&
            getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
          ports[1] = ntohs(addr.sin_port);
          std::thread(ServeTcp, listener).detach();
        }
        auto g = bench::GrpcBaselineServer::Start(Serve);
        if (g.ok()) {
          grpc = std::move(*g);
          ports[2] = grpc->port();
        }
      }
      if (write(port_pipe[1], ports, sizeof(ports)) != sizeof(ports)) _exit(1);
      char c;
      while (read(stop_pipe[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    close(port_pipe[1]);
    close(stop_pipe[0]);
    g_stop[tls] = stop_pipe[1];
    g_servers[tls] = pid;
    uint16_t ports[3] = {0, 0, 0};
    if (read(port_pipe[0], ports, sizeof(ports)) != sizeof(ports) || ports[0] == 0 ||
        (tls == 0 && (ports[1] == 0 || ports[2] == 0))) {
      return Status::IOError("the transport server did not start");
    }
    g_ports[tls] = ports[0];
    if (tls == 0) {
      g_tcp_port = ports[1];
      g_grpc_port = ports[2];
    }
    close(port_pipe[0]);
  }
  return Status::OK();
}

void StopServers() {
  for (int tls = 0; tls < 2; ++tls) {
    if (g_stop[tls] >= 0) close(g_stop[tls]);
    if (g_servers[tls] > 0) waitpid(g_servers[tls], nullptr, 0);
  }
}

// CPU time (user + system) of this process, or of `pid` from /proc, in µs.
double CpuUs(pid_t pid = 0) {
  if (pid == 0) {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
  }
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return 0;
  char line[1024] = {};
  const size_t n = std::fread(line, 1, sizeof(line) - 1, f);
  std::fclose(f);
  line[n] = 0;
  // Fields after the command's closing parenthesis: state is the 3rd, utime
  // and stime the 14th and 15th.
  const char* p = std::strrchr(line, ')');
  unsigned long utime = 0, stime = 0;
  if (p == nullptr ||
      std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
                  &stime) != 2) {
    return 0;
  }
  return (utime + stime) * 1e6 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Client and server CPU per batch over a benchmark's iterations.
class CpuPerBatch {
 public:
  explicit CpuPerBatch(pid_t server) : server_(server) {
    client0_ = CpuUs();
    server0_ = CpuUs(server_);
  }
  void Report(benchmark::State& state, int64_t batches) const {
    const double client = CpuUs() - client0_, server = CpuUs(server_) - server0_;
    const double n = batches > 0 ? static_cast<double>(batches) : 1;
    state.counters["batches"] = static_cast<double>(batches) / state.iterations();
    state.counters["client_cpu_us"] = client / n;
    state.counters["server_cpu_us"] = server / n;
    state.counters["cpu_us_per_batch"] = (client + server) / n;
  }

 private:
  pid_t server_;
  double client0_ = 0, server0_ = 0;
};

// Scans `sql` to its end `state` times; false (with the error set) on
// failure. Counts batches.
bool ScanLoop(benchmark::State& state, transport::Client* client, const std::string& sql,
              const transport::ScanOptions& so, int64_t want_rows, int64_t* batches) {
  for (auto _ : state) {
    auto scan = client->InitScan(sql, so);
    if (!scan.ok()) return state.SkipWithError(scan.status().ToString().c_str()), false;
    auto reader = client->Iterate(*scan);
    if (!reader.ok())
      return state.SkipWithError(reader.status().ToString().c_str()), false;
    int64_t got = 0;
    for (;;) {
      auto b = (*reader)->Next();
      if (!b.ok()) return state.SkipWithError(b.status().ToString().c_str()), false;
      if (*b == nullptr) break;
      got += (*b)->num_rows();
      ++*batches;
    }
    if (got != want_rows) return state.SkipWithError("rows lost"), false;
    Status st = client->Finalize(*scan);
    if (!st.ok()) return state.SkipWithError(st.ToString().c_str()), false;
  }
  return true;
}

void BM_Scan(benchmark::State& state) {
  const int bodies = static_cast<int>(state.range(0));
  const int tls = static_cast<int>(state.range(1));
  const int rows = static_cast<int>(state.range(2)),
            cols = static_cast<int>(state.range(3));
  transport::ClientOptions o;
  o.bodies = bodies == 0   ? transport::BodyMode::kPacked
             : bodies == 1 ? transport::BodyMode::kAddresses
                           : transport::BodyMode::kMeasure;
  o.ucx_transports = tls == 1 ? "tcp" : "";
  auto client =
      transport::Client::Connect("127.0.0.1:" + std::to_string(g_ports[tls]), o);
  if (!client.ok()) return state.SkipWithError(client.status().ToString().c_str());
  const std::string sql =
      "rows=" + std::to_string(rows) + " cols=" + std::to_string(cols);
  const int64_t bytes = BytesOf(Selection(rows, cols));
  int64_t batches = 0;
  transport::ScanOptions so;
  if (const char* w = std::getenv("QUIVER_BENCH_WINDOW"))
    so.window_batches = std::atoi(w);
  CpuPerBatch cpu(g_servers[tls]);
  if (!ScanLoop(state, client->get(), sql, so, Table()->num_rows() * rows / 100,
                &batches)) {
    return;
  }
  cpu.Report(state, batches);
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["addresses_from_KiB"] = (*client)->addresses_from() == UINT64_MAX
                                             ? -1
                                             : (*client)->addresses_from() / 1024.0;
}

// Serialising RPC done well: the server process writes an IPC stream to a
// TCP loopback socket with 4 MiB buffers, this process reads it back.
int64_t FetchOverTcp(benchmark::State& state, const std::string& request,
                     int64_t* batches = nullptr) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  TuneSocket(fd);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(g_tcp_port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    state.SkipWithError("cannot connect to the baseline server");
    return -1;
  }
  const std::string line = request + "\n";
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    close(fd);
    state.SkipWithError("cannot send the request");
    return -1;
  }
  auto source = io::FileInputStream::FromFd(fd, /*owns_fd=*/true).ValueOrDie();
  auto reader = ipc::RecordBatchStreamReader::Open(source.get());
  if (!reader.ok()) {
    state.SkipWithError(reader.status().ToString().c_str());
    return -1;
  }
  int64_t rows = 0;
  while (auto b = (*reader)->Next().ValueOrDie()) {
    rows += b->num_rows();
    if (batches != nullptr) ++*batches;
  }
  return rows;
}

void BM_SerializedTcp(benchmark::State& state) {
  const int rows = static_cast<int>(state.range(0)),
            cols = static_cast<int>(state.range(1));
  const int64_t bytes = BytesOf(Selection(rows, cols));
  const std::string request =
      "rows=" + std::to_string(rows) + " cols=" + std::to_string(cols);
  int64_t batches = 0;
  CpuPerBatch cpu(g_servers[0]);  // the baseline's server shares that process
  for (auto _ : state) {
    if (FetchOverTcp(state, request, &batches) != Table()->num_rows() * rows / 100) {
      return state.SkipWithError("rows lost");
    }
  }
  cpu.Report(state, batches);
  state.SetBytesProcessed(state.iterations() * bytes);
}

// The same stream as BM_SerializedTcp through gRPC server-streaming (4 MiB
// messages over one kept channel): the serialising RPC Thallus measured
// against.
bench::GrpcBaselineClient* GrpcClient(benchmark::State& state) {
  static auto client = bench::GrpcBaselineClient::Connect(g_grpc_port);
  if (!client.ok()) {
    state.SkipWithError(client.status().ToString().c_str());
    return nullptr;
  }
  return client->get();
}

void BM_SerializedGrpc(benchmark::State& state) {
  const int rows = static_cast<int>(state.range(0)),
            cols = static_cast<int>(state.range(1));
  const std::string request =
      "rows=" + std::to_string(rows) + " cols=" + std::to_string(cols);
  auto* client = GrpcClient(state);
  if (client == nullptr) return;
  int64_t batches = 0;
  CpuPerBatch cpu(g_servers[0]);
  for (auto _ : state) {
    auto got = client->Fetch(request, &batches);
    if (!got.ok()) return state.SkipWithError(got.status().ToString().c_str());
    if (*got != Table()->num_rows() * rows / 100) return state.SkipWithError("rows lost");
  }
  cpu.Report(state, batches);
  state.SetBytesProcessed(state.iterations() * BytesOf(Selection(rows, cols)));
}

// Batch size: every row and column in batches of K*1024 rows.
void BM_ScanBatch(benchmark::State& state) {
  const int tls = static_cast<int>(state.range(0));
  transport::ClientOptions o;
  o.ucx_transports = tls == 1 ? "tcp" : "";
  auto client =
      transport::Client::Connect("127.0.0.1:" + std::to_string(g_ports[tls]), o);
  if (!client.ok()) return state.SkipWithError(client.status().ToString().c_str());
  transport::ScanOptions so;
  so.min_rows = static_cast<uint64_t>(state.range(1)) * 1024;
  int64_t batches = 0;
  CpuPerBatch cpu(g_servers[tls]);
  if (!ScanLoop(state, client->get(), "rows=100 cols=100", so, Table()->num_rows(),
                &batches)) {
    return;
  }
  cpu.Report(state, batches);
  state.SetBytesProcessed(state.iterations() * BytesOf(Selection(100, 100)));
}

void BM_SerializedTcpBatch(benchmark::State& state) {
  const std::string request =
      "rows=100 cols=100 batch=" + std::to_string(state.range(0) * 1024);
  int64_t batches = 0;
  CpuPerBatch cpu(g_servers[0]);
  for (auto _ : state) {
    if (FetchOverTcp(state, request, &batches) != Table()->num_rows()) {
      return state.SkipWithError("rows lost");
    }
  }
  cpu.Report(state, batches);
  state.SetBytesProcessed(state.iterations() * BytesOf(Selection(100, 100)));
}

// Queries end to end, DuckDB included: rows of table q with id % 100 below
// the selectivity, through the transport or the serialising baseline.
int64_t QueryRows(int64_t pct) {
  const int64_t n = Table()->num_rows();
  return n / 100 * pct + std::min<int64_t>(n % 100, pct);
}

std::string QuerySql(int64_t pct) {
  return "SELECT * FROM q WHERE id % 100 < " + std::to_string(pct);
}

void BM_QueryUcx(benchmark::State& state) {
  transport::ClientOptions o;
  auto client = transport::Client::Connect("127.0.0.1:" + std::to_string(g_ports[0]), o);
  if (!client.ok()) return state.SkipWithError(client.status().ToString().c_str());
  const int64_t want = QueryRows(state.range(0));
  for (auto _ : state) {
    auto scan = (*client)->InitScan(QuerySql(state.range(0)));
    if (!scan.ok()) return state.SkipWithError(scan.status().ToString().c_str());
    auto reader = (*client)->Iterate(*scan);
    if (!reader.ok()) return state.SkipWithError(reader.status().ToString().c_str());
    int64_t got = 0;
    while (auto b = (*reader)->Next().ValueOrDie()) got += b->num_rows();
    if (got != want) return state.SkipWithError("rows lost");
    (void)(*client)->Finalize(*scan);
  }
  state.counters["rows"] = static_cast<double>(want);
}

void BM_QueryTcp(benchmark::State& state) {
  const int64_t want = QueryRows(state.range(0));
  for (auto _ : state) {
    if (FetchOverTcp(state, QuerySql(state.range(0))) != want) {
      return state.SkipWithError("rows lost");
    }
  }
  state.counters["rows"] = static_cast<double>(want);
}

void BM_QueryGrpc(benchmark::State& state) {
  const int64_t want = QueryRows(state.range(0));
  auto* client = GrpcClient(state);
  if (client == nullptr) return;
  for (auto _ : state) {
    auto got = client->Fetch(QuerySql(state.range(0)));
    if (!got.ok()) return state.SkipWithError(got.status().ToString().c_str());
    if (*got != want) return state.SkipWithError("rows lost");
  }
  state.counters["rows"] = static_cast<double>(want);
}

// Tagged sends of the same bytes in 64K-row bodies between two workers,
// each progressed by its own thread, into four receive buffers in turn (the
// scan's window).
void BM_RawUcx(benchmark::State& state) {
  const int tls = static_cast<int>(state.range(0));
  const auto chunks = Selection(100, 100);
  const int64_t bytes = BytesOf(chunks);
  const int64_t body =
      bytes / std::max<int64_t>(1, static_cast<int64_t>(chunks.size()) / 32);
  const int64_t count = (bytes + body - 1) / body;
  auto ctx = transport::UcxContext::Make(tls == 1 ? "tcp" : "").ValueOrDie();
  auto a = transport::UcxWorker::Make(ctx).ValueOrDie();
  auto b = transport::UcxWorker::Make(ctx).ValueOrDie();
  ucp_ep_h ep = a->ConnectTo(b->Address().ValueOrDie()).ValueOrDie();
  // The whole selection's bytes, each body sent from its own place (as the
  // scan reads every byte of the table once), not one body sent again and
  // again from the cache.
  std::vector<uint8_t> src(static_cast<size_t>(count * body), 7);
  std::vector<std::vector<uint8_t>> dst(4,
                                        std::vector<uint8_t>(static_cast<size_t>(body)));
  for (auto _ : state) {
    std::atomic<bool> done{false};
    std::thread receiver([&] {
      std::deque<transport::UcxRequest> recvs;
      int64_t posted = 0, finished = 0;
      while (finished < count) {
        while (posted < count && recvs.size() < 4) {
          recvs.push_back(transport::TagRecv(b->get(), dst[posted % 4].data(),
                                             static_cast<size_t>(body), 1, ~uint64_t{0}));
          ++posted;
        }
        b->Progress();
        while (!recvs.empty() && recvs.front().Check() != UCS_INPROGRESS) {
          recvs.pop_front();
          ++finished;
        }
      }
      done = true;
    });
    std::deque<transport::UcxRequest> sends;
    for (int64_t i = 0; i < count; ++i) {
      ucp_request_param_t p{};
      sends.emplace_back(a->get(), ucp_tag_send_nbx(ep, src.data() + i * body,
                                                    static_cast<size_t>(body), 1, &p));
      while (sends.size() >= 4) {
        a->Progress();
        while (!sends.empty() && sends.front().Check() != UCS_INPROGRESS)
          sends.pop_front();
      }
    }
    while (!sends.empty() || !done) {
      a->Progress();
      while (!sends.empty() && sends.front().Check() != UCS_INPROGRESS) sends.pop_front();
    }
    receiver.join();
  }
  transport::CloseByForce(a.get(), {ep});
  state.SetBytesProcessed(state.iterations() * count * body);
}

void BM_Memcpy(benchmark::State& state) {
  const auto chunks = Selection(100, 100);
  const int64_t bytes = BytesOf(chunks);
  std::vector<uint8_t> src(static_cast<size_t>(bytes), 1),
      dst(static_cast<size_t>(bytes));
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

void ScanArgs(benchmark::internal::Benchmark* b) {
  for (int bodies : {0, 1, 2}) b->Args({bodies, 0, 100, 100});
  b->Args({0, 1, 100, 100});
  b->Args({2, 1, 100, 100});
  for (int pct : {1, 10, 50}) {
    b->Args({2, 0, pct, 100});
    b->Args({2, 0, 100, pct});
  }
}
void TcpArgs(benchmark::internal::Benchmark* b) {
  b->Args({100, 100});
  for (int pct : {1, 10, 50}) {
    b->Args({pct, 100});
    b->Args({100, pct});
  }
}

BENCHMARK(BM_Scan)->Apply(ScanArgs)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SerializedTcp)->Apply(TcpArgs)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SerializedGrpc)
    ->Apply(TcpArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ScanBatch)
    ->ArgsProduct({{0, 1}, {16, 64, 256, 1024}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SerializedTcpBatch)
    ->Arg(16)
    ->Arg(64)
    ->Arg(256)
    ->Arg(1024)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_QueryUcx)
    ->Arg(1)
    ->Arg(10)
    ->Arg(100)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_QueryTcp)
    ->Arg(1)
    ->Arg(10)
    ->Arg(100)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_QueryGrpc)
    ->Arg(1)
    ->Arg(10)
    ->Arg(100)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RawUcx)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Memcpy)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace quiver

int main(int argc, char** argv) {
  quiver::Status st = quiver::StartServers();
  if (!st.ok()) {
    std::fprintf(stderr, "transport_bench: %s\n", st.ToString().c_str());
    return 1;
  }
  const int rc = quiver::bench::RunWithRatios(
      argc, argv,
      {{"BM_Scan/2/0", "BM_SerializedGrpc"},
       {"BM_Scan/2/1/100/100", "BM_SerializedGrpc/100/100"},
       {"BM_Scan/2/0", "BM_SerializedTcp"},
       {"BM_Scan/2/1/100/100", "BM_SerializedTcp/100/100"},
       {"BM_SerializedTcp/100/100", "BM_SerializedGrpc/100/100"},
       {"BM_Scan/0/0/100/100", "BM_RawUcx/0"},
       {"BM_Scan/0/1/100/100", "BM_RawUcx/1"},
       {"BM_RawUcx/0", "BM_Memcpy"},
       {"BM_QueryUcx", "BM_QueryGrpc", "time"},
       {"BM_QueryUcx", "BM_QueryTcp", "time"}});
  quiver::StopServers();
  return rc;
}
