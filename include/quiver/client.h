// The Quiver client library: what an application links to share Arrow data
// across the cluster (DESIGN.md §4, §6; docs/control-plane.md).
//
//   auto client = quiver::Client::Connect({.config_path = "cluster.toml", .node = 0});
//   quiver::Int64Builder b((*client)->pool(2));   // build straight into node 2's memory
//   ...
//   (*client)->Publish(batch, "prices");           // a descriptor of a few hundred bytes
//   // on any node:
//   auto table = other->Get("prices");             // zero-copy, pinned while referenced
//
// A Client maps every region of the cluster at its base address and holds a
// session with each daemon it uses: its own node's over the node's Unix
// socket, others' over mutual TLS with its node's client certificate. What
// it allocates, and the pins its reads take, belong to those sessions: when
// the process exits or dies, the daemons release them. It runs the
// coherency protocol itself (the owners flush a new allocation everywhere;
// Seal and Publish flush what this process wrote into other nodes' memory);
// user code never flushes.
//
// Thread-safe. Arrays built from a Client's pools must not outlive it. Arrays
// returned by Get keep what they need alive (the sessions and their pins)
// until the last of them is gone, even after the Client. Published tables
// outlive the publisher: they stay until someone unpublishes them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "quiver/columnar/table.h"
#include "quiver/control/descriptor.h"
#include "quiver/control/huge_table.h"
#include "quiver/memory/region.h"
#include "quiver/memory/region_pool.h"

namespace quiver {

namespace control::client {
class Core;
}  // namespace control::client
namespace store {
class ObjectStore;
}  // namespace store
namespace testing {
struct ClientPeer;
}  // namespace testing

struct ClientOptions {
  std::string config_path;
  uint32_t node = 0;               // the node this process runs on
  int connect_timeout_ms = 10000;  // waiting for the regions and the daemon
  int call_timeout_ms = 60000;     // per call to a daemon
  // For tests only: 4 leaves out the writer's flush before sealing (protocol
  // step 4) to show, on the non-coherent emulator, that it is needed.
  int skip_protocol_step_for_testing = 0;
};

struct GetOptions {
  uint32_t wait_ms = 0;     // wait this long for the name (and chunks) to appear
  uint32_t min_chunks = 1;  // and for at least this many chunks
};

struct PublishOptions {
  // Set: a HugeTable chunk whose rows start at this row of the whole table;
  // other publishers may add chunks of other rows under the same name.
  // Unset: the whole table, under a name no one holds (AlreadyExists else).
  std::optional<uint64_t> first_row;
  bool local_only = false;  // readable on this node only
};

// Where Client::Load puts what it reads.
struct LoadProgress {
  uint64_t rows = 0;    // read so far
  uint64_t bytes = 0;   // written into cluster memory so far
  uint32_t chunks = 0;  // written so far
};
struct LoadOptions {
  // The nodes whose regions take the chunks, in turn (default: every node
  // of the cluster), starting at the one with the most free memory. A chunk
  // that does not fit in one goes to the next.
  std::vector<uint32_t> nodes;
  // The size a chunk is cut at: rows are gathered until their buffers
  // reach it (0: 64 MiB, at most a sixteenth of the smallest region).
  uint64_t chunk_bytes = 0;
  // Threads that copy chunks into cluster memory at once (0: one per core,
  // at most 4). Chunks keep the reader's row order whatever finishes first.
  uint32_t writers = 0;
  // Polled before each batch is read: true stops the load (Cancelled).
  std::function<bool()> cancelled;
  // Called after each batch read. Both are called on the thread that reads
  // the reader (not the caller's), one call at a time.
  std::function<void(const LoadProgress&)> progress;
};

struct SendFullStats {
  uint64_t stream_bytes = 0;  // size of the IPC stream
  uint64_t bytes_sent = 0;    // over all receivers
  uint64_t rows = 0;
  uint32_t receivers = 0;
};

// A published table as one node sees it.
struct TableInfo {
  std::string name;
  uint32_t chunks = 0;
  uint64_t rows = 0;
  std::vector<uint32_t> publishers;  // nodes
  std::vector<uint32_t> nodes;       // whose regions hold its data, ascending
  bool lost = false;                 // a node holding its data is down
  std::string lost_reason;
  uint32_t pins = 0;  // readers holding it at that node
  // Every publishing session has ended, at every home of its chunks: anyone
  // may unpublish it.
  bool orphaned = false;
  bool local_only = false;
  // Some publish of it is not whole here (a home is down, or a publish or
  // unpublish is under way or failed half-way): Get fails until it is
  // whole again or unpublished. The reason names the publish.
  bool incomplete = false;
  std::string incomplete_reason;
};

struct NodeStatus {
  uint32_t node = 0;
  bool online = false;
  std::string control;
  uint64_t region_base = 0, region_size = 0;
  uint64_t used = 0, free = 0, largest_free = 0, live_allocations = 0;
  uint64_t flags = 0;       // the node's state word
  uint64_t generation = 0;  // +1 each time its daemon takes the region over
  std::string backing;
  uint32_t sessions = 0;
  uint32_t waiting_calls = 0;
  bool recovering = false;  // restarted recently: readers may re-claim pins
};

struct ClusterStatus {
  std::vector<NodeStatus> nodes;
  std::vector<TableInfo> tables;
};

class Client final : public memory::RemoteAllocator {
 public:
  static Result<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  // Closes the sessions without waiting for any daemon: they release what
  // the sessions held (nothing published is lost). Never blocks on a peer.
  ~Client() override;
  // Sends what is queued (releases, frees), then closes the sessions.
  Status Close();

