// Directory: chunk records across restarts, what a home lists, who may
// remove, local-only chunks and their shadows.
#include "control/directory_test_util.h"

namespace quiver::control {
namespace {

using namespace directory_testing;  // NOLINT: the fixture of these tests

TEST_F(DirectoryTest, RecordsBringChunksBackAfterARestart) {
  const SessionId s = Open(0, 0);
  MemoryPool* pool = Pool(0, s);
  Built a = MakeBatch({pool}, 0, 10), b = MakeBatch({pool}, 10, 10);
  Built lone = MakeBatch({pool}, 0, 3);  // sealed, never published
  ASSERT_OK(cats_[0]->Seal(s, lone.ranges));
  std::vector<ChunkMeta> chunks{Meta(1, 0, "huge", a, 0, true),
                                Meta(2, 0, "huge", b, 10, true)};
  ASSERT_OK(Publish(0, s, &chunks));
  const auto published = ObjectsIn(0, a);
  const auto also = ObjectsIn(0, b);
  const auto unclaimed = ObjectsIn(0, lone);

  const auto records = Restart(0);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(dirs_[0]->Lookup("huge").empty());  // a new, empty directory
  ASSERT_OK(dirs_[0]->LoadRecords(records));
  auto found = dirs_[0]->Lookup("huge");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].id, 1u);
  EXPECT_EQ(found[1].id, 2u);
  EXPECT_EQ(found[0].descriptor, a.descriptor);
  EXPECT_EQ(found[0].owners, std::vector<uint32_t>{0});
  EXPECT_EQ(found[0].publisher_pid, 4242);
  EXPECT_TRUE(found[0].explicit_rows);
  for (uint64_t o : published) EXPECT_EQ(cats_[0]->PublicationsOf(o), 1u);
  // The publishing session is gone: the restored chunks are orphans
  // anyone may remove.
  const SessionId other = Open(0, 0);
  ASSERT_OK(dirs_[0]->MayRemove(other, 1));
  EXPECT_TRUE(dirs_[0]->List()[0].orphaned);

  // Grace over: what no record or reader claimed goes; published stays.
  cats_[0]->EndRecovery();
  for (uint64_t o : unclaimed) EXPECT_FALSE(regions_[0]->IsLive(o));
  for (uint64_t o : published) EXPECT_TRUE(regions_[0]->IsLive(o));
  // Nobody is their creator any more: removing them frees them, and their
  // records.
  dirs_[0]->Remove({1, 2});
  for (uint64_t o : published) EXPECT_FALSE(regions_[0]->IsLive(o));
  for (uint64_t o : also) EXPECT_FALSE(regions_[0]->IsLive(o));
  EXPECT_EQ(cats_[0]->Stats().records, 0u);
  // And a second restart finds nothing.
  EXPECT_TRUE(Restart(0).empty());
}

TEST_F(DirectoryTest, LoadedRecordsAreNotWrittenAgain) {
  const SessionId s = Open(0, 0);
  Built a = MakeBatch({Pool(0, s)}, 0, 10);
  std::vector<ChunkMeta> chunks{Meta(1, 0, "t", a)};
  ASSERT_OK(Publish(0, s, &chunks));
  const uint64_t live = regions_[0]->live();
  {
    const auto records = Restart(0);
    ASSERT_OK(dirs_[0]->LoadRecords(records));
  }
  EXPECT_EQ(regions_[0]->live(), live);
  EXPECT_EQ(cats_[0]->Stats().records, 1u);
  // Restart again and again: still one record.
  {
    const auto records = Restart(0);
    ASSERT_OK(dirs_[0]->LoadRecords(records));
  }
  EXPECT_EQ(cats_[0]->Stats().records, 1u);
  EXPECT_EQ(dirs_[0]->Lookup("t").size(), 1u);
}

