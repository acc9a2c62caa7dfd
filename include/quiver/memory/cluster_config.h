// ClusterConfig: the one file that describes a whole Quiver cluster.
//
// Every process of the cluster loads the same file: the cluster's name, the
// folder of its TLS credentials, the coherence granule, the limits every
// daemon enforces, and for every node its id, control address, and the
// region it lends (base address, size, backing). Loading validates
// everything and names the offending field in its error. A loaded config is
// an immutable value, safe to share between threads.
//
// Example (TOML):
//   [cluster]
//   name = "demo"
//   credentials = "creds"         # relative to this file's folder
//   granule = 64                  # optional; default: the CPU's cache line
//
//   [limits]                      # optional; every key has a default
//   session_quota = "50%"         # of a region's data area, or bytes ("4GiB")
//   malloc_rate = 20000           # allocations per second per session
//
//   [[node]]
//   id = 0                        # 0..65534
//   control = "127.0.0.1:7600"    # host:port peers use ("[::1]:7600" for IPv6)
//   socket = "/run/quiver/0.sock" # optional; absolute, < 108 bytes
//   base = 0x600000000000         # region base address (hex or decimal)
//   size = "1GiB"                 # bytes, or a string with KiB/MiB/GiB/TiB
//   backing = "shm"               # shm | device | incoherent
//   path = "/dev/shm/quiver-demo-0"   # optional for shm/incoherent; required for device
//   memory = "rack1"              # optional: the nodes that map each other's regions
//   transport = "10.0.0.1:7700"   # optional: serves its tables over UCX to the others
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "quiver/util/result.h"

namespace quiver::memory {

enum class BackingKind : uint8_t {
  kShm,         // a shared-memory file (several nodes on one host)
  kDevice,      // a device path such as /dev/dax0.0 (CXL, ThymesisFlow)
  kIncoherent,  // a shm file seen through the non-coherent emulator
};

const char* BackingKindName(BackingKind kind);

struct NodeConfig {
  uint32_t id = 0;
  std::string control;  // "host:port" of the node's daemon for peers
  std::string socket;   // Unix socket of the node's daemon for local clients
  uint64_t base = 0;    // region base address, identical in every process
  uint64_t size = 0;    // region size in bytes
  BackingKind backing = BackingKind::kShm;
  std::string path;  // backing file or device
  // The memory group: nodes with the same group map each other's regions
  // (one host, or hosts joined by CXL or ThymesisFlow). Empty is a group
  // too, the default one. A node reads the tables of a node outside its
  // group over the transport (docs/transport.md, "One cluster, two kinds
  // of node").
  std::string memory;
  // "host:port" where the node's daemon serves its tables over UCX to nodes
  // outside its memory group; empty: it serves none.
  std::string transport;

  uint64_t end() const { return base + size; }
  // Whether every cache that can hold a line of this region is kept
  // coherent by hardware. A shm file is mapped only by processes of its own
  // host, which share one coherent cache hierarchy, so protocol steps 2 and
  // 4 (DESIGN.md §4) have nothing to do for it; device memory (CXL,
  // ThymesisFlow, read by other hosts) and the emulator take every step.
  bool coherent() const { return backing == BackingKind::kShm; }
  bool Contains(uint64_t addr, uint64_t len = 1) const {
    return addr >= base && len <= size && addr - base <= size - len;
  }
};

// A memory amount: a number of bytes, or a fraction of a region's data area.
struct QuotaSpec {
  double fraction = 0;  // used when bytes == 0; in (0, 1]
  uint64_t bytes = 0;
  // Bytes for a region whose data area has `data_size` bytes.
  uint64_t Resolve(uint64_t data_size) const;
  std::string ToString() const;  // "50%" or the byte count

