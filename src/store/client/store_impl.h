// What an ObjectStore keeps (include/quiver/store.h): the client's
// sessions (its Core), the look-up cache of homes, the objects it is
// creating and the Get references it holds. Internal to the store layer.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "control/client/core.h"
#include "control/rpc/methods.h"
#include "quiver/memory/prefault.h"
#include "quiver/store.h"
#include "store/client/pin_cache.h"

namespace google::protobuf {
class MessageLite;
}
namespace quiver::wire {
class StoreStatusReply;
}

namespace quiver::store {

// The pin one Get took at one home, released (queued, never blocking) when
// the last buffer and reference using it are gone.
struct PinRef {
  std::shared_ptr<control::client::Core> core;
  std::shared_ptr<control::client::HeldPin> pin;
  ~PinRef() { core->QueueRelease(pin); }
};

struct ObjectStore::Impl {
  std::shared_ptr<control::client::Core> core;
  uint32_t self = 0;
  int call_timeout_ms = 60000;
  // Every node's region is on this host's coherent shared memory: nothing
  // to flush (protocol steps 2 and 4 are no-ops).
  bool coherent = true;

  std::mutex mu;
  std::unordered_map<ObjectId, uint32_t, ObjectIdHash> homes;  // look-up cache
  struct Creating {
    uint32_t home = 0;
    uint64_t address = 0, size = 0;
  };
  std::unordered_map<ObjectId, Creating, ObjectIdHash> creating;
  // One entry per Get not yet released.
  std::unordered_multimap<ObjectId, std::shared_ptr<PinRef>, ObjectIdHash> held;
  std::unique_ptr<PinCache> cache;  // pins kept for repeated Gets
  // Maps region memory in ahead of Creates (StoreOptions::prefault_ahead);
  // null when off. Declared after `core`, so it stops before the regions go.
  std::unique_ptr<memory::Prefaulter> prefaulter;
  uint64_t prefault_ahead = 0;
  // Drops stale cache entries every 100 ms (pin_cache.h), until stopped.
  std::thread sweeper;
  std::condition_variable sweep_cv;
  bool stop_sweeping = false;  // under mu
  void Sweep();
  ~Impl();

  const memory::ClusterConfig& config() const { return core->config(); }
  std::vector<uint32_t> nodes() const;
  // The link to `node`'s daemon (Invalid if there is no such node).
  Result<control::client::Link*> Link(uint32_t node);
  // One call to `node`'s daemon.
  Status Call(uint32_t node, control::rpc::Method method,
              const google::protobuf::MessageLite& request,
              google::protobuf::MessageLite* reply, int64_t extra_ms = 0);
  void Forget(const ObjectId& id);  // drops the cached home
  // `home`'s store epoch (memory::kStoreEpochOffset), read from its region.
  uint64_t StoreEpoch(uint32_t home) const;
};

// The public struct of a daemon's store status.
StoreStats StoreStatsFromWire(const wire::StoreStatusReply& reply);

}  // namespace quiver::store
