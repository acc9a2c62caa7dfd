// Directory: registration, lookups, names and HugeTable chunks,
// publication references and pins.
#include "control/directory_test_util.h"

namespace quiver::control {
namespace {

using namespace directory_testing;  // NOLINT: the fixture of these tests

TEST_F(DirectoryTest, InsertLookupRemove) {
  const SessionId s = Open(0, 0);
  MemoryPool* pool = Pool(0, s);
  Built b = MakeBatch({pool, pool}, 100, 10);
  const uint64_t live = regions_[0]->live();
  std::vector<ChunkMeta> chunks{Meta(7, 0, "numbers", b)};
  Directory::VersionStep step;
  ASSERT_OK(Publish(0, s, &chunks, &step));
  EXPECT_EQ(chunks[0].owners, std::vector<uint32_t>{0});  // filled in
  EXPECT_EQ(step.before, 0u);
  EXPECT_EQ(step.after, 1u);
  EXPECT_EQ(dirs_[0]->version(), 1u);
  EXPECT_EQ(regions_[0]->live(), live + 1);  // the record

  auto found = dirs_[0]->Lookup("numbers");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].id, 7u);
  EXPECT_EQ(found[0].num_rows, 10u);
  EXPECT_EQ(found[0].descriptor, b.descriptor);
  EXPECT_TRUE(dirs_[0]->Lookup("other").empty());
  // The descriptor decodes to the batch, zero-copy from the region.
  ASSERT_OK_AND_ASSIGN(
      auto back,
      DecodeDescriptor(
          found[0].descriptor, [](uint64_t, uint64_t) { return Status::OK(); }, nullptr));
  EXPECT_TRUE(back->Equals(*b.batch));

  // Every object it uses is sealed and holds one publication reference.
  ASSERT_OK_AND_ASSIGN(auto objects, dirs_[0]->ObjectsOf({7}));
  std::sort(objects.begin(), objects.end());
  EXPECT_EQ(objects, ObjectsIn(0, b));
  for (uint64_t o : objects) {
    EXPECT_EQ(cats_[0]->PublicationsOf(o), 1u);
    auto info = regions_[0]->allocator()->Lookup(reinterpret_cast<const uint8_t*>(o));
    ASSERT_TRUE(info.ok());
    EXPECT_TRUE(tag::Sealed(info->tag));
  }
  EXPECT_EQ(cats_[0]->Stats().records, 1u);
  auto tables = dirs_[0]->List();
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].name, "numbers");
  EXPECT_EQ(tables[0].chunks, 1u);
  EXPECT_EQ(tables[0].rows, 10u);
  EXPECT_EQ(tables[0].publishers, std::vector<uint32_t>{0});
  EXPECT_FALSE(tables[0].orphaned);
  EXPECT_FALSE(tables[0].local_only);
  EXPECT_EQ(dirs_[0]->HomedAt(0).size(), 1u);

  const uint64_t changes = dirs_[0]->changes();
  auto removed = dirs_[0]->Remove({7, 12345}, &step);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].id, 7u);
  EXPECT_EQ(step.before, 1u);
  EXPECT_EQ(step.after, 2u);
  EXPECT_GT(dirs_[0]->changes(), changes);
  EXPECT_TRUE(dirs_[0]->Lookup("numbers").empty());
  EXPECT_TRUE(dirs_[0]->List().empty());
  EXPECT_TRUE(dirs_[0]->ObjectsOf({7}).status().IsNotFound());
  for (uint64_t o : objects) EXPECT_EQ(cats_[0]->PublicationsOf(o), 0u);
  EXPECT_EQ(cats_[0]->Stats().records, 0u);
  EXPECT_EQ(regions_[0]->live(), live);
  // Its creator still holds the objects.
  for (uint64_t o : objects) EXPECT_TRUE(regions_[0]->IsLive(o));
  EXPECT_TRUE(dirs_[0]->Remove({7}).empty());
}

TEST_F(DirectoryTest, UnsealedBuffersAreRefusedAndNothingIsLeft) {
  const SessionId s = Open(0, 0);
  MemoryPool* pool = Pool(0, s);
  Built b = MakeBatch({pool}, 0, 5);
  const uint64_t live = regions_[0]->live();
  std::vector<ChunkMeta> chunks{Meta(1, 0, "t", b)};
  Status st = dirs_[0]->Insert(&chunks, {.publisher = s, .as_home = true});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_TRUE(dirs_[0]->Lookup("t").empty());
  EXPECT_EQ(regions_[0]->live(), live);  // no record
  EXPECT_EQ(dirs_[0]->version(), 0u);
  // Another session's objects are not sealed for it either.
  const SessionId other = Open(0, 0);
  st = dirs_[0]->Insert(&chunks, {.publisher = other, .seal_as = other, .as_home = true});
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
  EXPECT_TRUE(dirs_[0]->Lookup("t").empty());
  for (uint64_t o : ObjectsIn(0, b)) EXPECT_EQ(cats_[0]->PublicationsOf(o), 0u);
}

