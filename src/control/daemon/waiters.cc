#include "control/daemon/waiters.h"

#include <algorithm>
#include <string>

namespace quiver::control::daemon {

Waiters::~Waiters() { FailAll(Status::Unavailable("the daemon is stopping")); }

Waiters::Shares Waiters::SharesOf(uint32_t max_waiting) {
  Shares s;
  s.session = std::max<uint32_t>(1, max_waiting / 16);
  s.node = std::max<uint32_t>(1, max_waiting / 4);
  s.remote = std::max<uint32_t>(1, max_waiting - max_waiting / 4);
  return s;
}

namespace {

uint64_t NodeKey(const PeerIdentity& id) {
  return (static_cast<uint64_t>(id.role) << 32) | id.node;
}

uint32_t CountOf(const std::map<uint64_t, uint32_t>& m, uint64_t key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

void Drop(std::map<uint64_t, uint32_t>* m, uint64_t key) {
  auto it = m->find(key);
  if (it != m->end() && --it->second == 0) m->erase(it);
}

}  // namespace

Status Waiters::Park(const CallPtr& call, uint64_t timeout_ms, Check check) {
  std::lock_guard<std::mutex> lock(mu_);
  if (check(call, /*expired=*/false)) return Status::OK();
  const ConnectionState& who = call->state();
  Owner owner;
  owner.connection = call->connection()->id();
  owner.node = NodeKey(who.info.identity);
  owner.local = who.info.local;
  const std::string whose = who.info.identity.ToString();
  if (entries_.size() >= max_) {
    return Status::CapacityError(
        "this daemon already holds ", entries_.size(),
        " waiting calls, the most allowed (limits.max_waiting_calls)");
  }
  if (CountOf(by_connection_, owner.connection) >= shares_.session) {
    return Status::CapacityError("this session of ", whose, " already has ",
                                 shares_.session,
                                 " waiting calls, the most one session may "
                                 "(limits.max_waiting_calls / 16)");
  }
  if (CountOf(by_node_, owner.node) >= shares_.node) {
    return Status::CapacityError(whose, "'s sessions already have ", shares_.node,
                                 " waiting calls at this daemon, the most one node's may "
                                 "(limits.max_waiting_calls / 4)");
  }
  if (!owner.local && remote_ >= shares_.remote) {
    return Status::CapacityError(
        "sessions from other nodes already have ", remote_,
        " waiting calls at this daemon; the rest is kept for its local clients");
  }
  const uint64_t id = next_++;
  Entry& e = entries_[id];
  e.call = call;
  e.check = std::move(check);
  e.owner = owner;
  ++by_connection_[owner.connection];
  ++by_node_[owner.node];
  if (!owner.local) ++remote_;
  // A 32-bit wait of up to 49.7 days is honoured as it is.
  e.timer = timers_->After(static_cast<int64_t>(timeout_ms), [this, id] { Expire(id); });
  call->state().waiting.fetch_add(1);
  return Status::OK();
}

void Waiters::EraseLocked(std::map<uint64_t, Entry>::iterator it) {
  const Entry& e = it->second;
  e.call->state().waiting.fetch_sub(1);
  Drop(&by_connection_, e.owner.connection);
  Drop(&by_node_, e.owner.node);
  if (!e.owner.local && remote_ > 0) --remote_;
  entries_.erase(it);
}

void Waiters::Expire(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  it->second.check(it->second.call, /*expired=*/true);
  // A check that did not answer at its deadline still must not leave the
  // caller hanging.
  it->second.call->Fail(Status::DeadlineExceeded("wait timed out"));
  EraseLocked(it);
}

void Waiters::Notify() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    if (e.call->answered() || e.check(e.call, /*expired=*/false)) {
      timers_->Cancel(e.timer);
      auto next = std::next(it);
      EraseLocked(it);
      it = next;
    } else {
      ++it;
    }
  }
}

void Waiters::DropConnection(uint64_t connection_id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.call->connection()->id() == connection_id) {
      timers_->Cancel(it->second.timer);
      it->second.call->Fail(Status::Cancelled("connection closed"));
      auto next = std::next(it);
      EraseLocked(it);
      it = next;
    } else {
      ++it;
    }
  }
}

void Waiters::FailAll(const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    timers_->Cancel(it->second.timer);
    it->second.call->Fail(why);
    auto next = std::next(it);
    EraseLocked(it);
    it = next;
  }
}

size_t Waiters::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

WorkerPool::WorkerPool(int threads, size_t max_queue) : max_queue_(max_queue) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

WorkerPool::~WorkerPool() { Stop(); }

bool WorkerPool::TryPost(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_ || queue_.size() >= max_queue_) return false;
  queue_.push_back(std::move(task));
  cv_.notify_one();
  return true;
}

void WorkerPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void WorkerPool::Run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace quiver::control::daemon
