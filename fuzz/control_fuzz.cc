// libFuzzer target: every decoder of untrusted bytes in the control plane.
//
// The first byte of an input picks what the rest is fed to:
//   0  FrameDecoder, fed in pieces whose sizes come from the second byte
//      (a seed), with every complete frame drained after each piece. Each
//      frame must re-encode to exactly the bytes it came from; error frames
//      go through DecodeError, request and reply frames through ParseMessage
//      of their method's message. An odd seed gives the decoder a small
//      payload limit, so that the limit is exercised as well.
//   1  DecodeError. A known code must re-encode to the same bytes; anything
//      else must be an IOError (the peer's fault), never OK.
//   2  DecodeChunkRecord. An accepted record must re-encode to exactly its
//      bytes: the format has one spelling.
//   3+ ParseMessage of message type (byte - 3) % kMessages. A parsed
//      message must survive serialising and parsing again unchanged; the
//      chunks it carries must survive a chunk record round trip. Upload
//      pieces also go through the daemon's copy-free parser, which must
//      accept nothing the generated one refuses and read the same values.
// Errors are the expected outcome for most inputs; crashes, sanitizer
// reports, a broken round trip (abort), leaks and timeouts are findings.
//
// Regenerate the seeds in fuzz/corpus/control (valid frames, records and
// messages) with
//   QUIVER_CONTROL_SEEDS=fuzz/corpus/control build/.../control_fuzz
// which writes one file per seed and exits.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "control/catalogue/chunk.h"
#include "control/rpc/frame.h"
#include "control/rpc/methods.h"
#include "control/rpc/wire.h"
#include "quiver_rpc/control.pb.h"
#include "quiver_rpc/store.pb.h"

namespace {

using namespace quiver;           // NOLINT(build/namespaces)
using namespace quiver::control;  // NOLINT(build/namespaces)

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "control_fuzz: %s\n", what);
    std::abort();
  }
}

bool SameChunk(const ChunkMeta& a, const ChunkMeta& b) {
  return a.id == b.id && a.home == b.home && a.publisher == b.publisher &&
         a.publisher_pid == b.publisher_pid && a.first_row == b.first_row &&
         a.num_rows == b.num_rows && a.explicit_rows == b.explicit_rows &&
         a.local_only == b.local_only && a.name == b.name &&
         a.descriptor == b.descriptor && a.owners == b.owners;
}

// A chunk from the wire, kept as a record and read back.
void ChunkThroughRecord(const wire::Chunk& w) {
  const ChunkMeta chunk = FromWire(w);
  const std::string bytes = EncodeChunkRecord(chunk);
  auto back = DecodeChunkRecord(bytes);
  if (back.ok())
    Check(SameChunk(chunk, *back), "chunk record round trip changed a chunk");
}

template <typename M>
void ChunksOf(const M&) {}
void ChunksOf(const wire::PublishRequest& m) {
  for (const auto& c : m.chunks()) ChunkThroughRecord(c);
}
void ChunksOf(const wire::ReplicaPutRequest& m) {
  for (const auto& c : m.chunks()) ChunkThroughRecord(c);
}
void ChunksOf(const wire::ReplicaSyncReply& m) {
  for (const auto& c : m.chunks()) ChunkThroughRecord(c);
}
void ChunksOf(const wire::LookupReply& m) {
  for (const auto& c : m.chunks()) ChunkThroughRecord(c);
}

template <typename M>
void Parse(std::string_view payload) {
  auto m = ParseMessage<M>(payload);
  if (!m.ok()) return;
  const std::string once = m->SerializeAsString();
  auto again = ParseMessage<M>(once);
  Check(again.ok(), "a serialised message does not parse");
  Check(again->SerializeAsString() == once, "a message changed across a round trip");
  ChunksOf(*m);
}

// The daemon reads upload pieces with its own parser (no copy of the data):
// what it accepts, the generated one must accept with the same values.
void ParsePiece(std::string_view payload) {
  Parse<wire::UploadPieceRequest>(payload);
  auto own = ParseUploadPiece(payload);
  if (!own.ok()) return;
  auto generated = ParseMessage<wire::UploadPieceRequest>(payload);
  Check(generated.ok(), "the daemon's upload piece parser accepts a malformed message");
  Check(generated->upload() == own->upload && generated->offset() == own->offset &&
            generated->data() == own->data,
        "the two upload piece parsers disagree on a value");
}

using ParseFn = void (*)(std::string_view);

