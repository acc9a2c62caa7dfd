// Helpers for the multi-process cluster tests: child processes with pipes,
// clusters of real daemons, and raw protocol sessions for the attack tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/eventually.h"
#include "control/local_cluster.h"
#include "control/rpc/channel.h"
#include "control/rpc/methods.h"
#include "control/rpc/wire.h"
#include "control/tls/credentials.h"
#include "quiver/client.h"

namespace quiver::testing {

// A child process whose stdin and stdout are pipes to the test.
class Child {
 public:
  static Child Start(const std::vector<std::string>& argv);
  Child() = default;
  Child(Child&& o) noexcept;
  Child& operator=(Child&& o) noexcept;
  ~Child();

  bool started() const { return pid_ > 0; }
  // Reads stdout until a line containing `needle` (returns it) or
  // `timeout_ms`/EOF (returns "").
  std::string WaitForLine(const std::string& needle, int timeout_ms);
  // Everything read from stdout so far.
  const std::string& output() const { return out_; }
  // Writes `line` and a newline to the child's stdin.
  bool Send(const std::string& line);
  // Closes stdin (a --hold reader then exits) and waits; returns the exit
  // code (128 + signal if killed).
  int Finish(int timeout_ms = 60000);
  void Kill(int sig);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_fd_ = -1;
  std::string out_;
  size_t scanned_ = 0;
};

// Path of a built binary (quiver, quiverd).
std::string BinaryPath(const std::string& name);

// A cluster of real daemons on this host (64 MiB regions by default).
struct ClusterSpec {
  int nodes = 3;
  uint64_t region_size = 64ULL << 20;
  memory::BackingKind backing = memory::BackingKind::kShm;
  memory::ClusterLimits limits;
  std::vector<std::string> daemon_args;
  std::string prefix = "test";
};
std::unique_ptr<control::LocalCluster> StartCluster(const ClusterSpec& spec);

// A client of `node` that has seen every node online (nullptr, with a test
// failure, if it cannot connect).
std::unique_ptr<Client> ConnectOnline(const control::LocalCluster& cluster,
                                      uint32_t node);

using ::quiver::testing::Eventually;  // common/eventually.h

// Bytes in live allocations of `node`'s region, as its daemon reports
// (-1 if it does not answer).
int64_t UsedBytes(const control::LocalCluster& cluster, uint32_t node);
// Whether `node`'s daemon is recovering from a restart (nothing if it does
// not answer).
std::optional<bool> Recovering(const control::LocalCluster& cluster, uint32_t node);
// Threads of a process (from /proc), -1 if it is gone.
int ThreadCount(pid_t pid);

// `quiver demo-read` of `name` on `node`, holding the table until its stdin
// closes; "sum" on its stdin makes it sum the held arrays again.
Child StartReader(const control::LocalCluster& cluster, uint32_t node,
                  const std::string& name, const std::vector<std::string>& prefix = {});
// Asks a holding reader to sum again; returns its "sums=..." line.
std::string ResumReader(Child* reader);

// Fills every byte of `node`'s region that can be allocated (then frees
// it): memory freed too early would now hold 0xEE. Returns the bytes filled.
uint64_t Scribble(Client* client, uint32_t node);

// The actor program (tests/cluster/actor) as a client of `node`.
Child StartActor(const control::LocalCluster& cluster, uint32_t node,
                 const std::vector<std::string>& args);
// An actor's next answer ("ok ...", "err Code: ...", or "err no reply"
// within 30 s); ActorDo sends `command` first.
std::string ActorReply(Child& actor);
std::string ActorDo(Child& actor, const std::string& command);

// A session speaking the protocol directly, as a client of `as_node` (TLS
// with that node's client certificate, or the node's Unix socket), or as a
// daemon: for tests that forge what a library would never send.
class RawSession {
 public:
  static std::unique_ptr<RawSession> Open(const control::LocalCluster& cluster,
                                          uint32_t target, control::PeerRole role,
                                          uint32_t as_node, bool unix_socket = false,
                                          bool open_session = true);
  Result<std::string> Call(control::rpc::Method method,
                           const google::protobuf::MessageLite& request,
                           int timeout_ms = 10000);
  template <typename Rep>
  Status Call(control::rpc::Method method, const google::protobuf::MessageLite& request,
              Rep* reply, int timeout_ms = 10000) {
    auto bytes = Call(method, request, timeout_ms);
    if (!bytes.ok()) return bytes.status();
    if (!reply->ParseFromString(*bytes)) return Status::IOError("malformed reply");
    return Status::OK();
  }
  control::rpc::Channel* channel() { return channel_.get(); }

 private:
  std::unique_ptr<control::TlsContext> tls_;
  std::unique_ptr<control::rpc::Channel> channel_;
};

// What `quiver demo-read` prints for a demo table of `rows` rows: the sum
// of its row ids 0..rows-1.
inline std::string SumsOf(int64_t rows) {
  return "sums=" + std::to_string(rows * (rows - 1) / 2);
}

}  // namespace quiver::testing
