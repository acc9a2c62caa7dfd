// ObjectStore: Create/Seal/Abort at an object's home, Get/Release/Delete/
// Contains through the id's directory node (or the look-up cache) and then
// one call per home, List/Evict/Stats per node.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "control/client/link.h"
#include "quiver/coherence/flush.h"
#include "quiver/memory/incoherent.h"
#include "quiver/memory/region.h"
#include "quiver_rpc/control.pb.h"
#include "quiver_rpc/store.pb.h"
#include "store/client/store_impl.h"
#include "store/id_directory.h"
#include "store/store_record.h"

namespace quiver::store {

using control::client::Link;
using control::rpc::Method;

namespace {

using Clock = std::chrono::steady_clock;

int64_t Remaining(Clock::time_point deadline) {
  return std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())
             .count());
}

// A node that cannot be reached: its daemon is down, or the link broke.
bool Unreachable(const Status& st) { return st.IsIOError() || st.IsUnavailable(); }

Status Lost(const ObjectId& id, uint32_t home, const std::string& why) {
  return Status::ObjectLost("object ", id.Hex(), " is lost: its home node ", home,
                            " is down (", why, ")");
}

// Calls every node of `requests` at once and collects each reply.
template <typename Reply, typename Request>
std::map<uint32_t, Result<Reply>> CallEach(ObjectStore::Impl& s, Method method,
                                           const std::map<uint32_t, Request>& requests,
                                           int64_t extra_ms) {
  std::map<uint32_t, Result<Reply>> out;
  std::vector<std::tuple<uint32_t, Link*, Link::Pending>> pending;
  for (const auto& [node, req] : requests) {
    auto l = s.Link(node);
    if (!l.ok()) {
      out.emplace(node, l.status());
      continue;
    }
    pending.emplace_back(node, *l, (*l)->Start(method, req));
  }
  for (auto& [node, l, p] : pending) {
    Reply rep;
    Status st =
        l->Finish(&p, &rep, control::client::WithWait(s.call_timeout_ms, extra_ms));
    if (st.ok()) {
      out.emplace(node, std::move(rep));
    } else {
      out.emplace(node, st);
    }
  }
  return out;
}

// Where each id lives: the cache, else its directory node (one call per
// directory node, waiting up to `timeout_ms` for ids not created yet).
struct Located {
  std::optional<uint32_t> home;
  Status status;  // why there is no home
};

