// The object store on real daemons, four nodes, clients as threads of this
// process and as processes it kills (docs/store.md).
#include "quiver/store.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cstring>
#include <set>
#include <thread>

#include "cluster/cluster_util.h"
#include "control/client/core.h"
#include "control/tls/tls_context.h"
#include "quiver/columnar/builder.h"
#include "quiver_rpc/store.pb.h"
#include "store/id_directory.h"
#include "store/store_record.h"
#include "store_util.h"

namespace quiver {
namespace testing {
struct ClientPeer {
  static control::client::Core& core(Client& c) { return *c.core_; }
};
}  // namespace testing
namespace {

using store::CreateOptions;
using store::ObjectBuffer;
using store::ObjectId;
using store::ObjectStore;
using testing::Child;
using testing::ClusterSpec;
using testing::ConnectOnline;
using testing::Eventually;
using testing::StartCluster;
using testing::UsedBytes;
using namespace testing::store_test;  // NOLINT(build/namespaces)

TEST(StoreTest, PlasmaSemanticsAcrossFourNodes) {
  auto cluster = StartCluster(Spec());
  ASSERT_NE(cluster, nullptr);
  Nodes n = Connect(*cluster);
  ASSERT_TRUE(n.ok());
  ObjectStore& s0 = *n.store;
  const ObjectId a = ObjectId::FromName("a"), b = ObjectId::FromName("b");

  // Get blocks until the object is created (elsewhere) and sealed.
  std::atomic<bool> got_b{false};
  std::thread waiter([&] {
    auto r = s0.Get({b}, 20000);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE((*r)[0].status.ok()) << (*r)[0].status.ToString();
    EXPECT_EQ((*r)[0].data->view(), "bee");
    EXPECT_EQ((*r)[0].metadata->view(), "m");
    EXPECT_EQ((*r)[0].home, 3u);
    got_b = true;
    EXPECT_TRUE(s0.Release(b).ok());
  });
  ASSERT_EQ(n.Do(1, "create a 1048576 7"), "ok");
  // Not sealed: Get honours its timeout and says why.
  auto early = s0.Get({a}, 200);
  ASSERT_TRUE(early.ok());
  EXPECT_TRUE((*early)[0].status.IsDeadlineExceeded()) << (*early)[0].status.ToString();
  EXPECT_TRUE(StartsWith(n.Do(2, "get a 100 7"), "err DeadlineExceeded"));
  EXPECT_EQ(n.Do(3, "contains a"), "ok false");
  // Duplicate ids are refused everywhere, wherever they would be placed.
  EXPECT_TRUE(s0.Create(a, 10).status().IsAlreadyExists());
  for (uint32_t node = 1; node < kNodes; ++node) {
    CreateOptions there;
    there.node = node;
    EXPECT_TRUE(s0.Create(a, 10, {}, there).status().IsAlreadyExists()) << node;
    for (uint32_t at = 0; at < kNodes; ++at) {
      EXPECT_TRUE(StartsWith(n.Do(node, "create a 10 0 " + std::to_string(at)),
                             "err Already exists"))
          << node << " at " << at;
    }
  }
  // Only the creator seals.
  EXPECT_TRUE(s0.Seal(a).IsNotFound());
  EXPECT_TRUE(StartsWith(n.Do(2, "seal a"), "err"));
  ASSERT_EQ(n.Do(1, "seal a"), "ok");
  EXPECT_FALSE(got_b.load());
  ASSERT_EQ(n.Do(3, "put b bee"), "ok");
  waiter.join();
  EXPECT_TRUE(got_b.load());

  for (uint32_t node = 1; node < kNodes; ++node) {
    EXPECT_EQ(n.Do(node, "contains a"), "ok true");
    EXPECT_EQ(n.Do(node, "get a 0 7"), "ok 1 intact") << node;
    EXPECT_EQ(n.Do(node, "release a"), "ok");
    EXPECT_TRUE(StartsWith(n.Do(node, "release a"), "err Not found"));
  }
  auto r = s0.Get({a, b, ObjectId::FromName("never")}, 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE((*r)[0].status.ok()) << (*r)[0].status.ToString();
  EXPECT_EQ((*r)[0].home, 1u);
  EXPECT_TRUE(Holds(*(*r)[0].data, 7));
  EXPECT_EQ((*r)[0].metadata->view(), "m");
  EXPECT_TRUE((*r)[1].status.ok());
  EXPECT_TRUE((*r)[2].status.IsNotFound()) << (*r)[2].status.ToString();
  ASSERT_TRUE(s0.Release(a).ok());
  ASSERT_TRUE(s0.Release(b).ok());
  r->clear();

  // Abort: the id and its memory come back at once.
  const ObjectId c = ObjectId::FromName("c");
  const int64_t base2 = UsedBytes(*cluster, 2);
  ASSERT_EQ(n.Do(2, "create c 4194304 1"), "ok");
  EXPECT_GE(UsedBytes(*cluster, 2), base2 + (4 << 20));
  EXPECT_TRUE(StartsWith(n.Do(1, "abort c"), "err Not found"));  // not its creator
  ASSERT_EQ(n.Do(2, "abort c"), "ok");
  EXPECT_EQ(UsedBytes(*cluster, 2), base2);
  EXPECT_FALSE(*s0.Contains(c));
  ASSERT_TRUE(s0.CreateAndSeal(c, "again").ok());

  // Delete of a pinned object: gone for look-ups at once, the reader keeps
  // its bytes, the memory returns when it lets go.
  const int64_t base1 = UsedBytes(*cluster, 1);
  ASSERT_EQ(n.Do(3, "get a 0 7"), "ok 1 intact");
  ASSERT_TRUE(s0.Delete({a}).ok());
  EXPECT_EQ(n.Do(2, "contains a"), "ok false");
  EXPECT_TRUE(StartsWith(n.Do(2, "get a 0 7"), "err Not found"));
  EXPECT_TRUE(StartsWith(n.Do(1, "delete a"), "err Not found"));
  // Still held by node 3's reader (only its record went).
  EXPECT_GT(UsedBytes(*cluster, 1), base1 - (1 << 20));
  ASSERT_EQ(n.Do(3, "release a"), "ok");
  EXPECT_TRUE(Eventually([&] { return UsedBytes(*cluster, 1) <= base1 - (1 << 20); }))
      << UsedBytes(*cluster, 1) << " vs " << base1;
  // The id is free again, anywhere.
  ASSERT_EQ(n.Do(2, "put a second-life"), "ok");
  auto again = s0.Get({a});
  ASSERT_TRUE(again.ok() && (*again)[0].status.ok());
  EXPECT_EQ((*again)[0].home, 2u);  // the stale cached home was corrected
  EXPECT_EQ((*again)[0].data->view(), "second-life");
  ASSERT_TRUE(s0.Release(a).ok());

  // List: every node's objects, with their homes and states.
  auto listed = s0.List();
  ASSERT_TRUE(listed.ok());
  std::map<ObjectId, uint32_t> homes;
  for (const auto& o : *listed) homes[o.id] = o.home;
  EXPECT_EQ(homes.size(), 3u);
  EXPECT_EQ(homes[a], 2u);
  EXPECT_EQ(homes[b], 3u);
  EXPECT_EQ(homes[c], 0u);
  auto stats = s0.Stats(1);
  ASSERT_TRUE(stats.ok());
  EXPECT_GE(stats->hits, 5u);
  EXPECT_EQ(stats->deletes, 1u);
}

TEST(StoreTest, RepeatedGetsUseCachedPinsUntilTheHomeChanges) {
  auto cluster = StartCluster(Spec());
  ASSERT_NE(cluster, nullptr);
  Nodes n = Connect(*cluster);
  ASSERT_TRUE(n.ok());
  ObjectStore& s0 = *n.store;
  CreateOptions at1;
  at1.node = 1;
  const ObjectId x = ObjectId::FromName("x"), y = ObjectId::FromName("y");
  ASSERT_TRUE(s0.CreateAndSeal(x, "ex", "m", at1).ok());
  ASSERT_TRUE(s0.CreateAndSeal(y, "why", "m", at1).ok());
  const int64_t base1 = UsedBytes(*cluster, 1);
  auto get = [&](const ObjectId& id) {
    auto r = s0.Get({id});
    EXPECT_TRUE(r.ok());
    Status st = r.ok() ? (*r)[0].status : r.status();
    if (st.ok()) {
      EXPECT_TRUE(s0.Release(id).ok());
    }
    return st;
  };
  ASSERT_TRUE(get(x).ok());
  ASSERT_TRUE(get(y).ok());
  const uint64_t hits = s0.Stats(1)->hits;
  // Again and again: no call reaches the home.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(get(x).ok());
  EXPECT_EQ(s0.Stats(1)->hits, hits);
  // Another node deletes x: the next Get here misses at once, and the pin
  // this client kept goes, so the memory comes back.
  ASSERT_EQ(n.Do(2, "delete x"), "ok");
  EXPECT_TRUE(get(x).IsNotFound());
  EXPECT_TRUE(get(y).ok());  // asked the home again, and found
  EXPECT_EQ(s0.Stats(1)->hits, hits + 1);
  ASSERT_TRUE(Eventually([&] { return UsedBytes(*cluster, 1) < base1; }))
      << UsedBytes(*cluster, 1) << " vs " << base1;
  // Without the cache every Get is a call.
  store::StoreOptions none;
  none.pin_cache_bytes = 0;
  ObjectStore plain(*n.client, none);
  for (int i = 0; i < 5; ++i) {
    auto r = plain.Get({y});
    ASSERT_TRUE(r.ok() && (*r)[0].status.ok());
    ASSERT_TRUE(plain.Release(y).ok());
  }
  EXPECT_EQ(s0.Stats(1)->hits, hits + 6);
  // A long-lived client tracks the pins it holds, not every pin it ever
  // took (the list was once only ever appended to: memory and each
  // background round grew with the number of Gets made).
  for (int i = 0; i < 5000; ++i) {
    auto r = plain.Get({y});
    ASSERT_TRUE(r.ok() && (*r)[0].status.ok());
    ASSERT_TRUE(plain.Release(y).ok());
    if (i % 500 == 499) {
      ASSERT_TRUE(n.client->Drain().ok());
    }
  }
  EXPECT_LE(testing::ClientPeer::core(*n.client).tracked_pins(), 1001u);
}

TEST(StoreTest, SubscribersSeeEverySealAndDeleteOnceInOrderAndResume) {
  auto cluster = StartCluster(Spec());
  ASSERT_NE(cluster, nullptr);
  Nodes n = Connect(*cluster);
  ASSERT_TRUE(n.ok());
  auto sub = n.store->Subscribe();
  ASSERT_TRUE(sub.ok());
  std::vector<ObjectId> ids;
  for (int i = 0; i < 40; ++i) {
    const std::string name = "sub-" + std::to_string(i);
    ids.push_back(ObjectId::FromName(name));
    if (i % kNodes == 0) {
      ASSERT_TRUE(n.store->CreateAndSeal(ids.back(), "x").ok());
    } else {
      ASSERT_EQ(n.Do(i % kNodes, "put " + name + " x"), "ok");
    }
  }
  ASSERT_EQ(n.Do(1, "delete sub-0"), "ok");
  ASSERT_EQ(n.Do(2, "delete sub-5"), "ok");
  ASSERT_TRUE(n.store->Delete({ids[10]}).ok());
  std::vector<store::ObjectEvent> seen;
  ASSERT_TRUE(Eventually([&] {
    auto more = (*sub)->Next(200);
    if (!more.ok()) return false;
    seen.insert(seen.end(), more->begin(), more->end());
    return seen.size() >= 43;
  }));
  EXPECT_EQ(seen.size(), 43u);
  std::map<uint32_t, uint64_t> last;
  std::set<std::pair<ObjectId, int>> once;
  for (const auto& e : seen) {
    EXPECT_GT(e.seq, last[e.home]) << "home " << e.home;  // in order per home
    last[e.home] = e.seq;
    EXPECT_TRUE(once.insert({e.id, static_cast<int>(e.kind)}).second) << e.id.Hex();
  }
  for (int i = 0; i < 40; ++i) EXPECT_EQ(once.count({ids[i], 1}), 1u) << i;
  for (int i : {0, 5, 10}) EXPECT_EQ(once.count({ids[i], 2}), 1u) << i;
  // Resume from a saved cursor: only what came after.
  const std::string saved = (*sub)->cursor().ToString();
  sub->reset();
  ASSERT_EQ(n.Do(3, "delete sub-7"), "ok");
  auto cursor = store::EventCursor::FromString(saved);
  ASSERT_TRUE(cursor.ok()) << saved;
  auto resumed = n.store->Subscribe(*cursor);
  ASSERT_TRUE(resumed.ok());
  std::vector<store::ObjectEvent> later;
  ASSERT_TRUE(Eventually([&] {
    auto more = (*resumed)->Next(200);
    if (more.ok()) later.insert(later.end(), more->begin(), more->end());
    return !later.empty();
  }));
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].id, ids[7]);
  EXPECT_EQ(later[0].kind, store::ObjectEvent::Kind::kDeleted);
  EXPECT_FALSE(store::EventCursor::FromString("1:x").ok());
}

TEST(StoreTest, EvictionNeverTakesAPinnedObjectFromAReader) {
  auto cluster = StartCluster(Spec(32ULL << 20));
  ASSERT_NE(cluster, nullptr);
  Nodes n = Connect(*cluster);
  ASSERT_TRUE(n.ok());
  ObjectStore& s0 = *n.store;
  const ObjectId pinned = ObjectId::FromName("pinned");
  auto buf = s0.Create(pinned, 4 << 20);
  ASSERT_TRUE(buf.ok());
  Fill(buf->get(), 42);
  buf->reset();
  ASSERT_TRUE(s0.Seal(pinned).ok());
  // Pinned by a reader here (checking its bytes all along) and by one on
  // node 2.
  ASSERT_EQ(n.Do(1, "create remote-pinned 2097152 5 0"), "ok");
  ASSERT_EQ(n.Do(1, "seal remote-pinned"), "ok");
  ASSERT_EQ(n.Do(2, "get remote-pinned 0 5"), "ok 0 intact");
  auto held = s0.Get({pinned});
  ASSERT_TRUE(held.ok() && (*held)[0].status.ok());
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, reads{0};
  std::thread reader([&] {
    while (!stop) {
      if (!Holds(*(*held)[0].data, 42)) ++bad;
      ++reads;
    }
  });
  // Many times the region through node 0: older objects must go.
  for (int i = 0; i < 30; ++i) {
    const std::string name = "fill-" + std::to_string(i);
    if (i % 2 == 0) {
      auto b = s0.Create(ObjectId::FromName(name), 3 << 20);
      ASSERT_TRUE(b.ok()) << i << ": " << b.status().ToString();
      Fill(b->get(), static_cast<uint8_t>(i));
      ASSERT_TRUE(s0.Seal(ObjectId::FromName(name)).ok());
    } else {
      ASSERT_EQ(n.Do(3, "create " + name + " 3145728 " + std::to_string(i) + " 0"), "ok");
      ASSERT_EQ(n.Do(3, "seal " + name), "ok");
    }
  }
  stop = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0);
  auto stats = s0.Stats(0);
  ASSERT_TRUE(stats.ok());
  EXPECT_GT(stats->evictions, 0u);
  EXPECT_TRUE(*s0.Contains(pinned));
  EXPECT_EQ(n.Do(3, "contains remote-pinned"), "ok true");
  // Evict on request never takes them either.
  ASSERT_TRUE(s0.Evict(1ULL << 40, 0).ok());
  EXPECT_TRUE(*s0.Contains(pinned));
  EXPECT_TRUE(Holds(*(*held)[0].data, 42));
  EXPECT_EQ(n.Do(2, "get remote-pinned 0 5"), "ok 0 intact");
  // Once released they are evictable like the rest.
  ASSERT_TRUE(s0.Release(pinned).ok());
  held->clear();
  ASSERT_EQ(n.Do(2, "release remote-pinned"), "ok");
  ASSERT_EQ(n.Do(2, "release remote-pinned"), "ok");
  ASSERT_TRUE(n.client->Drain().ok());
  ASSERT_TRUE(Eventually([&] {
    (void)s0.Evict(1ULL << 40, 0);
    return !*s0.Contains(pinned) && n.Do(1, "contains remote-pinned") == "ok false";
  }));
}

