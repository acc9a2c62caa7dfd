// Server and client in one process over UCX: every Arrow type across both
// body types, coalescing, windows, errors of the query, malformed requests.
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

TEST(Transport, WrongTokenIsRefusedByName) {
  Fixture f;
  ClientOptions o = WithMode(BodyMode::kPacked);
  o.token = "guess";
  auto client = Client::Connect(f.address(), o);
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find("wrong token"), std::string::npos)
      << client.status().ToString();
  EXPECT_EQ(f.runs.load(), 0);
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
  for (BodyMode mode : {BodyMode::kPacked, BodyMode::kAddresses}) {
    SCOPED_TRACE(mode == BodyMode::kPacked ? "packed" : "addresses");
    SystemMemoryPool pool;
    ClientOptions co = WithMode(mode);
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

// Batches whose buffers are all in memory the server serves in place (a
// node's regions) go to a reader of addresses as their own buffers: no
// block of the pool, one body for the whole batch; to a reader of packed
// bodies they are copied as before, cut into bodies of the server's size.
TEST(Transport, BatchesInMemoryServedInPlaceGoAsTheirOwnBuffers) {
  const int64_t rows = 60000;
  // Fixed width, strings, lists and nulls (no dictionaries: a concatenated
  // dictionary stays where its input was).
  auto source =
      RandomBatch({int64(), utf8(), list(int32()), boolean(), float64()}, rows, 3)
          .ValueOrDie();
  ASSERT_OK_AND_ASSIGN(auto arena, AllocateBuffer(64 << 20));
  ArenaPool pool(arena->mutable_data(), static_cast<uint64_t>(arena->size()));
  ASSERT_OK_AND_ASSIGN(auto in_arena, ConcatenateBatches({source}, &pool));
  ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.pool_size = 16 << 20;
  so.max_batch_bytes = 256 << 10;
  so.in_place = {{arena->data(), static_cast<uint64_t>(arena->size())}};
  ASSERT_OK_AND_ASSIGN(
      auto server, Server::Start(so, [&](const std::string&, const std::string&) {
        return RecordBatchReader::FromBatches(in_arena->schema(), {in_arena});
      }));
  const std::string address = "127.0.0.1:" + std::to_string(server->port());
  for (BodyMode mode : {BodyMode::kAddresses, BodyMode::kPacked}) {
    SCOPED_TRACE(mode == BodyMode::kPacked ? "packed" : "addresses");
    ClientOptions co = WithMode(mode);
    co.token.clear();
    ASSERT_OK_AND_ASSIGN(auto client, Client::Connect(address, co));
    const uint64_t before = server->stats().bodies_in_place;
    ScanOptions scan_options;
    scan_options.min_rows = uint64_t{1} << 40;  // as large as the server makes them
    ASSERT_OK_AND_ASSIGN(uint64_t scan, client->InitScan("all", scan_options));
    ASSERT_OK_AND_ASSIGN(auto reader, client->Iterate(scan));
    ASSERT_OK_AND_ASSIGN(auto batches, reader->ReadAll());
    ASSERT_OK_AND_ASSIGN(auto got, ConcatenateBatches(batches));
    ASSERT_OK(got->ValidateFull());
    EXPECT_TRUE(got->Equals(*source));
    ASSERT_OK(client->Finalize(scan));
    ASSERT_OK_AND_ASSIGN(auto settled, SettledStats(client.get()));
    EXPECT_EQ(settled.pool_bytes_in_use, 0u);
    if (mode == BodyMode::kAddresses) {
      EXPECT_EQ(batches.size(), 1u);
      EXPECT_EQ(server->stats().bodies_in_place, before + 1);
    } else {
      EXPECT_GT(batches.size(), 4u);  // cut to the server's body size
      EXPECT_EQ(server->stats().bodies_in_place, before);
    }
  }
}

// Allocations from one arena, counted while alive: a batch built here is
// in memory a server serves in place, and the count says when the server
// let go of it.
class CountingArena final : public MemoryPool {
 public:
  CountingArena(uint8_t* base, int64_t size) : cursor_(base), end_(base + size) {}
  using MemoryPool::Allocate;
  using MemoryPool::Free;
  using MemoryPool::Reallocate;
  Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto at = reinterpret_cast<uintptr_t>(cursor_);
    at = (at + static_cast<uintptr_t>(alignment) - 1) &
         ~(static_cast<uintptr_t>(alignment) - 1);
    if (reinterpret_cast<uint8_t*>(at) + size > end_) return Status::OutOfMemory("arena");
    *out = reinterpret_cast<uint8_t*>(at);
    cursor_ = *out + size;
    ++live_;
    return Status::OK();
  }
  Status Reallocate(int64_t, int64_t, int64_t, uint8_t**) override {
    return Status::NotImplemented("arena");
  }
  void Free(uint8_t*, int64_t, int64_t) override {
    std::lock_guard<std::mutex> lock(mu_);
    --live_;
  }
  int64_t live() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_;
  }
  int64_t bytes_allocated() const override { return 0; }
  int64_t max_memory() const override { return 0; }
  int64_t total_bytes_allocated() const override { return 0; }
  int64_t num_allocations() const override { return 0; }
  std::string backend_name() const override { return "counting-arena"; }

 private:
  mutable std::mutex mu_;
  uint8_t* cursor_;
  uint8_t* end_;
  int64_t live_ = 0;
};