std::vector<Located> Locate(ObjectStore::Impl& s, const std::vector<ObjectId>& ids,
                            int64_t timeout_ms) {
  std::vector<Located> out(ids.size());
  std::map<uint32_t, wire::StoreLocateRequest> asks;
  std::map<uint32_t, std::vector<size_t>> which;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    for (size_t i = 0; i < ids.size(); ++i) {
      auto it = s.homes.find(ids[i]);
      if (it != s.homes.end()) {
        out[i].home = it->second;
        continue;
      }
      const uint32_t dir = DirectoryNodeOf(ids[i], s.config());
      asks[dir].add_ids(ids[i].Binary());
      asks[dir].set_timeout_ms(
          static_cast<uint32_t>(std::min<int64_t>(timeout_ms, UINT32_MAX)));
      which[dir].push_back(i);
    }
  }
  if (asks.empty()) return out;
  auto replies =
      CallEach<wire::StoreLocateReply>(s, Method::kStoreLocate, asks, timeout_ms);
  std::vector<size_t> orphans;  // their directory node is down
  std::unique_lock<std::mutex> lock(s.mu);
  for (auto& [dir, rep] : replies) {
    const auto& idx = which[dir];
    const bool well_formed = rep.ok() &&
                             rep->home_plus_one_size() == static_cast<int>(idx.size()) &&
                             rep->lost_size() == static_cast<int>(idx.size());
    for (size_t k = 0; k < idx.size(); ++k) {
      Located& l = out[idx[k]];
      const ObjectId& id = ids[idx[k]];
      if (!rep.ok()) {
        l.status = Status::Unavailable("object ", id.Hex(), ": its directory node ", dir,
                                       " cannot be reached: ", rep.status().message());
        orphans.push_back(idx[k]);
        continue;
      }
      if (!well_formed) {
        l.status =
            Status::IOError("node ", dir, " answered Locate with a malformed reply");
        continue;
      }
      const uint32_t h = rep->home_plus_one(static_cast<int>(k));
      if (h == 0) {
        l.status = Status::NotFound("object ", id.Hex(), " does not exist");
        continue;
      }
      if (s.core->config().FindNode(h - 1) == nullptr) {
        l.status =
            Status::IOError("node ", dir, " says object ", id.Hex(), " lives on node ",
                            h - 1, ", which is not in the cluster");
        continue;
      }
      if (!rep->lost(static_cast<int>(k)).empty()) {
        l.status = Lost(id, h - 1, rep->lost(static_cast<int>(k)));
        continue;
      }
      l.home = h - 1;
      s.homes[id] = h - 1;
    }
  }
  if (orphans.empty()) return out;
  // Without their directory node, the homes themselves say: every other
  // node is asked which of them it holds sealed (only while one is down).
  wire::StoreIdsRequest ask;
  for (size_t i : orphans) ask.add_ids(ids[i].Binary());
  std::map<uint32_t, wire::StoreIdsRequest> everyone;
  for (uint32_t n : s.nodes()) {
    if (replies.count(n) == 0 || replies.at(n).ok()) everyone[n] = ask;
  }
  lock.unlock();
  auto held = CallEach<wire::StoreContainsReply>(s, Method::kStoreContains, everyone, 0);
  lock.lock();
  for (auto& [node, rep] : held) {
    if (!rep.ok() || rep->sealed_size() != static_cast<int>(orphans.size())) continue;
    for (size_t k = 0; k < orphans.size(); ++k) {
      if (!rep->sealed(static_cast<int>(k))) continue;
      Located& l = out[orphans[k]];
      l.home = node;
      l.status = Status::OK();
      s.homes[ids[orphans[k]]] = node;
    }
  }
  return out;
}

// What one Get found of each home it consulted the pin cache for.
struct HomeNow {
  uint64_t store_epoch = 0, link_epoch = 0;
  bool alive = false;
};

// Answers `id` from the pin cache if its entry is still good (pin_cache.h):
// no round trip. Each home is looked at once per Get (`homes`); stale
// entries of a home are dropped.
bool FromCache(ObjectStore::Impl& s, std::map<uint32_t, HomeNow>* homes,
               const ObjectId& id, const std::optional<PinCache::Entry>& e,
               ObjectBuffer* out) {
  if (!e) return false;
  auto [it, first] = homes->try_emplace(e->home);
  HomeNow& now = it->second;
  if (first) {
    auto l = s.Link(e->home);
    if (l.ok()) {
      now.store_epoch = s.StoreEpoch(e->home);
      now.link_epoch = (*l)->view().epoch;
      now.alive = (*l)->Probe();
    }
    s.cache->DropStale(e->home, now.store_epoch, now.alive ? now.link_epoch : 0);
  }
  if (!now.alive || now.store_epoch != e->store_epoch ||
      now.link_epoch != e->link_epoch) {
    return false;
  }
  out->status = Status::OK();
  out->home = e->home;
  out->data = e->data;
  out->metadata = e->metadata;
  std::lock_guard<std::mutex> lock(s.mu);
  s.held.emplace(id, e->ref);
  return true;
}

}  // namespace

std::vector<uint32_t> ObjectStore::Impl::nodes() const {
  std::vector<uint32_t> out;
  for (const auto& n : config().nodes) out.push_back(n.id);
  std::sort(out.begin(), out.end());
  return out;
}

