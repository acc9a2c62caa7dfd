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
};

class LocalCluster {
 public:
  static Result<std::unique_ptr<LocalCluster>> Start(const LocalClusterOptions& options);
  ~LocalCluster();
  Status Stop();

  const memory::ClusterConfig& config() const { return config_; }
  const std::string& config_path() const { return config_path_; }
  const std::string& dir() const { return dir_; }
  pid_t pid(int node) const { return pids_[node]; }
  std::string log_path(int node) const;

  // Kills node `node`'s daemon with `sig` and reaps it (for failure tests).
  Status Kill(int node, int sig);
  // Starts node `node`'s daemon again (it takes over its region).
  Status Restart(int node);
  // Whether node `node`'s daemon process has exited (reaps it if so).
  bool Exited(int node);

 private:
  LocalCluster() = default;
  Status Spawn(int node);
  Status WaitAccepting(int node);

  LocalClusterOptions options_;
  memory::ClusterConfig config_;
  std::string dir_, config_path_;
  std::vector<pid_t> pids_;
};

// A TCP port that was free a moment ago (bind to port 0, read it back).
Result<int> FreeTcpPort(const std::string& host = "127.0.0.1");

// The running program's path (/proc/self/exe) and its folder.
std::string ExecutablePath();
std::string ExecutableDir();

// Starts argv (argv[0] searched in PATH) with stdout and stderr going to
// `log`, created 0600 and appended to or truncated.
Result<pid_t> SpawnLogged(const std::vector<std::string>& argv, const std::string& log,
                          bool append);

}  // namespace quiver::control
