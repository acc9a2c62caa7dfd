#include "quiver/memory/region.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "memory/file_type.h"
#include "quiver/util/string_builder.h"
#include "util/round_up.h"

namespace quiver::memory {

namespace {

using internal::FileTypeName;

using util::Hex;

using util::RoundUp;

// Start time of a process in clock ticks since boot (field 22 of
// /proc/PID/stat), or 0 if it does not exist. Guards against pid reuse.
uint64_t ProcessStartTime(int pid) {
  if (pid <= 0) return 0;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return 0;
  size_t close = line.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 22) return std::stoull(field);
  }
  return 0;
}

bool OwnerAlive(const RegionHeader& h) {
  if (h.state == static_cast<uint32_t>(RegionState::kClosed) || h.owner_pid <= 0) {
    return false;
  }
  uint64_t start = ProcessStartTime(h.owner_pid);
  return start != 0 && start == h.owner_start_time;
}

uint64_t NowUnixNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// Checks a header against the config: same cluster, node, geometry.
Status CheckHeader(const RegionHeader& h, const ClusterConfig& cluster,
                   const NodeConfig& node, const std::string& path) {
  if (h.magic != kRegionMagic) {
    return Status::Invalid("'", path, "' is not a Quiver region (bad magic)");
  }
  if (h.version != kRegionVersion) {
    return Status::Invalid("'", path, "' has region format version ", h.version,
                           "; this build reads version ", kRegionVersion);
  }
  std::string name(h.cluster, strnlen(h.cluster, sizeof(h.cluster)));
  if (name != cluster.name || h.node_id != node.id) {
    return Status::Invalid("'", path, "' belongs to cluster '", name, "' node ",
                           h.node_id, ", not to cluster '", cluster.name, "' node ",
                           node.id);
  }
  if (h.base != node.base || h.size != node.size || h.granule != cluster.granule) {
    return Status::Invalid("'", path, "' was made for base ", Hex(h.base), ", size ",
                           h.size, ", granule ", h.granule, "; the config says base ",
                           Hex(node.base), ", size ", node.size, ", granule ",
                           cluster.granule);
  }
  return Status::OK();
}

std::string BackingName(const NodeConfig& node) {
  return "node " + std::to_string(node.id) + "'s backing '" + node.path + "'";
}

constexpr const char* kRemoveIt = "; remove it or choose another path";

// Flags for opening a backing that already exists. A shm file must be the
// file itself, never what a symlink planted at the path points to; a device
// path may be a udev symlink. O_NONBLOCK: a FIFO at the path must not hang.
int ExistingBackingFlags(const NodeConfig& node) {
  const int flags = O_RDWR | O_CLOEXEC | O_NONBLOCK;
  return node.backing == BackingKind::kDevice ? flags : flags | O_NOFOLLOW;
}

// Whether a backing of this kind may be a file of type `mode`.
bool AcceptedType(const NodeConfig& node, mode_t mode) {
  if (node.backing != BackingKind::kDevice) return S_ISREG(mode);
  return S_ISCHR(mode) || S_ISBLK(mode) || S_ISREG(mode);
}

Status WrongType(const NodeConfig& node, mode_t mode) {
  if (node.backing == BackingKind::kDevice) {
    return Status::Invalid(BackingName(node), " is ", FileTypeName(mode),
                           "; a device backing must be a character or block device or a "
                           "regular file");
  }
  return Status::Invalid(BackingName(node), " is ", FileTypeName(mode),
                         ", not a regular file", kRemoveIt);
}