Result<Link*> ObjectStore::Impl::Link(uint32_t node) {
  control::client::Link* l = core->link(node);
  if (l == nullptr) return Status::Invalid("there is no node ", node, " in the cluster");
  return l;
}

Status ObjectStore::Impl::Call(uint32_t node, Method method,
                               const google::protobuf::MessageLite& request,
                               google::protobuf::MessageLite* reply, int64_t extra_ms) {
  QUIVER_ASSIGN_OR_RAISE(auto* l, Link(node));
  return l->Call(method, request, reply,
                 control::client::WithWait(call_timeout_ms, extra_ms));
}

void ObjectStore::Impl::Forget(const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu);
  homes.erase(id);
}

uint64_t ObjectStore::Impl::StoreEpoch(uint32_t home) const {
  const auto* n = config().FindNode(home);
  if (n == nullptr) return 0;
  auto* word = reinterpret_cast<uint64_t*>(n->base + memory::kStoreEpochOffset);
  // Another node's cache line may be stale: read memory.
  if (!coherent) (void)coherence::FlushRange(word, sizeof(*word));
  return std::atomic_ref<uint64_t>(*word).load(std::memory_order_acquire);
}

ObjectStore::ObjectStore(Client& client, const StoreOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->cache =
      std::make_unique<PinCache>(options.pin_cache_bytes, options.pin_cache_max_object);
  impl_->core = client.core_;
  impl_->self = client.node_id();
  impl_->call_timeout_ms = client.options_.call_timeout_ms;
  impl_->coherent = client.config().AllCoherent();
  if (impl_->cache->enabled()) {
    Impl* s = impl_.get();
    s->sweeper = std::thread([s] { s->Sweep(); });
  }
  memory::RegionMapping* local = impl_->core->map()->local_region();
  if (impl_->coherent && options.prefault_ahead > 0 && local != nullptr) {
    // A fresh region fills from the start of its data area.
    impl_->prefault_ahead = options.prefault_ahead;
    impl_->prefaulter = std::make_unique<memory::Prefaulter>();
    impl_->prefaulter->Request(local, local->data(), options.prefault_ahead);
  }
}

ObjectStore::~ObjectStore() = default;

ObjectStore::Impl::~Impl() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stop_sweeping = true;
  }
  sweep_cv.notify_all();
  if (sweeper.joinable()) sweeper.join();
}

void ObjectStore::Impl::Sweep() {
  std::unique_lock<std::mutex> lock(mu);
  while (!sweep_cv.wait_for(lock, std::chrono::milliseconds(100),
                            [this] { return stop_sweeping; })) {
    lock.unlock();
    for (uint32_t home : cache->Homes()) {
      auto l = Link(home);
      const bool alive = l.ok() && (*l)->Probe();
      cache->DropStale(home, StoreEpoch(home), alive ? (*l)->view().epoch : 0);
    }
    lock.lock();
  }
}

void ObjectStore::DropCachedPins() { impl_->cache->Clear(); }

// Sends `req` to the node the caller chose, or to this node and then the
// others in turn while each is full or down; the home that took it.
Result<uint32_t> Place(ObjectStore::Impl& s, const ObjectId& id,
                       const wire::StoreCreateRequest& req, const CreateOptions& options,
                       wire::StoreCreateReply* rep) {
  std::vector<uint32_t> where;
  const auto& cfg = s.core->config();
  if (options.node) {
    // Objects live where this process can write them: its memory group.
    if (cfg.FindNode(*options.node) != nullptr &&
        !cfg.SharesMemory(s.self, *options.node)) {
      return Status::Invalid("object ", id.Hex(), " cannot be placed on node ",
                             *options.node, ": it is in another memory group than node ",
                             s.self, " (its region is not mapped here)");
    }
    where.push_back(*options.node);
  } else {
    // This node first, then the others of its memory group from the next
    // one on.
    std::vector<uint32_t> all;
    for (uint32_t n : s.nodes()) {
      if (cfg.SharesMemory(s.self, n)) all.push_back(n);
    }
    auto self = std::find(all.begin(), all.end(), s.self);
    where.insert(where.end(), self, all.end());
    where.insert(where.end(), all.begin(), self);
  }
  Status st;
  for (uint32_t n : where) {
    st = s.Call(n, Method::kStoreCreate, req, rep);
    if (st.ok()) return n;
    // Full, or down: another node may take it, unless the caller chose.
    const bool next = st.IsOutOfMemory() || (n != s.self && Unreachable(st));
    if (!next || options.node) return st;
  }
  return st.WithContext("no node has room for object " + id.Hex());
}

