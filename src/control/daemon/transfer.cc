// The node's tables for nodes outside its memory group: a transport server
// (src/transport/) whose only "query" is one published chunk.
//
// A reader on a node that cannot map this node's region asks for dataset
// "chunk:<id>" with an empty query. The chunk must be registered here and
// not local-only, and every region its buffers use must be mapped here (the
// reader asks a node of the chunk's own memory group: its home). For the
// scan's duration the chunk's objects in this node's region are pinned by
// the daemon's own session, so an unpublish and free cannot pull the memory
// away mid-read; the batch is decoded from its descriptor over the mapped
// regions and fully validated (its offsets are read before anyone copies
// them), then handed to the server whole: to a reader of addresses it goes
// as its own buffers' addresses in the regions (registered once, when the
// server starts), and the pin lasts until the reader freed them; to others
// it goes in packed bodies of up to kBodyBytes.
#include <charconv>

#include "control/daemon/log.h"
#include "control/daemon/node.h"
#include "control/tls/credentials.h"
#include "quiver/control/descriptor.h"

namespace quiver::control::daemon {

namespace {

constexpr std::string_view kChunkPrefix = "chunk:";
// The bodies one scan is cut into when it is copied (a client reading
// addresses gets the chunk's own buffers instead); the pool holds a window
// of them.
constexpr uint64_t kBodyBytes = uint64_t{16} << 20;
constexpr uint64_t kPoolBytes = uint64_t{96} << 20;

// The daemon's pin on a chunk's objects, released when the last buffer of
// the batch decoded over them goes: a body served in place outlives the
// scan that sent it until the client frees its addresses.
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

}  // namespace

Status StartTransfer(Node* node) {
  const auto& cfg = node->config;
  QUIVER_ASSIGN_OR_RAISE(std::string token, ReadTransportToken(cfg.credentials));
  SessionInfo self;
  self.identity.cluster = cfg.name;
  self.identity.role = PeerRole::kDaemon;
  self.identity.node = node->id;
  self.local = true;
  self.system = true;
  QUIVER_ASSIGN_OR_RAISE(const SessionId session, node->catalogue->OpenSession(self));
  transport::ServerOptions so;
  so.listen = node->self->transport;
  so.token = std::move(token);
  so.pool_size = kPoolBytes;
  so.max_batch_bytes = kBodyBytes;
  // Readers that read addresses (cma here, RDMA elsewhere) get a chunk's
  // buffers straight from the regions: the only copy is their read.
  for (memory::RegionMapping* r : node->map->regions()) {
    so.in_place.push_back({r->data(), r->data_size()});
  }
  auto server = transport::Server::Start(
      so, [node, session](const std::string& sql, const std::string& dataset) {
        return ServeChunk(node, session, sql, dataset);
      });
  if (!server.ok()) {
    return server.status().WithContext("serving tables over the transport on " +
                                       node->self->transport);
  }
  node->transfer = std::move(*server);
  Log("serving tables to nodes outside memory group '%s' on %s (UCX)",
      node->self->memory.c_str(), node->self->transport.c_str());
  return Status::OK();
}

}  // namespace quiver::control::daemon
