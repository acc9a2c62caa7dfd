// SendTableFull, the full-copy baseline: a client streams a table as Arrow
// IPC into memory this daemon allocates for the client's session (within
// its quota), then the daemon decodes it in place (zero-copy) and publishes
// it on this node only. Every byte belongs to the session until published:
// an upload that fails, or whose client goes away, leaves nothing behind.
#include <cstring>

#include "control/catalogue/session_pool.h"
#include "control/daemon/log.h"
#include "control/daemon/node.h"
#include "control/rpc/wire.h"
#include "quiver/columnar/ipc/reader.h"

namespace quiver::control::daemon {

namespace {

constexpr size_t kMaxUploadsPerSession = 16;

// Decodes the uploaded stream in place and makes local-only chunks of it.
// The buffers it needed anew are in `scratch` (sealed, held by the session).
Result<std::vector<ChunkMeta>> ChunksOf(Node& node, SessionId session, const Upload& up,
                                        SessionPool* scratch,
                                        std::vector<std::shared_ptr<Buffer>>* keep) {
  auto data = Buffer::Wrap(reinterpret_cast<const uint8_t*>(up.address),
                           static_cast<int64_t>(up.total));
  QUIVER_ASSIGN_OR_RAISE(auto table, ipc::ReadTableFromBuffer(data));
  QUIVER_ASSIGN_OR_RAISE(auto batches, table->ToRecordBatches());
  if (batches.empty()) return Status::Invalid("the stream holds no record batch");
  std::vector<ChunkMeta> chunks;
  uint64_t row = up.first_row;
  for (const auto& batch : batches) {
    ChunkMeta c;
    QUIVER_ASSIGN_OR_RAISE(c.descriptor,
                           EncodeDescriptor(*batch, scratch, nullptr, keep));
    c.name = up.name;
    c.first_row = row;
    c.num_rows = static_cast<uint64_t>(batch->num_rows());
    c.explicit_rows = up.explicit_rows;
    c.local_only = true;
    row += c.num_rows;
    chunks.push_back(std::move(c));
  }
  std::vector<BufferRange> seal = scratch->made();
  seal.push_back({up.address, up.total});
  QUIVER_RETURN_NOT_OK(node.catalogue->Seal(session, seal));
  return chunks;
}

void Commit(Node& node, const CallPtr& call, SessionId session, Upload up) {
  auto scratch = std::make_shared<SessionPool>(node.catalogue.get(), session,
                                               SessionPool::OnFree::kLetGo);
  auto keep = std::make_shared<std::vector<std::shared_ptr<Buffer>>>();
  auto chunks = ChunksOf(node, session, up, scratch.get(), keep.get());
  auto let_go = [&node, session, up, scratch, keep] {
    keep->clear();  // scratch buffers: the pool lets go of them
    (void)node.catalogue->Free(session, {up.address});
  };
  if (!chunks.ok()) {
    let_go();
    return call->Fail(
        chunks.status().WithContext("SendTableFull: decoding the IPC stream"));
  }
  uint64_t rows = 0;
  for (auto& c : *chunks) {
    rows += c.num_rows;
    c.publisher = call->state().info.identity.node;
    c.publisher_pid = call->state().info.pid;
  }
  PublishChunks(node, std::move(*chunks), session, 0,
                [call, up, rows, let_go](Result<std::vector<uint64_t>> ids) {
                  // Published: the chunks hold the memory now. Refused (a name
                  // taken): letting go frees it all.
                  let_go();
                  if (!ids.ok()) return call->Fail(ids.status());
                  wire::UploadCommitReply rep;
                  rep.set_bytes_received(up.received);
                  rep.set_num_rows(rows);
                  call->Reply(rep);
                });
}

}  // namespace

void HandleUploadBegin(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::UploadBeginRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  Status name_ok = CheckTableName(req->name());
  if (!name_ok.ok()) return call->Fail(name_ok);
  if (req->total_bytes() == 0) return call->Fail(Status::Invalid("an empty upload"));
  ConnectionState& st = call->state();
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (st.uploads.size() >= kMaxUploadsPerSession) {
      return call->Fail(Status::CapacityError(
          "a session may have ", kMaxUploadsPerSession, " uploads in progress at most"));
    }
  }
  auto a = node.catalogue->Allocate(st.session, req->total_bytes(), 64);
  if (!a.ok()) return call->Fail(a.status().WithContext("SendTableFull"));
  Upload up;
  up.address = a->address;
  up.total = req->total_bytes();
  up.name = req->name();
  up.first_row = req->first_row();
  up.explicit_rows = req->explicit_rows();
  wire::UploadBeginReply rep;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    const uint64_t id = st.next_upload++;
    st.uploads.emplace(id, up);
    rep.set_upload(id);
  }
  call->Reply(rep);
}

void HandleUploadPiece(Node&, const CallPtr& call, std::string_view payload) {
  // The piece's bytes are read where they arrived, copied once: into the
  // upload's memory.
  auto req = ParseUploadPiece(payload);
  if (!req.ok()) return call->Fail(req.status());
  ConnectionState& st = call->state();
  std::lock_guard<std::mutex> lock(st.mu);
  auto it = st.uploads.find(req->upload);
  if (it == st.uploads.end() || it->second.committing) {
    return call->Fail(Status::NotFound("no upload ", req->upload, " in progress"));
  }
  Upload& up = it->second;
  const std::string_view data = req->data;
  if (req->offset != up.received) {
    return call->Fail(Status::Invalid("upload piece at offset ", req->offset, " but ",
                                      up.received, " bytes were received"));
  }
  if (data.size() > up.total - up.received) {
    return call->Fail(Status::Invalid("upload of ", up.total, " bytes: a piece of ",
                                      data.size(), " at offset ", up.received,
                                      " goes past its end"));
  }
  std::memcpy(reinterpret_cast<uint8_t*>(up.address) + up.received, data.data(),
              data.size());
  up.received += data.size();
  call->ReplyEmpty();
}

void HandleUploadCommit(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::UploadCommitRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  ConnectionState& st = call->state();
  Upload up;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    auto it = st.uploads.find(req->upload());
    if (it == st.uploads.end()) {
      return call->Fail(Status::NotFound("no upload ", req->upload(), " in progress"));
    }
    if (it->second.received != it->second.total) {
      return call->Fail(Status::Invalid("upload ended after ", it->second.received,
                                        " of ", it->second.total, " bytes"));
    }
    up = it->second;
    st.uploads.erase(it);
  }
  const SessionId session = st.session;
  // Decoding and re-encoding a large table takes a while: off the I/O thread.
  if (!node.workers->TryPost(
          [&node, call, session, up] { Commit(node, call, session, up); })) {
    (void)node.catalogue->Free(session, {up.address});
    call->Fail(Status::CapacityError("node ", node.id, " is busy; try again"));
  }
}

void DropUploads(Node&, ConnectionState& state) {
  // The memory is the session's: closing the session frees it.
  std::lock_guard<std::mutex> lock(state.mu);
  state.uploads.clear();
}

}  // namespace quiver::control::daemon
