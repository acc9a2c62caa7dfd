#include "control/daemon/peers.h"

#include <algorithm>
#include <ctime>
#include <future>

#include "control/catalogue/directory.h"
#include "control/daemon/log.h"
#include "control/rpc/wire.h"
#include "control/tls/tls_context.h"

namespace quiver::control::daemon {

namespace {

std::string NowText() {
  time_t t = time(nullptr);
  tm v{};
  gmtime_r(&t, &v);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%H:%M:%SZ", &v);
  return buf;
}

}  // namespace

struct Peers::Peer {
  const memory::NodeConfig* config = nullptr;
  rpc::ConnectionPtr link;  // guarded by Peers::mu_
  // Calls waiting for the link (peer not reached yet, or reconnecting):
  // sent once it opens, failed if the attempt fails.
  struct Deferred {
    rpc::Method method;
    std::string payload;
    rpc::CallDone done;
  };
  std::vector<Deferred> deferred;
  View view;
  int failures = 0;
  int connect_backoff_ms = 0;
  std::chrono::steady_clock::time_point next_connect{};
  bool syncing = false;
  std::thread thread;
};

Peers::Peers(const memory::ClusterConfig* config, uint32_t self_node, rpc::Engine* engine,
             const TlsContext* tls, Directory* directory, Self self, OnChange on_change,
             PeersOptions options)
    : config_(config),
      self_node_(self_node),
      engine_(engine),
      tls_(tls),
      directory_(directory),
      self_(std::move(self)),
      on_change_(std::move(on_change)),
      options_(options) {
  for (const auto& n : config_->nodes) {
    if (n.id == self_node_) continue;
    auto p = std::make_unique<Peer>();
    p->config = &n;
    p->view.node = n.id;
    peers_.emplace(n.id, std::move(p));
  }
}

Peers::~Peers() { Stop(); }

void Peers::Start() {
  for (auto& [id, p] : peers_) {
    Peer* peer = p.get();
    peer->thread = std::thread([this, peer] { Loop(peer); });
  }
}

void Peers::Stop() {
  if (stopping_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  for (auto& [id, p] : peers_) {
    if (p->thread.joinable()) p->thread.join();
  }
  std::vector<Peer::Deferred> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, p] : peers_) {
      if (p->link) p->link->Close(Status::Unavailable("the daemon is stopping"));
      p->link.reset();
      for (auto& d : p->deferred) waiting.push_back(std::move(d));
      p->deferred.clear();
    }
  }
  for (auto& d : waiting) d.done(Status::Unavailable("the daemon is stopping"));
}

Peers::View Peers::view(uint32_t node) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = peers_.find(node);
  return it == peers_.end() ? View{} : it->second->view;
}

std::vector<Peers::View> Peers::views() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<View> out;
  for (const auto& [id, p] : peers_) out.push_back(p->view);
  return out;
}

bool Peers::AllOnline() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, p] : peers_) {
    if (!p->view.online) return false;
  }
  return true;
}

std::string Peers::OfflineReason(uint32_t node) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = peers_.find(node);
  // A peer not reached yet (starting up) is not lost: a reader that needs
  // it gets the connection's own error when it pins there.
  if (it == peers_.end() || it->second->view.online || !it->second->view.was_online) {
    return "";
  }
  const Peer& p = *it->second;
  return "node " + std::to_string(node) + " (" + p.config->control +
         ") stopped answering at " + p.view.offline_since;
}

void Peers::SetFlags(uint32_t node, uint64_t flags) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = peers_.find(node);
    if (it == peers_.end() || it->second->view.flags == flags) return;
    it->second->view.flags = flags;
  }
  on_change_();
}

