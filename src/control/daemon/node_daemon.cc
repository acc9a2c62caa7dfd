#include "quiver/control/node_daemon.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "control/object_tag.h"
#include "quiver/coherence/flush.h"
#include "quiver/columnar/ipc/reader.h"
#include "quiver/control/descriptor.h"
#include "quiver/control/node_client.h"
#include "quiver/memory/region.h"
#include "quiver/memory/region_pool.h"

namespace quiver::control {

using QStatus = ::quiver::Status;

namespace {

using Clock = std::chrono::steady_clock;
using util::Hex;

constexpr size_t kMaxNameBytes = 256;
constexpr size_t kMaxDescriptorBytes = 16u << 20;
constexpr int kPeerCallMs = 5000;

uint32_t g_log_node = 0;

void Log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void Log(const char* fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  gmtime_r(&ts.tv_sec, &t);
  std::fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ quiverd[%u] %s\n",
               t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
               ts.tv_nsec / 1000000, g_log_node, msg);
  std::fflush(stderr);
}

#define RPC_RETURN_NOT_OK(expr)                                 \
  do {                                                          \
    QStatus _st = (expr);                                       \
    if (!_st.ok()) return ::quiver::control::ToGrpcStatus(_st); \
  } while (false)

#define RPC_ASSIGN_OR_RETURN(lhs, rexpr)                                             \
  auto QUIVER_CONCAT(_res_, __LINE__) = (rexpr);                                     \
  if (!QUIVER_CONCAT(_res_, __LINE__).ok())                                          \
    return ::quiver::control::ToGrpcStatus(QUIVER_CONCAT(_res_, __LINE__).status()); \
  lhs = std::move(QUIVER_CONCAT(_res_, __LINE__)).ValueOrDie();

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

uint64_t RoundUp(uint64_t v, uint64_t g) { return (v + g - 1) / g * g; }

bool ProcessAlive(int32_t pid) {
  if (pid <= 0) return true;
  return kill(pid, 0) == 0 || errno != ESRCH;
}

std::string NowText() {
  time_t t = time(nullptr);
  tm tmv{};
  gmtime_r(&t, &tmv);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%H:%M:%SZ", &tmv);
  return buf;
}

}  // namespace

class NodeDaemon final : public rpc::Node::Service {
 public:
  explicit NodeDaemon(DaemonOptions options) : opt_(std::move(options)) {}
  QStatus Start();
  void Run();  // until Shutdown
  void Shutdown();

  // --- the service
  grpc::Status Ping(grpc::ServerContext*, const rpc::PingRequest*,
                    rpc::PingReply*) override;
  grpc::Status Malloc(grpc::ServerContext*, const rpc::MallocRequest*,
                      rpc::MallocReply*) override;
  grpc::Status Realloc(grpc::ServerContext*, const rpc::ReallocRequest*,
                       rpc::MallocReply*) override;
  grpc::Status Free(grpc::ServerContext*, const rpc::FreeRequest*, rpc::Empty*) override;
  grpc::Status Flush(grpc::ServerContext*, const rpc::FlushRequest*,
                     rpc::Empty*) override;
  grpc::Status Seal(grpc::ServerContext*, const rpc::SealRequest*, rpc::Empty*) override;
  grpc::Status SetState(grpc::ServerContext*, const rpc::SetStateRequest*,
                        rpc::Empty*) override;
  grpc::Status GetState(grpc::ServerContext*, const rpc::GetStateRequest*,
                        rpc::StateReply*) override;
  grpc::Status WaitAllOnline(grpc::ServerContext*, const rpc::WaitAllOnlineRequest*,
                             rpc::Empty*) override;
  grpc::Status SyncWait(grpc::ServerContext*, const rpc::SyncWaitRequest*,
                        rpc::Empty*) override;
  grpc::Status Publish(grpc::ServerContext*, const rpc::PublishRequest*,
                       rpc::Empty*) override;
  grpc::Status SendTableFull(grpc::ServerContext*, grpc::ServerReader<rpc::TablePiece>*,
                             rpc::SendTableFullReply*) override;
  grpc::Status Get(grpc::ServerContext*, const rpc::GetRequest*, rpc::GetReply*) override;
  grpc::Status Release(grpc::ServerContext*, const rpc::ReleaseRequest*,
                       rpc::Empty*) override;
  grpc::Status Pin(grpc::ServerContext*, const rpc::PinRequest*, rpc::Empty*) override;
  grpc::Status Unpublish(grpc::ServerContext*, const rpc::UnpublishRequest*,
                         rpc::Empty*) override;
  grpc::Status List(grpc::ServerContext*, const rpc::ListRequest*,
                    rpc::ListReply*) override;
  grpc::Status Status(grpc::ServerContext*, const rpc::StatusRequest*,
                      rpc::StatusReply*) override;

 private:
  struct Peer {
    const memory::NodeConfig* config = nullptr;
    std::unique_ptr<NodeClient> client;
    bool online = false;
    bool dead = false;  // was online, then stopped answering
    int failures = 0;
    uint64_t generation = 0;
    uint64_t flags = 0;
  };
  struct ChunkEntry {
    rpc::Chunk chunk;
    std::vector<BufferRange> ranges;
    std::vector<uint64_t> own_allocations;  // in this node's region, publish-referenced
    std::vector<uint64_t> daemon_allocations;  // made by this daemon (full copies)
    bool entered_here = false;                 // this daemon validated it and forwards it
  };
  struct TableEntry {
    std::vector<ChunkEntry> chunks;
    bool lost = false;
    std::string lost_reason;
  };
  struct ReaderPin {
    int32_t pid = 0;
    std::string name;
    std::map<uint32_t, std::vector<BufferRange>> by_owner;
  };

  QStatus Authorize(grpc::ServerContext* ctx, const rpc::Caller& caller) const;
  QStatus CheckRanges(const google::protobuf::RepeatedPtrField<rpc::Range>& r) const;
  memory::RegionAllocator* allocator() { return map_->local_region()->allocator(); }
  bool IsOwn(uint64_t address) const { return self_->Contains(address, 1); }
  QStatus TakeMallocToken(uint32_t node);
  // Distinct allocations in this node's region holding `ranges`.
  Result<std::vector<uint64_t>> OwnAllocations(const std::vector<BufferRange>& ranges,
                                               bool require_sealed);
  QStatus AdjustCount(const std::vector<uint64_t>& allocations, int shift, int delta);
  // Validates a descriptor's structure and that its ranges lie in regions;
  // returns them grouped by owner.
  Result<std::vector<BufferRange>> InspectChunk(const rpc::Chunk& chunk);
  QStatus AddChunk(const std::string& name, ChunkEntry entry, bool resend_ok);
  void RemoveTableLocked(const std::string& name, TableEntry* table);
  QStatus PinLocal(uint32_t reader, uint64_t pin, const std::vector<BufferRange>& ranges);
  void UnpinLocal(uint32_t reader, uint64_t pin);
  void ReleaseReaderPin(uint64_t pin_id, ReaderPin pin);
  void Forward(const std::function<void(Peer&)>& fn);
  void Heartbeat();
  void PeerOnline(Peer& peer, const rpc::PingReply& reply);
  void PeerOffline(Peer& peer);
  rpc::NodeStatus OwnStatus();
  void FillTableInfo(const std::string& name, const TableEntry& t, rpc::TableInfo* out);

