// Subscriptions: every home's event log read from where the cursor stands,
// polling the homes at once.
#include <algorithm>
#include <charconv>

#include "control/client/link.h"
#include "quiver_rpc/store.pb.h"
#include "store/client/store_impl.h"

namespace quiver::store {

using control::rpc::Method;

namespace {

// A long wait is cut in slices so that events of one home do not wait for
// the other homes' slices to run out.
constexpr int64_t kSliceMs = 50;

}  // namespace

std::string EventCursor::ToString() const {
  std::string out;
  for (const auto& [home, seq] : last) {
    if (!out.empty()) out += ",";
    out += std::to_string(home) + ":" + std::to_string(seq);
  }
  return out;
}

Result<EventCursor> EventCursor::FromString(std::string_view text) {
  EventCursor c;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(pos, comma - pos);
    const size_t colon = item.find(':');
    uint32_t home = 0;
    uint64_t seq = 0;
    auto parse = [](std::string_view t, auto* v) {
      auto r = std::from_chars(t.data(), t.data() + t.size(), *v);
      return r.ec == std::errc() && r.ptr == t.data() + t.size() && !t.empty();
    };
    if (colon == std::string_view::npos || !parse(item.substr(0, colon), &home) ||
        !parse(item.substr(colon + 1), &seq)) {
      return Status::Invalid("event cursor '", text, "': '", item,
                             "' is not NODE:SEQUENCE");
    }
    if (!c.last.emplace(home, seq).second) {
      return Status::Invalid("event cursor '", text, "': node ", home, " appears twice");
    }
    pos = comma + 1;
    if (pos == text.size()) {
      return Status::Invalid("event cursor '", text, "' ends with a comma");
    }
  }
  return c;
}

struct Subscription::State {
  ObjectStore::Impl* store = nullptr;
  std::map<uint32_t, uint64_t> generation;  // home -> region generation seen
  std::vector<uint32_t> lost;
};

Subscription::Subscription(std::unique_ptr<State> state) : state_(std::move(state)) {}
Subscription::~Subscription() = default;

Result<std::unique_ptr<Subscription>> ObjectStore::Subscribe(const EventCursor& from) {
  auto state = std::make_unique<Subscription::State>();
  state->store = impl_.get();
  std::unique_ptr<Subscription> sub(new Subscription(std::move(state)));
  sub->cursor_ = from;
  for (uint32_t n : impl_->nodes()) sub->cursor_.last.emplace(n, 0);
  return sub;
}

std::vector<uint32_t> Subscription::TakeLost() { return std::exchange(state_->lost, {}); }

Result<std::vector<ObjectEvent>> Subscription::Next(int64_t timeout_ms) {
  ObjectStore::Impl& s = *state_->store;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(std::max<int64_t>(0, timeout_ms));
  std::vector<ObjectEvent> out;
  for (bool first = true;; first = false) {
    const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                             deadline - std::chrono::steady_clock::now())
                             .count();
    if (!first && left <= 0) return out;
    const auto wait = static_cast<uint32_t>(first ? 0 : std::min(left, kSliceMs));
    std::vector<
        std::tuple<uint32_t, control::client::Link*, control::client::Link::Pending>>
        pending;
    for (const auto& [home, seq] : cursor_.last) {
      auto l = s.Link(home);
      if (!l.ok()) continue;
      wire::StoreEventsRequest req;
      req.set_after(seq);
      req.set_wait_ms(wait);
      pending.emplace_back(home, *l, (*l)->Start(Method::kStoreEvents, req));
    }
    bool any_reached = false;
    for (auto& [home, l, p] : pending) {
      wire::StoreEventsReply rep;
      if (!l->Finish(&p, &rep, control::client::WithWait(s.call_timeout_ms, wait)).ok())
        continue;
      any_reached = true;
      uint64_t& last = cursor_.last[home];
      auto g = state_->generation.find(home);
      if (g != state_->generation.end() && g->second != rep.generation()) {
        // The home restarted: its numbering started again.
        last = 0;
        state_->lost.push_back(home);
      }
      state_->generation[home] = rep.generation();
      if (rep.lost()) state_->lost.push_back(home);
      for (const auto& e : rep.events()) {
        auto id = ObjectId::FromBinary(e.id());
        if (!id.ok() || e.seq() <= last || e.kind() < 1 || e.kind() > 3) continue;
        ObjectEvent ev;
        ev.kind = static_cast<ObjectEvent::Kind>(e.kind());
        ev.id = *id;
        ev.home = home;
        ev.seq = e.seq();
        ev.data_size = e.data_size();
        ev.metadata_size = e.metadata_size();
        last = e.seq();
        out.push_back(ev);
      }
    }
    if (!out.empty()) return out;
    if (!any_reached && !first) {
      return Status::Unavailable("no node of the cluster answered for events");
    }
  }
}

}  // namespace quiver::store
