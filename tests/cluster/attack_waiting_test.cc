// Waiting calls (barriers, look-ups that wait for a table, the object
// store's waits) under attack: they cost entries, never threads; one
// session, or one node's sessions, cannot take the pool from the others or
// from the node's own local clients; they end with their session's lease;
// and a wait of any 32-bit length is honoured, not ended at once.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "cluster/cluster_util.h"
#include "control/tls/tls_context.h"
#include "quiver/store/object_id.h"
#include "quiver_rpc/store.pb.h"
#include "store/id_directory.h"

namespace quiver {
namespace {

using control::PeerRole;
using control::rpc::Method;
using testing::ClusterSpec;
using testing::Eventually;
using testing::RawSession;
using testing::StartCluster;

// The waiting calls node `node`'s daemon reports (-1 if it does not answer).
int64_t Waiting(RawSession* probe, uint32_t node) {
  wire::StatusRequest req;
  wire::StatusReply rep;
  if (!probe->Call(Method::kStatus, req, &rep).ok()) return -1;
  for (const auto& n : rep.nodes()) {
    if (n.node() == node) return n.waiting_calls();
  }
  return -1;
}

std::unique_ptr<RawSession> LocalProbe(const control::LocalCluster& cluster) {
  auto probe = RawSession::Open(cluster, 0, PeerRole::kClient, 0, /*unix_socket=*/true);
  EXPECT_NE(probe, nullptr);
  if (probe == nullptr) return nullptr;
  EXPECT_TRUE(Eventually([&] {
    wire::StatusRequest req;
    wire::StatusReply rep;
    if (!probe->Call(Method::kStatus, req, &rep).ok()) return false;
    for (const auto& n : rep.nodes()) {
      if (!n.online()) return false;
    }
    return true;
  }));
  return probe;
}

// Sends `n` barrier waits that never complete; returns their call ids.
std::vector<uint64_t> ParkBarriers(RawSession* s, int n, uint32_t timeout_ms) {
  wire::SyncWaitRequest never;
  never.set_flags(1ULL << 62);
  never.set_mask(1ULL << 62);
  never.set_timeout_ms(timeout_ms);
  std::vector<uint64_t> ids;
  for (int i = 0; i < n; ++i) {
    auto id = s->channel()->Send(control::rpc::MethodByte(Method::kSyncWait),
                                 never.SerializeAsString());
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    if (id.ok()) ids.push_back(*id);
  }
  return ids;
}

// How many of `ids` (from index `from`) were refused as over a share.
int Refused(RawSession* s, const std::vector<uint64_t>& ids, size_t from = 0) {
  int capped = 0;
  for (size_t i = from; i < ids.size(); ++i) {
    auto r = s->channel()->Wait(ids[i], 30000);
    capped += r.status().code() == StatusCode::kCapacityError;
  }
  return capped;
}

// 2,048 calls waiting at once from eight sessions (four of node 1 over TLS,
// four local ones) cost entries, not threads; each session's share (a
// sixteenth of the pool) and each node's (a quarter) hold; the daemon keeps
// serving; the calls go with their connections.
TEST(AttackWaitingTest, WaitingCallsHoldNoThread) {
  ClusterSpec spec;
  spec.nodes = 2;
  spec.limits.max_waiting_calls = 4096;
  auto cluster = StartCluster(spec);
  ASSERT_NE(cluster, nullptr);
  const pid_t daemon = cluster->pid(0);
  auto probe = LocalProbe(*cluster);
  ASSERT_NE(probe, nullptr);
  const int before = testing::ThreadCount(daemon);
  ASSERT_GT(before, 0);
  std::vector<std::unique_ptr<RawSession>> sessions;
  for (int i = 0; i < 8; ++i) {
    sessions.push_back(RawSession::Open(*cluster, 0, PeerRole::kClient, i < 4 ? 1 : 0,
                                        /*unix_socket=*/i >= 4));
    ASSERT_NE(sessions.back(), nullptr);
  }
  for (auto& s : sessions) {
    auto ids = ParkBarriers(s.get(), 260, 120000);
    EXPECT_EQ(Refused(s.get(), ids, 256), 4) << "beyond one session's share of 256";
  }
  EXPECT_EQ(Waiting(probe.get(), 0), 2048);
  EXPECT_EQ(testing::ThreadCount(daemon), before) << "waiting calls made threads";
  // Node 1's sessions hold its quarter: a fifth session of node 1 is refused,
  // the local probe is not.
  auto fifth = RawSession::Open(*cluster, 0, PeerRole::kClient, 1);
  ASSERT_NE(fifth, nullptr);
  EXPECT_EQ(Refused(fifth.get(), ParkBarriers(fifth.get(), 1, 120000)), 1);
  wire::PingRequest ping;
  EXPECT_TRUE(probe->Call(Method::kPing, ping).ok());
  sessions.clear();
  EXPECT_TRUE(Eventually([&] { return Waiting(probe.get(), 0) == 0; }));
}

// One session parks 4,096 look-ups that wait 2^32-1 ms (the most a wait
// may say): 256 of them wait, the rest are refused; other sessions of its
// node, another node's client and a local client still park and are
// answered; after 2 s its calls still wait (the long wait is honoured, not
// ended at once); then its session, which sends nothing, outlives its lease
// no longer, and its calls go with it.
TEST(AttackWaitingTest, OneSessionCannotTakeEveryWaitingCall) {
  ClusterSpec spec;
  spec.nodes = 3;
  spec.limits.session_lease_ms = 6000;
  auto cluster = StartCluster(spec);
  ASSERT_NE(cluster, nullptr);
  auto probe = LocalProbe(*cluster);
  ASSERT_NE(probe, nullptr);
  auto flooder = RawSession::Open(*cluster, 0, PeerRole::kClient, 1);
  ASSERT_NE(flooder, nullptr);
  const auto started = std::chrono::steady_clock::now();
  wire::LookupRequest look;
  look.set_name("never-published");
  look.set_wait_ms(0xFFFFFFFFu);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 4096; ++i) {
    auto id = flooder->channel()->Send(control::rpc::MethodByte(Method::kLookup),
                                       look.SerializeAsString());
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    ids.push_back(*id);
  }
  EXPECT_EQ(Refused(flooder.get(), ids, 256), 4096 - 256);
  EXPECT_EQ(Waiting(probe.get(), 0), 256);