  DaemonOptions opt_;
  memory::ClusterConfig config_;
  const memory::NodeConfig* self_ = nullptr;
  std::unique_ptr<memory::ClusterMap> map_;
  std::unique_ptr<grpc::Server> server_;
  std::thread heartbeat_;
  std::atomic<bool> stopping_{false};
  uint64_t max_malloc_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint32_t, Peer> peers_;
  uint64_t own_flags_ = 0;
  std::map<std::string, TableEntry> tables_;
  uint64_t next_pin_ = 1;
  std::map<uint64_t, ReaderPin> reader_pins_;
  std::map<std::pair<uint32_t, uint64_t>, std::vector<uint64_t>> owner_pins_;
  std::mutex pin_mu_;  // owner_pins_
  std::mutex rate_mu_;
  std::map<uint32_t, std::pair<double, Clock::time_point>> buckets_;
};

// ---------------------------------------------------------------------------
// Start-up and shutdown

QStatus NodeDaemon::Start() {
  g_log_node = opt_.node;
  QUIVER_ASSIGN_OR_RAISE(config_, memory::LoadClusterConfig(opt_.config_path));
  self_ = config_.FindNode(opt_.node);
  if (self_ == nullptr) {
    return QStatus::Invalid("node ", opt_.node, " is not in ", opt_.config_path);
  }
  memory::ClusterMap::Options mo;
  mo.create_own_region = true;
  mo.keep_allocations_on_takeover = true;
  mo.remove_own_region_on_close = opt_.remove_region_on_exit;
  // Peers start in any order: wait for their regions (own region first).
  mo.wait_ready_ms = 120000;
  QUIVER_ASSIGN_OR_RAISE(map_, memory::ClusterMap::Open(config_, opt_.node, mo));
  auto* region = map_->local_region();
  Log("region %s at %s, %llu MiB, backing %s, generation %llu%s", self_->path.c_str(),
      Hex(self_->base).c_str(), static_cast<unsigned long long>(self_->size >> 20),
      memory::BackingKindName(self_->backing),
      static_cast<unsigned long long>(region->header().generation),
      region->took_over() ? " (taken over, allocations kept)" : "");
  max_malloc_ = opt_.max_malloc_bytes ? opt_.max_malloc_bytes : region->data_size();
  for (const auto& n : config_.nodes) {
    if (n.id == opt_.node) continue;
    Peer p;
    p.config = &n;
    p.client = NodeClient::Make(n.control, config_.token, n.id, opt_.node, 0);
    peers_.emplace(n.id, std::move(p));
  }

  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(64 << 20);
  int tcp_port = 0;
  builder.AddListeningPort(self_->control, grpc::InsecureServerCredentials(), &tcp_port);
  if (!self_->socket.empty()) {
    unlink(self_->socket.c_str());
    builder.AddListeningPort("unix:" + self_->socket, grpc::InsecureServerCredentials());
  }
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || tcp_port == 0) {
    return QStatus::IOError("cannot listen on ", self_->control,
                            self_->socket.empty() ? "" : " and unix:" + self_->socket,
                            " (address in use?)");
  }
  if (!self_->socket.empty()) chmod(self_->socket.c_str(), 0600);
  Log("serving peers on %s, local clients on %s", self_->control.c_str(),
      self_->socket.empty() ? "(no socket)" : self_->socket.c_str());
  heartbeat_ = std::thread([this] { Heartbeat(); });
  return QStatus::OK();
}