TEST(StoreTest, ACreatorKilledMidCreateLeavesNothing) {
  auto cluster = StartCluster(Spec());
  ASSERT_NE(cluster, nullptr);
  auto client = ConnectOnline(*cluster, 0);
  ASSERT_NE(client, nullptr);
  ObjectStore s0(*client);
  int64_t base[kNodes];
  for (uint32_t n = 0; n < kNodes; ++n) base[n] = UsedBytes(*cluster, n);
  Child creator = testing::StartActor(
      *cluster, 2,
      {"--store-create", "local:4000000", "--store-create", "remote:8000000:1"});
  ASSERT_FALSE(creator.WaitForLine("ready", 30000).empty()) << creator.output();
  EXPECT_NE(creator.output().find("store-created remote 1"), std::string::npos)
      << creator.output();
  EXPECT_GE(UsedBytes(*cluster, 2), base[2] + 4000000);
  EXPECT_GE(UsedBytes(*cluster, 1), base[1] + 8000000);
  EXPECT_TRUE(s0.Create(ObjectId::FromName("remote"), 1).status().IsAlreadyExists());
  creator.Kill(SIGKILL);
  creator.Finish();
  EXPECT_TRUE(Eventually([&] {
    for (uint32_t n = 0; n < kNodes; ++n) {
      if (UsedBytes(*cluster, n) != base[n]) return false;
    }
    return true;
  }));
  // Nothing of them is left, not even their ids.
  auto listed = s0.List();
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
  EXPECT_TRUE(Eventually(
      [&] { return s0.CreateAndSeal(ObjectId::FromName("remote"), "mine").ok(); }));
  EXPECT_TRUE(s0.CreateAndSeal(ObjectId::FromName("local"), "mine too").ok());
}

