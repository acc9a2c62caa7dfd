#include "quiver/client.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "control/object_tag.h"
#include "quiver/coherence/flush.h"
#include "quiver/columnar/ipc/writer.h"
#include "quiver/control/descriptor.h"
#include "quiver/memory/incoherent.h"

namespace quiver {

using control::BufferRange;
using util::Hex;

namespace {

constexpr int kFlushCallMs = 5000;
constexpr int64_t kPieceBytes = 1 << 20;

// Releases a Get's pin when the last array of it is gone.
struct PinHandle {
  std::shared_ptr<control::NodeClient> daemon;
  uint64_t pin = 0;
  ~PinHandle() {
    rpc::ReleaseRequest req;
    req.set_pin(pin);
    rpc::Empty rep;
    (void)daemon->Call(&rpc::Node::Stub::Release, &req, &rep, 5000, "Release");
  }
};

}  // namespace

// What a publisher keeps alive until Unpublish: the batches, and the
// buffers the descriptors needed anew (re-based offsets of sliced arrays).
struct Client::PublishedEntry {
  std::vector<RecordBatchPtr> batches;
  std::vector<std::shared_ptr<Buffer>> scratch;
};

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  std::unique_ptr<Client> c(new Client());
  c->options_ = options;
  c->node_ = options.node;
  c->pid_ = static_cast<int32_t>(getpid());
  QUIVER_ASSIGN_OR_RAISE(memory::ClusterConfig config,
                         memory::LoadClusterConfig(options.config_path));
  if (config.FindNode(options.node) == nullptr) {
    return Status::Invalid("node ", options.node, " is not in ", options.config_path);
  }
  memory::ClusterMap::Options mo;
  mo.create_own_region = false;
  mo.wait_ready_ms = options.connect_timeout_ms;
  QUIVER_ASSIGN_OR_RAISE(c->map_, memory::ClusterMap::Open(config, options.node, mo));
  const auto& cfg = c->map_->config();
  for (const auto& n : cfg.nodes) {
    c->rpcs_[n.id] = control::NodeClient::Make(control::NodeTarget(n, n.id == c->node_),
                                               cfg.token, n.id, c->node_, c->pid_);
  }
  // The local daemon must answer before anything else is done.
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(options.connect_timeout_ms);
  for (;;) {
    rpc::PingRequest req;
    rpc::PingReply rep;
    Status st = c->rpc(c->node_)->Call(&rpc::Node::Stub::Ping, &req, &rep, 1000, "Ping");
    if (st.ok()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      return st.WithContext("connecting to the daemon of node " +
                            std::to_string(c->node_));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Pools: the local one works under the allocator's lock; the others ask
  // the owners.
  Client* self = c.get();
  auto* alloc = c->map_->local_region()->allocator();
  if (alloc == nullptr) return Status::Invalid("this node's region has no allocator");
  auto local = std::make_unique<memory::RegionMemoryPool>(alloc, c->node_);
  local->set_on_alloc([self, alloc](uint8_t* p, uint64_t size) {
    QUIVER_RETURN_NOT_OK(alloc->SetTag(p, control::tag::Make(self->node_)));
    return self->PreWriteFlush(reinterpret_cast<uint64_t>(p), size);
  });
  local->set_free_check([self](const memory::AllocationInfo& info) {
    return control::tag::CheckFree(info, self->node_);
  });
  c->pools_[c->node_] = std::move(local);
  for (const auto& n : cfg.nodes) {
    if (n.id == c->node_) continue;
    c->pools_[n.id] = std::make_unique<memory::RemoteMemoryPool>(n.id, self);
  }
  return c;
}

Client::~Client() {
  // Published objects outlive this client and this process (readers may
  // hold them): their arrays are never destroyed, as their pools die with
  // this client. They stay reachable from here for the process's lifetime.
  static auto* orphans = new std::vector<std::unique_ptr<PublishedEntry>>();
  static std::mutex orphans_mu;
  std::lock_guard<std::mutex> lock(mu_);
  std::lock_guard<std::mutex> lock2(orphans_mu);
  for (auto& [name, entry] : published_) orphans->push_back(std::move(entry));
}

MemoryPool* Client::pool(uint32_t node) {
  auto it = pools_.find(node);
  return it == pools_.end() ? nullptr : it->second.get();
}

control::NodeClient* Client::rpc(uint32_t node) {
  auto it = rpcs_.find(node);
  return it == rpcs_.end() ? nullptr : it->second.get();
}

// ---------------------------------------------------------------------------
// The coherency protocol

Status Client::PreWriteFlush(uint64_t address, uint64_t size) {
  if (size == 0 || options_.skip_protocol_step_for_testing == 2) return Status::OK();
  QUIVER_RETURN_NOT_OK(
      coherence::FlushRange(reinterpret_cast<const void*>(address), size));
  for (auto& [id, client] : rpcs_) {
    if (id == node_) continue;  // this node's caches: the flush above
    rpc::FlushRequest req;
    control::AddRanges({{address, size}}, req.mutable_ranges());
    rpc::Empty rep;
    // Not waiting for an unreachable node: a node that is down holds
    // nothing in its caches.
    Status st = client->Call(&rpc::Node::Stub::Flush, &req, &rep, kFlushCallMs, "Flush",
                             /*wait_for_ready=*/false);
    if (!st.ok() && st.code() != StatusCode::kUnavailable) return st;
  }
  return Status::OK();
}

Result<uint64_t> Client::RemoteAllocate(uint32_t node, uint64_t size,
                                        uint64_t alignment) {
  rpc::MallocRequest req;
  req.set_size(size);
  req.set_alignment(alignment);
  rpc::MallocReply rep;
  QUIVER_RETURN_NOT_OK(rpc(node)->Call(&rpc::Node::Stub::Malloc, &req, &rep,
                                       options_.call_timeout_ms, "Malloc"));
  Status st = PreWriteFlush(rep.address(), rep.size());
  if (!st.ok()) {
    (void)RemoteFree(node, rep.address());
    return st;
  }
  return rep.address();
}

Result<uint64_t> Client::RemoteReallocate(uint32_t node, uint64_t address,
                                          uint64_t new_size, uint64_t alignment) {
  // What this process wrote must be in memory before the owner copies it.
  auto* region = map_->region(node);
  if (region == nullptr) return Status::Invalid("no node ", node);
  // The old size is not known here: write back up to the new size or the
  // region's end, whichever is smaller (writing back clean lines is cheap).
  const uint64_t end = reinterpret_cast<uint64_t>(region->base()) + region->size();
  QUIVER_RETURN_NOT_OK(coherence::FlushRange(reinterpret_cast<const void*>(address),
                                             std::min(new_size, end - address)));
  rpc::ReallocRequest req;
  req.set_address(address);
  req.set_new_size(new_size);
  req.set_alignment(alignment);
  rpc::MallocReply rep;
  QUIVER_RETURN_NOT_OK(rpc(node)->Call(&rpc::Node::Stub::Realloc, &req, &rep,
                                       options_.call_timeout_ms, "Realloc"));
  QUIVER_RETURN_NOT_OK(PreWriteFlush(rep.address(), rep.size()));
  return rep.address();
}

Status Client::RemoteFree(uint32_t node, uint64_t address) {
  rpc::FreeRequest req;
  req.set_address(address);
  rpc::Empty rep;
  return rpc(node)->Call(&rpc::Node::Stub::Free, &req, &rep, options_.call_timeout_ms,
                         "Free");
}

Status Client::SealRanges(const std::vector<BufferRange>& ranges, bool remote_too) {
  auto grouped = control::GroupByOwner(config(), ranges);
  if (!grouped.ok()) {
    return grouped.status().WithContext("sealing: build with a pool of quiver::Client");
  }
  const control::RangesByNode& by_owner = *grouped;
  for (auto& [owner, list] : by_owner) {
    if (owner == node_) {
      auto* alloc = map_->local_region()->allocator();
      for (const auto& r : list) {
        QUIVER_RETURN_NOT_OK(
            alloc
                ->UpdateTag(reinterpret_cast<const uint8_t*>(r.address), r.length, true,
                            [&](const memory::AllocationInfo&, uint64_t* t) {
                              *t |= control::tag::kSealed;
                              return Status::OK();
                            })
                .status());
      }
      continue;
    }
    if (!remote_too) continue;
    // Step 4: what this process wrote into another node's memory leaves its
    // caches (FlushRange fences before and after).
    for (const auto& r : list) {
      if (options_.skip_protocol_step_for_testing == 4) break;
      QUIVER_RETURN_NOT_OK(
          coherence::FlushRange(reinterpret_cast<const void*>(r.address), r.length));
    }
    rpc::SealRequest req;
    control::AddRanges(list, req.mutable_ranges());
    rpc::Empty rep;
    QUIVER_RETURN_NOT_OK(rpc(owner)->Call(&rpc::Node::Stub::Seal, &req, &rep,
                                          options_.call_timeout_ms, "Seal"));
  }
  return Status::OK();
}

namespace {
// Every buffer the batch references (children and dictionaries included),
// whole: a sliced array still seals the allocations it lies in.
void CollectRanges(const ArrayData& d, std::vector<BufferRange>* out) {
  for (const auto& b : d.buffers) {
    if (b != nullptr && b->size() > 0) {
      out->push_back(
          {reinterpret_cast<uint64_t>(b->data()), static_cast<uint64_t>(b->size())});
    }
  }
  for (const auto& c : d.child_data) CollectRanges(*c, out);
  if (d.dictionary) CollectRanges(*d.dictionary, out);
}
}  // namespace

Status Client::Seal(const RecordBatch& batch) {
  std::vector<BufferRange> ranges;
  for (int i = 0; i < batch.num_columns(); ++i)
    CollectRanges(*batch.column(i)->data(), &ranges);
  return SealRanges(ranges);
}

Status Client::Seal(const Table& table) {
  QUIVER_ASSIGN_OR_RAISE(auto batches, table.ToRecordBatches());
  for (const auto& b : batches) QUIVER_RETURN_NOT_OK(Seal(*b));
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Publishing

Status Client::PublishBatches(const std::vector<RecordBatchPtr>& batches,
                              const std::string& name, const PublishOptions& options) {
  auto entry = std::make_unique<PublishedEntry>();
  uint64_t row = options.first_row;
  for (const auto& batch : batches) {
    std::vector<BufferRange> ranges;
    QUIVER_ASSIGN_OR_RAISE(
        std::string desc,
        control::EncodeDescriptor(*batch, local_pool(), &ranges, &entry->scratch));
    QUIVER_RETURN_NOT_OK(SealRanges(ranges, !options.sealed));
    rpc::PublishRequest req;
    req.set_name(name);
    req.set_local_only(options.local_only);
    auto* chunk = req.mutable_chunk();
    chunk->set_first_row(row);
    chunk->set_num_rows(static_cast<uint64_t>(batch->num_rows()));
    chunk->set_batch_descriptor(std::move(desc));
    rpc::Empty rep;
    QUIVER_RETURN_NOT_OK(rpc(node_)->Call(&rpc::Node::Stub::Publish, &req, &rep,
                                          options_.call_timeout_ms, "Publish"));
    row += static_cast<uint64_t>(batch->num_rows());
    entry->batches.push_back(batch);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = published_[name];
  if (slot) {
    slot->batches.insert(slot->batches.end(), entry->batches.begin(),
                         entry->batches.end());
    slot->scratch.insert(slot->scratch.end(), entry->scratch.begin(),
                         entry->scratch.end());
  } else {
    slot = std::move(entry);
  }
  return Status::OK();
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
  return PublishBatches(batches, name, options);
}

Status Client::Unpublish(const std::string& name) {
  rpc::UnpublishRequest req;
  req.set_name(name);
  rpc::Empty rep;
  QUIVER_RETURN_NOT_OK(rpc(node_)->Call(&rpc::Node::Stub::Unpublish, &req, &rep,
                                        options_.call_timeout_ms, "Unpublish"));
  std::unique_ptr<PublishedEntry> entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = published_.find(name);
    if (it != published_.end()) {
      entry = std::move(it->second);
      published_.erase(it);
    }
  }
  // The creator frees (when the caller holds no more references).
  entry.reset();
  return Status::OK();
}

Result<std::vector<control::PositionedChunk>> Client::GetChunks(
    const std::string& name, const GetOptions& options) {
  rpc::GetRequest req;
  req.set_name(name);
  req.set_wait_ms(options.wait_ms);
  req.set_min_chunks(options.min_chunks);
  rpc::GetReply rep;
  const int timeout = options_.call_timeout_ms + static_cast<int>(options.wait_ms);
  QUIVER_RETURN_NOT_OK(
      rpc(node_)->Call(&rpc::Node::Stub::Get, &req, &rep, timeout, "Get"));
  auto pin = std::make_shared<PinHandle>();
  pin->daemon = rpcs_[node_];
  pin->pin = rep.pin();
  // Only ranges inside regions mapped here are accepted. In a region seen
  // through the non-coherent emulator this process is a node's cache of its
  // own: it drops its copies of the object's lines, as every node's daemon
  // did for its node at allocation (protocol step 2).
  auto validator = [this](uint64_t address, uint64_t length) -> Status {
    const void* p = reinterpret_cast<const void*>(address);
    if (map_->RegionOf(p, length) == nullptr) {
      return Status::Invalid("buffer [", Hex(address), ", +", length,
                             ") is not inside a region mapped in this process");
    }
    Status st;
    if (memory::FlushIfEmulated(p, length, &st)) QUIVER_RETURN_NOT_OK(st);
    return Status::OK();
  };
  std::vector<control::PositionedChunk> out;
  for (const auto& c : rep.chunks()) {
    auto batch = control::DecodeDescriptor(c.batch_descriptor(), validator, pin);
    if (!batch.ok()) {
      return batch.status().WithContext("chunk of node " + std::to_string(c.publisher()) +
                                        " at row " + std::to_string(c.first_row()) +
                                        " of '" + name + "'");
    }
    out.push_back({c.first_row(), c.publisher(), std::move(*batch)});
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.first_row < b.first_row; });
  return out;
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

// ---------------------------------------------------------------------------
// The full-copy baseline

Result<SendFullStats> Client::SendTableFull(const TablePtr& table,
                                            const std::string& name, uint64_t first_row,
                                            std::vector<uint32_t> nodes) {
  if (table == nullptr) return Status::Invalid("SendTableFull of a null table");
  if (nodes.empty()) {
    for (const auto& n : config().nodes) {
      if (n.id != node_) nodes.push_back(n.id);
    }
  }
  for (uint32_t n : nodes) {
    if (rpc(n) == nullptr) return Status::Invalid("no node ", n, " in the cluster");
  }
  QUIVER_ASSIGN_OR_RAISE(auto stream,
                         ipc::SerializeTable(*table, ipc::IpcFormat::kStream));
  std::vector<Status> results(nodes.size());
  std::vector<std::thread> senders;
  for (size_t i = 0; i < nodes.size(); ++i) {
    senders.emplace_back([&, i] {
      // The receiver's TCP address even on this node: the baseline is a
      // network transfer.
      const auto* cfg = config().FindNode(nodes[i]);
      auto client =
          control::NodeClient::Make(cfg->control, config().token, nodes[i], node_, pid_);
      grpc::ClientContext ctx;
      client->Prepare(&ctx, options_.call_timeout_ms);
      rpc::SendTableFullReply reply;
      auto writer = client->stub()->SendTableFull(&ctx, &reply);
      const int64_t total = stream->size();
      for (int64_t off = 0; off < total || off == 0; off += kPieceBytes) {
        rpc::TablePiece piece;
        if (off == 0) {
          client->FillCaller(piece.mutable_caller());
          piece.set_name(name);
          piece.set_total_bytes(static_cast<uint64_t>(total));
          piece.set_first_row(first_row);
        }
        piece.set_data(stream->data() + off,
                       static_cast<size_t>(std::min<int64_t>(kPieceBytes, total - off)));
        if (!writer->Write(piece)) break;
      }
      writer->WritesDone();
      results[i] = client->Check(writer->Finish(), "SendTableFull");
      if (results[i].ok() &&
          reply.num_rows() != static_cast<uint64_t>(table->num_rows())) {
        results[i] = Status::IOError("node ", nodes[i], " decoded ", reply.num_rows(),
                                     " rows of ", table->num_rows());
      }
    });
  }
  for (auto& t : senders) t.join();
  for (auto& st : results) QUIVER_RETURN_NOT_OK(st);
  SendFullStats stats;
  stats.stream_bytes = static_cast<uint64_t>(stream->size());
  stats.bytes_sent = stats.stream_bytes * nodes.size();
  stats.rows = static_cast<uint64_t>(table->num_rows());
  stats.receivers = static_cast<uint32_t>(nodes.size());
  return stats;
}

// ---------------------------------------------------------------------------
// Barriers and catalogue

Status Client::SetState(uint64_t flags, uint64_t mask) {
  rpc::SetStateRequest req;
  req.set_flags(flags);
  req.set_mask(mask);
  rpc::Empty rep;
  return rpc(node_)->Call(&rpc::Node::Stub::SetState, &req, &rep,
                          options_.call_timeout_ms, "SetState");
}

Status Client::SyncWait(uint64_t flags, uint64_t mask, int timeout_ms,
                        std::vector<uint32_t> nodes) {
  rpc::SyncWaitRequest req;
  req.set_flags(flags);
  req.set_mask(mask);
  req.set_timeout_ms(static_cast<uint32_t>(timeout_ms));
  for (uint32_t n : nodes) req.add_nodes(n);
  rpc::Empty rep;
  return rpc(node_)->Call(&rpc::Node::Stub::SyncWait, &req, &rep, timeout_ms + 5000,
                          "SyncWait");
}

Status Client::WaitAllOnline(int timeout_ms) {
  rpc::WaitAllOnlineRequest req;
  req.set_timeout_ms(static_cast<uint32_t>(timeout_ms));
  rpc::Empty rep;
  return rpc(node_)->Call(&rpc::Node::Stub::WaitAllOnline, &req, &rep, timeout_ms + 5000,
                          "WaitAllOnline");
}

Result<rpc::ListReply> Client::List() {
  rpc::ListRequest req;
  rpc::ListReply rep;
  QUIVER_RETURN_NOT_OK(rpc(node_)->Call(&rpc::Node::Stub::List, &req, &rep,
                                        options_.call_timeout_ms, "List"));
  return rep;
}

Result<rpc::StatusReply> Client::ClusterStatus() {
  rpc::StatusRequest req;
  rpc::StatusReply rep;
  QUIVER_RETURN_NOT_OK(rpc(node_)->Call(&rpc::Node::Stub::Status, &req, &rep,
                                        options_.call_timeout_ms, "Status"));
  return rep;
}

}  // namespace quiver
