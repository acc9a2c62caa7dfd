// Core: the shared state of a Client, kept alive by the Client and by every
// array Get returned (so pins outlive the Client object if arrays do).
//
// It holds the mapped regions, a Link per daemon, and one background thread
// that does what must not block the caller: releases of pins and frees of
// allocations (queued by destructors, sent in batches), keep-alives on idle
// sessions (a silent session is dropped after its lease), and after an
// owner's daemon restarted, re-claiming the pins readers still hold.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "control/client/far.h"
#include "control/client/link.h"
#include "control/tls/tls_context.h"
#include "quiver/client.h"
#include "quiver/control/descriptor.h"

namespace quiver::control::client {

// A pin this client holds at an owner (what one Get took there).
struct HeldPin {
  uint32_t owner = 0;
  std::vector<uint64_t> chunk_ids;  // to pin again by chunk
  std::vector<BufferRange> ranges;  // to re-claim after a restart
  std::mutex mu;                    // the two below
  std::string handle;
  uint64_t epoch = 0;  // the link's session it belongs to
};

class Core final : public memory::RemoteAllocator {
 public:
  static Result<std::shared_ptr<Core>> Make(const ClientOptions& options);
  ~Core() override;  // closes the links (no waiting on a daemon) and stops the thread

  const ClientOptions& options() const { return options_; }
  const memory::ClusterConfig& config() const { return map_->config(); }
  uint32_t node() const { return options_.node; }
  memory::ClusterMap* map() { return map_.get(); }
  Link* link(uint32_t node);

  // Allocations, so a free goes only to the session that made them.
  void Allocated(uint32_t node, uint64_t address, uint64_t size, uint64_t epoch);
  // The size this client allocated at `address` (0 if unknown).
  uint64_t AllocatedSize(uint32_t node, uint64_t address);
  void Forget(uint32_t node, uint64_t address);
  // Queues the free of an allocation (dropped if its session is gone).
  void QueueFree(uint32_t node, uint64_t address);

  // memory::RemoteAllocator: allocations in `node`'s region for this
  // client's session there (a region this process maps only), frees queued.
  Result<uint64_t> RemoteAllocate(uint32_t node, uint64_t size,
                                  uint64_t alignment) override;
  Result<uint64_t> RemoteReallocate(uint32_t node, uint64_t address, uint64_t new_size,
                                    uint64_t alignment) override;
  Status RemoteFree(uint32_t node, uint64_t address) override;

  // Chunks of nodes outside this node's memory group.
  FarReader* far() { return &far_; }

  std::shared_ptr<HeldPin> AddPin(uint32_t owner, std::string handle, uint64_t epoch,
                                  std::vector<uint64_t> chunk_ids,
                                  std::vector<BufferRange> ranges);
  // Queues the release (from a destructor: never blocks).
  void QueueRelease(const std::shared_ptr<HeldPin>& pin);
  // How many pins are tracked: those held, and released ones not swept yet
  // (at most as many again, or 64).
  size_t tracked_pins();
  // Pins whose session ended and that could not be re-claimed or re-pinned.
  uint64_t lost_pins() const { return lost_pins_.load(std::memory_order_relaxed); }

  // Sends everything queued now and waits for the answers.
  Status Drain();
  // Stops the thread (waiting for what it is doing) and closes every link:
  // Client::Close. The destructor does the same without ever waiting on a
  // daemon (see Loop).
  void Shutdown();

 private:
  // Wakes the background thread; outlives the Core (the thread keeps it),
  // so the thread sleeps without keeping the Core alive.
  struct Waker {
    std::mutex mu;
    std::condition_variable cv;
    bool stop = false;
    bool work = false;
    bool detached = false;  // ~Core ran on the thread, which then ends alone
  };
  explicit Core(const ClientOptions& options)
      : options_(options), waker_(std::make_shared<Waker>()) {}
  // The background thread. It holds the Core only while it works (a weak
  // reference otherwise), so the last owner's ~Core either finds it asleep
  // (stops it at once) or runs on it, when its work is done.
  static void Loop(std::weak_ptr<Core> core, std::shared_ptr<Waker> waker);
  // One round of work; returns how long to sleep before the next.
  int Step();
  void Wake();
  // Invalid unless `node`'s region is mapped in this process.
  Status CheckMapped(uint32_t node);
  Status SendQueued();
  void KeepAlive();
  void Reclaim();

  ClientOptions options_;
  std::shared_ptr<memory::ClusterMap> map_;  // shared by the process's clients
  std::optional<TlsContext> tls_;
  std::map<uint32_t, std::unique_ptr<Link>> links_;

  std::shared_ptr<Waker> waker_;
  std::mutex mu_;  // the queues and tables below
  bool stopping_ = false;
  // node -> address -> (size, epoch of the session that made it)
  std::map<uint32_t, std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>>> allocs_;
  std::map<uint32_t, std::vector<uint64_t>> free_queue_;
  std::vector<std::shared_ptr<HeldPin>> release_queue_;
  // Every pin held (expired ones are dropped when the list has doubled
  // since the last sweep: a long-lived client's list stays as long as what
  // it holds, not as what it ever got).
  std::vector<std::weak_ptr<HeldPin>> pins_;
  size_t pins_sweep_at_ = 64;
  void SweepPinsLocked();
  FarReader far_{this, this};
  std::mutex send_mu_;  // one sender of the queues at a time
  std::thread thread_;
  std::atomic<uint64_t> lost_pins_{0};
};

}  // namespace quiver::control::client
