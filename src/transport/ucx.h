// Thin owners of UCX (UCP) objects for the transport layer: the context,
// a worker with its progress loop, registered memory and requests.
//
// Every call on a worker is made by one thread (UCS_THREAD_MODE_SINGLE):
// the server's progress thread, or the client's caller. Another thread may
// only Wake() the worker. Errors become Status values naming what failed
// and UCX's own words for why.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

#include "quiver/util/result.h"

namespace quiver::transport {

// IOError "UCX <what>: <UCX's message>".
Status UcxError(ucs_status_t status, std::string_view what);

class UcxContext {
 public:
  // For talking to peers (the transport's server and client): UCX limited to
  // the transports that cannot be reached from a network, those between
  // processes of one host (posix, cma, knem, xpmem, self): UCX 1.13's TCP
  // transport parses a peer's bytes with assertions and writes where it is
  // told (docs/transport.md#security), and RDMA is left out until keys
  // can be granted per range. `transports` (UCX_TLS's syntax; empty: the
  // environment's UCX_TLS, else all) is intersected with those. Null (not
  // an error) when nothing remains: the data then goes on the TLS stream.
  // `rma`: one-sided reads from this context (a client). A server's context
  // has none, so UCX installs no software handlers that would read or write
  // any address of the server for whoever asks (it checks no key).
  static Result<std::shared_ptr<UcxContext>> ForPeers(const std::string& transports,
                                                      bool rma);
  // UCX as configured, every feature: for benchmarks and tests that talk
  // only to their own workers. Transports from UCX's own configuration
  // (UCX_TLS and so on), or `transports` when not empty ("tcp", "sm,self").
  static Result<std::shared_ptr<UcxContext>> Make(const std::string& transports = "");
  ~UcxContext();
  UcxContext(const UcxContext&) = delete;
  UcxContext& operator=(const UcxContext&) = delete;
  ucp_context_h get() const { return context_; }

 private:
  UcxContext() = default;
  static Result<std::shared_ptr<UcxContext>> Init(const std::string& transports,
                                                  uint64_t features);
  ucp_context_h context_ = nullptr;
};

// The transports UCX may use with peers, from a request in UCX_TLS's syntax
// (see UcxContext::ForPeers): a list for UCX_TLS, empty if none remains.
std::string LocalTransports(const std::string& requested);

// Memory registered with a context once (faulted in by the caller first),
// and its packed remote key for peers.
class UcxMemory {
 public:
  static Result<std::unique_ptr<UcxMemory>> Map(std::shared_ptr<UcxContext> context,
                                                void* address, size_t length);
  // `length` bytes allocated by UCX itself (its first allocator that works,
  // in UCX_MEM_ALLOC's order: System V or POSIX shared memory first), and
  // registered. Peers on this host whose endpoints reach it through shared
  // memory map it and read it with a plain copy, the server's CPU idle;
  // memory from elsewhere (Map) they could only read through active
  // messages the owner answers. Faulted in by the caller.
  static Result<std::unique_ptr<UcxMemory>> Allocate(std::shared_ptr<UcxContext> context,
                                                     size_t length);
  ~UcxMemory();
  UcxMemory(const UcxMemory&) = delete;
  UcxMemory& operator=(const UcxMemory&) = delete;
  uint64_t address() const { return address_; }
  uint64_t length() const { return length_; }
  const std::string& packed_rkey() const { return rkey_; }

 private:
  UcxMemory() = default;
  static Result<std::unique_ptr<UcxMemory>> Make(std::shared_ptr<UcxContext> context,
                                                 void* address, size_t length,
                                                 bool allocate);
  std::shared_ptr<UcxContext> context_;
  ucp_mem_h memh_ = nullptr;
  uint64_t address_ = 0, length_ = 0;
  std::string rkey_;
};

class UcxWorker {
 public:
  static Result<std::unique_ptr<UcxWorker>> Make(std::shared_ptr<UcxContext> context);
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;
  ucp_worker_h get() const { return worker_; }
  const std::shared_ptr<UcxContext>& context() const { return context_; }

  // This worker's address, for a peer's ConnectTo.
  Result<std::string> Address() const;
  // An endpoint to the worker at `address` (from a peer's Address()).
  // Without peer-failure handling: in UCX 1.13 asking for it leaves out
  // shared memory and cma, which cannot report a dead peer. The TLS stream
  // of the connection reports failures for the pair. Fails (without
  // waiting) where UCX cannot reach the peer, e.g. a process of another
  // user, whose shared memory this one may not open.
  Result<ucp_ep_h> ConnectTo(std::string_view address);

  // One round of progress; true if anything happened.
  bool Progress() { return ucp_worker_progress(worker_) != 0; }
  // Progress until `done()`: spins while there is work or for a short while
  // after, then sleeps on the worker's event fd. TimedOut naming `what`
  // after `timeout_ms` (negative: no limit).
  Status ProgressUntil(const std::function<bool()>& done, int64_t timeout_ms,
                       std::string_view what);
  // Sleeps until the worker has events or Wake() is called, at most
  // `timeout_ms`; returns at once if events are already pending.
  void Sleep(int timeout_ms);
  // Before sleeping on efd() with other descriptors: false if events are
  // pending already (progress instead of sleeping).
  bool Arm() { return ucp_worker_arm(worker_) == UCS_OK; }
  int efd() const { return efd_; }
  // From any thread: makes Sleep() return.
  void Wake() { ucp_worker_signal(worker_); }

 private:
  UcxWorker() = default;
  std::shared_ptr<UcxContext> context_;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;
};

// A request returned by a non-blocking UCX call: done at once (null or an
// error pointer) or in flight. Free()s itself when destroyed unfinished
// (cancelling it first).
class UcxRequest {
 public:
  UcxRequest() = default;
  UcxRequest(ucp_worker_h worker, ucs_status_ptr_t request, bool is_tag_recv = false,
             const ucp_tag_recv_info_t& info = {});
  ~UcxRequest();
  UcxRequest(UcxRequest&& other) noexcept { *this = std::move(other); }
  UcxRequest& operator=(UcxRequest&& other) noexcept;

  // UCS_INPROGRESS while in flight; then the final status (kept).
  ucs_status_t Check();
  // The received message's tag and length, for a finished tag receive.
  const ucp_tag_recv_info_t& info() const { return info_; }

 private:
  void Release();
  ucp_worker_h worker_ = nullptr;
  void* request_ = nullptr;
  ucs_status_t status_ = UCS_OK;
  bool is_tag_recv_ = false;
  ucp_tag_recv_info_t info_{};
};

// Tag receives, with the received tag and length known even when the
// message was already waiting and the receive completed at once.
UcxRequest TagRecv(ucp_worker_h worker, void* buffer, size_t length, uint64_t tag,
                   uint64_t mask);
UcxRequest TagRecvMessage(ucp_worker_h worker, void* buffer, size_t length,
                          ucp_tag_message_h message);

// Waits for `request` on `worker` (ProgressUntil) and returns its status.
Status WaitFor(UcxWorker* worker, UcxRequest* request, int64_t timeout_ms,
               std::string_view what);

// Closes each non-null endpoint by force (nothing flushed), waiting up to
// `timeout_ms` for each close: for a process or peer that is going away.
void CloseByForce(UcxWorker* worker, std::initializer_list<ucp_ep_h> endpoints,
                  int64_t timeout_ms = 1000);

}  // namespace quiver::transport
