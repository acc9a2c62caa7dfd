// Regions mapped by several real processes at the same address.
#include "quiver/memory/region.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "integration/process_util.h"

namespace quiver::memory {
namespace {

using quiver::testing::Child;
using quiver::testing::ClusterFiles;
using quiver::testing::Pipe;
using quiver::testing::TestCluster;

ClusterMap::Options Owner() {
  ClusterMap::Options o;
  o.create_own_region = true;
  o.wait_ready_ms = 20000;
  return o;
}

// The uid the attack tests give to "another local user".
constexpr uid_t kOtherUser = 65534;

// Creates `path` holding `bytes` with exactly `mode` (whatever the umask).
void MakeFile(const std::string& path, const std::string& bytes, mode_t mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ASSERT_EQ(fchmod(fd, mode), 0);
  close(fd);
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Maps node `id`'s region as its owner's daemon.
Result<RegionMapping> MapOwn(const ClusterConfig& config, uint32_t id,
                             RegionRole role = RegionRole::kOwnerCreate) {
  RegionOptions o;
  o.role = role;
  return RegionMapping::Map(config, *config.FindNode(id), o);
}

void ExpectRefused(const Result<RegionMapping>& r, const std::string& needle) {
  ASSERT_FALSE(r.ok()) << "expected an error mentioning '" << needle << "'";
  EXPECT_NE(r.status().message().find(needle), std::string::npos)
      << "error '" << r.status().ToString() << "' does not mention '" << needle << "'";
}

TEST(RegionTest, TwoProcessesSeeTheSameBytesAtTheSameAddress) {
  auto config = TestCluster("same", 2);
  ClusterFiles files(config);
  Pipe to_parent, to_child;
  const uint64_t base0 = config.nodes[0].base;
  Child node1([&] {
    auto map = ClusterMap::Open(config, 1, Owner());
    if (!map.ok()) return 10;
    // Wait until node 0 wrote its pattern, then read it at the same address.
    if (to_child.Receive() != 'w') return 11;
    auto* region0 = (*map)->region(0);
    const char* text = reinterpret_cast<const char*>(region0->data());
    if (std::strcmp(text, "written by node 0") != 0) return 12;
    if (region0->base() != reinterpret_cast<uint8_t*>(base0)) return 13;
    // Answer by writing into node 0's region.
    std::strcpy(reinterpret_cast<char*>(region0->data()) + 4096, "answer from node 1");
    to_parent.Send('a');
    return to_child.Receive() == 'q' ? 0 : 14;
  });
  auto map = ClusterMap::Open(config, 0, Owner());
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  RegionMapping* own = (*map)->local_region();
  EXPECT_EQ(reinterpret_cast<uint64_t>(own->base()), base0);
  std::strcpy(reinterpret_cast<char*>(own->data()), "written by node 0");
  to_child.Send('w');
  ASSERT_EQ(to_parent.Receive(), 'a');
  EXPECT_STREQ(reinterpret_cast<const char*>(own->data()) + 4096, "answer from node 1");
  to_child.Send('q');
  EXPECT_EQ(node1.Wait(), 0);
}

TEST(RegionTest, ATakenAddressRangeIsAClearError) {
  auto config = TestCluster("taken", 2);
  ClusterFiles files(config);
  Pipe ready, done;
  Child node1([&] {
    auto map = ClusterMap::Open(config, 1, Owner());
    ready.Send(map.ok() ? 'y' : 'n');
    return done.Receive() == 'q' ? 0 : 1;  // keep node 1's region ready
  });
  auto map = ClusterMap::Open(config, 0, Owner());
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  ASSERT_EQ(ready.Receive(), 'y');
  // A third process already has something where node 1's region goes.
  Child third([&] {
    // Start clean: drop the mappings inherited from the parent.
    for (const auto& n : config.nodes) munmap(reinterpret_cast<void*>(n.base), n.size);
    void* blocker = mmap(reinterpret_cast<void*>(config.nodes[1].base + 4096 * 16), 4096,
                         PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (blocker == MAP_FAILED) return 20;
    auto r = ClusterMap::Open(config, 0, ClusterMap::Options{});
    if (r.ok()) return 21;
    const std::string& msg = r.status().message();
    if (msg.find("node 1's region") == std::string::npos ||
        msg.find("overlaps a mapping") == std::string::npos) {
      return 22;
    }
    // The mapping that was there is untouched (never silently replaced).
    return mincore(blocker, 4096, nullptr) == -1 && errno == ENOMEM ? 23 : 0;
  });
  EXPECT_EQ(third.Wait(), 0);
  done.Send('q');
  EXPECT_EQ(node1.Wait(), 0);
}

TEST(RegionTest, BackingIsPrivateToTheOwner) {
  auto config = TestCluster("mode", 1);
  ClusterFiles files(config);
  auto map = ClusterMap::Open(config, 0, Owner());
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  struct stat st;
  ASSERT_EQ(stat(config.nodes[0].path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const RegionHeader& h = (*map)->local_region()->header();
  EXPECT_EQ(h.magic, kRegionMagic);
  EXPECT_EQ(h.node_id, 0u);
  EXPECT_EQ(std::string(h.cluster), config.name);
  EXPECT_EQ(h.owner_pid, getpid());
}

TEST(RegionTest, ARegionOfAnotherClusterIsRejected) {
  auto config = TestCluster("mine", 1);
  ClusterFiles files(config);
  {
    auto map = ClusterMap::Open(config, 0, Owner());
    ASSERT_TRUE(map.ok()) << map.status().ToString();
  }
  auto other = config;
  other.name = config.name + "-other";
  Child c([&] {
    auto r = ClusterMap::Open(other, 0, Owner());
    if (r.ok()) return 30;
    return r.status().message().find("belongs to cluster '" + config.name + "'") !=
                   std::string::npos
               ? 0
               : 31;
  });
  EXPECT_EQ(c.Wait(), 0);
}

TEST(RegionTest, ALiveOwnerIsNotDisplaced) {
  auto config = TestCluster("live", 1);
  ClusterFiles files(config);
  Pipe up, done;
  Child owner([&] {
    auto map = ClusterMap::Open(config, 0, Owner());
    up.Send(map.ok() ? 'y' : 'n');
    return done.Receive() == 'q' ? 0 : 40;
  });
  ASSERT_EQ(up.Receive(), 'y');
  Child rival([&] {
    auto r = ClusterMap::Open(config, 0, Owner());
    if (r.ok()) return 41;
    return r.status().message().find("in use by its owner, pid") != std::string::npos
               ? 0
               : 42;
  });
  EXPECT_EQ(rival.Wait(), 0);
  done.Send('q');
  EXPECT_EQ(owner.Wait(), 0);
}

TEST(RegionTest, ARegionLeftByACrashedOwnerIsTakenOver) {
  auto config = TestCluster("crash", 1);
  ClusterFiles files(config);
  Pipe up;
  Child owner([&] {
    auto map = ClusterMap::Open(config, 0, Owner());
    if (!map.ok()) return 50;
    auto* alloc = (*map)->local_region()->allocator();
    auto p = alloc->Allocate(1000);
    if (!p.ok()) return 51;
    std::strcpy(reinterpret_cast<char*>(*p), "survives the crash");
    if (!alloc->SetTag(*p, 77).ok()) return 52;
    up.Send('y');
    pause();
    return 0;
  });
  ASSERT_EQ(up.Receive(), 'y');
  owner.Kill(SIGKILL);
  EXPECT_EQ(owner.Wait(), 128 + SIGKILL);
  {
    // Restarted owner keeps the allocations.
    auto map = ClusterMap::Open(config, 0, Owner());
    ASSERT_TRUE(map.ok()) << map.status().ToString();
    RegionMapping* r = (*map)->local_region();
    EXPECT_TRUE(r->took_over());
    EXPECT_EQ(r->header().generation, 2u);
    auto stats = r->allocator()->Stats();
    ASSERT_EQ(stats.live_allocations, 1u);
    auto info = r->allocator()->Lookup(r->data()).ValueOrDie();
    EXPECT_EQ(info.tag, 77u);
    EXPECT_STREQ(reinterpret_cast<const char*>(r->data()), "survives the crash");
  }
  // A clean close leaves the region closed; a takeover may also format it.
  ClusterMap::Options fresh = Owner();
  fresh.keep_allocations_on_takeover = false;
  fresh.remove_own_region_on_close = true;
  {
    auto map = ClusterMap::Open(config, 0, fresh);
    ASSERT_TRUE(map.ok()) << map.status().ToString();
    EXPECT_EQ((*map)->local_region()->allocator()->Stats().live_allocations, 0u);
  }
  struct stat st;
  EXPECT_NE(stat(config.nodes[0].path.c_str(), &st), 0) << "backing was not removed";
}

TEST(RegionTest, RemoteWaitsForTheOwnerThenFailsClearly) {
  auto config = TestCluster("absent", 2);
  ClusterFiles files(config);
  ClusterMap::Options o = Owner();
  o.wait_ready_ms = 200;
  Child c([&] {
    auto r = ClusterMap::Open(config, 0, o);
    if (r.ok()) return 60;
    return r.status().message().find("node 1's backing") != std::string::npos ? 0 : 61;
  });
  EXPECT_EQ(c.Wait(), 0);
}

// Attacks on the backing path: another local user, or a mistake, left
// something at the path before the owner started. None may be adopted,
// followed or modified.

TEST(RegionFileTest, AFileOfAnotherUserIsRefusedAndLeftAlone) {
  auto config = TestCluster("foreign", 1);
  ClusterFiles files(config);
  const std::string& path = config.nodes[0].path;
  MakeFile(path, "", 0600);
  if (chown(path.c_str(), kOtherUser, kOtherUser) != 0) {
    GTEST_SKIP() << "chown needs root: " << std::strerror(errno);
  }
  ExpectRefused(MapOwn(config, 0), "'" + path + "' is owned by uid 65534, not by this " +
                                       "user (uid " + std::to_string(geteuid()) +
                                       "); remove it or choose another path");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kOtherUser);
  EXPECT_EQ(st.st_size, 0) << "the owner sized a file it refused";
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // Processes that only map the region check the owner too.
  ExpectRefused(MapOwn(config, 0, RegionRole::kOwnerAttach), "is owned by uid 65534");
  ExpectRefused(MapOwn(config, 0, RegionRole::kRemote), "is owned by uid 65534");
}

TEST(RegionFileTest, AFileOfOursWithAnOpenModeIsRefused) {
  auto config = TestCluster("mode644", 1);
  ClusterFiles files(config);
  const std::string& path = config.nodes[0].path;
  MakeFile(path, "", 0644);
  ExpectRefused(MapOwn(config, 0), "has mode 0644; a region backing must be 0600");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u) << "the owner changed a file it refused";
  EXPECT_EQ(st.st_size, 0);
}

TEST(RegionFileTest, ASymlinkAtThePathIsNeverFollowed) {
  auto config = TestCluster("symlink", 2);
  ClusterFiles files(config);
  const std::string target = config.nodes[0].path + "-target";
  const std::string content = "precious bytes of some other file\n";
  MakeFile(target, content, 0600);
  ASSERT_EQ(symlink(target.c_str(), config.nodes[0].path.c_str()), 0);
  ExpectRefused(MapOwn(config, 0), "is a symbolic link; refusing to follow it");
  EXPECT_EQ(ReadAll(target), content) << "the owner wrote through the symlink";
  // A dangling symlink (the target made later) is refused the same way.
  ASSERT_EQ(unlink(target.c_str()), 0);
  ExpectRefused(MapOwn(config, 0), "is a symbolic link");
  struct stat st;
  EXPECT_NE(stat(target.c_str(), &st), 0) << "the owner created the symlink's target";
  // A process of another node does not follow one either.
  ASSERT_EQ(unlink(config.nodes[0].path.c_str()), 0);
  auto own1 = MapOwn(config, 1);
  ASSERT_TRUE(own1.ok()) << own1.status().ToString();
  ASSERT_TRUE(own1->Close().ok());
  const std::string real1 = config.nodes[1].path + "-real";
  ASSERT_EQ(rename(config.nodes[1].path.c_str(), real1.c_str()), 0);
  ASSERT_EQ(symlink(real1.c_str(), config.nodes[1].path.c_str()), 0);
  auto map = ClusterMap::Open(config, 0, Owner());
  ASSERT_FALSE(map.ok());
  EXPECT_NE(map.status().message().find("node 1's backing '" + config.nodes[1].path +
                                        "' is a symbolic link"),
            std::string::npos)
      << map.status().ToString();
  unlink(real1.c_str());
}

TEST(RegionFileTest, AHardLinkedFileIsRefused) {
  auto config = TestCluster("hardlink", 1);
  ClusterFiles files(config);
  const std::string& path = config.nodes[0].path;
  // Another name for one of our files, which formatting would overwrite.
  const std::string other_name = path + "-other-name";
  const std::string content = "a file of ours with another name";
  MakeFile(other_name, content, 0600);
  ASSERT_EQ(link(other_name.c_str(), path.c_str()), 0);
  ExpectRefused(MapOwn(config, 0), "has 2 hard links");
  EXPECT_EQ(ReadAll(other_name), content);
  unlink(other_name.c_str());
}

TEST(RegionFileTest, AFileWithoutAHeaderIsNotOverwritten) {
  auto config = TestCluster("noheader", 1);
  ClusterFiles files(config);
  const std::string& path = config.nodes[0].path;
  // Zeros where a header's magic would be, data after it.
  std::string content(4096, '\0');
  content += std::string(4096, 'x');
  MakeFile(path, content, 0600);
  ExpectRefused(MapOwn(config, 0), "holds 8192 bytes but no Quiver region header");
  EXPECT_EQ(ReadAll(path), content);
  // Bytes where the magic goes are not a region either.
  ASSERT_EQ(unlink(path.c_str()), 0);
  content.assign(8192, 'x');
  MakeFile(path, content, 0600);
  ExpectRefused(MapOwn(config, 0), "is not a Quiver region (bad magic)");
  EXPECT_EQ(ReadAll(path), content);
}

TEST(RegionFileTest, AnEmptyFileOfOursIsFormatted) {
  // What an owner killed between creating the file and sizing it leaves.
  auto config = TestCluster("empty", 1);
  ClusterFiles files(config);
  MakeFile(config.nodes[0].path, "", 0600);
  auto r = MapOwn(config, 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->took_over());
  EXPECT_EQ(r->header().magic, kRegionMagic);
  EXPECT_EQ(r->header().generation, 1u);
  EXPECT_TRUE(r->allocator()->Allocate(100).ok());
}

TEST(RegionFileTest, AnInterruptedFormatIsFormattedAgain) {
  auto config = TestCluster("halfmade", 1);
  ClusterFiles files(config);
  {
    auto r = MapOwn(config, 0);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(r->allocator()->Allocate(100).ok());
    // Rewind to what an owner killed while formatting leaves: a header
    // without its magic, still initialising.
    auto* h = const_cast<RegionHeader*>(&r->header());
    h->magic = 0;
    h->state = static_cast<uint32_t>(RegionState::kInitializing);
    h->owner_pid = 0;
  }
  auto r = MapOwn(config, 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->took_over());
  EXPECT_EQ(r->allocator()->Stats().live_allocations, 0u);
}

TEST(RegionFileTest, AClosedRegionIsTakenOverWithItsAllocations) {
  auto config = TestCluster("reopen", 1);
  ClusterFiles files(config);
  uint8_t* p = nullptr;
  {
    auto r = MapOwn(config, 0);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    p = r->allocator()->Allocate(64, 0, 5).ValueOrDie();
    std::strcpy(reinterpret_cast<char*>(p), "kept");
    ASSERT_TRUE(r->Close().ok());
  }
  auto r = MapOwn(config, 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->took_over());
  EXPECT_EQ(r->header().generation, 2u);
  EXPECT_EQ(r->allocator()->Lookup(p).ValueOrDie().tag, 5u);
  EXPECT_STREQ(reinterpret_cast<const char*>(p), "kept");
  struct stat st;
  ASSERT_EQ(stat(config.nodes[0].path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST(RegionFileTest, ADeviceBackingMayBeASymlinkButMustBeADeviceOrAFile) {
  auto config = TestCluster("device", 1, 64ULL << 20, BackingKind::kDevice);
  ClusterFiles files(config);
  const std::string& path = config.nodes[0].path;
  const std::string file = path + "-file";
  // A symlink to a file of the region's size: what udev gives, in a test.
  MakeFile(file, "", 0600);
  ASSERT_EQ(truncate(file.c_str(), static_cast<off_t>(config.nodes[0].size)), 0);
  ASSERT_EQ(symlink(file.c_str(), path.c_str()), 0);
  {
    auto r = MapOwn(config, 0);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->header().magic, kRegionMagic);
  }
  unlink(path.c_str());
  unlink(file.c_str());
  // A FIFO fails at once instead of blocking the open.
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  ExpectRefused(MapOwn(config, 0),
                "is a FIFO; a device backing must be a character or "
                "block device or a regular file");
  ExpectRefused(MapOwn(config, 0, RegionRole::kRemote), "is a FIFO");
  unlink(path.c_str());
  ASSERT_EQ(mkdir(path.c_str(), 0700), 0);
  ExpectRefused(MapOwn(config, 0), "is a directory");
  rmdir(path.c_str());
}

TEST(RegionFileTest, ADirectoryAtAShmPathIsRefused) {
  auto config = TestCluster("dir", 1);
  const std::string& path = config.nodes[0].path;
  ASSERT_EQ(mkdir(path.c_str(), 0700), 0);
  ExpectRefused(MapOwn(config, 0), "is a directory, not a regular file");
  rmdir(path.c_str());
}

}  // namespace
}  // namespace quiver::memory
