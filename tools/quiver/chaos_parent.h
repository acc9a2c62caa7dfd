// The chaos parent's workers and faults (chaos.h has the overview).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "chaos.h"
#include "control/local_cluster.h"

namespace quiver::cli::chaos {

using Clock = std::chrono::steady_clock;

// The flags of `quiver chaos` (a plain value, copied where needed).
struct ChaosOptions {
  uint64_t seed = 0;
  uint64_t duration_s = 60;
  int nodes = 4;
  int workers = 8;
  uint64_t region_size = 256ULL << 20;
  std::string size_text = "256M";
  uint32_t lease_ms = 4000;
  uint32_t grace_ms = 2000;
  bool plant_wrong = false;
  bool keep = false;
};

// Outcomes of one kind of operation, summed over every worker. Plain
// values owned by the Soak's Tally; written on the parent's main thread.
struct OpTally {
  uint64_t ok = 0, errors = 0, wrong = 0, hangs = 0, skipped = 0;
  double total_ms = 0, max_ms = 0;
  std::map<std::string, uint64_t> by_code;
  std::map<std::string, std::string> example;  // by code: the first one's detail
};

// Everything the soak counted; the parent's summary prints it. Owned by
// the Soak (tally()), read and written on the parent's main thread only.
struct Tally {
  std::map<std::string, OpTally> ops;  // by kind
  std::map<std::string, uint64_t> codes;
  uint64_t worker_kills = 0, worker_stops = 0, workers_started = 0;
  uint64_t daemon_kills = 0, daemon_restarts = 0, daemon_stops = 0;
  uint64_t hung_workers_killed = 0;
  std::vector<std::string> wrong;        // every WRONG line, in full
  std::vector<std::string> hangs;        // every HANG (reported or seen)
  std::vector<std::string> unexplained;  // daemons that exited on their own
  std::vector<std::string> crashes;      // workers that exited on their own
  std::vector<std::string> problems;     // the soak could not do what it should
  // Reads refused as malformed (Invalid): the library caught bytes that
  // changed under a table the soak published whole. Listed, not failed.
  std::vector<std::string> suspect;
  bool planted_seen = false;
  uint64_t TotalOps() const;
};

// One worker process as the parent sees it. Owned by the Soak, which
// alone closes its pipes and reaps it; the parent's main thread only.
struct WorkerProc {
  int slot = 0;
  uint64_t id = 0;  // unique in the run: table names carry it
  uint32_t node = 0;
  pid_t pid = -1;
  int in = -1, out = -1;      // its stdin (closed to stop it), its stdout
  std::string buffer;         // a partial line read
  Clock::time_point heard{};  // its last line, or its SIGCONT
  bool stopped = false;       // SIGSTOPped by us until cont_at
  Clock::time_point cont_at{};
  std::string current;  // the operation in progress ("read c-3-4-r10")
};

// The workers and the fault loop. Owns the worker processes (kills and
// reaps them all in its destructor) and drives the LocalCluster's daemons
// through it; the caller owns the cluster, which must outlive this. Not
// thread-safe: the parent's main thread makes every call.
class Soak {
 public:
  Soak(const ChaosOptions& options, control::LocalCluster* cluster,
       const std::string& work_dir);
  ~Soak();

  // Starts options.workers workers, spread over the nodes.
  Status StartWorkers();
  // The fault loop, until `until` (or an interrupt), reading the workers'
  // lines all along and printing a progress line every 10 s.
  void RunChaos(Clock::time_point until);
  // Ends the faults: continues everything stopped, restarts any daemon that
  // is down, waits until every node sees every node online. False (and a
  // problem noted) if the cluster did not come back.
  bool EndChaos();
  // Closes the workers' stdin and waits for them to finish; kills (as hung)
  // those that do not within a minute.
  void StopWorkers();
  // Keeps reading the workers' lines (and checking the daemons) for `ms`.
  void Pump(int ms);

  Tally& tally() { return tally_; }
  const std::string& worker_log(int slot) const { return logs_[slot]; }

 private:
  Status Spawn(int slot);
  void ReadAll(int timeout_ms);
  void Drain(WorkerProc& w);
  void HandleLine(WorkerProc& w, const std::string& text);
  void Reap();
  void CheckSilence();
  void CheckDaemons();
  void Timers();
  void Act();
  void KillWorker(WorkerProc& w, bool hung);
  void Progress();
  std::string Who(const WorkerProc& w) const;
  uint64_t Uniform(uint64_t lo, uint64_t hi);

  ChaosOptions options_;
  control::LocalCluster* cluster_;
  std::string work_dir_;
  std::mt19937_64 random_;
  std::vector<WorkerProc> workers_;
  Tally tally_;
  std::vector<std::string> logs_;  // per slot: the workers' stderr
  uint64_t next_id_ = 1;
  bool stopping_ = false;  // StopWorkers: exits are expected
  // Daemons: which we killed (restart due at), which we stopped (until).
  std::map<int, Clock::time_point> down_, daemon_stopped_;
  Clock::time_point next_action_{}, next_progress_{}, started_{};
};

// Whether every node answers and sees every node online (one status query
// to each node's daemon over its Unix socket).
bool AllOnline(const control::LocalCluster& cluster);
// Bytes in live allocations of `node`'s region as its daemon says (-1 if it
// does not answer).
int64_t UsedBytes(const control::LocalCluster& cluster, uint32_t node);

}  // namespace quiver::cli::chaos
