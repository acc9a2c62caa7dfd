// Region memory faulted in ahead of use.
//
// A process's first write to a page of a region costs a page fault; when no
// process has touched the page yet, also the kernel's allocation and zeroing
// of it. On a virtual machine that is several microseconds per 4 KiB page,
// so writing fresh region memory runs at a fraction of memcpy's speed.
// PopulateWrite does the same work in one system call (MADV_POPULATE_WRITE,
// Linux 5.14), and Prefaulter does it on a background thread of this
// process for ranges a writer is expected to reach next, so that the write
// itself finds its pages mapped. Populating never changes a byte.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "quiver/util/status.h"

namespace quiver::memory {

class RegionMapping;

// Maps [p, p + len) writable in this process's page tables, allocating
// pages not yet backed. NotImplemented where the kernel lacks
// MADV_POPULATE_WRITE; OutOfMemory when the backing has no room left.
Status PopulateWrite(void* p, uint64_t len);

class Prefaulter {
 public:
  // Ranges are populated in pieces of `chunk` bytes (a power of two), each
  // at most once per process; a stop waits for at most one piece.
  explicit Prefaulter(uint64_t chunk = 2ULL << 20);
  ~Prefaulter();  // stops the thread; pieces not reached are dropped
  Prefaulter(const Prefaulter&) = delete;
  Prefaulter& operator=(const Prefaulter&) = delete;

  // Queues [p, p + len), clipped to `region`'s data area, and returns at
  // once. `region` must stay mapped while this Prefaulter lives.
  void Request(RegionMapping* region, const void* p, uint64_t len);
  // Waits until every queued range has been populated (or given up).
  void Drain();

  uint64_t populated_bytes() const;
  // The error that stopped population (OK while it runs): a kernel without
  // MADV_POPULATE_WRITE, or a backing that is full.
  Status status() const;

 private:
  struct Region {
    uint8_t* data = nullptr;
    uint64_t size = 0;
    std::vector<bool> done;  // per chunk
    bool failed = false;
  };
  struct Range {
    uint8_t* data;        // the region's key
    uint64_t first, end;  // chunks
  };
  void Run();

  const uint64_t chunk_;
  mutable std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::map<uint8_t*, Region> regions_;
  std::deque<Range> queue_;
  bool busy_ = false, stop_ = false;
  uint64_t populated_ = 0;
  Status status_;
  std::thread thread_;
};

}  // namespace quiver::memory
