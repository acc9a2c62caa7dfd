// Memory at the region's owner: allocation for a client session, with
// protocol step 2 (every node drops the new range from its caches) done
// before the address is handed out; realloc, free and seal.
#include <algorithm>
#include <functional>

#include "control/daemon/log.h"
#include "control/daemon/node.h"
#include "control/rpc/wire.h"
#include "quiver/coherence/flush.h"

namespace quiver::control::daemon {

namespace {

using util::Hex;

// Flushing a range this small inline costs less than handing it over.
constexpr uint64_t kInlineFlushBytes = 1u << 20;

// A flush a peer could not get because it is down (no link, or declared
// offline) is no failure: a node that is down holds nothing in its caches.
// A live peer that does not answer in time is one: the allocation is not
// handed out with stale lines possibly left there.
bool PeerDown(const Status& st) { return st.code() == StatusCode::kUnavailable; }

// Protocol step 2 for a new range, then `done`. A flush (clflushopt and
// its kin) empties the line from every cache of the node it runs on, so the
// caller, a process of node `caller`, does it for its own node when the
// answer arrives; this daemon does it for its node (unless that is the
// caller's) and asks every other node's daemon at once.
}  // namespace

void Node::FlushEverywhere(BufferRange range, uint32_t caller,
                           std::function<void(Status)> done) {
  Node& node = *this;
  // No cache outside the region's coherent host can hold its lines.
  if (config.Coherent(range.address, range.length)) return done(Status::OK());
  auto others = [&node, range, caller, done = std::move(done)](Status st) {
    if (!st.ok()) return done(st);
    std::vector<uint32_t> rest;
    for (const auto& n : node.config.nodes) {
      // Nodes outside this node's memory group cannot hold its lines.
      if (n.id != node.id && n.id != caller && node.config.SharesMemory(node.id, n.id)) {
        rest.push_back(n.id);
      }
    }
    if (rest.empty()) return done(Status::OK());
    wire::FlushRequest req;
    ToWire({range}, req.mutable_ranges());
    node.peers->CallAll(
        rpc::Method::kFlush, req.SerializeAsString(),
        [done](Peers::Results results) {
          for (auto& [peer, r] : results) {
            if (!r.ok() && !PeerDown(r.status())) {
              return done(
                  r.status().WithContext("flushing at node " + std::to_string(peer)));
            }
          }
          done(Status::OK());
        },
        &rest);
  };
  if (caller == node.id) return others(Status::OK());
  node.FlushThen({range}, std::move(others));
}

void Node::FlushThen(std::vector<BufferRange> ranges, std::function<void(Status)> done,
                     std::function<bool()> cancelled) {
  uint64_t total = 0;
  for (const auto& r : ranges) total += r.length;
  auto flush = [ranges, cancelled = std::move(cancelled)] {
    constexpr uint64_t kPiece = uint64_t{64} << 20;
    for (const auto& r : ranges) {
      for (uint64_t at = 0; at < r.length; at += kPiece) {
        if (cancelled && cancelled()) {
          return Status::Cancelled("the flush's caller left after ", at, " bytes");
        }
        QUIVER_RETURN_NOT_OK(
            coherence::FlushRange(reinterpret_cast<const void*>(r.address + at),
                                  std::min(kPiece, r.length - at)));
      }
    }
    return Status::OK();
  };
  if (total <= kInlineFlushBytes) return done(flush());
  auto shared = std::make_shared<std::function<void(Status)>>(std::move(done));
  if (!workers->TryPost([flush, shared] { (*shared)(flush()); })) {
    (*shared)(Status::CapacityError("node ", id, " is busy flushing; try again"));
  }
}

// Flushes `got` wherever a stale line of it could be (the caller's node does
// its own) and replies with it; on failure runs `undo` and says `what`.
void ReplyWithPrepared(Node& node, const CallPtr& call, Allocation got, const char* what,
                       std::function<void()> undo) {
  node.FlushEverywhere({got.address, got.size}, call->state().info.identity.node,
                       [call, got, what, undo = std::move(undo)](Status st) {
                         if (!st.ok()) {
                           if (undo) undo();
                           return call->Fail(st.WithContext(what));
                         }
                         wire::MallocReply rep;
                         rep.set_address(got.address);
                         rep.set_size(got.size);
                         call->Reply(rep);
                       });
}

void HandleMalloc(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::MallocRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  const SessionId session = call->state().session;
  auto a = node.catalogue->Allocate(session, req->size(), req->alignment());
  if (!a.ok()) return call->Fail(a.status());
  const uint64_t address = a->address;
  ReplyWithPrepared(
      node, call, *a, "preparing the new allocation",
      [&node, session, address] { (void)node.catalogue->Free(session, {address}); });
}

void HandleRealloc(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::ReallocRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  auto a = node.catalogue->Reallocate(call->state().session, req->address(),
                                      req->new_size(), req->alignment());
  if (!a.ok()) return call->Fail(a.status());
  ReplyWithPrepared(node, call, *a, "preparing the moved allocation", nullptr);
}

void HandleFree(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::FreeRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  std::vector<uint64_t> addresses(req->addresses().begin(), req->addresses().end());
  uint32_t freed = 0, deferred = 0;
  Status st = node.catalogue->Free(call->state().session, addresses, &freed, &deferred);
  if (!st.ok()) return call->Fail(st);
  wire::FreeReply rep;
  rep.set_freed(freed);
  rep.set_deferred(deferred);
  call->Reply(rep);
}

void HandleSeal(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::SealRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  auto ranges = FromWire(req->ranges());
  for (const auto& r : ranges) {
    if (r.length != 0 && !node.self->Contains(r.address, r.length)) {
      return call->Fail(Status::Invalid("range [", Hex(r.address), ", +", r.length,
                                        ") is not in node ", node.id,
                                        "'s region; seal it at its owner"));
    }
  }
  call->Finish(node.catalogue->Seal(call->state().session, ranges));
}

void HandleFlush(Node& node, const CallPtr& call, std::string_view payload) {
  auto req = ParseMessage<wire::FlushRequest>(payload);
  if (!req.ok()) return call->Fail(req.status());
  auto ranges = FromWire(req->ranges());
  for (const auto& r : ranges) {
    if (r.length != 0 && node.config.NodeOfAddress(r.address, r.length) == nullptr) {
      return call->Fail(Status::Invalid("range [", Hex(r.address), ", +", r.length,
                                        ") is not inside one region of the cluster"));
    }
    if (r.length != 0 && node.map->RegionOf(reinterpret_cast<const void*>(r.address),
                                            r.length) == nullptr) {
      return call->Fail(Status::Invalid("range [", Hex(r.address), ", +", r.length,
                                        ") is in a region node ", node.id,
                                        " does not map (another memory group)"));
    }
  }
  // A caller that leaves (closes, dies) stops the flush it asked for.
  std::weak_ptr<rpc::Connection> conn = call->connection();
  node.FlushThen(
      std::move(ranges), [call](Status st) { call->Finish(st); },
      [conn] {
        auto c = conn.lock();
        return c == nullptr || c->closed();
      });
}

}  // namespace quiver::control::daemon