struct MessageType {
  const char* name;
  ParseFn parse;
};

// Every message a daemon or a client parses from a peer.
const MessageType kMessages[] = {
    {"Empty", Parse<wire::Empty>},
    {"OpenSessionRequest", Parse<wire::OpenSessionRequest>},
    {"OpenSessionReply", Parse<wire::OpenSessionReply>},
    {"PingRequest", Parse<wire::PingRequest>},
    {"PingReply", Parse<wire::PingReply>},
    {"MallocRequest", Parse<wire::MallocRequest>},
    {"MallocReply", Parse<wire::MallocReply>},
    {"ReallocRequest", Parse<wire::ReallocRequest>},
    {"FreeRequest", Parse<wire::FreeRequest>},
    {"FreeReply", Parse<wire::FreeReply>},
    {"SealRequest", Parse<wire::SealRequest>},
    {"FlushRequest", Parse<wire::FlushRequest>},
    {"PublishRequest", Parse<wire::PublishRequest>},
    {"PublishReply", Parse<wire::PublishReply>},
    {"UnpublishRequest", Parse<wire::UnpublishRequest>},
    {"UnpublishReply", Parse<wire::UnpublishReply>},
    {"LookupRequest", Parse<wire::LookupRequest>},
    {"LookupReply", Parse<wire::LookupReply>},
    {"PinRequest", Parse<wire::PinRequest>},
    {"PinReply", Parse<wire::PinReply>},
    {"ReleaseRequest", Parse<wire::ReleaseRequest>},
    {"ListReply", Parse<wire::ListReply>},
    {"StatusRequest", Parse<wire::StatusRequest>},
    {"StatusReply", Parse<wire::StatusReply>},
    {"UploadBeginRequest", Parse<wire::UploadBeginRequest>},
    {"UploadBeginReply", Parse<wire::UploadBeginReply>},
    {"UploadPieceRequest", ParsePiece},
    {"UploadCommitRequest", Parse<wire::UploadCommitRequest>},
    {"UploadCommitReply", Parse<wire::UploadCommitReply>},
    {"SetStateRequest", Parse<wire::SetStateRequest>},
    {"StateReply", Parse<wire::StateReply>},
    {"SyncWaitRequest", Parse<wire::SyncWaitRequest>},
    {"WaitAllOnlineRequest", Parse<wire::WaitAllOnlineRequest>},
    {"HeartbeatRequest", Parse<wire::HeartbeatRequest>},
    {"HeartbeatReply", Parse<wire::HeartbeatReply>},
    {"ReplicaPutRequest", Parse<wire::ReplicaPutRequest>},
    {"ReplicaRemoveRequest", Parse<wire::ReplicaRemoveRequest>},
    {"ReplicaSyncReply", Parse<wire::ReplicaSyncReply>},
    {"StateUpdate", Parse<wire::StateUpdate>},
    // The object store's service (proto/quiver/store.proto); appended, so
    // the selector bytes of the messages above keep their meaning.
    {"StoreIdsRequest", Parse<wire::StoreIdsRequest>},
    {"StoreCreateRequest", Parse<wire::StoreCreateRequest>},
    {"StoreCreateReply", Parse<wire::StoreCreateReply>},
    {"StoreGetRequest", Parse<wire::StoreGetRequest>},
    {"StoreGetReply", Parse<wire::StoreGetReply>},
    {"StoreReleaseRequest", Parse<wire::StoreReleaseRequest>},
    {"StoreDeleteReply", Parse<wire::StoreDeleteReply>},
    {"StoreContainsReply", Parse<wire::StoreContainsReply>},
    {"StoreListReply", Parse<wire::StoreListReply>},
    {"StoreEventsRequest", Parse<wire::StoreEventsRequest>},
    {"StoreEventsReply", Parse<wire::StoreEventsReply>},
    {"StoreEvictRequest", Parse<wire::StoreEvictRequest>},
    {"StoreEvictReply", Parse<wire::StoreEvictReply>},
    {"StoreLocateRequest", Parse<wire::StoreLocateRequest>},
    {"StoreLocateReply", Parse<wire::StoreLocateReply>},
    {"StoreReserveRequest", Parse<wire::StoreReserveRequest>},
    {"StoreReserveReply", Parse<wire::StoreReserveReply>},
    {"StoreStatusReply", Parse<wire::StoreStatusReply>},
    // Appended likewise: the transport's tickets.
    {"TransferConnectRequest", Parse<wire::TransferConnectRequest>},
    {"TransferConnectReply", Parse<wire::TransferConnectReply>},
};
constexpr size_t kNumMessages = sizeof(kMessages) / sizeof(kMessages[0]);
constexpr uint8_t kFirstMessage = 3;

