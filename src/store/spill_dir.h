// SpillDir: where a node's object store writes sealed objects it evicts
// (docs/store.md, "Spilling"), one file per object, and reads them back
// when a Get asks for them.
//
// A file holds the object's bytes (data, then metadata) followed by a
// 32-byte trailer: a magic (which names the checksum's version,
// spill_checksum.h), the object's id prefix, its length and a 64-bit
// checksum of the bytes. Files are written with the newest version and
// read with any. Restore refuses a file whose trailer does
// not match, naming the file: a truncated or altered spill never comes
// back as the object. Files are created 0600 with O_NOFOLLOW in a
// directory the daemon creates 0700 (or an existing one it owns).
//
// A spill is written to a part file of its own ("<id>.<ticket>.part") and
// renamed over the object's file when it commits, so writes of one id can
// run beside anything else and an abandoned one never replaces a file.
//
// Thread-safe for different ids, and for one id's part files.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "quiver/store/object_id.h"
#include "quiver/util/status.h"

namespace quiver::store {

class SpillDir {
 public:
  // Opens `path` (created if missing). Files a previous daemon of this
  // node left there stay until RemoveExcept.
  static Result<SpillDir> Open(const std::string& path);
  // Removes every spill file but those of `keep` (the spilled objects a
  // restarted daemon found records of), and every part file; returns how
  // many went.
  size_t RemoveExcept(const std::set<ObjectId>& keep) const;
  bool Exists(const ObjectId& id) const;

  // Writes `len` bytes at `data` as object `id`'s file (replacing one of
  // the same id): WritePart, then Commit. On failure nothing is left behind.
  Status Write(const ObjectId& id, const void* data, uint64_t len) const;
  // Writes them to part file `ticket` of `id` (unique among writes in
  // flight); on failure it is gone.
  Status WritePart(const ObjectId& id, uint64_t ticket, const void* data,
                   uint64_t len) const;
  // Makes part `ticket` object `id`'s file, or drops it.
  Status Commit(const ObjectId& id, uint64_t ticket) const;
  void Discard(const ObjectId& id, uint64_t ticket) const;
  // Reads object `id`'s `len` bytes into `out`, checking the trailer.
  Status Read(const ObjectId& id, void* out, uint64_t len) const;
  void Remove(const ObjectId& id) const;
  // Takes object `id`'s file out of the way at once (a rename: a new spill
  // of `id` may follow) as part file `ticket`, which Discard removes later,
  // off the caller's path (unlinking a file of 100 MB takes ~5 ms here),
  // or RemoveExcept after a crash. On failure the file is removed now.
  void Retire(const ObjectId& id, uint64_t ticket) const;

  const std::string& path() const { return path_; }

 private:
  std::string FileOf(const ObjectId& id) const;
  std::string PartOf(const ObjectId& id, uint64_t ticket) const;

  std::string path_;
};

}  // namespace quiver::store