// Explains why opening the backing failed with `err`.
Status OpenError(const NodeConfig& node, int err) {
  struct stat st;
  if (err == ELOOP && lstat(node.path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    return Status::PermissionDenied(
        BackingName(node), " is a symbolic link; refusing to follow it", kRemoveIt);
  }
  // EISDIR, ENXIO (a socket), ...: say what is there.
  if (err != ENOENT && stat(node.path.c_str(), &st) == 0 &&
      !AcceptedType(node, st.st_mode)) {
    return WrongType(node, st.st_mode);
  }
  return Status::FromErrno(err, "opening " + BackingName(node));
}

// Checks what was opened at a backing path before anything is mapped.
// Every process requires a shm file to be a regular file of this user: a
// file of another user would give that user the region. `adopting` (an
// owner reusing an existing file) also requires mode 0600 and one link, so
// nobody else can hold it open or reach it under another name.
Status CheckOpenedBacking(const NodeConfig& node, int fd, bool adopting) {
  struct stat st;
  if (fstat(fd, &st) != 0) return Status::FromErrno(errno, "fstat " + BackingName(node));
  if (!AcceptedType(node, st.st_mode)) return WrongType(node, st.st_mode);
  if (node.backing == BackingKind::kDevice) return Status::OK();
  const std::string what = BackingName(node);
  if (st.st_uid != geteuid()) {
    return Status::PermissionDenied(what, " is owned by uid ", st.st_uid,
                                    ", not by this user (uid ", geteuid(), ")",
                                    kRemoveIt);
  }
  if (!adopting) return Status::OK();
  if ((st.st_mode & 07777) != 0600) {
    char mode[16];
    std::snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
    return Status::PermissionDenied(what, " has mode ", mode,
                                    "; a region backing must be 0600", kRemoveIt);
  }
  if (st.st_nlink != 1) {
    return Status::PermissionDenied(what, " has ", st.st_nlink,
                                    " hard links; a region backing must have exactly one",
                                    kRemoveIt);
  }
  return Status::OK();
}

// Opens the backing of a process that never creates it (kRemote,
// kOwnerAttach), waiting up to `deadline` for it to appear. `*fd` is set
// whenever something was opened, also on failure: the caller closes it.
Status OpenExistingBacking(const NodeConfig& node,
                           std::chrono::steady_clock::time_point deadline, int* fd) {
  while ((*fd = ::open(node.path.c_str(), ExistingBackingFlags(node))) < 0) {
    if (errno != ENOENT || std::chrono::steady_clock::now() >= deadline) {
      return OpenError(node, errno);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return CheckOpenedBacking(node, *fd, /*adopting=*/false);
}

// The owner's open (kOwnerCreate): creates the file exclusively, or opens
// an existing one that passes CheckOpenedBacking's adoption rules; the
// caller then checks its header. `*fd` as for OpenExistingBacking.
Status OpenOwnBacking(const NodeConfig& node, int* fd, bool* created) {
  *created = false;
  if (node.backing == BackingKind::kDevice) {
    return OpenExistingBacking(node, std::chrono::steady_clock::now(), fd);
  }
  // A file removed between the two opens is created on the next round.
  for (int attempt = 0;; ++attempt) {
    *fd = ::open(node.path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                 0600);
    if (*fd >= 0) {
      *created = true;
      // The umask may have cleared bits of 0600; the file is new and ours.
      if (fchmod(*fd, 0600) != 0) return Status::FromErrno(errno, "fchmod " + node.path);
      return Status::OK();
    }
    if (errno != EEXIST) return OpenError(node, errno);
    *fd = ::open(node.path.c_str(), ExistingBackingFlags(node));
    if (*fd >= 0) return CheckOpenedBacking(node, *fd, /*adopting=*/true);
    if (errno != ENOENT || attempt == 3) return OpenError(node, errno);
  }
}

// The header an owner writes when it formats a region: everything but the
// magic (written last) and the owner fields.
RegionHeader InitialHeader(const ClusterConfig& cluster, const NodeConfig& node,
                           const RegionLayout& layout) {
  RegionHeader h;
  std::memset(static_cast<void*>(&h), 0, sizeof(h));
  h.version = kRegionVersion;
  h.header_size = sizeof(RegionHeader);
  std::snprintf(h.cluster, sizeof(h.cluster), "%s", cluster.name.c_str());
  h.node_id = node.id;
  h.backing = static_cast<uint32_t>(node.backing);
  h.base = node.base;
  h.size = node.size;
  h.granule = cluster.granule;
  h.metadata_offset = layout.metadata_offset;
  h.metadata_size = layout.metadata_size;
  h.data_offset = layout.data_offset;
  h.data_size = layout.data_size;
  h.created_unix_ns = NowUnixNs();
  h.state = static_cast<uint32_t>(RegionState::kInitializing);
  return h;
}

// A header without magic that an owner of this cluster and node was writing
// when it died: the file was a region being formatted, so formatting it
// again destroys nothing of anyone else.
bool IsInterruptedFormat(const RegionHeader& h, const ClusterConfig& cluster,
                         const NodeConfig& node) {
  return h.magic == 0 && h.version == kRegionVersion &&
         h.header_size == sizeof(RegionHeader) &&
         std::string(h.cluster, strnlen(h.cluster, sizeof(h.cluster))) == cluster.name &&
         h.node_id == node.id &&
         h.state == static_cast<uint32_t>(RegionState::kInitializing);
}

Status ReadHeader(int fd, RegionHeader* h) {
  ssize_t n = pread(fd, h, sizeof(*h), 0);
  if (n < 0) return Status::FromErrno(errno, "reading the region header");
  if (n < static_cast<ssize_t>(sizeof(*h))) std::memset(h, 0, sizeof(*h));
  return Status::OK();
}

}  // namespace

RegionLayout ComputeRegionLayout(uint64_t size, uint64_t granule) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t align = std::max(granule, page);
  RegionLayout l;
  l.metadata_offset = kRegionHeaderBytes;
  // The metadata size depends on the data size, which depends on it: size
  // the metadata for the whole region, which is never too small.
  l.metadata_size = RoundUp(RegionAllocator::MetadataSize(size, granule), page);
  l.data_offset = RoundUp(l.metadata_offset + l.metadata_size, align);
  l.data_size = size > l.data_offset ? (size - l.data_offset) / granule * granule : 0;
  return l;
}

RegionMapping::RegionMapping(RegionMapping&& o) noexcept { *this = std::move(o); }

RegionMapping& RegionMapping::operator=(RegionMapping&& o) noexcept {
  if (this != &o) {
    Release();
    node_id_ = o.node_id_;
    base_ = std::exchange(o.base_, nullptr);
    target_ = o.target_;
    size_ = o.size_;
    data_offset_ = o.data_offset_;
    data_size_ = o.data_size_;
    fd_ = std::exchange(o.fd_, -1);
    emulated_ = o.emulated_;
    took_over_ = o.took_over_;
    remove_on_close_ = o.remove_on_close_;
    role_ = o.role_;
    path_ = std::move(o.path_);
    allocator_ = o.allocator_;
    o.allocator_ = RegionAllocator();
    view_ = std::move(o.view_);
  }
  return *this;
}

RegionMapping::~RegionMapping() { Release(); }

const RegionHeader& RegionMapping::header() const {
  return *reinterpret_cast<const RegionHeader*>(base_);
}

void RegionMapping::Release() {
  if (base_ != nullptr && role_ == RegionRole::kOwnerCreate) {
    auto* h = reinterpret_cast<RegionHeader*>(base_);
    if (h->owner_pid == static_cast<int32_t>(getpid())) {
      h->state = static_cast<uint32_t>(RegionState::kClosed);
      h->owner_pid = 0;
    }
    if (remove_on_close_ && !path_.empty()) unlink(path_.c_str());
  }
  if (view_ != nullptr) {
    view_.reset();  // unmaps the emulated range
  } else if (base_ != nullptr) {
    munmap(base_, size_);
  }
  base_ = nullptr;
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  allocator_ = RegionAllocator();
}

Status RegionMapping::Close() {
  Release();
  return Status::OK();
}

Status RegionMapping::MapAt(int prot) {
  uint8_t* base = target_;
  void* p = mmap(base, size_, prot, MAP_SHARED | MAP_FIXED_NOREPLACE, fd_, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    if (err == EEXIST) {
      return Status::AlreadyExists("node ", node_id_, "'s region [",
                                   Hex(reinterpret_cast<uint64_t>(base)), ", ",
                                   Hex(reinterpret_cast<uint64_t>(base) + size_),
                                   ") overlaps a mapping this process already has; pick "
                                   "another base address in the cluster config");
    }
    return Status::FromErrno(err,
                             "mapping node " + std::to_string(node_id_) + "'s region");
  }
  base_ = base;
  if (p != base) {
    // Kernels before 4.17 ignore MAP_FIXED_NOREPLACE: never accept a remap.
    munmap(p, size_);
    return Status::IOError("the kernel placed node ", node_id_, "'s region at ",
                           Hex(reinterpret_cast<uint64_t>(p)), " instead of its base");
  }
  return Status::OK();
}

Status RegionMapping::MapOwner(const ClusterConfig& cluster, const NodeConfig& node,
                               const RegionOptions& options) {
  const bool create = options.role == RegionRole::kOwnerCreate;
  const bool device = node.backing == BackingKind::kDevice;
  bool created = false;
  QUIVER_RETURN_NOT_OK(create ? OpenOwnBacking(node, &fd_, &created)
                              : OpenExistingBacking(node, /*deadline=*/{}, &fd_));
  const RegionLayout layout = ComputeRegionLayout(node.size, cluster.granule);
  data_offset_ = layout.data_offset;
  data_size_ = layout.data_size;
  if (!create) {
    QUIVER_RETURN_NOT_OK(MapAt(PROT_READ | PROT_WRITE));
    QUIVER_RETURN_NOT_OK(WaitReady(cluster, node, options.wait_ready_ms));
    QUIVER_ASSIGN_OR_RAISE(
        allocator_, RegionAllocator::Attach(base_ + layout.metadata_offset,
                                            layout.metadata_size, data(), data_size_));
    return Status::OK();
  }
  // Serialise creators of the same backing.
  if (flock(fd_, LOCK_EX) != 0) return Status::FromErrno(errno, "flock " + node.path);
  struct stat st;
  if (fstat(fd_, &st) != 0) return Status::FromErrno(errno, "fstat " + node.path);
  RegionHeader old{};
  QUIVER_RETURN_NOT_OK(ReadHeader(fd_, &old));
  const bool fresh = old.magic == 0;
  if (!fresh) {
    QUIVER_RETURN_NOT_OK(CheckHeader(old, cluster, node, node.path));
    if (OwnerAlive(old) && old.owner_pid != static_cast<int32_t>(getpid())) {
      return Status::AlreadyExists("node ", node.id, "'s region '", node.path,
                                   "' is in use by its owner, pid ", old.owner_pid);
    }
    took_over_ = true;
  } else if (!device && !created && st.st_size != 0 &&
             !IsInterruptedFormat(old, cluster, node)) {
    // Our own file, but not one we made: never overwrite its bytes.
    return Status::FailedPrecondition(BackingName(node), " holds ", st.st_size,
                                      " bytes but no Quiver region header; refusing to "
                                      "overwrite it",
                                      kRemoveIt);
  }
  const RegionHeader initial = InitialHeader(cluster, node, layout);
  if (!device) {
    // Mark the file as a region being formatted before it grows, so a
    // crash from here on leaves a file a restarted owner recognises.
    if (fresh && pwrite(fd_, &initial, sizeof(initial), 0) !=
                     static_cast<ssize_t>(sizeof(initial))) {
      return Status::FromErrno(errno, "writing the header of '" + node.path + "'");
    }
    if (static_cast<uint64_t>(st.st_size) < node.size &&
        ftruncate(fd_, static_cast<off_t>(node.size)) != 0) {
      return Status::FromErrno(errno, "sizing '" + node.path + "'");
    }
  }
  QUIVER_RETURN_NOT_OK(MapAt(PROT_READ | PROT_WRITE));
  auto* h = reinterpret_cast<RegionHeader*>(base_);
  const bool format = fresh || !options.keep_allocations_on_takeover;
  if (format) {
    __atomic_store_n(&h->magic, 0, __ATOMIC_RELEASE);
    std::memcpy(static_cast<void*>(h), &initial, sizeof(*h));
    QUIVER_ASSIGN_OR_RAISE(
        allocator_,
        RegionAllocator::Format(base_ + layout.metadata_offset, layout.metadata_size,
                                data(), data_size_, cluster.granule));
  } else {
    QUIVER_ASSIGN_OR_RAISE(
        allocator_, RegionAllocator::Attach(base_ + layout.metadata_offset,
                                            layout.metadata_size, data(), data_size_));
    // A dead owner may have died inside the allocator; check before use.
    QUIVER_RETURN_NOT_OK(allocator_.CheckConsistency().WithContext(
        "taking over node " + std::to_string(node.id) + "'s region"));
  }
  h->owner_pid = static_cast<int32_t>(getpid());
  h->owner_start_time = ProcessStartTime(getpid());
  h->generation += 1;
  __atomic_store_n(&h->state, static_cast<uint32_t>(RegionState::kReady),
                   __ATOMIC_RELEASE);
  __atomic_store_n(&h->magic, kRegionMagic, __ATOMIC_RELEASE);
  flock(fd_, LOCK_UN);
  return Status::OK();
}

Status RegionMapping::WaitReady(const ClusterConfig& cluster, const NodeConfig& node,
                                int wait_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (true) {
    RegionHeader h{};
    QUIVER_RETURN_NOT_OK(ReadHeader(fd_, &h));
    // Closed is as good as ready: the owner stopped cleanly and its data is
    // still there (a whole cluster restarts one daemon at a time).
    if (h.magic == kRegionMagic &&
        (h.state == static_cast<uint32_t>(RegionState::kReady) ||
         h.state == static_cast<uint32_t>(RegionState::kClosed))) {
      return CheckHeader(h, cluster, node, node.path);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      if (h.magic == kRegionMagic)
        QUIVER_RETURN_NOT_OK(CheckHeader(h, cluster, node, node.path));
      return Status::Unavailable("node ", node.id, "'s region '", node.path,
                                 "' has not been made yet (has its owner ever started?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Status RegionMapping::MapRemote(const ClusterConfig& cluster, const NodeConfig& node,
                                const RegionOptions& options) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options.wait_ready_ms);
  QUIVER_RETURN_NOT_OK(OpenExistingBacking(node, deadline, &fd_));
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  QUIVER_RETURN_NOT_OK(
      WaitReady(cluster, node, static_cast<int>(std::max<int64_t>(0, left.count()))));
  const RegionLayout layout = ComputeRegionLayout(node.size, cluster.granule);
  data_offset_ = layout.data_offset;
  data_size_ = layout.data_size;
  if (node.backing == BackingKind::kIncoherent) {
    auto view = IncoherentView::Map(target_, size_, fd_, cluster.granule);
    if (!view.ok()) return view.status().WithContext("node " + std::to_string(node.id));
    view_ = std::move(view).ValueOrDie();
    base_ = target_;
    emulated_ = true;
    return Status::OK();
  }
  return MapAt(PROT_READ | PROT_WRITE);
}

Result<RegionMapping> RegionMapping::Map(const ClusterConfig& cluster,
                                         const NodeConfig& node,
                                         const RegionOptions& options) {
  RegionMapping m;
  m.node_id_ = node.id;
  m.target_ = reinterpret_cast<uint8_t*>(node.base);
  m.size_ = node.size;
  m.role_ = options.role;
  m.path_ = node.path;
  m.remove_on_close_ = options.remove_on_close;
  Status st = options.role == RegionRole::kRemote ? m.MapRemote(cluster, node, options)
                                                  : m.MapOwner(cluster, node, options);
  if (!st.ok()) {
    if (m.role_ == RegionRole::kOwnerCreate) m.remove_on_close_ = false;
    m.role_ = RegionRole::kRemote;  // never mark someone else's region closed
    return st;
  }
  return m;
}

Status RemoveRegionBacking(const NodeConfig& node) {
  if (node.backing == BackingKind::kDevice) {
    return Status::Invalid("node ", node.id, " has a device backing; not removing ",
                           node.path);
  }
  if (unlink(node.path.c_str()) != 0 && errno != ENOENT) {
    return Status::FromErrno(errno, "removing '" + node.path + "'");
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// ClusterMap

Result<std::unique_ptr<ClusterMap>> ClusterMap::Open(const ClusterConfig& config,
                                                     uint32_t local_node,
                                                     const Options& options) {
  if (config.FindNode(local_node) == nullptr) {
    return Status::Invalid("node ", local_node, " is not in cluster '", config.name, "'");
  }
  std::unique_ptr<ClusterMap> map(new ClusterMap());
  map->config_ = config;
  map->local_node_ = local_node;
  // The own region first: a daemon must have it ready before waiting on others.
  std::vector<const NodeConfig*> order;
  order.push_back(config.FindNode(local_node));
  // Only the regions of its memory group: the others are not reachable
  // from this host (their tables come over the transport).
  for (const auto& n : config.nodes) {
    if (n.id != local_node && config.SharesMemory(local_node, n.id)) order.push_back(&n);
  }
  for (const NodeConfig* n : order) {
    RegionOptions ro;
    ro.wait_ready_ms = options.wait_ready_ms;
    if (n->id == local_node) {
      ro.role =
          options.create_own_region ? RegionRole::kOwnerCreate : RegionRole::kOwnerAttach;
      ro.keep_allocations_on_takeover = options.keep_allocations_on_takeover;
      ro.remove_on_close = options.remove_own_region_on_close;
    }
    auto r = RegionMapping::Map(config, *n, ro);
    if (!r.ok()) return r.status();
    map->regions_.push_back(std::make_unique<RegionMapping>(std::move(r).ValueOrDie()));
  }
  return map;
}

ClusterMap::~ClusterMap() { (void)Close(); }

Status ClusterMap::Close() {
  Status first;
  // Unmap the others first, the own region last.
  for (auto it = regions_.rbegin(); it != regions_.rend(); ++it) {
    Status st = (*it)->Close();
    if (first.ok() && !st.ok()) first = st;
  }
  regions_.clear();
  return first;
}

RegionMapping* ClusterMap::region(uint32_t node_id) {
  for (auto& r : regions_) {
    if (r->node_id() == node_id) return r.get();
  }
  return nullptr;
}

RegionMapping* ClusterMap::RegionOf(const void* p, uint64_t len) {
  for (auto& r : regions_) {
    if (r->Contains(p, len)) return r.get();
  }
  return nullptr;
}

std::vector<RegionMapping*> ClusterMap::regions() {
  std::vector<RegionMapping*> out;
  for (auto& r : regions_) out.push_back(r.get());
  return out;
}

}  // namespace quiver::memory
