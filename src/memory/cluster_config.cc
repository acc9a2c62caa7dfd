#include "quiver/memory/cluster_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "memory/file_type.h"
#include "quiver/util/string_builder.h"

namespace quiver::memory {

const char* BackingKindName(BackingKind kind) {
  switch (kind) {
    case BackingKind::kShm:
      return "shm";
    case BackingKind::kDevice:
      return "device";
    case BackingKind::kIncoherent:
      return "incoherent";
  }
  return "?";
}

uint64_t PlatformCacheLineSize() {
  long line = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
  return line > 0 ? static_cast<uint64_t>(line) : 64;
}

const NodeConfig* ClusterConfig::FindNode(uint32_t id) const {
  for (const auto& n : nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

bool ClusterConfig::SharesMemory(uint32_t a, uint32_t b) const {
  const NodeConfig* x = FindNode(a);
  const NodeConfig* y = FindNode(b);
  return x != nullptr && y != nullptr && x->memory == y->memory;
}

const NodeConfig* ClusterConfig::NodeOfAddress(uint64_t addr, uint64_t len) const {
  for (const auto& n : nodes) {
    if (n.Contains(addr, len)) return &n;
  }
  return nullptr;
}

bool ClusterConfig::AllCoherent() const {
  return std::all_of(nodes.begin(), nodes.end(),
                     [](const NodeConfig& n) { return n.coherent(); });
}

bool ClusterConfig::Coherent(uint64_t addr, uint64_t len) const {
  const NodeConfig* n = NodeOfAddress(addr, len);
  return n != nullptr && n->coherent();
}

uint64_t QuotaSpec::Resolve(uint64_t data_size) const {
  if (bytes != 0) return bytes;
  if (!(fraction > 0)) return 0;
  if (fraction >= 1) return data_size;
  // long double keeps every byte of a 64-bit size exact enough to floor.
  return static_cast<uint64_t>(static_cast<long double>(data_size) * fraction);
}

namespace {

using internal::FileTypeName;
// "50%" -> 0.5. In long double, where fraction * 100 of any double is exact,
// so ToString can always find a text that parses back to the same fraction.
double PercentToFraction(const char* text, char** end) {
  return static_cast<double>(std::strtold(text, end) / 100);
}
}  // namespace

std::string QuotaSpec::ToString() const {
  if (bytes != 0) return std::to_string(bytes);
  // The shortest text that parses back to the same fraction ("29%", not
  // "28.9999999999999991%"), so ToToml round-trips.
  char buf[64];
  for (int precision = 15; precision <= 21; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*Lg", precision,
                  static_cast<long double>(fraction) * 100);
    if (PercentToFraction(buf, nullptr) == fraction) break;
  }
  return std::string(buf) + "%";
}

Result<uint64_t> ParseByteSize(std::string_view text) {
  std::string s(text);
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == ' ' || c == '_'; }),
          s.end());
  size_t pos = 0;
  while (pos < s.size() &&
         (std::isdigit(static_cast<unsigned char>(s[pos])) || s[pos] == '.')) {
    ++pos;
  }
  if (pos == 0) return Status::Invalid("size '", text, "' does not start with a number");
  double number = 0;
  try {
    number = std::stod(s.substr(0, pos));
  } catch (...) {
    return Status::Invalid("size '", text, "' is not a number");
  }
  std::string unit = s.substr(pos);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double mult = 1;
  if (unit.empty() || unit == "b") {
    mult = 1;
  } else if (unit == "k" || unit == "kb" || unit == "kib") {
    mult = 1024.0;
  } else if (unit == "m" || unit == "mb" || unit == "mib") {
    mult = 1024.0 * 1024;
  } else if (unit == "g" || unit == "gb" || unit == "gib") {
    mult = 1024.0 * 1024 * 1024;
  } else if (unit == "t" || unit == "tb" || unit == "tib") {
    mult = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return Status::Invalid("size '", text, "' has unknown unit '", unit, "'");
  }
  double bytes = number * mult;
  if (!std::isfinite(bytes) || bytes < 0 || bytes > 9.0e18) {
    return Status::Invalid("size '", text, "' is out of range");
  }
  if (bytes != std::floor(bytes)) {
    return Status::Invalid("size '", text, "' is not a whole number of bytes");
  }
  return static_cast<uint64_t>(bytes);
}

