// The methods of Quiver's control protocol: the frame's method byte, the
// messages of proto/quiver/control.proto it carries, and who may call it
// (docs/protocol.md has the table).
#pragma once

#include <cstdint>

namespace quiver::control::rpc {

enum class Method : uint8_t {
  kOpenSession = 1,  // OpenSessionRequest -> OpenSessionReply; first on a connection
  kPing = 2,         // PingRequest -> PingReply

  // Memory, at the region's owner (clients).
  kMalloc = 10,   // MallocRequest -> MallocReply
  kRealloc = 11,  // ReallocRequest -> MallocReply
  kFree = 12,     // FreeRequest -> FreeReply
  kSeal = 13,     // SealRequest -> Empty

  // Tables (clients).
  kPublish = 20,    // PublishRequest -> PublishReply, at the chunks' home
  kUnpublish = 21,  // UnpublishRequest -> UnpublishReply, at the chunks' home
  kLookup = 22,     // LookupRequest -> LookupReply, at the reader's own daemon
  kPin = 23,        // PinRequest -> PinReply, at an owner
  kRelease = 24,    // ReleaseRequest -> Empty, where the pins were taken
  kList = 25,       // Empty -> ListReply
  kStatus = 26,     // StatusRequest -> StatusReply (daemons: local_only)

  // The full-copy baseline (clients).
  kUploadBegin = 30,   // UploadBeginRequest -> UploadBeginReply
  kUploadPiece = 31,   // UploadPieceRequest -> Empty
  kUploadCommit = 32,  // UploadCommitRequest -> UploadCommitReply

  // Barriers (clients of this node).
  kSetState = 40,       // SetStateRequest -> Empty
  kGetState = 41,       // Empty -> StateReply
  kSyncWait = 42,       // SyncWaitRequest -> Empty
  kWaitAllOnline = 43,  // WaitAllOnlineRequest -> Empty

  // Rows of another memory group (clients, at a chunk's home): a key to
  // the home's transport for this session.
  kTransferConnect = 50,  // TransferConnectRequest -> TransferConnectReply

  // The object store (proto/quiver/store.proto), served by the store
  // layer's service (src/store/daemon/).
  kStoreCreate = 70,    // StoreCreateRequest -> StoreCreateReply, at the home
  kStoreSeal = 71,      // StoreIdsRequest -> Empty, at the home
  kStoreAbort = 72,     // StoreIdsRequest -> Empty, at the home
  kStoreGet = 73,       // StoreGetRequest -> StoreGetReply, at the home
  kStoreRelease = 74,   // StoreReleaseRequest -> Empty, at the home
  kStoreDelete = 75,    // StoreIdsRequest -> StoreDeleteReply, at the home
  kStoreContains = 76,  // StoreIdsRequest -> StoreContainsReply, at the home
  kStoreList = 77,      // Empty -> StoreListReply, objects homed there
  kStoreEvents = 78,    // StoreEventsRequest -> StoreEventsReply, at a home
  kStoreEvict = 79,     // StoreEvictRequest -> StoreEvictReply
  kStoreLocate = 80,    // StoreLocateRequest -> StoreLocateReply, at the directory node
  kStoreStatus = 81,    // Empty -> StoreStatusReply

  // Daemon to daemon.
  kHeartbeat = 60,      // HeartbeatRequest -> HeartbeatReply
  kFlush = 61,          // FlushRequest -> Empty
  kReplicaPut = 62,     // ReplicaPutRequest -> Empty
  kReplicaRemove = 63,  // ReplicaRemoveRequest -> Empty
  kReplicaSync = 64,    // ReplicaSyncRequest -> ReplicaSyncReply (by pages)
  kStateUpdate = 65,    // StateUpdate -> Empty
  kStoreReserve = 66,   // StoreReserveRequest -> StoreReserveReply, at the directory node
  kStoreUnreserve = 67,  // StoreIdsRequest -> Empty, at the directory node
};

inline uint8_t MethodByte(Method m) { return static_cast<uint8_t>(m); }

// The method's name for messages ("Malloc"), or nullptr if unknown.
const char* MethodName(uint8_t method);

}  // namespace quiver::control::rpc
