// TlsContext and PeerIdentityOf: real TLS 1.3 handshakes over a socketpair
// (the server side on a thread), the identities both sides see, and every
// refusal: another CA, a client certificate that serves, another cluster, a
// missing client certificate, TLS 1.2, mismatched and tampered keys.

#include "control/tls/tls_context.h"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "common/status_macros.h"
#include "common/strings.h"

namespace quiver::control {
namespace {

namespace fs = std::filesystem;

using ::quiver::testing::Contains;

using SessionPtr = std::unique_ptr<SSL_SESSION, decltype(&SSL_SESSION_free)>;

// What one side of a connection saw.
struct Side {
  Status status;  // handshake and one message each way
  std::optional<Result<PeerIdentity>> peer;
  int version = 0;
  bool reused = false;
  SessionPtr session{nullptr, &SSL_SESSION_free};  // the client's, after it
};

struct Outcome {
  Side server, client;
};

// Changes an SSL before its handshake (a test's deviation from the context).
using Tweak = std::function<void(SSL*)>;

// Runs one side on `fd` (which it closes): handshake, then the client sends
// "ping" and the server answers "pong". In TLS 1.3 the client finishes its
// handshake before the server has checked the client's certificate, so only
// the exchange shows that the server accepted it.
Side RunSide(SSL_CTX* ctx, int fd, bool server, const std::string& cluster,
             const Tweak& tweak) {
  Side side;
  OsslPtr<SSL> ssl(SSL_new(ctx));
  SSL_set_fd(ssl.get(), fd);
  if (tweak) tweak(ssl.get());
  const std::string who = server ? "server" : "client";
  if ((server ? SSL_accept(ssl.get()) : SSL_connect(ssl.get())) != 1) {
    // OpenSSL queues only "certificate verify failed"; the result says why.
    side.status = Status::Unauthenticated(
        TlsErrorText(who + " handshake") + " / " +
        X509_verify_cert_error_string(SSL_get_verify_result(ssl.get())));
  } else {
    side.peer = PeerIdentityOf(ssl.get(), cluster);
    side.version = SSL_version(ssl.get());
    side.reused = SSL_session_reused(ssl.get()) == 1;
    char buf[4];
    const bool ok =
        server ? SSL_read(ssl.get(), buf, 4) == 4 && SSL_write(ssl.get(), "pong", 4) == 4
               : SSL_write(ssl.get(), "ping", 4) == 4 && SSL_read(ssl.get(), buf, 4) == 4;
    if (!ok) side.status = Status::Unauthenticated(TlsErrorText(who + " I/O"));
    if (!server) side.session.reset(SSL_get1_session(ssl.get()));
    // A clean close: SSL_free without close_notify would make the session
    // unresumable by itself and hide a resumption NoSessionIsResumed must see.
    if (ok) SSL_shutdown(ssl.get());
  }
  ssl.reset();
  ::close(fd);
  return side;
}

Outcome Handshake(SSL_CTX* server_ctx, SSL_CTX* client_ctx, const std::string& cluster,
                  const Tweak& server_tweak = {}, const Tweak& client_tweak = {}) {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Outcome out;
  std::thread server(
      [&] { out.server = RunSide(server_ctx, fds[0], true, cluster, server_tweak); });
  out.client = RunSide(client_ctx, fds[1], false, cluster, client_tweak);
  server.join();
  return out;
}

void ExpectPeer(const Side& side, const PeerIdentity& expected) {
  ASSERT_OK(side.status);
  ASSERT_TRUE(side.peer.has_value());
  ASSERT_TRUE(side.peer->ok()) << side.peer->status().ToString();
  EXPECT_EQ(**side.peer, expected);
  EXPECT_EQ(side.version, TLS1_3_VERSION);
  EXPECT_FALSE(side.reused);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Overwrite(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Credentials of cluster "alpha" (nodes 0, 1, 2) in dir_, a second CA of
// the same cluster name in other_, and cluster "beta" in beta_.
class TlsContextTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // A peer that gives up closes its socket; writing to it must be an
    // error, not a signal that kills the test.
    std::signal(SIGPIPE, SIG_IGN);
  }
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "quiver-tls-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/alpha";
    other_ = root_ + "/alpha-other";
    beta_ = root_ + "/beta";
    ASSERT_OK(InitCredentials(dir_, "alpha", {0, 1, 2}));
  }
  void TearDown() override { fs::remove_all(root_); }

