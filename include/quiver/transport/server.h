// The transport server: Thallus's scan service in Arrow's Dissociated IPC
// protocol (docs/transport.md).
//
// A client connects to a plain TCP port and proves in a TLS 1.3 handshake
// that it holds the server's pre-shared key (derived from the token, or a
// ticket the server minted for one owner: AddTicket); nothing it sends
// reaches UCX before that. It then asks for a scan (init_scan: a SQL query
// over a dataset), iterates its batches and finalizes it. The server runs
// the query through the QueryRunner it was given (DuckDB in `quiver
// serve`), coalesces the result into batches of at least the rows the
// client asked for, writes each batch once into memory registered with UCX
// when the server started, and sends it as Dissociated IPC messages:
// between processes of one host over UCX (metadata as untagged messages,
// each body as a tagged message, either the packed body itself or the
// addresses the client reads from with one one-sided get, as the client's
// endpoint measured faster); to any other client on the TLS stream.
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
// The same, told the owner of the ticket the connection was opened with
// (0 for a token's connection).
using OwnedQueryRunner = std::function<Result<std::shared_ptr<RecordBatchReader>>(
    const std::string& sql, const std::string& dataset, uint64_t owner)>;

struct ServerOptions {
  // host:port to listen on (plain TCP; TLS inside); port 0 picks a free one
  // (see Server::port()).
  std::string listen = "0.0.0.0:0";
  // Which key clients must hold. kToken: the one derived from `token` (an
  // empty token is a key anyone can derive: no authentication). kTickets:
  // only keys from AddTicket, each good for one connection.
  enum class Auth : int8_t { kToken, kTickets };
  Auth auth = Auth::kToken;
  std::string token;
  // Registered memory for bodies, shared by every scan.
  uint64_t pool_size = uint64_t{256} << 20;
  // Coalescing stops before a batch grows past this.
  uint64_t max_batch_bytes = uint64_t{32} << 20;
  size_t max_connections = 256;
  // TLS handshakes under way at once (a new one closes the oldest), and
  // how long one may go without a byte from its peer (5x that in all).
  size_t max_handshakes = 64;
  int64_t handshake_timeout_ms = 1000;
  // A connection that has not said Hello by then is closed.
  int64_t hello_timeout_ms = 10000;
  size_t max_scans_per_connection = 16;
  // UCX transports to use with clients of this host (UCX_TLS's syntax);
  // empty: UCX_TLS, else all. Only transports no network reaches are ever
  // used (UcxContext::ForPeers): "tcp" means no UCX at all.
  std::string ucx_transports;
};

struct ServerStats {
  uint64_t connections = 0;  // past the handshake
  uint64_t scans = 0;
  uint64_t pool_bytes_in_use = 0;
  uint64_t bodies_in_flight = 0;  // sent, not yet taken or freed by the client
  uint64_t sends = 0;             // sends not yet complete (UCX or the stream's)
  uint64_t handshakes = 0;        // TLS handshakes under way
};

// A key for one connection, for AddTicket's caller to hand to one client
// over a channel already authenticated (a daemon's control plane).
struct Ticket {
  std::string identity;
  std::string secret;  // 32 random bytes
};

// Thread-safe: every method may be called from any thread. On failure
// Start returns an error and nothing is left running or listening.
class Server {
 public:
  static Result<std::unique_ptr<Server>> Start(ServerOptions options, QueryRunner runner);
  static Result<std::unique_ptr<Server>> Start(ServerOptions options,
                                               OwnedQueryRunner runner);
  // Stops: closes every connection, cancels every scan, frees the pool.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;
  ServerStats stats() const;

  // A key good for one connection made within `ttl_ms` (auth kTickets);
  // the connection's scans run with `owner`.
  Ticket AddTicket(uint64_t owner, int64_t ttl_ms = 10000);
  // Forgets `owner`'s unused tickets and closes its connections (their
  // scans end, what they held goes back): its session ended.
  void DropOwner(uint64_t owner);

  class Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace quiver::transport
