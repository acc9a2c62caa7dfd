#include "store/spill_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "store/spill_checksum.h"
#include "util/private_dir.h"

namespace quiver::store {

namespace {

constexpr char kSuffix[] = ".spill";
constexpr char kPartSuffix[] = ".part";
constexpr uint64_t kSpillMagicV1 = 0x4C4C495053565551ULL;  // "QUVSPILL", little-endian
constexpr uint64_t kSpillMagic = 0x324C495053565551ULL;    // "QUVSPIL2"

struct Trailer {
  uint64_t magic;
  uint64_t id_prefix;
  uint64_t length;
  uint64_t checksum;
};
static_assert(sizeof(Trailer) == 32);

// Files move in pieces of this size: each is summed while it is in the
// cache, just before it is written or just after it is read. A quarter of
// this machine's 2 MiB L2 stays there through the kernel's copy; pieces of
// 1 MiB did not (spill 0.59-0.63 and restore 0.44-0.45 of write(2)/read(2)
// of the same file, against 0.82-0.89 and 0.53-0.54 at 256 KiB).
constexpr uint64_t kPiece = 1ULL << 18;  // whole checksum blocks

// Calls `io` on each piece of [p, p + len) and sums it with a `Sum` (before
// `io` when writing, after when reading); `*sum` is the checksum of the
// whole.
template <typename Sum, typename Io>
Status ByPieces(uint8_t* p, uint64_t len, bool sum_first, uint64_t* sum, Io io) {
  static_assert(kPiece % Sum::kBlock == 0);
  Sum c;
  for (uint64_t at = 0; at < len; at += kPiece) {
    const uint64_t n = std::min(kPiece, len - at);
    const uint64_t whole = n - n % Sum::kBlock;  // only the last piece has a tail
    if (sum_first) c.Blocks(p + at, whole);
    QUIVER_RETURN_NOT_OK(io(p + at, n));
    if (!sum_first) c.Blocks(p + at, whole);
  }
  const uint64_t tail = len % Sum::kBlock;
  *sum = c.Finish(p + len - tail, tail);
  return Status::OK();
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

Status WriteAll(int fd, const uint8_t* p, uint64_t len, const std::string& file) {
  while (len > 0) {
    const ssize_t n = ::write(fd, p, std::min<uint64_t>(len, 1ULL << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::IOError(Errno("writing spill file " + file));
    p += n;
    len -= static_cast<uint64_t>(n);
  }
  return Status::OK();
}

Status ReadAll(int fd, uint8_t* p, uint64_t len, const std::string& file) {
  while (len > 0) {
    const ssize_t n = ::read(fd, p, std::min<uint64_t>(len, 1ULL << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(Errno("reading spill file " + file));
    if (n == 0)
      return Status::IOError("spill file ", file, " is shorter than the object");
    p += n;
    len -= static_cast<uint64_t>(n);
  }
  return Status::OK();
}

bool IsSpillFile(const char* name) {
  const size_t n = std::strlen(name), s = sizeof(kSuffix) - 1;
  return n == 2 * ObjectId::kSize + s && std::strcmp(name + n - s, kSuffix) == 0;
}

// "<40 hex digits>.<decimal ticket>.part"
bool IsPartFile(const char* name) {
  const size_t n = std::strlen(name), s = sizeof(kPartSuffix) - 1;
  const size_t id = 2 * ObjectId::kSize;
  return n > id + 1 + s && name[id] == '.' &&
         std::strcmp(name + n - s, kPartSuffix) == 0 &&
         ObjectId::FromHex(std::string_view(name, id)).ok();
}

}  // namespace

Result<SpillDir> SpillDir::Open(const std::string& path) {
  QUIVER_RETURN_NOT_OK(util::MakePrivateDir(path, "spill directory"));
  SpillDir dir;
  dir.path_ = path;
  return dir;
}

size_t SpillDir::RemoveExcept(const std::set<ObjectId>& keep) const {
  size_t removed = 0;
  DIR* d = ::opendir(path_.c_str());
  if (d == nullptr) return 0;
  while (const dirent* e = ::readdir(d)) {
    const bool part = IsPartFile(e->d_name);  // a write a crash cut short
    if (!part && !IsSpillFile(e->d_name)) continue;
    auto id = ObjectId::FromHex(std::string_view(e->d_name, 2 * ObjectId::kSize));
    if (!part && id.ok() && keep.count(*id) != 0) continue;
    if (::unlinkat(::dirfd(d), e->d_name, 0) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

bool SpillDir::Exists(const ObjectId& id) const {
  struct stat st;
  return ::lstat(FileOf(id).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string SpillDir::FileOf(const ObjectId& id) const {
  return path_ + "/" + id.Hex() + kSuffix;
}

std::string SpillDir::PartOf(const ObjectId& id, uint64_t ticket) const {
  return path_ + "/" + id.Hex() + "." + std::to_string(ticket) + kPartSuffix;
}

Status SpillDir::Write(const ObjectId& id, const void* data, uint64_t len) const {
  static std::atomic<uint64_t> tickets{1ULL << 63};  // apart from the table's
  const uint64_t ticket = tickets.fetch_add(1);
  QUIVER_RETURN_NOT_OK(WritePart(id, ticket, data, len));
  return Commit(id, ticket);
}

Status SpillDir::Commit(const ObjectId& id, uint64_t ticket) const {
  const std::string part = PartOf(id, ticket), file = FileOf(id);
  if (::rename(part.c_str(), file.c_str()) == 0) return Status::OK();
  Status st = Status::IOError(Errno("renaming " + part + " to " + file));
  ::unlink(part.c_str());
  return st;
}

void SpillDir::Discard(const ObjectId& id, uint64_t ticket) const {
  ::unlink(PartOf(id, ticket).c_str());
}

Status SpillDir::WritePart(const ObjectId& id, uint64_t ticket, const void* data,
                           uint64_t len) const {
  const std::string file = PartOf(id, ticket);
  const int fd =
      ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError(Errno("creating spill file " + file));
  auto* p = const_cast<uint8_t*>(static_cast<const uint8_t*>(data));
  Trailer t{kSpillMagic, id.Prefix(), len, 0};
  Status st = ByPieces<SpillChecksum>(
      p, len, /*sum_first=*/true, &t.checksum,
      [&](uint8_t* q, uint64_t n) { return WriteAll(fd, q, n, file); });
  if (st.ok()) st = WriteAll(fd, reinterpret_cast<const uint8_t*>(&t), sizeof(t), file);
  if (::close(fd) != 0 && st.ok()) st = Status::IOError(Errno("closing " + file));
  if (!st.ok()) ::unlink(file.c_str());
  return st;
}

Status SpillDir::Read(const ObjectId& id, void* out, uint64_t len) const {
  const std::string file = FileOf(id);
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status::IOError(Errno("opening spill file " + file));
  struct stat st;
  Status s;
  if (::fstat(fd, &st) != 0) {
    s = Status::IOError(Errno("spill file " + file));
  } else if (static_cast<uint64_t>(st.st_size) != len + sizeof(Trailer)) {
    s = Status::IOError("spill file ", file, " has ", st.st_size, " bytes, not the ",
                        len + sizeof(Trailer), " object ", id.Hex(), " needs");
  }
  // The trailer first: its magic says which checksum the bytes carry.
  Trailer t{};
  if (s.ok() && ::pread(fd, &t, sizeof(t), static_cast<off_t>(len)) !=
                    static_cast<ssize_t>(sizeof(t))) {
    s = Status::IOError(Errno("reading the trailer of spill file " + file));
  }
  if (s.ok() && ((t.magic != kSpillMagic && t.magic != kSpillMagicV1) ||
                 t.id_prefix != id.Prefix() || t.length != len)) {
    s = Status::IOError("spill file ", file, " does not hold object ", id.Hex());
  }
  auto* p = static_cast<uint8_t*>(out);
  uint64_t sum = 0;
  if (s.ok()) {
    auto read = [&](uint8_t* q, uint64_t n) { return ReadAll(fd, q, n, file); };
    s = t.magic == kSpillMagic
            ? ByPieces<SpillChecksum>(p, len, /*sum_first=*/false, &sum, read)
            : ByPieces<SpillChecksumV1>(p, len, /*sum_first=*/false, &sum, read);
  }
  ::close(fd);
  if (!s.ok()) return s;
  if (t.checksum != sum) {
    return Status::IOError("spill file ", file,
                           " is corrupt: its checksum does not match");
  }
  return Status::OK();
}

void SpillDir::Remove(const ObjectId& id) const { ::unlink(FileOf(id).c_str()); }

void SpillDir::Retire(const ObjectId& id, uint64_t ticket) const {
  const std::string file = FileOf(id);
  if (::rename(file.c_str(), PartOf(id, ticket).c_str()) != 0) ::unlink(file.c_str());
}

}  // namespace quiver::store