void NodeDaemon::Shutdown() {
  if (stopping_.exchange(true)) return;
  Log("shutting down");
  {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  if (server_)
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (heartbeat_.joinable()) heartbeat_.join();
  if (map_) {
    QStatus st = map_->Close();
    if (!st.ok()) Log("closing regions: %s", st.ToString().c_str());
  }
  if (!self_->socket.empty()) unlink(self_->socket.c_str());
  Log("stopped");
}

// ---------------------------------------------------------------------------
// Checks

QStatus NodeDaemon::Authorize(grpc::ServerContext* ctx, const rpc::Caller& caller) const {
  const auto& md = ctx->client_metadata();
  auto it = md.find(kTokenMetadataKey);
  if (it == md.end()) {
    return QStatus::Unauthenticated("missing cluster token (metadata '",
                                    kTokenMetadataKey, "')");
  }
  if (!ConstantTimeEquals(std::string_view(it->second.data(), it->second.size()),
                          config_.token)) {
    return QStatus::Unauthenticated("wrong cluster token");
  }
  if (config_.FindNode(caller.node()) == nullptr) {
    return QStatus::Invalid("caller node ", caller.node(), " is not in the cluster");
  }
  return QStatus::OK();
}

#define AUTHORIZE(ctx, req) RPC_RETURN_NOT_OK(Authorize((ctx), (req)->caller()))

QStatus NodeDaemon::CheckRanges(
    const google::protobuf::RepeatedPtrField<rpc::Range>& ranges) const {
  if (ranges.size() > 1000000)
    return QStatus::Invalid("too many ranges: ", ranges.size());
  for (const auto& r : ranges) {
    if (r.length() == 0) continue;
    if (config_.NodeOfAddress(r.address(), r.length()) == nullptr) {
      return QStatus::Invalid("range [", Hex(r.address()), ", +", r.length(),
                              ") is not inside one region of the cluster");
    }
  }
  return QStatus::OK();
}

QStatus NodeDaemon::TakeMallocToken(uint32_t node) {
  std::lock_guard<std::mutex> lock(rate_mu_);
  const double rate = static_cast<double>(opt_.malloc_rate);
  auto now = Clock::now();
  auto [it, inserted] = buckets_.try_emplace(node, rate, now);
  auto& [tokens, last] = it->second;
  tokens =
      std::min(rate, tokens + rate * std::chrono::duration<double>(now - last).count());
  last = now;
  if (tokens < 1.0) {
    return QStatus::OutOfMemory("node ", node, " exceeds the allocation rate limit of ",
                                opt_.malloc_rate, " per second");
  }
  tokens -= 1.0;
  return QStatus::OK();
}

Result<std::vector<uint64_t>> NodeDaemon::OwnAllocations(
    const std::vector<BufferRange>& ranges, bool require_sealed) {
  std::set<uint64_t> allocs;
  for (const auto& r : ranges) {
    if (r.length == 0 || !IsOwn(r.address)) continue;
    QUIVER_ASSIGN_OR_RAISE(
        auto info, allocator()->Lookup(reinterpret_cast<const uint8_t*>(r.address),
                                       r.length, /*containing=*/true));
    if (require_sealed && !tag::Sealed(info.tag)) {
      return QStatus::FailedPrecondition("buffer [", Hex(r.address), ", +", r.length,
                                         ") lies in allocation ", Hex(info.address),
                                         " which is not sealed");
    }
    allocs.insert(info.address);
  }
  return std::vector<uint64_t>(allocs.begin(), allocs.end());
}

QStatus NodeDaemon::AdjustCount(const std::vector<uint64_t>& allocations, int shift,
                                int delta) {
  for (size_t i = 0; i < allocations.size(); ++i) {
    auto res = allocator()->UpdateTag(
        reinterpret_cast<const uint8_t*>(allocations[i]), 0, false,
        [&](const memory::AllocationInfo& info, uint64_t* t) -> QStatus {
          uint64_t n = (*t >> shift) & tag::kCountMax;
          if (delta > 0 && n == tag::kCountMax) {
            return QStatus::CapacityError("allocation ", Hex(info.address),
                                          " has too many references");
          }
          if (delta < 0 && n == 0) return QStatus::OK();
          n = delta > 0 ? n + 1 : n - 1;
          *t = (*t & ~(tag::kCountMax << shift)) | (n << shift);
          return QStatus::OK();
        });
    if (!res.ok()) {
      // Undo what was done (increments only; decrements never fail halfway
      // in a way worth undoing).
      if (delta > 0) {
        std::vector<uint64_t> done(allocations.begin(), allocations.begin() + i);
        (void)AdjustCount(done, shift, -1);
      }
      return res.status();
    }
  }
  return QStatus::OK();
}

Result<std::vector<BufferRange>> NodeDaemon::InspectChunk(const rpc::Chunk& chunk) {
  if (chunk.batch_descriptor().size() > kMaxDescriptorBytes) {
    return QStatus::Invalid("descriptor of ", chunk.batch_descriptor().size(),
                            " bytes exceeds the limit of ", kMaxDescriptorBytes);
  }
  auto in_region = [this](uint64_t address, uint64_t length) -> QStatus {
    if (config_.NodeOfAddress(address, length) == nullptr) {
      return QStatus::Invalid("buffer [", Hex(address), ", +", length,
                              ") is not inside one mapped region");
    }
    return QStatus::OK();
  };
  QUIVER_ASSIGN_OR_RAISE(DescriptorInfo info,
                         InspectDescriptor(chunk.batch_descriptor(), in_region));
  if (chunk.num_rows() != static_cast<uint64_t>(info.num_rows)) {
    return QStatus::Invalid("chunk says ", chunk.num_rows(),
                            " rows but its descriptor has ", info.num_rows);
  }
  return std::move(info.ranges);
}

QStatus NodeDaemon::AddChunk(const std::string& name, ChunkEntry entry, bool resend_ok) {
  QUIVER_ASSIGN_OR_RAISE(entry.own_allocations, OwnAllocations(entry.ranges, true));
  std::lock_guard<std::mutex> lock(mu_);
  TableEntry& t = tables_[name];
  for (const auto& c : t.chunks) {
    if (c.chunk.publisher() == entry.chunk.publisher() &&
        c.chunk.first_row() == entry.chunk.first_row()) {
      if (resend_ok && c.chunk.batch_descriptor() == entry.chunk.batch_descriptor()) {
        return QStatus::OK();  // the same chunk again (a resent forward)
      }
      return QStatus::AlreadyExists("table '", name, "' already has a chunk of node ",
                                    c.chunk.publisher(), " at row ", c.chunk.first_row());
    }
  }
  QUIVER_RETURN_NOT_OK(AdjustCount(entry.own_allocations, tag::kPublishShift, +1));
  for (uint32_t owner : entry.chunk.owners()) {
    auto it = peers_.find(owner);
    if (it != peers_.end() && it->second.dead && !t.lost) {
      // Registered while its owner is down (a late forward): lost from the start.
      t.lost = true;
      t.lost_reason = "node " + std::to_string(owner) + " holding its data is offline";
    }
  }
  t.chunks.push_back(std::move(entry));
  cv_.notify_all();
  return QStatus::OK();
}

void NodeDaemon::RemoveTableLocked(const std::string& name, TableEntry* t) {
  for (auto& c : t->chunks) {
    (void)AdjustCount(c.own_allocations, tag::kPublishShift, -1);
    for (uint64_t a : c.daemon_allocations) {
      QStatus st = allocator()->FreeIf(reinterpret_cast<uint8_t*>(a),
                                       [&](const memory::AllocationInfo& info) {
                                         return tag::CheckFree(info, opt_.node);
                                       });
      if (!st.ok())
        Log("table '%s': keeping %s: %s", name.c_str(), Hex(a).c_str(),
            st.ToString().c_str());
    }
  }
}

// ---------------------------------------------------------------------------
// Pins

QStatus NodeDaemon::PinLocal(uint32_t reader, uint64_t pin,
                             const std::vector<BufferRange>& ranges) {
  QUIVER_ASSIGN_OR_RAISE(auto allocs, OwnAllocations(ranges, true));
  QUIVER_RETURN_NOT_OK(AdjustCount(allocs, tag::kPinShift, +1));
  std::lock_guard<std::mutex> lock(pin_mu_);
  auto& v = owner_pins_[{reader, pin}];
  v.insert(v.end(), allocs.begin(), allocs.end());
  return QStatus::OK();
}

void NodeDaemon::UnpinLocal(uint32_t reader, uint64_t pin) {
  std::vector<uint64_t> allocs;
  {
    std::lock_guard<std::mutex> lock(pin_mu_);
    auto it = owner_pins_.find({reader, pin});
    if (it == owner_pins_.end()) return;
    allocs = std::move(it->second);
    owner_pins_.erase(it);
  }
  (void)AdjustCount(allocs, tag::kPinShift, -1);
}

void NodeDaemon::ReleaseReaderPin(uint64_t pin_id, ReaderPin pin) {
  for (auto& [owner, ranges] : pin.by_owner) {
    if (owner == opt_.node) {
      UnpinLocal(opt_.node, pin_id);
      continue;
    }
    NodeClient* client = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = peers_.find(owner);
      if (it == peers_.end() || !it->second.online) continue;  // its pins died with it
      client = it->second.client.get();
    }
    rpc::PinRequest req;
    req.set_pin(pin_id);
    req.set_release(true);
    rpc::Empty rep;
    QStatus st =
        client->Call(&rpc::Node::Stub::Pin, &req, &rep, kPeerCallMs, "Release pin");
    if (!st.ok())
      Log("releasing pin %llu: %s", static_cast<unsigned long long>(pin_id),
          st.ToString().c_str());
  }
}

// ---------------------------------------------------------------------------
// Peers

void NodeDaemon::Forward(const std::function<void(Peer&)>& fn) {
  std::vector<Peer*> online;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, p] : peers_) {
      if (p.online) online.push_back(&p);
    }
  }
  for (Peer* p : online) fn(*p);
}