  bool operator==(const QuotaSpec&) const = default;
};

// Limits every daemon of the cluster enforces (docs/security.md explains them).
struct ClusterLimits {
  QuotaSpec session_quota{0.5, 0};  // bytes one client session may hold at one owner
  QuotaSpec node_quota{0.75, 0};    // bytes the clients of one node may hold at one owner
  QuotaSpec max_malloc{1.0, 0};     // largest single allocation
  uint64_t malloc_rate = 20000;     // allocations per second per session
  uint64_t node_malloc_rate = 100000;  // allocations per second per node identity
  uint32_t max_sessions_per_node = 256;
  uint32_t max_pins_per_session = 65536;
  uint32_t max_connections = 1024;  // established connections (sessions) to one daemon
  uint32_t max_setup_connections =
      128;                            // per listener, not established yet (oldest closed)
  uint32_t setup_timeout_ms = 1000;   // TLS handshake and OpenSession must be done within
  uint32_t max_waiting_calls = 4096;  // calls parked at one daemon (waits, barriers)
  uint32_t session_lease_ms = 15000;  // a silent session is dropped after this
  uint32_t restart_grace_ms =
      10000;  // after a restart, time for clients to re-claim pins
  uint32_t spin_us =
      200;  // a daemon awaiting a peer's reply polls this long before sleeping

  bool operator==(const ClusterLimits&) const = default;
};

struct ClusterConfig {
  std::string name;
  // Directory of the cluster's TLS credentials (CA certificate, each node's
  // daemon and client certificates and keys), made by `quiver cluster
  // init`. A relative path is relative to the config file's folder.
  std::string credentials;
  uint64_t granule = 0;  // bytes; a power of two
  ClusterLimits limits;
  std::vector<NodeConfig> nodes;

  // The node with `id`, or nullptr.
  const NodeConfig* FindNode(uint32_t id) const;
  // Whether a process of node `a` maps node `b`'s region (same memory
  // group). False if either node is unknown.
  bool SharesMemory(uint32_t a, uint32_t b) const;
  // The node whose region contains [addr, addr + len), or nullptr.
  const NodeConfig* NodeOfAddress(uint64_t addr, uint64_t len = 1) const;
  // Whether every region of the cluster is coherent (NodeConfig::coherent).
  bool AllCoherent() const;
  // Whether [addr, addr + len) lies in a coherent region. False outside
  // every region: what is not known to be coherent is flushed.
  bool Coherent(uint64_t addr, uint64_t len) const;
  // Serialises back to TOML (round-trips through Parse).
  std::string ToToml() const;
};

// Limits the validator enforces; exposed for tests and error messages.
constexpr uint64_t kMinRegionAddress = 0x10000000ULL;    // above low mappings
constexpr uint64_t kMaxUserAddress = 0x7FFFFFFFF000ULL;  // x86-64 47-bit user space
constexpr uint64_t kDeviceDaxAlignment = 2ULL << 20;     // 2 MiB
constexpr uint64_t kMinRegionSize = 1ULL << 20;          // 1 MiB
// Node ids fit in 16 bits with one value to spare: allocation tags store
// id + 1, so 65535 is reserved.
constexpr uint32_t kMaxNodeId = 65534;
constexpr uint64_t kMaxConfigFileBytes = 1ULL << 20;  // 1 MiB

// Parses and validates TOML text. `origin` names the source in errors.
Result<ClusterConfig> ParseClusterConfig(std::string_view toml,
                                         std::string_view origin = "config");
// Reads and parses a file. Only a regular file (or a symlink to one) of at
// most kMaxConfigFileBytes is read: a FIFO or a device is refused at once,
// never waited on. A relative `credentials` is made absolute against the
// file's folder.
Result<ClusterConfig> LoadClusterConfig(const std::string& path);
// Validates a config built in code (ParseClusterConfig calls this too). Also
// checks sizes against existing backings (device size, shm file size).
Status ValidateClusterConfig(const ClusterConfig& config);

// Parses "4096", "64KiB", "1.5GiB" (binary units; KB/MB/GB are accepted as
// the same binary units) into bytes.
Result<uint64_t> ParseByteSize(std::string_view text);

// The platform's coherence granule: the L1 data cache line size.
uint64_t PlatformCacheLineSize();

}  // namespace quiver::memory
