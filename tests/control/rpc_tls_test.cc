// The control protocol's transport over mutual TLS on TCP: identities from
// certificates, engines calling each other, refusals (another cluster's CA,
// no handshake, too many connections) and a peer that stops reading.
#include "control/rpc_test_util.h"

namespace quiver::control::rpc {
namespace {

using namespace rpc_testing;  // NOLINT: the fixture of these tests

TEST_F(RpcTest, TlsPeersSeeEachOthersIdentity) {
  const std::string creds = Credentials();
  const std::string address = StartTls(creds);
  const TlsContext client = Client(creds, PeerRole::kClient, 1);
  const PeerIdentity daemon0{kCluster, PeerRole::kDaemon, 0};
  ASSERT_OK_AND_ASSIGN(auto ch, DialTls(address, client, kCluster, daemon0, kLong));
  EXPECT_EQ(ch->peer().identity, daemon0);
  EXPECT_FALSE(ch->peer().unix_socket);
  ASSERT_OK_AND_ASSIGN(std::string reply, ch->Call(kEcho, "over tls", kLong));
  EXPECT_EQ(reply, "over tls");
  const auto peers = server_.peers();
  ASSERT_EQ(peers.size(), 1u);
  EXPECT_EQ(peers[0].identity, (PeerIdentity{kCluster, PeerRole::kClient, 1}));
  EXPECT_FALSE(peers[0].unix_socket);
  EXPECT_TRUE(Contains(peers[0].address, "127.0.0.1:")) << peers[0].address;
  // A client expecting another daemon refuses this one.
  auto wrong =
      DialTls(address, client, kCluster, {kCluster, PeerRole::kDaemon, 1}, kLong);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kUnauthenticated);
}

TEST_F(RpcTest, EnginesCallEachOtherAndTimeOut) {
  const std::string creds = Credentials();
  const std::string address = StartTls(creds);
  // Node 1's daemon links to node 0's.
  Server peer;
  ASSERT_OK(peer.Start({}, [](Engine*) { return Status::OK(); }));
  const TlsContext link_tls = Client(creds, PeerRole::kDaemon, 1);
  ASSERT_OK_AND_ASSIGN(
      ConnectionPtr link,
      peer.engine()->Connect(address, link_tls, {kCluster, PeerRole::kDaemon, 0}, kLong));
  EXPECT_TRUE(link->outgoing());
  auto call = [](const ConnectionPtr& c, uint8_t method, const std::string& payload,
                 int timeout_ms) {
    auto done = std::make_shared<std::promise<Result<std::string>>>();
    auto future = done->get_future();
    c->Call(method, payload, timeout_ms,
            [done](Result<std::string> r) { done->set_value(std::move(r)); });
    return future;
  };
  auto echo = call(link, kEcho, "peer call", kLong);
  ASSERT_EQ(echo.wait_for(milliseconds(kLong)), std::future_status::ready);
  ASSERT_OK_AND_ASSIGN(std::string reply, echo.get());
  EXPECT_EQ(reply, "peer call");
  EXPECT_EQ(server_.peers().at(0).identity,
            (PeerIdentity{kCluster, PeerRole::kDaemon, 1}));
  // Both sides call on one connection: node 0 calls node 1 back.
  ConnectionPtr incoming = server_.last();
  ASSERT_NE(incoming, nullptr);
  auto back = call(incoming, kEcho, "call back", kLong);
  ASSERT_EQ(back.wait_for(milliseconds(kLong)), std::future_status::ready);
  ASSERT_OK_AND_ASSIGN(reply, back.get());
  EXPECT_EQ(reply, "call back");
  // Errors, and time-outs when nothing answers.
  auto failed = call(link, kFail, std::string(1, '\x0D') + "gone", kLong);
  ASSERT_EQ(failed.wait_for(milliseconds(kLong)), std::future_status::ready);
  Status st = failed.get().status();
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_EQ(st.message(), "gone");
  auto silent = call(link, kSilent, "", 200);
  ASSERT_EQ(silent.wait_for(milliseconds(kLong)), std::future_status::ready);
  EXPECT_EQ(silent.get().status().code(), StatusCode::kDeadlineExceeded);
  // Calls waiting when the other side goes fail at once, not at their
  // deadline.
  auto stranded = call(link, kSilent, "", 10 * kLong);
  auto parked = call(link, kPark, "", 10 * kLong);
  ASSERT_TRUE(Eventually([&] { return server_.parked() == 1; }));
  server_.Stop();
  for (auto* f : {&stranded, &parked}) {
    ASSERT_EQ(f->wait_for(milliseconds(kLong)), std::future_status::ready);
    EXPECT_EQ(f->get().status().code(), StatusCode::kUnavailable);
  }
  ASSERT_TRUE(Eventually([&] { return link->closed(); }));
  // A closed link fails new calls at once.
  auto after = call(link, kEcho, "", 10 * kLong);
  ASSERT_EQ(after.wait_for(milliseconds(kLong)), std::future_status::ready);
  EXPECT_EQ(after.get().status().code(), StatusCode::kUnavailable);
  peer.Stop();
}

// A blocking TLS 1.3 client made by hand: it presents `cert`/`key` (none
// if empty) and trusts anything, so that only the server's checks decide.
// Returns whether the server answered one echo call.
bool HandMadeClientIsServed(const std::string& address, const std::string& cert,
                            const std::string& key) {
  OsslPtr<SSL_CTX> ctx(SSL_CTX_new(TLS_client_method()));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_3_VERSION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  if (!cert.empty()) {
    EXPECT_EQ(SSL_CTX_use_certificate_file(ctx.get(), cert.c_str(), SSL_FILETYPE_PEM), 1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx.get(), key.c_str(), SSL_FILETYPE_PEM), 1);
  }
  auto fd = ConnectTcp(address, kLong);
  EXPECT_TRUE(fd.ok()) << fd.status().ToString();
  if (!fd.ok()) return false;
  RawClient socket(*fd);
  fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) & ~O_NONBLOCK);
  timeval tv{kLong / 1000, 0};
  setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  OsslPtr<SSL> ssl(SSL_new(ctx.get()));
  SSL_set_fd(ssl.get(), *fd);
  bool served = false;
  if (SSL_connect(ssl.get()) == 1) {
    const std::string frame = RawFrame(kFrameHeaderBytes - 4 + 2, 1, kEcho, 0, 1, "hi");
    if (SSL_write(ssl.get(), frame.data(), static_cast<int>(frame.size())) > 0) {
      char buf[64];
      const int n = SSL_read(ssl.get(), buf, sizeof(buf));
      served = n > 0;
    }
  }
  ERR_clear_error();
  return served;
}

