#include "store/client/pin_cache.h"

#include <algorithm>

#include "store/client/store_impl.h"

namespace quiver::store {

namespace {

uint64_t BytesOf(const PinCache::Entry& e) {
  return static_cast<uint64_t>(e.data->size() + e.metadata->size());
}

}  // namespace

std::optional<PinCache::Entry> PinCache::Find(const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(id);
  if (it == slots_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.entry;
}

void PinCache::EraseLocked(const ObjectId& id, std::vector<Entry>* out) {
  auto it = slots_.find(id);
  if (it == slots_.end()) return;
  bytes_ -= it->second.bytes;
  lru_.erase(it->second.lru);
  out->push_back(std::move(it->second.entry));
  slots_.erase(it);
}

void PinCache::Put(const ObjectId& id, Entry e) {
  std::vector<Entry> dropped;  // pins released after the lock
  const uint64_t bytes = BytesOf(e);
  std::lock_guard<std::mutex> lock(mu_);
  EraseLocked(id, &dropped);
  if (bytes > max_object_) return;
  while (bytes_ + bytes > limit_ && !lru_.empty()) EraseLocked(lru_.back(), &dropped);
  lru_.push_front(id);
  slots_.emplace(id, Slot{std::move(e), bytes, lru_.begin()});
  bytes_ += bytes;
}

void PinCache::Erase(const std::vector<ObjectId>& ids) {
  std::vector<Entry> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& id : ids) EraseLocked(id, &dropped);
}

void PinCache::DropStale(uint32_t home, uint64_t store_epoch, uint64_t link_epoch) {
  std::vector<Entry> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = slots_.begin(); it != slots_.end();) {
    const Entry& e = it->second.entry;
    auto next = std::next(it);
    if (e.home == home && (e.store_epoch != store_epoch || e.link_epoch != link_epoch)) {
      EraseLocked(it->first, &dropped);
    }
    it = next;
  }
}

void PinCache::Clear() {
  std::vector<Entry> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  while (!lru_.empty()) EraseLocked(lru_.back(), &dropped);
}

std::vector<uint32_t> PinCache::Homes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint32_t> out;
  for (const auto& [id, slot] : slots_) {
    if (std::find(out.begin(), out.end(), slot.entry.home) == out.end()) {
      out.push_back(slot.entry.home);
    }
  }
  return out;
}

uint64_t PinCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

size_t PinCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_.size();
}

}  // namespace quiver::store
