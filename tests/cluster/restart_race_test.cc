// Faults that overlap a publish, an unpublish or a held read, each as the
// deterministic sequence a chaos soak found it in (issue: "Never a wrong
// value"): a reader holds a table while an owner of its memory restarts and
// the table is unpublished; a table spread over two homes is unpublished
// while one is down; a publish meets an owner that is down or that has
// restarted and given the writer's memory to someone else; a daemon dies
// in the middle of a call. In each, a reader gets the table that was
// published or a clear error, never other bytes.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "cluster/cluster_util.h"
#include "common/status_macros.h"
#include "control/client/admin.h"
#include "control/tls/tls_context.h"
#include "quiver/client.h"
#include "quiver/columnar/builder.h"
#include "quiver/control/descriptor.h"

namespace quiver {
namespace {

using testing::Child;
using testing::ClusterSpec;
using testing::ConnectOnline;
using testing::Eventually;
using testing::RawSession;
using testing::StartCluster;
using testing::UsedBytes;

// A restarted daemon keeps what it recovered for max(grace, lease): long
// enough here that the steps below fit inside it on a loaded machine.
constexpr uint32_t kLeaseMs = 8000;

ClusterSpec Spec() {
  ClusterSpec spec;
  spec.nodes = 3;
  spec.limits.session_quota = {1.0, 0};
  spec.limits.node_quota = {1.0, 0};
  spec.limits.restart_grace_ms = 1000;
  spec.limits.session_lease_ms = kLeaseMs;
  return spec;
}

// int64 values first..first+rows-1 in `pool`.
ArrayPtr Counting(MemoryPool* pool, int64_t first, int64_t rows) {
  Int64Builder b(pool);
  EXPECT_TRUE(b.Reserve(rows).ok());
  for (int64_t i = 0; i < rows; ++i) b.UnsafeAppend(first + i);
  return b.Finish().ValueOrDie();
}

// Column "v" in `v_pool`'s memory, column "w" in `w_pool`'s.
RecordBatchPtr TwoColumns(MemoryPool* v_pool, MemoryPool* w_pool, int64_t first,
                          int64_t rows) {
  return RecordBatch::FromArrays(
             {"v", "w"}, {Counting(v_pool, first, rows), Counting(w_pool, first, rows)})
      .ValueOrDie();
}

int64_t SumV(const Table& t) {
  int64_t s = 0;
  for (const auto& c : t.column(0)->chunks()) {
    auto a = std::static_pointer_cast<Int64Array>(c);
    for (int64_t i = 0; i < a->length(); ++i) s += a->Value(i);
  }
  return s;
}

using testing::SumsOf;

Result<ClusterStatus> StatusAt(const control::LocalCluster& cluster, uint32_t node) {
  return control::client::QueryClusterStatus(cluster.config().nodes[node], 2000);
}

std::unique_ptr<Client> ConnectTo(const control::LocalCluster& cluster, uint32_t node) {
  auto c = Client::Connect({cluster.config_path(), node});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

// Mechanism 1. A reader on node 2 holds a table homed at node 0 whose
// column "v" lies in node 1's memory, and is stopped; node 1's daemon is
// killed; the table is unpublished at its home (node 1 is no home: that
// succeeds); node 1 restarts and learns the table is gone; every free byte
// of node 1 is overwritten. The reader, resumed, must still read its table:
// what it pinned before the restart is kept until it re-claims it or its
// lease provably ended, whatever was unpublished meanwhile.
TEST(RestartRaceTest, AHeldTableOutlivesItsOwnersRestartAndItsUnpublish) {
  auto cluster = StartCluster(Spec());
  ASSERT_NE(cluster, nullptr);
  const int64_t base = UsedBytes(*cluster, 1);
  constexpr int64_t kRows = 200000;
  {
    auto publisher = ConnectOnline(*cluster, 0);
    ASSERT_NE(publisher, nullptr);
    auto batch = TwoColumns(publisher->pool(1), publisher->pool(0), 0, kRows);
    ASSERT_OK(publisher->Publish(batch, "held"));
    batch.reset();
    ASSERT_OK(publisher->Drain());
  }
  Child reader = testing::StartActor(*cluster, 2, {"--get", "held"});
  ASSERT_FALSE(reader.WaitForLine("ready", 30000).empty()) << reader.output();
  ASSERT_NE(reader.output().find(SumsOf(kRows)), std::string::npos) << reader.output();
  reader.Kill(SIGSTOP);

  ASSERT_OK(cluster->Kill(1, SIGKILL));
  auto other = ConnectTo(*cluster, 0);
  ASSERT_NE(other, nullptr);
  ASSERT_OK(other->Unpublish("held"));
  ASSERT_OK(cluster->Restart(1));
  // Node 1 has taken its region over and followed the home: the table is
  // gone there too, and the restart's recovery is still under way.
  std::optional<bool> recovering;
  ASSERT_TRUE(Eventually(
      [&] {
        auto st = StatusAt(*cluster, 1);
        recovering = testing::Recovering(*cluster, 1);
        return st.ok() && st->tables.empty() && recovering.has_value();
      },
      15000));
  ASSERT_TRUE(*recovering) << "the steps took longer than the recovery";
  EXPECT_GT(testing::Scribble(other.get(), 1), 0u);
  reader.Kill(SIGCONT);
  EXPECT_NE(testing::ResumReader(&reader).find(SumsOf(kRows)), std::string::npos)
      << "the reader's table was freed under it: " << reader.output();

  // Once the recovery is over the reader still holds it (it re-claimed its
  // pin); then it lets go and the memory comes back.
  ASSERT_TRUE(Eventually([&] { return testing::Recovering(*cluster, 1) == false; },
                         static_cast<int>(kLeaseMs) + 10000));
  EXPECT_GT(testing::Scribble(other.get(), 1), 0u);
  EXPECT_NE(testing::ResumReader(&reader).find(SumsOf(kRows)), std::string::npos)
      << reader.output();
  EXPECT_EQ(reader.Finish(), 0);
  EXPECT_TRUE(Eventually([&] { return UsedBytes(*cluster, 1) == base; }, 10000))
      << UsedBytes(*cluster, 1) << " vs " << base;
}

// Mechanism 2. A table whose rows 0-499 are homed at node 0 and 500-999 at
// node 1 is unpublished while node 1 is down: the unpublish fails as
// Unavailable and removes nothing, so the restarted node 1 brings back a
// whole table, never half of one.
TEST(RestartRaceTest, AnUnpublishWithAHomeDownRemovesNothing) {
  auto cluster = StartCluster(Spec());
  ASSERT_NE(cluster, nullptr);
  auto publisher = ConnectOnline(*cluster, 0);
  ASSERT_NE(publisher, nullptr);
  {
    auto low = RecordBatch::FromArrays({"v"}, {Counting(publisher->pool(0), 0, 500)});
    auto high = RecordBatch::FromArrays({"v"}, {Counting(publisher->pool(1), 500, 500)});
    auto table = Table::FromRecordBatches({*low, *high}).ValueOrDie();
    ASSERT_OK(publisher->Publish(table, "split"));
  }
  ASSERT_OK(cluster->Kill(1, SIGKILL));
  Status st = publisher->Unpublish("split");
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("node 1"), std::string::npos) << st.ToString();

  ASSERT_OK(cluster->Restart(1));
  auto reader = ConnectOnline(*cluster, 0);
  ASSERT_NE(reader, nullptr);
  Status last;
  EXPECT_TRUE(Eventually(
      [&] {
        auto t = reader->Get("split");
        last = t.status();
        return t.ok() && (*t)->num_rows() == 1000 && SumV(**t) == 999 * 1000 / 2;
      },
      15000))
      << last.ToString();
  ASSERT_OK(publisher->Unpublish("split"));
  EXPECT_TRUE(Eventually([&] { return reader->Get("split").status().IsNotFound(); }));
}

// Mechanism 2, the other way to half a table: one home's chunks of a
// two-home publish are removed and the other's are not (an unpublish that
// a dying home interrupted; here forged by chunk id once the publisher is
// gone). The rest is never read as if it were the table: Get fails as
// Unavailable naming the publish, List says it is incomplete, and an
// unpublish removes what is left.
TEST(RestartRaceTest, PartOfAPublishIsNeverRead) {
  auto cluster = StartCluster(Spec());
  ASSERT_NE(cluster, nullptr);
  {
    auto publisher = ConnectOnline(*cluster, 0);
    ASSERT_NE(publisher, nullptr);
    auto low = RecordBatch::FromArrays({"v"}, {Counting(publisher->pool(0), 0, 500)});
    auto high = RecordBatch::FromArrays({"v"}, {Counting(publisher->pool(1), 500, 500)});
    ASSERT_OK(publisher->Publish(Table::FromRecordBatches({*low, *high}).ValueOrDie(),
                                 "split"));
  }  // the publisher is gone: anyone may unpublish
  auto raw = RawSession::Open(*cluster, 0, control::PeerRole::kClient, 2);
  ASSERT_NE(raw, nullptr);
  wire::LookupRequest look;
  look.set_name("split");
  wire::LookupReply found;
  ASSERT_OK(raw->Call(control::rpc::Method::kLookup, look, &found));
  wire::UnpublishRequest half;
  half.set_name("split");
  for (const auto& c : found.chunks()) {
    if (c.home() == 0) half.add_chunk_ids(c.id());
  }
  ASSERT_EQ(half.chunk_ids_size(), 1);
  wire::UnpublishReply removed;
  ASSERT_OK(raw->Call(control::rpc::Method::kUnpublish, half, &removed));

  auto reader = ConnectOnline(*cluster, 0);
  ASSERT_NE(reader, nullptr);
  auto t = reader->Get("split");
  ASSERT_FALSE(t.ok()) << "read " << (*t)->num_rows() << " rows of a half table";
  EXPECT_EQ(t.status().code(), StatusCode::kUnavailable) << t.status().ToString();
  EXPECT_NE(t.status().message().find("incomplete"), std::string::npos)
      << t.status().ToString();
  auto list = reader->List();
  ASSERT_OK(list.status());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_TRUE((*list)[0].incomplete) << (*list)[0].incomplete_reason;
  EXPECT_TRUE((*list)[0].orphaned);
  ASSERT_OK(reader->Unpublish("split"));
  EXPECT_TRUE(reader->Get("split").status().IsNotFound());
}

// Mechanism 3. A publish at node 0 of a chunk with buffers in node 1's
// memory, while node 1 is down: the home may not acknowledge what the owner
// has not checked against its allocations, so the publish fails and
// nothing stays registered.
TEST(RestartRaceTest, APublishIsNotAcknowledgedWhileAnOwnerIsDown) {
  auto cluster = StartCluster(Spec());
  ASSERT_NE(cluster, nullptr);
  auto writer = ConnectOnline(*cluster, 0);
  ASSERT_NE(writer, nullptr);
  auto batch = TwoColumns(writer->pool(1), writer->pool(0), 0, 1000);
  ASSERT_OK(writer->Seal(*batch));
  std::vector<control::BufferRange> ranges;
  std::vector<std::shared_ptr<Buffer>> scratch;
  auto descriptor =
      control::EncodeDescriptor(*batch, writer->local_pool(), &ranges, &scratch);
  ASSERT_OK(descriptor.status());

  ASSERT_OK(cluster->Kill(1, SIGKILL));
  ASSERT_TRUE(Eventually([&] {
    auto st = StatusAt(*cluster, 0);
    if (!st.ok()) return false;
    for (const auto& n : st->nodes) {
      if (n.node == 1) return !n.online;
    }
    return false;
  }));
  // Straight to the home, as a client whose library sealed already.
  auto raw = RawSession::Open(*cluster, 0, control::PeerRole::kClient, 0);
  ASSERT_NE(raw, nullptr);
  wire::PublishRequest req;
  req.set_name("owned-elsewhere");
  auto* chunk = req.add_chunks();
  chunk->set_batch_descriptor(*descriptor);
  chunk->set_num_rows(1000);
  wire::PublishReply rep;
  Status st = raw->Call(control::rpc::Method::kPublish, req, &rep);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("node 1"), std::string::npos) << st.ToString();

