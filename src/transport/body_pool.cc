#include "transport/body_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "util/round_up.h"

namespace quiver::transport {

namespace {
constexpr uint64_t kGranule = 64;
using util::RoundUp;
}  // namespace

Result<std::unique_ptr<BodyPool>> BodyPool::Make(std::shared_ptr<UcxContext> context,
                                                 uint64_t size) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  size = RoundUp(size == 0 ? page : size, page);
  std::unique_ptr<BodyPool> pool(new BodyPool());
  if (context != nullptr) {
    QUIVER_ASSIGN_OR_RAISE(pool->memory_, UcxMemory::Allocate(std::move(context), size));
    pool->base_ = reinterpret_cast<uint8_t*>(pool->memory_->address());
  } else {
    void* p =
        mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return Status::OutOfMemory("the transport pool of ", size, " bytes: mmap failed");
    }
    pool->base_ = static_cast<uint8_t*>(p);
    pool->mapped_ = true;
  }
  pool->size_ = size;
  // Faulted in now: never a page fault on a body's critical path, and on
  // RDMA hardware pinning costs far more for pages not yet present.
  std::memset(pool->base_, 0, size);
  pool->free_.emplace(0, size);
  return pool;
}

BodyPool::~BodyPool() {
  memory_.reset();
  if (mapped_) munmap(base_, size_);
}

uint8_t* BodyPool::TryAllocateLocked(uint64_t size) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    const uint64_t offset = it->first;
    const uint64_t rest = it->second - size;
    free_.erase(it);
    if (rest > 0) free_.emplace(offset + size, rest);
    used_.emplace(offset, size);
    in_use_ += size;
    return base_ + offset;
  }
  return nullptr;
}

Result<uint8_t*> BodyPool::Allocate(uint64_t size,
                                    const std::function<bool()>& cancelled) {
  size = RoundUp(size == 0 ? kGranule : size, kGranule);
  if (size > size_) {
    return Status::CapacityError("a body of ", size,
                                 " bytes exceeds the transport pool of ", size_,
                                 " bytes (quiver serve --pool-size)");
  }
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (uint8_t* p = TryAllocateLocked(size)) return p;
    if (cancelled())
      return Status::Cancelled("scan cancelled while waiting for pool memory");
    freed_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

void BodyPool::Free(uint8_t* block) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t offset = static_cast<uint64_t>(block - base_);
    auto it = used_.find(offset);
    if (it == used_.end()) return;  // not a block of ours: nothing to give back
    uint64_t start = offset, length = it->second;
    in_use_ -= length;
    used_.erase(it);
    auto next = free_.lower_bound(start);
    if (next != free_.end() && next->first == start + length) {
      length += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == start) {
        start = prev->first;
        length += prev->second;
        free_.erase(prev);
      }
    }
    free_.emplace(start, length);
  }
  freed_.notify_all();
}

uint64_t BodyPool::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

Status ArenaPool::Allocate(int64_t size, int64_t alignment, uint8_t** out) {
  if (size < 0) return Status::Invalid("negative allocation of ", size, " bytes");
  const auto a = static_cast<uintptr_t>(std::max<int64_t>(alignment, kGranule));
  uint8_t* p =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(cursor_) + a - 1) / a * a);
  const uint64_t padded = RoundUp(static_cast<uint64_t>(size), kGranule);
  if (p > end_ || static_cast<uint64_t>(end_ - p) < padded) {
    return Status::OutOfMemory("transport body block of ", end_ - begin_,
                               " bytes has no room for ", size, " more");
  }
  last_ = p;
  cursor_ = p + padded;
  peak_ = std::max<int64_t>(peak_, cursor_ - begin_);
  total_ += size;
  ++count_;
  *out = p;
  return Status::OK();
}

Status ArenaPool::Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                             uint8_t** ptr) {
  if (*ptr == last_) {
    const uint64_t padded = RoundUp(static_cast<uint64_t>(new_size), kGranule);
    if (static_cast<uint64_t>(end_ - last_) < padded) {
      return Status::OutOfMemory("transport body block has no room to grow to ", new_size,
                                 " bytes");
    }
    cursor_ = last_ + padded;
    peak_ = std::max<int64_t>(peak_, cursor_ - begin_);
    return Status::OK();
  }
  uint8_t* fresh = nullptr;
  QUIVER_RETURN_NOT_OK(Allocate(new_size, alignment, &fresh));
  std::memcpy(fresh, *ptr, static_cast<size_t>(std::min(old_size, new_size)));
  *ptr = fresh;
  return Status::OK();
}

void ArenaPool::Free(uint8_t* buffer, int64_t, int64_t) {
  if (buffer == last_ && buffer != nullptr) {
    cursor_ = last_;
    last_ = nullptr;
  }
}

}  // namespace quiver::transport