TEST_F(DirectoryTest, CorruptRecordsAreFreed) {
  const SessionId s = Open(0, 0);
  MemoryPool* pool = Pool(0, s);
  Built a = MakeBatch({pool}, 0, 10), b = MakeBatch({pool}, 10, 10);
  std::vector<ChunkMeta> chunks{Meta(1, 0, "good", a)};
  ASSERT_OK(Publish(0, s, &chunks));
  chunks = {Meta(2, 0, "bad", b)};
  ASSERT_OK(Publish(0, s, &chunks));
  // Some process of the node scribbles on the second record.
  uint64_t bad_record = 0;
  ASSERT_OK(regions_[0]->allocator()->ForEach([&](const memory::AllocationInfo& info) {
    if (!tag::Record(info.tag)) return;
    const std::string_view bytes(reinterpret_cast<const char*>(info.address),
                                 info.requested);
    if (bytes.find("bad") != std::string_view::npos) bad_record = info.address;
  }));
  ASSERT_NE(bad_record, 0u);
  reinterpret_cast<char*>(bad_record)[20] ^= 0x40;
  const uint64_t live = regions_[0]->live();
  const auto good_objects = ObjectsIn(0, a), bad_objects = ObjectsIn(0, b);

  const auto records = Restart(0);
  ASSERT_EQ(records.size(), 2u);
  Status st = dirs_[0]->LoadRecords(records);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(Contains(st.ToString(), "checksum")) << st.ToString();
  EXPECT_EQ(dirs_[0]->Lookup("good").size(), 1u);  // the others still load
  EXPECT_TRUE(dirs_[0]->Lookup("bad").empty());
  EXPECT_FALSE(regions_[0]->IsLive(bad_record));
  EXPECT_EQ(regions_[0]->live(), live - 1);
  EXPECT_EQ(cats_[0]->Stats().records, 1u);
  // Its objects are then unclaimed: freed when the grace period ends.
  cats_[0]->EndRecovery();
  for (uint64_t o : bad_objects) EXPECT_FALSE(regions_[0]->IsLive(o));
  for (uint64_t o : good_objects) EXPECT_TRUE(regions_[0]->IsLive(o));
}

TEST_F(DirectoryTest, RecordsWhoseObjectsAreGoneAreFreed) {
  const SessionId s = Open(0, 0);
  Built a = MakeBatch({Pool(0, s)}, 0, 10);
  ASSERT_OK(cats_[0]->Seal(s, a.ranges));
  // A well-formed record naming memory that is no object any more (as if
  // the daemon died between freeing the objects and the record).
  ChunkMeta meta = Meta(1, 0, "t", a);
  meta.owners = {0};
  ASSERT_OK_AND_ASSIGN(uint64_t rec, cats_[0]->WriteRecord(0, EncodeChunkRecord(meta)));
  ASSERT_OK(cats_[0]->Free(s, ObjectsIn(0, a)));
  const auto records = Restart(0);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(dirs_[0]->LoadRecords(records).ok());
  EXPECT_FALSE(regions_[0]->IsLive(rec));
  EXPECT_TRUE(dirs_[0]->Lookup("t").empty());
}

// Two records of one chunk (left by a daemon that wrote it twice): the
// chunk loads once and the extra record is freed, not left in the region
// untracked, where nothing would ever free it.
TEST_F(DirectoryTest, ADuplicateRecordIsFreed) {
  const SessionId s = Open(0, 0);
  Built a = MakeBatch({Pool(0, s)}, 0, 10);
  std::vector<ChunkMeta> chunks{Meta(1, 0, "t", a)};
  ASSERT_OK(Publish(0, s, &chunks));
  ASSERT_OK(cats_[0]->WriteRecord(0, EncodeChunkRecord(chunks[0])).status());
  const auto records = Restart(0);
  ASSERT_EQ(records.size(), 2u);
  (void)dirs_[0]->LoadRecords(records);
  EXPECT_EQ(dirs_[0]->Lookup("t").size(), 1u);
  EXPECT_EQ(cats_[0]->Stats().records, 1u);
  cats_[0]->EndRecovery();
  dirs_[0]->Remove({1});
  EXPECT_EQ(cats_[0]->Stats().records, 0u);
  EXPECT_EQ(regions_[0]->live(), 0u) << "a record (or what it holds) was left behind";
}

// ---------------------------------------------------------------------------
// Replicas of other homes

