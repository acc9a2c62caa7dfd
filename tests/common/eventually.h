// Waiting on state in tests: poll what a daemon, server or object reports
// until it holds, never sleep for a length of time and hope.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace quiver::testing {

// Polls `done` (every few milliseconds) until it holds: true; or until
// `timeout_ms` has passed without it: false. The timeout only ends a wait
// that would otherwise never end; it is never what a test measures.
inline bool Eventually(const std::function<bool()>& done, int timeout_ms = 20000) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace quiver::testing