TEST_F(RpcTest, AnotherClustersCaIsRefused) {
  const std::string creds = Credentials();
  const std::string other = Credentials("other");  // same cluster name, other CA
  const std::string address = StartTls(creds);
  // The hand-made client is served with a certificate of this cluster...
  ASSERT_TRUE(HandMadeClientIsServed(address, CertPath(creds, PeerRole::kClient, 1),
                                     KeyPath(creds, PeerRole::kClient, 1)));
  EXPECT_EQ(server_.opened(), 1);
  // ...but not with one of another CA, nor with none at all.
  EXPECT_FALSE(HandMadeClientIsServed(address, CertPath(other, PeerRole::kClient, 1),
                                      KeyPath(other, PeerRole::kClient, 1)));
  EXPECT_FALSE(HandMadeClientIsServed(address, "", ""));
  // Quiver's own client of the other CA fails too (it does not trust the
  // server either).
  const TlsContext stranger = Client(other, PeerRole::kClient, 1);
  EXPECT_FALSE(
      DialTls(address, stranger, kCluster, {kCluster, PeerRole::kDaemon, 0}, kLong).ok());
  EXPECT_EQ(server_.opened(), 1);  // no refused connection was ever opened
  ASSERT_TRUE(Eventually([&] { return server_.engine()->connection_count() == 0; }));
  // And the engine goes on serving.
  const TlsContext client = Client(creds, PeerRole::kClient, 0);
  ASSERT_OK_AND_ASSIGN(auto ch, DialTls(address, client, kCluster,
                                        {kCluster, PeerRole::kDaemon, 0}, kLong));
  ASSERT_OK(ch->Call(kEcho, "x", kLong).status());
}