void NodeDaemon::PeerOnline(Peer& peer, const rpc::PingReply& reply) {
  // mu_ held by the caller.
  const bool restarted = peer.generation != 0 && peer.generation != reply.generation();
  peer.online = true;
  peer.dead = false;
  peer.failures = 0;
  peer.generation = reply.generation();
  Log("node %u is online (generation %llu)%s", peer.config->id,
      static_cast<unsigned long long>(reply.generation()),
      restarted ? ", restarted" : "");
}

void NodeDaemon::PeerOffline(Peer& peer) {
  // mu_ held by the caller.
  peer.online = false;
  peer.dead = true;
  const uint32_t dead = peer.config->id;
  Log("node %u stopped answering; marking its tables lost", dead);
  const std::string reason = "node " + std::to_string(dead) + " (" +
                             peer.config->control +
                             ") holding its data stopped answering at " + NowText();
  for (auto& [name, t] : tables_) {
    for (const auto& c : t.chunks) {
      const auto& o = c.chunk.owners();
      if (std::find(o.begin(), o.end(), dead) != o.end() && !t.lost) {
        t.lost = true;
        t.lost_reason = reason;
        Log("table '%s' is lost", name.c_str());
      }
    }
  }
  // Pins the dead node's readers held here go with them.
  std::vector<uint64_t> pins;
  {
    std::lock_guard<std::mutex> lock(pin_mu_);
    for (const auto& [key, allocs] : owner_pins_) {
      if (key.first == dead) pins.push_back(key.second);
    }
  }
  for (uint64_t p : pins) UnpinLocal(dead, p);
  cv_.notify_all();
}

void NodeDaemon::Heartbeat() {
  auto next_reap = Clock::now();
  while (!stopping_) {
    std::vector<std::pair<uint32_t, NodeClient*>> targets;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [id, p] : peers_) targets.emplace_back(id, p.client.get());
    }
    for (auto& [id, client] : targets) {
      if (stopping_) break;
      rpc::PingRequest req;
      rpc::PingReply rep;
      QStatus st = client->Call(&rpc::Node::Stub::Ping, &req, &rep,
                                std::max(500, opt_.heartbeat_ms * 5), "Ping");
      std::vector<std::pair<std::string, rpc::Chunk>> to_send;
      {
        std::lock_guard<std::mutex> lock(mu_);
        Peer& p = peers_[id];
        if (st.ok()) {
          if (!p.online) {
            PeerOnline(p, rep);
            for (const auto& [name, t] : tables_) {
              for (const auto& c : t.chunks) {
                if (c.entered_here) to_send.emplace_back(name, c.chunk);
              }
            }
          }
          p.flags = rep.flags();
          cv_.notify_all();
        } else if (++p.failures >= opt_.offline_after_failures && p.online) {
          PeerOffline(p);
        }
      }
      // A peer that (re)joined learns the tables published through this node.
      for (auto& [name, chunk] : to_send) {
        rpc::PublishRequest req2;
        req2.set_name(name);
        *req2.mutable_chunk() = chunk;
        req2.set_forwarded(true);
        rpc::Empty e;
        QStatus fs = client->Call(&rpc::Node::Stub::Publish, &req2, &e, kPeerCallMs,
                                  "Publish (resend)");
        if (!fs.ok() && fs.code() != StatusCode::kAlreadyExists) {
          Log("resending '%s' to node %u: %s", name.c_str(), id, fs.ToString().c_str());
        }
      }
    }
    // Readers that died release their pins.
    if (Clock::now() >= next_reap) {
      next_reap = Clock::now() + std::chrono::milliseconds(500);
      std::vector<std::pair<uint64_t, ReaderPin>> dead;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto it = reader_pins_.begin(); it != reader_pins_.end();) {
          if (!ProcessAlive(it->second.pid)) {
            Log("reader pid %d died; releasing its pin on '%s'", it->second.pid,
                it->second.name.c_str());
            dead.emplace_back(it->first, std::move(it->second));
            it = reader_pins_.erase(it);
          } else {
            ++it;
          }
        }
      }
      for (auto& [id, pin] : dead) ReleaseReaderPin(id, std::move(pin));
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(opt_.heartbeat_ms),
                 [this] { return stopping_.load(); });
  }
}

// ---------------------------------------------------------------------------
// Service: liveness, state, barriers

grpc::Status NodeDaemon::Ping(grpc::ServerContext* ctx, const rpc::PingRequest* req,
                              rpc::PingReply* rep) {
  AUTHORIZE(ctx, req);
  rep->set_node(opt_.node);
  rep->set_generation(map_->local_region()->header().generation);
  rep->set_payload(req->payload());
  std::lock_guard<std::mutex> lock(mu_);
  rep->set_flags(own_flags_);
  return grpc::Status::OK;
}

grpc::Status NodeDaemon::SetState(grpc::ServerContext* ctx,
                                  const rpc::SetStateRequest* req, rpc::Empty*) {
  AUTHORIZE(ctx, req);
  if (req->forwarded()) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = peers_.find(req->caller().node());
    if (it == peers_.end())
      return ToGrpcStatus(QStatus::Invalid("forwarded state of self"));
    it->second.flags = req->flags();
    cv_.notify_all();
    return grpc::Status::OK;
  }
  uint64_t flags;
  {
    std::lock_guard<std::mutex> lock(mu_);
    own_flags_ = (own_flags_ & ~req->mask()) | (req->flags() & req->mask());
    flags = own_flags_;
    cv_.notify_all();
  }
  Forward([&](Peer& p) {
    rpc::SetStateRequest f;
    f.set_flags(flags);
    f.set_mask(~0ULL);
    f.set_forwarded(true);
    rpc::Empty e;
    QStatus st =
        p.client->Call(&rpc::Node::Stub::SetState, &f, &e, kPeerCallMs, "SetState");
    if (!st.ok()) Log("state to node %u: %s", p.config->id, st.ToString().c_str());
  });
  return grpc::Status::OK;
}

grpc::Status NodeDaemon::GetState(grpc::ServerContext* ctx,
                                  const rpc::GetStateRequest* req, rpc::StateReply* rep) {
  AUTHORIZE(ctx, req);
  std::lock_guard<std::mutex> lock(mu_);
  rep->set_node(opt_.node);
  rep->set_flags(own_flags_);
  return grpc::Status::OK;
}

grpc::Status NodeDaemon::WaitAllOnline(grpc::ServerContext* ctx,
                                       const rpc::WaitAllOnlineRequest* req,
                                       rpc::Empty*) {
  AUTHORIZE(ctx, req);
  std::unique_lock<std::mutex> lock(mu_);
  auto all = [this] {
    for (auto& [id, p] : peers_) {
      if (!p.online) return false;
    }
    return true;
  };
  auto deadline = Clock::now() + std::chrono::milliseconds(req->timeout_ms());
  if (!cv_.wait_until(lock, deadline,
                      [&] { return all() || stopping_ || ctx->IsCancelled(); }) ||
      !all()) {
    std::string missing;
    for (auto& [id, p] : peers_) {
      if (!p.online) missing += " " + std::to_string(id);
    }
    return ToGrpcStatus(QStatus::DeadlineExceeded("nodes not online after ",
                                                  req->timeout_ms(), " ms:", missing));
  }
  return grpc::Status::OK;
}

