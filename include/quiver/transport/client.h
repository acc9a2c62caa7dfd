// The transport client: Thallus's API (init_scan, iterate, finalize),
// reading Arrow's Dissociated IPC protocol (docs/transport.md).
//
// Connect opens a TCP connection to the server and a TLS 1.3 session on it,
// authenticated by a pre-shared key (the token's, or a ticket's); a server
// without the key refuses the handshake. Where both processes are on one
// host, the data then moves over UCX's shared memory, and the client
// measures on its own endpoint whether a one-sided read of a body beats
// having the server send it, and from what size (the crossover): reads of
// the server's pool win from tens of KiB. Anywhere else the data comes on
// the TLS stream, every body packed.
//
// Batches land in the MemoryPool the caller chooses (a Quiver region's pool
// to land them in cluster memory). A Client is used by one thread at a time;
// the batches it returns may go to any thread. Connect fails with
// Unauthenticated when the server refused the key.
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
  // The server's token; ignored when `ticket_identity` is set.
  std::string token;
  // A ticket (Server::AddTicket, handed over by the server's owner).
  std::string ticket_identity, ticket_secret;
  // Longest wait for the server at any step.
  int64_t timeout_ms = 30000;
  // Where batches land; null: the default pool.
  MemoryPool* pool = nullptr;
  // QUIVER_TRANSPORT_BODIES=measure|packed|addresses overrides this.
  BodyMode bodies = BodyMode::kMeasure;
  // A body larger than this (type 0) or spanning more (type 1) is refused.
  uint64_t max_body_bytes = uint64_t{1} << 30;
  // UCX transports to use with a server on this host (UCX_TLS's syntax);
  // empty: UCX_TLS, else all; only transports of one host are ever used,
  // so "tcp" means the data always comes on the TLS stream.
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
  // The data moves over UCX (else on the TLS stream).
  bool over_ucx() const;

  class Impl;

 private:
  explicit Client(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace quiver::transport
