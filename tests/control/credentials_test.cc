// Cluster credentials: what InitCredentials writes (files, modes, certificate
// contents), which directories it refuses, ReadCredentialFile's refusals, the
// identity URI, and the usage errors of `quiver cluster init`.

#include "control/tls/credentials.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "common/strings.h"
#include "control/tls/tls_context.h"
#include "quiver/memory/cluster_config.h"

namespace quiver::control {
namespace {

namespace fs = std::filesystem;

using ::quiver::testing::Contains;

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteText(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path, std::ios::binary) << text;
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

OsslPtr<X509> ParseCert(const std::string& path) {
  const std::string pem = Slurp(path);
  OsslPtr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return OsslPtr<X509>(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

std::string NameField(X509* cert, int nid) {
  char buf[128];
  int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), nid, buf, sizeof(buf));
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// Hex digits of the serial number, without leading zeros.
std::string SerialHex(X509* cert) {
  OsslPtr<BIGNUM> bn(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
  char* hex = BN_bn2hex(bn.get());
  std::string s = hex;
  OPENSSL_free(hex);
  return s;
}

// A fresh folder per test (mode 0700, as mkdtemp makes it), removed after.
class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "quiver-creds-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/creds";
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string root_, dir_;
};

// ---------------------------------------------------------------------------
// Names and identity URIs

TEST(CredentialsNamesTest, PathsRolesAndUris) {
  EXPECT_EQ(CaCertPath("/d"), "/d/ca.crt");
  EXPECT_EQ(CaKeyPath("/d/"), "/d/ca.key");
  EXPECT_EQ(CertPath("/d", PeerRole::kDaemon, 3), "/d/daemon-3.crt");
  EXPECT_EQ(KeyPath("/d", PeerRole::kClient, 3), "/d/client-3.key");
  EXPECT_STREQ(PeerRoleName(PeerRole::kDaemon), "daemon");
  EXPECT_STREQ(PeerRoleName(PeerRole::kClient), "client");
  const PeerIdentity id{"demo", PeerRole::kDaemon, 3};
  EXPECT_EQ(id.ToString(), "daemon of node 3");
  EXPECT_EQ(IdentityUri(id), "quiver:demo:daemon:3");
  ASSERT_OK_AND_ASSIGN(PeerIdentity back, ParseIdentityUri("quiver:demo:daemon:3"));
  EXPECT_EQ(back, id);
  ASSERT_OK_AND_ASSIGN(PeerIdentity top, ParseIdentityUri("quiver:a.b-c_d:client:65534"));
  EXPECT_EQ(top, (PeerIdentity{"a.b-c_d", PeerRole::kClient, 65534}));
}

TEST(CredentialsNamesTest, MalformedUrisAreUnauthenticated) {
  for (const char* uri :
       {"quiver:demo:daemon:65535", "quiver:demo:daemon:007", "quiver:demo:daemon:-1",
        "quiver:demo:daemon:+1", "quiver:demo:daemon:", "quiver:demo:daemon:1x",
        "quiver:demo:daemon:99999999999", "quiver:demo:boss:1", "quiver::daemon:1",
        "quiver:a:b:daemon:1", "quiver:demo:daemon", "https://demo/daemon/1",
        "quiver:demo:daemon:1 ", "QUIVER:demo:daemon:1"}) {
    auto r = ParseIdentityUri(uri);
    ASSERT_FALSE(r.ok()) << uri;
    EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated) << uri;
  }
  EXPECT_FALSE(ParseIdentityUri(std::string("quiver:de\0mo:daemon:1", 22)).ok());
  EXPECT_FALSE(ParseIdentityUri("quiver:" + std::string(300, 'a') + ":daemon:1").ok());
}

// ---------------------------------------------------------------------------
// InitCredentials

TEST_F(CredentialsTest, WritesEveryFileWithItsMode) {
  ASSERT_OK(InitCredentials(dir_, "demo", {0, 1, 5}));
  EXPECT_EQ(ModeOf(dir_), 0700u);
  // No shared transport token: the transport's keys are tickets a session
  // asks for (docs/transport.md).
  std::set<std::string> expected = {"ca.crt", "ca.key"};
  for (const char* role : {"daemon", "client"}) {
    for (int node : {0, 1, 5}) {
      expected.insert(std::string(role) + "-" + std::to_string(node) + ".crt");
      expected.insert(std::string(role) + "-" + std::to_string(node) + ".key");
    }
  }
  std::set<std::string> found;  // also: no temporary file is left behind
  for (const auto& e : fs::directory_iterator(dir_)) {
    found.insert(e.path().filename().string());
    EXPECT_TRUE(e.is_regular_file() && !e.is_symlink()) << e.path();
  }
  EXPECT_EQ(found, expected);
  for (const std::string& name : expected) {
    const mode_t want = name.ends_with(".key") ? 0600 : 0644;
    EXPECT_EQ(ModeOf(dir_ + "/" + name), want) << name;
  }
}

TEST_F(CredentialsTest, ModesDoNotDependOnTheUmask) {
  const mode_t old = ::umask(077);
  Status st = InitCredentials(dir_, "demo", {0});
  ::umask(old);
  ASSERT_OK(st);
  EXPECT_EQ(ModeOf(CaCertPath(dir_)), 0644u);
  EXPECT_EQ(ModeOf(CaKeyPath(dir_)), 0600u);
}

TEST_F(CredentialsTest, CertificatesCarryClusterAndIdentity) {
  ASSERT_OK(InitCredentials(dir_, "demo", {0, 2}));
  OsslPtr<X509> ca = ParseCert(CaCertPath(dir_));
  ASSERT_TRUE(ca);
  EXPECT_EQ(NameField(ca.get(), NID_organizationName), "demo");
  EXPECT_EQ(X509_check_ca(ca.get()), 1);  // basicConstraints CA:TRUE
  int critical = 0;
  std::unique_ptr<BASIC_CONSTRAINTS, decltype(&BASIC_CONSTRAINTS_free)> bc(
      static_cast<BASIC_CONSTRAINTS*>(
          X509_get_ext_d2i(ca.get(), NID_basic_constraints, &critical, nullptr)),
      &BASIC_CONSTRAINTS_free);
  ASSERT_TRUE(bc);
  EXPECT_TRUE(bc->ca);
  EXPECT_EQ(critical, 1);
  EXPECT_NE(X509_get_key_usage(ca.get()) & KU_KEY_CERT_SIGN, 0u);

  std::set<std::string> serials = {SerialHex(ca.get())};
  for (PeerRole role : {PeerRole::kDaemon, PeerRole::kClient}) {
    OsslPtr<X509> cert = ParseCert(CertPath(dir_, role, 2));
    ASSERT_TRUE(cert);
    const std::string name = std::string(PeerRoleName(role)) + " 2";
    EXPECT_EQ(NameField(cert.get(), NID_organizationName), "demo");
    EXPECT_EQ(NameField(cert.get(), NID_commonName), "quiver " + name);
    ASSERT_OK_AND_ASSIGN(PeerIdentity id,
                         IdentityOfCertificate(cert.get(), "demo", name));
    EXPECT_EQ(id, (PeerIdentity{"demo", role, 2}));
    EXPECT_EQ(X509_check_ca(cert.get()), 0);
    const uint32_t eku = X509_get_extended_key_usage(cert.get());
    EXPECT_NE(eku & XKU_SSL_CLIENT, 0u);
    EXPECT_EQ((eku & XKU_SSL_SERVER) != 0, role == PeerRole::kDaemon);
    EXPECT_EQ(X509_check_issued(ca.get(), cert.get()), X509_V_OK);
    EVP_PKEY* key = X509_get0_pubkey(cert.get());
    EXPECT_TRUE(EVP_PKEY_is_a(key, "EC"));
    char group[64];
    ASSERT_EQ(EVP_PKEY_get_group_name(key, group, sizeof(group), nullptr), 1);
    EXPECT_STREQ(group, "prime256v1");
    const std::string serial = SerialHex(cert.get());
    EXPECT_EQ(serial.size(), 32u) << serial;  // 128 random bits
    serials.insert(serial);
  }
  EXPECT_EQ(serials.size(), 3u);
}

TEST_F(CredentialsTest, RefusesExistingCredentialsUnlessOverwrite) {
  ASSERT_OK(InitCredentials(dir_, "demo", {0}));
  const std::string ca_key = Slurp(CaKeyPath(dir_));
  Status again = InitCredentials(dir_, "demo", {0});
  ASSERT_EQ(again.code(), StatusCode::kAlreadyExists) << again.ToString();
  EXPECT_TRUE(Contains(again.message(), "--force")) << again.message();
  EXPECT_EQ(Slurp(CaKeyPath(dir_)), ca_key);  // untouched

  // A single leftover file counts too: a half-cleaned directory is refused.
  fs::path lone = root_ + "/lone";
  ASSERT_OK(InitCredentials(lone.string(), "demo", {0}));
  for (const auto& e : fs::directory_iterator(lone)) {
    if (e.path().filename() != "client-0.key") fs::remove(e.path());
  }
  EXPECT_EQ(InitCredentials(lone.string(), "demo", {0}).code(),
            StatusCode::kAlreadyExists);

  ASSERT_OK(InitCredentials(dir_, "demo", {0}, {.overwrite = true}));
  EXPECT_NE(Slurp(CaKeyPath(dir_)), ca_key);
  EXPECT_EQ(ModeOf(CaKeyPath(dir_)), 0600u);
}

TEST_F(CredentialsTest, AnEmptyExistingDirectoryIsUsed) {
  ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  ASSERT_OK(InitCredentials(dir_, "demo", {0}));
  EXPECT_TRUE(fs::exists(CertPath(dir_, PeerRole::kClient, 0)));
}

TEST_F(CredentialsTest, TwoCallsGiveDifferentKeys) {
  ASSERT_OK(InitCredentials(root_ + "/a", "demo", {0}));
  ASSERT_OK(InitCredentials(root_ + "/b", "demo", {0}));
  for (const std::string name : {"ca.key", "daemon-0.key", "client-0.key"}) {
    const std::string a = Slurp(root_ + "/a/" + name), b = Slurp(root_ + "/b/" + name);
    EXPECT_TRUE(a.starts_with("-----BEGIN PRIVATE KEY-----")) << a.substr(0, 40);
    EXPECT_NE(a, b) << name;
  }
}

TEST_F(CredentialsTest, RefusesASymlinkedDirectory) {
  const std::string real = root_ + "/real";
  ASSERT_EQ(::mkdir(real.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(real.c_str(), dir_.c_str()), 0);
  Status st = InitCredentials(dir_, "demo", {0});
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(Contains(st.message(), "is a symbolic link")) << st.message();
  EXPECT_TRUE(fs::is_empty(real));
}

TEST_F(CredentialsTest, RefusesADirectoryOthersCanEnter) {
  for (mode_t mode : {0750, 0705, 0777}) {
    fs::remove_all(dir_);
    ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(dir_.c_str(), mode), 0);
    Status st = InitCredentials(dir_, "demo", {0});
    ASSERT_EQ(st.code(), StatusCode::kPermissionDenied) << mode;
    EXPECT_TRUE(Contains(st.message(), "chmod 700")) << st.message();
    EXPECT_TRUE(fs::is_empty(dir_));
  }
}

TEST_F(CredentialsTest, RefusesADirectoryOfAnotherUserOrAFile) {
  ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  ASSERT_EQ(::chown(dir_.c_str(), 65534, 65534), 0) << "the tests run as root";
  Status st = InitCredentials(dir_, "demo", {0});
  ASSERT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(Contains(st.message(), "owned by uid 65534")) << st.message();

  const std::string file = root_ + "/file";
  WriteText(file, "x", 0600);
  st = InitCredentials(file, "demo", {0});
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(Contains(st.message(), "is not a directory")) << st.message();
}

TEST_F(CredentialsTest, RejectsBadArgumentsBeforeWriting) {
  EXPECT_TRUE(InitCredentials(dir_, "a:b", {0}).IsInvalid());
  EXPECT_TRUE(InitCredentials(dir_, "", {0}).IsInvalid());
  EXPECT_TRUE(InitCredentials(dir_, std::string(64, 'a'), {0}).IsInvalid());
  EXPECT_TRUE(InitCredentials(dir_, "demo", {}).IsInvalid());
  EXPECT_TRUE(InitCredentials(dir_, "demo", {1, 65535}).IsInvalid());
  EXPECT_TRUE(InitCredentials(dir_, "demo", {1, 2, 1}).IsInvalid());
  EXPECT_TRUE(InitCredentials(dir_, "demo", {0}, {.validity_days = 0}).IsInvalid());
  EXPECT_FALSE(fs::exists(dir_));
}

// ---------------------------------------------------------------------------
// ReadCredentialFile

TEST_F(CredentialsTest, ReadsAGoodFile) {
  const std::string path = root_ + "/k";
  WriteText(path, "secret bytes", 0600);
  ASSERT_OK_AND_ASSIGN(std::string text, ReadCredentialFile(path, true));
  EXPECT_EQ(text, "secret bytes");
  ASSERT_EQ(::chmod(path.c_str(), 0400), 0);  // read-only is fine too
  EXPECT_TRUE(ReadCredentialFile(path, true).ok());
  EXPECT_TRUE(ReadCredentialFile(root_ + "/none", false).status().IsNotFound());
}

void ExpectRefusal(const Result<std::string>& r, const std::string& path,
                   const std::string& reason) {
  ASSERT_FALSE(r.ok()) << path;
  EXPECT_TRUE(Contains(r.status().message(), path)) << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), reason)) << r.status().message();
}

