#include "quiver/memory/prefault.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>

#include "quiver/memory/region.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace quiver::memory {

Status PopulateWrite(void* p, uint64_t len) {
  if (len == 0) return Status::OK();
  if (madvise(p, len, MADV_POPULATE_WRITE) == 0) return Status::OK();
  const int err = errno;
  if (err == EINVAL) {
    return Status::NotImplemented(
        "populating memory ahead of use needs "
        "MADV_POPULATE_WRITE (Linux 5.14 or later)");
  }
  if (err == ENOMEM || err == EFAULT || err == EHWPOISON) {
    return Status::OutOfMemory("populating ", len, " bytes at ", p,
                               ": the backing has no room for them");
  }
  return Status::FromErrno(err, "populating memory ahead of use");
}

Prefaulter::Prefaulter(uint64_t chunk) : chunk_(chunk) {
  thread_ = std::thread([this] { Run(); });
}

Prefaulter::~Prefaulter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Prefaulter::Request(RegionMapping* region, const void* p, uint64_t len) {
  if (region == nullptr || len == 0) return;
  uint8_t* data = region->data();
  const uint64_t size = region->data_size();
  const auto* q = static_cast<const uint8_t*>(p);
  if (q >= data + size || q + len <= data) return;
  const uint64_t from = q > data ? static_cast<uint64_t>(q - data) : 0;
  const uint64_t to = std::min<uint64_t>(size, static_cast<uint64_t>(q + len - data));
  std::lock_guard<std::mutex> lock(mu_);
  if (status_.IsNotImplemented()) return;
  Region& r = regions_[data];
  if (r.data == nullptr) {
    r.data = data;
    r.size = size;
    r.done.assign((size + chunk_ - 1) / chunk_, false);
  }
  if (r.failed) return;
  uint64_t first = from / chunk_, end = (to + chunk_ - 1) / chunk_;
  while (first < end && r.done[first]) ++first;
  while (end > first && r.done[end - 1]) --end;
  if (first == end) return;
  queue_.push_back({data, first, end});
  cv_.notify_one();
}

void Prefaulter::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return stop_ || (queue_.empty() && !busy_); });
}

uint64_t Prefaulter::populated_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return populated_;
}

Status Prefaulter::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void Prefaulter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    busy_ = false;
    idle_cv_.notify_all();
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) break;
    busy_ = true;
    Range range = queue_.front();
    queue_.pop_front();
    Region& r = regions_[range.data];
    for (uint64_t c = range.first; c < range.end && !stop_ && !r.failed; ++c) {
      if (r.done[c]) continue;
      r.done[c] = true;  // claimed: a later request skips it
      uint8_t* p = r.data + c * chunk_;
      const uint64_t n = std::min(chunk_, r.size - c * chunk_);
      lock.unlock();
      Status st = PopulateWrite(p, n);
      lock.lock();
      if (st.ok()) {
        populated_ += n;
      } else if (st.IsNotImplemented()) {
        status_ = st;  // no kernel support: nothing more to do anywhere
        queue_.clear();
        break;
      } else {
        r.failed = true;  // a full backing: writes will find out themselves
        status_ = st;
      }
    }
  }
  busy_ = false;
  idle_cv_.notify_all();
}

}  // namespace quiver::memory
