// Spilling (store/spill_dir.h, ObjectTable with a spill directory): files
// that come back bit-identical or not at all, directories no one else can
// write, and eviction that spills instead of dropping.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "common/test_region.h"
#include "store/object_table.h"
#include "store/spill_dir.h"

namespace quiver::store {
namespace {

class TempDir {
 public:
  TempDir() {
    char path[] = "/tmp/quiver-spill-test-XXXXXX";
    EXPECT_NE(mkdtemp(path), nullptr);
    path_ = path;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + seed);
  return v;
}

TEST(SpillDirTest, WritesAndReadsBackBitIdentical) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/spill";
  ASSERT_OK_AND_ASSIGN(SpillDir spill, SpillDir::Open(dir));
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  for (size_t n :
       {size_t{0}, size_t{1}, size_t{31}, size_t{32}, size_t{33}, size_t{1} << 20}) {
    const ObjectId id = ObjectId::FromRandom();
    const auto in = Bytes(n, static_cast<uint8_t>(n));
    ASSERT_OK(spill.Write(id, in.data(), n));
    std::vector<uint8_t> out(n, 0xEE);
    ASSERT_OK(spill.Read(id, out.data(), n));
    EXPECT_EQ(in, out) << n;
    spill.Remove(id);
    EXPECT_FALSE(spill.Read(id, out.data(), n).ok());
  }
}

TEST(SpillDirTest, ADamagedFileNeverComesBackAsTheObject) {
  TempDir tmp;
  ASSERT_OK_AND_ASSIGN(SpillDir spill, SpillDir::Open(tmp.path()));
  const ObjectId id = ObjectId::FromName("victim");
  const auto in = Bytes(100000, 3);
  const std::string file = tmp.path() + "/" + id.Hex() + ".spill";
  std::vector<uint8_t> out(in.size());

  ASSERT_OK(spill.Write(id, in.data(), in.size()));
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(5000);
    f.put('\x01');
  }
  Status st = spill.Read(id, out.data(), out.size());
  EXPECT_TRUE(st.IsIOError());
  EXPECT_NE(st.message().find("corrupt"), std::string::npos) << st.ToString();

  ASSERT_OK(spill.Write(id, in.data(), in.size()));
  ASSERT_EQ(truncate(file.c_str(), 50000), 0);
  st = spill.Read(id, out.data(), out.size());
  EXPECT_TRUE(st.IsIOError());
  EXPECT_NE(st.message().find(file), std::string::npos) << st.ToString();

  // Another object's file under this id's name.
  const ObjectId other = ObjectId::FromName("other");
  ASSERT_OK(spill.Write(other, in.data(), in.size()));
  std::filesystem::rename(tmp.path() + "/" + other.Hex() + ".spill", file);
  st = spill.Read(id, out.data(), out.size());
  EXPECT_NE(st.message().find("does not hold object"), std::string::npos)
      << st.ToString();

  // A planted symlink is neither followed on write (the written file
  // replaces the link itself) nor on read.
  const std::string target = tmp.path() + "/target";
  { std::ofstream(target) << "precious"; }
  std::filesystem::remove(file);
  std::filesystem::create_symlink(target, file);
  EXPECT_FALSE(spill.Read(id, out.data(), out.size()).ok());
  ASSERT_OK(spill.Write(id, in.data(), in.size()));
  EXPECT_FALSE(std::filesystem::is_symlink(file));
  ASSERT_OK(spill.Read(id, out.data(), out.size()));
  EXPECT_EQ(out, in);
  // Nor at a part file's name.
  std::filesystem::create_symlink(target, tmp.path() + "/" + id.Hex() + ".7.part");
  EXPECT_FALSE(spill.WritePart(id, 7, in.data(), in.size()).ok());
  std::ifstream t(target);
  std::string text;
  t >> text;
  EXPECT_EQ(text, "precious");
}

