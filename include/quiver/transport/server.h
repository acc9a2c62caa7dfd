// The transport server: Thallus's scan service over UCX (docs/transport.md).
//
// A client connects, presents the token, asks for a scan (init_scan: a SQL
// query over a dataset), iterates its batches and finalizes it. The server
// runs the query through the QueryRunner it was given (DuckDB in `quiver
// serve`), coalesces the result into batches of at least the rows the
// client asked for, writes each batch once into memory registered with UCX
// when the server started, and sends it in Arrow's Dissociated IPC
// protocol: metadata as untagged messages, each body as a tagged message,
// either the packed body itself or the addresses the client reads from with
// one one-sided get, as the client's endpoint measured faster.
//
// Every message from a client is untrusted: malformed ones are refused with
// an error naming the fault; a client that breaks the protocol, or dies,
// loses its connection and everything it held goes back to the pool.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "quiver/columnar/record_batch.h"

namespace quiver::transport {

// Runs `sql` over `dataset` (a name the runner defines; may be empty) and
// returns its result. Called on the scan's own thread.
using QueryRunner = std::function<Result<std::shared_ptr<RecordBatchReader>>(
    const std::string& sql, const std::string& dataset)>;

struct ServerOptions {
  // host:port to listen on; port 0 picks a free one (see Server::port()).
  std::string listen = "0.0.0.0:0";
  // Clients must present this token (compared in constant time). Empty:
  // no token needed.
  std::string token;
  // Registered memory for bodies, shared by every scan.
  uint64_t pool_size = uint64_t{256} << 20;
  // Coalescing stops before a batch grows past this.
  uint64_t max_batch_bytes = uint64_t{32} << 20;
  size_t max_connections = 256;
  // A connection that has not said Hello (with the token) by then is closed.
  int64_t hello_timeout_ms = 10000;
  size_t max_scans_per_connection = 16;
  // UCX transports to use (UCX_TLS's syntax, e.g. "tcp"); empty: UCX's
  // choice (UCX_TLS if set).
  std::string ucx_transports;
  // Memory besides the pool that bodies may be read from in place: a batch
  // from the runner whose buffers all lie in one of these ranges goes, to a
  // client that reads addresses, as the addresses of its own buffers, with
  // no copy into the pool (the batch is held until the client frees them).
  // Registered once at Start (a Quiver node's regions); the caller keeps
  // the memory mapped while the server runs. Clients may read anywhere in
  // these ranges: give only memory every client may see.
  struct Range {
    const void* address = nullptr;
    uint64_t length = 0;
  };
  std::vector<Range> in_place;
};

struct ServerStats {
  uint64_t connections = 0;
  uint64_t scans = 0;
  uint64_t pool_bytes_in_use = 0;
  uint64_t bodies_in_flight = 0;  // sent, not yet taken or freed by the client
  uint64_t sends = 0;             // UCX sends not yet complete
  uint64_t bodies_in_place = 0;   // sent as addresses of the runner's own memory
};

class Server {
 public:
  static Result<std::unique_ptr<Server>> Start(ServerOptions options, QueryRunner runner);
  // Stops: closes every connection, cancels every scan, frees the pool.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;
  ServerStats stats() const;

  class Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace quiver::transport
