// LocalCluster: a whole Quiver cluster on this host, one `quiverd` process
// per node, for `quiver demo`, the tests and the benchmarks.
//
// Start() makes a fresh directory (mode 0700) holding new credentials (a
// CA and every node's certificates, fresh random keys each time) and a
// cluster file (unique name, free TCP ports, non-overlapping region bases,
// shm or incoherent backings), starts one daemon per node and waits until
// every daemon accepts connections. Stop() (also the destructor) sends
// SIGTERM, waits, and removes sockets, backing files, credentials and the
// directory. Internal (tools, tests, benchmarks). Not thread-safe.
//
// With `state_dir` set (`quiver up`), the cluster lives in that directory
// instead and outlasts this object: the daemons run in their own session
// with stdin from /dev/null and their logs in the directory, their pids go
// to `state_dir/pids`, Detach() leaves them running, and Attach() finds
// them again from another process (for `quiver down`, `quiver status`).
// Stop() then removes the runtime files (sockets, backing files, pids,
// cluster file, credentials) and keeps the directory and the logs. A pid is
// signalled only while /proc says it is still quiverd of that cluster file
// and node, so a reused pid is never hit.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "quiver/memory/cluster_config.h"

namespace quiver::control {

struct LocalClusterOptions {
  int nodes = 3;
  uint64_t region_size = 1ULL << 30;  // per node
  memory::BackingKind backing = memory::BackingKind::kShm;
  std::string quiverd;  // path of the daemon binary (required)
  std::string name_prefix = "quiver";
  uint64_t base = 0x300000000000ULL;  // node i maps at base + i * stride
  uint64_t stride = 0x10000000000ULL;
  // Prefix of every daemon's argv, e.g. {"ip", "netns", "exec", "ns0"} per
  // node; empty for none. Entry i applies to node i.
  std::vector<std::vector<std::string>> exec_prefix;
  // Host each node's control address binds to (default 127.0.0.1).
  std::vector<std::string> hosts;
  // Memory group of node i (NodeConfig::memory); missing entries: "".
  std::vector<std::string> memory_groups;
  // Every node serves its tables over the transport (a free port on its
  // host) to nodes outside its memory group.
  bool transport = false;
  // Extra arguments for every daemon (e.g. {"--max-malloc", "1MiB"}). In
  // each, "{node}" becomes the node's id and "{dir}" the cluster's
  // directory (e.g. {"--store-spill", "{dir}/spill{node}"}).
  std::vector<std::string> daemon_args;
  // The cluster's [limits] (quotas, rates, leases, restart grace).
  memory::ClusterLimits limits;
  int start_timeout_ms = 30000;
  std::string log_dir;  // where daemon logs go (default: the cluster dir)
  // The cluster's own directory, kept (see the top); empty: a fresh
  // temporary one, removed by Stop().
  std::string state_dir;
  int stop_timeout_ms = 10000;  // SIGTERM, then SIGKILL after this
};

// What Stop() did: daemons stopped by SIGTERM, killed after the timeout,
// and the files it removed (those that were there).
struct StopSummary {
  int terminated = 0, killed = 0;
  std::vector<std::string> removed;
};

class LocalCluster {
 public:
  static Result<std::unique_ptr<LocalCluster>> Start(const LocalClusterOptions& options);
  // The cluster kept in `state_dir` (its cluster file and pids file), with
  // the pid of each node's daemon, or -1 where it is not running. NotFound
  // when the directory holds no cluster. The returned object is detached.
  static Result<std::unique_ptr<LocalCluster>> Attach(const std::string& state_dir,
                                                      int stop_timeout_ms = 10000);
  ~LocalCluster();
  Status Stop();
  // The destructor leaves the daemons and files as they are.
  void Detach() { detached_ = true; }
  const StopSummary& stop_summary() const { return stopped_; }

  const memory::ClusterConfig& config() const { return config_; }
  const std::string& config_path() const { return config_path_; }
  const std::string& dir() const { return dir_; }
  pid_t pid(int node) const { return pids_[node]; }
  int nodes() const { return static_cast<int>(config_.nodes.size()); }
  // The pid the state directory recorded for `node` (-1 if none), running
  // or not.
  pid_t recorded_pid(int node) const;
  // Whether `node`'s daemon is running: our child that has not exited, or
  // (attached) a process /proc shows as quiverd of this cluster and node.
  bool Running(int node);
  std::string log_path(int node) const;

  // Kills node `node`'s daemon with `sig` and reaps it (for failure tests).
  Status Kill(int node, int sig);
  // Starts node `node`'s daemon again (it takes over its region).
  Status Restart(int node);
  // Starts again every node whose daemon is not running, in order (each
  // takes over its region, as after a crash: its tables come back), and
  // rewrites the pids file; the nodes restarted.
  Result<std::vector<int>> RestartStopped();
  // Whether node `node`'s daemon process has exited (reaps it if so).
  bool Exited(int node);

 private:
  LocalCluster() = default;
  Status FindQuiverd();  // options_.quiverd, or quiverd next to this program
  Status Spawn(int node);
  Status WaitAccepting(int node);
  Status PrepareStateDir();
  Status WritePids() const;
  bool Gone(int node);
  void RemoveFiles();

  LocalClusterOptions options_;
  memory::ClusterConfig config_;
  std::string dir_, config_path_;
  std::vector<pid_t> pids_, recorded_;
  bool detached_ = false;
  StopSummary stopped_;
};

// The state directory `quiver up` uses by default: $QUIVER_DIR, else
// $XDG_RUNTIME_DIR/quiver, else /tmp/quiver-UID.
std::string DefaultStateDir();

// A TCP port that was free a moment ago, for a listener started soon
// after. Chosen at random below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), where no outgoing connection is ever
// given a port: a port the kernel hands out for bind(0) can be taken by
// any connect() before the listener binds it (seen: a daemon of a test
// exited with "Address already in use"). Falls back to bind(0) when the
// range leaves no room below it.
Result<int> FreeTcpPort(const std::string& host = "127.0.0.1");

// The running program's path (/proc/self/exe) and its folder.
std::string ExecutablePath();
std::string ExecutableDir();

// Starts argv (argv[0] searched in PATH) with stdout and stderr going to
// `log`, created 0600 and appended to or truncated. `detached`: in a new
// session (no terminal's signals reach it), stdin from /dev/null.
Result<pid_t> SpawnLogged(const std::vector<std::string>& argv, const std::string& log,
                          bool append, bool detached = false);

}  // namespace quiver::control
