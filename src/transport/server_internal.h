// The server's state, shared by its progress thread (server.cc: the
// listener, TLS handshakes, connections; server_frames.cc: control frames,
// UCX receives and every send) and the scans' producer threads
// (server_scan.cc: queries, batches in the pool).
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
#include "transport/tls.h"
#include "transport/ucx.h"
#include "transport/wire.h"

namespace quiver::transport {

constexpr uint64_t kProbeBytes = 1 << 20;  // the connect-time probe area

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
  uint64_t owner = 0;         // the connection's (its ticket's)
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

// A TLS handshake under way: not a connection yet.
struct Handshake {
  std::unique_ptr<TlsStream> tls;
  std::chrono::steady_clock::time_point started, progressed;
  uint64_t bytes = 0;  // read by `progressed`
  bool ready = true;   // the socket has something for it
};

struct Connection {
  uint64_t id = 0;
  std::unique_ptr<TlsStream> tls;  // control frames; the data where UCX is not
  uint64_t owner = 0;              // of the ticket it was opened with
  ucp_ep_h data_ep = nullptr;      // to the client's worker address: the data
  bool hello = false;              // Hello answered
  bool path_set = false;           // DataPath received
  bool ucx = false;                // the data goes over data_ep
  std::string closing;             // why, once it must go
  bool wound_down = false;         // scans ended, receives cancelled
  bool peer_failed = false;        // the stream broke: the client is gone
  std::chrono::steady_clock::time_point accepted_at;
  std::chrono::steady_clock::time_point closing_since;
  uint64_t want_tag = 0, free_tag = 0;
  UcxRequest want_recv, free_recv;
  std::vector<uint8_t> want_buf, free_buf;
  std::set<uint64_t> scans;
  // Each address given and not yet freed, with the bodies that gave it (a
  // free takes the oldest); each body holds its block, so memory named by
  // an unfreed address is always held.
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
  Impl(ServerOptions options, OwnedQueryRunner runner)
      : options_(std::move(options)), runner_(std::move(runner)) {}
  ~Impl();
  Status Start();
  uint16_t port() const { return port_; }
  ServerStats stats() const;
  Ticket AddTicket(uint64_t owner, int64_t ttl_ms);
  void DropOwner(uint64_t owner);

  // server_scan.cc: the producer thread of one scan.
  void Produce(Scan* scan);
  // From any thread: the progress thread stops waiting.
  void Wake();

 private:
  void Loop();
  // Waits up to `timeout_ms` for the sockets and UCX, then serves what is
  // ready: new connections, handshakes, frames in, frames out.
  bool PollSockets(int timeout_ms);
  void AcceptAll();
  bool StepHandshakes();
  void ReadFrames(Connection* c);
  bool FlushAll();
  bool HandleDrops();
  std::optional<PskContext::Found> FindKey(std::string_view identity);

  // server_frames.cc
  void HandleFrame(Connection* c, const wire::Frame& f);
  void OnHello(Connection* c, const wire::Frame& f);
  void OnDataPath(Connection* c, const wire::Frame& f);
  void Answer(Connection* c, wire::Kind kind, uint64_t request, std::string body);
  void AnswerError(Connection* c, uint64_t request, uint64_t scan, const Status& st);
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
  OwnedQueryRunner runner_;
  std::shared_ptr<UcxContext> context_;  // null: no UCX, every client on its stream
  std::unique_ptr<UcxWorker> worker_;    // with context_
  std::unique_ptr<BodyPool> pool_;
  std::shared_ptr<PskContext> tls_;
  Psk token_key_;  // auth kToken
  int listen_fd_ = -1;
  int wake_fd_ = -1;                                          // an eventfd: Wake()
  std::chrono::steady_clock::time_point accept_paused_until;  // out of descriptors
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  // Tickets not yet used, by identity; owners whose sessions ended.
  struct TicketEntry {
    std::string secret;
    uint64_t owner = 0;
    std::chrono::steady_clock::time_point expires;
  };
  std::mutex tickets_mu_;
  std::unordered_map<std::string, TicketEntry> tickets_;
  std::vector<uint64_t> dropped_;

  // Progress thread only.
  uint64_t next_connection_ = 1, next_scan_ = 1;
  std::list<Handshake> handshakes_;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  std::unordered_map<uint64_t, std::unique_ptr<Scan>> scans_;
  std::list<std::unique_ptr<Scan>> ending_;  // cancelled, producer not yet joined
  std::list<std::unique_ptr<PendingSend>> sends_;
  std::vector<UcxRequest> closing_eps_;

  mutable std::mutex stats_mu_;
  ServerStats stats_;
};

}  // namespace quiver::transport
