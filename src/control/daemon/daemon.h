// quiverd: the node daemon (DESIGN.md §6, docs/control-plane.md).
//
// It owns its node's region (creates it, or takes it over after a restart,
// recovering what the region records), serves clients on the node's Unix
// socket and clients and peers of other nodes over mutual TLS, and keeps
// the catalogue of the region's objects, a replica of the cluster's table
// directory, the nodes' state words and its peers' liveness.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "control/daemon/service.h"
#include "quiver/util/result.h"

namespace quiver::control::daemon {

struct DaemonOptions {
  std::string config_path;
  uint32_t node = 0;
  int heartbeat_ms = 100;  // peer heartbeat interval
  int offline_after = 3;   // failed heartbeats before a peer is offline
  // Threads serving connections; 0: one per two CPUs. More threads than
  // that cost a loaded machine more in switches than they gain (measured
  // on 2 CPUs: 8 daemons publish 15% faster with one each than with two).
  int io_threads = 0;
  int worker_threads = 2;  // threads for long calls (table decoding, big flushes)
  bool remove_region_on_exit = false;
  std::vector<int> cpus;  // CPU affinity (empty: any CPU)
  // Overrides of the cluster config's [limits] (0: the config's value).
  uint64_t max_malloc_bytes = 0;
  uint64_t malloc_rate = 0;
  // Services of higher layers (the object store), in this order.
  std::vector<ServiceSpec> services;
};

// Runs a daemon until SIGTERM or SIGINT. Returns the process exit code.
int RunDaemon(const DaemonOptions& options);

}  // namespace quiver::control::daemon
