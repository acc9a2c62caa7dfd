#include "control/client/core.h"

#include <openssl/crypto.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "control/rpc/wire.h"
#include "quiver/coherence/flush.h"
#include "quiver/util/string_builder.h"

namespace quiver::control::client {

namespace {

constexpr int kReclaimPollMs = 50;
// How often the links to owners of held pins are checked.
constexpr int kWatchMs = 200;
// How long queued frees and releases wait for company before going out.
constexpr int kCoalesceMs = 5;
constexpr int kDrainTimeoutMs = 10000;
// How long an exiting process waits for background threads still ending.
constexpr int kExitWaitMs = 2000;

// Background threads at work. The process waits for them at exit, before
// OpenSSL's own exit handler runs: that handler frees what a thread still
// uses and takes away the hook that frees an ending thread's OpenSSL state.
struct Finishing {
  std::mutex mu;
  std::condition_variable cv;
  int threads = 0;
};
Finishing& finishing() {
  static Finishing* f = new Finishing;  // never destroyed: used at exit
  return *f;
}
void Busy(int delta) {
  Finishing& f = finishing();
  std::lock_guard<std::mutex> lock(f.mu);
  f.threads += delta;
  if (f.threads == 0) f.cv.notify_all();
}
void WaitForFinishingThreads() {
  Finishing& f = finishing();
  std::unique_lock<std::mutex> lock(f.mu);
  f.cv.wait_for(lock, std::chrono::milliseconds(kExitWaitMs),
                [&] { return f.threads == 0; });
}

// A process maps each region once, at its fixed address: every Client of
// the same cluster and node in this process shares that mapping.
Result<std::shared_ptr<memory::ClusterMap>> SharedMap(const memory::ClusterConfig& config,
                                                      uint32_t node, int wait_ms) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<memory::ClusterMap>> maps;
  std::lock_guard<std::mutex> lock(mu);
  if (auto m = maps[config.name].lock()) {
    if (m->local_node() == node) return m;
    // The same addresses cannot be mapped twice; and a process runs on one
    // node.
    return Status::Invalid("this process is already a client of node ", m->local_node(),
                           " of cluster '", config.name, "': a process is of one node");
  }
  memory::ClusterMap::Options mo;
  mo.create_own_region = false;
  mo.wait_ready_ms = wait_ms;
  QUIVER_ASSIGN_OR_RAISE(std::unique_ptr<memory::ClusterMap> opened,
                         memory::ClusterMap::Open(config, node, mo));
  std::shared_ptr<memory::ClusterMap> m = std::move(opened);
  maps[config.name] = m;
  return m;
}

}  // namespace

Result<std::shared_ptr<Core>> Core::Make(const ClientOptions& options) {
  // OpenSSL writes to sockets with write(): a daemon that goes away while
  // we send must give an error, not kill this process with SIGPIPE.
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
  std::shared_ptr<Core> c(new Core(options));
  QUIVER_ASSIGN_OR_RAISE(memory::ClusterConfig config,
                         memory::LoadClusterConfig(options.config_path));
  if (config.FindNode(options.node) == nullptr) {
    return Status::Invalid("node ", options.node, " is not in ", options.config_path);
  }
  QUIVER_ASSIGN_OR_RAISE(c->map_,
                         SharedMap(config, options.node, options.connect_timeout_ms));
  const auto& cfg = c->map_->config();
  const bool any_remote = cfg.nodes.size() > 1;
  if (any_remote) {
    if (cfg.credentials.empty()) {
      return Status::Invalid(options.config_path,
                             " names no credentials directory ([cluster] credentials)");
    }
    QUIVER_ASSIGN_OR_RAISE(auto tls, TlsContext::Make(cfg.credentials, cfg.name,
                                                      PeerRole::kClient, options.node,
                                                      /*server=*/false));
    c->tls_.emplace(std::move(tls));
    // Registered after OpenSSL's exit handler, so it runs before it.
    static const bool registered = std::atexit(WaitForFinishingThreads) == 0;
    (void)registered;
  }
  for (const auto& n : cfg.nodes) {
    c->links_[n.id] =
        std::make_unique<Link>(&cfg, &n, options.node, c->tls_ ? &*c->tls_ : nullptr,
                               options.connect_timeout_ms);
  }
  c->thread_ = std::thread(&Core::Loop, std::weak_ptr<Core>(c), c->waker_);
  return c;
}

