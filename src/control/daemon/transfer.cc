// The node's tables for nodes outside its memory group: a transport server
// (src/transport/) whose only "query" is one published chunk.
//
// Who may connect: a client session of this daemon, authenticated by the
// control plane's mutual TLS (or the node's socket), asks TransferConnect
// and gets a ticket, a pre-shared key good for one transport connection;
// the transport's TLS handshake proves it. No cluster-wide secret exists,
// and nothing a peer sends reaches UCX before that handshake.
//
// A reader on a node that cannot map this node's region asks for dataset
// "chunk:<id>" with an empty query. The chunk must be registered here and
// not local-only, and every region its buffers use must be mapped here (the
// reader asks a node of the chunk's own memory group: its home). For the
// scan's duration the chunk's objects in this node's region are pinned for
// the reader's own session, so an unpublish and free cannot pull the memory
// away mid-read, and the session's end releases them with everything else
// it held (its transport connections are closed then too); the batch is
// decoded from its descriptor over the mapped regions and fully validated
// (its offsets are read before anyone copies them), then copied by the
// server into its pool, in bodies of up to kBodyBytes. No region is
// registered with UCX: no reader gets a key to this node's memory.
#include "control/daemon/transfer.h"

#include <charconv>
#include <memory>

#include "control/daemon/log.h"
#include "control/daemon/node.h"
#include "control/rpc/wire.h"
#include "quiver/control/descriptor.h"

namespace quiver::control::daemon {

namespace {

constexpr std::string_view kChunkPrefix = "chunk:";
// The bodies one scan is cut into when it is copied (a client reading
// addresses gets the chunk's own buffers instead); the pool holds a window
// of them.
constexpr uint64_t kBodyBytes = uint64_t{16} << 20;
constexpr uint64_t kPoolBytes = uint64_t{96} << 20;
// How long a ticket waits for its connection.
constexpr uint32_t kTicketMs = 10000;

// The reader's pin on a chunk's objects (taken for its session), released
// when the last buffer of the batch decoded over them goes, or with the
// session.
struct ChunkPin {
  Node* node;
  SessionId session;
  Handle pin;
  ~ChunkPin() { (void)node->catalogue->Release(session, pin); }
};

Result<uint64_t> ParseChunkId(const std::string& dataset) {
  const std::string_view d = dataset;
  uint64_t id = 0;
  if (d.substr(0, kChunkPrefix.size()) == kChunkPrefix) {
    const char* first = d.data() + kChunkPrefix.size();
    const char* last = d.data() + d.size();
    auto [end, ec] = std::from_chars(first, last, id);
    if (ec == std::errc() && end == last && first != last) return id;
  }
  return Status::Invalid(
      "a Quiver node's transport serves datasets 'chunk:<id>' (a "
      "decimal chunk id), not '",
      dataset.substr(0, 64), dataset.size() > 64 ? "..." : "", "'");
}

Result<std::shared_ptr<RecordBatchReader>> ServeChunk(Node* node, SessionId session,
                                                      const std::string& sql,
                                                      const std::string& dataset) {
  if (session == 0) {
    return Status::PermissionDenied("a transport connection without a client session");
  }
  if (!sql.empty()) {
    return Status::Invalid(
        "a Quiver node's transport runs no queries: ask for a chunk "
        "with an empty query");
  }
  QUIVER_ASSIGN_OR_RAISE(const uint64_t id, ParseChunkId(dataset));
  QUIVER_ASSIGN_OR_RAISE(ChunkMeta chunk, node->directory->Find(id));
  if (chunk.local_only) {
    return Status::PermissionDenied("chunk ", id, " of '", chunk.name,
                                    "' is published for its own node only");
  }
  for (uint32_t owner : chunk.owners) {
    if (node->map->region(owner) == nullptr) {
      return Status::Invalid("chunk ", id, " of '", chunk.name, "' uses node ", owner,
                             "'s memory, which node ", node->id,
                             " does not map: ask node ", chunk.home);
    }
  }
  QUIVER_ASSIGN_OR_RAISE(auto objects, node->directory->ObjectsOf({id}));
  QUIVER_ASSIGN_OR_RAISE(Handle pin, node->catalogue->Pin(session, objects));
  auto hold = std::make_shared<ChunkPin>(ChunkPin{node, session, pin});
  auto reader = [&]() -> Result<std::shared_ptr<RecordBatchReader>> {
    auto mapped = [node](uint64_t address, uint64_t length) -> Status {
      if (node->map->RegionOf(reinterpret_cast<const void*>(address), length) ==
          nullptr) {
        return Status::Invalid("buffer [", util::Hex(address), ", +", length,
                               ") is not inside a region mapped here");
      }
      return Status::OK();
    };
    QUIVER_ASSIGN_OR_RAISE(auto batch,
                           DecodeDescriptor(chunk.descriptor, mapped, std::move(hold)));
    QUIVER_RETURN_NOT_OK(batch->ValidateFull());
    // One batch: the transport server cuts it into bodies where it must.
    return RecordBatchReader::FromBatches(batch->schema(), {batch});
  }();
  if (!reader.ok()) {
    return reader.status().WithContext("chunk " + std::to_string(id) + " of '" +
                                       chunk.name + "'");
  }
  return reader;
}

// When a client session ends, so do its tickets and transport connections
// (their scans end, their blocks go back to the pool).
class TransferSessions final : public Service {
 public:
  explicit TransferSessions(Node* node) : node_(node) {}
  void SessionClosed(SessionId session) override {
    if (node_->transfer != nullptr) node_->transfer->DropOwner(session);
  }

 private:
  Node* node_;
};

}  // namespace

void HandleTransferConnect(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::TransferConnectRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  const SessionId session = call->state().session;
  if (session == 0) {
    return call->Fail(Status::PermissionDenied("TransferConnect needs a client session"));
  }
  if (node.stopping) return call->Fail(Status::Unavailable("the daemon is stopping"));
  if (node.transfer == nullptr) {
    return call->Fail(
        Status::Unavailable("node ", node.id,
                            " serves no transport: give it a `transport` address in the "
                            "cluster file"));
  }
  const transport::Ticket ticket = node.transfer->AddTicket(session, kTicketMs);
  wire::TransferConnectReply rep;
  rep.set_identity(ticket.identity);
  rep.set_secret(ticket.secret);
  rep.set_ttl_ms(kTicketMs);
  call->Reply(rep);
}

Status StartTransfer(Node* node) {
  transport::ServerOptions so;
  so.listen = node->self->transport;
  so.auth = transport::ServerOptions::Auth::kTickets;
  so.pool_size = kPoolBytes;
  so.max_batch_bytes = kBodyBytes;
  auto server = transport::Server::Start(
      so, [node](const std::string& sql, const std::string& dataset, uint64_t owner) {
        return ServeChunk(node, owner, sql, dataset);
      });
  if (!server.ok()) {
    return server.status().WithContext("serving tables over the transport on " +
                                       node->self->transport);
  }
  node->transfer = std::move(*server);
  // Runs before the engine serves its first request: the list is not yet
  // read by any other thread.
  node->services.push_back(std::make_unique<TransferSessions>(node));
  Log("serving tables to nodes outside memory group '%s' on %s (TLS, tickets)",
      node->self->memory.c_str(), node->self->transport.c_str());
  return Status::OK();
}

}  // namespace quiver::control::daemon