  TlsContext Make(const std::string& dir, PeerRole role, uint32_t node, bool server,
                  const std::string& cluster = "alpha") {
    auto r = TlsContext::Make(dir, cluster, role, node, server);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return std::move(r).ValueOrDie();
  }

  std::string root_, dir_, other_, beta_;
};

TEST_F(TlsContextTest, ClientOfNode2AndDaemonOfNode0SeeEachOther) {
  TlsContext daemon = Make(dir_, PeerRole::kDaemon, 0, true);
  TlsContext client = Make(dir_, PeerRole::kClient, 2, false);
  EXPECT_EQ(daemon.self(), (PeerIdentity{"alpha", PeerRole::kDaemon, 0}));
  EXPECT_EQ(client.self(), (PeerIdentity{"alpha", PeerRole::kClient, 2}));
  Outcome out = Handshake(daemon.get(), client.get(), "alpha");
  ExpectPeer(out.server, {"alpha", PeerRole::kClient, 2});
  ExpectPeer(out.client, {"alpha", PeerRole::kDaemon, 0});
}

TEST_F(TlsContextTest, DaemonToDaemon) {
  TlsContext server = Make(dir_, PeerRole::kDaemon, 1, true);
  TlsContext client = Make(dir_, PeerRole::kDaemon, 0, false);
  Outcome out = Handshake(server.get(), client.get(), "alpha");
  ExpectPeer(out.server, {"alpha", PeerRole::kDaemon, 0});
  ExpectPeer(out.client, {"alpha", PeerRole::kDaemon, 1});
}

TEST_F(TlsContextTest, ContextIsStrictAndMovable) {
  TlsContext a = Make(dir_, PeerRole::kDaemon, 0, true);
  // A stale error would make the RPC layer's SSL_get_error misreport.
  EXPECT_EQ(ERR_peek_error(), 0u);
  SSL_CTX* raw = a.get();
  EXPECT_EQ(SSL_CTX_get_min_proto_version(raw), TLS1_3_VERSION);
  EXPECT_EQ(SSL_CTX_get_max_proto_version(raw), TLS1_3_VERSION);
  EXPECT_EQ(SSL_CTX_get_verify_mode(raw),
            SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT);
  EXPECT_EQ(SSL_CTX_get_verify_depth(raw), 1);
  EXPECT_NE(SSL_CTX_get_options(raw) & SSL_OP_NO_TICKET, 0u);
  EXPECT_NE(SSL_CTX_get_options(raw) & SSL_OP_NO_RENEGOTIATION, 0u);
  EXPECT_EQ(SSL_CTX_get_session_cache_mode(raw), SSL_SESS_CACHE_OFF);
  EXPECT_EQ(SSL_CTX_get_num_tickets(raw), 0u);
  TlsContext b = std::move(a);
  EXPECT_EQ(b.get(), raw);
  EXPECT_EQ(a.get(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.self().node, 0u);
}

TEST_F(TlsContextTest, NoSessionIsResumed) {
  TlsContext server = Make(dir_, PeerRole::kDaemon, 0, true);
  TlsContext client = Make(dir_, PeerRole::kClient, 1, false);
  Outcome first = Handshake(server.get(), client.get(), "alpha");
  ExpectPeer(first.client, {"alpha", PeerRole::kDaemon, 0});
  ASSERT_TRUE(first.client.session);
  EXPECT_EQ(SSL_SESSION_is_resumable(first.client.session.get()), 0);  // no ticket
  SSL_SESSION* old = first.client.session.get();
  Outcome second = Handshake(server.get(), client.get(), "alpha", {},
                             [old](SSL* ssl) { SSL_set_session(ssl, old); });
  ExpectPeer(second.server, {"alpha", PeerRole::kClient, 1});  // a full handshake
  ExpectPeer(second.client, {"alpha", PeerRole::kDaemon, 0});
}

TEST_F(TlsContextTest, AnotherCaOfTheSameClusterNameFailsTheHandshake) {
  ASSERT_OK(InitCredentials(other_, "alpha", {0, 1, 2}));
  TlsContext server = Make(dir_, PeerRole::kDaemon, 0, true);
  TlsContext client = Make(dir_, PeerRole::kClient, 2, false);
  TlsContext stranger_server = Make(other_, PeerRole::kDaemon, 0, true);
  TlsContext stranger_client = Make(other_, PeerRole::kClient, 2, false);

  // The client refuses a server of the other CA.
  Outcome out = Handshake(stranger_server.get(), client.get(), "alpha");
  EXPECT_FALSE(out.server.status.ok());
  ASSERT_FALSE(out.client.status.ok());
  EXPECT_TRUE(Contains(out.client.status.message(), "certificate verify failed"))
      << out.client.status.message();

  // The server refuses a client of the other CA, even one that does not
  // check the server at all; such a client learns no identity either.
  auto trust_anyone = [](SSL* ssl) { SSL_set_verify(ssl, SSL_VERIFY_NONE, nullptr); };
  out = Handshake(server.get(), stranger_client.get(), "alpha", {}, trust_anyone);
  ASSERT_FALSE(out.server.status.ok());
  EXPECT_TRUE(Contains(out.server.status.message(), "certificate verify failed"))
      << out.server.status.message();
  EXPECT_FALSE(out.client.status.ok());
  ASSERT_TRUE(out.client.peer.has_value());
  EXPECT_EQ(out.client.peer->status().code(), StatusCode::kUnauthenticated);
}

OsslPtr<X509> ReadCert(const std::string& path) {
  const std::string pem = Slurp(path);
  OsslPtr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return OsslPtr<X509>(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

OsslPtr<EVP_PKEY> ReadKey(const std::string& path) {
  const std::string pem = Slurp(path);
  OsslPtr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return OsslPtr<EVP_PKEY>(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

TEST_F(TlsContextTest, AClientCertificateCannotServe) {
  auto made = TlsContext::Make(dir_, "alpha", PeerRole::kClient, 0, true);
  ASSERT_FALSE(made.ok());
  EXPECT_TRUE(Contains(made.status().message(), "cannot be a TLS server"));

  // Even if a server presents one, the client refuses it: no serverAuth.
  TlsContext server = Make(dir_, PeerRole::kDaemon, 0, true);
  TlsContext client = Make(dir_, PeerRole::kClient, 1, false);
  OsslPtr<X509> cert = ReadCert(CertPath(dir_, PeerRole::kClient, 0));
  OsslPtr<EVP_PKEY> key = ReadKey(KeyPath(dir_, PeerRole::kClient, 0));
  ASSERT_TRUE(cert && key);
  auto present_client_cert = [&](SSL* ssl) {
    ASSERT_EQ(SSL_use_certificate(ssl, cert.get()), 1);
    ASSERT_EQ(SSL_use_PrivateKey(ssl, key.get()), 1);
  };
  Outcome out = Handshake(server.get(), client.get(), "alpha", present_client_cert);
  EXPECT_FALSE(out.server.status.ok());
  ASSERT_FALSE(out.client.status.ok());
  EXPECT_TRUE(Contains(out.client.status.message(), "unsuitable certificate purpose"))
      << out.client.status.message();
}

TEST_F(TlsContextTest, ACertificateOfAnotherClusterIsUnauthenticated) {
  ASSERT_OK(InitCredentials(beta_, "beta", {0, 1}));
  TlsContext server = Make(beta_, PeerRole::kDaemon, 0, true, "beta");
  TlsContext client = Make(beta_, PeerRole::kClient, 1, false, "beta");
  // The handshake itself succeeds (one CA); the identity check refuses.
  Outcome out = Handshake(server.get(), client.get(), "alpha");
  ASSERT_OK(out.server.status);
  ASSERT_TRUE(out.server.peer.has_value());
  ASSERT_FALSE(out.server.peer->ok());
  EXPECT_EQ(out.server.peer->status().code(), StatusCode::kUnauthenticated);
  EXPECT_TRUE(Contains(out.server.peer->status().message(),
                       "belongs to cluster 'beta', not to 'alpha'"))
      << out.server.peer->status().message();
  EXPECT_EQ(out.client.peer->status().code(), StatusCode::kUnauthenticated);

  // And a context for "alpha" refuses beta's files before any connection.
  auto made = TlsContext::Make(beta_, "alpha", PeerRole::kDaemon, 0, true);
  ASSERT_FALSE(made.ok());
  EXPECT_TRUE(Contains(made.status().message(), "CA of cluster 'beta'"))
      << made.status().message();
}

TEST_F(TlsContextTest, APeerWithoutACertificateIsRefused) {
  TlsContext server = Make(dir_, PeerRole::kDaemon, 0, true);
  OsslPtr<SSL_CTX> anonymous(SSL_CTX_new(TLS_client_method()));
  OsslPtr<X509> ca = ReadCert(CaCertPath(dir_));
  ASSERT_EQ(X509_STORE_add_cert(SSL_CTX_get_cert_store(anonymous.get()), ca.get()), 1);
  SSL_CTX_set_verify(anonymous.get(), SSL_VERIFY_PEER, nullptr);
  Outcome out = Handshake(server.get(), anonymous.get(), "alpha");
  ASSERT_FALSE(out.server.status.ok());
  EXPECT_TRUE(Contains(out.server.status.message(), "certificate"))
      << out.server.status.message();
  EXPECT_FALSE(out.client.status.ok());
}

TEST_F(TlsContextTest, Tls12IsRefused) {
  TlsContext server = Make(dir_, PeerRole::kDaemon, 0, true);
  TlsContext client = Make(dir_, PeerRole::kClient, 1, false);
  auto old_tls = [](SSL* ssl) {
    SSL_set_min_proto_version(ssl, TLS1_2_VERSION);
    SSL_set_max_proto_version(ssl, TLS1_2_VERSION);
  };
  Outcome out = Handshake(server.get(), client.get(), "alpha", {}, old_tls);
  EXPECT_FALSE(out.server.status.ok());
  EXPECT_FALSE(out.client.status.ok());
}

TEST_F(TlsContextTest, PeerIdentityNeedsACompletedHandshake) {
  TlsContext client = Make(dir_, PeerRole::kClient, 1, false);
  OsslPtr<SSL> ssl(SSL_new(client.get()));
  auto r = PeerIdentityOf(ssl.get(), "alpha");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(PeerIdentityOf(nullptr, "alpha").status().code(),
            StatusCode::kUnauthenticated);
}

TEST_F(TlsContextTest, MismatchedKeyIsAClearError) {
  fs::copy_file(KeyPath(dir_, PeerRole::kDaemon, 1), KeyPath(dir_, PeerRole::kDaemon, 0),
                fs::copy_options::overwrite_existing);
  auto r = TlsContext::Make(dir_, "alpha", PeerRole::kDaemon, 0, true);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "daemon-0.key' is not the key of"))
      << r.status().message();
  EXPECT_EQ(ERR_peek_error(), 0u);
}

// Credentials are checked every time they are loaded, not only when `quiver
// cluster init` wrote them: a directory others may write into, or a CA,
// certificate or key owned by another user (who could replace it with
// their own, re-signed by their own CA), is refused, naming the file.
TEST_F(TlsContextTest, CredentialsOfAnotherUserAreRefused) {
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  auto r = TlsContext::Make(dir_, "alpha", PeerRole::kDaemon, 0, true);
  ASSERT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status().ToString();
  EXPECT_TRUE(Contains(r.status().message(), "can be written by other users (mode 0777)"))
      << r.status().message();
  ASSERT_EQ(::chmod(dir_.c_str(), 0700), 0);
  ASSERT_EQ(::chown(dir_.c_str(), 65534, 65534), 0) << "the tests run as root";
  r = TlsContext::Make(dir_, "alpha", PeerRole::kDaemon, 0, true);
  ASSERT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status().ToString();
  EXPECT_TRUE(Contains(r.status().message(), "is owned by uid 65534"))
      << r.status().message();
  ASSERT_EQ(::chown(dir_.c_str(), 0, 0), 0);
  for (const std::string& file : {CaCertPath(dir_), CertPath(dir_, PeerRole::kDaemon, 0),
                                  KeyPath(dir_, PeerRole::kDaemon, 0)}) {
    ASSERT_EQ(::chown(file.c_str(), 65534, 65534), 0);
    r = TlsContext::Make(dir_, "alpha", PeerRole::kDaemon, 0, true);
    ASSERT_EQ(r.status().code(), StatusCode::kPermissionDenied) << file;
    EXPECT_TRUE(Contains(r.status().message(), file)) << r.status().message();
    EXPECT_TRUE(Contains(r.status().message(), "owned by uid 65534"))
        << r.status().message();
    ASSERT_EQ(::chown(file.c_str(), 0, 0), 0);
  }
  ASSERT_OK(TlsContext::Make(dir_, "alpha", PeerRole::kDaemon, 0, true).status());
}

TEST_F(TlsContextTest, CertificateOfAnotherIdentityIsAClearError) {
  for (const char* ext : {".crt", ".key"}) {
    fs::copy_file(dir_ + "/daemon-1" + ext, dir_ + "/daemon-0" + ext,
                  fs::copy_options::overwrite_existing);
  }
  auto r = TlsContext::Make(dir_, "alpha", PeerRole::kDaemon, 0, true);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(),
                       "names the daemon of node 1, not the "
                       "daemon of node 0"))
      << r.status().message();
}

TEST_F(TlsContextTest, CertificateOfAnotherCaIsAClearError) {
  ASSERT_OK(InitCredentials(other_, "alpha", {0}));
  for (const char* ext : {".crt", ".key"}) {
    fs::copy_file(other_ + "/daemon-0" + ext, dir_ + "/daemon-0" + ext,
                  fs::copy_options::overwrite_existing);
  }
  auto r = TlsContext::Make(dir_, "alpha", PeerRole::kDaemon, 0, true);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "does not verify against"))
      << r.status().message();
  EXPECT_EQ(ERR_peek_error(), 0u);
}

