// UCX's shared-memory files of processes killed before UCX unlinked them:
// found in Quiver's directory and removed; files a live process holds stay.
#include "transport/ucx_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace quiver::transport {
namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// A child that creates `path`, holds it open and waits; killed by the
// caller. Returns its pid once the file exists.
pid_t Holder(const std::string& path) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    const char c = fd >= 0 ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char c = 0;
  const bool ok = ::read(ready[0], &c, 1) == 1 && c == 'y';
  ::close(ready[0]);
  if (!ok && pid > 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return -1;
  }
  return pid;
}

void KillAndReap(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

TEST(UcxFiles, AKilledProcesssFilesGoAndALiveOnesStay) {
  const std::string dir = UcxFileDir();
  ASSERT_FALSE(dir.empty()) << "no private directory under /dev/shm";
  struct stat st {};
  ASSERT_EQ(::lstat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());

  const std::string tag = std::to_string(::getpid());
  const std::string dead = dir + "/ucx_shm_posix_dead" + tag,
                    alive = dir + "/ucx_shm_posix_alive" + tag,
                    other = dir + "/not_ucx" + tag;
  // Killed while it held its file, as UCX is between creating a file and
  // unlinking it.
  const pid_t d = Holder(dead);
  ASSERT_GT(d, 0);
  KillAndReap(d);
  const pid_t a = Holder(alive);
  ASSERT_GT(a, 0);
  const int fd = ::open(other.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ::close(fd);

  EXPECT_GE(SweepUcxFiles(dir), 1u);
  EXPECT_FALSE(Exists(dead)) << dead << " outlived its process";
  EXPECT_TRUE(Exists(alive)) << alive << " was taken from a live process";
  EXPECT_TRUE(Exists(other)) << other << " is not UCX's";

  KillAndReap(a);
  EXPECT_GE(SweepUcxFiles(dir), 1u);
  EXPECT_FALSE(Exists(alive));
  EXPECT_TRUE(Exists(other));
  ::unlink(other.c_str());
}

TEST(UcxFiles, NothingIsSweptWhenPeersOpenFilesByName) {
  const std::string dir = UcxFileDir();
  ASSERT_FALSE(dir.empty());
  const std::string file = dir + "/ucx_shm_posix_byname" + std::to_string(::getpid());
  const int fd = ::open(file.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ::close(fd);
  // Without proc links UCX closes a file it still uses and peers open it by
  // name: a closed file is no sign of a dead process.
  ::setenv("UCX_POSIX_USE_PROC_LINK", "n", 1);
  EXPECT_EQ(SweepUcxFiles(dir), 0u);
  ::unsetenv("UCX_POSIX_USE_PROC_LINK");
  EXPECT_TRUE(Exists(file));
  ::unlink(file.c_str());
}

}  // namespace
}  // namespace quiver::transport
