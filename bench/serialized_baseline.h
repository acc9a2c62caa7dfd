// The serialising baselines of bench/transport_bench.cc: the same batches as
// an ordinary Arrow IPC stream, coalesced to the transport's batch size, over
// a tuned TCP socket (in transport_bench.cc) and over gRPC server-streaming
// (grpc_baseline.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "quiver/columnar/io.h"
#include "quiver/columnar/record_batch.h"
#include "quiver/util/result.h"

namespace quiver::bench {

// What a request names, as a reader of its batches.
using BatchSource =
    std::function<Result<std::shared_ptr<RecordBatchReader>>(const std::string&)>;

// Writes `request`'s batches to `sink` as an Arrow IPC stream, coalesced to
// batches of at least `batch_rows` rows ("... batch=N" at the end of the
// request overrides it), as the transport's producer coalesces them.
Status WriteCoalescedStream(const BatchSource& source, std::string request,
                            io::OutputStream* sink, int64_t batch_rows = 65536);

// A gRPC server on 127.0.0.1 with one server-streaming method: the request
// is the request text, the answer the IPC stream of WriteCoalescedStream in
// messages of 4 MiB (the last one shorter). The body bytes are written once
// into each message and handed to gRPC without another copy.
class GrpcBaselineServer {
 public:
  static Result<std::unique_ptr<GrpcBaselineServer>> Start(BatchSource source);
  virtual ~GrpcBaselineServer() = default;
  virtual uint16_t port() const = 0;
};

// The client: one channel, kept; each Fetch is one call whose stream the
// columnar IPC reader reads straight from the received messages.
class GrpcBaselineClient {
 public:
  static Result<std::unique_ptr<GrpcBaselineClient>> Connect(uint16_t port);
  virtual ~GrpcBaselineClient() = default;
  // The rows of `request`'s answer; `batches` (if given) counts its batches.
  virtual Result<int64_t> Fetch(const std::string& request,
                                int64_t* batches = nullptr) = 0;
};

}  // namespace quiver::bench