TEST(StoreTest, ObjectsOfADeadNodeAreLostNamingItAndComeBackWithIt) {
  auto cluster = StartCluster(Spec());
  ASSERT_NE(cluster, nullptr);
  Nodes n = Connect(*cluster);
  ASSERT_TRUE(n.ok());
  CreateOptions at2;
  at2.node = 2;
  const ObjectId id = ObjectId::FromName("on-two");
  ASSERT_TRUE(n.store->CreateAndSeal(id, "bytes", {}, at2).ok());
  EXPECT_TRUE(StartsWith(n.Do(3, "get on-two 0 0"), "ok 2"));
  ASSERT_EQ(n.Do(3, "release on-two"), "ok");
  // A big one sealed there, and one still being created when it dies.
  ASSERT_EQ(n.Do(1, "create big-on-two 3000000 17 2"), "ok");
  ASSERT_EQ(n.Do(1, "seal big-on-two"), "ok");
  ASSERT_EQ(n.Do(3, "create unsealed-on-two 2000000 5 2"), "ok");
  const int64_t sealed_usage = UsedBytes(*cluster, 2);
  // One homed on node 1 whose directory node is node 2.
  ObjectId orphan;
  for (int i = 0; orphan.nil(); ++i) {
    const ObjectId id = ObjectId::FromName("orphan-" + std::to_string(i));
    if (store::DirectoryNodeOf(id, n.client->config()) == 2) orphan = id;
  }
  CreateOptions at1;
  at1.node = 1;
  ASSERT_TRUE(n.store->CreateAndSeal(orphan, "still here", {}, at1).ok());
  n.actors[1].Kill(SIGKILL);  // node 2's actor goes with its daemon
  ASSERT_TRUE(cluster->Kill(2, SIGKILL).ok());
  Status why;
  EXPECT_TRUE(Eventually([&] {
    auto r = n.store->Get({id});
    why = r.ok() ? (*r)[0].status : r.status();
    return why.IsObjectLost();
  })) << why.ToString();
  EXPECT_NE(why.message().find("node 2"), std::string::npos) << why.ToString();
  std::string answer;
  for (uint32_t node : {1u, 3u}) {
    EXPECT_TRUE(Eventually([&] {
      answer = n.Do(node, "get on-two 0 0");
      return StartsWith(answer, "err ObjectLost");
    })) << answer;
    EXPECT_NE(answer.find("node 2"), std::string::npos) << answer;
  }
  // Its directory node down, an object homed elsewhere is still found: a
  // store that never saw it asks the homes.
  {
    ObjectStore fresh(*n.client);
    auto r = fresh.Get({orphan});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE((*r)[0].status.ok()) << (*r)[0].status.ToString();
    EXPECT_EQ((*r)[0].data->view(), "still here");
    EXPECT_EQ((*r)[0].home, 1u);
  }

  // Restarted on its region, the node has its sealed objects again, for
  // every node; what was being created is gone, memory and id.
  ASSERT_TRUE(cluster->Restart(2).ok());
  EXPECT_TRUE(Eventually(
      [&] {
        auto r = n.store->Get({id});
        why = r.ok() ? (*r)[0].status : r.status();
        if (!why.ok()) return false;
        EXPECT_EQ((*r)[0].data->view(), "bytes");
        EXPECT_EQ((*r)[0].home, 2u);
        return true;
      },
      30000))
      << why.ToString();
  ASSERT_TRUE(n.store->Release(id).ok());
  for (uint32_t node : {1u, 3u}) {
    EXPECT_TRUE(Eventually(
        [&] {
          answer = n.Do(node, "get big-on-two 0 17");
          return answer == "ok 2 intact";
        },
        30000))
        << node << ": " << answer;
    ASSERT_EQ(n.Do(node, "release big-on-two"), "ok");
  }
  // The ids are still taken, cluster-wide; the unsealed one is free.
  EXPECT_TRUE(n.store->Create(id, 1).status().IsAlreadyExists());
  EXPECT_TRUE(StartsWith(n.Do(1, "create big-on-two 10 0 0"), "err Already exists"));
  EXPECT_TRUE(Eventually(
      [&] {
        return n.store->CreateAndSeal(ObjectId::FromName("unsealed-on-two"), "x").ok();
      },
      30000));
  EXPECT_TRUE(
      Eventually([&] { return UsedBytes(*cluster, 2) <= sealed_usage - 2000000; }, 30000))
      << UsedBytes(*cluster, 2) << " vs " << sealed_usage;
  // Deleting a restored object frees it like any other.
  ASSERT_TRUE(n.store->Delete({ObjectId::FromName("big-on-two")}).ok());
  EXPECT_TRUE(Eventually([&] { return UsedBytes(*cluster, 2) <= sealed_usage - 5000000; },
                         30000));
}

