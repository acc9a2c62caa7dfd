#include "store/id_directory.h"

#include <algorithm>

namespace quiver::store {

uint32_t DirectoryNodeOf(const ObjectId& id, const memory::ClusterConfig& config) {
  std::vector<uint32_t> nodes;
  nodes.reserve(config.nodes.size());
  for (const auto& n : config.nodes) nodes.push_back(n.id);
  std::sort(nodes.begin(), nodes.end());
  // The prefix's low bits are as uniform as its high ones (random or SHA-1).
  return nodes[id.Prefix() % nodes.size()];
}

std::optional<uint32_t> IdDirectory::Reserve(const ObjectId& id, uint32_t home,
                                             uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = entries_.try_emplace(id, Entry{home, generation});
  if (inserted) return std::nullopt;
  if (it->second.home == home) {
    it->second.generation = std::max(it->second.generation, generation);
  }
  return it->second.home;
}

void IdDirectory::Remove(const ObjectId& id, uint32_t home) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it != entries_.end() && it->second.home == home) entries_.erase(it);
}

std::optional<uint32_t> IdDirectory::Find(const ObjectId& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.home;
}

size_t IdDirectory::DropOlder(uint32_t home, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t dropped = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.home == home && it->second.generation < generation) {
      it = entries_.erase(it);
      ++dropped;
    } else {
      ++it;
    }
  }
  return dropped;
}

size_t IdDirectory::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace quiver::store