TEST_F(CredentialsTest, ReadRefusesASymlink) {
  const std::string target = root_ + "/target", link = root_ + "/link";
  WriteText(target, "x", 0600);
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  ExpectRefusal(ReadCredentialFile(link, true), link, "is a symbolic link");
  ExpectRefusal(ReadCredentialFile(link, false), link, "is a symbolic link");
}

TEST_F(CredentialsTest, ReadRefusesAFifoWithoutBlocking) {
  // Without O_NONBLOCK the open would wait for a writer forever (the test
  // would hang until CTest's timeout).
  const std::string fifo = root_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ExpectRefusal(ReadCredentialFile(fifo, true), fifo, "is not a regular file");
}

TEST_F(CredentialsTest, ReadRefusesDirectoriesAndDevices) {
  ExpectRefusal(ReadCredentialFile(root_, false), root_, "is not a regular file");
  ExpectRefusal(ReadCredentialFile("/dev/zero", false), "/dev/zero",
                "is not a regular file");
}

TEST_F(CredentialsTest, ReadRefusesAnOversizeFile) {
  const std::string path = root_ + "/big";
  WriteText(path, std::string(64 * 1024 + 1, 'x'), 0644);
  ExpectRefusal(ReadCredentialFile(path, false), path, "is larger than 65536 bytes");
  WriteText(path, std::string(64 * 1024, 'x'), 0644);
  EXPECT_TRUE(ReadCredentialFile(path, false).ok());
  ExpectRefusal(ReadCredentialFile(path, false, 100), path, "is larger than 100 bytes");
}