namespace {

using util::Hex;

Status IdTooLarge(std::string_view where, uint64_t id) {
  return Status::Invalid(where, ".id ", id, " is larger than ", kMaxNodeId, " (",
                         kMaxNodeId + 1,
                         " is reserved: allocation tags store the id + 1 in 16 bits)");
}

// "host:port" or "[ipv6]:port": a non-empty host and a port in 1..65535.
// Checked here so a typo fails when the file is loaded, not at the first
// connection to that node.
Status CheckHostPort(const std::string& control, const std::string& where,
                     const char* key = "control") {
  const std::string what = where + "." + key + " '" + control + "'";
  std::string_view sv = control, host, port;
  if (!sv.empty() && sv.front() == '[') {
    const size_t close = sv.find(']');
    if (close == std::string_view::npos || sv.substr(close + 1, 1) != ":") {
      return Status::Invalid(what, " must be [address]:port for an IPv6 address");
    }
    host = sv.substr(1, close - 1);
    port = sv.substr(close + 2);
  } else {
    const size_t colon = sv.rfind(':');
    if (colon == std::string_view::npos) {
      return Status::Invalid(what, " must be host:port");
    }
    host = sv.substr(0, colon);
    port = sv.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return Status::Invalid(what,
                             ": an IPv6 address must be in brackets, as in [::1]:", port);
    }
  }
  if (host.empty()) return Status::Invalid(what, ": the host is empty");
  const bool digits = !port.empty() && std::all_of(port.begin(), port.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
  if (!digits) {
    return Status::Invalid(what, ": port '", port, "' is not a decimal number");
  }
  const unsigned long value = port.size() > 5 ? 0 : std::stoul(std::string(port));
  if (value < 1 || value > 65535) {
    return Status::Invalid(what, ": port ", port, " is not in 1..65535");
  }
  return Status::OK();
}

// A memory group names the nodes that can map each other's regions (one
// host, or hosts joined by CXL or ThymesisFlow): the same rules as a
// cluster name, or empty for the default group.
Status CheckMemoryGroup(const std::string& group, const std::string& where) {
  if (group.size() > 63) {
    return Status::Invalid(where, ".memory '", group.substr(0, 63),
                           "...' is longer than 63 characters");
  }
  for (char ch : group) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' &&
        ch != '.') {
      return Status::Invalid(where, ".memory '", group,
                             "' may contain only letters, digits, '-', '_' and '.'");
    }
  }
  return Status::OK();
}

// A daemon binds its Unix socket at this path: it must not depend on the
// working directory and must fit in sockaddr_un.
Status CheckSocketPath(const std::string& socket, const std::string& where) {
  if (socket.empty()) return Status::OK();  // a config built in code, no local clients
  if (socket.front() != '/') {
    return Status::Invalid(where, ".socket '", socket, "' must be an absolute path");
  }
  constexpr size_t kSunPath = sizeof(sockaddr_un::sun_path);
  if (socket.size() >= kSunPath) {
    return Status::Invalid(where, ".socket '", socket, "' has ", socket.size(),
                           " bytes; a Unix socket path must be shorter than ", kSunPath);
  }
  return Status::OK();
}

// Reads an unsigned integer that TOML may hold as an integer or a string
// (hex literals, sizes with units).
Result<uint64_t> ReadU64(const toml::node& node, std::string_view what,
                         bool allow_units) {
  if (auto i = node.value<int64_t>()) {
    if (*i < 0) return Status::Invalid(what, " must not be negative (got ", *i, ")");
    return static_cast<uint64_t>(*i);
  }
  if (auto s = node.value<std::string>()) {
    std::string_view sv = *s;
    if (sv.rfind("0x", 0) == 0 || sv.rfind("0X", 0) == 0) {
      errno = 0;
      char* end = nullptr;
      unsigned long long v = std::strtoull(s->c_str() + 2, &end, 16);
      if (errno != 0 || end == s->c_str() + 2 || *end != '\0') {
        return Status::Invalid(what, ": '", sv, "' is not a hex number");
      }
      return static_cast<uint64_t>(v);
    }
    if (allow_units) {
      auto r = ParseByteSize(sv);
      if (!r.ok()) return r.status().WithContext(std::string(what));
      return r;
    }
  }
  return Status::Invalid(what, " must be a non-negative integer");
}