  uint32_t node_id() const;
  const memory::ClusterConfig& config() const;
  memory::ClusterMap* cluster();

  // A pool allocating in `node`'s region through its owner (null if there
  // is no such node). Allocations count against this client's quota there.
  MemoryPool* pool(uint32_t node);
  MemoryPool* local_pool() { return pool(node_id()); }

  // Protocol steps 4 and 5 for every buffer of the batch or table: flush
  // what this process wrote into other nodes' memory and seal the
  // allocations at their owners. Only their creator (this client) may.
  Status Seal(const RecordBatch& batch);
  Status Seal(const Table& table);

  // Seals and publishes on every node as descriptors, one per batch: one
  // round trip to the chunks' home (the owner of their memory), which
  // registers them everywhere before answering. The data stays in cluster
  // memory until unpublished, even after this client exits.
  Status Publish(const RecordBatchPtr& batch, const std::string& name,
                 const PublishOptions& options = {});
  Status Publish(const TablePtr& table, const std::string& name,
                 const PublishOptions& options = {});
  // Removes what this client published under `name`, and chunks whose
  // publisher is gone. Readers keep what they hold; memory comes back when
  // the last of them lets go.
  Status Unpublish(const std::string& name);

  // The chunks published under `name`, zero-copy: their buffers point into
  // cluster memory and stay pinned at their owners while any is referenced.
  // Chunks in the memory of nodes outside this node's memory group (see
  // memory::NodeConfig::memory) are read over the transport from their home
  // into this node's region instead, in one or more pieces (consecutive
  // rows), held by this client's session there until released.
  Result<std::vector<control::PositionedChunk>> GetChunks(const std::string& name,
                                                          const GetOptions& options = {});
  // All chunks as one table, ordered by first row.
  Result<TablePtr> Get(const std::string& name, const GetOptions& options = {});
  // A HugeTable: every chunk, ordered by first row, no gap or overlap.
  Result<TablePtr> GetHugeTable(const std::string& name, const GetOptions& options = {});
  // The HugeTable a table name of an SQL statement stands for (`quiver sql`,
  // Client.sql in Python): `name`, or else the one published table whose
  // name differs from it only in ASCII case (DuckDB's names are not case
  // sensitive). NotFound when none is, or several are; any other error
  // says the table is published but unavailable, and why.
  Result<TablePtr> GetTableForSql(const std::string& name);
  // OK if no table is published as `name` now; AlreadyExists naming it and
  // how to remove it otherwise. Checked before work whose result would be
  // published under the name (put, sql --publish), so that a taken name
  // fails at once; Publish refuses a taken name whatever was checked.
  Status CheckNameFree(const std::string& name);

