// Node: everything one daemon holds, shared by its request handlers.
//
// The handlers are thin: they parse a request, check who may call it, and
// call the catalogue, the directory or the peers; the rules live there.
// They are grouped by topic (session_service.cc, memory_service.cc,
// table_service.cc, upload_service.cc) and registered in dispatch.cc, the
// one place where a request's Status becomes the wire's error frame.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control/catalogue/catalogue.h"
#include "control/catalogue/directory.h"
#include "control/daemon/call.h"
#include "control/daemon/daemon.h"
#include "control/daemon/peers.h"
#include "control/daemon/waiters.h"
#include "control/rpc/engine.h"
#include "control/rpc/wire.h"
#include "control/tls/tls_context.h"
#include "quiver/memory/region.h"
#include "quiver/transport/server.h"

namespace quiver::control::daemon {

struct Node {
  DaemonOptions options;
  memory::ClusterConfig config;
  const memory::NodeConfig* self = nullptr;
  uint32_t id = 0;
  std::unique_ptr<memory::ClusterMap> map;
  std::optional<TlsContext> tls_server, tls_client;
  CatalogueLimits limits;
  uint32_t lease_ms = 15000;
  uint32_t grace_ms = 10000;
  uint64_t generation = 0;

  std::unique_ptr<Catalogue> catalogue;
  std::unique_ptr<Directory> directory;
  std::unique_ptr<rpc::Engine> engine;
  std::unique_ptr<Peers> peers;
  std::unique_ptr<Waiters> waiters;
  std::unique_ptr<WorkerPool> workers;
  // Serves this node's tables to nodes outside its memory group (transfer.cc).
  std::unique_ptr<transport::Server> transfer;

  std::vector<std::unique_ptr<Service>> services;  // options.services, made
  // Records found at take-over that are not chunk records, until the
  // services have claimed theirs.
  std::vector<FoundRecord> service_records;

  std::atomic<uint64_t> flags{0};  // this node's state word (barriers)
  std::atomic<bool> stopping{false};

  memory::RegionAllocator* allocator() { return map->local_region()->allocator(); }
  // Something a parked call may wait for changed.
  void Changed() { waiters->Notify(); }
  // "" if every node of `nodes` is usable, else why not.
  std::string LostReason(const std::vector<uint32_t>& nodes) const;
  // Flushes [address, +length) from this process's caches; large ranges go
  // to a worker so an I/O thread is never busy for milliseconds. When
  // `cancelled` says so (checked every 64 MiB) it stops and `done` gets
  // Cancelled: the caller left.
  void FlushThen(std::vector<BufferRange> ranges, std::function<void(Status)> done,
                 std::function<bool()> cancelled = nullptr);
  // Protocol step 2 for a new range before it is handed out: every node
  // drops it from its caches (`caller`'s node does its own when the answer
  // arrives); `done` gets the first failure.
  void FlushEverywhere(BufferRange range, uint32_t caller,
                       std::function<void(Status)> done);
  // The service of type T, or null.
  template <typename T>
  T* service() const {
    for (const auto& s : services) {
      if (auto* t = dynamic_cast<T*>(s.get())) return t;
    }
    return nullptr;
  }
};

// transfer.cc: starts `transfer` on the node's transport address.
Status StartTransfer(Node* node);

// session_service.cc
void HandleOpenSession(Node&, const CallPtr&, std::string_view);
void HandlePing(Node&, const CallPtr&, std::string_view);
void HandleSetState(Node&, const CallPtr&, std::string_view);
void HandleGetState(Node&, const CallPtr&, std::string_view);
void HandleSyncWait(Node&, const CallPtr&, std::string_view);
void HandleWaitAllOnline(Node&, const CallPtr&, std::string_view);
void HandleStatus(Node&, const CallPtr&, std::string_view);
void HandleHeartbeat(Node&, const CallPtr&, std::string_view);
void HandleStateUpdate(Node&, const CallPtr&, std::string_view);
// The connection closed: its session's memory and pins go (not while the
// daemon stops: the region keeps them for the next daemon to recover).
void CloseSession(Node&, const rpc::ConnectionPtr&, const Status& why);
// Drops client sessions silent for longer than their lease.
void ExpireSilentSessions(Node&);

// memory_service.cc
void HandleMalloc(Node&, const CallPtr&, std::string_view);
void HandleRealloc(Node&, const CallPtr&, std::string_view);
void HandleFree(Node&, const CallPtr&, std::string_view);
void HandleSeal(Node&, const CallPtr&, std::string_view);
void HandleFlush(Node&, const CallPtr&, std::string_view);

// table_service.cc
void HandlePublish(Node&, const CallPtr&, std::string_view);
void HandleUnpublish(Node&, const CallPtr&, std::string_view);
void HandleLookup(Node&, const CallPtr&, std::string_view);
void HandlePin(Node&, const CallPtr&, std::string_view);
void HandleRelease(Node&, const CallPtr&, std::string_view);
void HandleList(Node&, const CallPtr&, std::string_view);
// The tables as this node sees them (List, Status).
void FillTables(Node& node, google::protobuf::RepeatedPtrField<wire::TableInfo>* out);
void HandleReplicaPut(Node&, const CallPtr&, std::string_view);
void HandleReplicaRemove(Node&, const CallPtr&, std::string_view);
void HandleReplicaSync(Node&, const CallPtr&, std::string_view);
// Registers chunks homed here (validated, records kept) and on every peer;
// `done` gets the new chunks' ids, or the error after undoing everything.
void PublishChunks(Node& node, std::vector<ChunkMeta> chunks, SessionId publisher,
                   SessionId seal_as,
                   std::function<void(Result<std::vector<uint64_t>>)> done);

// upload_service.cc
void HandleUploadBegin(Node&, const CallPtr&, std::string_view);
void HandleUploadPiece(Node&, const CallPtr&, std::string_view);
void HandleUploadCommit(Node&, const CallPtr&, std::string_view);
// Frees what a closing connection's unfinished uploads held.
void DropUploads(Node&, ConnectionState& state);

}  // namespace quiver::control::daemon