// The message a request or reply frame of `method` carries
// (src/control/rpc/methods.h), or null.
ParseFn ForFrame(rpc::FrameKind kind, uint8_t method) {
  using M = rpc::Method;
  const bool request = kind == rpc::FrameKind::kRequest;
  switch (static_cast<M>(method)) {
    case M::kOpenSession:
      return request ? Parse<wire::OpenSessionRequest> : Parse<wire::OpenSessionReply>;
    case M::kPing:
      return request ? Parse<wire::PingRequest> : Parse<wire::PingReply>;
    case M::kMalloc:
      return request ? Parse<wire::MallocRequest> : Parse<wire::MallocReply>;
    case M::kRealloc:
      return request ? Parse<wire::ReallocRequest> : Parse<wire::MallocReply>;
    case M::kFree:
      return request ? Parse<wire::FreeRequest> : Parse<wire::FreeReply>;
    case M::kSeal:
      return request ? Parse<wire::SealRequest> : Parse<wire::Empty>;
    case M::kPublish:
      return request ? Parse<wire::PublishRequest> : Parse<wire::PublishReply>;
    case M::kUnpublish:
      return request ? Parse<wire::UnpublishRequest> : Parse<wire::UnpublishReply>;
    case M::kLookup:
      return request ? Parse<wire::LookupRequest> : Parse<wire::LookupReply>;
    case M::kPin:
      return request ? Parse<wire::PinRequest> : Parse<wire::PinReply>;
    case M::kRelease:
      return request ? Parse<wire::ReleaseRequest> : Parse<wire::Empty>;
    case M::kList:
      return request ? Parse<wire::Empty> : Parse<wire::ListReply>;
    case M::kStatus:
      return request ? Parse<wire::StatusRequest> : Parse<wire::StatusReply>;
    case M::kUploadBegin:
      return request ? Parse<wire::UploadBeginRequest> : Parse<wire::UploadBeginReply>;
    case M::kUploadPiece:
      return request ? ParsePiece : Parse<wire::Empty>;
    case M::kUploadCommit:
      return request ? Parse<wire::UploadCommitRequest> : Parse<wire::UploadCommitReply>;
    case M::kSetState:
      return request ? Parse<wire::SetStateRequest> : Parse<wire::Empty>;
    case M::kGetState:
      return request ? Parse<wire::Empty> : Parse<wire::StateReply>;
    case M::kSyncWait:
      return request ? Parse<wire::SyncWaitRequest> : Parse<wire::Empty>;
    case M::kWaitAllOnline:
      return request ? Parse<wire::WaitAllOnlineRequest> : Parse<wire::Empty>;
    case M::kTransferConnect:
      return request ? Parse<wire::TransferConnectRequest>
                     : Parse<wire::TransferConnectReply>;
    case M::kHeartbeat:
      return request ? Parse<wire::HeartbeatRequest> : Parse<wire::HeartbeatReply>;
    case M::kFlush:
      return request ? Parse<wire::FlushRequest> : Parse<wire::Empty>;
    case M::kReplicaPut:
      return request ? Parse<wire::ReplicaPutRequest> : Parse<wire::Empty>;
    case M::kReplicaRemove:
      return request ? Parse<wire::ReplicaRemoveRequest> : Parse<wire::Empty>;
    case M::kReplicaSync:
      return request ? Parse<wire::Empty> : Parse<wire::ReplicaSyncReply>;
    case M::kStateUpdate:
      return request ? Parse<wire::StateUpdate> : Parse<wire::Empty>;
    case M::kStoreReserve:
      return request ? Parse<wire::StoreReserveRequest> : Parse<wire::StoreReserveReply>;
    case M::kStoreUnreserve:
    case M::kStoreSeal:
    case M::kStoreAbort:
      return request ? Parse<wire::StoreIdsRequest> : Parse<wire::Empty>;
    case M::kStoreCreate:
      return request ? Parse<wire::StoreCreateRequest> : Parse<wire::StoreCreateReply>;
    case M::kStoreGet:
      return request ? Parse<wire::StoreGetRequest> : Parse<wire::StoreGetReply>;
    case M::kStoreRelease:
      return request ? Parse<wire::StoreReleaseRequest> : Parse<wire::Empty>;
    case M::kStoreDelete:
      return request ? Parse<wire::StoreIdsRequest> : Parse<wire::StoreDeleteReply>;
    case M::kStoreContains:
      return request ? Parse<wire::StoreIdsRequest> : Parse<wire::StoreContainsReply>;
    case M::kStoreList:
      return request ? Parse<wire::Empty> : Parse<wire::StoreListReply>;
    case M::kStoreEvents:
      return request ? Parse<wire::StoreEventsRequest> : Parse<wire::StoreEventsReply>;
    case M::kStoreEvict:
      return request ? Parse<wire::StoreEvictRequest> : Parse<wire::StoreEvictReply>;
    case M::kStoreLocate:
      return request ? Parse<wire::StoreLocateRequest> : Parse<wire::StoreLocateReply>;
    case M::kStoreStatus:
      return request ? Parse<wire::Empty> : Parse<wire::StoreStatusReply>;
  }
  return nullptr;
}

