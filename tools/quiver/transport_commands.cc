// quiver serve / quiver scan: Thallus's scan service over the transport
// (docs/transport.md). `serve` loads tables into an in-memory DuckDB and
// answers scans until interrupted; `scan` runs one query there and prints
// or saves the batches it receives. Both prove the token to each other in
// a TLS 1.3 handshake keyed by it: the token never crosses the network.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "cli_parse.h"
#include "commands.h"
#include "duckdb/connection.h"
#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc/writer.h"
#include "quiver/columnar/pretty_print.h"
#include "quiver/transport/client.h"
#include "quiver/transport/server.h"

namespace quiver::cli {

namespace {

Result<std::string> ReadToken(const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot read the token file ", path);
  std::stringstream s;
  s << in.rdbuf();
  std::string token = s.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r'))
    token.pop_back();
  if (token.empty()) return Status::Invalid("the token file ", path, " is empty");
  return token;
}

// 'text' as a SQL string literal.
std::string Literal(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

// The generated table of `quiver serve --generate NAME=ROWS`: columns of
// the common kinds, values a function of the row number, so a test can
// build the same table in its own DuckDB.
std::string GenerateSql(const std::string& name, uint64_t rows) {
  return "CREATE TABLE " + duckdb::QuoteIdentifier(name) +
         " AS SELECT i AS id, (i % 1000)::INTEGER AS k, (i * 0.5)::DOUBLE AS v, "
         "'row-' || (i % 977)::VARCHAR AS s, (i % 7 = 0) AS flag, "
         "DATE '2020-01-01' + (i % 3650)::INTEGER AS d, "
         "CASE WHEN i % 11 = 0 THEN NULL ELSE i % 5 END AS maybe "
         "FROM range(" +
         std::to_string(rows) + ") t(i)";
}

int Serve(const Args& in) {
  CommandLine cl("serve", "[OPTIONS]",
                 "Load tables into DuckDB and answer scans over UCX (Arrow's "
                 "Dissociated IPC protocol) until interrupted.");
  std::string listen = "0.0.0.0:7878", token_file;
  bool no_token = false;
  uint64_t pool_mib = 256;
  std::vector<std::string> table_flags, generate_flags;
  cl.Text("--listen", &listen, "the address to listen on")->type_name("HOST:PORT");
  cl.Text("--token-file", &token_file, "the token clients must give")->type_name("F");
  cl.Count("--pool-mib", &pool_mib, 1 << 20, "MiB of registered memory for replies");
  cl.app()
      .add_option("--table", table_flags, "load FILE as table NAME (repeatable)")
      ->type_name("NAME=FILE");
  cl.app()
      .add_option("--generate", generate_flags, "generate ROWS rows as NAME (repeatable)")
      ->type_name("NAME=ROWS");
  cl.Flag("--insecure-no-token", &no_token, "listen beyond loopback without a token");
  if (auto code = cl.Parse(in)) return *code;
  auto token = ReadToken(token_file);
  if (!token.ok()) return Fail("--token-file", token.status());
  std::vector<std::pair<std::string, std::string>> tables, generated;
  for (auto [texts, list] :
       {std::pair{&table_flags, &tables}, std::pair{&generate_flags, &generated}}) {
    for (const std::string& text : *texts) {
      const size_t eq = text.find('=');
      if (eq == 0 || eq == std::string::npos || eq + 1 == text.size()) {
        std::fprintf(stderr, "quiver: serve: '%s' is not NAME=VALUE\n",
                     Escape(text).c_str());
        return kExitBadInput;
      }
      list->emplace_back(text.substr(0, eq), text.substr(eq + 1));
    }
  }
  const std::string host = listen.substr(0, listen.rfind(':'));
  const bool loopback = host == "127.0.0.1" || host == "localhost" || host == "[::1]";
  if (token->empty() && !loopback && !no_token) {
    std::fprintf(
        stderr,
        "quiver: serve: listening on %s without a token would let anyone who "
        "reaches it run SQL here: give --token-file F (or --insecure-no-token)\n",
        Escape(listen).c_str());
    return kExitBadInput;
  }
  if (!token->empty() && token->size() < 16) {
    // The key is derived from the token: whoever records a handshake may
    // try guesses offline, as fast as they can hash.
    std::fprintf(
        stderr,
        "quiver: serve: warning: a token of %zu bytes can be guessed offline from "
        "one recorded connection; use at least 16 random bytes, e.g. "
        "`head -c 32 /dev/urandom | base64 > token`\n",
        token->size());
  }
  auto db = duckdb::Database::Open();
  if (!db.ok()) return Fail("serve: DuckDB", db.status(), kExitFailed);
  auto conn = duckdb::Connection::Open(*db);
  if (!conn.ok()) return Fail("serve: DuckDB", conn.status(), kExitFailed);
  std::set<std::string> names;
  for (const auto& [name, file] : tables) {
    Status st = (*conn)->Execute("CREATE TABLE " + duckdb::QuoteIdentifier(name) +
                                 " AS SELECT * FROM " + Literal(file));
    if (!st.ok()) return Fail("serve: loading " + file, st);
    names.insert(name);
  }
  for (const auto& [name, rows_text] : generated) {
    auto rows = ParseCount("--rows", rows_text, uint64_t{1} << 40);
    if (!rows.ok()) return Fail("serve: --generate " + name, rows.status());
    Status st = (*conn)->Execute(GenerateSql(name, *rows));
    if (!st.ok()) return Fail("serve: generating " + name, st, kExitFailed);
    names.insert(name);
  }
  // Clients run any SQL: from here on it reaches only the loaded tables,
  // never the server's files, settings or extensions.
  if (Status st = duckdb::LockDown(conn->get(), /*allow_files=*/false); !st.ok()) {
    return Fail("serve: DuckDB", st, kExitFailed);
  }
  std::shared_ptr<duckdb::Database> database = *db;
  transport::QueryRunner runner =
      [database, names](
          const std::string& sql,
          const std::string& dataset) -> Result<std::shared_ptr<RecordBatchReader>> {
    if (!dataset.empty() && names.count(dataset) == 0) {
      return Status::NotFound("no dataset '", dataset, "' on this server");
    }
    QUIVER_ASSIGN_OR_RAISE(auto c, duckdb::Connection::Open(database));
    // Streamed: a result larger than the server's memory is served batch
    // by batch, and a scan that ends early interrupts its query.
    return c->StreamArrow(sql);
  };
  transport::ServerOptions options;
  options.listen = listen;
  options.token = *token;
  options.pool_size = pool_mib << 20;
  CatchInterrupts();
  auto server = transport::Server::Start(options, runner);
  if (!server.ok()) {  // a bad --listen is bad input; a port in use is run time
    return Fail("serve", server.status(),
                server.status().IsInvalid() ? kExitBadInput : kExitFailed);
  }
  std::printf("quiver serve: listening on %s:%u, %zu table(s)\n", host.c_str(),
              static_cast<unsigned>((*server)->port()), names.size());
  std::fflush(stdout);
  while (!Interrupted()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::printf("quiver serve: stopping\n");
  return kExitOk;
}

int Scan(const Args& in) {
  CommandLine cl("scan", "HOST:PORT SQL [OPTIONS]",
                 "Run SQL on a host that runs `quiver serve`, print the rows (or save an "
                 "Arrow IPC stream) and what moved how fast.");
  std::string token_file, out_path, bodies = "measure";
  bool progress = false;
  uint64_t limit = 20, min_rows = 65536, window = 4;
  cl.Text("--token-file", &token_file, "the server's token")->type_name("F");
  cl.Text("--out", &out_path, "save the rows as an Arrow IPC stream")->type_name("FILE");
  cl.Count("--limit", &limit, uint64_t{1} << 62, "rows to print at most");
  cl.Count("--min-rows", &min_rows, uint64_t{1} << 40, "rows per batch at least");
  cl.Count("--window", &window, 1 << 20, "batches in flight");
  cl.Text("--bodies", &bodies, "measure, packed or addresses")->type_name("B");
  cl.Flag("--progress", &progress, "print progress while scanning");
  Args args;
  cl.Positionals("HOST:PORT SQL", &args, "the server, then one SQL query (quoted)");
  if (auto code = cl.Parse(in)) return *code;
  if (args.size() != 2) return cl.Usage("HOST:PORT and one SQL query");
  if (bodies != "measure" && bodies != "packed" && bodies != "addresses") {
    return cl.Usage("--bodies '" + bodies + "' is not measure, packed or addresses");
  }
  auto token = ReadToken(token_file);
  if (!token.ok()) return Fail("--token-file", token.status());
  transport::ClientOptions options;
  options.token = *token;
  options.bodies = bodies == "packed"      ? transport::BodyMode::kPacked
                   : bodies == "addresses" ? transport::BodyMode::kAddresses
                                           : transport::BodyMode::kMeasure;
  const auto start = std::chrono::steady_clock::now();
  auto client = transport::Client::Connect(args[0], options);
  if (!client.ok()) {  // HOST:PORT malformed: 2; the server unreachable or refusing: 1
    return Fail(args[0], client.status(),
                client.status().IsInvalid() ? kExitBadInput : kExitFailed);
  }
  transport::ScanOptions scan_options;
  scan_options.min_rows = min_rows;
  scan_options.window_batches = static_cast<uint32_t>(std::max<uint64_t>(window, 1));
  auto scan = (*client)->InitScan(args[1], scan_options);
  if (!scan.ok()) return Fail("scan", scan.status(), kExitFailed);
  auto reader = (*client)->Iterate(*scan);
  if (!reader.ok()) return Fail("scan", reader.status(), kExitFailed);
  std::unique_ptr<io::FileOutputStream> sink;
  std::unique_ptr<ipc::RecordBatchWriter> writer;
  if (!out_path.empty()) {
    auto s = io::FileOutputStream::Open(out_path);
    if (!s.ok()) return Fail(out_path, s.status());
    sink = std::move(*s);
    auto w = ipc::MakeWriter(ipc::IpcFormat::kStream, sink.get(), (*reader)->schema(),
                             ipc::IpcWriteOptions::Defaults());
    if (!w.ok()) return Fail(out_path, w.status());
    writer = std::move(*w);
  }
  int64_t rows = 0, batches = 0, bytes = 0;
  uint64_t printed = 0;
  for (;;) {
    auto batch = (*reader)->Next();
    if (!batch.ok()) return Fail("scan", batch.status(), kExitFailed);
    if (*batch == nullptr) break;
    const RecordBatchPtr& b = *batch;
    rows += b->num_rows();
    ++batches;
    for (const auto& column : b->column_data()) {
      for (const auto& buffer : column->buffers) bytes += buffer ? buffer->size() : 0;
    }
    if (progress) {
      std::fprintf(stderr, "batch %lld: %lld rows\n", static_cast<long long>(batches),
                   static_cast<long long>(b->num_rows()));
    }
    if (writer) {
      Status st = writer->WriteRecordBatch(*b);
      if (!st.ok()) return Fail(out_path, st, kExitFailed);
      continue;
    }
    for (int64_t r = 0; r < b->num_rows() && printed < limit; ++r, ++printed) {
      std::ostringstream line;
      for (int c = 0; c < b->num_columns(); ++c) {
        line << (c == 0 ? "" : " | ") << b->column_name(c) << "="
             << FormatValue(*b->column(c), r);
      }
      std::puts(Escape(line.str()).c_str());
    }
  }
  if (writer) {
    Status st = writer->Close();
    if (st.ok()) st = sink->Close();
    if (!st.ok()) return Fail(out_path, st, kExitFailed);
  }
  Status st = (*client)->Finalize(*scan);
  if (!st.ok()) return Fail("scan", st, kExitFailed);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const uint64_t from = (*client)->addresses_from();
  std::fprintf(
      stderr, "quiver scan: %lld rows in %lld batches, %.1f MB in %.3f s; bodies: %s\n",
      static_cast<long long>(rows), static_cast<long long>(batches), bytes / 1e6, seconds,
      !(*client)->over_ucx() ? "packed (on the TLS stream)"
      : from == UINT64_MAX
          ? "packed (tagged sends)"
          : ("addresses (one-sided reads) from " + std::to_string(from >> 10) + " KiB")
                .c_str());
  return kExitOk;
}

}  // namespace

int ServeCommand(const Args& args) { return Serve(args); }
int ScanCommand(const Args& args) { return Scan(args); }

}  // namespace quiver::cli