TEST(StoreTest, PlacementBorrowsAnotherNodesMemoryWhenTheLocalRegionIsFull) {
  auto cluster = StartCluster(Spec(32ULL << 20));
  ASSERT_NE(cluster, nullptr);
  auto client = ConnectOnline(*cluster, 0);
  ASSERT_NE(client, nullptr);
  ObjectStore s0(*client);
  std::set<uint32_t> homes;
  std::vector<ObjectBuffer> held;  // pinned: never evicted
  // Node 0 holds four; a client may hold 3/4 of another node's region.
  for (int i = 0; i < 10; ++i) {
    const ObjectId id = ObjectId::FromName("big-" + std::to_string(i));
    auto b = s0.Create(id, 6 << 20);
    ASSERT_TRUE(b.ok()) << i << ": " << b.status().ToString();
    Fill(b->get(), static_cast<uint8_t>(i));
    ASSERT_TRUE(s0.Seal(id).ok());
    auto got = s0.Get({id});
    ASSERT_TRUE(got.ok() && (*got)[0].status.ok());
    homes.insert((*got)[0].home);
    EXPECT_TRUE(Holds(*(*got)[0].data, static_cast<uint8_t>(i)));
    held.push_back((*got)[0]);
  }
  EXPECT_GT(homes.size(), 2u);
  EXPECT_EQ(homes.count(0), 1u);
  // Asking for a node that cannot hold it is OutOfMemory, not moved.
  CreateOptions at0;
  at0.node = 0;
  EXPECT_TRUE(s0.Create(ObjectId::FromName("too-big"), 6 << 20, {}, at0)
                  .status()
                  .IsOutOfMemory());
}

