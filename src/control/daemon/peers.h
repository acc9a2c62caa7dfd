// Peers: this daemon's links to every other node's daemon, and what it
// knows of them. One thread per peer keeps the TLS link open (reconnecting
// with a back-off), sends a heartbeat every heartbeat_ms carrying this
// node's generation, directory version and state word, and declares the
// peer offline after `offline_after` heartbeats in a row fail. A heartbeat
// reply whose (generation, version) differs from what this node last took
// from that peer pulls the peer's chunk list (ReplicaSync): a restarted
// peer's tables come back, missed pushes are repaired.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "control/rpc/engine.h"
#include "control/rpc/methods.h"
#include "quiver/memory/cluster_config.h"

namespace quiver::control {
class Directory;
class TlsContext;
}  // namespace quiver::control

namespace quiver::control::daemon {

struct PeersOptions {
  int heartbeat_ms = 100;
  int offline_after = 3;       // failed heartbeats in a row
  int call_timeout_ms = 5000;  // fan-out calls
};

class Peers {
 public:
  // What this node tells its peers in every heartbeat.
  struct Self {
    std::function<uint64_t()> generation, version, flags;
  };
  // Called (no lock held) when a peer comes online or goes offline, or its
  // state word or chunks changed: waiting calls may now be answerable.
  using OnChange = std::function<void()>;

  Peers(const memory::ClusterConfig* config, uint32_t self_node, rpc::Engine* engine,
        const TlsContext* tls, Directory* directory, Self self, OnChange on_change,
        PeersOptions options);
  ~Peers();  // Stop()
  void Start();
  void Stop();

  struct View {
    uint32_t node = 0;
    bool online = false;
    bool was_online = false;  // online once, then lost
    uint64_t generation = 0;  // last seen
    uint64_t flags = 0;
    std::string offline_since;  // UTC time it stopped answering
  };
  View view(uint32_t node) const;
  std::vector<View> views() const;
  bool AllOnline() const;
  // Why `node` cannot be used ("" unless it was online and stopped
  // answering).
  std::string OfflineReason(uint32_t node) const;
  // A peer told us its state word (StateUpdate, heartbeat).
  void SetFlags(uint32_t node, uint64_t flags);

  // Calls every peer (of `only`, if given) not declared offline, in
  // parallel; a peer whose link is being made gets the call once it is up.
  // `done` runs once, when every one answered, failed or timed out, with
  // each peer's result.
  using Results = std::map<uint32_t, Result<std::string>>;
  void CallAll(rpc::Method method, const std::string& payload,
               std::function<void(Results)> done,
               const std::vector<uint32_t>* only = nullptr);
  // Calls one peer (Unavailable at once if its link is down).
  void CallOne(uint32_t node, rpc::Method method, const std::string& payload,
               rpc::CallDone done);

 private:
  struct Peer;
  void Loop(Peer* p);
  bool EnsureLink(Peer* p);
  // Sends one call on the peer's link and waits for it (peer threads only).
  Result<std::string> CallAndWait(Peer* p, rpc::Method method, const std::string& payload,
                                  int timeout_ms);
  static Result<std::string> CallOn(const rpc::ConnectionPtr& link, rpc::Method method,
                                    const std::string& payload, int timeout_ms);
  void Heartbeat(Peer* p);
  void SyncFrom(Peer* p, uint64_t generation, uint64_t version);
  void MarkOnline(Peer* p, uint64_t generation);
  void MarkFailure(Peer* p, const Status& why);

  const memory::ClusterConfig* config_;
  const uint32_t self_node_;
  rpc::Engine* engine_;
  const TlsContext* tls_;
  Directory* directory_;
  Self self_;
  OnChange on_change_;
  PeersOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint32_t, std::unique_ptr<Peer>> peers_;
  std::atomic<bool> stopping_{false};
};

}  // namespace quiver::control::daemon