Result<std::shared_ptr<Buffer>> ObjectStore::Create(const ObjectId& id,
                                                    uint64_t data_size,
                                                    std::string_view metadata,
                                                    const CreateOptions& options) {
  Impl& s = *impl_;
  if (id.nil()) return Status::Invalid("Create of the nil object id");
  if (data_size > static_cast<uint64_t>(INT64_MAX) - metadata.size()) {
    return Status::Invalid("Create of object ", id.Hex(), ": ", data_size,
                           " bytes is too large");
  }
  wire::StoreCreateRequest req;
  req.set_id(id.Binary());
  req.set_data_size(data_size);
  req.set_metadata_size(metadata.size());
  wire::StoreCreateReply rep;
  QUIVER_ASSIGN_OR_RAISE(const uint32_t home, Place(s, id, req, options, &rep));
  const uint64_t size = data_size + metadata.size();
  auto* base = reinterpret_cast<uint8_t*>(rep.address());
  memory::RegionMapping* region = s.core->map()->RegionOf(base, size);
  if (size > 0 && region == nullptr) {
    return Status::IOError("node ", home, " placed object ", id.Hex(),
                           " outside every region mapped here");
  }
  // The next objects placed there most likely follow this one.
  if (s.prefaulter && region != nullptr && !region->emulated()) {
    s.prefaulter->Request(region, base + size, s.prefault_ahead);
  }
  // Protocol step 2 for this node: the home had every other node flush.
  if (!s.coherent && size > 0) QUIVER_RETURN_NOT_OK(coherence::FlushRange(base, size));
  if (!metadata.empty()) std::memcpy(base + data_size, metadata.data(), metadata.size());
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.creating[id] = {home, rep.address(), size};
    s.homes[id] = home;
  }
  return Buffer::WrapMutable(base, static_cast<int64_t>(data_size), s.core);
}

Status ObjectStore::Seal(const ObjectId& id) {
  Impl& s = *impl_;
  Impl::Creating c;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.creating.find(id);
    if (it == s.creating.end()) {
      return Status::NotFound("object ", id.Hex(),
                              " is not being created by this client");
    }
    c = it->second;
  }
  // Protocol step 4: what this process wrote into another node's memory
  // reaches it before anyone may read it.
  if (!s.coherent && c.home != s.self && c.size > 0) {
    QUIVER_RETURN_NOT_OK(
        coherence::FlushRange(reinterpret_cast<const void*>(c.address), c.size));
  }
  wire::StoreIdsRequest req;
  req.add_ids(id.Binary());
  QUIVER_RETURN_NOT_OK(s.Call(c.home, Method::kStoreSeal, req, nullptr));
  std::lock_guard<std::mutex> lock(s.mu);
  s.creating.erase(id);
  return Status::OK();
}

Status ObjectStore::Abort(const ObjectId& id) {
  Impl& s = *impl_;
  uint32_t home = 0;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.creating.find(id);
    if (it == s.creating.end()) {
      return Status::NotFound("object ", id.Hex(),
                              " is not being created by this client");
    }
    home = it->second.home;
  }
  wire::StoreIdsRequest req;
  req.add_ids(id.Binary());
  QUIVER_RETURN_NOT_OK(s.Call(home, Method::kStoreAbort, req, nullptr));
  std::lock_guard<std::mutex> lock(s.mu);
  s.creating.erase(id);
  s.homes.erase(id);
  return Status::OK();
}