TEST_F(TlsContextTest, TamperedKeyIsAClearError) {
  const std::string path = KeyPath(dir_, PeerRole::kDaemon, 0);
  std::string pem = Slurp(path);
  const size_t at = pem.find('\n') + 20;  // inside the base64 body
  pem[at] = pem[at] == 'A' ? 'B' : 'A';
  Overwrite(path, pem);
  auto r = TlsContext::Make(dir_, "alpha", PeerRole::kDaemon, 0, true);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "daemon-0.key")) << r.status().message();

  Overwrite(path, "not a key\n");
  r = TlsContext::Make(dir_, "alpha", PeerRole::kDaemon, 0, true);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "holds no valid PEM private key"))
      << r.status().message();
  EXPECT_EQ(ERR_peek_error(), 0u);  // drained into the message
}

TEST_F(TlsContextTest, KeyFileChecksApply) {
  const std::string path = KeyPath(dir_, PeerRole::kClient, 2);
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto r = TlsContext::Make(dir_, "alpha", PeerRole::kClient, 2, false);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "chmod 600")) << r.status().message();
  EXPECT_TRUE(
      TlsContext::Make(dir_, "alpha", PeerRole::kClient, 9, false).status().IsNotFound());
}

TEST(TlsErrorTextTest, DrainsTheQueue) {
  OsslPtr<BIO> bio(BIO_new_mem_buf("junk", 4));
  EXPECT_EQ(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), nullptr);
  ASSERT_NE(ERR_peek_error(), 0u);
  const std::string text = TlsErrorText("reading");
  EXPECT_TRUE(text.starts_with("reading: ")) << text;
  EXPECT_GT(text.size(), std::string("reading: ").size());
  EXPECT_EQ(ERR_peek_error(), 0u);
  EXPECT_EQ(TlsErrorText("nothing"), "nothing: no detail from OpenSSL");
}

}  // namespace
}  // namespace quiver::control
