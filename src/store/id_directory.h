// IdDirectory: which node is the home of each object id, for the ids this
// node is the *directory node* of. Every id has exactly one directory node,
// DirectoryNodeOf(id): a Create reserves the id there before it allocates,
// so a second Create anywhere in the cluster finds the reservation (no
// broadcast), and a reader that does not know an id's home asks there.
//
// The homes hold the truth (their ObjectTables); this is what they told the
// directory node. A reservation carries the home's region generation: when a
// home restarts, entries from its older generation are dropped, and a home
// re-registers what it holds when a restarted directory node comes back.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "quiver/memory/cluster_config.h"
#include "quiver/store/object_id.h"

namespace quiver::store {

// The directory node of `id`: ids spread evenly over the nodes of `config`.
uint32_t DirectoryNodeOf(const ObjectId& id, const memory::ClusterConfig& config);

class IdDirectory {
 public:
  // Reserves `id` for `home`. Returns nullopt when it is newly `home`'s,
  // else the node that already held it (`home` itself included: reserving
  // twice is harmless).
  std::optional<uint32_t> Reserve(const ObjectId& id, uint32_t home, uint64_t generation);
  // Forgets `id` if `home` holds it (a stale removal changes nothing).
  void Remove(const ObjectId& id, uint32_t home);
  std::optional<uint32_t> Find(const ObjectId& id) const;
  // `home` now runs at `generation`: drops what it reserved before.
  size_t DropOlder(uint32_t home, uint64_t generation);
  size_t size() const;

 private:
  struct Entry {
    uint32_t home = 0;
    uint64_t generation = 0;
  };
  mutable std::mutex mu_;
  std::unordered_map<ObjectId, Entry, ObjectIdHash> entries_;
};

}  // namespace quiver::store
