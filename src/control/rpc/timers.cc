#include "control/rpc/timers.h"

#include <algorithm>

namespace quiver::control::rpc {

namespace {
// With nothing due, the thread still looks again this often.
constexpr std::chrono::milliseconds kIdleLook{100};
}  // namespace

TimerQueue::TimerQueue() : thread_([this] { Run(); }) {}

TimerQueue::~TimerQueue() { Stop(); }

void TimerQueue::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

TimerQueue::TimerId TimerQueue::After(int64_t delay_ms, std::function<void()> fn) {
  return At(Clock::now() + std::chrono::milliseconds(delay_ms), std::move(fn));
}

TimerQueue::TimerId TimerQueue::At(Clock::time_point when, std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  const TimerId id = next_id_++;
  by_time_.emplace(when, id);
  timers_.emplace(id, std::make_pair(when, std::move(fn)));
  if (when < wake_at_) cv_.notify_one();
  return id;
}

bool TimerQueue::Cancel(TimerId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = timers_.find(id);
  if (it == timers_.end()) return false;
  auto [lo, hi] = by_time_.equal_range(it->second.first);
  for (auto t = lo; t != hi; ++t) {
    if (t->second == id) {
      by_time_.erase(t);
      break;
    }
  }
  timers_.erase(it);
  return true;
}

size_t TimerQueue::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timers_.size();
}

void TimerQueue::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const Clock::time_point now = Clock::now();
    if (by_time_.empty() || by_time_.begin()->first > now) {
      // Not a reference to the entry: while this thread waits, Cancel may
      // erase it.
      wake_at_ = by_time_.empty() ? now + kIdleLook
                                  : std::min(by_time_.begin()->first, now + kIdleLook);
      cv_.wait_until(lock, wake_at_);
      wake_at_ = Clock::time_point::min();
      continue;
    }
    auto first = by_time_.begin();
    const TimerId id = first->second;
    by_time_.erase(first);
    auto it = timers_.find(id);
    std::function<void()> fn = std::move(it->second.second);
    timers_.erase(it);
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace quiver::control::rpc