TEST(SpillDirTest, RefusesDirectoriesOthersCanWriteAndRemovesFilesNotKept) {
  TempDir tmp;
  const std::string open = tmp.path() + "/open";
  ASSERT_EQ(mkdir(open.c_str(), 0700), 0);
  ASSERT_EQ(chmod(open.c_str(), 0777), 0);
  auto r = SpillDir::Open(open);
  EXPECT_TRUE(r.status().IsPermissionDenied()) << r.status().ToString();
  const std::string link = tmp.path() + "/link";
  std::filesystem::create_symlink(tmp.path(), link);
  EXPECT_TRUE(SpillDir::Open(link).status().IsInvalid());
  { std::ofstream(tmp.path() + "/file") << "x"; }
  EXPECT_TRUE(SpillDir::Open(tmp.path() + "/file").status().IsInvalid());

  const std::string dir = tmp.path() + "/spill";
  {
    ASSERT_OK_AND_ASSIGN(SpillDir spill, SpillDir::Open(dir));
    const auto in = Bytes(10, 1);
    ASSERT_OK(spill.Write(ObjectId::FromName("a"), in.data(), in.size()));
    ASSERT_OK(spill.Write(ObjectId::FromName("b"), in.data(), in.size()));
    // A spill a crash cut short, even of an object kept.
    ASSERT_OK(spill.WritePart(ObjectId::FromName("b"), 5, in.data(), in.size()));
  }
  { std::ofstream(dir + "/notes.txt") << "kept"; }
  ASSERT_OK_AND_ASSIGN(SpillDir again, SpillDir::Open(dir));
  EXPECT_TRUE(again.Exists(ObjectId::FromName("a")));
  EXPECT_EQ(again.RemoveExcept({ObjectId::FromName("b")}), 2u);
  EXPECT_FALSE(
      std::filesystem::exists(dir + "/" + ObjectId::FromName("b").Hex() + ".5.part"));
  EXPECT_FALSE(again.Exists(ObjectId::FromName("a")));
  EXPECT_TRUE(again.Exists(ObjectId::FromName("b")));
  EXPECT_TRUE(std::filesystem::exists(dir + "/notes.txt"));
}

using control::Catalogue;
using control::CatalogueLimits;
using control::testing_region::Client;
using control::testing_region::kGranule;
using control::testing_region::Region;

TEST(ObjectTableSpillTest, EvictionSpillsAndGetRestores) {
  constexpr uint64_t kRegion = 1 << 20;
  TempDir tmp;
  Region region(kRegion);
  Catalogue cat(region.allocator(), 0, kGranule, CatalogueLimits{});
  ASSERT_OK_AND_ASSIGN(SpillDir spill, SpillDir::Open(tmp.path() + "/spill"));
  ObjectTable table(&cat, 0, kRegion, StoreLimits{}, std::move(spill));
  ASSERT_OK_AND_ASSIGN(auto w, cat.OpenSession(Client(0)));
  ASSERT_OK_AND_ASSIGN(auto r, cat.OpenSession(Client(1)));
  const uint64_t each = kRegion / 8;
  std::vector<ObjectId> ids;
  for (int i = 0; i < 20; ++i) {  // 2.5 regions
    ids.push_back(ObjectId::FromName("s" + std::to_string(i)));
    ASSERT_OK_AND_ASSIGN(auto v, table.Create(w, ids.back(), each - 10, 10));
    const auto bytes = Bytes(each, static_cast<uint8_t>(i));
    std::memcpy(reinterpret_cast<void*>(v.address), bytes.data(), each);
    ASSERT_OK(table.Seal(w, ids.back()));
  }
  auto c = table.Counters();
  EXPECT_GT(c.spills, 10u);
  EXPECT_EQ(c.evictions, 0u);
  EXPECT_EQ(c.objects_spilled + c.objects_sealed, 20u);
  EXPECT_LE(cat.Stats().bytes, kRegion);
  for (const auto& id : ids) EXPECT_TRUE(table.Contains(id)) << id.Hex();
  // Every one back, several per Get: a restore never evicts what the same
  // Get restored before it.
  for (int i = 0; i < 20; i += 4) {
    std::vector<ObjectId> batch(ids.begin() + i, ids.begin() + i + 4);
    ASSERT_OK_AND_ASSIGN(auto got, table.Get(r, batch));
    ASSERT_EQ(got.found.size(), 4u);
    for (int k = 0; k < 4; ++k) {
      const auto want = Bytes(each, static_cast<uint8_t>(i + k));
      EXPECT_EQ(std::memcmp(reinterpret_cast<const void*>(got.found[k].address),
                            want.data(), each),
                0)
          << i + k;
      EXPECT_EQ(got.found[k].metadata_size, 10u);
    }
    ASSERT_OK(table.Release(r, got.pin));
  }
  EXPECT_GT(table.Counters().restores, 10u);
  // A restored object's file is out of the way at once (renamed to a part
  // file), and gone once the Get's answer is out (DropRetired); the files
  // of objects spilled again stay.
  auto count = [&tmp](const char* extension) {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(tmp.path() + "/spill")) {
      n += e.path().extension() == extension;
    }
    return n;
  };
  EXPECT_EQ(count(".part"), table.Counters().restores);
  EXPECT_EQ(count(".spill"), table.Counters().objects_spilled);
  table.DropRetired();
  EXPECT_EQ(count(".part"), 0u);
  EXPECT_EQ(count(".spill"), table.Counters().objects_spilled);
  // Delete, whatever the state, leaves no file and no memory behind.
  EXPECT_EQ(table.Delete(ids).deleted, 20u);
  EXPECT_EQ(cat.Stats().bytes, 0u);
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path() + "/spill"));
}

