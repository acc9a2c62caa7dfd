// The fixture of the transport tests (rpc_test.cc, rpc_tls_test.cc): an
// in-process Engine with test handlers, Channel clients over its Unix
// socket and over mutual TLS on TCP, and a raw client for malformed input.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/eventually.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "control/local_cluster.h"
#include "control/rpc/channel.h"
#include "control/rpc/engine.h"
#include "control/tls/tls_context.h"

namespace quiver::control::rpc::rpc_testing {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kCluster[] = "rpctest";
constexpr int kLong = 20000;  // ms: "eventually", never expected to pass

// The test service's methods.
constexpr uint8_t kEcho = 1;    // replies with the payload
constexpr uint8_t kPark = 2;    // parked; the test answers later
constexpr uint8_t kFail = 3;    // payload: code byte + message; fails with it
constexpr uint8_t kSilent = 4;  // never answered

using ::quiver::testing::Contains;

// Polls `done` until it holds or kLong ms pass.
inline bool Eventually(const std::function<bool()>& done) {
  return ::quiver::testing::Eventually(done, kLong);
}

// A frame as bytes, with any header fields (for malformed ones).
inline std::string RawFrame(uint32_t length, uint8_t kind, uint8_t method, uint16_t flags,
                            uint64_t call_id, const std::string& payload = "") {
  std::string out(kFrameHeaderBytes, '\0');
  std::memcpy(out.data(), &length, 4);
  out[4] = static_cast<char>(kind);
  out[5] = static_cast<char>(method);
  std::memcpy(out.data() + 6, &flags, 2);
  std::memcpy(out.data() + 8, &call_id, 8);
  return out + payload;
}

// A raw Unix-socket client (blocking), for bytes no Channel would send.
class RawClient {
 public:
  explicit RawClient(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  explicit RawClient(int fd) : fd_(fd), connected_(fd >= 0) {}
  ~RawClient() {
    if (fd_ >= 0) close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  // Sends everything (false if the peer is gone).
  bool Send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads until the peer closes (true) or `limit` passes (false); what came
  // before the end is appended to *got.
  bool ReadUntilClosed(std::string* got = nullptr,
                       milliseconds limit = milliseconds(kLong)) {
    const auto end = Clock::now() + limit;
    char buf[4096];
    for (;;) {
      const auto left = std::chrono::duration_cast<milliseconds>(end - Clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET || errno == EPIPE;
      if (got != nullptr) got->append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

struct Parked {
  ConnectionPtr connection;
  uint64_t call_id;
  uint8_t method;
  std::string payload;
};

// An engine with the test service, and what its handlers saw.
class Server {
 public:
  Server() = default;
  ~Server() { Stop(); }

  EngineHandlers Handlers() {
    EngineHandlers h;
    h.on_open = [this](const ConnectionPtr& c) -> Status {
      std::lock_guard<std::mutex> lock(mu_);
      ++opened_;
      peers_[c->id()] = c->peer();
      last_ = c;
      return refuse_ ? Status::PermissionDenied("refused by the test") : Status::OK();
    };
    h.on_request = [this](const ConnectionPtr& c, const FrameHeader& f,
                          std::string_view payload) {
      switch (f.method) {
        case kEcho:
          c->Reply(f.call_id, f.method, payload);
          break;
        case kPark: {
          std::lock_guard<std::mutex> lock(mu_);
          parked_.push_back({c, f.call_id, f.method, std::string(payload)});
          break;
        }
        case kFail: {
          // Codes outside the known ones (random input) become UnknownError.
          int code = payload.empty() ? 0 : static_cast<unsigned char>(payload[0]);
          if (code < 1 || code > static_cast<int>(StatusCode::kObjectLost)) code = 9;
          c->Fail(f.call_id, f.method,
                  Status(static_cast<StatusCode>(code),
                         std::string(payload.substr(payload.empty() ? 0 : 1))));
          break;
        }
        default:
          break;  // kSilent and anything else: never answered
      }
    };
    h.on_close = [this](const ConnectionPtr& c, const Status&) {
      std::lock_guard<std::mutex> lock(mu_);
      ++closes_[c->id()];
    };
    return h;
  }

  Status Start(EngineOptions options, const std::function<Status(Engine*)>& listen) {
    options.cluster = kCluster;
    engine_ = std::make_unique<Engine>(options, Handlers());
    QUIVER_RETURN_NOT_OK(listen(engine_.get()));
    return engine_->Start();
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      parked_.clear();
      last_.reset();
    }
    if (engine_) engine_->Stop();
  }

  Engine* engine() { return engine_.get(); }
  size_t parked() {
    std::lock_guard<std::mutex> lock(mu_);
    return parked_.size();
  }
  std::vector<Parked> TakeParked() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(parked_);
  }
  int opened() {
    std::lock_guard<std::mutex> lock(mu_);
    return opened_;
  }
  int closed() {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& [id, count] : closes_) n += count;
    return n;
  }
  // Every connection that closed did so exactly once.
  bool EachClosedOnce() {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, count] : closes_) {
      if (count != 1) return false;
    }
    return true;
  }
  std::vector<PeerInfo> peers() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<PeerInfo> out;
    for (const auto& [id, p] : peers_) out.push_back(p);
    return out;
  }
  ConnectionPtr last() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }
  void set_refuse(bool refuse) {
    std::lock_guard<std::mutex> lock(mu_);
    refuse_ = refuse;
  }

