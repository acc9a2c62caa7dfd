#include "store/client/pin_cache.h"

#include <algorithm>

#include "store/client/store_impl.h"

namespace quiver::store {

namespace {

uint64_t BytesOf(const PinCache::Entry& e) {
  return static_cast<uint64_t>(e.data->size() + e.metadata->size());
}

}  // namespace

void PinCache::UnlinkLocked(Slot* s) {
  (s->newer != nullptr ? s->newer->older : newest_) = s->older;
  (s->older != nullptr ? s->older->newer : oldest_) = s->newer;
  s->newer = s->older = nullptr;
}

void PinCache::PushNewestLocked(Slot* s) {
  s->older = newest_;
  s->newer = nullptr;
  (newest_ != nullptr ? newest_->newer : oldest_) = s;
  newest_ = s;
}

std::optional<PinCache::Entry> PinCache::Find(const ObjectId& id) {
  auto found = FindAll({id});
  return found.empty() ? std::nullopt : std::move(found[0]);
}

std::vector<std::optional<PinCache::Entry>> PinCache::FindAll(
    const std::vector<ObjectId>& ids) {
  std::vector<std::optional<Entry>> out;
  std::lock_guard<std::mutex> lock(mu_);
  if (slots_.empty()) return out;
  out.resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = slots_.find(ids[i]);
    if (it == slots_.end()) continue;
    UnlinkLocked(&it->second);
    PushNewestLocked(&it->second);
    out[i] = it->second.entry;
  }
  return out;
}

void PinCache::CountLocked(const Entry& e, int64_t delta) {
  auto& at_home = epochs_[e.home];
  const Epochs key{e.store_epoch, e.link_epoch};
  if (delta > 0) {
    ++at_home[key];
    return;
  }
  auto it = at_home.find(key);
  if (it != at_home.end() && --it->second == 0) at_home.erase(it);
  if (at_home.empty()) epochs_.erase(e.home);
}

void PinCache::EraseLocked(const ObjectId& id, std::vector<Entry>* out) {
  auto it = slots_.find(id);
  if (it == slots_.end()) return;
  CountLocked(it->second.entry, -1);
  bytes_ -= it->second.bytes;
  UnlinkLocked(&it->second);
  out->push_back(std::move(it->second.entry));
  slots_.erase(it);
}

void PinCache::Put(const ObjectId& id, Entry e) {
  std::vector<std::pair<ObjectId, Entry>> one;
  one.emplace_back(id, std::move(e));
  PutAll(std::move(one));
}

void PinCache::PutAll(std::vector<std::pair<ObjectId, Entry>> entries) {
  std::vector<Entry> dropped;  // pins released after the lock
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, e] : entries) {
    const uint64_t bytes = BytesOf(e);
    if (bytes > max_object_) {
      EraseLocked(id, &dropped);
      continue;
    }
    // One look-up per entry: a slot already there is reused.
    auto [it, inserted] = slots_.try_emplace(id);
    Slot& slot = it->second;
    if (!inserted) {
      CountLocked(slot.entry, -1);
      bytes_ -= slot.bytes;
      UnlinkLocked(&slot);
      dropped.push_back(std::move(slot.entry));
    }
    slot.entry = std::move(e);
    CountLocked(slot.entry, +1);
    slot.bytes = bytes;
    slot.id = &it->first;
    PushNewestLocked(&slot);
    bytes_ += bytes;
    // The new slot is the newest and at most `max_object_ <= limit_`: the
    // older ones go first, never it.
    while (bytes_ > limit_ && oldest_ != &slot) EraseLocked(*oldest_->id, &dropped);
  }
}

void PinCache::Erase(const std::vector<ObjectId>& ids) {
  std::vector<Entry> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& id : ids) EraseLocked(id, &dropped);
}

void PinCache::DropStale(uint32_t home, uint64_t store_epoch, uint64_t link_epoch) {
  std::vector<Entry> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  auto at_home = epochs_.find(home);
  if (at_home == epochs_.end()) return;
  const auto& counts = at_home->second;
  if (counts.size() == 1 && counts.begin()->first == Epochs{store_epoch, link_epoch}) {
    return;  // every entry of the home is good
  }
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
  while (oldest_ != nullptr) EraseLocked(*oldest_->id, &dropped);
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
