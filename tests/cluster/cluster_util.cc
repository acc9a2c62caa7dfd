#include "cluster/cluster_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "control/client/admin.h"
#include "control/tls/tls_context.h"
#include "gtest/gtest.h"

extern char** environ;

namespace quiver::testing {

std::string BinaryPath(const std::string& name) {
  return std::string(QUIVER_BINARY_DIR) + "/" + name;
}

Child Child::Start(const std::vector<std::string>& argv_in) {
  Child c;
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return c;
  std::vector<std::string> a = argv_in;
  std::vector<char*> argv;
  for (auto& x : a) argv.push_back(x.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    return c;
  }
  c.pid_ = pid;
  c.in_ = in[1];
  c.out_fd_ = out[0];
  return c;
}

Child::Child(Child&& o) noexcept { *this = std::move(o); }

Child& Child::operator=(Child&& o) noexcept {
  std::swap(pid_, o.pid_);
  std::swap(in_, o.in_);
  std::swap(out_fd_, o.out_fd_);
  std::swap(out_, o.out_);
  std::swap(scanned_, o.scanned_);
  return *this;
}

Child::~Child() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (in_ >= 0) close(in_);
  if (out_fd_ >= 0) close(out_fd_);
}

std::string Child::WaitForLine(const std::string& needle, int timeout_ms) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    size_t pos = out_.find(needle, scanned_);
    if (pos != std::string::npos) {
      size_t start = out_.rfind('\n', pos);
      start = start == std::string::npos ? 0 : start + 1;
      size_t end = out_.find('\n', pos);
      if (end != std::string::npos) {
        scanned_ = end + 1;
        return out_.substr(start, end - start);
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0 || out_fd_ < 0) return "";
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    ssize_t n = read(out_fd_, buf, sizeof(buf));
    if (n <= 0) {
      close(out_fd_);
      out_fd_ = -1;
      pos = out_.find(needle, scanned_);
      return pos == std::string::npos ? "" : out_.substr(pos);
    }
    out_.append(buf, static_cast<size_t>(n));
  }
}