  ASSERT_OK(cluster->Restart(1));
  auto reader = ConnectOnline(*cluster, 0);
  ASSERT_NE(reader, nullptr);
  EXPECT_TRUE(reader->Get("owned-elsewhere").status().IsNotFound());
  auto list = reader->List();
  ASSERT_OK(list.status());
  EXPECT_TRUE(list->empty());
}

// Mechanism 3, the wrong-value half. A writer's sealed buffers lie in node
// 1's memory; node 1 restarts, and when its recovery is over the memory is
// free and another client takes exactly that allocation and seals it. The
// writer's publish must not name the other client's object as its own.
TEST(RestartRaceTest, AWriterCannotPublishMemoryItsOwnerGaveToAnother) {
  auto cluster = StartCluster(Spec());
  ASSERT_NE(cluster, nullptr);
  auto writer = ConnectOnline(*cluster, 0);
  ASSERT_NE(writer, nullptr);
  constexpr int64_t kRows = 4096;
  auto batch =
      RecordBatch::FromArrays({"v"}, {Counting(writer->pool(1), 0, kRows)}).ValueOrDie();
  ASSERT_OK(writer->Seal(*batch));
  const auto* at = batch->column(0)->data()->buffers[1]->data();

  ASSERT_OK(cluster->Kill(1, SIGKILL));
  ASSERT_OK(cluster->Restart(1));
  ASSERT_TRUE(Eventually([&] { return testing::Recovering(*cluster, 1) == false; },
                         static_cast<int>(kLeaseMs) + 10000));
  // Another client allocates until it is given the writer's old address.
  auto squatter = ConnectOnline(*cluster, 0);
  ASSERT_NE(squatter, nullptr);
  std::vector<ArrayPtr> taken;
  ArrayPtr same;
  for (int i = 0; i < 4096 && same == nullptr; ++i) {
    Int64Builder b(squatter->pool(1));
    if (!b.Reserve(kRows).ok()) break;
    for (int64_t k = 0; k < kRows; ++k) b.UnsafeAppend(-1);
    auto a = b.Finish().ValueOrDie();
    if (a->data()->buffers[1]->data() == at) same = a;
    taken.push_back(a);
  }
  ASSERT_NE(same, nullptr) << "node 1 never gave the same address again";
  ASSERT_OK(squatter->Seal(*RecordBatch::FromArrays({"v"}, {same}).ValueOrDie()));

  Status st = writer->Publish(batch, "stale");
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
  auto reader = ConnectOnline(*cluster, 0);
  ASSERT_NE(reader, nullptr);
  auto t = reader->Get("stale");
  EXPECT_TRUE(t.status().IsNotFound())
      << (t.ok() ? "read sum " + std::to_string(SumV(**t)) : t.status().ToString());
}

// A daemon that dies in the middle of a call over TLS: the caller is told
// the peer is Unavailable, not that it failed to authenticate.
TEST(RestartRaceTest, ADaemonDyingMidCallIsUnavailable) {
  auto cluster = StartCluster(Spec());
  ASSERT_NE(cluster, nullptr);
  auto raw = RawSession::Open(*cluster, 1, control::PeerRole::kClient, 0);
  ASSERT_NE(raw, nullptr);
  Status got;
  std::thread waiting([&] {
    wire::LookupRequest look;
    look.set_name("never");
    look.set_wait_ms(60000);
    look.set_pin(true);
    wire::LookupReply rep;
    got = raw->Call(control::rpc::Method::kLookup, look, &rep, 90000);
  });
  ASSERT_TRUE(Eventually([&] {
    auto st = StatusAt(*cluster, 1);
    if (!st.ok()) return false;
    for (const auto& n : st->nodes) {
      if (n.node == 1) return n.waiting_calls == 1;
    }
    return false;
  }));
  ASSERT_OK(cluster->Kill(1, SIGKILL));
  waiting.join();
  EXPECT_EQ(got.code(), StatusCode::kUnavailable) << got.ToString();
}

// A reader stopped for longer than its lease loses its sessions, and with
// them its pins: what it held may then be freed and reused, which no
// library can prevent for a process that does not run. What it can do is
// tell: once the reader runs again, its client finds it cannot take the
// pin again (the table was unpublished meanwhile) and counts it in
// Client::lost_pins.
TEST(RestartRaceTest, AReaderStoppedPastItsLeaseIsToldItsPinIsLost) {
  ClusterSpec spec = Spec();
  spec.limits.session_lease_ms = 1000;
  auto cluster = StartCluster(spec);
  ASSERT_NE(cluster, nullptr);
  auto publisher = ConnectOnline(*cluster, 0);
  ASSERT_NE(publisher, nullptr);
  {
    auto batch = RecordBatch::FromArrays({"v"}, {Counting(publisher->pool(0), 0, 1000)})
                     .ValueOrDie();
    ASSERT_OK(publisher->Publish(batch, "held"));
  }
  Child reader = testing::StartActor(*cluster, 1, {"--get", "held"});
  ASSERT_FALSE(reader.WaitForLine("ready", 30000).empty()) << reader.output();
  EXPECT_EQ(testing::ActorDo(reader, "lost"), "ok lost=0");
  auto sessions_at_0 = [&] {
    auto st = StatusAt(*cluster, 0);
    if (!st.ok()) return -1;
    for (const auto& n : st->nodes) {
      if (n.node == 0) return static_cast<int>(n.sessions);
    }
    return -1;
  };
  const int before = sessions_at_0();
  reader.Kill(SIGSTOP);
  // Its session at node 0, the owner holding its pin, ends with its lease.
  ASSERT_TRUE(Eventually([&] { return sessions_at_0() == before - 1; }, 15000));
  ASSERT_OK(publisher->Unpublish("held"));
  reader.Kill(SIGCONT);
  EXPECT_TRUE(Eventually([&] { return testing::ActorDo(reader, "lost") == "ok lost=1"; }))
      << reader.output();
  EXPECT_EQ(reader.Finish(), 0);
}

}  // namespace
}  // namespace quiver
