// quiver::Client: connecting, the pools, the coherency protocol's client
// steps, publishing and reading tables. Barriers, status and the full-copy
// baseline are in client_calls.cc.
#include "quiver/client.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "control/catalogue/catalogue.h"
#include "control/client/core.h"
#include "control/rpc/wire.h"
#include "quiver/coherence/flush.h"
#include "quiver/control/descriptor.h"
#include "quiver/memory/incoherent.h"

namespace quiver {

using control::BufferRange;
using control::client::Core;
using control::client::HeldPin;
using control::client::Link;
using util::Hex;

namespace {

// Pins of one Get, released (by the background thread) when the last array
// that uses them is gone.
struct PinSet {
  std::shared_ptr<Core> core;
  std::vector<std::shared_ptr<HeldPin>> pins;
  ~PinSet() {
    for (auto& p : pins) core->QueueRelease(p);
  }
};

// Every buffer the batch references (children and dictionaries included),
// whole: a sliced array still seals the allocation it lies in.
std::vector<BufferRange> RangesOf(const RecordBatch& batch) {
  std::vector<BufferRange> out;
  for (int i = 0; i < batch.num_columns(); ++i) {
    ForEachBuffer(*batch.column(i)->data(), [&](const Buffer& b) {
      out.push_back(
          {reinterpret_cast<uint64_t>(b.data()), static_cast<uint64_t>(b.size())});
    });
  }
  return out;
}

// Non-empty ranges grouped by the node whose region holds each.
Result<std::map<uint32_t, std::vector<BufferRange>>> ByOwner(
    const memory::ClusterConfig& config, const std::vector<BufferRange>& ranges) {
  std::map<uint32_t, std::vector<BufferRange>> out;
  for (const auto& r : ranges) {
    if (r.length == 0) continue;
    const auto* n = config.NodeOfAddress(r.address, r.length);
    if (n == nullptr) {
      return Status::Invalid("buffer [", Hex(r.address), ", +", r.length,
                             ") is not inside one region of the cluster (build the "
                             "batch with a pool of quiver::Client)");
    }
    out[n->id].push_back(r);
  }
  return out;
}

// The chunks of `name` as `own` (this node's daemon) holds them, without
// pinning anything: who holds a name, where its homes are.
Status LookupUnpinned(Link* own, const std::string& name, int timeout_ms,
                      wire::LookupReply* found) {
  wire::LookupRequest look;
  look.set_name(name);
  return own->Call(control::rpc::Method::kLookup, look, found, timeout_ms);
}

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  std::unique_ptr<Client> c(new Client());
  c->options_ = options;
  QUIVER_ASSIGN_OR_RAISE(c->core_, Core::Make(options));
  // The own daemon must answer before anything else is done.
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(options.connect_timeout_ms);
  for (;;) {
    Status st = c->core_->link(options.node)->Open().status();
    if (st.ok()) break;
    if (std::chrono::steady_clock::now() > deadline) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const auto& n : c->core_->config().nodes) {
    c->pools_.push_back(std::make_unique<memory::RemoteMemoryPool>(n.id, c.get()));
  }
  return c;
}

Client::~Client() {
  // Pools die with the client, and the arrays built from them must have gone
  // first; arrays from Get keep the core (and their sessions) alive. The
  // core's end never waits on a daemon.
  pools_.clear();
  core_.reset();
}

Status Client::Close() {
  Status st = core_->Drain();
  core_->Shutdown();
  return st;
}

uint32_t Client::node_id() const { return options_.node; }
const memory::ClusterConfig& Client::config() const { return core_->config(); }
memory::ClusterMap* Client::cluster() { return core_->map(); }

MemoryPool* Client::pool(uint32_t node) {
  const auto& nodes = config().nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].id == node) return pools_[i].get();
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// Memory: every allocation is made by its region's owner, for this client's
// session there. Protocol step 2 (every node drops the new range from its
// caches) is done by the owner for every other node before it answers, and
// here for this node: a flush empties the line from every cache of the node
// it runs on (and this process's emulated copies).