TEST_F(CredentialsTest, ReadRefusesAKeyOthersCanRead) {
  const std::string path = root_ + "/key";
  WriteText(path, "x", 0644);
  ExpectRefusal(ReadCredentialFile(path, true), path,
                "is readable by other users (mode 0644); chmod 600 it");
  ASSERT_EQ(::chmod(path.c_str(), 0620), 0);
  ExpectRefusal(ReadCredentialFile(path, true), path, "(mode 0620); chmod 600 it");
  EXPECT_TRUE(ReadCredentialFile(path, false).status().code() ==
              StatusCode::kPermissionDenied);  // group-writable
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  EXPECT_TRUE(ReadCredentialFile(path, false).ok());  // a certificate may be public
  ASSERT_EQ(::chmod(path.c_str(), 0646), 0);
  ExpectRefusal(ReadCredentialFile(path, false), path, "is writable by other users");
}

TEST_F(CredentialsTest, ReadRefusesAKeyOfAnotherUser) {
  const std::string path = root_ + "/key";
  WriteText(path, "x", 0600);
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0) << "the tests run as root";
  ExpectRefusal(ReadCredentialFile(path, true), path, "is owned by uid 65534");
  // A certificate of another user is refused too: its owner could rewrite it.
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  ExpectRefusal(ReadCredentialFile(path, false), path, "is owned by uid 65534");
  // Root's files are trusted.
  ASSERT_EQ(::chown(path.c_str(), 0, 0), 0);
  EXPECT_TRUE(ReadCredentialFile(path, false).ok());
}

