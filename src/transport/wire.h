// The transport's own control messages, beside Arrow's Dissociated IPC
// streams (columnar/ipc/dissociated.h), which carry the data itself.
//
// Over UCX (docs/transport.md):
//   active message kAmControl   a control frame, either way: kind (u8),
//                               request id (u64), then the kind's fields
//   active message kAmMetadata  server to client: one Dissociated IPC
//                               metadata message; the AM header is the
//                               scan id (u64)
//   tagged, server to client    bodies, tagged as the spec says
//
// Control frames travel on the endpoint the client opened to the server's
// listener; metadata, bodies, want_data, free_data and one-sided reads on
// a second pair of endpoints made from the worker addresses in Hello and
// HelloReply (so UCX may use shared memory and cma between processes).
//   tagged, client to server    want_data (body: the scan id) and free_data
//                               (addresses), with the tags the server gave
//                               this connection in its HelloReply
//
// Integers are little-endian; strings are a u32 length and the bytes.
// Everything decoded here comes from a peer: each decoder checks sizes and
// limits and returns Invalid naming the message and field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "quiver/util/result.h"

namespace quiver::transport::wire {

constexpr uint32_t kVersion = 2;  // 2: HelloReply lists memory served in place
constexpr unsigned kAmControl = 1;
constexpr unsigned kAmMetadata = 2;

constexpr size_t kMaxToken = 4096;
constexpr size_t kMaxSql = 1 << 20;
constexpr size_t kMaxName = 4096;
constexpr size_t kMaxRkey = 4096;
// Ranges of memory besides the pool a server may serve type-1 bodies from.
constexpr size_t kMaxInPlaceRanges = 64;
constexpr size_t kMaxMessage = 1 << 16;
constexpr size_t kMaxWorkerAddress = 1 << 16;

enum class Kind : uint8_t {
  kHello = 1,       // client: version, token
  kHelloReply = 2,  // server: tags, pool, remote key, probe area
  kInitScan = 3,    // client: query and window
  kScanReply = 4,   // server: the scan id
  kFinalize = 5,    // client: scan id
  kFinalized = 6,   // server
  kCredit = 7,      // client: type-0 bodies taken into its memory (no reply)
  kError = 8,       // server: a request or a scan failed
  kStats = 9,       // client
  kStatsReply = 10,
  kProbe = 11,  // client: send `length` probe bytes tagged `tag` (connect-time crossover)
};
const char* KindName(Kind kind);

struct Frame {
  Kind kind = Kind::kHello;
  uint64_t request = 0;
  std::string_view body;  // into the decoded bytes
};
std::string EncodeFrame(Kind kind, uint64_t request, std::string_view body);
Result<Frame> DecodeFrame(std::string_view bytes);

// Each side's UCX worker address: data moves on endpoints made from them
// (UCX connects endpoints made from a listener's socket address over TCP
// only; worker addresses let it pick shared memory and cma on one host).
struct Hello {
  uint32_t version = kVersion;
  std::string token;
  std::string worker_address;
};
struct HelloReply {
  uint32_t version = kVersion;
  uint64_t want_data = 0;  // tags for this connection's client-to-server messages
  uint64_t free_data = 0;
  uint64_t pool_address = 0;  // the registered memory bodies of type 1 point into
  uint64_t pool_length = 0;
  uint64_t probe_address = 0;  // inside the pool, for the connect-time crossover
  uint64_t probe_length = 0;
  std::string rkey;  // the pool's packed remote key (the spec's remote_handle)
  std::string worker_address;
  // Memory besides the pool that type-1 bodies may point into (a node's
  // regions, whose batches go out without a copy), each with its key.
  struct Range {
    uint64_t address = 0;
    uint64_t length = 0;
    std::string rkey;
  };
  std::vector<Range> in_place;
};
struct InitScan {
  std::string sql;
  std::string dataset;
  uint64_t min_rows = 0;        // coalesce batches to at least this many rows
  uint32_t window_batches = 0;  // bodies sent and not yet taken, at most
  uint64_t window_bytes = 0;
  uint64_t addresses_from = 0;  // bodies this large or larger go as type 1;
                                // UINT64_MAX: never
  // The same for a batch the server holds in memory it serves in place,
  // where the alternative to a read is a copy and a send.
  uint64_t in_place_from = 0;
};
struct ScanId {  // kScanReply, kFinalize
  uint64_t scan = 0;
};
struct Finalized {
  uint64_t scan = 0;
  uint64_t bodies_sent = 0;  // the client drains what it has not received
};
struct Credit {
  uint64_t scan = 0;
  uint32_t bodies = 0;
};
struct Error {
  uint64_t scan = 0;  // 0: the error answers the frame's request
  std::string message;
};
struct StatsReply {
  uint64_t connections = 0;
  uint64_t scans = 0;
  uint64_t pool_bytes_in_use = 0;
  uint64_t bodies_in_flight = 0;
  uint64_t bodies_in_place = 0;
  uint64_t sends = 0;
};
struct Probe {
  uint64_t length = 0;
  uint64_t tag = 0;
};

std::string Encode(const Hello& m);
std::string Encode(const HelloReply& m);
std::string Encode(const InitScan& m);
std::string Encode(const ScanId& m);
std::string Encode(const Finalized& m);
std::string Encode(const Credit& m);
std::string Encode(const Error& m);
std::string Encode(const StatsReply& m);
std::string Encode(const Probe& m);

Result<Hello> DecodeHello(std::string_view body);
Result<HelloReply> DecodeHelloReply(std::string_view body);
Result<InitScan> DecodeInitScan(std::string_view body);
Result<ScanId> DecodeScanId(std::string_view body);
Result<Finalized> DecodeFinalized(std::string_view body);
Result<Credit> DecodeCredit(std::string_view body);
Result<Error> DecodeError(std::string_view body);
Result<StatsReply> DecodeStatsReply(std::string_view body);
Result<Probe> DecodeProbe(std::string_view body);

}  // namespace quiver::transport::wire