Status CheckKeys(const toml::table& table, const std::set<std::string>& allowed,
                 std::string_view where) {
  for (const auto& [key, value] : table) {
    if (!allowed.count(std::string(key.str()))) {
      return Status::Invalid(where, ": unknown key '", key.str(), "'");
    }
  }
  return Status::OK();
}

Result<std::string> ReadString(const toml::table& t, const char* key,
                               std::string_view where, bool required) {
  const toml::node* n = t.get(key);
  if (n == nullptr) {
    if (required) return Status::Invalid(where, ".", key, " is missing");
    return std::string();
  }
  auto s = n->value<std::string>();
  if (!s) return Status::Invalid(where, ".", key, " must be a string");
  return *s;
}

Result<NodeConfig> ParseNode(const toml::table& t, size_t index) {
  std::string where = "node[" + std::to_string(index) + "]";
  QUIVER_RETURN_NOT_OK(CheckKeys(t,
                                 {"id", "control", "socket", "base", "size", "backing",
                                  "path", "memory", "transport"},
                                 where));
  NodeConfig n;
  const toml::node* id = t.get("id");
  if (id == nullptr) return Status::Invalid(where, ".id is missing");
  QUIVER_ASSIGN_OR_RAISE(uint64_t idv, ReadU64(*id, where + ".id", false));
  if (idv > kMaxNodeId) return IdTooLarge(where, idv);
  n.id = static_cast<uint32_t>(idv);
  where = "node " + std::to_string(n.id);
  QUIVER_ASSIGN_OR_RAISE(n.control, ReadString(t, "control", where, true));
  QUIVER_ASSIGN_OR_RAISE(n.socket, ReadString(t, "socket", where, false));
  const toml::node* base = t.get("base");
  if (base == nullptr) return Status::Invalid(where, ".base is missing");
  QUIVER_ASSIGN_OR_RAISE(n.base, ReadU64(*base, where + ".base", false));
  const toml::node* size = t.get("size");
  if (size == nullptr) return Status::Invalid(where, ".size is missing");
  QUIVER_ASSIGN_OR_RAISE(n.size, ReadU64(*size, where + ".size", true));
  QUIVER_ASSIGN_OR_RAISE(std::string backing, ReadString(t, "backing", where, false));
  if (backing.empty() || backing == "shm") {
    n.backing = BackingKind::kShm;
  } else if (backing == "device") {
    n.backing = BackingKind::kDevice;
  } else if (backing == "incoherent") {
    n.backing = BackingKind::kIncoherent;
  } else {
    return Status::Invalid(where, ".backing '", backing,
                           "' is not one of shm, device, incoherent");
  }
  QUIVER_ASSIGN_OR_RAISE(n.path, ReadString(t, "path", where, false));
  QUIVER_ASSIGN_OR_RAISE(n.memory, ReadString(t, "memory", where, false));
  QUIVER_ASSIGN_OR_RAISE(n.transport, ReadString(t, "transport", where, false));
  return n;
}

// ---------------------------------------------------------------------------
// [limits]

constexpr uint64_t kMaxRate = 1000000000;  // allocations per second
constexpr uint64_t kMaxCount = 1000000;    // sessions, connections, parked calls
constexpr uint64_t kMaxMillis = 3600000;   // one hour

// Calls fn(key, member) for every quota of ClusterLimits.
template <typename Fn>
void VisitQuotas(Fn&& fn) {
  fn("session_quota", &ClusterLimits::session_quota);
  fn("node_quota", &ClusterLimits::node_quota);
  fn("max_malloc", &ClusterLimits::max_malloc);
}

