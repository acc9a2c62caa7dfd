#include "common.h"

#include <pthread.h>
#include <unistd.h>

#include <condition_variable>
#include <thread>

namespace quiver::python {

namespace {

// The classes of quiver._errors, by name; never destroyed (used at exit).
std::map<std::string, py::object>* error_classes = nullptr;

const char* ClassOf(StatusCode code) {
  switch (code) {
    case StatusCode::kOutOfMemory:
    case StatusCode::kCapacityError:
      return "OutOfMemory";
    case StatusCode::kKeyError:
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kTypeError:
    case StatusCode::kInvalid:
    case StatusCode::kIndexError:
    case StatusCode::kSerializationError:
    case StatusCode::kFailedPrecondition:
      return "InvalidArgument";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kPermissionDenied:
    case StatusCode::kUnauthenticated:
      return "PermissionDenied";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kObjectLost:
      return "ObjectLost";
    case StatusCode::kDeadlineExceeded:
      return "TimeoutError";
    default:
      return "Error";
  }
}

std::atomic<uint64_t> fork_generation{0};

void AfterForkInChild() { fork_generation.fetch_add(1); }

}  // namespace

void InitErrors() {
  py::module_ errors = py::module_::import("quiver._errors");
  error_classes = new std::map<std::string, py::object>;
  for (const char* name :
       {"Error", "NotFound", "AlreadyExists", "OutOfMemory", "Unavailable", "ObjectLost",
        "InvalidArgument", "TimeoutError", "PermissionDenied", "ClosedError"}) {
    (*error_classes)[name] = errors.attr(name);
  }
}

[[noreturn]] void ThrowClass(const char* cls, const std::string& message,
                             const char* code) {
  py::object type = error_classes->at(cls);
  py::object e = type(message);
  e.attr("code") = code;
  PyErr_SetObject(type.ptr(), e.ptr());
  throw py::error_already_set();
}

[[noreturn]] void Throw(const Status& st) {
  ThrowClass(ClassOf(st.code()), st.message(), StatusCodeName(st.code()));
}

void InstallForkHandler() {
  static const bool installed = pthread_atfork(nullptr, nullptr, &AfterForkInChild) == 0;
  (void)installed;
}

uint64_t ForkGeneration() { return fork_generation.load(std::memory_order_relaxed); }

[[noreturn]] void ThrowForked(const char* what, pid_t owner) {
  ThrowClass("ClosedError",
             std::string(what) + " belongs to process " + std::to_string(owner) +
                 ", which this process was forked from: a connection does not survive "
                 "fork(); call quiver.connect() again in this process",
             "FailedPrecondition");
}

void CheckSignals() {
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

void RunInterruptible(const std::function<void()>& work,
                      const std::function<void()>& cancel) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto shared = std::make_shared<Shared>();
  std::thread worker([&work, shared] {
    work();
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->done = true;
    shared->cv.notify_all();
  });
  auto wait_done = [&](bool slice) {
    py::gil_scoped_release release;
    std::unique_lock<std::mutex> lock(shared->mu);
    if (slice) {
      shared->cv.wait_for(lock, std::chrono::milliseconds(kSliceMs),
                          [&] { return shared->done; });
    } else {
      shared->cv.wait(lock, [&] { return shared->done; });
    }
    return shared->done;
  };
  for (;;) {
    if (wait_done(true)) break;
    if (PyErr_CheckSignals() != 0) {
      py::error_already_set raised;  // fetched: the GIL may go
      cancel();
      wait_done(false);
      {
        py::gil_scoped_release release;
        worker.join();
      }
      throw raised;
    }
  }
  py::gil_scoped_release release;
  worker.join();
}

// ---- Session ----

Session::~Session() {
  if (Forked(generation)) {
    // The parent's store and client: their threads are not here, and their
    // sessions are the parent's. Leak them.
    (void)store.release();
    for (auto& sql : sql_state) {
      if (sql != nullptr) new std::shared_ptr<void>(std::move(sql));
    }
    if (client != nullptr) new std::shared_ptr<Client>(std::move(client));
    return;
  }
  store.reset();
  sql_state[0].reset();
  sql_state[1].reset();
  client.reset();
}

void Session::CheckUsable() const {
  if (Forked(generation)) ThrowForked("this Client", pid);
  if (closed.load()) {
    ThrowClass("ClosedError", "the client is closed (Client.close() was called)",
               "FailedPrecondition");
  }
}

store::ObjectStore& Session::Store() {
  std::lock_guard<std::mutex> lock(store_mu);
  if (store == nullptr) store = std::make_unique<store::ObjectStore>(*client);
  return *store;
}

void Session::Close() {
  closed.store(true);
  std::unique_lock<std::shared_mutex> lock(use_mu);
  std::unique_ptr<store::ObjectStore> s;
  {
    std::lock_guard<std::mutex> store_lock(store_mu);
    s = std::move(store);
  }
  s.reset();  // its cached pins go
  {
    std::lock_guard<std::mutex> sql_lock(sql_mu);
    sql_state[0].reset();
    sql_state[1].reset();
  }
  if (client != nullptr) {
    // Not Client::Close(), which ends the sessions: tables, arrays and
    // buffers got through this client keep theirs (and their pins) until
    // they are gone. What is queued goes out now; the sessions end with
    // the last of them.
    (void)client->Drain();
    client.reset();
  }
}

SessionUse::SessionUse(Session& s) : s_(s) {
  s.CheckUsable();
  if (!s.use_mu.try_lock_shared()) {
    // A Close() under way: wait for it without the GIL, which the calls it
    // waits for may need.
    py::gil_scoped_release release;
    s.use_mu.lock_shared();
  }
  if (s.closed.load() || s.client == nullptr) {
    s.use_mu.unlock_shared();
    s.CheckUsable();
    ThrowClass("ClosedError", "the client is closed", "FailedPrecondition");
  }
}

}  // namespace quiver::python