void ErrorFrame(std::string_view payload) {
  const Status st = rpc::DecodeError(payload);
  Check(!st.ok(), "an error frame decoded to OK");
  const auto code = payload.empty() ? 0 : static_cast<uint8_t>(payload[0]);
  if (code >= 1 && code <= static_cast<uint8_t>(StatusCode::kObjectLost)) {
    Check(rpc::EncodeError(st) == payload, "an error frame changed across a round trip");
  } else {
    Check(st.IsIOError(), "a malformed error frame was trusted");
  }
}

// A small deterministic generator for the piece sizes.
class Pieces {
 public:
  explicit Pieces(uint8_t seed) : state_(0x9E3779B97F4A7C15ULL * (seed + 1)) {}
  size_t Next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    // Mostly small pieces (header boundaries), sometimes large ones.
    return (state_ & 7) == 0 ? 1 + state_ % 65536 : 1 + (state_ >> 8) % 24;
  }

 private:
  uint64_t state_;
};

void FrameStream(std::string_view input) {
  if (input.empty()) return;
  const uint8_t seed = static_cast<uint8_t>(input[0]);
  const std::string_view stream = input.substr(1);
  rpc::FrameDecoder decoder(seed % 2 == 1 ? 64 : rpc::kMaxFramePayload);
  Pieces pieces(seed);
  size_t fed = 0, consumed = 0;
  while (fed < stream.size()) {
    const size_t n = std::min(pieces.Next(), stream.size() - fed);
    decoder.Append(stream.substr(fed, n));
    fed += n;
    for (;;) {
      rpc::FrameHeader h;
      std::string_view payload;
      auto more = decoder.Next(&h, &payload);
      if (!more.ok()) return;  // the connection would be closed here
      if (!*more) break;
      std::string again;
      rpc::AppendFrame(h.kind, h.method, h.call_id, payload, &again);
      Check(stream.substr(consumed, again.size()) == again,
            "a frame does not re-encode to its bytes");
      consumed += again.size();
      if (h.kind == rpc::FrameKind::kError) {
        ErrorFrame(payload);
      } else if (ParseFn parse = ForFrame(h.kind, h.method)) {
        parse(payload);
      }
    }
    Check(decoder.buffered() == fed - consumed, "the decoder lost or invented bytes");
  }
}

void RecordBytes(std::string_view bytes) {
  auto chunk = DecodeChunkRecord(bytes);
  if (!chunk.ok()) return;
  const std::string again = EncodeChunkRecord(*chunk);
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 8, sizeof(version));  // accepted: long enough
  if (version >= 2) {
    Check(again == bytes, "an accepted record does not re-encode");
    return;
  }
  // A version 1 record (no publish group) is written again as version 2,
  // which must read back to the same fields.
  auto back = DecodeChunkRecord(again);
  Check(back.ok() && EncodeChunkRecord(*back) == again,
        "a version 1 record does not carry over to version 2");
}

// --- Seeds -------------------------------------------------------------------

struct Seed {
  std::string name;
  std::string bytes;
};

wire::Chunk SampleChunk() {
  wire::Chunk c;
  c.set_id(0x1122334455667788ULL);
  c.set_home(0);
  c.set_publisher(1);
  c.set_publisher_pid(4242);
  c.set_first_row(1000);
  c.set_num_rows(250);
  c.set_explicit_rows(true);
  c.set_name("sensors");
  c.set_batch_descriptor(std::string("QVDESC\0\1 descriptor bytes", 25));
  c.add_owners(0);
  c.add_owners(2);
  return c;
}