// A batch served in place stays alive after its query is done while the
// client has not read it, and is let go of once read to its end (its
// addresses freed) or once the client goes away without reading: nothing
// of the memory served in place stays held.
TEST(Transport, ABatchServedInPlaceIsHeldUntilReadAndLetGoAfter) {
  auto source = RandomBatch({int64(), utf8()}, 20000, 4).ValueOrDie();
  ASSERT_OK_AND_ASSIGN(auto memory, AllocateBuffer(16 << 20));
  CountingArena arena(memory->mutable_data(), memory->size());
  ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.in_place = {{memory->data(), static_cast<uint64_t>(memory->size())}};
  ASSERT_OK_AND_ASSIGN(
      auto server,
      Server::Start(
          so,
          [&](const std::string&,
              const std::string&) -> Result<std::shared_ptr<RecordBatchReader>> {
            QUIVER_ASSIGN_OR_RAISE(auto batch, ConcatenateBatches({source}, &arena));
            return RecordBatchReader::FromBatches(batch->schema(), {batch});
          }));
  const std::string address = "127.0.0.1:" + std::to_string(server->port());
  auto wait_for = [](const std::function<bool()>& done) {
    for (int i = 0; i < 500 && !done(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
  };
  for (bool read : {true, false}) {
    SCOPED_TRACE(read ? "read to its end" : "client gone");
    ClientOptions co = WithMode(BodyMode::kAddresses);
    co.token.clear();
    ASSERT_OK_AND_ASSIGN(auto client, Client::Connect(address, co));
    const uint64_t before = server->stats().bodies_in_place;
    ScanOptions scan_options;
    scan_options.min_rows = uint64_t{1} << 40;
    ASSERT_OK_AND_ASSIGN(uint64_t scan, client->InitScan("all", scan_options));
    // The body is made and its query done; the client has not read it.
    ASSERT_TRUE(wait_for([&] { return server->stats().bodies_in_place == before + 1; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_GT(arena.live(), 0);
    if (read) {
      ASSERT_OK_AND_ASSIGN(auto reader, client->Iterate(scan));
      ASSERT_OK_AND_ASSIGN(auto batches, reader->ReadAll());
      ASSERT_EQ(batches.size(), 1u);
      EXPECT_TRUE(batches[0]->Equals(*source));
      // Let go of when the client's free_data arrives, before any Finalize.
      EXPECT_TRUE(wait_for([&] { return arena.live() == 0; }))
          << arena.live() << " allocations still held after the read";
      ASSERT_OK(client->Finalize(scan));
    } else {
      client.reset();  // let go of when the connection goes
      EXPECT_TRUE(wait_for([&] { return arena.live() == 0; }))
          << arena.live() << " allocations still held after the client went";
    }
  }
}

}  // namespace
}  // namespace quiver::transport