Core::~Core() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  {
    std::lock_guard<std::mutex> lock(waker_->mu);
    waker_->stop = true;
    waker_->cv.notify_all();
  }
  // The sessions end; the daemons release what they held.
  for (auto& [id, l] : links_) l->Close();
  if (!thread_.joinable()) return;
  if (thread_.get_id() == std::this_thread::get_id()) {
    // The thread's own last reference: it ends on its own.
    {
      std::lock_guard<std::mutex> lock(waker_->mu);
      waker_->detached = true;
    }
    thread_.detach();
  } else {
    thread_.join();  // asleep (it holds no reference): it ends at once
  }
}

void Core::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  {
    std::lock_guard<std::mutex> lock(waker_->mu);
    waker_->stop = true;
    waker_->cv.notify_all();
  }
  // Closing first interrupts a call the thread may be waiting on.
  for (auto& [id, l] : links_) l->Close();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) {
    thread_.join();
  }
}

void Core::Wake() {
  std::lock_guard<std::mutex> lock(waker_->mu);
  waker_->work = true;
  waker_->cv.notify_all();
}

Link* Core::link(uint32_t node) {
  auto it = links_.find(node);
  return it == links_.end() ? nullptr : it->second.get();
}

void Core::Allocated(uint32_t node, uint64_t address, uint64_t size, uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  allocs_[node][address] = {size, epoch};
}

uint64_t Core::AllocatedSize(uint32_t node, uint64_t address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& m = allocs_[node];
  auto it = m.find(address);
  return it == m.end() ? 0 : it->second.first;
}

void Core::Forget(uint32_t node, uint64_t address) {
  std::lock_guard<std::mutex> lock(mu_);
  allocs_[node].erase(address);
}

void Core::QueueFree(uint32_t node, uint64_t address) {
  Link* l = link(node);
  if (l == nullptr) return;
  const uint64_t epoch = l->view().epoch;
  std::lock_guard<std::mutex> lock(mu_);
  auto& m = allocs_[node];
  auto it = m.find(address);
  if (it == m.end()) return;
  const bool same_session = it->second.second == epoch;
  m.erase(it);
  // A session that ended took its allocations with it: an address freed
  // now might belong to someone else by then.
  if (!same_session || stopping_) return;
  const bool first = free_queue_.empty() && release_queue_.empty();
  free_queue_[node].push_back(address);
  if (first) Wake();  // later ones join the batch being gathered
}

std::shared_ptr<HeldPin> Core::AddPin(uint32_t owner, std::string handle, uint64_t epoch,
                                      std::vector<uint64_t> chunk_ids,
                                      std::vector<BufferRange> ranges) {
  auto p = std::make_shared<HeldPin>();
  p->owner = owner;
  p->handle = std::move(handle);
  p->epoch = epoch;
  p->chunk_ids = std::move(chunk_ids);
  p->ranges = std::move(ranges);
  std::lock_guard<std::mutex> lock(mu_);
  if (pins_.size() >= pins_sweep_at_) SweepPinsLocked();
  pins_.push_back(p);
  return p;
}

size_t Core::tracked_pins() {
  std::lock_guard<std::mutex> lock(mu_);
  return pins_.size();
}

void Core::SweepPinsLocked() {
  pins_.erase(std::remove_if(pins_.begin(), pins_.end(),
                             [](const std::weak_ptr<HeldPin>& w) { return w.expired(); }),
              pins_.end());
  pins_sweep_at_ = std::max<size_t>(64, 2 * pins_.size());
}

void Core::QueueRelease(const std::shared_ptr<HeldPin>& pin) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;  // the sessions close: their pins go with them
  const bool first = free_queue_.empty() && release_queue_.empty();
  release_queue_.push_back(pin);
  if (first) Wake();
}

