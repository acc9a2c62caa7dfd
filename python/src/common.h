// What every part of the `_quiver` extension shares: Status to Python
// exceptions, the fork rule, waits that Ctrl-C interrupts, and the Session
// that one Python Client (and its store, subscriptions and buffers) holds.
//
// Fork rule: a Client's sessions, threads and pins belong to the process
// that connected. A forked child inherits the memory of all that but none
// of the threads, so nothing it inherited may run: every handle records the
// fork generation it was made in (bumped in the child by pthread_atfork);
// calls through a handle of an older generation raise ClosedError, and
// destructors of such handles leak what they hold instead of releasing the
// parent's pins and sessions from the child.
#pragma once

#include <pybind11/pybind11.h>
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "quiver/client.h"
#include "quiver/store.h"

namespace quiver::python {

namespace py = pybind11;

// ---- Errors ----

// Loads the exception classes of quiver._errors (once, at module import).
void InitErrors();
// Sets the Python exception for `st` (its class by st.code(), its message
// st.message(), its `code` attribute StatusCodeName) and throws
// py::error_already_set. Needs the GIL.
[[noreturn]] void Throw(const Status& st);
// The same with a message of ours and an exception class by name
// ("ClosedError", "InvalidArgument", ...).
[[noreturn]] void ThrowClass(const char* cls, const std::string& message,
                             const char* code = "Invalid");
inline void Check(const Status& st) {
  if (!st.ok()) Throw(st);
}
template <typename T>
T Unwrap(Result<T>&& r) {
  if (!r.ok()) Throw(r.status());
  return std::move(*r);
}

// ---- Fork ----

// Installs the pthread_atfork handler (once).
void InstallForkHandler();
// 0 in the process that imported the module; +1 in each forked child.
uint64_t ForkGeneration();
inline bool Forked(uint64_t generation) { return generation != ForkGeneration(); }
[[noreturn]] void ThrowForked(const char* what, pid_t owner);

// Whether the interpreter is shutting down: objects still alive then are
// leaked (the process ends; release callbacks of Python producers may no
// longer be callable).
inline bool Finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// A shared_ptr that, destroyed in a forked child or while the interpreter
// shuts down, leaks its object rather than running the parent's destructors
// there (or calling into a half-finalized interpreter).
template <typename T>
class ForkSafe {
 public:
  ForkSafe() = default;
  explicit ForkSafe(std::shared_ptr<T> p) : p_(std::move(p)) {}
  ForkSafe(const ForkSafe&) = default;
  ForkSafe& operator=(const ForkSafe&) = default;
  ~ForkSafe() {
    if ((Forked(generation_) || Finalizing()) && p_ != nullptr) {
      new std::shared_ptr<T>(std::move(p_));
    }
  }
  const std::shared_ptr<T>& get() const { return p_; }
  T* operator->() const { return p_.get(); }
  T& operator*() const { return *p_; }
  uint64_t generation() const { return generation_; }

 private:
  std::shared_ptr<T> p_;
  uint64_t generation_ = ForkGeneration();
};

// ---- Blocking calls ----

// How long a blocking call waits with the GIL released before it looks for
// a pending signal (Ctrl-C) and a close() from another thread.
constexpr int64_t kSliceMs = 50;

// A wait of `timeout_ms` (0: do not wait; < 0: for ever) cut into slices of
// at most kSliceMs, between which the caller runs CheckSignals:
//   SlicedWait wait(timeout_ms);
//   for (;;) { r = Call(wait.Slice()); if (done || wait.Over()) break; CheckSignals(); }
class SlicedWait {
 public:
  using Clock = std::chrono::steady_clock;
  explicit SlicedWait(int64_t timeout_ms)
      : timeout_ms_(timeout_ms),
        deadline_(Clock::now() +
                  std::chrono::milliseconds(std::max<int64_t>(0, timeout_ms))) {}
  // How long the next call waits: 0, or the time left up to kSliceMs.
  int64_t Slice() const {
    if (timeout_ms_ == 0) return 0;
    if (timeout_ms_ < 0) return kSliceMs;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now())
            .count();
    return std::clamp<int64_t>(left, 0, kSliceMs);
  }
  // Whether no time is left for another slice.
  bool Over() const {
    return timeout_ms_ == 0 || (timeout_ms_ > 0 && Clock::now() >= deadline_);
  }