TEST_F(DirectoryTest, ReplaceKeepsExactlyWhatTheHomeLists) {
  // Chunks homed at node 1 (their memory is node 1's), replicated at 0.
  const SessionId s1 = Open(1, 1);
  MemoryPool* p1 = Pool(1, s1);
  Built x = MakeBatch({p1}, 0, 5), y = MakeBatch({p1}, 5, 5);
  std::vector<ChunkMeta> homed{Meta(11, 1, "x", x), Meta(12, 1, "y", y)};
  ASSERT_OK(Publish(1, s1, &homed));
  // And one homed at node 0 itself.
  const SessionId s0 = Open(0, 0);
  Built own = MakeBatch({Pool(0, s0)}, 0, 5);
  std::vector<ChunkMeta> mine{Meta(1, 0, "own", own)};
  ASSERT_OK(Publish(0, s0, &mine));
  const uint64_t live0 = regions_[0]->live();
  const uint64_t version0 = dirs_[0]->version();

  ASSERT_OK(dirs_[0]->Replace(1, dirs_[1]->HomedAt(1)));
  EXPECT_EQ(dirs_[0]->Lookup("x").size(), 1u);
  EXPECT_EQ(dirs_[0]->Lookup("y").size(), 1u);
  EXPECT_EQ(dirs_[0]->Lookup("x")[0].owners, std::vector<uint32_t>{1});
  EXPECT_EQ(dirs_[0]->HomedAt(1).size(), 2u);
  // Node 0 keeps no record of chunks that neither live here nor use its
  // memory, and its own version does not move for other homes' chunks.
  EXPECT_EQ(regions_[0]->live(), live0);
  EXPECT_EQ(dirs_[0]->version(), version0);

  // The home removed x: the next full list drops it here.
  dirs_[1]->Remove({11});
  ASSERT_OK(dirs_[0]->Replace(1, dirs_[1]->HomedAt(1)));
  EXPECT_TRUE(dirs_[0]->Lookup("x").empty());
  EXPECT_EQ(dirs_[0]->Lookup("y").size(), 1u);
  // Chunks of other homes in the list are not this home's to give.
  std::vector<ChunkMeta> stray = dirs_[1]->HomedAt(1);
  ChunkMeta foreign = Meta(99, 2, "stray", y);
  stray.push_back(foreign);
  ASSERT_OK(dirs_[0]->Replace(1, stray));
  EXPECT_TRUE(dirs_[0]->Lookup("stray").empty());
  // An empty list empties the home; node 0's own chunks stay.
  ASSERT_OK(dirs_[0]->Replace(1, {}));
  EXPECT_TRUE(dirs_[0]->HomedAt(1).empty());
  EXPECT_EQ(dirs_[0]->Lookup("own").size(), 1u);
  EXPECT_EQ(dirs_[0]->version(), version0);
}