Status ObjectStore::CreateAndSeal(const ObjectId& id, std::string_view data,
                                  std::string_view metadata,
                                  const CreateOptions& options) {
  Impl& s = *impl_;
  if (id.nil()) return Status::Invalid("CreateAndSeal of the nil object id");
  if (data.size() + metadata.size() > kMaxInlineObject) {
    QUIVER_ASSIGN_OR_RAISE(auto buf, Create(id, data.size(), metadata, options));
    if (!data.empty()) std::memcpy(buf->mutable_data(), data.data(), data.size());
    Status st = Seal(id);
    if (!st.ok()) (void)Abort(id);
    return st;
  }
  // Small: the home writes and seals it, one round trip.
  wire::StoreCreateRequest req;
  req.set_id(id.Binary());
  req.set_data_size(data.size());
  req.set_metadata_size(metadata.size());
  req.set_seal(true);
  std::string* contents = req.mutable_contents();
  contents->reserve(data.size() + metadata.size());
  contents->append(data).append(metadata);
  wire::StoreCreateReply rep;
  QUIVER_ASSIGN_OR_RAISE(const uint32_t home, Place(s, id, req, options, &rep));
  std::lock_guard<std::mutex> lock(s.mu);
  s.homes[id] = home;
  return Status::OK();
}