Status Core::SendQueued() {
  std::lock_guard<std::mutex> sending(send_mu_);
  std::map<uint32_t, std::vector<uint64_t>> frees;
  std::vector<std::shared_ptr<HeldPin>> releases;
  {
    std::lock_guard<std::mutex> lock(mu_);
    frees.swap(free_queue_);
    releases.swap(release_queue_);
  }
  std::map<uint32_t, wire::FreeRequest> free_req;
  for (auto& [node, list] : frees) {
    for (uint64_t a : list) free_req[node].add_addresses(a);
  }
  std::map<uint32_t, wire::ReleaseRequest> release_req;
  for (auto& p : releases) {
    std::lock_guard<std::mutex> lock(p->mu);
    Link* l = link(p->owner);
    // A pin of a session that ended was released with it.
    if (l != nullptr && p->epoch == l->view().epoch) {
      release_req[p->owner].add_pins(p->handle);
    }
  }
  // All in flight at once, then the answers.
  std::vector<Link::Pending> pending;
  for (auto& [node, req] : free_req)
    pending.push_back(link(node)->Start(rpc::Method::kFree, req));
  for (auto& [node, req] : release_req) {
    pending.push_back(link(node)->Start(rpc::Method::kRelease, req));
  }
  Status first;
  size_t i = 0;
  for (auto& [node, req] : free_req) {
    Status st = link(node)->Finish(&pending[i++], nullptr, kDrainTimeoutMs);
    if (!st.ok() && first.ok()) first = st;
  }
  for (auto& [node, req] : release_req) {
    Status st = link(node)->Finish(&pending[i++], nullptr, kDrainTimeoutMs);
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

Status Core::Drain() { return SendQueued(); }

void Core::KeepAlive() {
  const auto now = rpc::Channel::Clock::now();
  for (auto& [id, l] : links_) {
    rpc::Channel::Clock::time_point last;
    if (!l->LastSend(&last)) continue;
    const uint32_t lease = std::max<uint32_t>(300, l->view().lease_ms);
    if (now - last < std::chrono::milliseconds(lease / 3)) continue;
    wire::PingRequest ping;
    (void)l->Call(rpc::Method::kPing, ping, nullptr, static_cast<int>(lease / 3));
  }
}

void Core::Reclaim() {
  std::vector<std::shared_ptr<HeldPin>> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    SweepPinsLocked();
    for (auto& w : pins_) {
      if (auto p = w.lock()) live.push_back(p);
    }
  }
  for (auto& p : live) {
    Link* l = link(p->owner);
    {
      std::lock_guard<std::mutex> lock(p->mu);
      if (p->epoch == l->view().epoch && l->connected()) continue;
    }
    // The session holding this pin is gone: open a new one and pin again,
    // by what was read (the owner restarted and is re-admitting pins) or
    // by chunk (the chunks are still published).
    if (!l->Open().ok()) continue;
    const SessionView view = l->view();
    wire::PinRequest req;
    {
      std::lock_guard<std::mutex> lock(p->mu);
      if (view.recovering) {
        ToWire(p->ranges, req.mutable_reclaim());
      } else {
        for (uint64_t id : p->chunk_ids) req.add_chunk_ids(id);
      }
    }
    wire::PinReply rep;
    Status st = l->Call(rpc::Method::kPin, req, &rep, options_.call_timeout_ms);
    std::lock_guard<std::mutex> lock(p->mu);
    p->epoch = view.epoch;
    if (st.ok()) {
      p->handle = rep.pin();
    } else {
      lost_pins_.fetch_add(1, std::memory_order_relaxed);
      std::fprintf(stderr,
                   "quiver: could not keep a pin at node %u after its session "
                   "ended: %s\n",
                   p->owner, st.ToString().c_str());
    }
  }
}

int Core::Step() {
  // The owners of what this client holds are watched closely: if one's
  // daemon dies, its successor lets readers re-claim their pins for a
  // while only.
  std::set<uint32_t> owners;
  {
    std::lock_guard<std::mutex> lock(mu_);
    SweepPinsLocked();
    for (auto& w : pins_) {
      if (auto p = w.lock()) owners.insert(p->owner);
    }
  }
  bool need_reclaim = false;
  for (uint32_t o : owners) {
    if (!link(o)->Probe()) need_reclaim = true;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& w : pins_) {
      auto p = w.lock();
      if (!p) continue;
      std::lock_guard<std::mutex> pl(p->mu);
      if (p->epoch != link(p->owner)->view().epoch) need_reclaim = true;
    }
  }
  (void)SendQueued();
  if (need_reclaim) Reclaim();
  KeepAlive();
  // Keep-alives must come well within the shortest lease.
  uint32_t lease = 15000;
  for (auto& [id, l] : links_) {
    const uint32_t ms = l->view().lease_ms;
    if (ms != 0) lease = std::min(lease, ms);
  }
  const int idle = std::min<int>(1000, static_cast<int>(lease / 4));
  return need_reclaim ? kReclaimPollMs : owners.empty() ? idle : std::min(idle, kWatchMs);
}