// A home registers a chunk on its peers while it registers it itself, so a
// peer can hold a chunk its home's list does not show yet. Seen as a race
// of two publishers: the winner's chunk vanished from a third node, pulled
// away by a list taken in that window, after the publish had succeeded.
TEST_F(DirectoryTest, APullNeverUndoesWhatAPushBrought) {
  const SessionId s1 = Open(1, 1);
  Built x = MakeBatch({Pool(1, s1)}, 0, 5), y = MakeBatch({Pool(1, s1)}, 5, 5);
  std::vector<ChunkMeta> chunks{Meta(21, 1, "x", x)};
  // Node 0 begins a pull; the home reserves a step and pushes; node 0
  // applies the push.
  dirs_[0]->BeginPull(1);
  const auto reserved = dirs_[1]->ReserveVersions(1);
  dirs_[0]->NotePush(1, {21});
  std::vector<ChunkMeta> pushed = chunks;
  ASSERT_OK(dirs_[0]->Insert(&pushed, {}));
  // The home's list of that instant counts the step, lacks the chunk, and
  // says so (the daemon then abandons the pull).
  auto early = dirs_[1]->Homed();
  EXPECT_EQ(early.version, reserved.after);
  EXPECT_FALSE(early.settled);
  EXPECT_TRUE(early.chunks.empty());
  // Even applied, the older list leaves the pushed chunk, and the view
  // unsynced: the next heartbeat pulls again.
  ASSERT_OK(dirs_[0]->Pull(1, early.chunks, {7, early.version, true}));
  EXPECT_EQ(dirs_[0]->Lookup("x").size(), 1u);
  EXPECT_FALSE(dirs_[0]->home_view(1).synced);
  // The home registers it and settles: its list is whole, and a pull with
  // no push meanwhile is in step.
  Directory::InsertOptions options{.publisher = s1, .seal_as = s1, .as_home = true};
  options.version = reserved;
  ASSERT_OK(dirs_[1]->Insert(&chunks, options));
  dirs_[1]->Settle();
  auto whole = dirs_[1]->Homed();
  EXPECT_TRUE(whole.settled);
  EXPECT_EQ(whole.version, reserved.after);
  ASSERT_EQ(whole.chunks.size(), 1u);
  dirs_[0]->BeginPull(1);
  ASSERT_OK(dirs_[0]->Pull(1, whole.chunks, {7, whole.version, true}));
  EXPECT_EQ(dirs_[0]->Lookup("x").size(), 1u);
  EXPECT_TRUE(dirs_[0]->home_view(1).synced);
  EXPECT_EQ(dirs_[0]->home_view(1).version, whole.version);
  // A removal pushed during a pull is not undone by its list, while the
  // rest of the list (a chunk node 0 missed) is taken.
  std::vector<ChunkMeta> more{Meta(22, 1, "y", y)};
  ASSERT_OK(Publish(1, s1, &more));
  auto listed = dirs_[1]->Homed();
  ASSERT_EQ(listed.chunks.size(), 2u);
  dirs_[0]->BeginPull(1);
  dirs_[0]->NotePush(1, {21});
  dirs_[0]->Remove({21});
  ASSERT_OK(dirs_[0]->Pull(1, listed.chunks, {7, listed.version, true}));
  EXPECT_TRUE(dirs_[0]->Lookup("x").empty());
  EXPECT_EQ(dirs_[0]->Lookup("y").size(), 1u);
  EXPECT_FALSE(dirs_[0]->home_view(1).synced);
  // Pushes with no pull under way are only applied.
  dirs_[0]->NotePush(1, {22});
  dirs_[0]->BeginPull(1);
  dirs_[0]->EndPull(1);
  ASSERT_OK(dirs_[0]->Pull(1, listed.chunks, {7, listed.version, true}));
  EXPECT_EQ(dirs_[0]->Lookup("x").size(), 1u);  // no push during this pull
  EXPECT_TRUE(dirs_[0]->home_view(1).synced);
}

TEST_F(DirectoryTest, ReplicasThatUseThisNodesMemoryHoldItAndKeepARecord) {
  // A chunk homed at node 0 whose second column lives in node 1's region:
  // node 1 holds a publication reference on those objects and a record.
  const SessionId s0 = Open(0, 0), s1 = Open(1, 0);
  Built b = MakeBatch({Pool(0, s0), Pool(1, s1)}, 0, 20);
  ASSERT_OK(cats_[1]->Seal(s1, RangesIn(1, b)));  // the client seals at each owner
  std::vector<ChunkMeta> chunks{Meta(5, 0, "wide", b)};
  ASSERT_OK(Publish(0, s0, &chunks));
  EXPECT_EQ(chunks[0].owners, (std::vector<uint32_t>{0, 1}));
  const auto theirs = ObjectsIn(1, b);
  ASSERT_FALSE(theirs.empty());
  const uint64_t live1 = regions_[1]->live();

  // The home's push (an owner takes such a chunk from no list).
  std::vector<ChunkMeta> pushed = dirs_[0]->HomedAt(0);
  ASSERT_OK(dirs_[1]->Insert(&pushed, {}));
  EXPECT_EQ(dirs_[1]->Lookup("wide").size(), 1u);
  for (uint64_t o : theirs) EXPECT_EQ(cats_[1]->PublicationsOf(o), 1u);
  EXPECT_EQ(regions_[1]->live(), live1 + 1);  // its record
  ASSERT_OK_AND_ASSIGN(auto objects, dirs_[1]->ObjectsOf({5}));
  std::sort(objects.begin(), objects.end());
  EXPECT_EQ(objects, theirs);
  // Only the home decides: node 1 may not remove it for anyone.
  EXPECT_TRUE(dirs_[1]->MayRemove(s1, 5).IsInvalid());

  // Node 1 restarts: its record brings the replica back until the home
  // says otherwise; its client's objects stay held.
  ASSERT_OK(cats_[1]->Free(s1, theirs));
  {
    const auto records = Restart(1);
    ASSERT_OK(dirs_[1]->LoadRecords(records));
  }
  EXPECT_EQ(dirs_[1]->Lookup("wide").size(), 1u);
  cats_[1]->EndRecovery();
  for (uint64_t o : theirs) EXPECT_TRUE(regions_[1]->IsLive(o));
  // The home unpublishes; its next list frees node 1's objects and record.
  dirs_[0]->Remove({5});
  ASSERT_OK(dirs_[1]->Replace(0, dirs_[0]->HomedAt(0)));
  EXPECT_TRUE(dirs_[1]->Lookup("wide").empty());
  for (uint64_t o : theirs) EXPECT_FALSE(regions_[1]->IsLive(o));
  EXPECT_EQ(cats_[1]->Stats().records, 0u);
}