void Peers::CallAll(rpc::Method method, const std::string& payload,
                    std::function<void(Results)> done,
                    const std::vector<uint32_t>* only) {
  struct Gather {
    std::mutex mu;
    Results results;
    size_t left = 0;
    std::function<void(Results)> done;
  };
  auto g = std::make_shared<Gather>();
  g->done = std::move(done);
  auto finish_one = [g](uint32_t node) {
    return [g, node](Result<std::string> r) {
      bool last;
      {
        std::lock_guard<std::mutex> lock(g->mu);
        g->results.emplace(node, std::move(r));
        last = --g->left == 0;
      }
      if (last) g->done(std::move(g->results));
    };
  };
  std::vector<std::pair<uint32_t, rpc::ConnectionPtr>> links;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, p] : peers_) {
      if (only != nullptr && std::find(only->begin(), only->end(), id) == only->end()) {
        continue;
      }
      const bool offline = p->view.was_online && !p->view.online;
      if (offline) continue;  // declared down: it pulls what it missed when back
      if (p->link && !p->link->closed()) {
        links.emplace_back(id, p->link);
      } else {
        // Not known to be down (starting, reconnecting): the call waits for
        // the link, so that what is published is everywhere when it returns.
        ++g->left;
        p->deferred.push_back({method, payload, finish_one(id)});
        cv_.notify_all();
      }
    }
    g->left += links.size();
  }
  if (g->left == 0) {
    g->done({});
    return;
  }
  for (auto& [id, link] : links) {
    link->Call(rpc::MethodByte(method), payload, options_.call_timeout_ms,
               finish_one(id));
  }
}

void Peers::CallOne(uint32_t node, rpc::Method method, const std::string& payload,
                    rpc::CallDone done) {
  rpc::ConnectionPtr link;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = peers_.find(node);
    if (it != peers_.end()) link = it->second->link;
  }
  if (!link || link->closed()) {
    done(Status::Unavailable("no link to node ", node));
    return;
  }
  link->Call(rpc::MethodByte(method), payload, options_.call_timeout_ms, std::move(done));
}

// ---------------------------------------------------------------------------
// The per-peer thread

Result<std::string> Peers::CallAndWait(Peer* p, rpc::Method method,
                                       const std::string& payload, int timeout_ms) {
  rpc::ConnectionPtr link;
  {
    std::lock_guard<std::mutex> lock(mu_);
    link = p->link;
  }
  return CallOn(link, method, payload, timeout_ms);
}

Result<std::string> Peers::CallOn(const rpc::ConnectionPtr& link, rpc::Method method,
                                  const std::string& payload, int timeout_ms) {
  if (!link) return Status::Unavailable("no link");
  auto promise = std::make_shared<std::promise<Result<std::string>>>();
  auto future = promise->get_future();
  link->Call(rpc::MethodByte(method), payload, timeout_ms,
             [promise](Result<std::string> r) { promise->set_value(std::move(r)); });
  return future.get();  // the engine always completes the call (reply, error or timeout)
}

bool Peers::EnsureLink(Peer* p) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (p->link && !p->link->closed()) {
      // Calls deferred while the link was being (re)made go out now.
      std::vector<Peer::Deferred> waiting;
      waiting.swap(p->deferred);
      rpc::ConnectionPtr link = p->link;
      lock.unlock();
      for (auto& d : waiting) {
        link->Call(rpc::MethodByte(d.method), d.payload, options_.call_timeout_ms,
                   std::move(d.done));
      }
      return true;
    }
    p->link.reset();
    if (std::chrono::steady_clock::now() < p->next_connect && p->deferred.empty()) {
      return false;
    }
  }
  const PeerIdentity expected{config_->name, PeerRole::kDaemon, p->view.node};
  const int timeout = std::max(200, options_.heartbeat_ms * 5);
  auto link = engine_->Connect(p->config->control, *tls_, expected, timeout);
  Status st = link.status();
  rpc::ConnectionPtr fresh;
  if (st.ok()) {
    // The link is no one's until its session is open: a call sent on it
    // before would be refused by the peer ("before OpenSession"). Calls
    // meanwhile are deferred (CallAll) and go out below.
    fresh = *link;
    wire::OpenSessionRequest open;
    open.set_pid(static_cast<int32_t>(getpid()));
    open.set_program("quiverd");
    st = CallOn(fresh, rpc::Method::kOpenSession, open.SerializeAsString(), timeout)
             .status();
  }
  std::vector<Peer::Deferred> waiting;
  rpc::ConnectionPtr link_now;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (st.ok()) p->link = fresh;
    waiting.swap(p->deferred);
    link_now = st.ok() ? p->link : nullptr;
  }
  if (!st.ok() && fresh) fresh->Close(st);
  for (auto& d : waiting) {
    if (link_now) {
      link_now->Call(rpc::MethodByte(d.method), d.payload, options_.call_timeout_ms,
                     std::move(d.done));
    } else {
      d.done(st.ok() ? Status::Unavailable("no link") : st);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (st.ok()) {
    p->connect_backoff_ms = 0;
    return true;
  }
  if (p->link) p->link->Close(st);
  p->link.reset();
  // Back off up to a second between attempts at a peer that is down.
  p->connect_backoff_ms =
      std::min(1000, std::max(options_.heartbeat_ms, p->connect_backoff_ms * 2));
  p->next_connect =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(p->connect_backoff_ms);
  return false;
}

void Peers::MarkOnline(Peer* p, uint64_t generation) {
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    p->failures = 0;
    const bool restarted = p->view.generation != 0 && p->view.generation != generation;
    if (!p->view.online || restarted) {
      Log("node %u is online (generation %llu)%s", p->view.node,
          static_cast<unsigned long long>(generation), restarted ? ", restarted" : "");
      changed = true;
    }
    p->view.online = true;
    p->view.generation = generation;
  }
  if (changed) on_change_();
}