Result<std::vector<ObjectBuffer>> ObjectStore::Get(const std::vector<ObjectId>& ids,
                                                   int64_t timeout_ms) {
  Impl& s = *impl_;
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(std::max<int64_t>(0, timeout_ms));
  std::vector<ObjectBuffer> out(ids.size());
  std::vector<size_t> todo;
  std::map<uint32_t, HomeNow> homes_now;
  std::vector<std::optional<PinCache::Entry>> cached;
  if (s.cache->enabled()) cached = s.cache->FindAll(ids);
  for (size_t i = 0; i < ids.size(); ++i) {
    out[i].id = ids[i];
    if (ids[i].nil()) {
      out[i].status = Status::Invalid("Get of the nil object id");
    } else if (cached.empty() || !FromCache(s, &homes_now, ids[i], cached[i], &out[i])) {
      todo.push_back(i);
    }
  }
  // Each home's store epoch before asking it: pins taken now are good for
  // repeated Gets until it changes.
  std::map<uint32_t, uint64_t> epoch_before;
  // A second round only for ids a cached home no longer holds.
  for (int round = 0; round < 2 && !todo.empty(); ++round) {
    std::vector<ObjectId> asked;
    for (size_t i : todo) asked.push_back(ids[i]);
    auto located = Locate(s, asked, Remaining(deadline));
    std::map<uint32_t, std::vector<size_t>> at;
    for (size_t k = 0; k < todo.size(); ++k) {
      const size_t i = todo[k];
      if (!located[k].home) {
        out[i].status = located[k].status;
        continue;
      }
      out[i].home = *located[k].home;
      at[*located[k].home].push_back(i);
    }
    todo.clear();
    std::map<uint32_t, wire::StoreGetRequest> gets;
    const auto wait_ms =
        static_cast<uint32_t>(std::min<int64_t>(Remaining(deadline), UINT32_MAX));
    for (const auto& [home, idx] : at) {
      if (s.cache->enabled() && epoch_before.count(home) == 0) {
        epoch_before[home] = s.StoreEpoch(home);
      }
      std::vector<ObjectId> asking;
      asking.reserve(idx.size());
      for (size_t i : idx) asking.push_back(ids[i]);
      gets[home].set_ids(EncodePackedIds(asking));
      gets[home].set_timeout_ms(wait_ms);
    }
    auto replies =
        CallEach<wire::StoreGetReply>(s, Method::kStoreGet, gets, Remaining(deadline));
    for (auto& [home, rep] : replies) {
      if (!rep.ok()) {
        for (size_t i : at[home]) {
          out[i].status = Unreachable(rep.status())
                              ? Lost(ids[i], home, rep.status().message())
                              : rep.status();
        }
        continue;
      }
      auto found = DecodeFoundRecords(rep->found());
      if (!found.ok()) {
        for (size_t i : at[home]) {
          out[i].status =
              Status::IOError("node ", home, " answered Get with a malformed ",
                              "reply: ", found.status().message());
        }
        continue;
      }
      std::shared_ptr<PinRef> ref;
      std::vector<control::BufferRange> ranges;
      ranges.reserve(found->size());
      for (const auto& o : *found) {
        ranges.push_back({o.address, o.data_size + o.metadata_size});
      }
      uint64_t link_epoch = 0;
      if (!found->empty()) {
        QUIVER_ASSIGN_OR_RAISE(auto* l, s.Link(home));
        link_epoch = l->view().epoch;
        ref = std::make_shared<PinRef>();
        ref->core = s.core;
        ref->pin = s.core->AddPin(home, rep->pin(), link_epoch, {}, ranges);
      }
      std::unordered_map<ObjectId, bool, ObjectIdHash> creating, missing;
      std::unordered_map<ObjectId, std::string, ObjectIdHash> lost;
      for (int k = 0; k < rep->lost_size(); ++k) {
        auto id = ObjectId::FromBinary(rep->lost(k));
        if (id.ok()) {
          lost[*id] = k < rep->lost_reasons_size() ? rep->lost_reasons(k) : "lost";
        }
      }
      for (const auto& b : rep->creating()) {
        auto id = ObjectId::FromBinary(b);
        if (id.ok()) creating[*id] = true;
      }
      for (const auto& b : rep->missing()) {
        auto id = ObjectId::FromBinary(b);
        if (id.ok()) missing[*id] = true;
      }
      // The home answers what it found in the order asked: one walk pairs
      // each found record with its id.
      size_t next_found = 0;
      std::vector<size_t> readable;  // indices into `out` of objects now held
      std::vector<std::pair<const uint8_t*, int64_t>> views;  // data, metadata
      readable.reserve(found->size());
      views.reserve(2 * found->size());
      for (size_t i : at[home]) {
        const ObjectId& id = ids[i];
        if (next_found < found->size() && (*found)[next_found].id == id) {
          const StoreRecord& o = (*found)[next_found++];
          const uint64_t size = o.data_size + o.metadata_size;
          const auto* p = reinterpret_cast<const uint8_t*>(o.address);
          if (o.data_size > INT64_MAX || o.metadata_size > INT64_MAX - o.data_size ||
              (size > 0 && s.core->map()->RegionOf(p, size) == nullptr)) {
            out[i].status = Status::IOError("node ", home, " answered object ", id.Hex(),
                                            " at a range outside every mapped region");
            continue;
          }
          Status flushed;
          if (size > 0 && memory::FlushIfEmulated(p, size, &flushed) && !flushed.ok()) {
            out[i].status = flushed;
            continue;
          }
          readable.push_back(i);
          views.emplace_back(p, static_cast<int64_t>(o.data_size));
          views.emplace_back(p + o.data_size, static_cast<int64_t>(o.metadata_size));
        } else if (auto l = lost.find(id); l != lost.end()) {
          s.Forget(id);
          out[i].status = Status::ObjectLost(l->second);
        } else if (creating.count(id)) {
          out[i].status = Status::DeadlineExceeded(
              "object ", id.Hex(), " was not sealed within ", timeout_ms, " ms");
        } else {
          // The cached home no longer has it (deleted, evicted): ask the
          // directory node once more.
          const bool was_cached = round == 0;
          s.Forget(id);
          out[i].status = Status::NotFound("object ", id.Hex(), " does not exist");
          if (was_cached && missing.count(id)) todo.push_back(i);
        }
      }
      // One allocation for the views of the whole batch.
      auto buffers = Buffer::WrapAll(views, ref);
      const bool caching = s.cache->enabled();
      const uint64_t store_epoch = caching ? epoch_before[home] : 0;
      std::vector<std::pair<ObjectId, PinCache::Entry>> keep;
      if (caching) keep.reserve(readable.size());
      for (size_t k = 0; k < readable.size(); ++k) {
        ObjectBuffer& b = out[readable[k]];
        b.status = Status::OK();
        b.data = std::move(buffers[2 * k]);
        b.metadata = std::move(buffers[2 * k + 1]);
        if (caching) {
          keep.emplace_back(b.id, PinCache::Entry{home, link_epoch, store_epoch, ref,
                                                  b.data, b.metadata});
        }
      }
      if (!keep.empty()) s.cache->PutAll(std::move(keep));
      if (!readable.empty()) {
        std::lock_guard<std::mutex> lock(s.mu);
        for (size_t i : readable) s.held.emplace(ids[i], ref);
      }
      if (next_found != found->size()) {
        // Found objects out of the order asked, or never asked for.
        for (size_t i : at[home]) {
          if (out[i].status.ok()) continue;
          out[i].status = Status::IOError("node ", home, " answered Get with objects ",
                                          "out of the order asked");
          todo.erase(std::remove(todo.begin(), todo.end(), i), todo.end());
        }
      }
    }
  }
  return out;
}

