// The client's state, shared by the calls of client.cc and the scan reader
// of client_scan.cc. One thread at a time.
#pragma once

#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "quiver/columnar/ipc/dissociated.h"
#include "quiver/transport/client.h"
#include "transport/tls.h"
#include "transport/ucx.h"
#include "transport/wire.h"

namespace quiver::transport {

class Client::Impl {
 public:
  explicit Impl(ClientOptions options) : options_(std::move(options)) {
    if (options_.pool == nullptr) options_.pool = default_memory_pool();
  }
  ~Impl();

  Status Connect(const std::string& address);
  Result<wire::Frame> Call(wire::Kind kind, std::string body, wire::Kind expect,
                           std::string* storage);
  // A tagged message on the UCX endpoint (want_data, free_data).
  Status SendTagged(uint64_t tag, std::string bytes);
  // Sends a control frame (its request id in `*request`, for Call, which
  // waits for the answer).
  Status Post(wire::Kind kind, std::string body, uint64_t* request = nullptr);
  // The same with the frame's word given (a data frame's scan id).
  Status Send(wire::Kind kind, uint64_t word, std::string_view body);
  // Progress until `done()`; IOError once the server is gone.
  Status Until(const std::function<bool()>& done, std::string_view what);
  Status Measure();
  // iterate (client_scan.cc).
  Result<std::shared_ptr<RecordBatchReader>> Iterate(std::shared_ptr<Impl> self,
                                                     uint64_t scan);

  ClientOptions options_;
  std::string address_;
  std::shared_ptr<PskContext> tls_context_;
  std::unique_ptr<TlsStream> tls_;  // control frames; the data without UCX
  std::shared_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;  // null: no UCX here
  bool ucx_ = false;                   // the data goes over data_ep_
  ucp_ep_h data_ep_ = nullptr;         // to the server's worker address
  ucp_rkey_h rkey_ = nullptr;          // the server's pool (ucx_ only)

  // [address, +length) lies in the memory the server registered (its pool).
  bool InPool(uint64_t address, uint64_t length) const {
    return rkey_ != nullptr && address >= hello_.pool_address &&
           address - hello_.pool_address <= hello_.pool_length &&
           length <= hello_.pool_length - (address - hello_.pool_address);
  }
  std::string failed_;  // why the stream failed, once it has
  wire::HelloReply hello_;
  uint64_t addresses_from_ = std::numeric_limits<uint64_t>::max();
  uint64_t next_request_ = 1;
  std::map<uint64_t, std::string> replies_;               // by request id
  std::map<uint64_t, std::deque<std::string>> metadata_;  // by scan
  std::map<uint64_t, std::string> scan_errors_;
  std::string connection_error_;
  // Bodies that came on the stream (no UCX): tag and bytes, in order.
  std::deque<std::pair<uint64_t, std::shared_ptr<Buffer>>> stream_bodies_;
  std::deque<UcxRequest> sends_;
  std::deque<std::string> send_bytes_;
  // The scan being iterated (0: none) and the bodies taken for it: tags
  // are only sequence numbers, so a second scan may only start once every
  // body of the first has arrived (read to its end, or drained by Finalize).
  uint64_t active_scan_ = 0;
  uint64_t bodies_taken_ = 0;
  Status Drain(uint64_t bodies);

  // Reads the frames that arrived and writes what is queued; true if
  // anything moved. Failures land in failed_ / connection_error_.
  bool PumpStream();
  void OnFrame(uint8_t kind, uint64_t word, std::string_view body,
               std::shared_ptr<Buffer> placed);
  static ucs_status_t OnMetadata(void* arg, const void* header, size_t header_length,
                                 void* data, size_t length,
                                 const ucp_am_recv_param_t* param);
  void PollSends() {
    while (!sends_.empty() && sends_.front().Check() != UCS_INPROGRESS) {
      sends_.pop_front();
      send_bytes_.pop_front();
    }
  }
};

}  // namespace quiver::transport