 private:
  std::unique_ptr<Engine> engine_;
  std::mutex mu_;
  std::vector<Parked> parked_;
  int opened_ = 0;
  std::map<uint64_t, int> closes_;
  std::map<uint64_t, PeerInfo> peers_;
  ConnectionPtr last_;
  bool refuse_ = false;
};

class RpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // As in quiverd and the client library: a write to a connection the
    // peer closed is an error, not the end of the process (OpenSSL writes
    // with write(2), which raises SIGPIPE).
    std::signal(SIGPIPE, SIG_IGN);
    std::string tmpl = ::testing::TempDir() + "quiver-rpc-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    socket_ = dir_ + "/node.sock";
  }
  void TearDown() override {
    server_.Stop();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void StartUnix(EngineOptions options = {}) {
    ASSERT_OK(
        server_.Start(options, [this](Engine* e) { return e->ListenUnix(socket_); }));
  }
  std::unique_ptr<Channel> Dial() {
    auto c = DialUnix(socket_, 5000);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Credentials of this cluster (nodes 0 and 1) in dir/creds.
  std::string Credentials(const std::string& sub = "creds") {
    const std::string creds = dir_ + "/" + sub;
    Status st = InitCredentials(creds, kCluster, {0, 1});
    EXPECT_TRUE(st.ok()) << st.ToString();
    return creds;
  }
  // The engine on 127.0.0.1 over TLS as node 0's daemon; returns host:port.
  std::string StartTls(const std::string& creds, EngineOptions options = {}) {
    auto ctx = TlsContext::Make(creds, kCluster, PeerRole::kDaemon, 0, /*server=*/true);
    EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
    if (!ctx.ok()) return "";
    server_tls_ = std::make_unique<TlsContext>(std::move(*ctx));
    auto port = FreeTcpPort();
    EXPECT_TRUE(port.ok()) << port.status().ToString();
    const std::string address = "127.0.0.1:" + std::to_string(port.ok() ? *port : 1);
    Status st = server_.Start(options, [&](Engine* e) {
      QUIVER_RETURN_NOT_OK(e->ListenTcp(address, server_tls_.get()));
      return e->ListenUnix(socket_);
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return address;
  }
  static TlsContext Client(const std::string& creds, PeerRole role, uint32_t node) {
    auto ctx = TlsContext::Make(creds, kCluster, role, node, /*server=*/false);
    EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
    return std::move(*ctx);
  }

  std::string dir_, socket_;
  std::unique_ptr<TlsContext> server_tls_;
  Server server_;  // declared last: stopped before the contexts go
};

// ---------------------------------------------------------------------------
// Calls

}  // namespace quiver::control::rpc::rpc_testing