// Spill files are written without the table's mutex: meanwhile other
// calls go on, a victim deleted is not spilled (its file is dropped), a
// victim a Get pinned stays in memory, whole; then an Evict with no one in
// the way spills for real.
TEST(ObjectTableSpillTest, SpillsAreWrittenWithoutHoldingTheTable) {
  constexpr uint64_t kRegion = 1 << 20;
  const uint64_t each = kRegion / 8;
  TempDir tmp;
  const std::string dir = tmp.path() + "/spill";
  Region region(kRegion);
  Catalogue cat(region.allocator(), 0, kGranule, CatalogueLimits{});
  ASSERT_OK_AND_ASSIGN(SpillDir spill, SpillDir::Open(dir));
  ObjectTable table(&cat, 0, kRegion, StoreLimits{}, std::move(spill));
  ASSERT_OK_AND_ASSIGN(auto w, cat.OpenSession(Client(0)));
  ASSERT_OK_AND_ASSIGN(auto r, cat.OpenSession(Client(1)));
  std::vector<ObjectId> ids;
  auto put = [&](int i) {
    ids.push_back(ObjectId::FromName("w" + std::to_string(i)));
    auto v = table.Create(w, ids.back(), each, 0);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    const auto bytes = Bytes(each, static_cast<uint8_t>(i));
    std::memcpy(reinterpret_cast<void*>(v->address), bytes.data(), each);
    ASSERT_OK(table.Seal(w, ids.back()));
  };
  for (int i = 0; i < 7; ++i) put(i);
  ASSERT_EQ(table.Counters().spills, 0u);

  // The eighth passes the high watermark: w0 and w1 are the victims.
  int hooked = 0;
  Handle pin;
  table.SetSpillHookForTesting([&] {
    if (hooked++ > 0) return;
    auto other = std::async(std::launch::async, [&] {
      EXPECT_TRUE(table.Contains(ids[5]));
      EXPECT_TRUE(table.Contains(ids[0]));  // not spilled yet
      EXPECT_EQ(table.Delete({ids[0]}).deleted, 1u);
      auto got = table.Get(r, {ids[1]});
      EXPECT_TRUE(got.ok() && got->found.size() == 1u);
      if (got.ok()) pin = got->pin;
    });
    ASSERT_EQ(other.wait_for(std::chrono::seconds(30)), std::future_status::ready)
        << "the table's mutex is held while spill files are written";
  });
  put(7);
  EXPECT_EQ(hooked, 1);
  auto c = table.Counters();
  EXPECT_EQ(c.spills, 0u);
  EXPECT_EQ(c.spill_failures, 0u);
  EXPECT_FALSE(table.Contains(ids[0]));
  EXPECT_TRUE(table.Contains(ids[1]));
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "a discarded spill left a file";
  ASSERT_OK_AND_ASSIGN(auto again, table.Get(r, {ids[1]}));
  ASSERT_EQ(again.found.size(), 1u);
  const auto want1 = Bytes(each, 1);
  EXPECT_EQ(std::memcmp(reinterpret_cast<const void*>(again.found[0].address),
                        want1.data(), each),
            0);
  ASSERT_OK(table.Release(r, again.pin));
  ASSERT_OK(table.Release(r, pin));

  // No one in the way: the least recently used (w2) is spilled, and comes
  // back whole.
  EXPECT_EQ(table.Evict(each), each);
  EXPECT_EQ(table.Counters().spills, 1u);
  for (const auto& l : table.List()) {
    EXPECT_EQ(l.state == ObjectState::kSpilled, l.id == ids[2]) << l.id.Hex();
  }
  ASSERT_OK_AND_ASSIGN(auto back, table.Get(r, {ids[2]}));
  ASSERT_EQ(back.found.size(), 1u);
  const auto want2 = Bytes(each, 2);
  EXPECT_EQ(std::memcmp(reinterpret_cast<const void*>(back.found[0].address),
                        want2.data(), each),
            0);
  ASSERT_OK(table.Release(r, back.pin));
  table.DropRetired();  // as the daemon does once a Get is answered
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(e.path().extension(), ".spill") << e.path();
  }
}