grpc::Status NodeDaemon::SyncWait(grpc::ServerContext* ctx,
                                  const rpc::SyncWaitRequest* req, rpc::Empty*) {
  AUTHORIZE(ctx, req);
  std::vector<uint32_t> nodes(req->nodes().begin(), req->nodes().end());
  if (nodes.empty()) {
    for (const auto& n : config_.nodes) nodes.push_back(n.id);
  }
  for (uint32_t n : nodes) {
    if (config_.FindNode(n) == nullptr) {
      return ToGrpcStatus(
          QStatus::Invalid("SyncWait on node ", n, " which is not in the cluster"));
    }
  }
  const uint64_t want = req->flags() & req->mask();
  auto pending = [&] {
    std::string missing;
    for (uint32_t n : nodes) {
      uint64_t f = n == opt_.node ? own_flags_ : peers_[n].flags;
      if ((f & req->mask()) != want) missing += " " + std::to_string(n);
    }
    return missing;
  };
  std::unique_lock<std::mutex> lock(mu_);
  auto deadline = Clock::now() + std::chrono::milliseconds(req->timeout_ms());
  cv_.wait_until(lock, deadline,
                 [&] { return pending().empty() || stopping_ || ctx->IsCancelled(); });
  std::string missing = pending();
  if (!missing.empty()) {
    return ToGrpcStatus(QStatus::DeadlineExceeded(
        "SyncWait(flags ", Hex(req->flags()), ", mask ", Hex(req->mask()),
        "): nodes not there after ", req->timeout_ms(), " ms:", missing));
  }
  return grpc::Status::OK;
}

// ---------------------------------------------------------------------------
// Service: memory

grpc::Status NodeDaemon::Malloc(grpc::ServerContext* ctx, const rpc::MallocRequest* req,
                                rpc::MallocReply* rep) {
  AUTHORIZE(ctx, req);
  if (req->size() > max_malloc_) {
    return ToGrpcStatus(QStatus::OutOfMemory("Malloc of ", req->size(),
                                             " bytes exceeds node ", opt_.node,
                                             "'s limit of ", max_malloc_, " bytes"));
  }
  const uint64_t a = req->alignment();
  if (a != 0 && (a & (a - 1)) != 0) {
    return ToGrpcStatus(QStatus::Invalid("alignment ", a, " is not a power of two"));
  }
  RPC_RETURN_NOT_OK(TakeMallocToken(req->caller().node()));
  RPC_ASSIGN_OR_RETURN(uint8_t * p, allocator()->Allocate(req->size(), a));
  RPC_RETURN_NOT_OK(allocator()->SetTag(p, tag::Make(req->caller().node())));
  rep->set_address(reinterpret_cast<uint64_t>(p));
  rep->set_size(RoundUp(std::max<uint64_t>(req->size(), 1), config_.granule));
  return grpc::Status::OK;
}

grpc::Status NodeDaemon::Realloc(grpc::ServerContext* ctx, const rpc::ReallocRequest* req,
                                 rpc::MallocReply* rep) {
  AUTHORIZE(ctx, req);
  if (!IsOwn(req->address())) {
    return ToGrpcStatus(QStatus::Invalid("Realloc of ", Hex(req->address()),
                                         " which is not in node ", opt_.node,
                                         "'s region"));
  }
  if (req->new_size() > max_malloc_) {
    return ToGrpcStatus(QStatus::OutOfMemory(
        "Realloc to ", req->new_size(), " bytes exceeds the limit of ", max_malloc_));
  }
  RPC_RETURN_NOT_OK(TakeMallocToken(req->caller().node()));
  auto* p = reinterpret_cast<uint8_t*>(req->address());
  RPC_ASSIGN_OR_RETURN(auto info, allocator()->Lookup(p));
  if (tag::HasNode(info.tag) && tag::Node(info.tag) != req->caller().node()) {
    return ToGrpcStatus(QStatus::PermissionDenied(
        "allocation ", Hex(info.address), " was made by node ", tag::Node(info.tag)));
  }
  if (tag::Sealed(info.tag)) {
    return ToGrpcStatus(
        QStatus::FailedPrecondition("allocation ", Hex(info.address), " is sealed"));
  }
  RPC_ASSIGN_OR_RETURN(uint8_t * q,
                       allocator()->Reallocate(p, req->new_size(), req->alignment()));
  if (q != p) RPC_RETURN_NOT_OK(allocator()->SetTag(q, info.tag));
  rep->set_address(reinterpret_cast<uint64_t>(q));
  rep->set_size(RoundUp(std::max<uint64_t>(req->new_size(), 1), config_.granule));
  return grpc::Status::OK;
}

grpc::Status NodeDaemon::Free(grpc::ServerContext* ctx, const rpc::FreeRequest* req,
                              rpc::Empty*) {
  AUTHORIZE(ctx, req);
  if (!IsOwn(req->address())) {
    return ToGrpcStatus(QStatus::Invalid("Free of ", Hex(req->address()),
                                         " which is not in node ", opt_.node,
                                         "'s region"));
  }
  const uint32_t caller = req->caller().node();
  RPC_RETURN_NOT_OK(allocator()->FreeIf(
      reinterpret_cast<uint8_t*>(req->address()),
      [&](const memory::AllocationInfo& info) { return tag::CheckFree(info, caller); }));
  return grpc::Status::OK;
}

grpc::Status NodeDaemon::Flush(grpc::ServerContext* ctx, const rpc::FlushRequest* req,
                               rpc::Empty*) {
  AUTHORIZE(ctx, req);
  RPC_RETURN_NOT_OK(CheckRanges(req->ranges()));
  for (const auto& r : req->ranges()) {
    if (r.length() == 0) continue;
    RPC_RETURN_NOT_OK(
        coherence::FlushRange(reinterpret_cast<const void*>(r.address()), r.length()));
  }
  return grpc::Status::OK;
}

grpc::Status NodeDaemon::Seal(grpc::ServerContext* ctx, const rpc::SealRequest* req,
                              rpc::Empty*) {
  AUTHORIZE(ctx, req);
  RPC_RETURN_NOT_OK(CheckRanges(req->ranges()));
  const uint32_t caller = req->caller().node();
  for (const auto& r : req->ranges()) {
    if (r.length() == 0) continue;
    if (!self_->Contains(r.address(), r.length())) {
      return ToGrpcStatus(QStatus::Invalid("range [", Hex(r.address()), ", +", r.length(),
                                           ") is not in node ", opt_.node,
                                           "'s region; seal it at its owner"));
    }
    auto res = allocator()->UpdateTag(
        reinterpret_cast<const uint8_t*>(r.address()), r.length(), true,
        [&](const memory::AllocationInfo& info, uint64_t* t) -> QStatus {
          if (req->check_only()) {
            if (!tag::Sealed(*t)) {
              return QStatus::FailedPrecondition(
                  "buffer [", Hex(r.address()), ", +", r.length(),
                  ") lies in allocation ", Hex(info.address), " which is not sealed");
            }
            return QStatus::OK();
          }
          if (tag::HasNode(*t) && tag::Node(*t) != caller) {
            return QStatus::PermissionDenied("allocation ", Hex(info.address),
                                             " was made by node ", tag::Node(*t),
                                             "; only it may seal it");
          }
          *t |= tag::kSealed;
          return QStatus::OK();
        });
    RPC_RETURN_NOT_OK(res.status());
  }
  return grpc::Status::OK;
}