// Calls fn(key, member, min, max) for every integer limit of ClusterLimits.
template <typename Fn>
void VisitCounts(Fn&& fn) {
  fn("malloc_rate", &ClusterLimits::malloc_rate, 1, kMaxRate);
  fn("node_malloc_rate", &ClusterLimits::node_malloc_rate, 1, kMaxRate);
  fn("max_sessions_per_node", &ClusterLimits::max_sessions_per_node, 1, kMaxCount);
  fn("max_pins_per_session", &ClusterLimits::max_pins_per_session, 1, kMaxCount);
  fn("max_connections", &ClusterLimits::max_connections, 1, kMaxCount);
  fn("max_setup_connections", &ClusterLimits::max_setup_connections, 1, kMaxCount);
  fn("setup_timeout_ms", &ClusterLimits::setup_timeout_ms, 100, 600000);
  fn("max_waiting_calls", &ClusterLimits::max_waiting_calls, 1, kMaxCount);
  fn("session_lease_ms", &ClusterLimits::session_lease_ms, 100, kMaxMillis);
  fn("restart_grace_ms", &ClusterLimits::restart_grace_ms, 0, kMaxMillis);
  fn("spin_us", &ClusterLimits::spin_us, 0, 10000);
}

Status CheckRange(const std::string& what, uint64_t v, uint64_t lo, uint64_t hi) {
  if (v < lo || v > hi) return Status::Invalid(what, " ", v, " is not in ", lo, "..", hi);
  return Status::OK();
}

Status CheckQuota(const std::string& what, const QuotaSpec& q) {
  if (q.bytes == 0 && !(q.fraction > 0 && q.fraction <= 1)) {
    return Status::Invalid(what, " is a fraction ", q.fraction,
                           " of the data area; it must be in (0, 1]");
  }
  return Status::OK();
}

// "50%", "4GiB", "4294967296" or 4294967296.
Result<QuotaSpec> ParseQuota(const toml::node& node, const std::string& what) {
  QuotaSpec q;
  if (node.is_integer()) {
    QUIVER_ASSIGN_OR_RAISE(q.bytes, ReadU64(node, what, false));
  } else if (auto s = node.value<std::string>()) {
    std::string text = *s;
    text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
    if (!text.empty() && text.back() == '%') {
      text.pop_back();
      char* end = nullptr;
      errno = 0;
      q.fraction = PercentToFraction(text.c_str(), &end);
      if (text.empty() || errno != 0 || *end != '\0' || !std::isfinite(q.fraction)) {
        return Status::Invalid(what, " '", *s, "' is not a percentage");
      }
      if (!(q.fraction > 0 && q.fraction <= 1)) {
        return Status::Invalid(what, " '", *s, "': a percentage must be in (0, 100]");
      }
      return q;
    }
    auto bytes = ParseByteSize(text);
    if (!bytes.ok()) return bytes.status().WithContext(what);
    q.bytes = *bytes;
  } else {
    return Status::Invalid(what,
                           " must be a percentage such as \"50%\", a size such as "
                           "\"4GiB\", or a byte count");
  }
  if (q.bytes == 0) return Status::Invalid(what, " must not be 0 bytes");
  return q;
}

Status ParseLimits(const toml::table& t, ClusterLimits* limits) {
  std::set<std::string> keys;
  VisitQuotas([&](const char* key, auto) { keys.insert(key); });
  VisitCounts([&](const char* key, auto, uint64_t, uint64_t) { keys.insert(key); });
  QUIVER_RETURN_NOT_OK(CheckKeys(t, keys, "limits"));
  Status st;
  VisitQuotas([&](const char* key, auto member) {
    const toml::node* n = t.get(key);
    if (!st.ok() || n == nullptr) return;
    auto q = ParseQuota(*n, std::string("limits.") + key);
    if (q.ok()) limits->*member = *q;
    st = q.status();
  });
  VisitCounts([&](const char* key, auto member, uint64_t lo, uint64_t hi) {
    const toml::node* n = t.get(key);
    if (!st.ok() || n == nullptr) return;
    const std::string what = std::string("limits.") + key;
    auto v = ReadU64(*n, what, false);
    st = v.ok() ? CheckRange(what, *v, lo, hi) : v.status();
    // In range, so it fits the member's type.
    if (st.ok()) {
      limits->*member = static_cast<std::decay_t<decltype(limits->*member)>>(*v);
    }
  });
  return st;
}

Status ValidateLimits(const ClusterLimits& limits) {
  Status st;
  VisitQuotas([&](const char* key, auto member) {
    if (st.ok()) st = CheckQuota(std::string("limits.") + key, limits.*member);
  });
  VisitCounts([&](const char* key, auto member, uint64_t lo, uint64_t hi) {
    if (st.ok()) st = CheckRange(std::string("limits.") + key, limits.*member, lo, hi);
  });
  return st;
}

