// What the object-store tests share: a four-node cluster, node 0's client
// in the test process and an actor process per other node, and the byte
// pattern objects are filled with and checked against.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cluster_util.h"
#include "quiver/store.h"

namespace quiver::testing::store_test {

constexpr int kNodes = 4;

inline ClusterSpec Spec(uint64_t region = 64ULL << 20) {
  ClusterSpec s;
  s.nodes = kNodes;
  s.region_size = region;
  s.prefix = "store";
  return s;
}

// A process may be a client of one node only: node 0's client is this
// process; nodes 1..3 have an actor process each, driven by store commands
// (tests/cluster/actor/cluster_actor.cc).
struct Nodes {
  std::unique_ptr<Client> client;
  std::unique_ptr<store::ObjectStore> store;
  std::vector<Child> actors;  // [n - 1] is node n's
  bool ok() const { return store != nullptr && actors.size() == kNodes - 1; }
  // The actor of node n runs `command`; returns its answer ("ok ...",
  // "err Code: ...").
  std::string Do(uint32_t n, const std::string& command) {
    return ActorDo(actors[n - 1], command);
  }
};

inline Nodes Connect(const control::LocalCluster& cluster) {
  Nodes n;
  n.client = ConnectOnline(cluster, 0);
  if (n.client == nullptr) return {};
  n.store = std::make_unique<store::ObjectStore>(*n.client);
  for (uint32_t node = 1; node < kNodes; ++node) {
    n.actors.push_back(StartActor(cluster, node, {}));
    if (n.actors.back().WaitForLine("ready", 30000).empty()) {
      ADD_FAILURE() << "actor of node " << node << ": " << n.actors.back().output();
      return {};
    }
  }
  return n;
}

inline bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// Byte i of an object of `seed`: a pattern readers check (the actor's too).
inline uint8_t Pattern(uint64_t i, uint8_t seed) {
  return static_cast<uint8_t>(i * 31 + seed);
}

inline void Fill(Buffer* b, uint8_t seed) {
  for (int64_t i = 0; i < b->size(); ++i) b->mutable_data()[i] = Pattern(i, seed);
}

inline bool Holds(const Buffer& b, uint8_t seed) {
  for (int64_t i = 0; i < b.size(); ++i) {
    if (b.data()[i] != Pattern(i, seed)) return false;
  }
  return true;
}

}  // namespace quiver::testing::store_test
