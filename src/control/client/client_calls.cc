// quiver::Client: barriers, listing, status, ping, and the full-copy
// baseline (SendTableFull).
#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "control/client/admin.h"
#include "control/client/core.h"
#include "control/rpc/wire.h"
#include "quiver/client.h"
#include "quiver/columnar/ipc/writer.h"

namespace quiver {

using control::client::Link;
using control::rpc::Method;

namespace {

constexpr int64_t kPieceBytes = 1 << 20;
constexpr int kPiecesInFlight = 8;

// Streams `stream` into a new upload at `l` and commits it.
Status Upload(Link* l, const Buffer& stream, const std::string& name,
              std::optional<uint64_t> first_row, uint64_t rows, int timeout_ms) {
  wire::UploadBeginRequest begin;
  begin.set_name(name);
  begin.set_total_bytes(static_cast<uint64_t>(stream.size()));
  begin.set_first_row(first_row.value_or(0));
  begin.set_explicit_rows(first_row.has_value());
  wire::UploadBeginReply started;
  QUIVER_RETURN_NOT_OK(l->Call(Method::kUploadBegin, begin, &started, timeout_ms));
  // Pieces go out back to back, a few in flight, so the link stays busy.
  std::vector<Link::Pending> window;
  for (int64_t off = 0; off < stream.size(); off += kPieceBytes) {
    // The piece's bytes go from the stream to the socket, not through a
    // message of their own.
    const std::string_view data(
        reinterpret_cast<const char*>(stream.data()) + off,
        static_cast<size_t>(std::min<int64_t>(kPieceBytes, stream.size() - off)));
    window.push_back(
        l->StartEncoded(Method::kUploadPiece,
                        control::UploadPieceHead(started.upload(),
                                                 static_cast<uint64_t>(off), data.size()),
                        data));
    if (window.size() >= kPiecesInFlight) {
      QUIVER_RETURN_NOT_OK(l->Finish(&window.front(), nullptr, timeout_ms));
      window.erase(window.begin());
    }
  }
  for (auto& p : window) QUIVER_RETURN_NOT_OK(l->Finish(&p, nullptr, timeout_ms));
  wire::UploadCommitRequest commit;
  commit.set_upload(started.upload());
  wire::UploadCommitReply done;
  QUIVER_RETURN_NOT_OK(l->Call(Method::kUploadCommit, commit, &done, timeout_ms));
  if (done.num_rows() != rows) {
    return Status::IOError("node ", l->node(), " decoded ", done.num_rows(), " rows of ",
                           rows);
  }
  return Status::OK();
}

}  // namespace

Result<SendFullStats> Client::SendTableFull(const TablePtr& table,
                                            const std::string& name,
                                            std::optional<uint64_t> first_row,
                                            std::vector<uint32_t> nodes) {
  if (table == nullptr) return Status::Invalid("SendTableFull of a null table");
  if (nodes.empty()) {
    for (const auto& n : config().nodes) {
      if (n.id != options_.node) nodes.push_back(n.id);
    }
  }
  for (uint32_t n : nodes) {
    if (core_->link(n) == nullptr)
      return Status::Invalid("no node ", n, " in the cluster");
  }
  QUIVER_ASSIGN_OR_RAISE(auto stream,
                         ipc::SerializeTable(*table, ipc::IpcFormat::kStream));
  std::vector<Status> results(nodes.size());
  std::vector<std::thread> senders;
  const auto rows = static_cast<uint64_t>(table->num_rows());
  for (size_t i = 0; i < nodes.size(); ++i) {
    senders.emplace_back([&, i] {
      results[i] = Upload(core_->link(nodes[i]), *stream, name, first_row, rows,
                          options_.call_timeout_ms);
    });
  }
  for (auto& t : senders) t.join();
  for (auto& st : results) QUIVER_RETURN_NOT_OK(st);
  SendFullStats stats;
  stats.stream_bytes = static_cast<uint64_t>(stream->size());
  stats.bytes_sent = stats.stream_bytes * nodes.size();
  stats.rows = rows;
  stats.receivers = static_cast<uint32_t>(nodes.size());
  return stats;
}

Status Client::SetState(uint64_t flags, uint64_t mask) {
  wire::SetStateRequest req;
  req.set_flags(flags);
  req.set_mask(mask);
  return core_->link(options_.node)
      ->Call(Method::kSetState, req, nullptr, options_.call_timeout_ms);
}

Status Client::SyncWait(uint64_t flags, uint64_t mask, int timeout_ms,
                        std::vector<uint32_t> nodes) {
  wire::SyncWaitRequest req;
  req.set_flags(flags);
  req.set_mask(mask);
  req.set_timeout_ms(static_cast<uint32_t>(std::max(0, timeout_ms)));
  for (uint32_t n : nodes) req.add_nodes(n);
  return core_->link(options_.node)
      ->Call(Method::kSyncWait, req, nullptr, timeout_ms + options_.call_timeout_ms);
}

Status Client::WaitAllOnline(int timeout_ms) {
  wire::WaitAllOnlineRequest req;
  req.set_timeout_ms(static_cast<uint32_t>(std::max(0, timeout_ms)));
  return core_->link(options_.node)
      ->Call(Method::kWaitAllOnline, req, nullptr, timeout_ms + options_.call_timeout_ms);
}

uint64_t Client::lost_pins() const { return core_->lost_pins(); }

Result<std::vector<TableInfo>> Client::List() {
  wire::ListReply rep;
  QUIVER_RETURN_NOT_OK(
      core_->link(options_.node)
          ->Call(Method::kList, wire::Empty(), &rep, options_.call_timeout_ms));
  std::vector<TableInfo> out;
  // Whether a table is orphaned is known to each of its homes for the
  // chunks homed there: a table with chunks homed elsewhere is orphaned
  // only if every home says so (the rule each home applies to Unpublish).
  std::map<std::string, size_t> elsewhere;  // name -> chunks homed at other nodes
  for (const auto& t : rep.tables()) {
    out.push_back(control::client::FromWire(t));
    if (!t.local_only() && t.homed_chunks() < t.chunks()) {
      elsewhere[t.name()] = t.chunks() - t.homed_chunks();
      out.back().orphaned = out.back().orphaned || t.homed_chunks() == 0;
    }
  }
  if (elsewhere.empty()) return out;
  std::vector<std::pair<Link*, Link::Pending>> pending;
  for (const auto& n : config().nodes) {
    if (n.id == options_.node) continue;
    Link* l = core_->link(n.id);
    pending.emplace_back(l, l->Start(Method::kList, wire::Empty()));
  }
  std::map<std::string, size_t> seen;  // chunks the other homes vouched for
  std::set<std::string> live;          // some home has a live publisher
  for (auto& [l, p] : pending) {
    wire::ListReply theirs;
    if (!l->Finish(&p, &theirs, options_.call_timeout_ms).ok()) continue;
    for (const auto& t : theirs.tables()) {
      if (elsewhere.count(t.name()) == 0 || t.homed_chunks() == 0) continue;
      seen[t.name()] += t.homed_chunks();
      if (!t.orphaned()) live.insert(t.name());
    }
  }
  for (auto& t : out) {
    auto it = elsewhere.find(t.name);
    if (it == elsewhere.end()) continue;
    // A home that did not answer cannot vouch for its chunks.
    t.orphaned = t.orphaned && live.count(t.name) == 0 && seen[t.name] >= it->second;
  }
  return out;
}

Result<ClusterStatus> Client::GetClusterStatus() {
  wire::StatusRequest req;
  wire::StatusReply rep;
  QUIVER_RETURN_NOT_OK(core_->link(options_.node)
                           ->Call(Method::kStatus, req, &rep, options_.call_timeout_ms));
  return control::client::FromWire(rep);
}

Status Client::Ping(uint32_t node, const std::string& payload) {
  Link* l = core_->link(node);
  if (l == nullptr) return Status::Invalid("no node ", node, " in the cluster");
  wire::PingRequest req;
  req.set_payload(payload);
  wire::PingReply rep;
  QUIVER_RETURN_NOT_OK(l->Call(Method::kPing, req, &rep, options_.call_timeout_ms));
  if (rep.payload() != payload) {
    return Status::IOError("node ", node, " echoed ", rep.payload().size(), " bytes of ",
                           payload.size());
  }
  return Status::OK();
}

Status Client::Drain() { return core_->Drain(); }

}  // namespace quiver