TEST_F(RpcTest, AConnectionThatNeverHandshakesIsClosed) {
  const std::string creds = Credentials();
  EngineOptions options;
  options.handshake_timeout_ms = 300;
  const std::string address = StartTls(creds, options);
  auto fd = ConnectTcp(address, kLong);
  ASSERT_OK(fd.status());
  RawClient silent(*fd);
  ASSERT_TRUE(Eventually([&] { return server_.engine()->connection_count() == 1; }));
  EXPECT_TRUE(silent.ReadUntilClosed()) << "still open after the handshake time-out";
  ASSERT_TRUE(Eventually([&] { return server_.engine()->connection_count() == 0; }));
  // One that sends a few bytes of a handshake and stops is closed too.
  auto fd2 = ConnectTcp(address, kLong);
  ASSERT_OK(fd2.status());
  RawClient stalled(*fd2);
  ASSERT_TRUE(stalled.Send(std::string("\x16\x03\x01\x02\x00\x01", 6)));
  EXPECT_TRUE(stalled.ReadUntilClosed());
  // Plain-text garbage is no handshake either.
  auto fd3 = ConnectTcp(address, kLong);
  ASSERT_OK(fd3.status());
  RawClient garbage(*fd3);
  garbage.Send(RawFrame(kFrameHeaderBytes - 4, 1, kEcho, 0, 1));
  EXPECT_TRUE(garbage.ReadUntilClosed());
  EXPECT_EQ(server_.opened(), 0);
  EXPECT_EQ(server_.closed(), 0);  // never opened: no on_close
  ASSERT_TRUE(Eventually([&] { return server_.engine()->connection_count() == 0; }));
}

// ---------------------------------------------------------------------------
// Limits

TEST_F(RpcTest, MaxConnectionsRefusesExtraConnections) {
  EngineOptions options;
  options.max_connections = 2;
  StartUnix(options);
  auto a = Dial(), b = Dial();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_OK(a->Call(kEcho, "a", kLong).status());
  ASSERT_OK(b->Call(kEcho, "b", kLong).status());
  EXPECT_EQ(server_.engine()->connection_count(), 2u);
  // The kernel accepts the third connection; the engine closes it at once.
  auto c = DialUnix(socket_, 5000);
  if (c.ok()) {
    auto r = (*c)->Call(kEcho, "c", kLong);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  }
  EXPECT_EQ(server_.opened(), 2);
  // The others are unaffected; once one goes, there is room again.
  ASSERT_OK(a->Call(kEcho, "a", kLong).status());
  b.reset();
  ASSERT_TRUE(Eventually([&] { return server_.engine()->connection_count() == 1; }));
  auto d = Dial();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Call(kEcho, "d", kLong).status());
}

TEST_F(RpcTest, APeerThatDoesNotReadIsDisconnected) {
  EngineOptions options;
  options.max_outbox_bytes = 1 << 20;
  StartUnix(options);
  auto good = Dial();
  ASSERT_NE(good, nullptr);
  RawClient raw(socket_);
  ASSERT_TRUE(raw.connected());
  // Echo requests of 256 KiB whose replies are never read: the replies
  // pile up in the engine until it gives up on this peer.
  const std::string payload(256 << 10, 'x');
  const std::string frame =
      RawFrame(static_cast<uint32_t>(kFrameHeaderBytes - 4 + payload.size()), 1, kEcho, 0,
               1, payload);
  std::thread sender([&] {
    for (int i = 0; i < 64; ++i) {
      if (!raw.Send(frame)) break;  // closed by the engine
    }
  });
  EXPECT_TRUE(Eventually([&] { return server_.closed() == 1; }))
      << "the engine kept buffering for a peer that does not read";
  sender.join();
  // The others are served all along.
  ASSERT_OK_AND_ASSIGN(std::string reply, good->Call(kEcho, "fine", kLong));
  EXPECT_EQ(reply, "fine");
}

}  // namespace
}  // namespace quiver::control::rpc