std::vector<Seed> MakeSeeds() {
  std::vector<Seed> seeds;
  auto add = [&](const std::string& name, uint8_t selector, const std::string& body) {
    seeds.push_back({name, std::string(1, static_cast<char>(selector)) + body});
  };
  using M = rpc::Method;
  auto frame = [](rpc::FrameKind kind, M method, uint64_t call, const std::string& p) {
    std::string out;
    rpc::AppendFrame(kind, rpc::MethodByte(method), call, p, &out);
    return out;
  };

  wire::OpenSessionRequest open;
  open.set_pid(1234);
  open.set_program("quiver-fuzz");
  wire::MallocRequest malloc_req;
  malloc_req.set_size(1 << 20);
  malloc_req.set_alignment(64);
  wire::FreeRequest free_req;
  free_req.add_addresses(0x300000001000ULL);
  free_req.add_addresses(0x300000002000ULL);
  wire::SealRequest seal;
  auto* r = seal.add_ranges();
  r->set_address(0x300000001000ULL);
  r->set_length(4096);
  wire::PublishRequest publish;
  publish.set_name("sensors");
  *publish.add_chunks() = SampleChunk();
  publish.set_seal(true);
  wire::LookupRequest lookup;
  lookup.set_name("sensors");
  lookup.set_wait_ms(100);
  lookup.set_min_chunks(1);
  lookup.set_pin(true);
  wire::PinRequest pin;
  pin.add_chunk_ids(7);
  *pin.add_reclaim() = *r;
  wire::ReleaseRequest release;
  release.add_pins(std::string(16, '\x5A'));
  wire::HeartbeatRequest beat;
  beat.set_generation(3);
  beat.set_version(17);
  beat.set_flags(0x5);
  wire::ReplicaPutRequest put;
  put.set_generation(3);
  put.set_prev_version(16);
  put.set_version(17);
  *put.add_chunks() = SampleChunk();
  wire::ReplicaSyncReply sync;
  sync.set_generation(3);
  sync.set_version(17);
  *sync.add_chunks() = SampleChunk();
  wire::StatusReply status;
  auto* node = status.add_nodes();
  node->set_node(1);
  node->set_online(true);
  node->set_control("127.0.0.1:7600");
  node->set_backing("shm");
  auto* table = status.add_tables();
  table->set_name("sensors");
  table->set_chunks(2);
  table->add_publishers(1);

  // A conversation: requests, replies and an error, as one stream.
  const std::string conversation =
      frame(rpc::FrameKind::kRequest, M::kOpenSession, 1, open.SerializeAsString()) +
      frame(rpc::FrameKind::kRequest, M::kMalloc, 2, malloc_req.SerializeAsString()) +
      frame(rpc::FrameKind::kRequest, M::kPublish, 3, publish.SerializeAsString()) +
      frame(rpc::FrameKind::kReply, M::kHeartbeat, 4, beat.SerializeAsString()) +
      frame(rpc::FrameKind::kError, M::kLookup, 5,
            rpc::EncodeError(Status::NotFound("no table 'sensors'"))) +
      frame(rpc::FrameKind::kRequest, M::kPing, 6, "");
  add("frames_conversation", 0, std::string(1, '\x10') + conversation);
  add("frames_small_limit", 0, std::string(1, '\x11') + conversation);
  add("frames_replica", 0,
      std::string(1, '\x22') +
          frame(rpc::FrameKind::kRequest, M::kReplicaPut, 9, put.SerializeAsString()) +
          frame(rpc::FrameKind::kReply, M::kReplicaSync, 10, sync.SerializeAsString()) +
          frame(rpc::FrameKind::kReply, M::kStatus, 11, status.SerializeAsString()));
  add("error_not_found", 1, rpc::EncodeError(Status::NotFound("no table 'sensors'")));
  add("error_out_of_memory", 1,
      rpc::EncodeError(Status::OutOfMemory("exceeds the quota of 4096")));

  ChunkMeta chunk = FromWire(SampleChunk());
  add("record", 2, EncodeChunkRecord(chunk));
  chunk.local_only = true;
  chunk.explicit_rows = false;
  chunk.owners.clear();
  chunk.descriptor.clear();
  add("record_local", 2, EncodeChunkRecord(chunk));

  auto message = [&](const char* name, const std::string& bytes) {
    for (size_t i = 0; i < kNumMessages; ++i) {
      if (std::string_view(kMessages[i].name) == name) {
        add(std::string("message_") + name, static_cast<uint8_t>(kFirstMessage + i),
            bytes);
        return;
      }
    }
    Check(false, "unknown message name in the seeds");
  };
  message("OpenSessionRequest", open.SerializeAsString());
  message("MallocRequest", malloc_req.SerializeAsString());
  message("FreeRequest", free_req.SerializeAsString());
  message("SealRequest", seal.SerializeAsString());
  message("PublishRequest", publish.SerializeAsString());
  message("LookupRequest", lookup.SerializeAsString());
  message("PinRequest", pin.SerializeAsString());
  message("ReleaseRequest", release.SerializeAsString());
  message("HeartbeatRequest", beat.SerializeAsString());
  message("ReplicaPutRequest", put.SerializeAsString());
  message("ReplicaSyncReply", sync.SerializeAsString());
  message("StatusReply", status.SerializeAsString());

  // The object store's messages, and a conversation with its service.
  const std::string id(20, '\x3C');
  wire::StoreCreateRequest create;
  create.set_id(id);
  create.set_data_size(1 << 20);
  create.set_metadata_size(23);
  wire::StoreGetRequest get;
  get.set_ids(id + std::string(20, '\x6B'));
  get.set_timeout_ms(250);
  wire::StoreGetReply got;
  std::string found = id;
  for (uint64_t v : {uint64_t{0x300000001000}, uint64_t{1} << 20, uint64_t{23}}) {
    found.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  got.set_found(found);
  got.set_pin(std::string(16, '\x5A'));
  got.add_missing(std::string(20, '\x3D'));
  wire::StoreEventsReply events;
  events.set_last(41);
  events.set_generation(2);
  auto* event = events.add_events();
  event->set_seq(41);
  event->set_kind(1);
  event->set_id(id);
  event->set_data_size(1 << 20);
  wire::StoreReserveRequest reserve;
  reserve.add_ids(id);
  reserve.set_generation(2);
  wire::StoreLocateReply located;
  located.add_home_plus_one(3);
  located.add_home_plus_one(0);
  located.add_lost("");
  located.add_lost("node 2 is offline");
  wire::StoreCreateRequest create_seal = create;  // CreateAndSeal: contents inline
  create_seal.set_data_size(3);
  create_seal.set_metadata_size(1);
  create_seal.set_seal(true);
  create_seal.set_contents("abcm");
  message("StoreCreateRequest", create_seal.SerializeAsString());
  message("StoreGetRequest", get.SerializeAsString());
  message("StoreGetReply", got.SerializeAsString());
  message("StoreEventsReply", events.SerializeAsString());
  message("StoreReserveRequest", reserve.SerializeAsString());
  message("StoreLocateReply", located.SerializeAsString());
  add("frames_store", 0,
      std::string(1, '\x24') +
          frame(rpc::FrameKind::kRequest, M::kStoreCreate, 12,
                create.SerializeAsString()) +
          frame(rpc::FrameKind::kRequest, M::kStoreGet, 13, get.SerializeAsString()) +
          frame(rpc::FrameKind::kReply, M::kStoreGet, 13, got.SerializeAsString()) +
          frame(rpc::FrameKind::kReply, M::kStoreEvents, 14, events.SerializeAsString()) +
          frame(rpc::FrameKind::kError, M::kStoreGet, 15,
                rpc::EncodeError(Status::ObjectLost("node 2 is offline"))));
  return seeds;
}

void Run(std::string_view input) {
  if (input.empty()) return;
  const auto selector = static_cast<uint8_t>(input[0]);
  const std::string_view rest = input.substr(1);
  if (selector == 0) {
    FrameStream(rest);
  } else if (selector == 1) {
    ErrorFrame(rest);
  } else if (selector == 2) {
    RecordBytes(rest);
  } else {
    kMessages[(selector - kFirstMessage) % kNumMessages].parse(rest);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Protobuf logs every string field that is not UTF-8; most inputs have one.
  google::protobuf::SetLogHandler(nullptr);
  if (const char* dir = std::getenv("QUIVER_CONTROL_SEEDS")) {
    for (const Seed& s : MakeSeeds()) {
      Run(s.bytes);  // every seed passes the target's own checks
      const std::string path = std::string(dir) + "/" + s.name + ".bin";
      std::ofstream(path, std::ios::binary) << s.bytes;
      std::printf("wrote %s (%zu bytes)\n", path.c_str(), s.bytes.size());
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Run(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