// Restores read their files without the table's mutex: meanwhile other
// calls go on, and a Delete of one of the objects being restored wins (the
// Get then misses it, its room and file are gone).
TEST(ObjectTableSpillTest, RestoresAreReadWithoutHoldingTheTable) {
  constexpr uint64_t kRegion = 1 << 20;
  const uint64_t each = kRegion / 8;
  TempDir tmp;
  const std::string dir = tmp.path() + "/spill";
  Region region(kRegion);
  Catalogue cat(region.allocator(), 0, kGranule, CatalogueLimits{});
  ASSERT_OK_AND_ASSIGN(SpillDir spill, SpillDir::Open(dir));
  ObjectTable table(&cat, 0, kRegion, StoreLimits{}, std::move(spill));
  ASSERT_OK_AND_ASSIGN(auto w, cat.OpenSession(Client(0)));
  ASSERT_OK_AND_ASSIGN(auto r, cat.OpenSession(Client(1)));
  std::vector<ObjectId> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(ObjectId::FromName("r" + std::to_string(i)));
    ASSERT_OK_AND_ASSIGN(auto v, table.Create(w, ids.back(), each, 0));
    const auto bytes = Bytes(each, static_cast<uint8_t>(i));
    std::memcpy(reinterpret_cast<void*>(v.address), bytes.data(), each);
    ASSERT_OK(table.Seal(w, ids.back()));
  }
  ASSERT_EQ(table.Evict(2 * each), 2 * each);  // r0 and r1 spilled
  ASSERT_EQ(table.Counters().objects_spilled, 2u);
  const uint64_t in_memory = cat.Stats().bytes;

  int hooked = 0;
  table.SetSpillHookForTesting([&] {
    if (hooked++ > 0) return;
    auto other = std::async(std::launch::async, [&] {
      ASSERT_OK_AND_ASSIGN(auto got, table.Get(r, {ids[3]}));
      EXPECT_EQ(got.found.size(), 1u);
      EXPECT_TRUE(table.Release(r, got.pin).ok());
      EXPECT_EQ(table.Delete({ids[1]}).deleted, 1u);
    });
    ASSERT_EQ(other.wait_for(std::chrono::seconds(30)), std::future_status::ready)
        << "the table's mutex is held while spill files are read";
  });
  ASSERT_OK_AND_ASSIGN(auto got, table.Get(r, {ids[0], ids[1], ids[2]}));
  EXPECT_EQ(hooked, 1);
  ASSERT_EQ(got.found.size(), 2u);
  EXPECT_EQ(got.found[0].id, ids[0]);
  EXPECT_EQ(got.found[1].id, ids[2]);
  ASSERT_EQ(got.missing.size(), 1u);
  EXPECT_EQ(got.missing[0], ids[1]);
  EXPECT_TRUE(got.lost.empty());
  const auto want = Bytes(each, 0);
  EXPECT_EQ(
      std::memcmp(reinterpret_cast<const void*>(got.found[0].address), want.data(), each),
      0);
  ASSERT_OK(table.Release(r, got.pin));
  // r0 back in memory; r1's room and file gone with it (and its record:
  // the difference is records, far below an object's size).
  EXPECT_LE(cat.Stats().bytes, in_memory + each);
  EXPECT_GE(cat.Stats().bytes + 1024, in_memory + each);
  EXPECT_FALSE(std::filesystem::is_empty(dir));  // renamed, not yet removed
  table.DropRetired();
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  auto c = table.Counters();
  EXPECT_EQ(c.restores, 1u);
  EXPECT_EQ(c.objects_spilled, 0u);
}

