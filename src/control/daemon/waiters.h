// Waiters: calls a daemon parks until something changes (a table appears,
// every node reaches a barrier state, every peer is online) or their time
// runs out. A parked call costs an entry and a timer, never a thread. The
// pool of `max_waiting` entries is shared fairly (CapacityError beyond a
// share): one session holds at most a sixteenth of it, the sessions of one
// node at most a quarter, and sessions from other nodes together at most
// three quarters, so the node's own local clients always find room.
//
// WorkerPool: a fixed set of threads for the few calls that need CPU for a
// while (decoding an uploaded table, flushing gigabytes), with a bounded
// queue: a full pool refuses instead of growing.
//
// Both thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "control/daemon/call.h"
#include "control/rpc/timers.h"

namespace quiver::control::daemon {

class Waiters {
 public:
  // Answers the call and returns true once its condition holds; with
  // `expired` it must answer (the deadline passed). Runs under the
  // waiters' lock: it may take other locks, never park or notify.
  using Check = std::function<bool(const CallPtr& call, bool expired)>;

  Waiters(rpc::TimerQueue* timers, uint32_t max_waiting)
      : timers_(timers), max_(max_waiting), shares_(SharesOf(max_waiting)) {}
  ~Waiters();

  // Checks once; if not answered, parks the call for up to `timeout_ms`
  // (any value of a 32-bit field is honoured), within its shares.
  Status Park(const CallPtr& call, uint64_t timeout_ms, Check check);
  // Re-checks every parked call (after a change anything may wait for).
  void Notify();
  // Drops the parked calls of a closed connection.
  void DropConnection(uint64_t connection_id);
  // Answers every parked call with `why` (shutdown).
  void FailAll(const Status& why);
  size_t size() const;

  // The shares of a pool of `max_waiting` entries.
  struct Shares {
    uint32_t session = 1, node = 1, remote = 1;
  };
  static Shares SharesOf(uint32_t max_waiting);

 private:
  // Whose share an entry counts against.
  struct Owner {
    uint64_t connection = 0;  // a connection is a session
    uint64_t node = 0;        // the identity's role and node
    bool local = false;       // over this node's Unix socket
  };
  struct Entry {
    CallPtr call;
    Check check;
    rpc::TimerQueue::TimerId timer = 0;
    Owner owner;
  };
  void Expire(uint64_t id);
  void EraseLocked(std::map<uint64_t, Entry>::iterator it);

  rpc::TimerQueue* timers_;
  const uint32_t max_;
  const Shares shares_;
  mutable std::mutex mu_;
  std::map<uint64_t, Entry> entries_;
  std::map<uint64_t, uint32_t> by_connection_;  // a connection is a session
  std::map<uint64_t, uint32_t> by_node_;        // key: role << 32 | node
  uint32_t remote_ = 0;                         // entries of other nodes' clients
  uint64_t next_ = 1;
};

class WorkerPool {
 public:
  WorkerPool(int threads, size_t max_queue);
  ~WorkerPool();  // Stop()
  // False (and `task` not run) when the queue is full or the pool stopped.
  bool TryPost(std::function<void()> task);
  void Stop();

 private:
  void Run();
  const size_t max_queue_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace quiver::control::daemon