void Peers::MarkFailure(Peer* p, const Status& why) {
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (++p->failures >= options_.offline_after && p->view.online) {
      p->view.online = false;
      p->view.was_online = true;
      p->view.offline_since = NowText();
      Log("node %u stopped answering (%s); its tables are lost until it is back",
          p->view.node, why.ToString().c_str());
      changed = true;
    }
  }
  if (changed) on_change_();
}

void Peers::SyncFrom(Peer* p, uint64_t generation, uint64_t version) {
  const auto view = directory_->home_view(p->view.node);
  if (view.synced && view.generation == generation && view.version == version) return;
  // The whole list, page by page; if it changes meanwhile, the next
  // heartbeat starts over. Pushes from the home that arrive meanwhile win
  // over the list for the chunks they touch (Directory::Pull).
  const uint32_t home = p->view.node;
  directory_->BeginPull(home);
  struct Abandon {
    Directory* directory;
    uint32_t home;
    bool armed = true;
    ~Abandon() {
      if (armed) directory->EndPull(home);
    }
  } abandon{directory_, home};
  std::vector<ChunkMeta> chunks;
  wire::ReplicaSyncRequest req;
  uint64_t got_generation = 0, got_version = 0;
  for (bool first = true;; first = false) {
    auto reply = CallAndWait(p, rpc::Method::kReplicaSync, req.SerializeAsString(),
                             options_.call_timeout_ms);
    if (!reply.ok()) return;  // tried again at the next heartbeat
    auto page = ParseMessage<wire::ReplicaSyncReply>(*reply);
    if (!page.ok()) {
      Log("node %u: %s", p->view.node, page.status().ToString().c_str());
      return;
    }
    if (first) {
      got_generation = page->generation();
      got_version = page->version();
    } else if (page->generation() != got_generation || page->version() != got_version) {
      return;
    }
    if (page->unsettled()) return;
    for (const auto& c : page->chunks()) chunks.push_back(FromWire(c));
    if (!page->more() || page->chunks().empty()) break;
    req.set_after(chunks.back().id);
  }
  abandon.armed = false;
  Status st =
      directory_->Pull(home, std::move(chunks), {got_generation, got_version, true});
  if (!st.ok()) {
    Log("tables of node %u: %s", p->view.node, st.ToString().c_str());
  }
  on_change_();
}

void Peers::Heartbeat(Peer* p) {
  wire::HeartbeatRequest hb;
  hb.set_generation(self_.generation());
  hb.set_version(self_.version());
  hb.set_flags(self_.flags());
  const int timeout = std::max(500, options_.heartbeat_ms * 5);
  auto reply = CallAndWait(p, rpc::Method::kHeartbeat, hb.SerializeAsString(), timeout);
  if (!reply.ok()) {
    MarkFailure(p, reply.status());
    return;
  }
  auto r = ParseMessage<wire::HeartbeatReply>(*reply);
  if (!r.ok()) {
    MarkFailure(p, r.status());
    return;
  }
  MarkOnline(p, r->generation());
  SetFlags(p->view.node, r->flags());
  SyncFrom(p, r->generation(), r->version());
}

void Peers::Loop(Peer* p) {
  while (!stopping_) {
    if (EnsureLink(p)) {
      Heartbeat(p);
    } else {
      MarkFailure(p, Status::Unavailable("cannot connect to ", p->config->control));
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(options_.heartbeat_ms),
                 [this, p] { return stopping_.load() || !p->deferred.empty(); });
  }
}

}  // namespace quiver::control::daemon