// CreateAndSeal of an object up to kMaxInlineObject bytes sends it with the
// request: its home writes and seals it. Both sides of the limit, on every
// node, read back by other nodes; a request whose contents disagree with
// its sizes, exceed the limit or come without the seal is refused by name
// and leaves nothing behind.
TEST(StoreTest, SmallObjectsAreWrittenAndSealedByTheirHomeInOneRoundTrip) {
  auto cluster = StartCluster(Spec());
  ASSERT_NE(cluster, nullptr);
  Nodes n = Connect(*cluster);
  ASSERT_TRUE(n.ok());
  ObjectStore& s0 = *n.store;
  const uint64_t max = store::kMaxInlineObject;
  const std::vector<uint64_t> sizes = {0, 1, max - 2, max - 1, max, max + 4096};
  std::vector<ObjectId> ids;
  for (uint32_t home = 0; home < kNodes; ++home) {
    for (uint64_t size : sizes) {
      const ObjectId id = ObjectId::FromName("small-" + std::to_string(home) + "-" +
                                             std::to_string(size));
      std::string data(size, '\0');
      for (uint64_t i = 0; i < size; ++i) data[i] = static_cast<char>(Pattern(i, 9));
      CreateOptions at;
      at.node = home;
      ASSERT_TRUE(s0.CreateAndSeal(id, data, "m", at).ok()) << home << " " << size;
      // Sealed at once, and only once.
      EXPECT_TRUE(s0.CreateAndSeal(id, data, "m").IsAlreadyExists()) << size;
      EXPECT_TRUE(s0.Seal(id).IsNotFound()) << size;
      ids.push_back(id);
    }
  }
  auto got = s0.Get(ids, 0);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  for (size_t i = 0; i < ids.size(); ++i) {
    const ObjectBuffer& o = (*got)[i];
    ASSERT_TRUE(o.status.ok()) << i << ": " << o.status.ToString();
    EXPECT_EQ(o.home, i / sizes.size());
    EXPECT_EQ(static_cast<uint64_t>(o.data->size()), sizes[i % sizes.size()]);
    EXPECT_TRUE(Holds(*o.data, 9)) << i;
    EXPECT_EQ(o.metadata->view(), "m");
  }
  for (uint32_t node = 1; node < kNodes; ++node) {
    const uint32_t home = kNodes - node;
    const std::string name =
        "small-" + std::to_string(home) + "-" + std::to_string(max - 1);
    EXPECT_EQ(n.Do(node, "get " + name + " 0 9"),
              "ok " + std::to_string(home) + " intact")
        << node;
  }
  for (const ObjectId& id : ids) ASSERT_TRUE(s0.Release(id).ok());

  // Forged requests, straight to node 1's daemon.
  auto raw = testing::RawSession::Open(*cluster, 1, control::PeerRole::kClient, 1,
                                       /*unix_socket=*/true);
  ASSERT_NE(raw, nullptr);
  const int64_t before = UsedBytes(*cluster, 1);
  auto refused = [&](const wire::StoreCreateRequest& req, const std::string& needle) {
    wire::StoreCreateReply rep;
    Status st = raw->Call(control::rpc::Method::kStoreCreate, req, &rep);
    EXPECT_TRUE(st.IsInvalid()) << st.ToString();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.ToString();
  };
  const ObjectId forged = ObjectId::FromName("forged");
  wire::StoreCreateRequest req;
  req.set_id(forged.Binary());
  req.set_data_size(10);
  req.set_metadata_size(1);
  req.set_seal(true);
  req.set_contents(std::string(10, 'x'));  // one byte short
  refused(req, "10 bytes of contents for 10 bytes of data and 1 of metadata");
  req.set_data_size(max + 1);
  req.set_metadata_size(0);
  req.set_contents(std::string(max + 1, 'x'));
  refused(req, "at most 65536 bytes");
  req.set_seal(false);
  req.set_data_size(3);
  req.set_contents("abc");
  refused(req, "contents are only for CreateAndSeal");
  EXPECT_FALSE(*s0.Contains(forged));
  EXPECT_EQ(UsedBytes(*cluster, 1), before);
  // The id was never taken: a proper Create of it works.
  EXPECT_TRUE(s0.CreateAndSeal(forged, "ok").ok());

  // Forged Gets: the packed ids are checked whole before anything is pinned.
  std::vector<ObjectId> at1;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i / sizes.size() == 1) at1.push_back(ids[i]);
  }
  ASSERT_GE(at1.size(), 2u);
  auto get_refused = [&](const std::string& packed, const std::string& needle) {
    wire::StoreGetRequest get;
    get.set_ids(packed);
    wire::StoreGetReply rep;
    Status st = raw->Call(control::rpc::Method::kStoreGet, get, &rep);
    EXPECT_TRUE(st.IsInvalid()) << st.ToString();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.ToString();
  };
  const std::string two = at1[0].Binary() + at1[1].Binary();
  get_refused(two + "x", "41 bytes is not a multiple of 20");
  get_refused(at1[0].Binary() + std::string(20, '\0'), "object id #1 is nil");
  // A well-formed one: the objects come back in the order asked, with the
  // ids asked, pinned under one pin that the same session releases.
  wire::StoreGetRequest get;
  get.set_ids(at1[1].Binary() + at1[0].Binary() + ObjectId::FromName("nowhere").Binary());
  wire::StoreGetReply rep;
  ASSERT_TRUE(raw->Call(control::rpc::Method::kStoreGet, get, &rep).ok());
  auto found = store::DecodeFoundRecords(rep.found());
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ((*found)[0].id, at1[1]);
  EXPECT_EQ((*found)[1].id, at1[0]);
  ASSERT_EQ(rep.missing_size(), 1);
  EXPECT_EQ(rep.pin().size(), 16u);
  wire::StoreReleaseRequest release;
  release.set_pin(rep.pin());
  EXPECT_TRUE(raw->Call(control::rpc::Method::kStoreRelease, release).ok());
  EXPECT_FALSE(raw->Call(control::rpc::Method::kStoreRelease, release).ok());
}

