// TimerQueue: callbacks at deadlines, on one thread of their own.
//
// The daemon parks waiting calls (barriers, gets that wait for a table) and
// times out outgoing calls without a thread each: every deadline is an
// entry here. Callbacks run on the timer thread, one at a time, and must be
// short (they complete a call, or post work elsewhere). Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace quiver::control::rpc {

class TimerQueue {
 public:
  using Clock = std::chrono::steady_clock;
  using TimerId = uint64_t;

  TimerQueue();
  ~TimerQueue();  // Stop()
  // Runs no more callbacks; waits for the one running.
  void Stop();

  // Runs `fn` once `delay_ms` have passed. Returns an id for Cancel.
  TimerId After(int64_t delay_ms, std::function<void()> fn);
  TimerId At(Clock::time_point when, std::function<void()> fn);
  // True if the timer had not fired yet and now never will.
  bool Cancel(TimerId id);

  size_t pending() const;

 private:
  void Run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<Clock::time_point, TimerId> by_time_;
  std::unordered_map<TimerId, std::pair<Clock::time_point, std::function<void()>>>
      timers_;
  TimerId next_id_ = 1;
  // When the sleeping thread wakes on its own (min while it is awake): a
  // timer due later needs no wake-up, so an outgoing call with a timeout
  // costs no context switch.
  Clock::time_point wake_at_ = Clock::time_point::min();
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace quiver::control::rpc
