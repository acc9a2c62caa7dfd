#include "control/catalogue/directory.h"

#include <algorithm>
#include <set>

#include "quiver/util/string_builder.h"

namespace quiver::control {

using util::Hex;

namespace {

std::string Publisher(const ChunkMeta& c) {
  std::string s = "node " + std::to_string(c.publisher);
  if (c.publisher_pid != 0) s += " (pid " + std::to_string(c.publisher_pid) + ")";
  return s;
}

bool Overlap(const ChunkMeta& a, const ChunkMeta& b) {
  if (a.num_rows == 0 || b.num_rows == 0) return false;
  return a.first_row < b.end_row() && b.first_row < a.end_row();
}

}  // namespace

Directory::Directory(Catalogue* catalogue, const memory::ClusterConfig* config,
                     uint32_t self)
    : catalogue_(catalogue), config_(config), self_(self) {}

bool Directory::IsShadow(const ChunkMeta& c) const {
  return c.local_only && c.home != self_;
}

Result<Directory::Parsed> Directory::Parse(ChunkMeta* c) const {
  QUIVER_RETURN_NOT_OK(CheckTableName(c->name));
  if (static_cast<int64_t>(c->descriptor.size()) > kMaxDescriptorSize) {
    return Status::Invalid("descriptor of ", c->descriptor.size(),
                           " bytes exceeds the limit of ", kMaxDescriptorSize);
  }
  auto in_region = [this](uint64_t address, uint64_t length) -> Status {
    if (config_->NodeOfAddress(address, length) == nullptr) {
      return Status::Invalid("buffer [", Hex(address), ", +", length,
                             ") is not inside one region of the cluster");
    }
    return Status::OK();
  };
  QUIVER_ASSIGN_OR_RAISE(DescriptorInfo info,
                         InspectDescriptor(c->descriptor, in_region));
  if (c->num_rows != static_cast<uint64_t>(info.num_rows)) {
    return Status::Invalid("chunk says ", c->num_rows, " rows but its descriptor has ",
                           info.num_rows);
  }
  if (c->first_row + c->num_rows < c->first_row) {
    return Status::Invalid("chunk rows [", c->first_row, ", +", c->num_rows,
                           ") overflow");
  }
  Parsed p;
  p.schema = info.schema;
  std::set<uint32_t> owners;
  for (const auto& r : info.ranges) {
    if (r.length == 0) continue;
    const uint32_t n = config_->NodeOfAddress(r.address, r.length)->id;
    owners.insert(n);
    if (n == self_) p.own_ranges.push_back(r);
  }
  c->owners.assign(owners.begin(), owners.end());
  return p;
}

Status Directory::CheckNameLocked(const std::string& name,
                                  const std::vector<ChunkMeta>& chunks,
                                  const std::vector<Parsed>& parsed,
                                  const std::set<uint64_t>& incoming) const {
  std::vector<const ChunkMeta*> all;
  std::vector<const Schema*> schemas;
  // Chunks of this very request that are already here (a pull from their
  // home overtook its push) are not rivals of their siblings.
  auto it = by_name_.find(name);
  if (it != by_name_.end()) {
    for (uint64_t id : it->second) {
      if (incoming.count(id) != 0) continue;
      const Entry& e = chunks_.at(id);
      all.push_back(&e.meta);
      schemas.push_back(e.schema.get());
    }
  }
  const size_t existing = all.size();
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].name != name || IsShadow(chunks[i])) continue;
    all.push_back(&chunks[i]);
    schemas.push_back(parsed[i].schema.get());
  }
  for (size_t i = existing; i < all.size(); ++i) {
    const ChunkMeta& c = *all[i];
    for (size_t j = 0; j < i; ++j) {
      const ChunkMeta& o = *all[j];
      const bool old = j < existing;
      if (c.local_only != o.local_only) {
        return Status::AlreadyExists(
            "table '", name, "' is already published ",
            o.local_only ? "on node " : "cluster-wide by ",
            o.local_only ? std::to_string(o.home) : Publisher(o));
      }
      if (old && (!c.explicit_rows || !o.explicit_rows)) {
        return Status::AlreadyExists("table '", name, "' is already published by ",
                                     Publisher(o),
                                     "; only HugeTable chunks (an explicit first row) "
                                     "may join a published name");
      }
      if ((c.explicit_rows || o.explicit_rows) && Overlap(c, o)) {
        return Status::AlreadyExists("table '", name, "': rows [", c.first_row, ", ",
                                     c.end_row(), ") overlap the chunk of ", Publisher(o),
                                     " at rows [", o.first_row, ", ", o.end_row(), ")");
      }
      if (!schemas[i]->Equals(*schemas[j])) {
        return Status::Invalid("table '", name, "': the chunk at row ", c.first_row,
                               " has schema\n", schemas[i]->ToString(),
                               "\nwhich differs from the chunk at row ", o.first_row,
                               ":\n", schemas[j]->ToString());
      }
    }
  }
  return Status::OK();
}

