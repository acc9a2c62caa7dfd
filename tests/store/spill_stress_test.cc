// The object table with spilling under concurrent clients: threads create,
// get (checking every byte), release and delete objects of a shared id
// space in a region far smaller than what they keep, so that spills and
// restores run beside everything else, their files written and read
// without the table's mutex. Whatever interleaving happens, a Get never
// returns wrong bytes, and when all is deleted no memory and no file is
// left.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/status_macros.h"
#include "common/test_region.h"
#include "store/object_table.h"
#include "store/spill_dir.h"

namespace quiver::store {
namespace {

using control::Catalogue;
using control::CatalogueLimits;
using control::testing_region::Client;
using control::testing_region::kGranule;
using control::testing_region::Region;

constexpr uint64_t kStressRegion = 4 << 20;
constexpr uint64_t kObject = 96 << 10;
constexpr int kIds = 96;  // 9 MiB of objects for a 4 MiB region
constexpr int kThreads = 4;
constexpr int kOps = 2000;

uint8_t Pattern(uint64_t i, int id) { return static_cast<uint8_t>(i * 29 + id * 7 + 1); }

TEST(ObjectTableSpillStressTest, ConcurrentClientsNeverSeeWrongBytesAndLeaveNothing) {
  char path[] = "/tmp/quiver-spill-stress-XXXXXX";
  ASSERT_NE(mkdtemp(path), nullptr);
  const std::string dir = std::string(path) + "/spill";
  Region region(kStressRegion);
  Catalogue cat(region.allocator(), 0, kGranule, CatalogueLimits{});
  auto spill = SpillDir::Open(dir);
  ASSERT_TRUE(spill.ok()) << spill.status().ToString();
  ObjectTable table(&cat, 0, kStressRegion, StoreLimits{}, std::move(*spill));
  auto system = cat.OpenSession(Client(0, 1));
  ASSERT_TRUE(system.ok());
  table.UseSessionForRestores(*system);
  std::vector<ObjectId> ids;
  for (int i = 0; i < kIds; ++i)
    ids.push_back(ObjectId::FromName("x" + std::to_string(i)));

  std::atomic<int> wrong{0}, got{0}, made{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto s = cat.OpenSession(Client(0, 100 + t));
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      std::mt19937 rng(static_cast<unsigned>(t + 1));
      for (int op = 0; op < kOps; ++op) {
        const int i = static_cast<int>(rng() % kIds);
        switch (rng() % 4) {
          case 0:
          case 1: {  // create (AlreadyExists is fine: another thread has it)
            auto v = table.Create(*s, ids[i], kObject, 0);
            if (!v.ok()) break;
            auto* p = reinterpret_cast<uint8_t*>(v->address);
            for (uint64_t k = 0; k < kObject; ++k) p[k] = Pattern(k, i);
            if (table.Seal(*s, ids[i]).ok()) ++made;
            break;
          }
          case 2: {  // get, check every byte, release
            auto r = table.Get(*s, {ids[i]});
            if (!r.ok() || r->found.empty()) break;
            const auto* p = reinterpret_cast<const uint8_t*>(r->found[0].address);
            for (uint64_t k = 0; k < kObject; ++k) {
              if (p[k] != Pattern(k, i)) {
                ++wrong;
                break;
              }
            }
            ++got;
            EXPECT_TRUE(table.Release(*s, r->pin).ok());
            break;
          }
          default:
            table.Delete({ids[i]});
            break;
        }
      }
      cat.CloseSession(*s);
      table.SessionClosed(*s);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0) << "a Get returned bytes that are not its object's";
  EXPECT_GT(got.load(), 0);
  auto c = table.Counters();
  EXPECT_GT(c.spills, 0u) << "the test did not make the store spill";
  EXPECT_GT(c.restores, 0u) << "the test did not make the store restore";
  EXPECT_EQ(c.spill_failures, 0u);
  EXPECT_GT(made.load(), kIds / 2);

  table.Delete(ids);
  table.DropRetired();  // the files of restored objects, as after each Get
  cat.CloseSession(*system);
  EXPECT_EQ(cat.Stats().bytes, 0u) << "memory left behind";
  EXPECT_EQ(region.used(), 0u);
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "spill files left behind";
  std::filesystem::remove_all(path);
}

}  // namespace
}  // namespace quiver::store
