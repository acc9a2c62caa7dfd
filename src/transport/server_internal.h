// The server's state, shared by its progress thread (server.cc: UCX,
// connections, sends) and the scans' producer threads (server_scan.cc:
// queries, batches in the pool).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "quiver/columnar/ipc/dissociated.h"
#include "quiver/transport/server.h"
#include "transport/body_pool.h"
#include "transport/ucx.h"
#include "transport/wire.h"

namespace quiver::transport {

// One batch's block of the pool, given back when the last reference goes:
// the sends still reading it, the addresses the client has not freed.
struct Block {
  BodyPool* pool = nullptr;
  uint8_t* data = nullptr;
  std::unique_ptr<ArenaPool> arena;
  RecordBatchPtr batch;
  std::vector<std::shared_ptr<Buffer>> buffers;
  ~Block() {
    buffers.clear();
    batch.reset();
    arena.reset();
    if (data != nullptr) pool->Free(data);
  }
};

// A message a producer hands the progress thread.
struct Message {
  // Declared first, destroyed last: `out` holds buffers of its arena.
  std::shared_ptr<Block> block;  // what a body points into, if anything
  ipc::dissociated::Outgoing out;
  bool is_error = false;  // `error` instead of `out`
  std::string error;
};

struct Scan {
  uint64_t id = 0;
  uint64_t connection = 0;
  uint64_t init_request = 0;  // the InitScan frame to answer
  wire::InitScan request;
  std::thread producer;
  std::atomic<bool> cancelled{false};

  std::mutex mu;
  std::condition_variable cv;
  // Guarded by mu.
  std::deque<Message> outbox;
  std::optional<Status> ready;  // the query ran (or failed)
  // The query's result while the producer reads it: ending the scan
  // cancels it, so a long query stops rather than runs on for no one.
  std::shared_ptr<RecordBatchReader> reader;
  bool producer_done = false;
  uint32_t in_flight = 0;  // bodies pushed and not yet taken or freed
  uint64_t in_flight_bytes = 0;
  std::deque<uint64_t> packed_sizes;  // type-0 bodies sent, awaiting Credit

  // Progress thread only.
  bool ready_reported = false;
  bool started = false;  // want_data arrived
  uint64_t bodies_sent = 0;

  // Producer side: waits until one more body of `bytes` fits the window.
  bool WaitForWindow(uint64_t bytes);
  // Progress side: `bodies` bodies of `bytes` taken by the client.
  void Release(uint32_t bodies, uint64_t bytes);
};

// What a body counts against its scan's window: the bytes of a type-0 body,
// the total a type-1 body's address list names.
uint64_t WindowBytes(const ipc::dissociated::Outgoing& out);

// A type-1 body whose addresses the client has not all freed.
struct AddressedBody {
  uint64_t scan = 0;
  uint32_t remaining = 0;
  uint64_t bytes = 0;
  std::shared_ptr<Block> block;
};

struct Connection {
  uint64_t id = 0;
  ucp_ep_h ep = nullptr;       // from the listener: control frames
  ucp_ep_h data_ep = nullptr;  // to the client's worker address: the data
  bool authenticated = false;
  std::string closing;       // why, once it must go
  bool wound_down = false;   // scans ended, receives cancelled
  bool peer_failed = false;  // UCX reported the client gone
  std::chrono::steady_clock::time_point accepted_at;
  std::chrono::steady_clock::time_point closing_since;
  uint64_t want_tag = 0, free_tag = 0;
  UcxRequest want_recv, free_recv;
  std::vector<uint8_t> want_buf, free_buf;
  std::set<uint64_t> scans;
  // Each address given and not yet freed, with the bodies that gave it:
  // bodies served in place may share addresses (two scans of one table);
  // a free takes the oldest, and each body holds its memory, so memory
  // named by an unfreed address is always held.
  std::unordered_map<uint64_t, std::deque<std::shared_ptr<AddressedBody>>> addresses;
};

// A send in flight and what it reads from.
struct PendingSend {
  UcxRequest request;
  uint64_t header = 0;
  std::string bytes;
  std::shared_ptr<Block> block;
  uint64_t connection = 0;
  bool on_data_ep = false;
  // When the connection went while this was still in flight (see PollSends).
  std::optional<std::chrono::steady_clock::time_point> orphaned_since;
};

class Server::Impl {
 public:
  Impl(ServerOptions options, QueryRunner runner)
      : options_(std::move(options)), runner_(std::move(runner)) {}
  ~Impl();
  Status Start();
  uint16_t port() const { return port_; }
  ServerStats stats() const;

  // server_scan.cc: the producer thread of one scan.
  void Produce(Scan* scan);
  // [address, +length) lies inside one range of options_.in_place.
  bool InPlace(uint64_t address, uint64_t length) const;
  // `batch` (of `bytes`) goes to scan `s` as addresses of its own buffers.
  bool ServesInPlace(const Scan& s, const RecordBatch& batch, uint64_t bytes) const;

 private:
  friend struct Callbacks;
  void Loop();
  bool HandleInbox();
  void HandleFrame(Connection* c, std::string_view bytes);
  void Answer(Connection* c, wire::Kind kind, uint64_t request, std::string body);
  void AnswerError(Connection* c, uint64_t request, uint64_t scan, const Status& st);
  void Accept(ucp_conn_request_h request);
  void PostReceive(Connection* c, bool want);
  bool PollReceives();
  void OnWantData(Connection* c, std::string_view body);
  void OnFreeData(Connection* c, std::string_view body);
  void OnProbe(Connection* c, const wire::Probe& probe);
  bool PumpScans();
  bool PollSends();
  bool Reap();
  void SendTagged(Connection* c, uint64_t tag, std::string_view bytes, std::string owned,
                  std::shared_ptr<Block> block);
  void SendMetadata(Connection* c, uint64_t scan, std::string bytes);
  void Close(Connection* c, std::string why);
  void EndScan(Scan* scan);
  void UpdateStats();

  ServerOptions options_;
  QueryRunner runner_;
  std::shared_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;
  std::unique_ptr<BodyPool> pool_;
  std::vector<std::unique_ptr<UcxMemory>> in_place_;  // options_.in_place, registered
  std::atomic<uint64_t> bodies_in_place_{0};
  ucp_listener_h listener_ = nullptr;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  // Progress thread only.
  uint64_t next_connection_ = 1, next_scan_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  std::unordered_map<ucp_ep_h, uint64_t> by_ep_;
  std::unordered_map<uint64_t, std::unique_ptr<Scan>> scans_;
  std::list<std::unique_ptr<Scan>> ending_;  // cancelled, producer not yet joined
  std::list<std::unique_ptr<PendingSend>> sends_;
  std::vector<UcxRequest> closing_eps_;
  struct Inbound {
    ucp_ep_h ep;
    std::optional<std::string> frame;  // nullopt: too large for a control frame
  };
  std::vector<Inbound> inbox_;
  std::vector<ucp_conn_request_h> accepts_;
  std::vector<ucp_ep_h> failed_eps_;

  mutable std::mutex stats_mu_;
  ServerStats stats_;
};

}  // namespace quiver::transport