 private:
  int64_t timeout_ms_;
  Clock::time_point deadline_;
};

// Raises what a signal handler raised (KeyboardInterrupt) if a signal is
// pending. Needs the GIL; a no-op off the main thread.
void CheckSignals();

// Runs `work` on a thread of its own while this thread, GIL released, waits
// in slices; between slices it runs Python's signal handlers. If one raises
// (Ctrl-C), calls `cancel` once, waits for `work` to end, and re-raises.
// `work` must not touch Python objects.
void RunInterruptible(const std::function<void()>& work,
                      const std::function<void()>& cancel);

// ---- Session ----

// Get references of store objects held by this process's buffers, by id:
// each Get adds one, each release (explicit, or the buffer's end) takes one
// and calls ObjectStore::Release. A count that drops to zero keeps its entry,
// so getting the same ids again allocates nothing; entries at zero are swept
// once they outnumber the held ones. Thread-safe.
class GetRefs {
 public:
  // One more reference of each ids[i] for which got[i] holds.
  void Add(const std::vector<store::ObjectId>& ids,
           const std::vector<std::optional<store::ObjectBuffer>>& got);
  // Takes back one reference of `id`; false if none is held.
  bool Take(const store::ObjectId& id);
  // Take of each of `ids`, under one lock: taken[i] says whether ids[i] was.
  std::vector<bool> Take(const std::vector<store::ObjectId>& ids);

 private:
  bool TakeLocked(const store::ObjectId& id);

  std::mutex mu_;
  std::unordered_map<store::ObjectId, int64_t, store::ObjectIdHash> counts_;
  size_t zeros_ = 0;  // entries whose count is 0
};

// One connection to the cluster: the Client, the ObjectStore made on first
// use, and what the Python objects of that client share. Shared by the
// Python Client, its store, subscriptions and store buffers; thread-safe.
struct Session {
  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

  std::shared_ptr<Client> client;
  std::unique_ptr<store::ObjectStore> store;  // before the client goes
  std::string state_dir, config_path;
  uint32_t node = 0;
  uint64_t generation = ForkGeneration();
  pid_t pid = 0;

  // Calls hold it shared; Close() takes it exclusively, after setting
  // `closed`, so it waits only for calls under way (which see `closed`
  // within a slice).
  std::shared_mutex use_mu;
  std::atomic<bool> closed{false};

  std::mutex store_mu;  // creating `store`
  GetRefs refs;

  // DuckDB for Client.sql (sql.cc), one database per allow_files setting,
  // made on first use; a query holds sql_mu (a connection serves one thread
  // at a time).
  std::mutex sql_mu;
  std::shared_ptr<void> sql_state[2];

  // Raises ClosedError when closed or used in a forked child.
  void CheckUsable() const;
  store::ObjectStore& Store();  // creates it (needs use_mu held)
  void Close();  // idempotent; needs the GIL released; what was got stays valid
};

// Holds a Session for one call: usable, and not closed under the call.
class SessionUse {
 public:
  explicit SessionUse(Session& s);
  ~SessionUse() { s_.use_mu.unlock_shared(); }
  SessionUse(const SessionUse&) = delete;
  SessionUse& operator=(const SessionUse&) = delete;
  Client& client() { return *s_.client; }

 private:
  Session& s_;
};

// Registers each part of the module.
void BindTypes(py::module_& m);
void BindTable(py::module_& m);
void BindConvert(py::module_& m);
void BindClient(py::module_& m);
void BindStore(py::module_& m);

}  // namespace quiver::python