// ---------------------------------------------------------------------------
// quiver cluster init (the binary, when it has been built)

struct CommandRun {
  int code = -1;
  std::string out, err;
};

CommandRun RunQuiver(const std::string& args, const std::string& dir) {
  CommandRun r;
  const std::string out = dir + "/stdout", err = dir + "/stderr";
  const std::string cmd = std::string(QUIVER_BINARY_DIR) + "/quiver " + args + " >'" +
                          out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(out);
  r.err = Slurp(err);
  return r;
}

const char* kConfig = R"([cluster]
name = "demo"
%CREDENTIALS%
[[node]]
id = 0
control = "127.0.0.1:7600"
base = "0x300000000000"
size = "64MiB"

[[node]]
id = 7
control = "127.0.0.1:7601"
base = "0x300010000000"
size = "64MiB"
)";

std::string Config(const std::string& credentials_line) {
  std::string s = kConfig;
  return s.replace(s.find("%CREDENTIALS%"), 13, credentials_line);
}

class CredentialsCommandTest : public CredentialsTest {
 protected:
  void SetUp() override {
    CredentialsTest::SetUp();
    // control_tests depends on the quiver target: it is always built.
    ASSERT_TRUE(fs::exists(std::string(QUIVER_BINARY_DIR) + "/quiver"));
  }
};

