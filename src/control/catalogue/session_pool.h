// SessionPool: a MemoryPool whose allocations are objects of one catalogue
// session (within its quota and rate limits), so builders can write
// straight into them. What Free does is the owner's choice: let go of the
// object (kLetGo), or leave it to the session (kKeep), which holds it until
// it lets go otherwise or ends; the latter keeps a dropped array from
// freeing memory something else (a publication) still needs.
#pragma once

#include <string>
#include <vector>

#include "control/catalogue/catalogue.h"
#include "quiver/columnar/memory_pool.h"

namespace quiver::control {

class SessionPool final : public MemoryPool {
 public:
  enum class OnFree { kLetGo, kKeep };
  using MemoryPool::Allocate;
  using MemoryPool::Free;
  using MemoryPool::Reallocate;

  SessionPool(Catalogue* catalogue, SessionId session, OnFree on_free)
      : catalogue_(catalogue), session_(session), on_free_(on_free) {}

  Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override;
  Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                    uint8_t** ptr) override;
  void Free(uint8_t* p, int64_t size, int64_t alignment) override;

  int64_t bytes_allocated() const override { return stats_.bytes_allocated(); }
  int64_t max_memory() const override { return stats_.max_memory(); }
  int64_t total_bytes_allocated() const override {
    return stats_.total_bytes_allocated();
  }
  int64_t num_allocations() const override { return stats_.num_allocations(); }
  std::string backend_name() const override { return "session"; }

  // Every allocation made (where it is now), freed or not.
  const std::vector<BufferRange>& made() const { return made_; }

 private:
  Catalogue* catalogue_;
  SessionId session_;
  OnFree on_free_;
  MemoryPoolStats stats_;
  std::vector<BufferRange> made_;
};

}  // namespace quiver::control
