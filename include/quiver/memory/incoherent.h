// The non-coherent emulator (DESIGN.md §5).
//
// On one x86 host all memory is coherent, so a missing flush would go
// unnoticed. A remote region of an `incoherent` node is therefore mapped in
// each process as a private cache of the shared backing:
//   - the first access to a page copies it from the backing (later reads of
//     that page see this copy, however stale);
//   - stores go to the private copy only;
//   - Flush(range) writes back every line (coherence granule) of the pages
//     overlapping the range that differs from what was fetched, whole lines
//     as hardware does, and drops those pages so the next access refetches.
// Writing back whole lines is what makes two objects in one granule corrupt
// each other; dropping is what makes the pre-write flush necessary.
// Page faults are served by a SIGSEGV handler the emulator installs once;
// faults outside emulated ranges go to the previous handler. System calls
// that read a not-yet-fetched page fail with EFAULT (call Prefetch first).
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>

#include "quiver/util/result.h"

namespace quiver::memory {

class IncoherentView {
 public:
  // Maps [base, base + size) as a private cache of `backing_fd` (a shm file
  // of at least `size` bytes). `line` is the write-back unit.
  static Result<std::unique_ptr<IncoherentView>> Map(uint8_t* base, uint64_t size,
                                                     int backing_fd, uint64_t line);
  ~IncoherentView();

  // Writes back changed lines of every cached page overlapping the range,
  // then drops those pages.
  Status Flush(const void* addr, uint64_t len);
  // Fetches every page of the range now (so system calls can read it).
  Status Prefetch(const void* addr, uint64_t len);
  uint8_t* base() const { return base_; }
  uint64_t size() const { return size_; }
  // Pages currently held in the private cache (for tests).
  uint64_t cached_pages() const;

 private:
  IncoherentView() = default;
  friend struct EmulatorAccess;
  uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t line_ = 64;
  uint64_t page_ = 4096;
  uint8_t* backing_ = nullptr;   // shared view of the backing file
  uint8_t* alias_ = nullptr;     // writable alias of the private cache
  uint8_t* snapshot_ = nullptr;  // page contents as fetched
  uint8_t* states_ = nullptr;    // per page: 0 absent, 1 filling, 2 cached
  int cache_fd_ = -1;
  int slot_ = -1;
};

// If [addr, addr + len) lies in an emulated region of this process, flushes
// it there and returns true (with *status set); otherwise returns false.
bool FlushIfEmulated(const void* addr, uint64_t len, Status* status);
// True if addr lies in an emulated region of this process.
bool IsEmulatedAddress(const void* addr);

}  // namespace quiver::memory
