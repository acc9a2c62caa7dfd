#include "control/catalogue/chunk.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace quiver::control {

namespace {

constexpr uint64_t kRecordMagic = 0x314B4E5548435651ULL;  // "QVCHUNK1" little-endian
// Version 2 adds the publish group after version 1's fixed part; version 1
// records (no group) are still read.
constexpr uint32_t kRecordVersion = 2;
constexpr uint32_t kFlagExplicit = 1, kFlagLocal = 2;
constexpr size_t kFixedBytesV1 = 8 + 4 + 4 + 8 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 4;
constexpr size_t kGroupBytes = 8 + 4 + 4;  // group, group_chunks, reserved
constexpr size_t kMaxOwners = 65535;

template <typename T>
void Put(std::string* out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out->append(b, sizeof(T));
}

class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  template <typename T>
  bool Get(T* v) {
    if (b_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool Bytes(size_t n, std::string* out) {
    if (b_.size() - pos_ < n) return false;
    out->assign(b_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  size_t pos() const { return pos_; }

 private:
  std::string_view b_;
  size_t pos_ = 0;
};

}  // namespace

std::string IncompleteGroups(const std::vector<ChunkMeta>& chunks) {
  struct Seen {
    uint32_t have = 0, made = 0;
    const ChunkMeta* first = nullptr;
  };
  std::map<uint64_t, Seen> groups;
  for (const auto& c : chunks) {
    if (c.group == 0) continue;
    Seen& g = groups[c.group];
    ++g.have;
    g.made = std::max(g.made, c.group_chunks);
    if (g.first == nullptr || c.first_row < g.first->first_row) g.first = &c;
  }
  std::string why;
  for (const auto& [id, g] : groups) {
    if (g.have >= g.made) continue;
    if (!why.empty()) why += "; ";
    why += std::to_string(g.have) + " of " + std::to_string(g.made) +
           " chunks of the publish by node " + std::to_string(g.first->publisher) +
           " (first row " + std::to_string(g.first->first_row) + ") are registered";
  }
  return why;
}

Status CheckTableName(std::string_view name) {
  if (name.empty()) return Status::Invalid("table name is empty");
  if (name.size() > kMaxTableName) {
    return Status::Invalid("table name of ", name.size(), " bytes exceeds ",
                           kMaxTableName);
  }
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7F) {
      return Status::Invalid("table name contains control byte 0x",
                             "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15]);
    }
  }
  return Status::OK();
}

std::string EncodeChunkRecord(const ChunkMeta& c) {
  std::string out;
  out.reserve(kFixedBytesV1 + kGroupBytes + c.owners.size() * 4 + c.name.size() +
              c.descriptor.size() + 8);
  Put<uint64_t>(&out, kRecordMagic);
  Put<uint32_t>(&out, kRecordVersion);
  Put<uint32_t>(&out,
                (c.explicit_rows ? kFlagExplicit : 0) | (c.local_only ? kFlagLocal : 0));
  Put<uint64_t>(&out, c.id);
  Put<uint32_t>(&out, c.home);
  Put<uint32_t>(&out, c.publisher);
  Put<int32_t>(&out, c.publisher_pid);
  Put<uint32_t>(&out, static_cast<uint32_t>(c.name.size()));
  Put<uint64_t>(&out, c.first_row);
  Put<uint64_t>(&out, c.num_rows);
  Put<uint32_t>(&out, static_cast<uint32_t>(c.owners.size()));
  Put<uint32_t>(&out, static_cast<uint32_t>(c.descriptor.size()));
  Put<uint64_t>(&out, c.group);
  Put<uint32_t>(&out, c.group_chunks);
  Put<uint32_t>(&out, 0);
  for (uint32_t o : c.owners) Put<uint32_t>(&out, o);
  out += c.name;
  out += c.descriptor;
  Put<uint64_t>(&out, Fnv1a(out));
  return out;
}

uint64_t Fnv1a(std::string_view bytes) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001B3ULL;
  }
  return h;
}

bool IsChunkRecord(std::string_view bytes) {
  uint64_t magic = 0;
  if (bytes.size() < sizeof(magic)) return false;
  std::memcpy(&magic, bytes.data(), sizeof(magic));
  return magic == kRecordMagic;
}

Result<ChunkMeta> DecodeChunkRecord(std::string_view bytes) {
  auto bad = [](const char* what) {
    return Status::Invalid("chunk record is corrupt: ", what);
  };
  if (bytes.size() < kFixedBytesV1 + 8) return bad("shorter than its fixed part");
  Reader r(bytes);
  uint64_t magic = 0;
  uint32_t version = 0, flags = 0, name_len = 0, owners = 0, desc_len = 0;
  ChunkMeta c;
  r.Get(&magic);
  r.Get(&version);
  r.Get(&flags);
  r.Get(&c.id);
  r.Get(&c.home);
  r.Get(&c.publisher);
  r.Get(&c.publisher_pid);
  r.Get(&name_len);
  r.Get(&c.first_row);
  r.Get(&c.num_rows);
  r.Get(&owners);
  r.Get(&desc_len);
  if (magic != kRecordMagic) return bad("bad magic");
  if (version != 1 && version != kRecordVersion) return bad("unknown version");
  if ((flags & ~(kFlagExplicit | kFlagLocal)) != 0) return bad("unknown flags");
  if (owners > kMaxOwners || name_len > kMaxTableName) return bad("counts out of range");
  const size_t fixed = kFixedBytesV1 + (version >= 2 ? kGroupBytes : 0);
  const uint64_t need =
      uint64_t{fixed} + uint64_t{owners} * 4 + name_len + uint64_t{desc_len} + 8;
  if (need != bytes.size()) return bad("lengths do not add up to its size");
  if (version >= 2) {
    uint32_t reserved = 0;
    r.Get(&c.group);
    r.Get(&c.group_chunks);
    r.Get(&reserved);
    if (reserved != 0) return bad("reserved field is not 0");
  }
  c.explicit_rows = (flags & kFlagExplicit) != 0;
  c.local_only = (flags & kFlagLocal) != 0;
  c.owners.resize(owners);
  for (auto& o : c.owners) r.Get(&o);
  r.Bytes(name_len, &c.name);
  r.Bytes(desc_len, &c.descriptor);
  uint64_t sum = 0;
  const size_t body = r.pos();
  r.Get(&sum);
  if (sum != Fnv1a(bytes.substr(0, body))) return bad("checksum mismatch");
  QUIVER_RETURN_NOT_OK(CheckTableName(c.name).WithContext("chunk record"));
  if (c.first_row + c.num_rows < c.first_row) return bad("row range overflows");
  return c;
}

}  // namespace quiver::control