// ---------------------------------------------------------------------------
// Who may remove

TEST_F(DirectoryTest, OnlyThePublisherRemovesUntilItsSessionEnds) {
  const SessionId s = Open(0, 0), other = Open(0, 0);
  Built b = MakeBatch({Pool(0, s)}, 0, 5);
  std::vector<ChunkMeta> chunks{Meta(1, 0, "t", b)};
  ASSERT_OK(Publish(0, s, &chunks));
  Status st = dirs_[0]->MayRemove(other, 1);
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "still connected")) << st.ToString();
  ASSERT_OK(dirs_[0]->MayRemove(s, 1));
  EXPECT_FALSE(dirs_[0]->List()[0].orphaned);
  // Another session ending changes nothing.
  dirs_[0]->SessionEnded(other);
  EXPECT_EQ(dirs_[0]->MayRemove(other, 1).code(), StatusCode::kPermissionDenied);
  // Once the publisher's session ended, the chunk is an orphan: anyone may.
  dirs_[0]->SessionEnded(s);
  ASSERT_OK(dirs_[0]->MayRemove(other, 1));
  EXPECT_TRUE(dirs_[0]->List()[0].orphaned);
  EXPECT_TRUE(dirs_[0]->MayRemove(other, 999).IsNotFound());
}

// ---------------------------------------------------------------------------
// Local-only chunks and shadows

TEST_F(DirectoryTest, LocalOnlyChunksAreVisibleOnTheirHomeAlone) {
  const SessionId s0 = Open(0, 0);
  Built b = MakeBatch({Pool(0, s0)}, 0, 5);
  std::vector<ChunkMeta> chunks{Meta(1, 0, "mine", b)};
  chunks[0].local_only = true;
  ASSERT_OK(Publish(0, s0, &chunks));
  auto tables = dirs_[0]->List();
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_TRUE(tables[0].local_only);
  EXPECT_EQ(dirs_[0]->Lookup("mine").size(), 1u);
  // A cluster-wide chunk may not take a name published locally.
  Built c = MakeBatch({Pool(0, s0)}, 5, 5);
  std::vector<ChunkMeta> wide{Meta(2, 0, "mine", c, 5, true)};
  EXPECT_EQ(Publish(0, s0, &wide).code(), StatusCode::kAlreadyExists);
  // Another node given it (its memory is node 0's only) ignores it.
  ASSERT_OK(dirs_[1]->Insert(&chunks, {.check_names = false}));
  EXPECT_TRUE(dirs_[1]->Lookup("mine").empty());
  EXPECT_TRUE(dirs_[1]->List().empty());
  EXPECT_TRUE(dirs_[1]->ObjectsOf({1}).status().IsNotFound());
  EXPECT_EQ(cats_[1]->Stats().records, 0u);
}