// ---------------------------------------------------------------------------
// Service: the catalogue

namespace {
QStatus CheckName(const std::string& name) {
  if (name.empty()) return QStatus::Invalid("table name is empty");
  if (name.size() > kMaxNameBytes) {
    return QStatus::Invalid("table name of ", name.size(), " bytes exceeds ",
                            kMaxNameBytes);
  }
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7F)
      return QStatus::Invalid("table name contains control bytes");
  }
  return QStatus::OK();
}
}  // namespace

grpc::Status NodeDaemon::Publish(grpc::ServerContext* ctx, const rpc::PublishRequest* req,
                                 rpc::Empty*) {
  AUTHORIZE(ctx, req);
  RPC_RETURN_NOT_OK(CheckName(req->name()));
  ChunkEntry entry;
  entry.chunk = req->chunk();
  RPC_ASSIGN_OR_RETURN(entry.ranges, InspectChunk(entry.chunk));
  if (!req->forwarded()) {
    // The publisher's daemon: every buffer must lie in one live sealed
    // allocation at its owner.
    RPC_ASSIGN_OR_RETURN(RangesByNode by_owner, GroupByOwner(config_, entry.ranges));
    entry.chunk.clear_owners();
    for (auto& [owner, ranges] : by_owner) {
      entry.chunk.add_owners(owner);
      if (owner == opt_.node) continue;  // AddChunk checks its own region
      // Asked even when the heartbeats have not (yet) seen the owner
      // online, e.g. just after it restarted: its answer decides.
      NodeClient* client = nullptr;
      {
        std::lock_guard<std::mutex> lock(mu_);
        client = peers_[owner].client.get();
      }
      rpc::SealRequest check;
      check.set_check_only(true);
      AddRanges(ranges, check.mutable_ranges());
      rpc::Empty e;
      RPC_RETURN_NOT_OK(client->Call(&rpc::Node::Stub::Seal, &check, &e, kPeerCallMs,
                                     "checking buffers are sealed"));
    }
    entry.chunk.set_publisher(req->caller().node());
    entry.chunk.set_publisher_pid(req->caller().pid());
    entry.entered_here = !req->local_only();
  }
  rpc::Chunk chunk = entry.chunk;
  RPC_RETURN_NOT_OK(AddChunk(req->name(), std::move(entry), req->forwarded()));
  if (req->forwarded() || req->local_only()) return grpc::Status::OK;
  QStatus failure;
  Forward([&](Peer& p) {
    rpc::PublishRequest f;
    f.set_name(req->name());
    *f.mutable_chunk() = chunk;
    f.set_forwarded(true);
    rpc::Empty e;
    QStatus st =
        p.client->Call(&rpc::Node::Stub::Publish, &f, &e, kPeerCallMs, "Publish");
    if (!st.ok()) {
      Log("publishing '%s' to node %u: %s", req->name().c_str(), p.config->id,
          st.ToString().c_str());
      if (failure.ok() && st.code() != StatusCode::kUnavailable) failure = st;
    }
  });
  return ToGrpcStatus(failure);
}

grpc::Status NodeDaemon::SendTableFull(grpc::ServerContext* ctx,
                                       grpc::ServerReader<rpc::TablePiece>* reader,
                                       rpc::SendTableFullReply* rep) {
  rpc::TablePiece piece;
  if (!reader->Read(&piece)) {
    return ToGrpcStatus(QStatus::Invalid("SendTableFull without a first piece"));
  }
  RPC_RETURN_NOT_OK(Authorize(ctx, piece.caller()));
  RPC_RETURN_NOT_OK(CheckName(piece.name()));
  const uint64_t total = piece.total_bytes();
  if (total == 0 || total > max_malloc_) {
    return ToGrpcStatus(QStatus::Invalid("SendTableFull of ", total,
                                         " bytes: must be in (0, ", max_malloc_, "]"));
  }
  const std::string name = piece.name();
  const uint64_t first_row = piece.first_row();
  const uint32_t sender = piece.caller().node();
  RPC_ASSIGN_OR_RETURN(uint8_t * dst, allocator()->Allocate(total, 64));
  RPC_RETURN_NOT_OK(allocator()->SetTag(dst, tag::Make(opt_.node)));
  auto free_dst = [&] { (void)allocator()->Free(dst); };
  uint64_t received = 0;
  do {
    const std::string& d = piece.data();
    if (d.size() > total - received) {
      free_dst();
      return ToGrpcStatus(QStatus::Invalid("SendTableFull sent more than the announced ",
                                           total, " bytes"));
    }
    std::memcpy(dst + received, d.data(), d.size());
    received += d.size();
  } while (reader->Read(&piece));
  if (received != total) {
    free_dst();
    return ToGrpcStatus(QStatus::Invalid("SendTableFull stream ended after ", received,
                                         " of ", total, " bytes"));
  }
  // Zero-copy decode: the arrays point into the copy in this node's region.
  auto table = ipc::ReadTableFromBuffer(Buffer::Wrap(dst, static_cast<int64_t>(total)));
  if (!table.ok()) {
    free_dst();
    return ToGrpcStatus(
        table.status().WithContext("SendTableFull: decoding the IPC stream"));
  }
  // Buffers the descriptor encoder must re-base land in this region too.
  memory::RegionMemoryPool scratch(allocator(), opt_.node);
  std::vector<uint64_t> scratch_allocs;
  scratch.set_on_alloc([&](uint8_t* p, uint64_t) {
    scratch_allocs.push_back(reinterpret_cast<uint64_t>(p));
    return allocator()->SetTag(p, tag::Make(opt_.node) | tag::kSealed);
  });
  RPC_RETURN_NOT_OK(allocator()->SetTag(dst, tag::Make(opt_.node) | tag::kSealed));
  uint64_t row = first_row;
  std::vector<ChunkEntry> entries;
  auto batches = (*table)->ToRecordBatches();
  if (!batches.ok()) {
    free_dst();
    return ToGrpcStatus(batches.status());
  }
  for (const auto& batch : *batches) {
    ChunkEntry e;
    auto desc = EncodeDescriptor(*batch, &scratch, &e.ranges);
    if (!desc.ok()) {
      free_dst();
      return ToGrpcStatus(desc.status());
    }
    e.chunk.set_publisher(sender);
    e.chunk.set_publisher_pid(piece.caller().pid());
    e.chunk.set_first_row(row);
    e.chunk.set_num_rows(static_cast<uint64_t>(batch->num_rows()));
    e.chunk.set_batch_descriptor(std::move(*desc));
    e.chunk.add_owners(opt_.node);
    row += static_cast<uint64_t>(batch->num_rows());
    entries.push_back(std::move(e));
  }
  if (entries.empty()) {
    free_dst();
    return ToGrpcStatus(
        QStatus::Invalid("SendTableFull: the stream holds no record batch"));
  }
  entries[0].daemon_allocations.push_back(reinterpret_cast<uint64_t>(dst));
  for (uint64_t a : scratch_allocs) entries[0].daemon_allocations.push_back(a);
  for (auto& e : entries) RPC_RETURN_NOT_OK(AddChunk(name, std::move(e), false));
  rep->set_bytes_received(received);
  rep->set_num_rows(row - first_row);
  return grpc::Status::OK;
}

