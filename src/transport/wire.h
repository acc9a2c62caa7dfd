// The transport's own control messages, beside Arrow's Dissociated IPC
// streams (columnar/ipc/dissociated.h), which carry the data itself.
//
// Every connection is a TLS 1.3 stream first (tls.h), authenticated by a
// pre-shared key; control frames travel on it both ways: kind (u8), a u64
// word (the request id, or the scan id or tag a data frame names), then the
// kind's fields. After Hello, the data goes one of two ways (docs/transport.md):
//
//   over UCX, between processes of one host (shared memory, cma), on
//   endpoints made from the worker addresses in Hello and HelloReply:
//     active message kAmMetadata  server to client: one metadata message;
//                                 the AM header is the scan id (u64)
//     tagged, server to client    bodies, tagged as the spec says
//     tagged, client to server    want_data (body: the scan id) and
//                                 free_data (addresses), with the tags the
//                                 server gave this connection
//   or on the TLS stream itself (kMetadata, kBody, kWantData frames), where
//   UCX cannot reach the peer without a network transport.
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

// 3: a TLS stream carries the control frames and, where UCX cannot, the data.
constexpr uint32_t kVersion = 3;
constexpr unsigned kAmMetadata = 2;

constexpr size_t kMaxSql = 1 << 20;
constexpr size_t kMaxName = 4096;
constexpr size_t kMaxRkey = 4096;
constexpr size_t kMaxMessage = 1 << 16;
constexpr size_t kMaxWorkerAddress = 1 << 16;
// The largest frame a client may send (InitScan's SQL and its fields).
constexpr size_t kMaxClientFrame = kMaxSql + 64 * 1024;

enum class Kind : uint8_t {
  kHello = 1,       // client: version, worker address
  kHelloReply = 2,  // server: tags, pool, remote key, probe area, worker address
  kInitScan = 3,    // client: query and window
  kScanReply = 4,   // server: the scan id
  kFinalize = 5,    // client: scan id
  kFinalized = 6,   // server
  kCredit = 7,      // client: type-0 bodies taken into its memory (no reply)
  kError = 8,       // server: a request or a scan failed
  kStats = 9,       // client
  kStatsReply = 10,
  kProbe = 11,     // client: send `length` probe bytes tagged `tag` (UCX only)
  kDataPath = 12,  // client: the data goes over UCX (1) or this stream (0); no reply
  kWantData = 13,  // client, data on the stream: want_data; the word is the scan id
  kMetadata = 14,  // server, data on the stream: a metadata message of scan `word`
  kBody = 15,      // server, data on the stream: a body; the word is its tag
};
const char* KindName(Kind kind);

struct Frame {
  Kind kind = Kind::kHello;
  uint64_t request = 0;   // or the scan id or tag of a data frame
  std::string_view body;  // into the decoded bytes
};
std::string EncodeFrame(Kind kind, uint64_t request, std::string_view body);
Result<Frame> DecodeFrame(std::string_view bytes);
// A frame from its parts as the stream delivered them (the kind checked).
Result<Frame> MakeFrame(uint8_t kind, uint64_t request, std::string_view body);

// Each side's UCX worker address: data moves on endpoints made from them.
// Empty: this side has no UCX transport a peer could use (the data then
// goes on the TLS stream).
struct Hello {
  uint32_t version = kVersion;
  std::string worker_address;
};
struct HelloReply {
  uint32_t version = kVersion;
  uint64_t want_data = 0;  // tags for this connection's client-to-server messages
  uint64_t free_data = 0;
  uint64_t pool_address = 0;   // the registered memory bodies of type 1 point into
  uint64_t pool_length = 0;    // 0: no type-1 bodies on this connection
  uint64_t probe_address = 0;  // inside the pool, for the connect-time crossover
  uint64_t probe_length = 0;
  std::string rkey;  // the pool's packed remote key (the spec's remote_handle)
  // Empty: the data goes on the TLS stream.
  std::string worker_address;
};
struct DataPath {
  uint8_t ucx = 0;
};
struct InitScan {
  std::string sql;
  std::string dataset;
  uint64_t min_rows = 0;        // coalesce batches to at least this many rows
  uint32_t window_batches = 0;  // bodies sent and not yet taken, at most
  uint64_t window_bytes = 0;
  uint64_t addresses_from = 0;  // bodies this large or larger go as type 1;
                                // UINT64_MAX: never
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
  uint64_t sends = 0;
};
struct Probe {
  uint64_t length = 0;
  uint64_t tag = 0;
};

std::string Encode(const Hello& m);
std::string Encode(const HelloReply& m);
std::string Encode(const DataPath& m);
std::string Encode(const InitScan& m);
std::string Encode(const ScanId& m);
std::string Encode(const Finalized& m);
std::string Encode(const Credit& m);
std::string Encode(const Error& m);
std::string Encode(const StatsReply& m);
std::string Encode(const Probe& m);

Result<Hello> DecodeHello(std::string_view body);
Result<HelloReply> DecodeHelloReply(std::string_view body);
Result<DataPath> DecodeDataPath(std::string_view body);
Result<InitScan> DecodeInitScan(std::string_view body);
Result<ScanId> DecodeScanId(std::string_view body);
Result<Finalized> DecodeFinalized(std::string_view body);
Result<Credit> DecodeCredit(std::string_view body);
Result<Error> DecodeError(std::string_view body);
Result<StatsReply> DecodeStatsReply(std::string_view body);
Result<Probe> DecodeProbe(std::string_view body);

}  // namespace quiver::transport::wire