int Child::Finish(int timeout_ms) {
  if (in_ >= 0) {
    close(in_);
    in_ = -1;
  }
  if (pid_ <= 0) return -1;
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int status = 0;
  for (;;) {
    // Keep draining stdout so the child never blocks on a full pipe.
    if (out_fd_ >= 0) {
      pollfd p{out_fd_, POLLIN, 0};
      if (poll(&p, 1, 10) > 0) {
        char buf[4096];
        ssize_t n = read(out_fd_, buf, sizeof(buf));
        if (n > 0) {
          out_.append(buf, static_cast<size_t>(n));
        } else {
          close(out_fd_);
          out_fd_ = -1;
        }
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (waitpid(pid_, &status, WNOHANG) == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void Child::Kill(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

bool Child::Send(const std::string& line) {
  if (in_ < 0) return false;
  const std::string text = line + "\n";
  return write(in_, text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

std::unique_ptr<control::LocalCluster> StartCluster(const ClusterSpec& spec) {
  control::LocalClusterOptions o;
  o.nodes = spec.nodes;
  o.region_size = spec.region_size;
  o.backing = spec.backing;
  o.quiverd = BinaryPath("quiverd");
  o.name_prefix = spec.prefix;
  o.daemon_args = spec.daemon_args;
  o.limits = spec.limits;
  // Daemon logs outlive the cluster when this names a folder (debugging).
  if (const char* logs = std::getenv("QUIVER_TEST_LOG_DIR")) o.log_dir = logs;
  auto c = control::LocalCluster::Start(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

int64_t UsedBytes(const control::LocalCluster& cluster, uint32_t node) {
  return control::client::UsedBytesOf(cluster.config().nodes[node], 5000);
}

std::optional<bool> Recovering(const control::LocalCluster& cluster, uint32_t node) {
  return control::client::RecoveringOf(cluster.config().nodes[node], 2000);
}

int ThreadCount(pid_t pid) {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator(
           "/proc/" + std::to_string(pid) + "/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return ec ? -1 : n;
}

Child StartReader(const control::LocalCluster& cluster, uint32_t node,
                  const std::string& name, const std::vector<std::string>& prefix) {
  std::vector<std::string> argv = prefix;
  for (const std::string& a :
       {BinaryPath("quiver"), std::string("demo-read"), std::string("--config"),
        cluster.config_path(), std::string("--node"), std::to_string(node),
        std::string("--name"), name, std::string("--hold")}) {
    argv.push_back(a);
  }
  return Child::Start(argv);
}

std::string ResumReader(Child* reader) {
  if (!reader->Send("sum")) return "";
  return reader->WaitForLine("resum", 30000);
}

uint64_t Scribble(Client* client, uint32_t node) {
  std::vector<std::pair<uint8_t*, int64_t>> got;
  uint64_t filled = 0;
  for (int64_t size = 8 << 20; size >= 4096;) {
    uint8_t* p = nullptr;
    if (!client->pool(node)->Allocate(size, 64, &p).ok()) {
      size /= 2;
      continue;
    }
    std::memset(p, 0xEE, static_cast<size_t>(size));
    got.emplace_back(p, size);
    filled += static_cast<uint64_t>(size);
  }
  for (auto [p, size] : got) client->pool(node)->Free(p, size);
  EXPECT_TRUE(client->Drain().ok());
  return filled;
}

Child StartActor(const control::LocalCluster& cluster, uint32_t node,
                 const std::vector<std::string>& args) {
  std::vector<std::string> argv = {BinaryPath("cluster_actor"), "--config",
                                   cluster.config_path(), "--node", std::to_string(node)};
  argv.insert(argv.end(), args.begin(), args.end());
  return Child::Start(argv);
}

std::string ActorReply(Child& actor) {
  const std::string line = actor.WaitForLine("reply ", 30000);
  const auto at = line.find("reply ");
  return at == std::string::npos ? "err no reply" : line.substr(at + 6);
}

std::string ActorDo(Child& actor, const std::string& command) {
  return actor.Send(command) ? ActorReply(actor) : "err send";
}

std::unique_ptr<RawSession> RawSession::Open(const control::LocalCluster& cluster,
                                             uint32_t target, control::PeerRole role,
                                             uint32_t as_node, bool unix_socket,
                                             bool open_session) {
  const auto& cfg = cluster.config();
  const auto* node = cfg.FindNode(target);
  if (node == nullptr) return nullptr;
  auto s = std::make_unique<RawSession>();
  if (unix_socket) {
    auto ch = control::rpc::DialUnix(node->socket, 5000);
    EXPECT_TRUE(ch.ok()) << ch.status().ToString();
    if (!ch.ok()) return nullptr;
    s->channel_ = std::move(*ch);
  } else {
    auto tls = control::TlsContext::Make(cfg.credentials, cfg.name, role, as_node, false);
    EXPECT_TRUE(tls.ok()) << tls.status().ToString();
    if (!tls.ok()) return nullptr;
    s->tls_ = std::make_unique<control::TlsContext>(std::move(*tls));
    const control::PeerIdentity expected{cfg.name, control::PeerRole::kDaemon, target};
    auto ch = control::rpc::DialTls(node->control, *s->tls_, cfg.name, expected, 5000);
    EXPECT_TRUE(ch.ok()) << ch.status().ToString();
    if (!ch.ok()) return nullptr;
    s->channel_ = std::move(*ch);
  }
  if (open_session) {
    wire::OpenSessionRequest open;
    open.set_pid(static_cast<int32_t>(getpid()));
    auto r = s->Call(control::rpc::Method::kOpenSession, open);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return nullptr;
  }
  return s;
}

Result<std::string> RawSession::Call(control::rpc::Method method,
                                     const google::protobuf::MessageLite& request,
                                     int timeout_ms) {
  return channel_->Call(control::rpc::MethodByte(method), request.SerializeAsString(),
                        timeout_ms);
}

std::unique_ptr<Client> ConnectOnline(const control::LocalCluster& cluster,
                                      uint32_t node) {
  auto c = Client::Connect({cluster.config_path(), node});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return nullptr;
  EXPECT_TRUE((*c)->WaitAllOnline(30000).ok());
  return std::move(*c);
}

}  // namespace quiver::testing
