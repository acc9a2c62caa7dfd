// Directory: what a node knows of the cluster's published tables.
//
// Every node holds every chunk (a replica: lookups need no round trip),
// except chunks published for one node only (local_only): those are
// visible on their home alone, and the nodes whose memory they use keep a
// hidden *shadow* of them, for the publication references and the record.
// Each chunk has a *home*, the lowest node whose region holds its buffers:
// the home decides whether it exists (publish and unpublish go there) and
// keeps its record; every other node follows the home (pushes, then pulls
// when a heartbeat shows its version moved). On every node, a chunk that
// uses the node's own region holds a publication reference on those
// objects in the catalogue, so they are never freed while published, and
// a record of it, so that a restart finds them published again.
//
// Thread-safe; calls the catalogue (never the other way round).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "control/catalogue/catalogue.h"
#include "control/catalogue/chunk.h"
#include "quiver/columnar/type.h"
#include "quiver/memory/cluster_config.h"

namespace quiver::control {

// One table as a node sees it.
struct TableSummary {
  std::string name;
  uint32_t chunks = 0;
  uint64_t rows = 0;
  std::vector<uint32_t> publishers;  // nodes, ascending
  std::vector<uint32_t> nodes;       // every home and owner its chunks need
  bool local_only = false;
  uint32_t homed_chunks = 0;  // of `chunks`, those homed at this node
  bool orphaned = false;      // some homed here, and their publishing sessions ended
  uint32_t pins = 0;          // pins on its objects held at this node
  std::string incomplete;     // IncompleteGroups of its chunks ("" when whole)
};

class Directory {
 public:
  // `catalogue` and `config` must outlive the directory.
  Directory(Catalogue* catalogue, const memory::ClusterConfig* config, uint32_t self);

  // What this node last took from another home.
  struct HomeView {
    uint64_t generation = 0, version = 0;
    bool synced = false;
  };
  // The version of the chunks homed here before and after a change.
  struct VersionStep {
    uint64_t before = 0, after = 0;
    bool reserved() const { return after != before; }
  };
  struct InsertOptions {
    bool check_names = true;  // refuse what conflicts with published chunks
    SessionId publisher = 0;  // at the home: the publishing session
    bool persist = true;      // keep a record here (false: it is already there)
    uint64_t record = 0;      // with persist false: the record's address
    SessionId seal_as = 0;    // seal this session's objects the chunks use first
    bool as_home = false;     // refuse chunks whose home is another node
    // Set: the version step was reserved (ReserveVersions) and is not taken
    // again.
    VersionStep version{};
    // Set (a pull from `pull_home`): a chunk a push touched since the pull
    // began is left as the push left it (OK, nothing registered), and a
    // chunk new here that uses this node's memory is refused
    // (FailedPrecondition): owners take chunks from pushes and records only.
    bool pull = false;
    uint32_t pull_home = 0;
  };
  // Registers chunks, all or nothing. Each descriptor is parsed here once
  // (framing, types, every buffer inside one region); buffers in this
  // node's region must lie in sealed objects, which get a publication
  // reference. Fills each chunk's `owners`. AlreadyExists when a name is
  // taken (unless every chunk involved is a HugeTable chunk and no row
  // ranges overlap); the same chunk again is accepted and changes nothing.
  Status Insert(std::vector<ChunkMeta>* chunks, const InsertOptions& options,
                VersionStep* step = nullptr);
  // Removes chunks (their references and records go). Returns those removed.
  std::vector<ChunkMeta> Remove(const std::vector<uint64_t>& ids,
                                VersionStep* step = nullptr);
  // A home's complete list: what this node holds for that home becomes
  // exactly `chunks`, but for chunks a push touched during a pull under way
  // (see Pull). Chunks that cannot be registered here are skipped and
  // reported.
  Status Replace(uint32_t home, std::vector<ChunkMeta> chunks);
  // Pulls from `home`, on the puller's side. BeginPull before asking for
  // the list; NotePush before applying each push from `home` (the chunk ids
  // it adds or removes); Pull to apply the list (its version in `view`),
  // which ends the pull. The list may be older than what pushes brought
  // meanwhile: Replace, except that a chunk a push touched since BeginPull
  // stays as the push left it. If any push came, the view is left unsynced
  // (the next heartbeat pulls again); otherwise `view` becomes this node's
  // view of the home. EndPull abandons a pull.
  void BeginPull(uint32_t home);
  void NotePush(uint32_t home, const std::vector<uint64_t>& ids);
  Status Pull(uint32_t home, std::vector<ChunkMeta> chunks, HomeView view);
  void EndPull(uint32_t home);

