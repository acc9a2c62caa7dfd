// The server's body pool: memory UCX allocated in POSIX shared memory that
// only the server's user can open, which a peer on the same host reaches
// through a mapping (a read is one copy by the reader) rather than through
// active messages the server must answer.
#include "transport/body_pool.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "common/status_macros.h"
#include "transport/ucx_files.h"

namespace quiver::transport {
namespace {

// The path /proc/self/maps names for the mapping holding `address`.
std::string MappingOf(const void* address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto a = reinterpret_cast<uintptr_t>(address);
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in, path);
    const auto dash = range.find('-');
    const uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (a >= lo && a < hi) {
      path.erase(0, path.find_first_not_of(' '));
      return path;
    }
  }
  return "";
}

TEST(BodyPool, IsSharedMemoryOnlyItsUserCanOpen) {
  ASSERT_OK_AND_ASSIGN(auto context, UcxContext::Make());
  ASSERT_OK_AND_ASSIGN(auto pool, BodyPool::Make(context, 8 << 20));
  const std::string path = MappingOf(pool->base());
  // In Quiver's own directory, where a killed process's file is found.
  const std::string dir = UcxFileDir();
  ASSERT_EQ(dir, "/dev/shm/quiver-ucx-" + std::to_string(geteuid()));
  ASSERT_EQ(path.rfind(dir + "/", 0), 0u) << "the pool is mapped from '" << path << "'";
  EXPECT_NE(path.find("(deleted)"), std::string::npos)
      << path << ": the file must be gone from /dev/shm once mapped";
  // The descriptor UCX keeps open for peers (they open /proc/<pid>/fd/N).
  bool found = false;
  for (int fd = 0; fd < 4096 && !found; ++fd) {
    char target[512];
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (path != target) continue;
    struct stat st {};
    ASSERT_EQ(fstat(fd, &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << path;
    EXPECT_EQ(st.st_uid, geteuid());
    EXPECT_GE(static_cast<uint64_t>(st.st_size), pool->capacity());
    found = true;
  }
  EXPECT_TRUE(found) << "no open descriptor for " << path;
  // Every page written once: the whole pool is present, zeroed.
  for (uint64_t at = 0; at < pool->capacity(); at += 4096) {
    ASSERT_EQ(pool->base()[at], 0) << at;
  }
}

TEST(BodyPool, APeerOnThisHostReachesItThroughAMapping) {
  ASSERT_OK_AND_ASSIGN(auto context, UcxContext::Make());
  ASSERT_OK_AND_ASSIGN(auto pool, BodyPool::Make(context, 4 << 20));
  std::memcpy(pool->base() + 4096, "pool bytes", 10);
  ASSERT_OK_AND_ASSIGN(auto owner, UcxWorker::Make(context));
  ASSERT_OK_AND_ASSIGN(auto reader, UcxWorker::Make(context));
  ASSERT_OK_AND_ASSIGN(std::string address, owner->Address());
  ASSERT_OK_AND_ASSIGN(ucp_ep_h ep, reader->ConnectTo(address));
  ucp_rkey_h rkey = nullptr;
  ASSERT_EQ(ucp_ep_rkey_unpack(ep, pool->registration().packed_rkey().data(), &rkey),
            UCS_OK);
  // A key the reader can turn into a pointer: reads are copies out of a
  // mapping (for ordinary memory UCX answers UCS_ERR_UNREACHABLE and reads
  // go through the owner's progress thread).
  void* mapped = nullptr;
  EXPECT_EQ(ucp_rkey_ptr(rkey, reinterpret_cast<uint64_t>(pool->base()) + 4096, &mapped),
            UCS_OK);
  ASSERT_NE(mapped, nullptr);
  EXPECT_EQ(std::memcmp(mapped, "pool bytes", 10), 0);
  ucp_rkey_destroy(rkey);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void* closing = ucp_ep_close_nbx(ep, &p);
  while (UCS_PTR_IS_PTR(closing) && ucp_request_check_status(closing) == UCS_INPROGRESS) {
    reader->Progress();
    owner->Progress();
  }
  if (UCS_PTR_IS_PTR(closing)) ucp_request_free(closing);
}

}  // namespace
}  // namespace quiver::transport