TEST_F(DirectoryTest, LocalOnlyChunksUsingThisNodesMemoryAreShadows) {
  // Homed at node 0, local to it, but with a column in node 1's memory.
  const SessionId s0 = Open(0, 0), s1 = Open(1, 0);
  Built b = MakeBatch({Pool(0, s0), Pool(1, s1)}, 0, 8);
  ASSERT_OK(cats_[1]->Seal(s1, RangesIn(1, b)));
  std::vector<ChunkMeta> chunks{Meta(3, 0, "local", b)};
  chunks[0].local_only = true;
  ASSERT_OK(Publish(0, s0, &chunks));
  const auto theirs = ObjectsIn(1, b);

  std::vector<ChunkMeta> pushed = dirs_[0]->HomedAt(0);  // the home's push
  ASSERT_OK(dirs_[1]->Insert(&pushed, {}));
  // Invisible at node 1...
  EXPECT_TRUE(dirs_[1]->Lookup("local").empty());
  EXPECT_TRUE(dirs_[1]->List().empty());
  // ...but it holds node 1's objects and keeps a record there.
  for (uint64_t o : theirs) EXPECT_EQ(cats_[1]->PublicationsOf(o), 1u);
  EXPECT_EQ(cats_[1]->Stats().records, 1u);
  ASSERT_OK(dirs_[1]->ObjectsOf({3}).status());
  ASSERT_OK(cats_[1]->Free(s1, theirs));
  for (uint64_t o : theirs) EXPECT_TRUE(regions_[1]->IsLive(o));
  // A shadow takes no name at node 1: a table of that name may be published.
  const SessionId t1 = Open(1, 1);
  Built other = MakeBatch({Pool(1, t1)}, 0, 3);
  std::vector<ChunkMeta> wide{Meta(4, 1, "local", other)};
  ASSERT_OK(Publish(1, t1, &wide));
  EXPECT_EQ(Ids(dirs_[1]->Lookup("local")), std::vector<uint64_t>{4});
  // The shadow survives a restart of node 1, still hidden.
  {
    const auto records = Restart(1);
    ASSERT_OK(dirs_[1]->LoadRecords(records));
  }
  EXPECT_EQ(Ids(dirs_[1]->Lookup("local")), std::vector<uint64_t>{4});
  ASSERT_OK(dirs_[1]->ObjectsOf({3}).status());
  cats_[1]->EndRecovery();
  for (uint64_t o : theirs) EXPECT_TRUE(regions_[1]->IsLive(o));
  // Its home drops it: node 1's memory goes.
  dirs_[0]->Remove({3});
  ASSERT_OK(dirs_[1]->Replace(0, dirs_[0]->HomedAt(0)));
  for (uint64_t o : theirs) EXPECT_FALSE(regions_[1]->IsLive(o));
}

// An owner takes a chunk that uses its memory from its home's push or from
// its own record, never from a pulled list: by the time of the list, the
// memory may have been freed (after a restart of the owner) and given to
// another client, whose bytes the chunk would then name.
TEST_F(DirectoryTest, APullNeverRegistersAChunkInThisNodesMemory) {
  const SessionId s0 = Open(0, 0), s1 = Open(1, 0);
  Built b = MakeBatch({Pool(0, s0), Pool(1, s1)}, 0, 5);
  ASSERT_OK(cats_[1]->Seal(s1, RangesIn(1, b)));
  std::vector<ChunkMeta> chunks{Meta(31, 0, "spans", b)};
  ASSERT_OK(Publish(0, s0, &chunks));
  auto listed = dirs_[0]->Homed();
  ASSERT_EQ(listed.chunks.size(), 1u);
  dirs_[1]->BeginPull(0);
  Status st = dirs_[1]->Pull(0, listed.chunks, {1, listed.version, true});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_TRUE(dirs_[1]->Lookup("spans").empty());
  for (uint64_t o : ObjectsIn(1, b)) EXPECT_EQ(cats_[1]->PublicationsOf(o), 0u);
  // The home's push registers it; a later pull keeps it.
  std::vector<ChunkMeta> pushed = chunks;
  ASSERT_OK(dirs_[1]->Insert(&pushed, {}));
  EXPECT_EQ(dirs_[1]->Lookup("spans").size(), 1u);
  dirs_[1]->BeginPull(0);
  ASSERT_OK(dirs_[1]->Pull(0, listed.chunks, {1, listed.version, true}));
  EXPECT_EQ(dirs_[1]->Lookup("spans").size(), 1u);
}

}  // namespace
}  // namespace quiver::control
