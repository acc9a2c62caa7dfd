#include "control/catalogue/session_pool.h"

namespace quiver::control {

Status SessionPool::Allocate(int64_t size, int64_t alignment, uint8_t** out) {
  QUIVER_ASSIGN_OR_RAISE(Allocation a,
                         catalogue_->Allocate(session_, static_cast<uint64_t>(size),
                                              static_cast<uint64_t>(alignment)));
  *out = reinterpret_cast<uint8_t*>(a.address);
  made_.push_back({a.address, a.size});
  stats_.DidAllocate(size);
  return Status::OK();
}

Status SessionPool::Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                               uint8_t** ptr) {
  const auto old_address = reinterpret_cast<uint64_t>(*ptr);
  QUIVER_ASSIGN_OR_RAISE(
      Allocation a,
      catalogue_->Reallocate(session_, old_address, static_cast<uint64_t>(new_size),
                             static_cast<uint64_t>(alignment)));
  *ptr = reinterpret_cast<uint8_t*>(a.address);
  for (BufferRange& r : made_) {
    if (r.address == old_address) r = {a.address, a.size};
  }
  stats_.DidReallocate(old_size, new_size);
  return Status::OK();
}

void SessionPool::Free(uint8_t* p, int64_t size, int64_t) {
  if (on_free_ == OnFree::kLetGo) {
    (void)catalogue_->Free(session_, {reinterpret_cast<uint64_t>(p)});
  }
  stats_.DidFree(size);
}

}  // namespace quiver::control