grpc::Status NodeDaemon::Get(grpc::ServerContext* ctx, const rpc::GetRequest* req,
                             rpc::GetReply* rep) {
  AUTHORIZE(ctx, req);
  RPC_RETURN_NOT_OK(CheckName(req->name()));
  const uint32_t min_chunks = std::max<uint32_t>(1, req->min_chunks());
  std::vector<ChunkEntry> chunks;
  uint64_t pin_id;
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto ready = [&] {
      auto it = tables_.find(req->name());
      return it != tables_.end() &&
             (it->second.chunks.size() >= min_chunks || it->second.lost);
    };
    cv_.wait_until(lock, Clock::now() + std::chrono::milliseconds(req->wait_ms()),
                   [&] { return ready() || stopping_ || ctx->IsCancelled(); });
    auto it = tables_.find(req->name());
    if (it == tables_.end()) {
      return ToGrpcStatus(QStatus::NotFound(
          "no table '", req->name(), "' is published", req->wait_ms() ? " (waited " : "",
          req->wait_ms() ? std::to_string(req->wait_ms()) + " ms)" : ""));
    }
    if (it->second.lost) {
      return ToGrpcStatus(QStatus::Unavailable("table '", req->name(),
                                               "' is lost: ", it->second.lost_reason));
    }
    if (it->second.chunks.size() < min_chunks) {
      return ToGrpcStatus(QStatus::DeadlineExceeded(
          "table '", req->name(), "' has ", it->second.chunks.size(), " of ", min_chunks,
          " chunks after ", req->wait_ms(), " ms"));
    }
    chunks = it->second.chunks;
    pin_id = next_pin_++;
  }
  ReaderPin pin;
  pin.pid = req->caller().node() == opt_.node ? req->caller().pid() : 0;
  pin.name = req->name();
  std::vector<BufferRange> all;
  for (const auto& c : chunks) all.insert(all.end(), c.ranges.begin(), c.ranges.end());
  RPC_ASSIGN_OR_RETURN(pin.by_owner, GroupByOwner(config_, all));
  // Pin at every owner; on a failure, release what was pinned so far.
  ReaderPin done = pin;
  done.by_owner.clear();
  for (auto& [owner, ranges] : pin.by_owner) {
    QStatus st;
    if (owner == opt_.node) {
      st = PinLocal(opt_.node, pin_id, ranges);
    } else {
      NodeClient* client;
      {
        std::lock_guard<std::mutex> lock(mu_);
        client = peers_[owner].client.get();
      }
      rpc::PinRequest p;
      p.set_pin(pin_id);
      AddRanges(ranges, p.mutable_ranges());
      rpc::Empty e;
      st = client->Call(&rpc::Node::Stub::Pin, &p, &e, kPeerCallMs, "Pin");
    }
    if (!st.ok()) {
      ReleaseReaderPin(pin_id, std::move(done));
      return ToGrpcStatus(st.WithContext("pinning table '" + req->name() + "'"));
    }
    done.by_owner[owner] = ranges;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    reader_pins_.emplace(pin_id, std::move(pin));
  }
  rep->set_name(req->name());
  rep->set_pin(pin_id);
  for (const auto& c : chunks) *rep->add_chunks() = c.chunk;
  return grpc::Status::OK;
}

grpc::Status NodeDaemon::Release(grpc::ServerContext* ctx, const rpc::ReleaseRequest* req,
                                 rpc::Empty*) {
  AUTHORIZE(ctx, req);
  ReaderPin pin;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = reader_pins_.find(req->pin());
    if (it == reader_pins_.end()) {
      return ToGrpcStatus(
          QStatus::NotFound("no pin ", req->pin(), " on node ", opt_.node));
    }
    pin = std::move(it->second);
    reader_pins_.erase(it);
  }
  ReleaseReaderPin(req->pin(), std::move(pin));
  return grpc::Status::OK;
}

grpc::Status NodeDaemon::Pin(grpc::ServerContext* ctx, const rpc::PinRequest* req,
                             rpc::Empty*) {
  AUTHORIZE(ctx, req);
  if (req->release()) {
    UnpinLocal(req->caller().node(), req->pin());
    return grpc::Status::OK;
  }
  RPC_RETURN_NOT_OK(CheckRanges(req->ranges()));
  std::vector<BufferRange> ranges;
  for (const auto& r : req->ranges()) ranges.push_back({r.address(), r.length()});
  RPC_RETURN_NOT_OK(PinLocal(req->caller().node(), req->pin(), ranges));
  return grpc::Status::OK;
}

grpc::Status NodeDaemon::Unpublish(grpc::ServerContext* ctx,
                                   const rpc::UnpublishRequest* req, rpc::Empty*) {
  AUTHORIZE(ctx, req);
  RPC_RETURN_NOT_OK(CheckName(req->name()));
  if (!req->forwarded()) {
    // Refuse while any reader anywhere holds it.
    uint32_t pins = 0;
    bool found = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      found = tables_.count(req->name()) != 0;
      for (const auto& [id, p] : reader_pins_) pins += p.name == req->name();
    }
    Forward([&](Peer& p) {
      rpc::ListRequest l;
      rpc::ListReply r;
      if (p.client->Call(&rpc::Node::Stub::List, &l, &r, kPeerCallMs, "List").ok()) {
        for (const auto& t : r.tables()) {
          if (t.name() == req->name()) {
            pins += t.pins();
            found = true;  // e.g. a full copy registered only there
          }
        }
      }
    });
    if (!found) {
      return ToGrpcStatus(QStatus::NotFound("no table '", req->name(), "' is published"));
    }
    if (pins > 0) {
      return ToGrpcStatus(
          QStatus::FailedPrecondition("table '", req->name(), "' is pinned by ", pins,
                                      " reader(s); they must release it first"));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tables_.find(req->name());
    if (it != tables_.end()) {
      RemoveTableLocked(req->name(), &it->second);
      tables_.erase(it);
    }
  }
  if (!req->forwarded()) {
    Forward([&](Peer& p) {
      rpc::UnpublishRequest f;
      f.set_name(req->name());
      f.set_forwarded(true);
      rpc::Empty e;
      QStatus st =
          p.client->Call(&rpc::Node::Stub::Unpublish, &f, &e, kPeerCallMs, "Unpublish");
      if (!st.ok()) Log("unpublish at node %u: %s", p.config->id, st.ToString().c_str());
    });
  }
  return grpc::Status::OK;
}