TEST_F(DirectoryTest, BadChunksAreInvalid) {
  const SessionId s = Open(0, 0);
  MemoryPool* pool = Pool(0, s);
  Built b = MakeBatch({pool}, 0, 5);
  // Rows that do not match the descriptor.
  std::vector<ChunkMeta> chunks{Meta(1, 0, "t", b)};
  chunks[0].num_rows = 6;
  EXPECT_TRUE(Publish(0, s, &chunks).IsInvalid());
  // A bad name.
  chunks = {Meta(1, 0, "bad\nname", b)};
  EXPECT_TRUE(Publish(0, s, &chunks).IsInvalid());
  // Garbage instead of a descriptor.
  chunks = {Meta(1, 0, "t", b)};
  chunks[0].descriptor = "not a descriptor";
  EXPECT_FALSE(Publish(0, s, &chunks).ok());
  // Buffers outside every region of the cluster (the process heap).
  Built heap = MakeBatch({default_memory_pool()}, 0, 5);
  chunks = {Meta(1, 0, "t", heap)};
  Status st = Publish(0, s, &chunks);
  EXPECT_TRUE(st.IsInvalid()) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "not inside one region")) << st.ToString();
  // Rows that overflow.
  chunks = {Meta(1, 0, "t", b, ~0ULL - 2, /*explicit_rows=*/true)};
  EXPECT_TRUE(Publish(0, s, &chunks).IsInvalid());
  EXPECT_TRUE(dirs_[0]->List().empty());
  EXPECT_EQ(cats_[0]->Stats().records, 0u);
}

TEST_F(DirectoryTest, AsHomeRefusesChunksHomedElsewhere) {
  const SessionId s1 = Open(1, 1);
  Built b = MakeBatch({Pool(1, s1)}, 0, 5);
  ASSERT_OK(cats_[1]->Seal(s1, RangesIn(1, b)));
  std::vector<ChunkMeta> chunks{Meta(1, 0, "t", b)};
  const SessionId s0 = Open(0, 1);
  Status st = Publish(0, s0, &chunks);
  EXPECT_TRUE(st.IsInvalid()) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "home")) << st.ToString();
  EXPECT_TRUE(dirs_[0]->Lookup("t").empty());
}

// ---------------------------------------------------------------------------
// Names

TEST_F(DirectoryTest, TakenNameIsAlreadyExists) {
  const SessionId s = Open(0, 0);
  MemoryPool* pool = Pool(0, s);
  Built first = MakeBatch({pool}, 0, 5), second = MakeBatch({pool}, 5, 5);
  std::vector<ChunkMeta> one{Meta(1, 0, "t", first)};
  ASSERT_OK(Publish(0, s, &one));
  const uint64_t live = regions_[0]->live();
  std::vector<ChunkMeta> two{Meta(2, 0, "t", second)};
  Status st = Publish(0, s, &two);
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "'t'")) << st.ToString();
  EXPECT_EQ(Ids(dirs_[0]->Lookup("t")), std::vector<uint64_t>{1});
  for (uint64_t o : ObjectsIn(0, second)) EXPECT_EQ(cats_[0]->PublicationsOf(o), 0u);
  EXPECT_EQ(regions_[0]->live(), live);  // no record for the refused chunk
  // Another name is free.
  two[0].name = "u";
  ASSERT_OK(Publish(0, s, &two));
  // The same chunk again is accepted and changes nothing.
  const uint64_t version = dirs_[0]->version();
  one = {Meta(1, 0, "t", first)};
  ASSERT_OK(Publish(0, s, &one));
  EXPECT_EQ(dirs_[0]->version(), version);
  EXPECT_EQ(dirs_[0]->Lookup("t").size(), 1u);
  for (uint64_t o : ObjectsIn(0, first)) EXPECT_EQ(cats_[0]->PublicationsOf(o), 1u);
  EXPECT_EQ(regions_[0]->live(), live + 1);  // u's record only
  // A taken id with another descriptor is refused.
  one = {Meta(1, 0, "t", second)};
  st = Publish(0, s, &one);
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "chunk id")) << st.ToString();
}