Status ObjectStore::Release(const ObjectId& id) {
  Impl& s = *impl_;
  std::shared_ptr<PinRef> ref;  // released outside the lock
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.held.find(id);
  if (it == s.held.end()) {
    return Status::NotFound("object ", id.Hex(),
                            " is not held by this client (no Get "
                            "left to release)");
  }
  ref = std::move(it->second);
  s.held.erase(it);
  return Status::OK();
}

Status ObjectStore::Delete(const std::vector<ObjectId>& ids) {
  Impl& s = *impl_;
  s.cache->Erase(ids);
  std::vector<ObjectId> todo(ids.begin(), ids.end());
  std::string missing, creating;
  Status failed;
  for (int round = 0; round < 2 && !todo.empty(); ++round) {
    auto located = Locate(s, todo, 0);
    std::map<uint32_t, wire::StoreIdsRequest> dels;
    for (size_t k = 0; k < todo.size(); ++k) {
      if (!located[k].home) {
        if (located[k].status.IsNotFound()) {
          missing += " " + todo[k].Hex();
        } else if (failed.ok()) {
          failed = located[k].status;
        }
        continue;
      }
      dels[*located[k].home].add_ids(todo[k].Binary());
    }
    todo.clear();
    auto replies = CallEach<wire::StoreDeleteReply>(s, Method::kStoreDelete, dels, 0);
    for (auto& [home, rep] : replies) {
      for (const auto& b : dels[home].ids()) s.Forget(*ObjectId::FromBinary(b));
      if (!rep.ok()) {
        if (failed.ok()) {
          failed = Unreachable(rep.status())
                       ? Status::ObjectLost("Delete at node ", home, ": ",
                                            rep.status().message())
                       : rep.status();
        }
        continue;
      }
      for (const auto& b : rep->missing()) {
        auto id = ObjectId::FromBinary(b);
        if (!id.ok()) continue;
        if (round == 0) {
          todo.push_back(*id);  // the cache was stale: ask the directory node
        } else {
          missing += " " + id->Hex();
        }
      }
      for (const auto& b : rep->creating()) {
        auto id = ObjectId::FromBinary(b);
        if (id.ok()) creating += " " + id->Hex();
      }
    }
  }
  if (!failed.ok()) return failed;
  if (!creating.empty()) {
    return Status::FailedPrecondition(
        "objects still being created (their creator seals "
        "or aborts them):",
        creating);
  }
  if (!missing.empty()) return Status::NotFound("no such objects:", missing);
  return Status::OK();
}