  // The full-copy baseline: the table as an Arrow IPC stream with all its
  // data to every node in `nodes` (default: every other node), where the
  // daemon stores it in its own region (within this client's quota there)
  // and registers it under `name` for readers on that node.
  Result<SendFullStats> SendTableFull(const TablePtr& table, const std::string& name,
                                      std::optional<uint64_t> first_row = std::nullopt,
                                      std::vector<uint32_t> nodes = {});

  // Copies every batch of `reader` into cluster memory, cut into chunks of
  // about options.chunk_bytes placed round robin in the regions of
  // options.nodes, and returns them as a table (one batch per chunk) ready
  // to Publish. The reader is read on a thread of its own while chunks are
  // written. Nothing is published. On any failure -- the reader's, a
  // full cluster, options.cancelled -- what was written is freed before
  // returning (and by the owners anyway if this process dies).
  Result<TablePtr> Load(RecordBatchReader* reader, const LoadOptions& options = {});

  // Barriers over the nodes' state words (this node's is set here).
  Status SetState(uint64_t flags, uint64_t mask);
  Status SyncWait(uint64_t flags, uint64_t mask, int timeout_ms,
                  std::vector<uint32_t> nodes = {});
  Status WaitAllOnline(int timeout_ms);

  Result<std::vector<TableInfo>> List();
  Result<ClusterStatus> GetClusterStatus();
  // One round trip to `node`'s daemon carrying `payload` (benchmarks).
  Status Ping(uint32_t node, const std::string& payload = {});
  // Sends the queued releases and frees now and waits for them.
  Status Drain();
  // Pins this client held for tables and objects it got that it could not
  // keep: their session ended (the process was stopped for longer than its
  // lease, or an owner's grace period passed before the client could
  // re-claim them) and they could not be taken again. Memory such a table
  // or object uses may since hold someone else's bytes: a reader that
  // cannot rule out such a pause checks this after reading and gets the
  // table again if it grew. Each lost pin is also said on stderr.
  uint64_t lost_pins() const;

  // memory::RemoteAllocator (used by the pools).
  Result<uint64_t> RemoteAllocate(uint32_t node, uint64_t size,
                                  uint64_t alignment) override;
  Result<uint64_t> RemoteReallocate(uint32_t node, uint64_t address, uint64_t new_size,
                                    uint64_t alignment) override;
  // Queued: never blocks (the pools call it from destructors).
  Status RemoteFree(uint32_t node, uint64_t address) override;

 private:
  Client() = default;
  Status SealRanges(const std::vector<control::BufferRange>& ranges, bool flush_remote);
  Status PublishOnce(const std::vector<RecordBatchPtr>& batches, const std::string& name,
                     const PublishOptions& options);
  Status PublishBatches(const std::vector<RecordBatchPtr>& batches,
                        const std::string& name, const PublishOptions& options);
  // A chunk homed outside this node's memory group, read over the transport.
  Result<std::vector<RecordBatchPtr>> FetchFar(uint64_t id, uint32_t home,
                                               const std::string& descriptor);

  friend class store::ObjectStore;    // works on the Client's sessions
  friend struct testing::ClientPeer;  // tests look at the Core

  ClientOptions options_;
  std::shared_ptr<control::client::Core> core_;
  std::vector<std::unique_ptr<MemoryPool>> pools_;  // by node id order of the config
};

}  // namespace quiver
