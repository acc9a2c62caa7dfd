// The transport client: Thallus's API (init_scan, iterate, finalize) over
// UCX, reading Arrow's Dissociated IPC protocol (docs/transport.md).
//
// On Connect the client measures, on its own endpoint, whether a one-sided
// read of a body beats having the server send it, and from what size (the
// crossover): on shared memory (UCX's cma transport) reads win from tens of
// KiB; on TCP, where UCX emulates reads with messages, they never do, and
// every body comes as a tagged send.
//
// Batches land in the MemoryPool the caller chooses (a Quiver region's pool
// to land them in cluster memory). A Client is used by one thread at a time;
// the batches it returns may go to any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "quiver/columnar/memory_pool.h"
#include "quiver/columnar/record_batch.h"
#include "quiver/transport/server.h"

namespace quiver::transport {

enum class BodyMode : int8_t {
  kMeasure,    // addresses from the crossover measured at connect (default)
  kPacked,     // always tagged sends of the packed body
  kAddresses,  // always addresses and one-sided reads
};

struct ClientOptions {
  std::string token;
  // Longest wait for the server at any step.
  int64_t timeout_ms = 30000;
  // Where batches land; null: the default pool.
  MemoryPool* pool = nullptr;
  // QUIVER_TRANSPORT_BODIES=measure|packed|addresses overrides this.
  BodyMode bodies = BodyMode::kMeasure;
  // A body larger than this (type 0) or spanning more (type 1) is refused.
  uint64_t max_body_bytes = uint64_t{1} << 30;
  // UCX transports to use (UCX_TLS's syntax, e.g. "tcp"); empty: UCX's
  // choice (UCX_TLS if set).
  std::string ucx_transports;
};

struct ScanOptions {
  std::string dataset;
  uint64_t min_rows = 65536;    // coalesce to at least this many rows
  uint32_t window_batches = 4;  // bodies in flight, at most
  uint64_t window_bytes = uint64_t{64} << 20;
};

class Client {
 public:
  static Result<std::unique_ptr<Client>> Connect(const std::string& address,
                                                 ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // init_scan: the server runs `sql` and keeps its result under the id
  // returned. Errors of the query come back here.
  Result<uint64_t> InitScan(const std::string& sql, const ScanOptions& options = {});
  // iterate: the scan's batches. One scan is iterated at a time on a
  // client; the reader must be drained or dropped before the next.
  Result<std::shared_ptr<RecordBatchReader>> Iterate(uint64_t scan);
  // finalize: the server drops the scan and everything it still holds.
  Status Finalize(uint64_t scan);

  Result<ServerStats> Stats();
  // Bodies at least this large come as addresses; UINT64_MAX: never.
  uint64_t addresses_from() const;
  // The same for batches the server holds in memory it serves in place
  // (a node's regions), where a read saves the server a copy.
  uint64_t in_place_from() const;

  class Impl;

 private:
  explicit Client(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace quiver::transport
