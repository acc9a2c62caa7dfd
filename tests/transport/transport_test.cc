// Server and client in one process, over UCX's shared memory and on the TLS
// stream alone: every Arrow type across both body types, coalescing,
// windows, errors of the query, keys and tickets.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "ipc/ipc_test_util.h"
#include "quiver/columnar/concatenate.h"
#include "quiver/transport/client.h"
#include "quiver/transport/server.h"
#include "transport/body_pool.h"

namespace quiver::transport {
namespace {

using ::quiver::testing::Eventually;

using ipc::test::RandomBatch;

// Types whose random dictionaries stay one dictionary per stream: the
// runner below serves slices of one batch.
std::vector<TypePtr> Types() { return ipc::test::AllTypes(); }

// A query that never produces a batch until it is cancelled, as a long
// aggregate would: Next waits for Cancel, then fails as Cancelled.
class EndlessReader : public RecordBatchReader {
 public:
  EndlessReader(SchemaPtr schema, std::atomic<int>* cancels)
      : schema_(std::move(schema)), cancels_(cancels) {}
  SchemaPtr schema() const override { return schema_; }
  Result<RecordBatchPtr> Next() override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return cancelled_; });
    return Status::Cancelled("the query was interrupted");
  }
  void Cancel() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    ++*cancels_;
    cv_.notify_all();
  }

 private:
  SchemaPtr schema_;
  std::atomic<int>* cancels_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
};

struct Fixture {
  std::vector<RecordBatchPtr> chunks;  // what the runner serves, in order
  std::atomic<int> runs{0};
  std::atomic<int> cancels{0};  // of "endless" queries
  std::unique_ptr<Server> server;

  explicit Fixture(int64_t rows = 5000, int64_t chunk = 700, ServerOptions options = {}) {
    auto batch = RandomBatch(Types(), rows, 11).ValueOrDie();
    for (int64_t at = 0; at < rows; at += chunk) {
      chunks.push_back(batch->Slice(at, std::min(chunk, rows - at)));
    }
    options.listen = "127.0.0.1:0";
    options.token = "secret";
    options.pool_size = 64 << 20;
    server =
        Server::Start(
            options,
            [this](const std::string& sql,
                   const std::string&) -> Result<std::shared_ptr<RecordBatchReader>> {
              ++runs;
              if (sql == "fail") return Status::Invalid("no such table: fail");
              if (sql == "empty") {
                return RecordBatchReader::FromBatches(chunks[0]->schema(), {});
              }
              if (sql == "endless") {
                return std::make_shared<EndlessReader>(chunks[0]->schema(), &cancels);
              }
              return RecordBatchReader::FromBatches(chunks[0]->schema(), chunks);
            })
            .ValueOrDie();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(server->port()); }
  RecordBatchPtr Whole() const { return ConcatenateBatches(chunks).ValueOrDie(); }
};

ClientOptions WithMode(BodyMode mode) {
  ClientOptions o;
  o.token = "secret";
  o.bodies = mode;
  o.timeout_ms = 20000;
  return o;
}

// A client whose data comes on the TLS stream: no UCX transport it may use.
ClientOptions OnTheStream() {
  ClientOptions o = WithMode(BodyMode::kMeasure);
  o.ucx_transports = "tcp";
  return o;
}

