// The Quiver client library: what an application links to share Arrow data
// across the cluster (DESIGN.md §4, §6).
//
//   auto client = quiver::Client::Connect({.config_path = "cluster.toml", .node = 0});
//   quiver::Int64Builder b((*client)->pool(2));   // build straight into node 2's memory
//   ...
//   (*client)->Publish(batch, "prices");           // a descriptor of a few hundred bytes
//   // on any node:
//   auto table = other->Get("prices");             // zero-copy, pinned while referenced
//
// A Client maps every region of the cluster at its base address, talks to
// its node's daemon over the Unix socket and to other nodes' daemons over
// TCP (remote allocation goes straight to the owner). It runs the coherency
// protocol itself: the pools flush newly allocated ranges on every node
// (step 2), Seal/Publish flush what was written into other nodes' memory
// (step 4) and mark the objects sealed (step 5); user code never flushes.
// Thread-safe. Arrays built from a Client's pools must not outlive it;
// published objects do (they stay until unpublished, even after the
// publishing process exits).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "quiver/columnar/table.h"
#include "quiver/control/descriptor.h"
#include "quiver/control/huge_table.h"
#include "quiver/control/node_client.h"
#include "quiver/memory/region.h"
#include "quiver/memory/region_pool.h"

namespace quiver {

struct ClientOptions {
  std::string config_path;
  uint32_t node = 0;               // the node this process runs on
  int connect_timeout_ms = 10000;  // waiting for the regions and the daemon
  int call_timeout_ms = 60000;     // per RPC (streams: per whole stream)
  // For tests only: leave out one step of the coherency protocol to show,
  // on the non-coherent emulator, that it is needed (2: the pre-write
  // flush; 4: the writer's flush before sealing). 0 in production.
  int skip_protocol_step_for_testing = 0;
};

struct GetOptions {
  uint32_t wait_ms = 0;     // wait this long for the name (and chunks) to appear
  uint32_t min_chunks = 1;  // and for at least this many chunks
};

struct PublishOptions {
  uint64_t first_row = 0;   // where the batch's rows start in the (Huge)Table
  bool local_only = false;  // register on this node only
  // The caller already ran Seal on these batches: what lies in other
  // nodes' memory is not flushed and sealed again.
  bool sealed = false;
};

struct SendFullStats {
  uint64_t stream_bytes = 0;  // size of the IPC stream
  uint64_t bytes_sent = 0;    // over all receivers
  uint64_t rows = 0;
  uint32_t receivers = 0;
};

class Client final : public memory::RemoteAllocator {
 public:
  static Result<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  ~Client() override;

  uint32_t node_id() const { return node_; }
  const memory::ClusterConfig& config() const { return map_->config(); }
  memory::ClusterMap* cluster() { return map_.get(); }

  // A pool allocating in `node`'s region (this node's: directly under the
  // allocator's lock; another node's: by RPC to its owner). Null if there
  // is no such node.
  MemoryPool* pool(uint32_t node);
  MemoryPool* local_pool() { return pool(node_); }

  // Protocol steps 4 and 5 for every buffer of the batch or table: flush
  // what this process wrote into other nodes' memory and mark the
  // allocations sealed at their owners. Every buffer must lie in cluster
  // memory (built with one of this client's pools).
  Status Seal(const RecordBatch& batch);
  Status Seal(const Table& table);

  // Seals and publishes to every node as descriptors (one per batch).
  // The client keeps the published batches alive until Unpublish.
  Status Publish(const RecordBatchPtr& batch, const std::string& name,
                 const PublishOptions& options = {});
  Status Publish(const TablePtr& table, const std::string& name,
                 const PublishOptions& options = {});
  Status Unpublish(const std::string& name);

  // The chunks published under `name`, zero-copy: their buffers point into
  // cluster memory. The objects stay pinned at their owners until every
  // returned array is gone (or this process dies).
  Result<std::vector<control::PositionedChunk>> GetChunks(const std::string& name,
                                                          const GetOptions& options = {});
  // All chunks as one table, ordered by first row.
  Result<TablePtr> Get(const std::string& name, const GetOptions& options = {});
  // A HugeTable: every node's chunk, ordered by first row, with no gap or
  // overlap allowed.
  Result<TablePtr> GetHugeTable(const std::string& name, const GetOptions& options = {});

  // The full-copy baseline: the table as an Arrow IPC stream with all its
  // data to every node in `nodes` (default: every other node), where the
  // daemon stores it in its own region and registers it under `name`
  // for readers on that node.
  Result<SendFullStats> SendTableFull(const TablePtr& table, const std::string& name,
                                      uint64_t first_row = 0,
                                      std::vector<uint32_t> nodes = {});

  // Barriers over the nodes' state words.
  Status SetState(uint64_t flags, uint64_t mask);
  Status SyncWait(uint64_t flags, uint64_t mask, int timeout_ms,
                  std::vector<uint32_t> nodes = {});
  Status WaitAllOnline(int timeout_ms);

  Result<rpc::ListReply> List();
  Result<rpc::StatusReply> ClusterStatus();

  // The RPC connection to `node`'s daemon (this node's: the Unix socket).
  control::NodeClient* rpc(uint32_t node);

  // memory::RemoteAllocator (used by the remote pools).
  Result<uint64_t> RemoteAllocate(uint32_t node, uint64_t size,
                                  uint64_t alignment) override;
  Result<uint64_t> RemoteReallocate(uint32_t node, uint64_t address, uint64_t new_size,
                                    uint64_t alignment) override;
  Status RemoteFree(uint32_t node, uint64_t address) override;

 private:
  Client() = default;
  // Protocol step 2 for a new allocation: drop the range from this
  // process's and every other node's caches.
  Status PreWriteFlush(uint64_t address, uint64_t size);
  Status SealRanges(const std::vector<control::BufferRange>& ranges,
                    bool remote_too = true);
  Status PublishBatches(const std::vector<RecordBatchPtr>& batches,
                        const std::string& name, const PublishOptions& options);

  ClientOptions options_;
  uint32_t node_ = 0;
  int32_t pid_ = 0;
  std::unique_ptr<memory::ClusterMap> map_;
  std::map<uint32_t, std::shared_ptr<control::NodeClient>> rpcs_;
  std::map<uint32_t, std::unique_ptr<MemoryPool>> pools_;
  std::mutex mu_;
  // Published batches kept alive, with the scratch allocations their
  // descriptors needed, until Unpublish.
  struct PublishedEntry;
  std::map<std::string, std::unique_ptr<PublishedEntry>> published_;
};

}  // namespace quiver