void NodeDaemon::FillTableInfo(const std::string& name, const TableEntry& t,
                               rpc::TableInfo* out) {
  out->set_name(name);
  out->set_chunks(static_cast<uint32_t>(t.chunks.size()));
  uint64_t rows = 0;
  std::set<uint32_t> publishers;
  for (const auto& c : t.chunks) {
    rows += c.chunk.num_rows();
    publishers.insert(c.chunk.publisher());
  }
  out->set_num_rows(rows);
  for (uint32_t p : publishers) out->add_publishers(p);
  out->set_lost(t.lost);
  out->set_lost_reason(t.lost_reason);
  uint32_t pins = 0;
  for (const auto& [id, p] : reader_pins_) pins += p.name == name;
  out->set_pins(pins);
}

grpc::Status NodeDaemon::List(grpc::ServerContext* ctx, const rpc::ListRequest* req,
                              rpc::ListReply* rep) {
  AUTHORIZE(ctx, req);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, t] : tables_) FillTableInfo(name, t, rep->add_tables());
  return grpc::Status::OK;
}

rpc::NodeStatus NodeDaemon::OwnStatus() {
  rpc::NodeStatus s;
  s.set_node(opt_.node);
  s.set_online(true);
  s.set_control(self_->control);
  s.set_region_base(self_->base);
  s.set_region_size(self_->size);
  auto st = allocator()->Stats();
  s.set_used(st.used);
  s.set_free(st.free);
  s.set_largest_free(st.largest_free);
  s.set_live_allocations(st.live_allocations);
  s.set_generation(map_->local_region()->header().generation);
  s.set_backing(memory::BackingKindName(self_->backing));
  std::lock_guard<std::mutex> lock(mu_);
  s.set_flags(own_flags_);
  return s;
}

grpc::Status NodeDaemon::Status(grpc::ServerContext* ctx, const rpc::StatusRequest* req,
                                rpc::StatusReply* rep) {
  AUTHORIZE(ctx, req);
  *rep->add_nodes() = OwnStatus();
  if (!req->local_only()) {
    std::vector<std::pair<uint32_t, NodeClient*>> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [id, p] : peers_) all.emplace_back(id, p.client.get());
    }
    for (auto& [id, client] : all) {
      rpc::StatusRequest r;
      r.set_local_only(true);
      rpc::StatusReply pr;
      if (client->Call(&rpc::Node::Stub::Status, &r, &pr, 2000, "Status").ok() &&
          pr.nodes_size() == 1) {
        *rep->add_nodes() = pr.nodes(0);
      } else {
        const auto* n = config_.FindNode(id);
        auto* s = rep->add_nodes();
        s->set_node(id);
        s->set_online(false);
        s->set_control(n->control);
        s->set_region_base(n->base);
        s->set_region_size(n->size);
        s->set_backing(memory::BackingKindName(n->backing));
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, t] : tables_) FillTableInfo(name, t, rep->add_tables());
  return grpc::Status::OK;
}

// ---------------------------------------------------------------------------
// Process entry points

int RunDaemon(const DaemonOptions& options) {
  // SIGTERM/SIGINT are taken by a waiting thread; block them everywhere.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  if (!options.cpus.empty()) {
    cpu_set_t set_cpus;
    CPU_ZERO(&set_cpus);
    for (int c : options.cpus) CPU_SET(c, &set_cpus);
    if (sched_setaffinity(0, sizeof(set_cpus), &set_cpus) != 0) {
      Log("cannot run on the CPUs given with --cpus: %s", std::strerror(errno));
      return 1;
    }
  }
  NodeDaemon daemon(options);
  QStatus st = daemon.Start();
  if (!st.ok()) {
    Log("cannot start: %s", st.ToString().c_str());
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  Log("received %s", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  daemon.Shutdown();
  return 0;
}

int DaemonMain(int argc, char** argv) {
  DaemonOptions o;
  bool have_config = false, have_id = false;
  auto usage = [&] {
    std::fprintf(stderr,
                 "usage: %s --config FILE --id N [--max-malloc SIZE] [--malloc-rate N]\n"
                 "          [--cpus LIST]\n"
                 "  runs the Quiver node daemon of node N of the cluster FILE\n"
                 "  --max-malloc   largest single allocation a peer may ask for\n"
                 "  --malloc-rate  allocations per second per caller node\n"
                 "  --cpus         run on these CPUs only (e.g. 0,1): the CPUs near\n"
                 "                 the node's memory, or the clients' CPU for latency\n",
                 argv[0]);
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--config") {
      const char* v = value();
      if (!v) return usage();
      o.config_path = v;
      have_config = true;
    } else if (a == "--id") {
      const char* v = value();
      char* end = nullptr;
      if (!v) return usage();
      unsigned long id = std::strtoul(v, &end, 10);
      if (*end != 0 || id > 0xFFFF) {
        std::fprintf(stderr, "quiverd: --id '%s' is not a node id\n", v);
        return 2;
      }
      o.node = static_cast<uint32_t>(id);
      have_id = true;
    } else if (a == "--max-malloc") {
      const char* v = value();
      if (!v) return usage();
      auto size = memory::ParseByteSize(v);
      if (!size.ok()) {
        std::fprintf(stderr, "quiverd: --max-malloc: %s\n",
                     size.status().ToString().c_str());
        return 2;
      }
      o.max_malloc_bytes = *size;
    } else if (a == "--malloc-rate") {
      const char* v = value();
      char* end = nullptr;
      if (!v) return usage();
      o.malloc_rate = std::strtoull(v, &end, 10);
      if (*end != 0 || o.malloc_rate == 0) {
        std::fprintf(stderr, "quiverd: --malloc-rate '%s' is not a positive count\n", v);
        return 2;
      }
    } else if (a == "--cpus") {
      const char* v = value();
      if (!v) return usage();
      std::string list = v;
      size_t pos = 0;
      while (pos <= list.size()) {
        size_t comma = list.find(',', pos);
        std::string item = list.substr(
            pos, comma == std::string::npos ? std::string::npos : comma - pos);
        char* end = nullptr;
        long cpu = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != 0 || cpu < 0 || cpu >= CPU_SETSIZE) {
          std::fprintf(stderr, "quiverd: --cpus '%s' is not a list of CPU numbers\n", v);
          return 2;
        }
        o.cpus.push_back(static_cast<int>(cpu));
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    } else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else {
      std::fprintf(stderr, "quiverd: unknown argument '%s'\n", a.c_str());
      return usage();
    }
  }
  if (!have_config || !have_id) return usage();
  return RunDaemon(o);
}

}  // namespace quiver::control