TEST(StoreTest, TablesRoundTripZeroCopyOnTheNonCoherentEmulator) {
  ClusterSpec spec = Spec();
  spec.backing = memory::BackingKind::kIncoherent;
  auto cluster = StartCluster(spec);
  ASSERT_NE(cluster, nullptr);
  Nodes n = Connect(*cluster);
  ASSERT_TRUE(n.ok());
  Int64Builder ints;
  StringBuilder strings;
  int64_t sum = 0;
  for (int64_t i = 0; i < 100000; ++i) {
    ASSERT_TRUE(ints.Append(i * 3).ok());
    sum += i * 3;
    ASSERT_TRUE(strings.Append("row " + std::to_string(i)).ok());
  }
  auto batch = RecordBatch::FromArrays({"i", "s"}, {*ints.Finish(), *strings.Finish()});
  ASSERT_TRUE(batch.ok());
  auto table = Table::FromRecordBatches({*batch});
  ASSERT_TRUE(table.ok());
  store::TableOptions at1;
  at1.node = 1;
  auto layout = n.store->PutTable(ObjectId::FromName("table"), **table, at1);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_TRUE(layout->parts.empty());
  auto back = n.store->GetTable(ObjectId::FromName("table"), 1000);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE((*back)->Equals(**table));
  // Zero-copy: the columns point into node 1's region.
  auto col = (*back)->column(0)->chunk(0);
  EXPECT_NE(n.client->cluster()->RegionOf(col->data()->buffers[1]->data()), nullptr);
  for (uint32_t node = 1; node < kNodes; ++node) {
    EXPECT_EQ(n.Do(node, "table table"), "ok rows=100000 sum=" + std::to_string(sum));
  }
  // Raw bytes written on one node into another's memory read the same on
  // every node.
  ASSERT_EQ(n.Do(2, "create raw 3145728 9 3"), "ok");
  ASSERT_EQ(n.Do(2, "seal raw"), "ok");
  auto r = n.store->Get({ObjectId::FromName("raw")});
  ASSERT_TRUE(r.ok() && (*r)[0].status.ok());
  EXPECT_TRUE(Holds(*(*r)[0].data, 9));
  for (uint32_t node = 1; node < kNodes; ++node) {
    EXPECT_EQ(n.Do(node, "get raw 0 9"), "ok 3 intact") << node;
  }
  EXPECT_TRUE(StartsWith(n.Do(1, "table raw"), "err Invalid"));
}

}  // namespace
}  // namespace quiver
