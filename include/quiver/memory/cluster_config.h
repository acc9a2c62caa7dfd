// ClusterConfig: the one file that describes a whole Quiver cluster.
//
// Every process of the cluster loads the same file: the cluster's name and
// shared token, the coherence granule, and for every node its id, control
// address, and the region it lends (base address, size, backing). Loading
// validates everything and names the offending field in its error. A loaded
// config is an immutable value, safe to share between threads.
//
// Example (TOML):
//   [cluster]
//   name = "demo"
//   token = "change-me"
//   granule = 64                  # optional; default: the CPU's cache line
//
//   [[node]]
//   id = 0
//   control = "127.0.0.1:7600"    # host:port peers use
//   base = 0x600000000000         # region base address (hex or decimal)
//   size = "1GiB"                 # bytes, or a string with KiB/MiB/GiB/TiB
//   backing = "shm"               # shm | device | incoherent
//   path = "/dev/shm/quiver-demo-0"   # optional for shm/incoherent; required for device
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

  uint64_t end() const { return base + size; }
  bool Contains(uint64_t addr, uint64_t len = 1) const {
    return addr >= base && len <= size && addr - base <= size - len;
  }
};

struct ClusterConfig {
  std::string name;
  std::string token;
  uint64_t granule = 0;  // bytes; a power of two
  std::vector<NodeConfig> nodes;

  // The node with `id`, or nullptr.
  const NodeConfig* FindNode(uint32_t id) const;
  // The node whose region contains [addr, addr + len), or nullptr.
  const NodeConfig* NodeOfAddress(uint64_t addr, uint64_t len = 1) const;
  // Serialises back to TOML (round-trips through Parse).
  std::string ToToml() const;
};

// Limits the validator enforces; exposed for tests and error messages.
constexpr uint64_t kMinRegionAddress = 0x10000000ULL;    // above low mappings
constexpr uint64_t kMaxUserAddress = 0x7FFFFFFFF000ULL;  // x86-64 47-bit user space
constexpr uint64_t kDeviceDaxAlignment = 2ULL << 20;     // 2 MiB
constexpr uint64_t kMinRegionSize = 1ULL << 20;          // 1 MiB

// Parses and validates TOML text. `origin` names the source in errors.
Result<ClusterConfig> ParseClusterConfig(std::string_view toml,
                                         std::string_view origin = "config");
// Reads and parses a file.
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
