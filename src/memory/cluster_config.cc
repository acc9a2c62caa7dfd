#include "quiver/memory/cluster_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

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

const NodeConfig* ClusterConfig::NodeOfAddress(uint64_t addr, uint64_t len) const {
  for (const auto& n : nodes) {
    if (n.Contains(addr, len)) return &n;
  }
  return nullptr;
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

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

std::string Hex(uint64_t v) {
  std::ostringstream ss;
  ss << "0x" << std::hex << v;
  return ss.str();
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
  QUIVER_RETURN_NOT_OK(CheckKeys(
      t, {"id", "control", "socket", "base", "size", "backing", "path"}, where));
  NodeConfig n;
  const toml::node* id = t.get("id");
  if (id == nullptr) return Status::Invalid(where, ".id is missing");
  QUIVER_ASSIGN_OR_RAISE(uint64_t idv, ReadU64(*id, where + ".id", false));
  if (idv > 0xFFFF) return Status::Invalid(where, ".id ", idv, " is larger than 65535");
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
  return n;
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
  if (n.control.empty() || n.control.find(':') == std::string::npos) {
    return Status::Invalid(where, ".control '", n.control, "' must be host:port");
  }
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
    int fd = ::open(n.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(errno, where + ".path '" + n.path + "'");
    struct stat st;
    int rc = fstat(fd, &st);
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
  if (c.token.empty()) return Status::Invalid("cluster.token must not be empty");
  if (!IsPowerOfTwo(c.granule) || c.granule > (2u << 20)) {
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
    if (!n.path.empty() && !paths.insert(n.path).second) {
      return Status::Invalid("node ", n.id, ".path '", n.path,
                             "' is used by another node");
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
  QUIVER_RETURN_NOT_OK(CheckKeys(root, {"cluster", "node"}, origin));
  const toml::table* cluster = root["cluster"].as_table();
  if (cluster == nullptr) return Status::Invalid(origin, ": [cluster] table is missing");
  QUIVER_RETURN_NOT_OK(CheckKeys(*cluster, {"name", "token", "granule"}, "cluster"));
  ClusterConfig c;
  QUIVER_ASSIGN_OR_RAISE(c.name, ReadString(*cluster, "name", "cluster", true));
  QUIVER_ASSIGN_OR_RAISE(c.token, ReadString(*cluster, "token", "cluster", true));
  if (const toml::node* g = cluster->get("granule")) {
    QUIVER_ASSIGN_OR_RAISE(c.granule, ReadU64(*g, "cluster.granule", true));
    if (c.granule == 0) return Status::Invalid("cluster.granule must not be 0");
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

Result<ClusterConfig> LoadClusterConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot open cluster config '", path, "'");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::IOError("cannot read cluster config '", path, "'");
  return ParseClusterConfig(ss.str(), path);
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
  ss << "[cluster]\nname = " << Quote(name) << "\ntoken = " << Quote(token)
     << "\ngranule = " << granule << "\n";
  for (const auto& n : nodes) {
    ss << "\n[[node]]\nid = " << n.id << "\ncontrol = " << Quote(n.control)
       << "\nsocket = " << Quote(n.socket) << "\nbase = " << Quote(Hex(n.base))
       << "\nsize = " << n.size << "\nbacking = \"" << BackingKindName(n.backing)
       << "\"\npath = " << Quote(n.path) << "\n";
  }
  return ss.str();
}

}  // namespace quiver::memory