// The [limits] table with the values that differ from the defaults, or
// nothing when none does.
std::string LimitsToToml(const ClusterLimits& limits) {
  const ClusterLimits defaults;
  if (limits == defaults) return "";
  std::ostringstream ss;
  ss << "\n[limits]\n";
  VisitQuotas([&](const char* key, auto member) {
    if (limits.*member != defaults.*member) {
      ss << key << " = \"" << (limits.*member).ToString() << "\"\n";
    }
  });
  VisitCounts([&](const char* key, auto member, uint64_t, uint64_t) {
    if (limits.*member != defaults.*member) ss << key << " = " << limits.*member << "\n";
  });
  return ss.str();
}

void FillDefaults(ClusterConfig* c) {
  if (c->granule == 0) c->granule = PlatformCacheLineSize();
  for (auto& n : c->nodes) {
    if (n.path.empty() && n.backing != BackingKind::kDevice) {
      n.path = "/dev/shm/quiver-" + c->name + "-" + std::to_string(n.id);
    }
    if (n.socket.empty()) {
      n.socket = "/tmp/quiver-" + c->name + "-" + std::to_string(n.id) + ".sock";
    }
  }
}

Status ValidateNode(const ClusterConfig& c, const NodeConfig& n) {
  const std::string where = "node " + std::to_string(n.id);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t align = n.backing == BackingKind::kDevice ? kDeviceDaxAlignment : page;
  if (n.id > kMaxNodeId) return IdTooLarge(where, n.id);
  QUIVER_RETURN_NOT_OK(CheckHostPort(n.control, where));
  QUIVER_RETURN_NOT_OK(CheckSocketPath(n.socket, where));
  if (!n.transport.empty()) {
    QUIVER_RETURN_NOT_OK(CheckHostPort(n.transport, where, "transport"));
  }
  QUIVER_RETURN_NOT_OK(CheckMemoryGroup(n.memory, where));
  if (n.base % align != 0) {
    return Status::Invalid(where, ".base ", Hex(n.base), " is not aligned to ", align,
                           " bytes",
                           n.backing == BackingKind::kDevice ? " (device-DAX)" : "");
  }
  if (n.size < kMinRegionSize) {
    return Status::Invalid(where, ".size ", n.size, " is smaller than the minimum ",
                           kMinRegionSize);
  }
  if (n.size % align != 0) {
    return Status::Invalid(where, ".size ", n.size, " is not a multiple of ", align);
  }
  if (n.size < c.granule * 4) {
    return Status::Invalid(where, ".size ", n.size, " is too small for granule ",
                           c.granule);
  }
  if (n.base < kMinRegionAddress) {
    return Status::Invalid(where, ".base ", Hex(n.base), " is below ",
                           Hex(kMinRegionAddress),
                           " (low addresses belong to the program image and heap)");
  }
  if (n.base > kMaxUserAddress || n.size > kMaxUserAddress - n.base) {
    return Status::Invalid(where, ": region [", Hex(n.base), ", ", Hex(n.base + n.size),
                           ") is outside user space (ends above ", Hex(kMaxUserAddress),
                           ")");
  }
  if (n.backing == BackingKind::kDevice) {
    if (n.path.empty())
      return Status::Invalid(where, ".path is required for a device backing");
    // O_NONBLOCK: a FIFO at the path must fail below, not hang the load.
    int fd = ::open(n.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return Status::FromErrno(errno, where + ".path '" + n.path + "'");
    struct stat st;
    int rc = fstat(fd, &st);
    if (rc == 0 && !S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) {
      ::close(fd);
      return Status::Invalid(where, ".path '", n.path, "' is ", FileTypeName(st.st_mode),
                             "; a device backing must be a character or block device "
                             "or a regular file");
    }
    uint64_t dev_size = 0;
    if (rc == 0 && S_ISREG(st.st_mode)) dev_size = static_cast<uint64_t>(st.st_size);
    if (rc == 0 && S_ISCHR(st.st_mode)) {
      // Device-DAX reports its size in sysfs: /sys/dev/char/MAJ:MIN/size.
      std::ifstream f("/sys/dev/char/" + std::to_string(major(st.st_rdev)) + ":" +
                      std::to_string(minor(st.st_rdev)) + "/size");
      f >> dev_size;
    }
    ::close(fd);
    if (dev_size != 0 && n.size > dev_size) {
      return Status::Invalid(where, ".size ", n.size, " is larger than the device '",
                             n.path, "' (", dev_size, " bytes)");
    }
  }
  return Status::OK();
}

}  // namespace

