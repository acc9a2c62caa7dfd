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
  Status SendTagged(uint64_t tag, std::string bytes);
  // Sends a control frame (its request id in `*request`, for Call, which
  // waits for the answer).
  Status Post(wire::Kind kind, std::string body, uint64_t* request = nullptr);
  // Progress until `done()`; IOError once the server is gone.
  Status Until(const std::function<bool()>& done, std::string_view what);
  Status Measure();
  // iterate (client_scan.cc).
  Result<std::shared_ptr<RecordBatchReader>> Iterate(std::shared_ptr<Impl> self,
                                                     uint64_t scan);

  ClientOptions options_;
  std::string address_;
  std::shared_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;
  ucp_ep_h ep_ = nullptr;       // to the listener: control frames
  ucp_ep_h data_ep_ = nullptr;  // to the server's worker address: the data
  ucp_rkey_h rkey_ = nullptr;
  std::vector<ucp_rkey_h> in_place_rkeys_;  // hello_.in_place's, in order

  // Which memory the server registered holds [address, +length): 0 its
  // pool, i + 1 the i-th range it serves in place; nothing if none does.
  std::optional<size_t> RegistrationOf(uint64_t address, uint64_t length) const {
    auto inside = [&](uint64_t base, uint64_t size) {
      return address >= base && address - base <= size &&
             length <= size - (address - base);
    };
    if (inside(hello_.pool_address, hello_.pool_length)) return 0;
    for (size_t i = 0; i < hello_.in_place.size(); ++i) {
      if (inside(hello_.in_place[i].address, hello_.in_place[i].length)) return i + 1;
    }
    return std::nullopt;
  }
  ucp_rkey_h RkeyOf(size_t registration) const {
    return registration == 0 ? rkey_ : in_place_rkeys_[registration - 1];
  }
  std::string failed_;  // why the endpoint failed, once it has
  wire::HelloReply hello_;
  uint64_t addresses_from_ = std::numeric_limits<uint64_t>::max();
  uint64_t in_place_from_ = std::numeric_limits<uint64_t>::max();
  uint64_t next_request_ = 1;
  std::map<uint64_t, std::string> replies_;               // by request id
  std::map<uint64_t, std::deque<std::string>> metadata_;  // by scan
  std::map<uint64_t, std::string> scan_errors_;
  std::string connection_error_;
  std::deque<UcxRequest> sends_;
  std::deque<std::string> send_bytes_;
  // The scan being iterated (0: none) and the bodies taken for it: tags
  // are only sequence numbers, so a second scan may only start once every
  // body of the first has arrived (read to its end, or drained by Finalize).
  uint64_t active_scan_ = 0;
  uint64_t bodies_taken_ = 0;
  Status Drain(uint64_t bodies);

  static ucs_status_t OnControl(void* arg, const void*, size_t, void* data, size_t length,
                                const ucp_am_recv_param_t* param);
  static ucs_status_t OnMetadata(void* arg, const void* header, size_t header_length,
                                 void* data, size_t length,
                                 const ucp_am_recv_param_t* param);
  static void OnError(void* arg, ucp_ep_h, ucs_status_t status) {
    auto* self = static_cast<Impl*>(arg);
    if (self->failed_.empty()) {
      self->failed_ = std::string("the connection to ") + self->address_ +
                      " failed: " + ucs_status_string(status);
    }
  }
  void PollSends() {
    while (!sends_.empty() && sends_.front().Check() != UCS_INPROGRESS) {
      sends_.pop_front();
      send_bytes_.pop_front();
    }
  }
};

}  // namespace quiver::transport