  // Everyone else is still served: a short wait parks and ends on time.
  wire::LookupRequest brief;
  brief.set_name("never-published");
  brief.set_wait_ms(200);
  for (auto [as_node, unix_socket] :
       {std::pair<uint32_t, bool>{1, false}, {2, false}, {0, true}}) {
    auto other = RawSession::Open(*cluster, 0, PeerRole::kClient, as_node, unix_socket);
    ASSERT_NE(other, nullptr);
    wire::LookupReply rep;
    Status st = other->Call(Method::kLookup, brief, &rep);
    EXPECT_TRUE(st.IsNotFound())
        << "a client of node " << as_node << ": " << st.ToString();
    EXPECT_NE(st.message().find("waited 200 ms"), std::string::npos) << st.ToString();
  }

  // The long waits are still parked well after they began...
  while (std::chrono::steady_clock::now() - started < std::chrono::seconds(2)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(Waiting(probe.get(), 0), 256);
  // ...until the silent session's lease ends, and they with it.
  EXPECT_TRUE(Eventually([&] { return Waiting(probe.get(), 0) == 0; }, 15000));
}

// The object store's waiting calls (look-ups of objects not created yet, at
// their directory node, and event polls) are entries too: a flood of them
// costs no thread, the excess over the session's share is refused, the
// daemon keeps serving, and a Create wakes the look-ups waiting for it.
TEST(AttackWaitingTest, AFloodOfWaitingStoreCallsHoldsNoThread) {
  ClusterSpec spec;
  spec.nodes = 2;
  spec.limits.max_waiting_calls = 1600;  // a session's share: 100
  auto cluster = StartCluster(spec);
  ASSERT_NE(cluster, nullptr);
  const pid_t daemon = cluster->pid(0);
  auto probe = LocalProbe(*cluster);
  ASSERT_NE(probe, nullptr);
  const int before = testing::ThreadCount(daemon);
  auto waiter = RawSession::Open(*cluster, 0, PeerRole::kClient, 1);
  ASSERT_NE(waiter, nullptr);
  store::ObjectId x;
  for (int i = 0; x.nil(); ++i) {
    const auto id = store::ObjectId::FromName("awaited-" + std::to_string(i));
    if (store::DirectoryNodeOf(id, cluster->config()) == 0) x = id;
  }
  wire::StoreLocateRequest get;
  get.add_ids(x.Binary());
  get.set_timeout_ms(120000);
  wire::StoreEventsRequest events;
  events.set_after(1000000);
  events.set_wait_ms(120000);
  std::vector<uint64_t> gets, polls;
  for (int i = 0; i < 1100; ++i) {
    const bool is_get = i % 2 == 0;
    auto id = waiter->channel()->Send(
        control::rpc::MethodByte(is_get ? Method::kStoreLocate : Method::kStoreEvents),
        is_get ? get.SerializeAsString() : events.SerializeAsString());
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    (is_get ? gets : polls).push_back(*id);
  }
  ASSERT_TRUE(Eventually([&] { return Waiting(probe.get(), 0) == 100; }));
  EXPECT_EQ(testing::ThreadCount(daemon), before) << "waiting calls made threads";
  wire::PingRequest ping;
  EXPECT_TRUE(probe->Call(Method::kPing, ping).ok());
  // The object appears: every look-up that was let wait finds its home.
  wire::StoreCreateRequest create;
  create.set_id(x.Binary());
  create.set_data_size(3);
  wire::StoreCreateReply made;
  ASSERT_TRUE(probe->Call(Method::kStoreCreate, create, &made).ok());
  wire::StoreIdsRequest seal;
  seal.add_ids(x.Binary());
  ASSERT_TRUE(probe->Call(Method::kStoreSeal, seal).ok());
  int found = 0, capped = 0;
  for (uint64_t id : gets) {
    auto r = waiter->channel()->Wait(id, 30000);
    wire::StoreLocateReply rep;
    if (r.ok() && rep.ParseFromString(*r) && rep.home_plus_one_size() == 1 &&
        rep.home_plus_one(0) == 1) {
      ++found;
    }
    capped += r.status().code() == StatusCode::kCapacityError;
  }
  EXPECT_GT(found, 0);
  EXPECT_EQ(found + capped, static_cast<int>(gets.size()));
  // The event polls still wait; their connection goes, and so do they.
  waiter.reset();
  EXPECT_TRUE(Eventually([&] { return Waiting(probe.get(), 0) == 0; }));
}

}  // namespace
}  // namespace quiver