Result<bool> ObjectStore::Contains(const ObjectId& id) {
  Impl& s = *impl_;
  for (int round = 0; round < 2; ++round) {
    auto located = Locate(s, {id}, 0);
    if (!located[0].home) {
      if (located[0].status.IsNotFound()) return false;
      return located[0].status;
    }
    wire::StoreIdsRequest req;
    req.add_ids(id.Binary());
    wire::StoreContainsReply rep;
    Status st = s.Call(*located[0].home, Method::kStoreContains, req, &rep);
    if (!st.ok()) return Unreachable(st) ? Lost(id, *located[0].home, st.message()) : st;
    if (rep.sealed_size() != 1) {
      return Status::IOError("node ", *located[0].home, " answered Contains malformed");
    }
    if (rep.sealed(0)) return true;
    s.Forget(id);  // maybe stale: the directory node says for sure
  }
  return false;
}

Result<std::vector<ObjectInfo>> ObjectStore::List() {
  Impl& s = *impl_;
  std::map<uint32_t, wire::Empty> all;
  for (uint32_t n : s.nodes()) all[n];
  std::vector<ObjectInfo> out;
  for (auto& [node, rep] :
       CallEach<wire::StoreListReply>(s, Method::kStoreList, all, 0)) {
    if (!rep.ok()) continue;  // a node that is down lists nothing
    for (const auto& o : rep->objects()) {
      auto id = ObjectId::FromBinary(o.id());
      if (!id.ok())
        return id.status().WithContext("List at node " + std::to_string(node));
      ObjectInfo info;
      info.id = *id;
      info.state = o.state() == 3   ? ObjectState::kSpilled
                   : o.state() == 2 ? ObjectState::kSealed
                                    : ObjectState::kCreating;
      info.home = node;
      info.data_size = o.data_size();
      info.metadata_size = o.metadata_size();
      info.pins = o.pins();
      info.last_use = std::chrono::system_clock::time_point(
          std::chrono::milliseconds(o.last_use_ms()));
      out.push_back(info);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.id < b.id; });
  return out;
}

Result<uint64_t> ObjectStore::Evict(uint64_t bytes, std::optional<uint32_t> node) {
  wire::StoreEvictRequest req;
  req.set_bytes(bytes);
  wire::StoreEvictReply rep;
  QUIVER_RETURN_NOT_OK(
      impl_->Call(node.value_or(impl_->self), Method::kStoreEvict, req, &rep));
  return rep.freed();
}

Result<StoreStats> ObjectStore::Stats(uint32_t node) {
  wire::Empty req;
  wire::StoreStatusReply rep;
  QUIVER_RETURN_NOT_OK(impl_->Call(node, Method::kStoreStatus, req, &rep));
  return StoreStatsFromWire(rep);
}

StoreStats StoreStatsFromWire(const wire::StoreStatusReply& rep) {
  const auto& c = rep.counters();
  StoreStats st;
  st.node = rep.node();
  st.creates = c.creates();
  st.seals = c.seals();
  st.aborts = c.aborts();
  st.deletes = c.deletes();
  st.hits = c.hits();
  st.misses = c.misses();
  st.evictions = c.evictions();
  st.evicted_bytes = c.evicted_bytes();
  st.spills = c.spills();
  st.spilled_bytes = c.spilled_bytes();
  st.restores = c.restores();
  st.restored_bytes = c.restored_bytes();
  st.spill_failures = c.spill_failures();
  st.objects_creating = c.objects_creating();
  st.bytes_creating = c.bytes_creating();
  st.objects_sealed = c.objects_sealed();
  st.bytes_sealed = c.bytes_sealed();
  st.objects_spilled = c.objects_spilled();
  st.bytes_spilled = c.bytes_spilled();
  st.capacity = c.capacity();
  st.region_used = c.region_used();
  st.directory_entries = c.directory_entries();
  st.spill_dir = c.spill_dir();
  st.last_spill_error = c.last_spill_error();
  return st;
}

}  // namespace quiver::store