// The server's counts once it has let go of what ended scans held: a scan's
// thread is joined, and its bodies freed, after its last answer went out.
Result<ServerStats> SettledStats(Client* client) {
  ServerStats stats;
  for (int i = 0; i < 500; ++i) {
    QUIVER_ASSIGN_OR_RAISE(stats, client->Stats());
    if (stats.scans == 0 && stats.pool_bytes_in_use == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return stats;
}

// Reads a scan to its end and checks it against `expected`: the same rows,
// in batches of at least `min_rows` but the last.
void ExpectScan(Client* client, const RecordBatchPtr& expected,
                const ScanOptions& options) {
  ASSERT_OK_AND_ASSIGN(uint64_t scan, client->InitScan("all", options));
  ASSERT_OK_AND_ASSIGN(auto reader, client->Iterate(scan));
  ASSERT_TRUE(reader->schema()->Equals(*expected->schema()));
  ASSERT_OK_AND_ASSIGN(auto batches, reader->ReadAll());
  ASSERT_FALSE(batches.empty());
  for (size_t i = 0; i + 1 < batches.size(); ++i) {
    EXPECT_GE(batches[i]->num_rows(), static_cast<int64_t>(options.min_rows));
  }
  ASSERT_OK_AND_ASSIGN(auto got, ConcatenateBatches(batches));
  ASSERT_OK(got->ValidateFull());
  EXPECT_TRUE(got->Equals(*expected));
  ASSERT_OK(client->Finalize(scan));
}

TEST(Transport, EveryTypeArrivesEqualAsPackedBodiesAndAsAddresses) {
  Fixture f;
  const auto expected = f.Whole();
  for (BodyMode mode : {BodyMode::kPacked, BodyMode::kAddresses, BodyMode::kMeasure}) {
    SCOPED_TRACE(static_cast<int>(mode));
    ASSERT_OK_AND_ASSIGN(auto client, Client::Connect(f.address(), WithMode(mode)));
    EXPECT_TRUE(client->over_ucx());  // one host: shared memory
    if (mode == BodyMode::kPacked) {
      EXPECT_EQ(client->addresses_from(), UINT64_MAX);
    } else if (mode == BodyMode::kAddresses) {
      EXPECT_EQ(client->addresses_from(), 0u);
    }
    ScanOptions options;
    options.min_rows = 1500;  // chunks of 700 coalesce into batches of 2100
    ExpectScan(client.get(), expected, options);
    options.min_rows = 1;  // one batch per chunk
    options.window_batches = 1;
    ExpectScan(client.get(), expected, options);
    ASSERT_OK_AND_ASSIGN(auto stats, SettledStats(client.get()));
    EXPECT_EQ(stats.pool_bytes_in_use, 0u);
    EXPECT_EQ(stats.scans, 0u);
  }
}

// Where UCX cannot reach the server (another host; here: no transport the
// client may use), metadata and bodies come as frames of the TLS stream.
TEST(Transport, EveryTypeArrivesEqualOnTheTlsStream) {
  Fixture f;
  const auto expected = f.Whole();
  ASSERT_OK_AND_ASSIGN(auto client, Client::Connect(f.address(), OnTheStream()));
  EXPECT_FALSE(client->over_ucx());
  EXPECT_EQ(client->addresses_from(), UINT64_MAX);
  ScanOptions options;
  options.min_rows = 1500;
  ExpectScan(client.get(), expected, options);
  options.min_rows = 1;
  options.window_batches = 1;
  ExpectScan(client.get(), expected, options);
  // Finalized in the middle: the bodies on their way are drained, and the
  // next scan starts clean.
  ASSERT_OK_AND_ASSIGN(uint64_t scan, client->InitScan("all", options));
  {
    ASSERT_OK_AND_ASSIGN(auto reader, client->Iterate(scan));
    ASSERT_OK_AND_ASSIGN(auto first, reader->Next());
    ASSERT_NE(first, nullptr);
  }
  ASSERT_OK(client->Finalize(scan));
  ExpectScan(client.get(), expected, options);
  ASSERT_OK_AND_ASSIGN(auto stats, SettledStats(client.get()));
  EXPECT_EQ(stats.pool_bytes_in_use, 0u);
  EXPECT_EQ(stats.scans, 0u);
  // A server without UCX at all serves everyone on the stream.
  ServerOptions no_ucx;
  no_ucx.ucx_transports = "tcp";
  Fixture g(5000, 700, no_ucx);
  ASSERT_OK_AND_ASSIGN(auto other,
                       Client::Connect(g.address(), WithMode(BodyMode::kAddresses)));
  EXPECT_FALSE(other->over_ucx());
  ExpectScan(other.get(), g.Whole(), ScanOptions{});
}

TEST(Transport, QueryErrorsComeBackFromInitScanAndEmptyResultsEndAtOnce) {
  Fixture f;
  ASSERT_OK_AND_ASSIGN(auto client,
                       Client::Connect(f.address(), WithMode(BodyMode::kPacked)));
  auto bad = client->InitScan("fail");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no such table: fail"), std::string::npos)
      << bad.status().ToString();
  // A failed init leaves no scan behind (its client has no id to finalize):
  // more of them than a connection may hold scans still fail for their own
  // reason, not for want of room.
  for (int i = 0; i < 20; ++i) {
    auto again = client->InitScan("fail");
    ASSERT_FALSE(again.ok());
    EXPECT_NE(again.status().message().find("no such table"), std::string::npos)
        << i << ": " << again.status().ToString();
  }
  ASSERT_OK_AND_ASSIGN(auto stats, SettledStats(client.get()));
  EXPECT_EQ(stats.scans, 0u);
  ASSERT_OK_AND_ASSIGN(uint64_t scan, client->InitScan("empty"));
  ASSERT_OK_AND_ASSIGN(auto reader, client->Iterate(scan));
  EXPECT_TRUE(reader->schema()->Equals(*f.chunks[0]->schema()));
  ASSERT_OK_AND_ASSIGN(auto batch, reader->Next());
  EXPECT_EQ(batch, nullptr);
  ASSERT_OK(client->Finalize(scan));
  // A scan id of another connection, or none at all.
  EXPECT_FALSE(client->Finalize(scan).ok());
  EXPECT_FALSE(client->Finalize(987654).ok());
}

// A client that goes while its query is still running (init_scan has not
// answered) cancels the query: the server does not compute on for no one.
TEST(Transport, AClientThatGoesMidQueryCancelsIt) {
  Fixture f;
  {
    ClientOptions o = WithMode(BodyMode::kPacked);
    o.timeout_ms = 300;
    ASSERT_OK_AND_ASSIGN(auto client, Client::Connect(f.address(), o));
    auto scan = client->InitScan("endless");
    ASSERT_FALSE(scan.ok());
  }
  ASSERT_OK_AND_ASSIGN(auto watcher,
                       Client::Connect(f.address(), WithMode(BodyMode::kPacked)));
  ServerStats stats;
  for (int i = 0; i < 500; ++i) {
    ASSERT_OK_AND_ASSIGN(stats, watcher->Stats());
    if (stats.scans == 0 && stats.connections == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(stats.scans, 0u);
  EXPECT_EQ(stats.connections, 1u);
  EXPECT_EQ(f.cancels.load(), 1);
}

// The token is never sent: a client without it fails the TLS handshake,
// which proves the key on both sides, and runs nothing.
TEST(Transport, WrongTokenIsRefusedByName) {
  Fixture f;
  for (const std::string& token :
       {std::string("guess"), std::string(), std::string("secret\0", 7)}) {
    ClientOptions o = WithMode(BodyMode::kPacked);
    o.token = token;
    auto client = Client::Connect(f.address(), o);
    ASSERT_FALSE(client.ok());
    EXPECT_TRUE(client.status().code() == StatusCode::kUnauthenticated)
        << client.status().ToString();
    EXPECT_NE(client.status().message().find("wrong token"), std::string::npos)
        << client.status().ToString();
  }
  EXPECT_EQ(f.runs.load(), 0);
  EXPECT_EQ(f.server->stats().connections, 0u);
}

// A server of tickets (a daemon's) admits a ticket once, within its time,
// and runs its scans with the ticket's owner; dropping the owner closes
// its connections. Tokens mean nothing to it.
TEST(Transport, TicketsOpenOneConnectionEachForTheirOwner) {
  std::atomic<uint64_t> owner_seen{0};
  ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.auth = ServerOptions::Auth::kTickets;
  so.pool_size = 8 << 20;
  auto batch = RandomBatch({int64()}, 1000, 5).ValueOrDie();
  ASSERT_OK_AND_ASSIGN(
      auto server,
      Server::Start(so, [&](const std::string&, const std::string&, uint64_t owner) {
        owner_seen = owner;
        return RecordBatchReader::FromBatches(batch->schema(), {batch});
      }));
  const std::string address = "127.0.0.1:" + std::to_string(server->port());
  auto with = [](const Ticket& t) {
    ClientOptions o = WithMode(BodyMode::kPacked);
    o.ticket_identity = t.identity;
    o.ticket_secret = t.secret;
    o.timeout_ms = 5000;
    return o;
  };
  const Ticket ticket = server->AddTicket(42);
  EXPECT_EQ(ticket.secret.size(), 32u);
  ASSERT_OK_AND_ASSIGN(auto client, Client::Connect(address, with(ticket)));
  ASSERT_OK_AND_ASSIGN(uint64_t scan, client->InitScan("x"));
  ASSERT_OK_AND_ASSIGN(auto reader, client->Iterate(scan));
  ASSERT_OK_AND_ASSIGN(auto got, reader->ReadAll());
  ASSERT_OK(client->Finalize(scan));
  EXPECT_EQ(owner_seen.load(), 42u);
  // Used: a second connection with it is refused; so are a forged secret,
  // an expired ticket and the token of a token server.
  EXPECT_EQ(Client::Connect(address, with(ticket)).status().code(),
            StatusCode::kUnauthenticated);
  Ticket forged = server->AddTicket(42);
  forged.secret[0] ^= 1;
  EXPECT_EQ(Client::Connect(address, with(forged)).status().code(),
            StatusCode::kUnauthenticated);
  const Ticket expired = server->AddTicket(42, -1);  // already past its time
  EXPECT_EQ(Client::Connect(address, with(expired)).status().code(),
            StatusCode::kUnauthenticated);
  ClientOptions token = WithMode(BodyMode::kPacked);
  token.token = "";
  EXPECT_EQ(Client::Connect(address, token).status().code(),
            StatusCode::kUnauthenticated);
  // The owner's session ends: its connection goes, its unused tickets too.
  const Ticket unused = server->AddTicket(42);
  server->DropOwner(42);
  EXPECT_TRUE(Eventually([&] { return !client->Stats().ok(); }))
      << "the connection outlived its owner's session";
  EXPECT_EQ(Client::Connect(address, with(unused)).status().code(),
            StatusCode::kUnauthenticated);
}

TEST(Transport, FinalizeInTheMiddleGivesEveryBlockBack) {
  Fixture f(20000, 500);
  for (BodyMode mode : {BodyMode::kPacked, BodyMode::kAddresses}) {
    ASSERT_OK_AND_ASSIGN(auto client, Client::Connect(f.address(), WithMode(mode)));
    ScanOptions options;
    options.min_rows = 1000;
    ASSERT_OK_AND_ASSIGN(uint64_t scan, client->InitScan("all", options));
    {
      ASSERT_OK_AND_ASSIGN(auto reader, client->Iterate(scan));
      ASSERT_OK_AND_ASSIGN(auto first, reader->Next());
      ASSERT_NE(first, nullptr);
    }
    ASSERT_OK(client->Finalize(scan));
    ASSERT_OK_AND_ASSIGN(auto stats, SettledStats(client.get()));
    EXPECT_EQ(stats.pool_bytes_in_use, 0u);
    EXPECT_EQ(stats.scans, 0u);
  }
}

// A reader slower than the server: every batch must arrive as it was sent
// (the server reuses a body's memory as soon as the client has read it, so
// two bodies in the client's hands can come from one address), and the
// client must hold no more than its window of bodies it has not consumed.
TEST(Transport, ASlowReaderGetsEveryBatchRightAndHoldsOnlyItsWindow) {
  constexpr int kBatches = 40;
  constexpr int64_t kRows = 4096;
  std::vector<RecordBatchPtr> batches;
  for (int i = 0; i < kBatches; ++i) {
    Int64Builder b;
    ASSERT_OK(b.Reserve(kRows));
    for (int64_t r = 0; r < kRows; ++r) b.UnsafeAppend(i * 1000000 + r);
    ASSERT_OK_AND_ASSIGN(auto col, b.Finish());
    ASSERT_OK_AND_ASSIGN(auto batch, RecordBatch::FromArrays({"v"}, {col}));
    batches.push_back(batch);
  }
  ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.pool_size = 1 << 20;  // a few blocks, reused over and over
  ASSERT_OK_AND_ASSIGN(
      auto server, Server::Start(so, [&](const std::string&, const std::string&) {
        return RecordBatchReader::FromBatches(batches[0]->schema(), batches);
      }));
  const std::string address = "127.0.0.1:" + std::to_string(server->port());
  for (int stream = 0; stream < 3; ++stream) {
    const BodyMode mode = stream == 1 ? BodyMode::kAddresses : BodyMode::kPacked;
    SCOPED_TRACE(stream == 2 ? "stream" : stream == 1 ? "addresses" : "packed");
    SystemMemoryPool pool;
    ClientOptions co = WithMode(mode);
    if (stream == 2) co.ucx_transports = "tcp";
    co.token.clear();
    co.pool = &pool;
    ASSERT_OK_AND_ASSIGN(auto client, Client::Connect(address, co));
    ScanOptions scan_options;
    scan_options.min_rows = kRows;
    scan_options.window_batches = 4;
    ASSERT_OK_AND_ASSIGN(uint64_t scan, client->InitScan("all", scan_options));
    ASSERT_OK_AND_ASSIGN(auto reader, client->Iterate(scan));
    const int64_t body = kRows * 8;
    int got = 0;
    for (;;) {
      ASSERT_OK_AND_ASSIGN(auto b, reader->Next());
      if (b == nullptr) break;
      ASSERT_LT(got, kBatches);
      EXPECT_TRUE(b->Equals(*batches[got])) << "batch " << got << " arrived as\n"
                                            << b->ToString();
      ++got;
      b.reset();
      // The bodies the client holds: the window's, and the one just read.
      EXPECT_LE(pool.bytes_allocated(), (scan_options.window_batches + 1) * (body + 4096))
          << "after batch " << got;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(got, kBatches);
    ASSERT_OK(client->Finalize(scan));
  }
}

}  // namespace
}  // namespace quiver::transport