  // Records found in this node's region after a take-over: registered
  // (homed here: authoritative; elsewhere: until the home says otherwise).
  // Corrupt records, and records whose objects are gone, are freed.
  // With `others`, records that are not chunk records (another magic: a
  // service's, control/daemon/service.h) are left there instead.
  Status LoadRecords(const std::vector<FoundRecord>& records,
                     std::vector<FoundRecord>* others = nullptr);

  std::vector<ChunkMeta> Lookup(const std::string& name) const;  // by first_row
  std::vector<ChunkMeta> HomedAt(uint32_t home) const;
  // Home side: the chunks homed here with the version they make, read at
  // one instant, ascending by id. Not `settled` while a reserved step is
  // still being registered here (its version is counted, its chunks may
  // not be in yet): no peer may take such a list as that version.
  struct Listing {
    uint64_t version = 0;
    bool settled = true;
    std::vector<ChunkMeta> chunks;
  };
  Listing Homed() const;
  // The chunk with this id (NotFound if it is not registered here).
  Result<ChunkMeta> Find(uint64_t id) const;
  // This node's objects used by these chunks (NotFound if one is unknown).
  Result<std::vector<uint64_t>> ObjectsOf(const std::vector<uint64_t>& ids) const;
  std::vector<TableSummary> List() const;

  // Home side: may `session` remove this chunk? Its publisher may, and
  // anyone once the publishing session has ended (the chunk is orphaned).
  Status MayRemove(SessionId session, uint64_t id) const;
  void SessionEnded(SessionId session);

  // Version of the chunks homed here (+1 per change).
  uint64_t version() const;
  // Moves the version on by `n` now, for chunks a home registers on its
  // peers while it registers them itself (Insert with options.version);
  // Settle once that Insert returned, whatever it returned.
  VersionStep ReserveVersions(uint64_t n);
  void Settle();
  HomeView home_view(uint32_t home) const;
  void set_home_view(uint32_t home, const HomeView& view);
  // +1 on every change (waiting lookups watch it).
  uint64_t changes() const;

 private:
  struct Entry {
    ChunkMeta meta;
    SchemaPtr schema;
    std::vector<BufferRange> own_ranges;
    std::vector<uint64_t> objects;  // own objects holding a publication reference
    uint64_t record = 0;
    SessionId publisher = 0;  // at the home; 0 once the session ended
    bool shadow = false;      // another node's local-only chunk using our memory
  };
  struct Parsed {
    SchemaPtr schema;
    std::vector<BufferRange> own_ranges;
  };
  Result<Parsed> Parse(ChunkMeta* chunk) const;
  bool IsShadow(const ChunkMeta& chunk) const;
  Status CheckNameLocked(const std::string& name, const std::vector<ChunkMeta>& chunks,
                         const std::vector<Parsed>& parsed,
                         const std::set<uint64_t>& incoming) const;
  void RemoveLocked(uint64_t id, std::vector<ChunkMeta>* removed);
  bool TouchedLocked(uint32_t home, uint64_t id) const;

  Catalogue* catalogue_;
  const memory::ClusterConfig* config_;
  const uint32_t self_;

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Entry> chunks_;
  std::map<std::string, std::vector<uint64_t>> by_name_;
  std::map<uint32_t, HomeView> homes_;
  struct PullState {
    bool pushed = false;         // a push came since BeginPull
    std::set<uint64_t> touched;  // chunk ids those pushes added or removed
  };
  std::map<uint32_t, PullState> pulls_;  // homes being pulled from
  uint64_t version_ = 0;
  uint32_t unsettled_ = 0;  // reserved steps whose Insert has not returned
  uint64_t changes_ = 0;
};

}  // namespace quiver::control