TEST_F(CredentialsCommandTest, UsageErrors) {
  for (const std::string args : {"cluster", "cluster frob", "cluster init",
                                 "cluster init a.toml b.toml", "cluster init --force"}) {
    CommandRun r = RunQuiver(args, root_);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_TRUE(Contains(r.err, "usage: quiver cluster init CONFIG [--force]")) << r.err;
  }
  CommandRun r = RunQuiver("cluster init " + root_ + "/missing.toml", root_);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Contains(r.err, "missing.toml")) << r.err;
}

TEST_F(CredentialsCommandTest, ConfigWithoutCredentialsIsRefused) {
  const std::string config = root_ + "/c.toml";
  WriteText(config, Config(""), 0644);
  CommandRun r = RunQuiver("cluster init " + config, root_);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, config + " has no credentials = \"DIR\" in [cluster]"))
      << r.err;
}

TEST_F(CredentialsCommandTest, InitWritesTheConfigsDirectory) {
  const std::string text = Config("credentials = \"creds\"");
  const std::string config = root_ + "/c.toml";
  WriteText(config, text, 0644);
  CommandRun r = RunQuiver("cluster init " + config, root_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, dir_ + "/daemon-7.key (0600)")) << r.out;
  ASSERT_OK_AND_ASSIGN(std::string pem, ReadCredentialFile(CaKeyPath(dir_), true));
  EXPECT_TRUE(fs::exists(CertPath(dir_, PeerRole::kClient, 7)));
  r = RunQuiver("cluster init " + config, root_);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Contains(r.err, "already holds credentials")) << r.err;
  r = RunQuiver("cluster init --force " + config, root_);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(Slurp(CaKeyPath(dir_)), pem);
}

}  // namespace
}  // namespace quiver::control
