// Waiters: calls a daemon parks until something changes (a table appears,
// every node reaches a barrier state, every peer is online) or their time
// runs out. A parked call costs an entry and a timer, never a thread; the
// number parked is capped (CapacityError beyond it).
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
      : timers_(timers), max_(max_waiting) {}
  ~Waiters();

  // Checks once; if not answered, parks the call for up to `timeout_ms`.
  Status Park(const CallPtr& call, int timeout_ms, Check check);
  // Re-checks every parked call (after a change anything may wait for).
  void Notify();
  // Drops the parked calls of a closed connection.
  void DropConnection(uint64_t connection_id);
  // Answers every parked call with `why` (shutdown).
  void FailAll(const Status& why);
  size_t size() const;

 private:
  struct Entry {
    CallPtr call;
    Check check;
    rpc::TimerQueue::TimerId timer = 0;
  };
  void Expire(uint64_t id);
  void EraseLocked(std::map<uint64_t, Entry>::iterator it);

  rpc::TimerQueue* timers_;
  const uint32_t max_;
  mutable std::mutex mu_;
  std::map<uint64_t, Entry> entries_;
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
