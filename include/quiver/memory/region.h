// Regions: the memory every node lends, mapped by every process of the
// cluster at the same virtual address.
//
// A region is a backing (shm file, device, or shm file seen through the
// non-coherent emulator) mapped with MAP_FIXED_NOREPLACE at the base its
// node's config gives, so a pointer into it means the same thing in every
// process. Its first page holds a RegionHeader (docs/region-format.md),
// then the owner's allocator metadata, then the data area.
//
// A shm or incoherent backing file is created by its owner with O_EXCL,
// mode 0600, and is never reached through a symlink; an existing file is
// used only if it is a regular file of this user (and, for the owner, mode
// 0600 with one link and a header of this cluster and node, or empty).
// Anything else is refused with an error naming the path: see "Backing
// files" in docs/region-format.md.
//
// RegionMapping and ClusterMap are move-only RAII handles: destroying one
// unmaps (never blocks on a peer); Close() does the same and reports errors.
// They are not thread-safe to mutate; reading through a mapping is.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "quiver/memory/cluster_config.h"
#include "quiver/memory/incoherent.h"
#include "quiver/memory/region_allocator.h"
#include "quiver/util/result.h"

namespace quiver::memory {

// The header at the start of every region, written by its owner.
struct RegionHeader {
  uint64_t magic;  // kRegionMagic, written last
  uint32_t version;
  uint32_t header_size;
  char cluster[64];  // NUL-terminated cluster name
  uint32_t node_id;
  uint32_t backing;  // BackingKind
  uint64_t base;     // where every process maps it
  uint64_t size;
  uint64_t granule;
  uint64_t metadata_offset;  // allocator metadata, from base
  uint64_t metadata_size;
  uint64_t data_offset;  // first allocatable byte, from base
  uint64_t data_size;
  int32_t owner_pid;          // process that created or last took over the region
  uint32_t state;             // RegionState
  uint64_t owner_start_time;  // owner's start time (clock ticks) against pid reuse
  uint64_t created_unix_ns;
  uint64_t generation;  // +1 each time an owner takes the region over
};
static_assert(sizeof(RegionHeader) == 176, "RegionHeader layout is part of the format");
constexpr uint64_t kRegionMagic = 0x4E4F494745525651ULL;  // "QVREGION" little-endian
constexpr uint32_t kRegionVersion = 1;
constexpr uint64_t kRegionHeaderBytes = 4096;  // the header owns the first page
// In the rest of the header page: a 64-bit counter the owner's object store
// increments whenever an object there stops being readable (deleted,
// evicted, spilled), so that clients know when pins they cache for repeated
// Gets are stale (docs/region-format.md, docs/store.md).
constexpr uint64_t kStoreEpochOffset = 512;

enum class RegionState : uint32_t { kInitializing = 1, kReady = 2, kClosed = 3 };

enum class RegionRole : uint8_t {
  kOwnerCreate,  // the owner's daemon: create, adopt or take over the backing
  kOwnerAttach,  // another process of the owner node: use the allocator
  kRemote,       // a process of another node: read/write, never allocate
};

struct RegionOptions {
  RegionRole role = RegionRole::kRemote;
  // kOwnerCreate on a backing left by a dead owner of the same cluster and
  // node: keep its allocations (a restarted daemon) or format it afresh.
  bool keep_allocations_on_takeover = true;
  // Unlink the backing file when the owner closes the region.
  bool remove_on_close = false;
  // kRemote/kOwnerAttach: how long to wait for the owner to make the
  // region ready before failing.
  int wait_ready_ms = 0;
};

class RegionMapping {
 public:
  static Result<RegionMapping> Map(const ClusterConfig& cluster, const NodeConfig& node,
                                   const RegionOptions& options);
  RegionMapping() = default;
  RegionMapping(RegionMapping&& other) noexcept;
  RegionMapping& operator=(RegionMapping&& other) noexcept;
  ~RegionMapping();

  // Unmaps; the owner marks the region closed (and unlinks if asked).
  Status Close();

  uint32_t node_id() const { return node_id_; }
  uint8_t* base() const { return base_; }
  uint64_t size() const { return size_; }
  bool Contains(const void* p, uint64_t len = 1) const {
    auto a = reinterpret_cast<uint64_t>(p), b = reinterpret_cast<uint64_t>(base_);
    return a >= b && len <= size_ && a - b <= size_ - len;
  }
  // Mapped through the non-coherent emulator (a remote incoherent region).
  bool emulated() const { return emulated_; }
  // kOwnerCreate found a backing left by a dead owner and took it over.
  bool took_over() const { return took_over_; }
  RegionRole role() const { return role_; }
  const RegionHeader& header() const;
  uint8_t* data() const { return base_ + data_offset_; }
  uint64_t data_size() const { return data_size_; }
  // The owner's allocator; invalid for kRemote mappings.
  RegionAllocator* allocator() { return allocator_.valid() ? &allocator_ : nullptr; }

 private:
  Status MapOwner(const ClusterConfig& cluster, const NodeConfig& node,
                  const RegionOptions& options);
  Status MapRemote(const ClusterConfig& cluster, const NodeConfig& node,
                   const RegionOptions& options);
  Status MapAt(int prot_flags);
  Status WaitReady(const ClusterConfig& cluster, const NodeConfig& node, int wait_ms);
  void Release();

  uint32_t node_id_ = 0;
  uint8_t* base_ = nullptr;    // set once mapped
  uint8_t* target_ = nullptr;  // the configured base
  uint64_t size_ = 0;
  uint64_t data_offset_ = 0;
  uint64_t data_size_ = 0;
  int fd_ = -1;
  bool emulated_ = false;
  bool took_over_ = false;
  bool remove_on_close_ = false;
  RegionRole role_ = RegionRole::kRemote;
  std::string path_;
  RegionAllocator allocator_;
  std::unique_ptr<IncoherentView> view_;  // emulated mappings only
};

// Every region of a cluster, mapped in this process.
class ClusterMap {
 public:
  struct Options {
    // Create (take over) this node's own region: true for the node daemon.
    bool create_own_region = false;
    bool keep_allocations_on_takeover = true;
    bool remove_own_region_on_close = false;
    int wait_ready_ms = 0;
  };
  // Maps all regions of `config` as a process of node `local_node`.
  static Result<std::unique_ptr<ClusterMap>> Open(const ClusterConfig& config,
                                                  uint32_t local_node,
                                                  const Options& options);
  ~ClusterMap();
  Status Close();

  const ClusterConfig& config() const { return config_; }
  uint32_t local_node() const { return local_node_; }
  RegionMapping* region(uint32_t node_id);
  RegionMapping* local_region() { return region(local_node_); }
  // The region containing [p, p + len), or nullptr.
  RegionMapping* RegionOf(const void* p, uint64_t len = 1);
  std::vector<RegionMapping*> regions();

 private:
  ClusterMap() = default;
  ClusterConfig config_;
  uint32_t local_node_ = 0;
  std::vector<std::unique_ptr<RegionMapping>> regions_;
};

// Removes the backing file of `node` (shm and incoherent backings only).
Status RemoveRegionBacking(const NodeConfig& node);

// The layout a region of `size` bytes with `granule` gets.
struct RegionLayout {
  uint64_t metadata_offset, metadata_size, data_offset, data_size;
};
RegionLayout ComputeRegionLayout(uint64_t size, uint64_t granule);

}  // namespace quiver::memory
