// TimerQueue: callbacks run once, in deadline order, on the queue's thread;
// a timer added ahead of the one the thread sleeps for still fires first;
// cancelled timers never run; Stop runs nothing more. No assertion is on
// time except "eventually, within a generous bound".
#include "control/rpc/timers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "common/eventually.h"

namespace quiver::control::rpc {
namespace {

using Clock = TimerQueue::Clock;

using ::quiver::testing::Eventually;

TEST(TimerQueueTest, TimersFireOnceInDeadlineOrder) {
  TimerQueue timers;
  std::mutex mu;
  std::vector<int> fired;
  const auto base = Clock::now() + std::chrono::milliseconds(50);
  // Added out of order; equal deadlines keep the order they were added in.
  for (int k : {3, 1, 2, 4}) {
    timers.At(base + std::chrono::milliseconds(10 * (k == 4 ? 3 : k)), [&, k] {
      std::lock_guard<std::mutex> lock(mu);
      fired.push_back(k);
    });
  }
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return fired.size() == 4;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(fired, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(timers.pending(), 0u);
}

TEST(TimerQueueTest, AnEarlierTimerIsNotHeldBehindALaterOne) {
  TimerQueue timers;
  std::atomic<bool> late{false}, early{false};
  timers.After(3'600'000, [&] { late = true; });
  // Let the thread go to sleep on the hour-long timer first.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  timers.After(5, [&] { early = true; });
  ASSERT_TRUE(Eventually([&] { return early.load(); }));
  EXPECT_FALSE(late.load());
  EXPECT_EQ(timers.pending(), 1u);
}

TEST(TimerQueueTest, ATimerDueNowFiresFromAnIdleQueue) {
  TimerQueue timers;
  // The thread has slept with nothing to do; an already-due timer still runs.
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  std::atomic<bool> fired{false};
  timers.At(Clock::now() - std::chrono::seconds(1), [&] { fired = true; });
  EXPECT_TRUE(Eventually([&] { return fired.load(); }));
}

TEST(TimerQueueTest, CancelledTimersNeverRun) {
  TimerQueue timers;
  std::atomic<int> runs{0};
  const auto cancelled = timers.After(30, [&] { runs += 100; });
  const auto kept = timers.After(40, [&] { runs += 1; });
  EXPECT_TRUE(timers.Cancel(cancelled));
  EXPECT_FALSE(timers.Cancel(cancelled));  // once only
  ASSERT_TRUE(Eventually([&] { return runs.load() != 0; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(runs.load(), 1);
  EXPECT_FALSE(timers.Cancel(kept));    // already fired
  EXPECT_FALSE(timers.Cancel(987654));  // never existed
}

TEST(TimerQueueTest, StopRunsNothingMore) {
  std::atomic<int> runs{0};
  {
    TimerQueue timers;
    timers.After(1, [&] { ++runs; });
    ASSERT_TRUE(Eventually([&] { return runs.load() == 1; }));
    timers.After(200, [&] { ++runs; });
    timers.Stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  EXPECT_EQ(runs.load(), 1);
}

}  // namespace
}  // namespace quiver::control::rpc