Status Directory::Insert(std::vector<ChunkMeta>* chunks, const InsertOptions& options,
                         VersionStep* step) {
  // Parsing touches no shared state: outside the lock.
  std::vector<Parsed> parsed;
  for (auto& c : *chunks) {
    auto p = Parse(&c);
    if (!p.ok()) {
      return p.status().WithContext("chunk of '" + c.name + "' at row " +
                                    std::to_string(c.first_row));
    }
    if (options.as_home && !c.local_only && !c.owners.empty() && c.owners[0] != self_) {
      return Status::Invalid("the chunk of '", c.name, "' at row ", c.first_row,
                             " has its buffers on node ", c.owners[0],
                             " first: publish it there (its home), not at node ", self_);
    }
    // The home rule holds wherever a chunk arrives, not only at its home: a
    // daemon may not register, anywhere, a chunk over another node's memory
    // as its own.
    if (!c.local_only && !c.owners.empty() && c.owners[0] != c.home) {
      return Status::PermissionDenied(
          "the chunk of '", c.name, "' at row ", c.first_row, " says node ", c.home,
          " is its home, but its buffers are on node ", c.owners[0],
          " first: only that node may register it");
    }
    if (options.seal_as != 0 && !p->own_ranges.empty()) {
      QUIVER_RETURN_NOT_OK(catalogue_->Seal(options.seal_as, p->own_ranges));
    }
    parsed.push_back(std::move(*p));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (options.pull) {
    for (const auto& c : *chunks) {
      if (TouchedLocked(options.pull_home, c.id)) return Status::OK();
    }
  }
  if (step != nullptr) step->before = step->after = version_;
  std::vector<size_t> fresh;
  std::map<uint64_t, size_t> in_list;  // the same id twice in one list counts once
  for (size_t i = 0; i < chunks->size(); ++i) {
    const ChunkMeta& c = (*chunks)[i];
    // Another node's local-only chunk concerns this node only if it uses
    // this node's memory.
    if (IsShadow(c) && parsed[i].own_ranges.empty()) continue;
    const ChunkMeta* same = nullptr;
    auto it = chunks_.find(c.id);
    if (it != chunks_.end()) same = &it->second.meta;
    auto listed = in_list.find(c.id);
    if (listed != in_list.end()) same = &(*chunks)[listed->second];
    if (same == nullptr && options.pull && !parsed[i].own_ranges.empty()) {
      // A chunk using this node's memory is taken from its home's push
      // (which the publish waits for) or from this node's own record, never
      // from a list: its objects may have been freed and their memory
      // given to others since it was published.
      return Status::FailedPrecondition(
          "chunk of '", c.name, "' at row ", c.first_row, " uses node ", self_,
          "'s memory but was never registered here: not taken from node ", c.home,
          "'s list");
    } else if (same == nullptr) {
      fresh.push_back(i);
      in_list.emplace(c.id, i);
    } else if (same->descriptor != c.descriptor || same->name != c.name) {
      return Status::AlreadyExists("chunk id ", Hex(c.id), " is taken by another chunk");
    } else if (it != chunks_.end() && !options.persist && options.record != 0 &&
               it->second.record != options.record) {
      // A second record of a chunk already registered (from its first
      // record): nothing would ever free this one.
      catalogue_->FreeRecord(options.record);
    }
  }
  if (options.check_names) {
    std::set<std::string> names;
    for (size_t i : fresh) names.insert((*chunks)[i].name);
    std::vector<ChunkMeta> new_chunks;
    std::vector<Parsed> new_parsed;
    for (size_t i : fresh) {
      new_chunks.push_back((*chunks)[i]);
      new_parsed.push_back(parsed[i]);
    }
    std::set<uint64_t> request;
    for (const auto& c : *chunks) request.insert(c.id);
    for (const auto& n : names) {
      QUIVER_RETURN_NOT_OK(CheckNameLocked(n, new_chunks, new_parsed, request));
    }
  }
  // Publication references and records; undone if any fails.
  std::vector<Entry> made;
  auto undo = [&] {
    for (auto& e : made) {
      catalogue_->DropPublication(e.objects);
      if (e.record != 0 && options.persist) catalogue_->FreeRecord(e.record);
    }
  };
  for (size_t i : fresh) {
    Entry e;
    e.meta = (*chunks)[i];
    e.schema = parsed[i].schema;
    e.own_ranges = parsed[i].own_ranges;
    e.publisher = e.meta.home == self_ ? options.publisher : 0;
    e.shadow = IsShadow(e.meta);
    if (!e.own_ranges.empty()) {
      auto objects = catalogue_->AddPublication(e.own_ranges);
      if (!objects.ok()) {
        undo();
        return objects.status().WithContext("chunk of '" + e.meta.name + "' at row " +
                                            std::to_string(e.meta.first_row));
      }
      e.objects = std::move(*objects);
    }
    if (!options.persist) {
      e.record = options.record;
    } else if (e.meta.home == self_ || !e.own_ranges.empty()) {
      auto record = catalogue_->WriteRecord(e.meta.publisher, EncodeChunkRecord(e.meta));
      if (!record.ok()) {
        catalogue_->DropPublication(e.objects);
        undo();
        return record.status().WithContext("keeping the record of '" + e.meta.name + "'");
      }
      e.record = *record;
    }
    made.push_back(std::move(e));
  }
  for (auto& e : made) {
    if (e.meta.home == self_ && !options.version.reserved()) ++version_;
    if (!e.shadow) by_name_[e.meta.name].push_back(e.meta.id);
    const uint64_t id = e.meta.id;
    chunks_.emplace(id, std::move(e));
  }
  if (!made.empty()) ++changes_;
  if (step != nullptr) step->after = version_;
  return Status::OK();
}

void Directory::RemoveLocked(uint64_t id, std::vector<ChunkMeta>* removed) {
  auto it = chunks_.find(id);
  if (it == chunks_.end()) return;
  Entry& e = it->second;
  catalogue_->DropPublication(e.objects);
  if (e.record != 0) catalogue_->FreeRecord(e.record);
  if (e.meta.home == self_) ++version_;
  auto named = by_name_.find(e.meta.name);
  if (named != by_name_.end()) {
    auto& ids = named->second;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (ids.empty()) by_name_.erase(named);
  }
  if (removed != nullptr) removed->push_back(std::move(e.meta));
  chunks_.erase(it);
  ++changes_;
}

std::vector<ChunkMeta> Directory::Remove(const std::vector<uint64_t>& ids,
                                         VersionStep* step) {
  std::lock_guard<std::mutex> lock(mu_);
  if (step != nullptr) step->before = version_;
  std::vector<ChunkMeta> removed;
  for (uint64_t id : ids) RemoveLocked(id, &removed);
  if (step != nullptr) step->after = version_;
  return removed;
}

Status Directory::Pull(uint32_t home, std::vector<ChunkMeta> chunks, HomeView view) {
  Status st = Replace(home, std::move(chunks));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pulls_.find(home);
  if (it != pulls_.end()) {
    if (it->second.pushed) view.synced = false;
    pulls_.erase(it);
  }
  homes_[home] = view;
  return st;
}

Status Directory::Replace(uint32_t home, std::vector<ChunkMeta> chunks) {
  std::set<uint64_t> keep;
  for (const auto& c : chunks) keep.insert(c.id);
  {
    // Removed at one instant: a chunk a push brings after this is not
    // taken away by the older list (nor one a push brought during a pull).
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<uint64_t> gone;
    for (const auto& [id, e] : chunks_) {
      if (e.meta.home == home && !keep.count(id) && !TouchedLocked(home, id)) {
        gone.push_back(id);
      }
    }
    for (uint64_t id : gone) RemoveLocked(id, nullptr);
  }
  // Each insert checks again: what a push removed during a pull is not
  // brought back.
  InsertOptions options{.check_names = false};
  options.pull = true;
  options.pull_home = home;
  Status first;
  for (auto& c : chunks) {
    if (c.home != home) continue;
    std::vector<ChunkMeta> one{c};
    Status st = Insert(&one, options);
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

bool Directory::TouchedLocked(uint32_t home, uint64_t id) const {
  auto it = pulls_.find(home);
  return it != pulls_.end() && it->second.touched.count(id) != 0;
}

void Directory::BeginPull(uint32_t home) {
  std::lock_guard<std::mutex> lock(mu_);
  pulls_[home] = PullState{};
}

void Directory::EndPull(uint32_t home) {
  std::lock_guard<std::mutex> lock(mu_);
  pulls_.erase(home);
}

void Directory::NotePush(uint32_t home, const std::vector<uint64_t>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pulls_.find(home);
  if (it == pulls_.end()) return;  // no pull under way: nothing to protect
  it->second.pushed = true;
  it->second.touched.insert(ids.begin(), ids.end());
}

Status Directory::LoadRecords(const std::vector<FoundRecord>& records,
                              std::vector<FoundRecord>* others) {
  Status first;
  for (const auto& r : records) {
    if (others != nullptr && !IsChunkRecord(r.bytes)) {
      others->push_back(r);
      continue;
    }
    auto meta = DecodeChunkRecord(r.bytes);
    Status st = meta.status();
    if (st.ok()) {
      std::vector<ChunkMeta> one{std::move(*meta)};
      st = Insert(&one, {.check_names = false, .persist = false, .record = r.address});
    }
    if (!st.ok()) {
      catalogue_->FreeRecord(r.address);
      if (first.ok()) first = st.WithContext("record at " + Hex(r.address));
    }
  }
  return first;
}

std::vector<ChunkMeta> Directory::Lookup(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ChunkMeta> out;
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return out;
  for (uint64_t id : it->second) out.push_back(chunks_.at(id).meta);
  std::sort(out.begin(), out.end(), [](const ChunkMeta& a, const ChunkMeta& b) {
    return a.first_row != b.first_row ? a.first_row < b.first_row : a.id < b.id;
  });
  return out;
}

std::vector<ChunkMeta> Directory::HomedAt(uint32_t home) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ChunkMeta> out;
  for (const auto& [id, e] : chunks_) {
    if (e.meta.home == home) out.push_back(e.meta);
  }
  return out;
}

Directory::Listing Directory::Homed() const {
  std::lock_guard<std::mutex> lock(mu_);
  Listing out;
  out.version = version_;
  out.settled = unsettled_ == 0;
  for (const auto& [id, e] : chunks_) {
    if (e.meta.home == self_) out.chunks.push_back(e.meta);
  }
  std::sort(out.chunks.begin(), out.chunks.end(),
            [](const ChunkMeta& a, const ChunkMeta& b) { return a.id < b.id; });
  return out;
}

Result<ChunkMeta> Directory::Find(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = chunks_.find(id);
  if (it == chunks_.end()) {
    return Status::NotFound("chunk ", Hex(id), " is not published (any more) on node ",
                            self_);
  }
  return it->second.meta;
}

Result<std::vector<uint64_t>> Directory::ObjectsOf(
    const std::vector<uint64_t>& ids) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> out;
  for (uint64_t id : ids) {
    auto it = chunks_.find(id);
    if (it == chunks_.end()) {
      return Status::NotFound("chunk ", Hex(id), " is not published (any more) on node ",
                              self_);
    }
    out.insert(out.end(), it->second.objects.begin(), it->second.objects.end());
  }
  return out;
}

std::vector<TableSummary> Directory::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TableSummary> out;
  for (const auto& [name, ids] : by_name_) {
    TableSummary t;
    t.name = name;
    std::set<uint32_t> publishers, nodes;
    bool any_live = false;
    std::vector<ChunkMeta> metas;
    for (uint64_t id : ids) {
      const Entry& e = chunks_.at(id);
      metas.push_back(e.meta);
      ++t.chunks;
      t.rows += e.meta.num_rows;
      t.local_only = e.meta.local_only;
      publishers.insert(e.meta.publisher);
      nodes.insert(e.meta.home);
      nodes.insert(e.meta.owners.begin(), e.meta.owners.end());
      if (e.meta.home == self_) {
        ++t.homed_chunks;
        any_live = any_live || e.publisher != 0;
      }
      for (uint64_t o : e.objects) t.pins = std::max(t.pins, catalogue_->PinsOf(o));
    }
    t.orphaned = t.homed_chunks > 0 && !any_live;
    t.incomplete = IncompleteGroups(metas);
    t.publishers.assign(publishers.begin(), publishers.end());
    t.nodes.assign(nodes.begin(), nodes.end());
    out.push_back(std::move(t));
  }
  return out;
}

