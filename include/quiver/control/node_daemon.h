// NodeDaemon: the node daemon `quiverd` (DESIGN.md §6).
//
// It owns its node's region (creates it, or takes it over keeping the
// allocations after a restart), maps every other region, serves peers over
// TCP and local clients over a Unix socket, and keeps:
//   - the catalogue of published tables (descriptors, replicated on every
//     node by the publisher's daemon),
//   - the state words of all nodes (barriers),
//   - the pins readers hold on objects in its region,
//   - liveness of its peers (heartbeats): tables whose data sits on a node
//     that went down are reported lost.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace quiver::control {

struct DaemonOptions {
  std::string config_path;
  uint32_t node = 0;
  uint64_t max_malloc_bytes = 0;   // 0: the region's data size
  uint64_t malloc_rate = 100000;   // allocations per second per caller node
  int heartbeat_ms = 100;          // peer ping interval
  int offline_after_failures = 3;  // consecutive failed pings
  bool remove_region_on_exit = false;
  std::vector<int> cpus;  // CPU affinity (empty: any CPU)
};

// Runs a daemon until SIGTERM/SIGINT. Returns the process exit code.
int RunDaemon(const DaemonOptions& options);
// Parses "--config F --id N [--max-malloc SIZE] [--malloc-rate N]" and runs.
int DaemonMain(int argc, char** argv);

}  // namespace quiver::control