TEST_F(DirectoryTest, ChunksOfOneTableInOneInsert) {
  const SessionId s = Open(0, 0);
  MemoryPool* pool = Pool(0, s);
  Built a = MakeBatch({pool}, 0, 5), b = MakeBatch({pool}, 5, 5);
  std::vector<ChunkMeta> chunks{Meta(1, 0, "t", a, 0), Meta(2, 0, "t", b, 5)};
  ASSERT_OK(Publish(0, s, &chunks));
  EXPECT_EQ(Ids(dirs_[0]->Lookup("t")), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(dirs_[0]->List()[0].rows, 10u);
}

// A list may name the same chunk twice (a peer's push, a retried publish):
// it is registered once, with one publication reference and one record,
// so that removing it lets its memory go.
TEST_F(DirectoryTest, TheSameChunkTwiceInOneInsertIsRegisteredOnce) {
  const SessionId s = Open(0, 0);
  MemoryPool* pool = Pool(0, s);
  Built b = MakeBatch({pool}, 0, 5);
  const uint64_t live = regions_[0]->live();
  std::vector<ChunkMeta> chunks{Meta(1, 0, "t", b), Meta(1, 0, "t", b)};
  ASSERT_OK(Publish(0, s, &chunks));
  EXPECT_EQ(dirs_[0]->Lookup("t").size(), 1u);
  EXPECT_EQ(dirs_[0]->version(), 1u);
  EXPECT_EQ(regions_[0]->live(), live + 1);  // one record
  const auto objects = ObjectsIn(0, b);
  for (uint64_t o : objects) EXPECT_EQ(cats_[0]->PublicationsOf(o), 1u);
  // Removed, and let go of by its creator: the memory goes.
  dirs_[0]->Remove({1});
  EXPECT_TRUE(dirs_[0]->Lookup("t").empty());
  ASSERT_OK(cats_[0]->Free(s, objects));
  for (uint64_t o : objects) EXPECT_FALSE(regions_[0]->IsLive(o));
  EXPECT_EQ(cats_[0]->Stats().records, 0u);
  // And it stays removed across a restart.
  const auto records = Restart(0);
  (void)dirs_[0]->LoadRecords(records);
  EXPECT_TRUE(dirs_[0]->Lookup("t").empty()) << "a removed chunk came back";
}

TEST_F(DirectoryTest, HugeTableChunksJoinUnlessRowsOverlap) {
  const SessionId s = Open(0, 0), t = Open(0, 0);
  MemoryPool* ps = Pool(0, s);
  MemoryPool* pt = Pool(0, t);
  Built a = MakeBatch({ps}, 0, 10), b = MakeBatch({pt}, 10, 10),
        c = MakeBatch({pt}, 15, 10), d = MakeBatch({pt}, 30, 10);
  std::vector<ChunkMeta> chunks{Meta(1, 0, "huge", a, 0, true)};
  ASSERT_OK(Publish(0, s, &chunks));
  // Another publisher's chunk at rows [10, 20) joins.
  chunks = {Meta(2, 0, "huge", b, 10, true)};
  ASSERT_OK(Publish(0, t, &chunks));
  // Rows [15, 25) overlap [10, 20).
  chunks = {Meta(3, 0, "huge", c, 15, true)};
  Status st = Publish(0, t, &chunks);
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "overlap")) << st.ToString();
  // A chunk without explicit rows may not join a published name.
  chunks = {Meta(4, 0, "huge", d, 30, false)};
  st = Publish(0, t, &chunks);
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st.ToString();
  // All or nothing: a good chunk with an overlapping one in one list.
  chunks = {Meta(5, 0, "huge", d, 30, true), Meta(6, 0, "huge", c, 35, true)};
  st = Publish(0, t, &chunks);
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st.ToString();
  EXPECT_EQ(Ids(dirs_[0]->Lookup("huge")), (std::vector<uint64_t>{1, 2}));
  for (uint64_t o : ObjectsIn(0, d)) EXPECT_EQ(cats_[0]->PublicationsOf(o), 0u);
  // Adjacent rows are no overlap.
  chunks = {Meta(5, 0, "huge", d, 20, true)};
  ASSERT_OK(Publish(0, t, &chunks));
  auto found = dirs_[0]->Lookup("huge");
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].first_row, 0u);  // by first row
  EXPECT_EQ(found[1].first_row, 10u);
  EXPECT_EQ(found[2].first_row, 20u);
  auto tables = dirs_[0]->List();
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].rows, 30u);
  EXPECT_EQ(tables[0].chunks, 3u);
}

TEST_F(DirectoryTest, ExplicitChunksMayNotJoinAnOrdinaryTable) {
  const SessionId s = Open(0, 0);
  MemoryPool* pool = Pool(0, s);
  Built a = MakeBatch({pool}, 0, 10), b = MakeBatch({pool}, 10, 10);
  std::vector<ChunkMeta> chunks{Meta(1, 0, "plain", a)};
  ASSERT_OK(Publish(0, s, &chunks));
  chunks = {Meta(2, 0, "plain", b, 100, true)};
  EXPECT_EQ(Publish(0, s, &chunks).code(), StatusCode::kAlreadyExists);
}

