// What a daemon refuses at start, at once and with a clear message: backing
// files planted by another user or behind a symlink, and broken configs
// (ports out of range, a FIFO or /dev/zero as the config, the old shared
// token, credential files others can read, credentials of another user).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cluster/cluster_util.h"
#include "control/tls/credentials.h"

namespace quiver {
namespace {

using testing::BinaryPath;
using testing::Child;

class DaemonFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/quiver-files-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    name_ = "files-" + std::to_string(getpid());
    region_ = "/dev/shm/quiver-" + name_ + "-0";
    ASSERT_TRUE(control::InitCredentials(dir_ + "/creds", name_, {0}).ok());
    auto port = control::FreeTcpPort();
    ASSERT_TRUE(port.ok());
    port_ = *port;
  }
  void TearDown() override {
    unlink(region_.c_str());
    std::filesystem::remove_all(dir_);
  }
  std::string Config(const std::string& port, const std::string& extra = "") {
    return "[cluster]\nname = \"" + name_ + "\"\ncredentials = \"creds\"\n" + extra +
           "\n[[node]]\nid = 0\ncontrol = \"127.0.0.1:" + port + "\"\nsocket = \"" +
           dir_ + "/n0.sock\"\nbase = \"0x340000000000\"\nsize = \"64MiB\"\npath = \"" +
           region_ + "\"\n";
  }
  std::string Write(const std::string& text) {
    const std::string path = dir_ + "/cluster.toml";
    std::ofstream(path) << text;
    return path;
  }
  // Runs quiverd on `config`: its exit code and everything it printed. A
  // daemon that hangs is killed after 30 s (and fails the test by its code).
  std::pair<int, std::string> Run(const std::string& config) {
    Child d = Child::Start(
        {"/bin/sh", "-c",
         "exec " + BinaryPath("quiverd") + " --config " + config + " --id 0 2>&1"});
    const int code = d.Finish(30000);
    return {code, d.output()};
  }

  std::string dir_, name_, region_;
  int port_ = 0;
};

TEST_F(DaemonFilesTest, ABackingPlantedByAnotherUserIsRefused) {
  const int fd = open(region_.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(chown(region_.c_str(), 65534, 65534), 0);
  auto [code, out] = Run(Write(Config(std::to_string(port_))));
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("owned by uid 65534"), std::string::npos) << out;
  struct stat st {};
  ASSERT_EQ(stat(region_.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);  // untouched: not adopted, not resized
  EXPECT_EQ(st.st_size, 0);
}

TEST_F(DaemonFilesTest, ASymlinkAtTheBackingPathIsRefused) {
  const std::string target = dir_ + "/precious";
  std::ofstream(target) << "precious bytes";
  ASSERT_EQ(symlink(target.c_str(), region_.c_str()), 0);
  auto [code, out] = Run(Write(Config(std::to_string(port_))));
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("symbolic link"), std::string::npos) << out;
  std::ifstream in(target);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "precious bytes");
}

TEST_F(DaemonFilesTest, ConfigErrorsAreClearAndImmediate) {
  struct Case {
    std::string config;  // path
    std::string expect;
  };
  std::vector<Case> cases;
  cases.push_back({Write(Config("99999")), "port 99999 is not in 1..65535"});
  const std::string token = dir_ + "/token.toml";
  std::ofstream(token) << Config(std::to_string(port_), "token = \"secret\"");
  cases.push_back({token, "token is no longer used"});
  const std::string fifo = dir_ + "/fifo.toml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  cases.push_back({fifo, "is not a regular file"});
  cases.push_back({"/dev/zero", "is not a regular file"});
  const std::string nocreds = dir_ + "/nocreds.toml";
  std::string text = Config(std::to_string(port_));
  text.replace(text.find("credentials = \"creds\"\n"), 22, "");
  std::ofstream(nocreds) << text;
  cases.push_back({nocreds, "quiver cluster init"});
  for (const auto& c : cases) {
    auto [code, out] = Run(c.config);
    EXPECT_EQ(code, 1) << c.config << ": " << out;
    EXPECT_NE(out.find(c.expect), std::string::npos) << c.config << ": " << out;
  }
  // A daemon key that others can read is refused, naming the file.
  const std::string key =
      control::KeyPath(dir_ + "/creds", control::PeerRole::kDaemon, 0);
  ASSERT_EQ(chmod(key.c_str(), 0644), 0);
  auto [code, out] = Run(Write(Config(std::to_string(port_))));
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("daemon-0.key"), std::string::npos) << out;
  EXPECT_NE(out.find("chmod 600"), std::string::npos) << out;
}

// Credentials are checked at every start: a credentials directory others
// can write into (mode 0777), or a CA or daemon certificate owned by
// another user (who could re-sign the daemon's key with a CA of their own),
// stops the daemon at once, naming the file or directory.
TEST_F(DaemonFilesTest, CredentialsOfAnotherUserAreRefusedAtStart) {
  const std::string creds = dir_ + "/creds";
  const std::string config = Write(Config(std::to_string(port_)));
  ASSERT_EQ(chmod(creds.c_str(), 0777), 0);
  auto [code, out] = Run(config);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("can be written by other users (mode 0777)"), std::string::npos)
      << out;
  ASSERT_EQ(chmod(creds.c_str(), 0700), 0);
  for (const std::string& file :
       {control::CaCertPath(creds),
        control::CertPath(creds, control::PeerRole::kDaemon, 0)}) {
    ASSERT_EQ(chown(file.c_str(), 65534, 65534), 0) << "the tests run as root";
    std::tie(code, out) = Run(config);
    EXPECT_EQ(code, 1) << out;
    EXPECT_NE(out.find(file + "' is owned by uid 65534"), std::string::npos) << out;
    ASSERT_EQ(chown(file.c_str(), 0, 0), 0);
  }
}

}  // namespace
}  // namespace quiver
