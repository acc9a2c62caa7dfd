// util::MakePrivateDir: the directories Quiver keeps what others must not
// plant or read (spill files, UCX's files, a local cluster's state).
#include "util/private_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace quiver::util {
namespace {

class PrivateDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/quiver-private-dir-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    base_ = tmpl;
  }
  void TearDown() override {
    for (const char* n : {"/made", "/link", "/file", "/open"}) {
      const std::string p = base_ + n;
      ::rmdir(p.c_str());
      ::unlink(p.c_str());
    }
    ::rmdir(base_.c_str());
  }
  std::string base_;
};

TEST_F(PrivateDirTest, MadeWithMode0700AndAcceptedAgain) {
  const std::string dir = base_ + "/made";
  ASSERT_TRUE(MakePrivateDir(dir, "test directory").ok());
  struct stat st {};
  ASSERT_EQ(::lstat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(MakePrivateDir(dir, "test directory").ok());
  EXPECT_TRUE(CheckPrivateDir(dir, "test directory").ok());
}

TEST_F(PrivateDirTest, SymlinksFilesAndOpenDirectoriesAreRefusedByName) {
  const std::string link = base_ + "/link", file = base_ + "/file",
                    open = base_ + "/open";
  ASSERT_EQ(::symlink(base_.c_str(), link.c_str()), 0);
  Status st = MakePrivateDir(link, "spill directory");
  EXPECT_TRUE(st.IsInvalid()) << st.ToString();
  EXPECT_NE(st.message().find("spill directory '" + link + "' is not a directory"),
            std::string::npos)
      << st.message();
  const int fd = ::open(file.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ::close(fd);
  EXPECT_TRUE(MakePrivateDir(file, "x").IsInvalid());
  ASSERT_EQ(::mkdir(open.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  st = MakePrivateDir(open, "x");
  EXPECT_TRUE(st.IsPermissionDenied()) << st.ToString();
  EXPECT_NE(st.message().find("written by others"), std::string::npos) << st.message();
  EXPECT_TRUE(MakePrivateDir("", "x").IsInvalid());
  EXPECT_TRUE(CheckPrivateDir(base_ + "/absent", "x").IsIOError());
}

}  // namespace
}  // namespace quiver::util