Status ValidateClusterConfig(const ClusterConfig& c) {
  if (c.name.empty() || c.name.size() > 63) {
    return Status::Invalid("cluster.name must have 1 to 63 characters");
  }
  for (char ch : c.name) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' &&
        ch != '.') {
      return Status::Invalid("cluster.name '", c.name,
                             "' may contain only letters, digits, '-', '_' and '.'");
    }
  }
  QUIVER_RETURN_NOT_OK(ValidateLimits(c.limits));
  if (!std::has_single_bit(c.granule) || c.granule > (2u << 20)) {
    return Status::Invalid("cluster.granule ", c.granule,
                           " must be a power of two no larger than 2 MiB");
  }
  if (c.granule < PlatformCacheLineSize()) {
    return Status::Invalid("cluster.granule ", c.granule,
                           " is smaller than this CPU's cache line (",
                           PlatformCacheLineSize(), " bytes): objects would share lines");
  }
  if (c.nodes.empty()) return Status::Invalid("the cluster has no [[node]]");
  std::set<uint32_t> ids;
  std::set<std::string> paths;
  for (const auto& n : c.nodes) {
    if (!ids.insert(n.id).second)
      return Status::Invalid("node id ", n.id, " appears twice");
    QUIVER_RETURN_NOT_OK(ValidateNode(c, n));
    // Nodes of different memory groups are different hosts: each may have
    // its /dev/dax0.0. Region addresses stay unique in the whole cluster
    // (an address names its owner everywhere).
    if (!n.path.empty() && !paths.insert(n.memory + '\0' + n.path).second) {
      return Status::Invalid("node ", n.id, ".path '", n.path,
                             "' is used by another node of its memory group");
    }
  }
  std::vector<const NodeConfig*> sorted;
  for (const auto& n : c.nodes) sorted.push_back(&n);
  std::sort(sorted.begin(), sorted.end(),
            [](const NodeConfig* a, const NodeConfig* b) { return a->base < b->base; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->base < sorted[i - 1]->end()) {
      return Status::Invalid(
          "node ", sorted[i]->id, ".base: region [", Hex(sorted[i]->base), ", ",
          Hex(sorted[i]->end()), ") overlaps node ", sorted[i - 1]->id, "'s region [",
          Hex(sorted[i - 1]->base), ", ", Hex(sorted[i - 1]->end()), ")");
    }
  }
  return Status::OK();
}

Result<ClusterConfig> ParseClusterConfig(std::string_view text, std::string_view origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    const auto& src = e.source();
    return Status::Invalid(origin, ":", src.begin.line, ":", src.begin.column, ": ",
                           e.description());
  }
  QUIVER_RETURN_NOT_OK(CheckKeys(root, {"cluster", "limits", "node"}, origin));
  const toml::table* cluster = root["cluster"].as_table();
  if (cluster == nullptr) return Status::Invalid(origin, ": [cluster] table is missing");
  if (cluster->contains("token")) {
    return Status::Invalid(
        "cluster.token is no longer used: nodes and clients authenticate with "
        "certificates; set credentials = \"DIR\" and make them with `quiver cluster "
        "init`");
  }
  QUIVER_RETURN_NOT_OK(
      CheckKeys(*cluster, {"name", "credentials", "granule"}, "cluster"));
  ClusterConfig c;
  QUIVER_ASSIGN_OR_RAISE(c.name, ReadString(*cluster, "name", "cluster", true));
  QUIVER_ASSIGN_OR_RAISE(c.credentials,
                         ReadString(*cluster, "credentials", "cluster", false));
  if (const toml::node* g = cluster->get("granule")) {
    QUIVER_ASSIGN_OR_RAISE(c.granule, ReadU64(*g, "cluster.granule", true));
    if (c.granule == 0) return Status::Invalid("cluster.granule must not be 0");
  }
  if (const toml::node* limits = root.get("limits")) {
    if (!limits->is_table()) return Status::Invalid(origin, ": limits must be a table");
    QUIVER_RETURN_NOT_OK(ParseLimits(*limits->as_table(), &c.limits));
  }
  const toml::array* nodes = root["node"].as_array();
  if (nodes == nullptr) return Status::Invalid(origin, ": no [[node]] entries");
  for (size_t i = 0; i < nodes->size(); ++i) {
    const toml::table* t = (*nodes)[i].as_table();
    if (t == nullptr) return Status::Invalid("node[", i, "] is not a table");
    QUIVER_ASSIGN_OR_RAISE(NodeConfig n, ParseNode(*t, i));
    c.nodes.push_back(std::move(n));
  }
  FillDefaults(&c);
  QUIVER_RETURN_NOT_OK(ValidateClusterConfig(c));
  return c;
}