TEST_F(DirectoryTest, SchemaMismatchIsInvalid) {
  const SessionId s = Open(0, 0);
  MemoryPool* pool = Pool(0, s);
  Built ints = MakeBatch({pool}, 0, 10);
  Built strings = MakeBatch({pool}, 10, 10, /*strings=*/true);
  Built two = MakeBatch({pool, pool}, 10, 10);
  std::vector<ChunkMeta> chunks{Meta(1, 0, "huge", ints, 0, true)};
  ASSERT_OK(Publish(0, s, &chunks));
  for (const Built* b : {&strings, &two}) {
    chunks = {Meta(2, 0, "huge", *b, 10, true)};
    Status st = Publish(0, s, &chunks);
    EXPECT_TRUE(st.IsInvalid()) << st.ToString();
    EXPECT_TRUE(Contains(st.message(), "schema")) << st.ToString();
  }
  // Mismatches inside one list are caught too.
  chunks = {Meta(3, 0, "fresh", ints, 0, true), Meta(4, 0, "fresh", strings, 10, true)};
  EXPECT_TRUE(Publish(0, s, &chunks).IsInvalid());
  EXPECT_EQ(dirs_[0]->Lookup("huge").size(), 1u);
  EXPECT_TRUE(dirs_[0]->Lookup("fresh").empty());
}

// ---------------------------------------------------------------------------
// Lifetimes

TEST_F(DirectoryTest, PublicationsHoldTheObjectsUntilRemoved) {
  const SessionId s = Open(0, 0);
  MemoryPool* pool = Pool(0, s);
  Built b = MakeBatch({pool, pool}, 0, 100);
  std::vector<ChunkMeta> chunks{Meta(1, 0, "t", b)};
  ASSERT_OK(Publish(0, s, &chunks));
  const auto objects = ObjectsIn(0, b);
  ASSERT_FALSE(objects.empty());
  uint32_t freed = 9, deferred = 0;
  ASSERT_OK(cats_[0]->Free(s, objects, &freed, &deferred));
  EXPECT_EQ(freed, 0u);
  EXPECT_EQ(deferred, objects.size());
  for (uint64_t o : objects) EXPECT_TRUE(regions_[0]->IsLive(o));
  // Readable all along.
  EXPECT_EQ(dirs_[0]->Lookup("t").size(), 1u);
  dirs_[0]->Remove({1});
  for (uint64_t o : objects) EXPECT_FALSE(regions_[0]->IsLive(o));
}

TEST_F(DirectoryTest, PublicationsOutliveThePublishingSession) {
  const SessionId s = Open(0, 0);
  MemoryPool* pool = Pool(0, s);
  Built b = MakeBatch({pool}, 0, 100);
  std::vector<ChunkMeta> chunks{Meta(1, 0, "t", b)};
  ASSERT_OK(Publish(0, s, &chunks));
  const auto objects = ObjectsIn(0, b);
  cats_[0]->CloseSession(s);
  dirs_[0]->SessionEnded(s);
  for (uint64_t o : objects) EXPECT_TRUE(regions_[0]->IsLive(o));
  EXPECT_TRUE(dirs_[0]->List()[0].orphaned);
  dirs_[0]->Remove({1});
  for (uint64_t o : objects) EXPECT_FALSE(regions_[0]->IsLive(o));
}

TEST_F(DirectoryTest, PinsShowInList) {
  const SessionId s = Open(0, 0), reader = Open(0, 1);
  MemoryPool* pool = Pool(0, s);
  Built b = MakeBatch({pool}, 0, 10);
  std::vector<ChunkMeta> chunks{Meta(1, 0, "t", b)};
  ASSERT_OK(Publish(0, s, &chunks));
  ASSERT_OK_AND_ASSIGN(auto objects, dirs_[0]->ObjectsOf({1}));
  ASSERT_OK_AND_ASSIGN(Handle h, cats_[0]->Pin(reader, objects));
  EXPECT_EQ(dirs_[0]->List()[0].pins, 1u);
  // Removed while pinned: the pin keeps the memory.
  ASSERT_OK(cats_[0]->Free(s, ObjectsIn(0, b)));
  dirs_[0]->Remove({1});
  for (uint64_t o : objects) EXPECT_TRUE(regions_[0]->IsLive(o));
  ASSERT_OK(cats_[0]->Release(reader, h));
  for (uint64_t o : objects) EXPECT_FALSE(regions_[0]->IsLive(o));
}

// ---------------------------------------------------------------------------
// Records and restarts

}  // namespace
}  // namespace quiver::control