Status Directory::MayRemove(SessionId session, uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = chunks_.find(id);
  if (it == chunks_.end()) {
    return Status::NotFound("chunk ", Hex(id), " is not published on node ", self_);
  }
  const Entry& e = it->second;
  if (e.meta.home != self_) {
    return Status::Invalid("chunk ", Hex(id), " of '", e.meta.name, "' is homed at node ",
                           e.meta.home, ", not here (node ", self_, ")");
  }
  if (e.publisher != 0 && e.publisher != session) {
    return Status::PermissionDenied("table '", e.meta.name, "' at row ", e.meta.first_row,
                                    " belongs to a session of ", Publisher(e.meta),
                                    " that is still connected; only it may unpublish");
  }
  return Status::OK();
}

void Directory::SessionEnded(SessionId session) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, e] : chunks_) {
    if (e.publisher == session) e.publisher = 0;
  }
}

uint64_t Directory::version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

Directory::VersionStep Directory::ReserveVersions(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  VersionStep step{version_, version_ + n};
  version_ += n;
  ++unsettled_;
  return step;
}

void Directory::Settle() {
  std::lock_guard<std::mutex> lock(mu_);
  if (unsettled_ > 0) --unsettled_;
}

Directory::HomeView Directory::home_view(uint32_t home) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = homes_.find(home);
  return it == homes_.end() ? HomeView{} : it->second;
}

void Directory::set_home_view(uint32_t home, const HomeView& view) {
  std::lock_guard<std::mutex> lock(mu_);
  homes_[home] = view;
}

uint64_t Directory::changes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return changes_;
}

}  // namespace quiver::control
