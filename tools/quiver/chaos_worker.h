// The chaos worker (`quiver chaos-worker`): one client of one node looping
// seeded random operations and reporting each outcome on stdout (chaos.h
// has the line protocol). Internal to chaos_worker.cc and chaos_store.cc.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "chaos.h"
#include "quiver/client.h"
#include "quiver/store.h"

namespace quiver::cli::chaos {

using Clock = std::chrono::steady_clock;

// What one operation came to: ok, a clear error (its status), or a wrong
// value (`wrong` says what was expected and what was found). A plain value
// returned by the Worker's operations on its main thread.
struct Outcome {
  Status status;
  std::string wrong;
  std::string detail;    // the operation's object (a name, an id, sizes)
  bool skipped = false;  // nothing to do (nothing published yet): not counted
  // A failed command line's result instead of its status ("exit1").
  std::string error_name;
  static Outcome Skip() { return {Status::OK(), {}, {}, true, {}}; }
  static Outcome Exit(int code, std::string detail) {
    return {Status::UnknownError("exit code ", code),
            {},
            std::move(detail),
            false,
            "exit" + std::to_string(code)};
  }
  static Outcome Ok(std::string detail = {}) {
    return {Status::OK(), {}, std::move(detail), false, {}};
  }
  static Outcome Err(Status st, std::string detail = {}) {
    return {std::move(st), {}, std::move(detail), false, {}};
  }
  static Outcome Wrong(std::string what, std::string detail = {}) {
    return {Status::OK(), std::move(what), std::move(detail), false, {}};
  }
};

// A table this worker got and keeps (its arrays hold the pins) until
// `until`, then verifies again and lets go. Owned by the Worker's holds_;
// its main thread only.
struct Held {
  std::string name;
  std::vector<control::PositionedChunk> chunks;
  Clock::time_point until;
};

// One worker process. Owns its Client, ObjectStore and everything it got;
// Run() is called once, on the main thread, and every method runs there
// (the only other thread reads stdin and sets `stop`).
class Worker {
 public:
  Worker(const WorkerOptions& options, std::atomic<bool>* stop);
  ~Worker();
  // Loops until *stop: connects (again, as long as it fails), then runs
  // operations. Returns the process's exit code.
  int Run();

 private:
  // chaos_worker.cc
  void Connect();
  void RunOne();
  // Times `fn` and reports its outcome as an `op` line of `kind`.
  template <typename Fn>
  void Timed(const std::string& kind, const std::string& start_detail, Fn&& fn);
  Outcome Publish();
  Outcome Read(bool hold);
  Outcome Unpublish();
  void ReleaseHolds(bool all);
  // Gets `name` (Get for whole tables, GetChunks for HugeTables) into
  // `chunks`; a clear error as its status, a wrong row count as `wrong`.
  Outcome GetTable(const std::string& name, const TableName& what,
                   std::vector<control::PositionedChunk>* chunks);
  // A whole table as batches again (its columns must be cut alike), after
  // checking its shape and row count against the name.
  static Outcome TableChunks(const std::string& name, const TableName& what,
                             const Table& t,
                             std::vector<control::PositionedChunk>* chunks);
  // Every value of every chunk against the name. Empty when all are right.
  std::string Verify(const std::string& name, const TableName& what,
                     const std::vector<control::PositionedChunk>& chunks);
  std::string VerifyBatch(const std::string& name, const RecordBatch& batch,
                          uint64_t first_row);
  // Where `p` lies ("node 2") for wrong-value reports.
  std::string Where(const void* p) const;
  std::string PickName(bool own_only);
  uint32_t RandomNode();
  uint64_t Uniform(uint64_t lo, uint64_t hi);  // [lo, hi]
  uint64_t LogUniform(uint64_t lo, uint64_t hi);
  bool Chance(double p);

  // chaos_store.cc
  Outcome StorePut();
  Outcome StoreGet();
  Outcome StoreDelete();
  Outcome StoreTable();
  Outcome VerifyObject(const store::ObjectBuffer& got, uint64_t expected_size);
  // `quiver put`, `quiver sql`, `quiver rm` of one small CSV file.
  void RunCli();

  WorkerOptions options_;
  std::atomic<bool>* stop_;
  std::mt19937_64 random_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<store::ObjectStore> store_;
  uint64_t counter_ = 0;
  std::deque<std::string> own_tables_;  // published (or maybe published) by us
  std::deque<store::ObjectId> own_objects_;
  std::deque<std::string> own_store_tables_;  // PutTable names
  std::vector<Held> holds_;
  Clock::time_point next_cli_{};
  bool planted_ = false;  // --plant-wrong done
};

// Writes one line (and a newline) to stdout in one write(2); false once
// the parent is gone.
bool Emit(const std::string& line);

template <typename Fn>
void Worker::Timed(const std::string& kind, const std::string& start_detail, Fn&& fn) {
  Emit("start\t" + kind + "\t" + OneField(start_detail));
  const auto t0 = Clock::now();
  Outcome o = fn();
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (o.skipped) {
    Emit(FormatOp(kind, "skip", ms, o.detail));
    return;
  }
  std::string result, detail = o.detail;
  if (!o.status.ok()) {
    std::string msg = o.status.message();
    if (msg.size() > 300) msg = msg.substr(0, 300) + "...";
    detail += (detail.empty() ? "" : ": ") + msg;
  }
  if (!o.wrong.empty()) {
    result = "WRONG";
    detail += " " + o.wrong;
  } else if (ms > kOpHangMs) {
    result = "HANG";
    detail += std::string(" (") +
              (o.status.ok() ? "ok" : StatusCodeName(o.status.code())) + " after over " +
              std::to_string(kOpHangMs / 1000) + " s)";
  } else if (o.status.ok()) {
    result = "ok";
  } else {
    result = "err:" + (o.error_name.empty() ? std::string(StatusCodeName(o.status.code()))
                                            : o.error_name);
  }
  const std::string line = FormatOp(kind, result, ms, detail);
  Emit(line);
  if (result != "ok") std::fprintf(stderr, "%s\n", line.c_str());  // the worker's log
  // A client backs off from a node that is down rather than spin on it.
  if (o.status.IsUnavailable() || o.status.IsObjectLost()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(Uniform(10, 50)));
  }
}

}  // namespace quiver::cli::chaos