Result<uint64_t> Client::RemoteAllocate(uint32_t node, uint64_t size,
                                        uint64_t alignment) {
  return core_->RemoteAllocate(node, size, alignment);
}

Result<uint64_t> Client::RemoteReallocate(uint32_t node, uint64_t address,
                                          uint64_t new_size, uint64_t alignment) {
  return core_->RemoteReallocate(node, address, new_size, alignment);
}

Status Client::RemoteFree(uint32_t node, uint64_t address) {
  return core_->RemoteFree(node, address);
}

// ---------------------------------------------------------------------------
// Sealing: step 4 (flush what this process wrote into other nodes' memory),
// then step 5 at every owner, all owners at once.

Status Client::SealRanges(const std::vector<BufferRange>& ranges, bool flush_remote) {
  QUIVER_ASSIGN_OR_RAISE(auto by_owner, ByOwner(config(), ranges));
  std::vector<std::pair<Link*, Link::Pending>> pending;
  for (auto& [owner, list] : by_owner) {
    if (owner != options_.node && flush_remote &&
        options_.skip_protocol_step_for_testing != 4) {
      for (const auto& r : list) {
        QUIVER_RETURN_NOT_OK(coherence::FlushForProtocol(
            config(), reinterpret_cast<const void*>(r.address), r.length));
      }
    }
    wire::SealRequest req;
    control::ToWire(list, req.mutable_ranges());
    Link* l = core_->link(owner);
    pending.emplace_back(l, l->Start(control::rpc::Method::kSeal, req));
  }
  Status first;
  for (auto& [l, p] : pending) {
    Status st = l->Finish(&p, nullptr, options_.call_timeout_ms);
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

Status Client::Seal(const RecordBatch& batch) {
  return SealRanges(RangesOf(batch), true);
}

Status Client::Seal(const Table& table) {
  QUIVER_ASSIGN_OR_RAISE(auto batches, table.ToRecordBatches());
  std::vector<BufferRange> all;
  for (const auto& b : batches) {
    auto r = RangesOf(*b);
    all.insert(all.end(), r.begin(), r.end());
  }
  return SealRanges(all, true);
}

// ---------------------------------------------------------------------------
// Publishing: one request per home (the lowest node holding a chunk's
// buffers), which seals what lies there, keeps the record and registers
// the chunks on every node before it answers.

Status Client::PublishBatches(const std::vector<RecordBatchPtr>& batches,
                              const std::string& name, const PublishOptions& options) {
  // Two publishers racing for one name can both lose: each home registers
  // its own chunks while telling the others, finds the rival's chunks
  // first at some node, and takes its own back. When the name is then free
  // at this node (a winner would be registered everywhere), the publish is
  // tried again after a random pause that doubles each time, as colliding
  // senders on a shared wire back off; one of the racers gets through and
  // the other then finds the name taken.
  constexpr int kRetries = 6;
  std::optional<std::mt19937_64> random;  // seeded only when a retry needs it
  for (int attempt = 0;; ++attempt) {
    Status st = PublishOnce(batches, name, options);
    if (!st.IsAlreadyExists() || attempt == kRetries) return st;
    wire::LookupReply found;
    Status held = LookupUnpinned(core_->link(options_.node), name,
                                 options_.call_timeout_ms, &found);
    if (!held.IsNotFound()) return st;  // taken (or this node cannot tell)
    if (!random) random.emplace(std::random_device{}());
    std::uniform_int_distribution<int> pause_us(500, 4000 << attempt);
    std::this_thread::sleep_for(std::chrono::microseconds(pause_us(*random)));
  }
}

Status Client::PublishOnce(const std::vector<RecordBatchPtr>& batches,
                           const std::string& name, const PublishOptions& options) {
  struct Planned {
    wire::Chunk chunk;
    std::vector<BufferRange> ranges;
  };
  std::map<uint32_t, std::vector<Planned>> by_home;
  std::vector<std::shared_ptr<Buffer>> scratch;  // alive until published
  std::vector<BufferRange> elsewhere;            // to seal before publishing
  uint64_t row = options.first_row.value_or(0);
  // Every chunk of this call, whatever its home, names the call: a reader
  // takes the table only once all of them are registered.
  uint64_t group = 0;
  while (group == 0) group = control::Handle::Random().lo;
  for (const auto& batch : batches) {
    Planned p;
    QUIVER_ASSIGN_OR_RAISE(
        std::string desc,
        control::EncodeDescriptor(*batch, local_pool(), &p.ranges, &scratch));
    QUIVER_ASSIGN_OR_RAISE(auto owners, ByOwner(config(), p.ranges));
    // A local-only table is registered by this node's daemon, wherever its
    // memory is; any other chunk by the lowest node holding its buffers.
    const uint32_t home =
        owners.empty() || options.local_only ? options_.node : owners.begin()->first;
    for (auto& [owner, list] : owners) {
      if (owner != options_.node && options_.skip_protocol_step_for_testing != 4) {
        for (const auto& r : list) {
          QUIVER_RETURN_NOT_OK(coherence::FlushForProtocol(
              config(), reinterpret_cast<const void*>(r.address), r.length));
        }
      }
      if (owner != home) elsewhere.insert(elsewhere.end(), list.begin(), list.end());
    }
    p.chunk.set_batch_descriptor(std::move(desc));
    p.chunk.set_first_row(row);
    p.chunk.set_num_rows(static_cast<uint64_t>(batch->num_rows()));
    p.chunk.set_local_only(options.local_only);
    p.chunk.set_group(group);
    p.chunk.set_group_chunks(static_cast<uint32_t>(batches.size()));
    row += static_cast<uint64_t>(batch->num_rows());
    by_home[home].push_back(std::move(p));
  }
  // A table spread over several homes is registered piece by piece: its
  // chunks are placed by row, as a HugeTable's are.
  const bool explicit_rows = options.first_row.has_value() || by_home.size() > 1;
  if (!elsewhere.empty()) QUIVER_RETURN_NOT_OK(SealRanges(elsewhere, false));
  std::vector<std::tuple<uint32_t, Link*, Link::Pending>> pending;
  for (auto& [home, planned] : by_home) {
    wire::PublishRequest req;
    req.set_name(name);
    req.set_seal(true);
    for (auto& p : planned) {
      p.chunk.set_explicit_rows(explicit_rows);
      *req.add_chunks() = std::move(p.chunk);
    }
    Link* l = core_->link(home);
    pending.emplace_back(home, l, l->Start(control::rpc::Method::kPublish, req));
  }
  Status first;
  std::vector<std::pair<Link*, std::vector<uint64_t>>> done;
  for (auto& [home, l, p] : pending) {
    wire::PublishReply rep;
    Status st = l->Finish(&p, &rep, options_.call_timeout_ms);
    if (st.ok()) {
      done.emplace_back(
          l, std::vector<uint64_t>(rep.chunk_ids().begin(), rep.chunk_ids().end()));
    } else if (first.ok()) {
      first = st;
    }
  }
  if (!first.ok()) {
    // All or nothing: take back what other homes registered.
    for (auto& [l, ids] : done) {
      wire::UnpublishRequest un;
      un.set_name(name);
      for (uint64_t id : ids) un.add_chunk_ids(id);
      (void)l->Call(control::rpc::Method::kUnpublish, un, nullptr,
                    options_.call_timeout_ms);
    }
  }
  return first;
}

Status Client::Publish(const RecordBatchPtr& batch, const std::string& name,
                       const PublishOptions& options) {
  if (batch == nullptr) return Status::Invalid("Publish of a null batch");
  return PublishBatches({batch}, name, options);
}

Status Client::Publish(const TablePtr& table, const std::string& name,
                       const PublishOptions& options) {
  if (table == nullptr) return Status::Invalid("Publish of a null table");
  QUIVER_ASSIGN_OR_RAISE(auto batches, table->ToRecordBatches());
  if (batches.empty() && table->num_rows() == 0 && table->num_columns() > 0) {
    // No rows: its first (empty) chunks keep the schema, in cluster memory.
    std::vector<ArrayPtr> columns;
    for (const auto& column : table->columns()) {
      if (column->num_chunks() == 0) break;
      columns.push_back(column->chunk(0));
    }
    if (columns.size() == static_cast<size_t>(table->num_columns())) {
      batches.push_back(RecordBatch::Make(table->schema(), 0, columns));
    }
  }
  if (batches.empty()) return Status::Invalid("Publish of a table without batches");
  return PublishBatches(batches, name, options);
}

Status Client::Unpublish(const std::string& name) {
  // Whole publishes only: a publish whose chunks lie at several homes goes
  // from all of them or from none, so no reader is ever left a part of one.
  // First every node says what it would remove (chunks are homed where
  // their memory is, and a table registered for one node only is known to
  // that node alone); then only publishes that no home refused are removed,
  // by chunk id. The homes of the table's chunks (this node's replica
  // knows them all) must all answer, or nothing is removed.
  std::set<uint32_t> homes;
  {
    wire::LookupReply found;
    Status st = LookupUnpinned(core_->link(options_.node), name, options_.call_timeout_ms,
                               &found);
    if (!st.ok() && !st.IsNotFound()) return st;
    for (const auto& c : found.chunks()) {
      if (!c.local_only()) homes.insert(c.home());
    }
  }
  struct Answer {
    uint32_t node = 0;
    Link* link = nullptr;
    Link::Pending pending;
    Status status;
    wire::UnpublishReply reply;
  };
  std::vector<Answer> answers;
  for (const auto& n : config().nodes) {
    wire::UnpublishRequest req;
    req.set_name(name);
    req.set_check(true);
    Answer a;
    a.node = n.id;
    a.link = core_->link(n.id);
    a.pending = a.link->Start(control::rpc::Method::kUnpublish, req);
    answers.push_back(std::move(a));
  }
  Status refused, unreachable;
  std::set<uint64_t> refused_groups;
  for (auto& a : answers) {
    a.status = a.link->Finish(&a.pending, &a.reply, options_.call_timeout_ms);
    const Status& st = a.status;
    if (st.ok()) {
      refused_groups.insert(a.reply.refused_groups().begin(),
                            a.reply.refused_groups().end());
      if (!a.reply.refused().empty() && refused.ok()) {
        refused = Status::PermissionDenied(a.reply.refused());
      }
    } else if (st.code() == StatusCode::kPermissionDenied) {
      if (refused.ok()) refused = st;
    } else if (st.code() == StatusCode::kUnavailable ||
               st.code() == StatusCode::kDeadlineExceeded) {
      if (homes.count(a.node) != 0) {
        return Status::Unavailable(
            "node ", a.node, ", a home of chunks of '", name, "', did not answer (",
            st.message(), "): nothing was unpublished; try again once it is back");
      }
      // A node that is down keeps its own local-only tables (lost until back).
      if (unreachable.ok()) unreachable = st;
    } else if (!st.IsNotFound()) {
      return st;
    }
  }
  // Chunks of publishes no home refused, by home.
  std::map<uint32_t, std::vector<uint64_t>> remove_at;
  for (auto& a : answers) {
    if (!a.status.ok()) continue;
    for (int i = 0; i < a.reply.chunk_ids_size(); ++i) {
      const uint64_t group = i < a.reply.groups_size() ? a.reply.groups(i) : 0;
      if (group != 0 && refused_groups.count(group) != 0) continue;
      remove_at[a.node].push_back(a.reply.chunk_ids(i));
    }
  }
  if (remove_at.empty()) {
    if (!refused.ok()) return refused;
    if (!unreachable.ok()) return unreachable;
    return Status::NotFound("no table '", name, "' is published on any node");
  }
  std::vector<std::tuple<uint32_t, Link*, Link::Pending>> pending;
  for (auto& [node, ids] : remove_at) {
    wire::UnpublishRequest req;
    req.set_name(name);
    for (uint64_t id : ids) req.add_chunk_ids(id);
    Link* l = core_->link(node);
    pending.emplace_back(node, l, l->Start(control::rpc::Method::kUnpublish, req));
  }
  std::string done, failed;
  Status first_failure;
  for (auto& [node, l, p] : pending) {
    wire::UnpublishReply rep;
    Status st = l->Finish(&p, &rep, options_.call_timeout_ms);
    if (st.ok() || st.IsNotFound()) {  // NotFound: someone removed them first
      done += (done.empty() ? "" : ", ") + std::to_string(node);
      continue;
    }
    failed += (failed.empty() ? "" : ", ") + std::to_string(node);
    if (first_failure.ok()) first_failure = st;
  }
  if (first_failure.ok()) return Status::OK();
  if (done.empty()) return first_failure;
  // A home failed between the check and the removal (it died): the rest of
  // its publishes is left, and fails to read as incomplete until removed.
  return Status::Unavailable("'", name, "' was unpublished at node(s) ", done,
                             " but not at node(s) ", failed, " (",
                             first_failure.message(),
                             "); what is left cannot be read; unpublish it again");
}

// ---------------------------------------------------------------------------
// Reading: the chunks from this node's daemon (which pins what lies in its
// region), then pins at every other owner at once.

Result<std::vector<control::PositionedChunk>> Client::GetChunks(
    const std::string& name, const GetOptions& options) {
  wire::LookupRequest look;
  look.set_name(name);
  look.set_wait_ms(options.wait_ms);
  look.set_min_chunks(options.min_chunks);
  look.set_pin(true);
  wire::LookupReply found;
  Link* own = core_->link(options_.node);
  QUIVER_RETURN_NOT_OK(
      own->Call(control::rpc::Method::kLookup, look, &found,
                control::client::WithWait(options_.call_timeout_ms, options.wait_ms)));
  auto pins = std::make_shared<PinSet>();
  pins->core = core_;
  std::map<uint32_t, std::vector<uint64_t>> ids_at;
  for (const auto& c : found.chunks()) {
    for (uint32_t o : c.owners()) ids_at[o].push_back(c.id());
  }
  if (!found.pin().empty()) {
    pins->pins.push_back(core_->AddPin(options_.node, found.pin(), own->view().epoch,
                                       ids_at[options_.node], {}));
  }
  for (int attempt = 0;; ++attempt) {
    std::vector<std::tuple<uint32_t, Link*, Link::Pending>> pending;
    for (uint32_t owner : found.pin_owners()) {
      bool have = false;
      for (auto& p : pins->pins) have = have || p->owner == owner;
      if (have) continue;
      wire::PinRequest req;
      for (uint64_t id : ids_at[owner]) req.add_chunk_ids(id);
      Link* l = core_->link(owner);
      if (l == nullptr)
        return Status::IOError("chunk owner ", owner, " is not in the config");
      pending.emplace_back(owner, l, l->Start(control::rpc::Method::kPin, req));
    }
    Status missing;
    for (auto& [owner, l, p] : pending) {
      wire::PinReply rep;
      Status st = l->Finish(&p, &rep, options_.call_timeout_ms);
      if (st.ok()) {
        pins->pins.push_back(
            core_->AddPin(owner, rep.pin(), l->view().epoch, ids_at[owner], {}));
      } else if (missing.ok()) {
        missing = st;
      }
    }
    if (missing.ok()) break;
    // An owner may not have the chunks registered yet (it registers them
    // while the home answers the publisher): a moment later it has.
    if (missing.code() != StatusCode::kNotFound || attempt == 5) {
      return missing.WithContext("pinning '" + name + "'");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Only ranges inside regions mapped here are accepted. In a region seen
  // through the non-coherent emulator this process is a node's cache of its
  // own: it drops its copies of the object's lines, as every node's daemon
  // did for its node when the object was allocated (protocol step 2).
  auto validator = [this](uint64_t address, uint64_t length) -> Status {
    const void* p = reinterpret_cast<const void*>(address);
    if (cluster()->RegionOf(p, length) == nullptr) {
      return Status::Invalid("buffer [", Hex(address), ", +", length,
                             ") is not inside a region mapped in this process");
    }
    Status st;
    if (memory::FlushIfEmulated(p, length, &st)) QUIVER_RETURN_NOT_OK(st);
    return Status::OK();
  };
  std::vector<control::PositionedChunk> out;
  std::map<uint32_t, std::vector<BufferRange>> read_at;
  auto context = [&](const wire::Chunk& c) {
    return "chunk of node " + std::to_string(c.publisher()) + " at row " +
           std::to_string(c.first_row()) + " of '" + name + "'";
  };
  // Chunks in memory this process cannot map: their rows come over the
  // transport from each chunk's home into this node's region (the pins
  // taken above hold them at their owners meanwhile), every home at once,
  // while the others are decoded here.
  std::map<uint32_t, std::vector<const wire::Chunk*>> far_at;
  std::set<const wire::Chunk*> far;
  for (const auto& c : found.chunks()) {
    bool mapped = true;
    for (uint32_t o : c.owners()) mapped = mapped && cluster()->region(o) != nullptr;
    if (mapped) continue;
    far_at[c.home()].push_back(&c);
    far.insert(&c);
  }
  struct Fetched {
    std::vector<control::PositionedChunk> chunks;
    Status status;
  };
  std::map<uint32_t, Fetched> fetched;
  std::vector<std::thread> fetchers;
  for (auto& [home, list] : far_at) {
    Fetched* into = &fetched[home];
    const std::vector<const wire::Chunk*>* chunks =
        &list;  // (clang: no binding captures)
    fetchers.emplace_back([this, into, chunks, &context] {
      for (const wire::Chunk* c : *chunks) {
        auto got = FetchFar(c->id(), c->home(), c->batch_descriptor());
        if (!got.ok()) {
          into->status = got.status().WithContext(context(*c));
          return;
        }
        uint64_t row = c->first_row();
        for (auto& b : *got) {
          const auto n = static_cast<uint64_t>(b->num_rows());
          into->chunks.push_back({row, c->publisher(), std::move(b)});
          row += n;
        }
      }
    });
  }
  Status near = [&]() -> Status {
    for (const auto& c : found.chunks()) {
      if (far.count(&c) != 0) continue;
      auto batch = control::DecodeDescriptor(c.batch_descriptor(), validator, pins);
      if (!batch.ok()) return batch.status().WithContext(context(c));
      auto by_owner = ByOwner(config(), RangesOf(**batch));
      if (by_owner.ok()) {
        for (auto& [o, list] : *by_owner) {
          read_at[o].insert(read_at[o].end(), list.begin(), list.end());
        }
      }
      out.push_back({c.first_row(), c.publisher(), std::move(*batch)});
    }
    return Status::OK();
  }();
  for (auto& t : fetchers) t.join();
  QUIVER_RETURN_NOT_OK(near);
  for (auto& [home, f] : fetched) {
    QUIVER_RETURN_NOT_OK(f.status);
    for (auto& c : f.chunks) out.push_back(std::move(c));
  }
  // What each pin covers, should its owner restart and need it re-claimed.
  for (auto& p : pins->pins) {
    std::lock_guard<std::mutex> lock(p->mu);
    p->ranges = read_at[p->owner];
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.first_row < b.first_row; });
  return out;
}

Result<std::vector<RecordBatchPtr>> Client::FetchFar(uint64_t id, uint32_t home,
                                                     const std::string& descriptor) {
  // Only the framing and schema: the addresses are not this process's.
  QUIVER_ASSIGN_OR_RAISE(
      auto info, control::InspectDescriptor(
                     descriptor, [](uint64_t, uint64_t) { return Status::OK(); }));
  return core_->far()->Fetch(id, home, info, core_);
}

Result<TablePtr> Client::Get(const std::string& name, const GetOptions& options) {
  QUIVER_ASSIGN_OR_RAISE(auto chunks, GetChunks(name, options));
  std::vector<RecordBatchPtr> batches;
  for (auto& c : chunks) batches.push_back(c.batch);
  return Table::FromRecordBatches(batches);
}

Result<TablePtr> Client::GetHugeTable(const std::string& name,
                                      const GetOptions& options) {
  QUIVER_ASSIGN_OR_RAISE(auto chunks, GetChunks(name, options));
  auto table = control::AssembleHugeTable(std::move(chunks));
  if (!table.ok()) return table.status().WithContext("HugeTable '" + name + "'");
  return table;
}

}  // namespace quiver