namespace {

// Reads a config file without trusting what is at the path: a FIFO or a
// device would block or never end, so only a regular file of bounded size
// is read. O_NONBLOCK makes opening a FIFO return at once.
Result<std::string> ReadConfigFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return Status::FromErrno(errno, "cannot open cluster config '" + path + "'");
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0) {
    return Status::FromErrno(errno, "cannot stat cluster config '" + path + "'");
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::Invalid("cluster config '", path, "' is not a regular file (it is ",
                           FileTypeName(st.st_mode), ")");
  }
  const std::string too_big = "cluster config '" + path + "' is larger than " +
                              std::to_string(kMaxConfigFileBytes) + " bytes";
  if (static_cast<uint64_t>(st.st_size) > kMaxConfigFileBytes) {
    return Status::Invalid(too_big, " (", st.st_size, " bytes)");
  }
  // The file may grow after fstat: the limit holds for what is read too.
  std::string text;
  char chunk[16384];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Status::FromErrno(errno, "cannot read cluster config '" + path + "'");
    }
    if (n == 0) return text;
    text.append(chunk, static_cast<size_t>(n));
    if (text.size() > kMaxConfigFileBytes) return Status::Invalid(too_big);
  }
}

// `relative` against the folder of the file `path`, made absolute so it
// stays right if the process changes its working directory.
Result<std::string> ResolveNextTo(const std::string& path, const std::string& relative) {
  namespace fs = std::filesystem;
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  std::error_code ec;
  fs::path resolved = fs::absolute(folder / relative, ec);
  if (ec) {
    return Status::IOError("cannot resolve cluster.credentials '", relative,
                           "' against '", folder.string(), "': ", ec.message());
  }
  return resolved.lexically_normal().string();
}

}  // namespace

Result<ClusterConfig> LoadClusterConfig(const std::string& path) {
  QUIVER_ASSIGN_OR_RAISE(std::string text, ReadConfigFile(path));
  QUIVER_ASSIGN_OR_RAISE(ClusterConfig c, ParseClusterConfig(text, path));
  if (!c.credentials.empty() && c.credentials.front() != '/') {
    QUIVER_ASSIGN_OR_RAISE(c.credentials, ResolveNextTo(path, c.credentials));
  }
  return c;
}

namespace {
// A TOML basic string literal.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}
}  // namespace

std::string ClusterConfig::ToToml() const {
  std::ostringstream ss;
  ss << "[cluster]\nname = " << Quote(name) << "\n";
  if (!credentials.empty()) ss << "credentials = " << Quote(credentials) << "\n";
  ss << "granule = " << granule << "\n" << LimitsToToml(limits);
  for (const auto& n : nodes) {
    ss << "\n[[node]]\nid = " << n.id << "\ncontrol = " << Quote(n.control)
       << "\nsocket = " << Quote(n.socket) << "\nbase = " << Quote(Hex(n.base))
       << "\nsize = " << n.size << "\nbacking = \"" << BackingKindName(n.backing)
       << "\"\npath = " << Quote(n.path) << "\n";
    if (!n.memory.empty()) ss << "memory = " << Quote(n.memory) << "\n";
    if (!n.transport.empty()) ss << "transport = " << Quote(n.transport) << "\n";
  }
  return ss.str();
}

}  // namespace quiver::memory
