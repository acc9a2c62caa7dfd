#include "quiver/columnar/memory_pool.h"

#include <cstdlib>
#include <cstring>
#include <limits>

namespace quiver {

namespace {

alignas(kDefaultBufferAlignment) uint8_t zero_size_area[kDefaultBufferAlignment];

bool IsPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

Status CheckArgs(int64_t size, int64_t alignment) {
  if (size < 0) return Status::Invalid("negative allocation size ", size);
  if (!IsPowerOfTwo(alignment)) {
    return Status::Invalid("alignment ", alignment, " is not a power of two");
  }
  if (alignment > kDefaultBufferAlignment * 64) {
    return Status::Invalid("alignment ", alignment, " is larger than supported");
  }
  // Keep size + alignment representable.
  if (size > std::numeric_limits<int64_t>::max() - alignment) {
    return Status::CapacityError("allocation size ", size, " overflows");
  }
  return Status::OK();
}

}  // namespace

uint8_t* ZeroSizeArea() { return zero_size_area; }

Status SystemMemoryPool::Allocate(int64_t size, int64_t alignment, uint8_t** out) {
  QUIVER_RETURN_NOT_OK(CheckArgs(size, alignment));
  if (size == 0) {
    *out = zero_size_area;
    return Status::OK();
  }
  void* p = nullptr;
  size_t align = static_cast<size_t>(std::max<int64_t>(alignment, sizeof(void*)));
  if (posix_memalign(&p, align, static_cast<size_t>(size)) != 0 || p == nullptr) {
    return Status::OutOfMemory("failed to allocate ", size, " bytes (alignment ",
                               alignment, ")");
  }
  *out = static_cast<uint8_t*>(p);
  stats_.DidAllocate(size);
  return Status::OK();
}

Status SystemMemoryPool::Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                                    uint8_t** ptr) {
  QUIVER_RETURN_NOT_OK(CheckArgs(new_size, alignment));
  if (old_size < 0) return Status::Invalid("negative old size ", old_size);
  uint8_t* previous = *ptr;
  if (previous == zero_size_area) {
    if (old_size != 0) return Status::Invalid("zero-size area with old size ", old_size);
    return Allocate(new_size, alignment, ptr);
  }
  if (new_size == 0) {
    Free(previous, old_size, alignment);
    *ptr = zero_size_area;
    return Status::OK();
  }
  uint8_t* fresh = nullptr;
  void* p = nullptr;
  size_t align = static_cast<size_t>(std::max<int64_t>(alignment, sizeof(void*)));
  if (posix_memalign(&p, align, static_cast<size_t>(new_size)) != 0 || p == nullptr) {
    return Status::OutOfMemory("failed to reallocate ", old_size, " -> ", new_size,
                               " bytes");
  }
  fresh = static_cast<uint8_t*>(p);
  std::memcpy(fresh, previous, static_cast<size_t>(std::min(old_size, new_size)));
  std::free(previous);
  *ptr = fresh;
  stats_.DidReallocate(old_size, new_size);
  return Status::OK();
}

void SystemMemoryPool::Free(uint8_t* buffer, int64_t size, int64_t /*alignment*/) {
  if (buffer == zero_size_area || buffer == nullptr) return;
  std::free(buffer);
  stats_.DidFree(size);
}

MemoryPool* default_memory_pool() {
  static SystemMemoryPool* pool = new SystemMemoryPool();
  return pool;
}

}  // namespace quiver
