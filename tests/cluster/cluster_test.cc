// Several daemons and clients as separate processes: the demo on shm and on
// the non-coherent emulator, remote allocation, security and malformed
// requests, pins against frees and unpublishing, and a daemon killed with
// SIGKILL while readers hold pins.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "cluster/cluster_util.h"
#include "quiver/client.h"
#include "quiver/columnar/builder.h"
#include "quiver/control/descriptor.h"
#include "quiver/control/local_cluster.h"

namespace quiver {
namespace {

using control::LocalCluster;
using control::LocalClusterOptions;
using testing::BinaryPath;
using testing::Child;

std::unique_ptr<LocalCluster> StartCluster(memory::BackingKind backing, int nodes = 3,
                                           std::vector<std::string> daemon_args = {}) {
  LocalClusterOptions o;
  o.nodes = nodes;
  o.region_size = 64ULL << 20;
  o.backing = backing;
  o.quiverd = BinaryPath("quiverd");
  o.name_prefix = "test";
  o.daemon_args = std::move(daemon_args);
  auto c = LocalCluster::Start(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

// A client of node 0 once node 0's daemon sees every peer online; null
// (with the reason reported) if that does not happen.
std::unique_ptr<Client> ConnectNode0(LocalCluster* cluster, int skip_protocol_step = 0) {
  ClientOptions options;
  options.config_path = cluster->config_path();
  options.node = 0;
  options.skip_protocol_step_for_testing = skip_protocol_step;
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  if (!client.ok()) return nullptr;
  Status online = (*client)->WaitAllOnline(30000);
  EXPECT_TRUE(online.ok()) << online.ToString();
  return online.ok() ? std::move(*client) : nullptr;
}

// Polls `done` every 100 ms for up to 10 s; true once it holds.
template <typename F>
bool Eventually(F&& done) {
  for (int i = 0; i < 100; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Runs `quiver demo-node` on every node at once; every one must succeed.
void RunDemoNodes(LocalCluster* cluster, uint64_t rows, bool remote_owner) {
  const int n = static_cast<int>(cluster->config().nodes.size());
  std::vector<Child> workers;
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> argv = {BinaryPath("quiver"),
                                     "demo-node",
                                     "--config",
                                     cluster->config_path(),
                                     "--node",
                                     std::to_string(i),
                                     "--rows",
                                     std::to_string(rows)};
    if (remote_owner) {
      argv.push_back("--owner");
      argv.push_back(std::to_string((i + 1) % n));
    }
    workers.push_back(Child::Start(argv));
    ASSERT_TRUE(workers.back().started());
  }
  for (int i = 0; i < n; ++i) {
    const int code = workers[i].Finish(300000);
    const std::string& out = workers[i].output();
    EXPECT_EQ(code, 0) << "node " << i << ":\n" << out;
    EXPECT_NE(out.find("sums_ok=1"), std::string::npos) << out;
    EXPECT_NE(out.find("zero_copy=1"), std::string::npos) << out;
    EXPECT_NE(out.find("full_sums_ok=1"), std::string::npos) << out;
    EXPECT_NE(out.find("full_local=1"), std::string::npos) << out;
    EXPECT_NE(out.find("ok=1"), std::string::npos) << out;
  }
}

TEST(ClusterTest, DemoNodesAgreeOnShm) {
  auto cluster = StartCluster(memory::BackingKind::kShm);
  ASSERT_NE(cluster, nullptr);
  RunDemoNodes(cluster.get(), 600000, false);
}

TEST(ClusterTest, DemoNodesAgreeOnIncoherentBackings) {
  auto cluster = StartCluster(memory::BackingKind::kIncoherent);
  ASSERT_NE(cluster, nullptr);
  RunDemoNodes(cluster.get(), 300000, false);
}

// Every node builds its slice in the next node's memory: remote malloc,
// the pre-write flush broadcast and the writer's flush before sealing must
// make the data visible through the emulator's private caches.
TEST(ClusterTest, RemoteOwnersOnIncoherentBackings) {
  auto cluster = StartCluster(memory::BackingKind::kIncoherent);
  ASSERT_NE(cluster, nullptr);
  RunDemoNodes(cluster.get(), 300000, true);
}

TEST(ClusterTest, QuiverDemoCommandPasses) {
  Child demo = Child::Start({BinaryPath("quiver"), "demo", "--rows", "300000"});
  ASSERT_TRUE(demo.started());
  EXPECT_EQ(demo.Finish(300000), 0) << demo.output();
  EXPECT_NE(demo.output().find("quiver demo: OK"), std::string::npos) << demo.output();
  EXPECT_NE(demo.output().find("faster than SendTableFull"), std::string::npos);
}

// ---------------------------------------------------------------------------

Result<RecordBatchPtr> Int64Batch(MemoryPool* pool, int64_t n, int64_t start = 0) {
  Int64Builder b(pool);
  QUIVER_RETURN_NOT_OK(b.Reserve(n));
  for (int64_t i = 0; i < n; ++i) b.UnsafeAppend(start + i);
  QUIVER_ASSIGN_OR_RAISE(auto a, b.Finish());
  return RecordBatch::FromArrays({"v"}, {a});
}

int64_t SumInt64(const Table& t) {
  int64_t s = 0;
  for (const auto& c : t.column(0)->chunks()) {
    auto a = std::static_pointer_cast<Int64Array>(c);
    for (int64_t i = 0; i < a->length(); ++i) s += a->Value(i);
  }
  return s;
}

TEST(ClusterTest, SecurityLimitsAndMalformedRequests) {
  auto cluster = StartCluster(memory::BackingKind::kShm, 2,
                              {"--max-malloc", "1MiB", "--malloc-rate", "50"});
  ASSERT_NE(cluster, nullptr);
  const auto& cfg = cluster->config();
  // Backing files are private to the cluster's user.
  for (const auto& n : cfg.nodes) {
    struct stat st {};
    ASSERT_EQ(stat(n.path.c_str(), &st), 0) << n.path;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << n.path;
  }
  auto good = control::NodeClient::Make(cfg.nodes[0].control, cfg.token, 0, 1, 0);
  auto wrong = control::NodeClient::Make(cfg.nodes[0].control, "not-the-token", 0, 1, 0);
  rpc::PingRequest ping;
  rpc::PingReply pong;
  Status st = wrong->Call(&rpc::Node::Stub::Ping, &ping, &pong, 5000, "Ping");
  EXPECT_EQ(st.code(), StatusCode::kUnauthenticated) << st.ToString();
  {
    // No token at all.
    grpc::ClientContext ctx;
    rpc::PingRequest r;
    auto gs = good->stub()->Ping(&ctx, r, &pong);
    EXPECT_EQ(gs.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  // Size limit.
  rpc::MallocRequest big;
  big.set_size(2 << 20);
  rpc::MallocReply mr;
  st = good->Call(&rpc::Node::Stub::Malloc, &big, &mr, 5000, "Malloc");
  EXPECT_EQ(st.code(), StatusCode::kOutOfMemory) << st.ToString();
  EXPECT_NE(st.message().find("limit"), std::string::npos) << st.ToString();
  // Bad alignment, unknown caller node.
  rpc::MallocRequest odd;
  odd.set_size(64);
  odd.set_alignment(48);
  EXPECT_TRUE(
      good->Call(&rpc::Node::Stub::Malloc, &odd, &mr, 5000, "Malloc").IsInvalid());
  auto stranger = control::NodeClient::Make(cfg.nodes[0].control, cfg.token, 0, 77, 0);
  EXPECT_TRUE(
      stranger->Call(&rpc::Node::Stub::Ping, &ping, &pong, 5000, "Ping").IsInvalid());
  // A remote allocation by node 1; node 0 itself may not free it.
  rpc::MallocRequest small;
  small.set_size(4096);
  ASSERT_TRUE(good->Call(&rpc::Node::Stub::Malloc, &small, &mr, 5000, "Malloc").ok());
  auto as_node0 = control::NodeClient::Make(cfg.nodes[0].control, cfg.token, 0, 0, 0);
  rpc::FreeRequest fr;
  fr.set_address(mr.address());
  rpc::Empty e;
  st = as_node0->Call(&rpc::Node::Stub::Free, &fr, &e, 5000, "Free");
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
  EXPECT_TRUE(good->Call(&rpc::Node::Stub::Free, &fr, &e, 5000, "Free").ok());
  // Double free, garbage addresses.
  st = good->Call(&rpc::Node::Stub::Free, &fr, &e, 5000, "Free");
  EXPECT_TRUE(st.IsInvalid()) << st.ToString();
  fr.set_address(12345);
  EXPECT_TRUE(good->Call(&rpc::Node::Stub::Free, &fr, &e, 5000, "Free").IsInvalid());
  // Flush outside every region; seal in another node's region.
  rpc::FlushRequest fl;
  auto* r = fl.add_ranges();
  r->set_address(0x1000);
  r->set_length(64);
  EXPECT_TRUE(good->Call(&rpc::Node::Stub::Flush, &fl, &e, 5000, "Flush").IsInvalid());
  rpc::SealRequest sl;
  r = sl.add_ranges();
  r->set_address(cfg.nodes[1].base + 8192);
  r->set_length(64);
  EXPECT_TRUE(good->Call(&rpc::Node::Stub::Seal, &sl, &e, 5000, "Seal").IsInvalid());
  // Malformed descriptors and names.
  rpc::PublishRequest pub;
  pub.set_name("garbage");
  pub.mutable_chunk()->set_batch_descriptor("this is not a descriptor");
  EXPECT_TRUE(
      good->Call(&rpc::Node::Stub::Publish, &pub, &e, 5000, "Publish").IsInvalid());
  pub.set_name("");
  EXPECT_TRUE(
      good->Call(&rpc::Node::Stub::Publish, &pub, &e, 5000, "Publish").IsInvalid());
  pub.set_name(std::string(1000, 'x'));
  EXPECT_TRUE(
      good->Call(&rpc::Node::Stub::Publish, &pub, &e, 5000, "Publish").IsInvalid());
  // A well-formed descriptor of heap memory (outside every region).
  auto heap_batch = Int64Batch(nullptr, 100);
  ASSERT_TRUE(heap_batch.ok());
  auto heap_desc = control::EncodeDescriptor(**heap_batch, nullptr);
  ASSERT_TRUE(heap_desc.ok()) << heap_desc.status().ToString();
  pub.set_name("heap");
  pub.mutable_chunk()->set_num_rows(100);
  pub.mutable_chunk()->set_batch_descriptor(*heap_desc);
  st = good->Call(&rpc::Node::Stub::Publish, &pub, &e, 5000, "Publish");
  EXPECT_TRUE(st.IsInvalid()) << st.ToString();
  EXPECT_NE(st.message().find("not inside one mapped region"), std::string::npos)
      << st.ToString();
  // A descriptor of cluster memory that is allocated but not sealed is
  // refused; once sealed by the node that made it, accepted.
  {
    rpc::MallocRequest m;
    m.set_size(800);
    rpc::MallocReply where;
    ASSERT_TRUE(good->Call(&rpc::Node::Stub::Malloc, &m, &where, 5000, "Malloc").ok());
    auto values = Buffer::Wrap(reinterpret_cast<const uint8_t*>(where.address()), 800);
    auto data = ArrayData::Make(int64(), 100, {nullptr, values}, 0);
    auto b = RecordBatch::Make(schema({field("v", int64())}), 100, {data});
    auto desc = control::EncodeDescriptor(*b, nullptr);
    ASSERT_TRUE(desc.ok()) << desc.status().ToString();
    rpc::PublishRequest p2;
    p2.set_name("unsealed");
    p2.mutable_chunk()->set_num_rows(100);
    p2.mutable_chunk()->set_batch_descriptor(*desc);
    st = good->Call(&rpc::Node::Stub::Publish, &p2, &e, 5000, "Publish");
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
    EXPECT_NE(st.message().find("not sealed"), std::string::npos) << st.ToString();
    // A row count that disagrees with the descriptor.
    p2.mutable_chunk()->set_num_rows(99);
    EXPECT_TRUE(
        good->Call(&rpc::Node::Stub::Publish, &p2, &e, 5000, "Publish").IsInvalid());
    p2.mutable_chunk()->set_num_rows(100);
    // Only the allocating node may seal.
    rpc::SealRequest seal;
    auto* sr = seal.add_ranges();
    sr->set_address(where.address());
    sr->set_length(800);
    st = as_node0->Call(&rpc::Node::Stub::Seal, &seal, &e, 5000, "Seal");
    EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
    ASSERT_TRUE(good->Call(&rpc::Node::Stub::Seal, &seal, &e, 5000, "Seal").ok());
    st = good->Call(&rpc::Node::Stub::Publish, &p2, &e, 5000, "Publish");
    EXPECT_TRUE(st.ok()) << st.ToString();
    // Published: not even its maker may free it now.
    rpc::FreeRequest f2;
    f2.set_address(where.address());
    st = good->Call(&rpc::Node::Stub::Free, &f2, &e, 5000, "Free");
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  }
  rpc::GetRequest get;
  get.set_name("nothing");
  rpc::GetReply gr;
  EXPECT_TRUE(good->Call(&rpc::Node::Stub::Get, &get, &gr, 5000, "Get").IsNotFound());
  rpc::SyncWaitRequest sw;
  sw.add_nodes(99);
  EXPECT_TRUE(
      good->Call(&rpc::Node::Stub::SyncWait, &sw, &e, 5000, "SyncWait").IsInvalid());
  rpc::TablePiece piece;
  {
    grpc::ClientContext ctx;
    good->Prepare(&ctx, 5000);
    rpc::SendTableFullReply rep;
    auto w = good->stub()->SendTableFull(&ctx, &rep);
    good->FillCaller(piece.mutable_caller());
    piece.set_name("bad-stream");
    piece.set_total_bytes(100);
    piece.set_data(std::string(100, 'z'));
    w->Write(piece);
    w->WritesDone();
    auto gs = w->Finish();
    EXPECT_EQ(gs.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << gs.error_message();
  }
  // Rate limit: 50 allocations per second per node.
  int refused = 0;
  std::vector<uint64_t> got;
  for (int i = 0; i < 200; ++i) {
    rpc::MallocRequest m;
    m.set_size(64);
    rpc::MallocReply rep;
    Status s = good->Call(&rpc::Node::Stub::Malloc, &m, &rep, 5000, "Malloc");
    if (s.ok()) {
      got.push_back(rep.address());
    } else {
      EXPECT_NE(s.message().find("rate limit"), std::string::npos) << s.ToString();
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
  // The daemon is still serving.
  EXPECT_TRUE(good->Call(&rpc::Node::Stub::Ping, &ping, &pong, 5000, "Ping").ok());
  EXPECT_EQ(pong.node(), 0u);
}

// Without the writer's flush (protocol step 4), what a process writes into
// another node's memory stays in its private cache on incoherent backings:
// a reader on a third node sums zeros. This is what the incoherent tests
// above guard. The buffer is allocated once at its final size and written
// with plain stores, so no other flush (a Realloc's write-back, a later
// allocation's pre-write flush) can carry the data out by chance.
TEST(ClusterTest, SkippingTheWriterFlushLosesWritesOnIncoherentBackings) {
  auto cluster = StartCluster(memory::BackingKind::kIncoherent);
  ASSERT_NE(cluster, nullptr);
  auto c = ConnectNode0(cluster.get(), /*skip_protocol_step=*/4);
  ASSERT_NE(c, nullptr);
  const int64_t n = 100000;
  uint8_t* p = nullptr;
  ASSERT_TRUE(c->pool(1)->Allocate(n * 8, 64, &p).ok());
  auto* v = reinterpret_cast<int64_t*>(p);
  for (int64_t i = 0; i < n; ++i) v[i] = i + 1;
  auto data = ArrayData::Make(int64(), n, {nullptr, Buffer::Wrap(p, n * 8)}, 0);
  auto batch = RecordBatch::Make(schema({field("v", int64(), false)}), n, {data});
  EXPECT_EQ(SumInt64(*Table::FromRecordBatches({batch}).ValueOrDie()), n * (n + 1) / 2);
  ASSERT_TRUE(c->Publish(batch, "unflushed").ok());
  Child reader =
      Child::Start({BinaryPath("quiver"), "demo-read", "--config", cluster->config_path(),
                    "--node", "2", "--name", "unflushed"});
  reader.Finish();
  const std::string line = reader.WaitForLine("sums=", 1000);
  EXPECT_NE(reader.output().find("rows=100000"), std::string::npos) << reader.output();
  EXPECT_EQ(reader.output().find("sums=" + std::to_string(n * (n + 1) / 2) + " "),
            std::string::npos)
      << "the reader saw the data although the writer never flushed it:\n"
      << reader.output();
}

TEST(ClusterTest, DaemonCommandLineErrors) {
  Child bad_id =
      Child::Start({BinaryPath("quiver"), "node", "--config", "x.toml", "--id", "x"});
  EXPECT_EQ(bad_id.Finish(), 2);
  Child no_config = Child::Start(
      {BinaryPath("quiverd"), "--config", "/nonexistent/cluster.toml", "--id", "0"});
  EXPECT_EQ(no_config.Finish(), 1);
  Child unknown = Child::Start({BinaryPath("quiverd"), "--frobnicate"});
  EXPECT_EQ(unknown.Finish(), 2);
  // The demo's numbers are checked before anything starts.
  for (const char* rows : {"abc", "-5", "99999999999999999999999"}) {
    Child demo = Child::Start({BinaryPath("quiver"), "demo", "--rows", rows});
    EXPECT_EQ(demo.Finish(), 2) << rows;
  }
  Child nodes = Child::Start({BinaryPath("quiver"), "demo", "--nodes", "99"});
  EXPECT_EQ(nodes.Finish(), 2);
  Child backing = Child::Start({BinaryPath("quiver"), "demo", "--backing", "floppy"});
  EXPECT_EQ(backing.Finish(), 2);
}

TEST(ClusterTest, PinsKeepObjectsUntilReadersGo) {
  auto cluster = StartCluster(memory::BackingKind::kShm, 2);
  ASSERT_NE(cluster, nullptr);
  auto c = ConnectNode0(cluster.get());
  ASSERT_NE(c, nullptr);
  const int64_t n = 100000;
  auto batch = Int64Batch(c->local_pool(), n);
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE(c->Publish(*batch, "pinned").ok());
  // Publishing again under the same name and row is refused.
  Status again = c->Publish(*batch, "pinned");
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists) << again.ToString();
  // A reader on node 1 holds it.
  Child reader =
      Child::Start({BinaryPath("quiver"), "demo-read", "--config", cluster->config_path(),
                    "--node", "1", "--name", "pinned", "--hold"});
  ASSERT_FALSE(reader.WaitForLine("pinned", 30000).empty()) << reader.output();
  auto list = c->List();
  ASSERT_TRUE(list.ok());
  Status st = c->Unpublish("pinned");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("pinned by 1 reader"), std::string::npos) << st.ToString();
  // Freeing a published object is refused by the allocator itself.
  auto* alloc = c->cluster()->local_region()->allocator();
  const uint8_t* data = (*batch)->column(0)->data()->buffers[1]->data();
  auto info = alloc->Lookup(data, 8, true);
  ASSERT_TRUE(info.ok());
  Status fr = alloc->FreeIf(
      const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(info->address)),
      [](const memory::AllocationInfo& i) {
        return (i.tag >> 16) != 0 ? Status::FailedPrecondition("busy") : Status::OK();
      });
  EXPECT_FALSE(fr.ok());
  // The reader dies without releasing: its daemon notices and drops the pin.
  reader.Kill(SIGKILL);
  reader.Finish();
  Status un;
  EXPECT_TRUE(Eventually([&] { return (un = c->Unpublish("pinned")).ok(); }))
      << un.ToString();
  auto gone = c->Get("pinned");
  EXPECT_TRUE(gone.status().IsNotFound()) << gone.status().ToString();
}

TEST(ClusterTest, ZeroCopyGetInTheSameProcessPinsUntilArraysGo) {
  auto cluster = StartCluster(memory::BackingKind::kShm, 2);
  ASSERT_NE(cluster, nullptr);
  auto c = ConnectNode0(cluster.get());
  ASSERT_NE(c, nullptr);
  // Built in node 1's memory by remote allocation.
  auto batch = Int64Batch(c->pool(1), 5000, 10);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  const uint8_t* values = (*batch)->column(0)->data()->buffers[1]->data();
  EXPECT_TRUE(cluster->config().nodes[1].Contains(reinterpret_cast<uint64_t>(values), 8));
  ASSERT_TRUE(c->Publish(*batch, "remote").ok());
  {
    auto t = c->Get("remote");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ((*t)->column(0)->chunk(0)->data()->buffers[1]->data(), values);
    EXPECT_EQ(SumInt64(**t), 5000 * 10 + 5000 * 4999 / 2);
    EXPECT_EQ(c->Unpublish("remote").code(), StatusCode::kFailedPrecondition);
  }
  // The arrays are gone: the pin is released.
  Status un;
  EXPECT_TRUE(Eventually([&] { return (un = c->Unpublish("remote")).ok(); }))
      << un.ToString();
}

TEST(ClusterTest, DaemonKilledWhileReadersHoldPins) {
  auto cluster = StartCluster(memory::BackingKind::kShm, 3);
  ASSERT_NE(cluster, nullptr);
  auto c = ConnectNode0(cluster.get());
  ASSERT_NE(c, nullptr);
  auto local = Int64Batch(c->local_pool(), 20000);
  auto on2 = Int64Batch(c->pool(2), 20000);
  ASSERT_TRUE(local.ok() && on2.ok());
  ASSERT_TRUE(c->Publish(*local, "on-node-0").ok());
  ASSERT_TRUE(c->Publish(*on2, "on-node-2").ok());
  // Readers on node 1 hold both.
  Child r0 =
      Child::Start({BinaryPath("quiver"), "demo-read", "--config", cluster->config_path(),
                    "--node", "1", "--name", "on-node-0", "--hold"});
  Child r2 =
      Child::Start({BinaryPath("quiver"), "demo-read", "--config", cluster->config_path(),
                    "--node", "1", "--name", "on-node-2", "--hold"});
  ASSERT_FALSE(r0.WaitForLine("pinned", 30000).empty()) << r0.output();
  ASSERT_FALSE(r2.WaitForLine("pinned", 30000).empty()) << r2.output();
  ASSERT_TRUE(cluster->Kill(2, SIGKILL).ok());
  // The others report its table lost and keep working.
  EXPECT_TRUE(Eventually([&] {
    auto l = c->List();
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    if (!l.ok()) return false;
    bool lost = false;
    for (const auto& t : l->tables()) {
      if (t.name() == "on-node-2" && t.lost()) {
        lost = true;
        EXPECT_NE(t.lost_reason().find("node 2"), std::string::npos) << t.lost_reason();
      }
      if (t.name() == "on-node-0") {
        EXPECT_FALSE(t.lost());
      }
    }
    return lost;
  }));
  auto g2 = c->Get("on-node-2");
  EXPECT_EQ(g2.status().code(), StatusCode::kUnavailable) << g2.status().ToString();
  EXPECT_NE(g2.status().message().find("lost"), std::string::npos);
  auto g0 = c->Get("on-node-0");
  ASSERT_TRUE(g0.ok()) << g0.status().ToString();
  EXPECT_EQ(SumInt64(**g0), 20000LL * 19999 / 2);
  // Node 1 too, from a fresh process.
  Child r1 = Child::Start({BinaryPath("quiver"), "demo-read", "--config",
                           cluster->config_path(), "--node", "1", "--name", "on-node-0"});
  EXPECT_EQ(r1.Finish(), 0) << r1.output();
  EXPECT_EQ(r0.Finish(), 0) << r0.output();
  r2.Finish();
  // New tables still go between the survivors.
  auto fresh = Int64Batch(c->local_pool(), 1000);
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE(c->Publish(*fresh, "after").ok());
  Child r3 = Child::Start({BinaryPath("quiver"), "demo-read", "--config",
                           cluster->config_path(), "--node", "1", "--name", "after"});
  EXPECT_EQ(r3.Finish(), 0) << r3.output();
  // The killed daemon restarts on its region and rejoins.
  ASSERT_TRUE(cluster->Restart(2).ok());
  EXPECT_TRUE(Eventually([&] {
    auto s = c->ClusterStatus();
    EXPECT_TRUE(s.ok());
    if (!s.ok()) return false;
    int online = 0;
    for (const auto& n : s->nodes()) online += n.online();
    return online == 3;
  }));
}

// SIGTERM stops a daemon cleanly; started again, it takes its region over
// with every allocation in place and rejoins the cluster.
TEST(ClusterTest, DaemonRestartsOnItsRegionAfterSigterm) {
  auto cluster = StartCluster(memory::BackingKind::kShm, 2);
  ASSERT_NE(cluster, nullptr);
  auto c = ConnectNode0(cluster.get());
  ASSERT_NE(c, nullptr);
  auto batch = Int64Batch(c->pool(1), 4096, 7);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_TRUE(c->Seal(**batch).ok());
  auto live_on_1 = [&]() -> int64_t {
    auto s = c->ClusterStatus();
    if (!s.ok()) return -1;
    for (const auto& n : s->nodes()) {
      if (n.node() == 1 && n.online()) return static_cast<int64_t>(n.live_allocations());
    }
    return -1;
  };
  const int64_t before = live_on_1();
  ASSERT_GT(before, 0);
  ASSERT_TRUE(cluster->Kill(1, SIGTERM).ok());
  ASSERT_TRUE(cluster->Restart(1).ok());
  int64_t after = -1;
  Eventually([&] { return (after = live_on_1()) >= 0; });
  EXPECT_EQ(after, before);
  // Node 0's daemon learns it through its heartbeats.
  ASSERT_TRUE(c->WaitAllOnline(30000).ok());
  // The data written before the restart is still there, and the daemon
  // serves the region again: it accepts the descriptor of that data.
  auto values = std::static_pointer_cast<Int64Array>((*batch)->column(0));
  EXPECT_EQ(values->Value(4095), 7 + 4095);
  Status published = c->Publish(*batch, "survived");
  ASSERT_TRUE(published.ok()) << published.ToString();
  auto t = c->Get("survived");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(SumInt64(**t), 4096LL * 7 + 4096LL * 4095 / 2);
}

}  // namespace
}  // namespace quiver