void Core::Loop(std::weak_ptr<Core> core, std::shared_ptr<Waker> waker) {
  int wait = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(waker->mu);
      waker->cv.wait_for(lock, std::chrono::milliseconds(wait),
                         [&] { return waker->stop || waker->work; });
      // Frees and releases come in bursts (a table's arrays go together):
      // gather a moment's worth into one call per daemon.
      if (!waker->stop && waker->work) {
        waker->cv.wait_for(lock, std::chrono::milliseconds(kCoalesceMs),
                           [&] { return waker->stop; });
        waker->work = false;
      }
      if (waker->stop) break;
    }
    // Counted while it works: an exiting process waits for the work (and
    // for the Core's end, if that falls to this thread).
    Busy(+1);
    bool gone = true;
    {
      std::shared_ptr<Core> self = core.lock();
      if (self) {
        wait = self->Step();
        gone = false;
      }
    }
    {
      std::lock_guard<std::mutex> lock(waker->mu);
      gone = gone || waker->detached;
    }
    if (gone) {
      OPENSSL_thread_stop();  // before the process may exit
      Busy(-1);
      return;
    }
    Busy(-1);
  }
  OPENSSL_thread_stop();
}

// ---------------------------------------------------------------------------
// Allocation in a region this process maps (step 2 of the coherency
// protocol: the owner has every other node of its memory group flush the
// range before it answers; a flush here does this node).

Status Core::CheckMapped(uint32_t node) {
  if (map_->region(node) != nullptr) return Status::OK();
  const memory::NodeConfig* n = config().FindNode(node);
  const memory::NodeConfig* self = config().FindNode(options_.node);
  return Status::Invalid("node ", node, "'s region is not mapped on node ", options_.node,
                         ": they are in different memory groups ('",
                         n ? n->memory : std::string(), "' and '",
                         self ? self->memory : std::string(), "')");
}

Result<uint64_t> Core::RemoteAllocate(uint32_t node, uint64_t size, uint64_t alignment) {
  Link* l = link(node);
  if (l == nullptr) return Status::Invalid("no node ", node, " in the cluster");
  QUIVER_RETURN_NOT_OK(CheckMapped(node));
  wire::MallocRequest req;
  req.set_size(size);
  req.set_alignment(alignment);
  wire::MallocReply rep;
  QUIVER_RETURN_NOT_OK(
      l->Call(control::rpc::Method::kMalloc, req, &rep, options_.call_timeout_ms));
  Allocated(node, rep.address(), rep.size(), l->view().epoch);
  // Step 2 for this node: the owner had every other node flush the range.
  QUIVER_RETURN_NOT_OK(coherence::FlushForProtocol(
      config(), reinterpret_cast<const void*>(rep.address()), rep.size()));
  return rep.address();
}

Result<uint64_t> Core::RemoteReallocate(uint32_t node, uint64_t address,
                                        uint64_t new_size, uint64_t alignment) {
  Link* l = link(node);
  if (l == nullptr) return Status::Invalid("no node ", node, " in the cluster");
  QUIVER_RETURN_NOT_OK(CheckMapped(node));
  // An allocation of a session that ended (its owner's daemon restarted, or
  // the session outlived its lease) is no longer this client's.
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& m = allocs_[node];
    auto it = m.find(address);
    if (it != m.end() && it->second.second != l->view().epoch) {
      return Status::Unavailable("Realloc of ", util::Hex(address), " at node ", node,
                                 ": the session it was allocated in has ended (node ",
                                 node,
                                 "'s daemon restarted, or this client was silent "
                                 "longer than its lease); build the data again");
    }
  }
  // What this process wrote must be in memory before the owner copies it.
  const uint64_t old = AllocatedSize(node, address);
  if (old != 0 && node != options_.node) {
    QUIVER_RETURN_NOT_OK(coherence::FlushForProtocol(
        config(), reinterpret_cast<const void*>(address), old));
  }
  wire::ReallocRequest req;
  req.set_address(address);
  req.set_new_size(new_size);
  req.set_alignment(alignment);
  wire::MallocReply rep;
  QUIVER_RETURN_NOT_OK(
      l->Call(control::rpc::Method::kRealloc, req, &rep, options_.call_timeout_ms));
  Forget(node, address);
  Allocated(node, rep.address(), rep.size(), l->view().epoch);
  // Step 2 for this node: the owner had every other node flush the range.
  QUIVER_RETURN_NOT_OK(coherence::FlushForProtocol(
      config(), reinterpret_cast<const void*>(rep.address()), rep.size()));
  return rep.address();
}

Status Core::RemoteFree(uint32_t node, uint64_t address) {
  QueueFree(node, address);
  return Status::OK();
}

}  // namespace quiver::control::client