// A restart is a new catalogue and table over the same region (what a
// daemon taking its region over does): sealed objects come back from their
// records, spilled ones from theirs and their files; one being created and
// a spilled one whose file went do not.
TEST(ObjectTableSpillTest, ARestartedTableAdoptsItsSealedAndSpilledObjects) {
  constexpr uint64_t kRegion = 1 << 20;
  const uint64_t each = kRegion / 8;
  TempDir tmp;
  const std::string dir = tmp.path() + "/spill";
  Region region(kRegion);
  std::vector<ObjectId> ids;
  {
    Catalogue cat(region.allocator(), 0, kGranule, CatalogueLimits{});
    ASSERT_OK_AND_ASSIGN(SpillDir spill, SpillDir::Open(dir));
    ObjectTable table(&cat, 0, kRegion, StoreLimits{}, std::move(spill));
    ASSERT_OK_AND_ASSIGN(auto w, cat.OpenSession(Client(0)));
    for (int i = 0; i < 6; ++i) {
      ids.push_back(ObjectId::FromName("r" + std::to_string(i)));
      ASSERT_OK_AND_ASSIGN(auto v, table.Create(w, ids.back(), each, 0));
      const auto bytes = Bytes(each, static_cast<uint8_t>(i));
      std::memcpy(reinterpret_cast<void*>(v.address), bytes.data(), each);
      ASSERT_OK(table.Seal(w, ids.back()));
    }
    EXPECT_GE(table.Evict(3 * each), 3 * each);  // r0, r1, r2 spill
    EXPECT_EQ(table.Counters().objects_spilled, 3u);
    ASSERT_OK(table.Create(w, ObjectId::FromName("unsealed"), each, 0).status());
    // The daemon dies here: nothing is closed or freed.
  }
  std::filesystem::remove(dir + "/" + ids[2].Hex() + ".spill");

  Catalogue cat(region.allocator(), 0, kGranule, CatalogueLimits{});
  ASSERT_OK_AND_ASSIGN(auto records, cat.Recover());
  ASSERT_OK_AND_ASSIGN(SpillDir spill, SpillDir::Open(dir));
  ObjectTable table(&cat, 0, kRegion, StoreLimits{}, std::move(spill));
  std::vector<ObjectId> adopted;
  std::vector<std::string> problems;
  table.Adopt(&records, &adopted, &problems);
  EXPECT_EQ(adopted.size(), 5u);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("its file is gone"), std::string::npos) << problems[0];
  ASSERT_EQ(records.size(), 1u);  // r2's record, for the daemon to free
  cat.FreeRecord(records[0].address);
  cat.EndRecovery();  // frees the unsealed one
  EXPECT_FALSE(table.Contains(ids[2]));
  EXPECT_FALSE(table.Contains(ObjectId::FromName("unsealed")));
  ASSERT_OK_AND_ASSIGN(auto r, cat.OpenSession(Client(1)));
  const std::vector<int> kept = {0, 1, 3, 4, 5};
  std::vector<ObjectId> back;
  for (int i : kept) back.push_back(ids[i]);
  ASSERT_OK_AND_ASSIGN(auto got, table.Get(r, back));
  ASSERT_EQ(got.found.size(), back.size());
  for (size_t k = 0; k < back.size(); ++k) {
    const auto want = Bytes(each, static_cast<uint8_t>(kept[k]));
    EXPECT_EQ(std::memcmp(reinterpret_cast<const void*>(got.found[k].address),
                          want.data(), each),
              0)
        << kept[k];
  }
  ASSERT_OK(table.Release(r, got.pin));
  table.DropRetired();
  // Deleting them all leaves the region and the directory empty.
  EXPECT_EQ(table.Delete(back).deleted, 5u);
  EXPECT_EQ(cat.Stats().bytes, 0u);
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

}  // namespace
}  // namespace quiver::store
