#include "quiver/memory/region_pool.h"

#include <cstdio>

namespace quiver::memory {

namespace {
Status CheckSizes(int64_t size, int64_t alignment) {
  if (size < 0) return Status::Invalid("negative allocation size ", size);
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
    return Status::Invalid("alignment ", alignment, " is not a power of two");
  }
  return Status::OK();
}

void ReportFailedFree(const std::string& pool, const uint8_t* p, const Status& st) {
  std::fprintf(stderr, "quiver: %s: free of %p failed: %s\n", pool.c_str(),
               static_cast<const void*>(p), st.ToString().c_str());
}
}  // namespace

Status RegionMemoryPool::Allocate(int64_t size, int64_t alignment, uint8_t** out) {
  QUIVER_RETURN_NOT_OK(CheckSizes(size, alignment));
  QUIVER_ASSIGN_OR_RAISE(uint8_t * p,
                         allocator_->Allocate(static_cast<uint64_t>(size),
                                              static_cast<uint64_t>(alignment)));
  if (on_alloc_) {
    Status st = on_alloc_(p, static_cast<uint64_t>(size));
    if (!st.ok()) {
      (void)allocator_->Free(p);
      return st;
    }
  }
  *out = p;
  stats_.DidAllocate(size);
  return Status::OK();
}

Status RegionMemoryPool::Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                                    uint8_t** ptr) {
  QUIVER_RETURN_NOT_OK(CheckSizes(new_size, alignment));
  QUIVER_ASSIGN_OR_RAISE(uint8_t * p,
                         allocator_->Reallocate(*ptr, static_cast<uint64_t>(new_size),
                                                static_cast<uint64_t>(alignment)));
  *ptr = p;
  stats_.DidReallocate(old_size, new_size);
  if (on_alloc_) QUIVER_RETURN_NOT_OK(on_alloc_(p, static_cast<uint64_t>(new_size)));
  return Status::OK();
}

void RegionMemoryPool::Free(uint8_t* buffer, int64_t size, int64_t /*alignment*/) {
  Status st =
      free_check_ ? allocator_->FreeIf(buffer, free_check_) : allocator_->Free(buffer);
  if (!st.ok()) {
    ++failed_frees_;
    ReportFailedFree(backend_name(), buffer, st);
    return;
  }
  stats_.DidFree(size);
}

std::string RegionMemoryPool::backend_name() const {
  return "region:" + std::to_string(node_id_);
}

Status RemoteMemoryPool::Allocate(int64_t size, int64_t alignment, uint8_t** out) {
  QUIVER_RETURN_NOT_OK(CheckSizes(size, alignment));
  QUIVER_ASSIGN_OR_RAISE(uint64_t addr,
                         forwarder_->RemoteAllocate(node_id_, static_cast<uint64_t>(size),
                                                    static_cast<uint64_t>(alignment)));
  *out = reinterpret_cast<uint8_t*>(addr);
  stats_.DidAllocate(size);
  return Status::OK();
}

Status RemoteMemoryPool::Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                                    uint8_t** ptr) {
  QUIVER_RETURN_NOT_OK(CheckSizes(new_size, alignment));
  QUIVER_ASSIGN_OR_RAISE(uint64_t addr, forwarder_->RemoteReallocate(
                                            node_id_, reinterpret_cast<uint64_t>(*ptr),
                                            static_cast<uint64_t>(new_size),
                                            static_cast<uint64_t>(alignment)));
  *ptr = reinterpret_cast<uint8_t*>(addr);
  stats_.DidReallocate(old_size, new_size);
  return Status::OK();
}

void RemoteMemoryPool::Free(uint8_t* buffer, int64_t size, int64_t /*alignment*/) {
  Status st = forwarder_->RemoteFree(node_id_, reinterpret_cast<uint64_t>(buffer));
  if (!st.ok()) {
    ++failed_frees_;
    ReportFailedFree(backend_name(), buffer, st);
    return;
  }
  stats_.DidFree(size);
}

std::string RemoteMemoryPool::backend_name() const {
  return "remote:" + std::to_string(node_id_);
}

}  // namespace quiver::memory
