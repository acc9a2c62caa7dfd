#include "control/local_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "control/tls/credentials.h"

extern char** environ;

namespace quiver::control {

Result<int> FreeTcpPort(const std::string& host) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    close(fd);
    return Status::Invalid("'", host, "' is not an IPv4 address");
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    close(fd);
    return Status::FromErrno(err, "bind " + host + ":0");
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

std::string ExecutablePath() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  buf[n] = 0;
  return buf;
}

std::string ExecutableDir() {
  const std::string p = ExecutablePath();
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

Result<pid_t> SpawnLogged(const std::vector<std::string>& args, const std::string& log,
                          bool append) {
  if (args.empty()) return Status::Invalid("nothing to start");
  std::vector<std::string> a = args;
  std::vector<char*> argv;
  for (auto& x : a) argv.push_back(x.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(
      &fa, 1, log.c_str(), O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return Status::FromErrno(rc, "starting " + args[0]);
  return pid;
}

namespace {

bool UnixSocketAccepts(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

Result<std::unique_ptr<LocalCluster>> LocalCluster::Start(const LocalClusterOptions& o) {
  if (o.nodes < 1) return Status::Invalid("a cluster needs at least one node");
  std::unique_ptr<LocalCluster> c(new LocalCluster());
  c->options_ = o;
  if (c->options_.quiverd.empty()) {
    for (const char* where : {"/quiverd", "/../quiverd"}) {
      const std::string candidate = ExecutableDir() + where;
      if (access(candidate.c_str(), X_OK) == 0) {
        c->options_.quiverd = candidate;
        break;
      }
    }
  }
  if (c->options_.quiverd.empty() || access(c->options_.quiverd.c_str(), X_OK) != 0) {
    return Status::Invalid("quiverd binary '",
                           c->options_.quiverd.empty()
                               ? "quiverd next to " + ExecutablePath()
                               : c->options_.quiverd,
                           "' is not executable");
  }
  char tmpl[] = "/tmp/quiver-cluster-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Status::FromErrno(errno, "mkdtemp");
  c->dir_ = tmpl;
  if (c->options_.log_dir.empty()) c->options_.log_dir = c->dir_;
  memory::ClusterConfig& cfg = c->config_;
  cfg.name = o.name_prefix + "-" + std::to_string(getpid()) + "-" +
             c->dir_.substr(c->dir_.size() - 6);
  cfg.granule = memory::PlatformCacheLineSize();
  cfg.credentials = c->dir_ + "/credentials";
  cfg.limits = o.limits;
  for (int i = 0; i < o.nodes; ++i) {
    const std::string host =
        i < static_cast<int>(o.hosts.size()) ? o.hosts[i] : std::string("127.0.0.1");
    memory::NodeConfig n;
    n.id = static_cast<uint32_t>(i);
    QUIVER_ASSIGN_OR_RAISE(int port, FreeTcpPort(o.hosts.empty() ? host : "127.0.0.1"));
    n.control = host + ":" + std::to_string(port);
    n.socket = c->dir_ + "/node" + std::to_string(i) + ".sock";
    n.base = o.base + static_cast<uint64_t>(i) * o.stride;
    n.size = o.region_size;
    n.backing = o.backing;
    n.path = "/dev/shm/quiver-" + cfg.name + "-" + std::to_string(i);
    if (i < static_cast<int>(o.memory_groups.size())) n.memory = o.memory_groups[i];
    if (o.transport) {
      QUIVER_ASSIGN_OR_RAISE(int tport,
                             FreeTcpPort(o.hosts.empty() ? host : "127.0.0.1"));
      n.transport = host + ":" + std::to_string(tport);
    }
    cfg.nodes.push_back(n);
  }
  QUIVER_RETURN_NOT_OK(memory::ValidateClusterConfig(cfg));
  std::vector<uint32_t> ids;
  for (const auto& n : cfg.nodes) ids.push_back(n.id);
  QUIVER_RETURN_NOT_OK(
      InitCredentials(cfg.credentials, cfg.name, ids, {.validity_days = 2}));
  c->config_path_ = c->dir_ + "/cluster.toml";
  {
    std::ofstream f(c->config_path_);
    f << cfg.ToToml();
    if (!f) return Status::IOError("cannot write ", c->config_path_);
  }
  c->pids_.assign(o.nodes, -1);
  for (int i = 0; i < o.nodes; ++i) QUIVER_RETURN_NOT_OK(c->Spawn(i));
  for (int i = 0; i < o.nodes; ++i) QUIVER_RETURN_NOT_OK(c->WaitAccepting(i));
  return c;
}

std::string LocalCluster::log_path(int node) const {
  return options_.log_dir + "/node" + std::to_string(node) + ".log";
}

Status LocalCluster::Spawn(int i) {
  std::vector<std::string> args;
  if (i < static_cast<int>(options_.exec_prefix.size())) args = options_.exec_prefix[i];
  args.insert(args.end(),
              {options_.quiverd, "--config", config_path_, "--id", std::to_string(i)});
  for (std::string a : options_.daemon_args) {
    for (const auto& [key, value] :
         {std::pair<std::string, std::string>{"{node}", std::to_string(i)},
          {"{dir}", dir_}}) {
      for (size_t at = a.find(key); at != std::string::npos; at = a.find(key, at)) {
        a.replace(at, key.size(), value);
        at += value.size();
      }
    }
    args.push_back(std::move(a));
  }
  QUIVER_ASSIGN_OR_RAISE(pid_t pid, SpawnLogged(args, log_path(i), /*append=*/true));
  pids_[i] = pid;
  return Status::OK();
}

Status LocalCluster::WaitAccepting(int i) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(options_.start_timeout_ms);
  const std::string& sock = config_.nodes[i].socket;
  while (!UnixSocketAccepts(sock)) {
    int status = 0;
    if (waitpid(pids_[i], &status, WNOHANG) == pids_[i]) {
      pids_[i] = -1;
      std::ifstream log(log_path(i));
      std::string text((std::istreambuf_iterator<char>(log)), {});
      if (text.size() > 600) text = text.substr(text.size() - 600);
      return Status::IOError("quiverd of node ", i, " exited during start-up; log:\n",
                             text);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::IOError("quiverd of node ", i, " did not accept connections within ",
                             options_.start_timeout_ms, " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return Status::OK();
}

Status LocalCluster::Kill(int node, int sig) {
  if (node < 0 || node >= static_cast<int>(pids_.size()) || pids_[node] <= 0) {
    return Status::Invalid("node ", node, " is not running");
  }
  kill(pids_[node], sig);
  waitpid(pids_[node], nullptr, 0);
  pids_[node] = -1;
  return Status::OK();
}

bool LocalCluster::Exited(int node) {
  if (node < 0 || node >= static_cast<int>(pids_.size())) return true;
  if (pids_[node] <= 0) return true;
  if (waitpid(pids_[node], nullptr, WNOHANG) == pids_[node]) {
    pids_[node] = -1;
    return true;
  }
  return false;
}

Status LocalCluster::Restart(int node) {
  if (pids_[node] > 0) return Status::Invalid("node ", node, " is still running");
  QUIVER_RETURN_NOT_OK(Spawn(node));
  return WaitAccepting(node);
}

Status LocalCluster::Stop() {
  for (pid_t p : pids_) {
    if (p <= 0) continue;
    kill(p, SIGTERM);
    kill(p, SIGCONT);  // a stopped daemon handles its SIGTERM only once running
  }
  for (auto& p : pids_) {
    if (p <= 0) continue;
    // A daemon that does not stop within 10 s is killed.
    for (int waited = 0; waited < 1000; ++waited) {
      if (waitpid(p, nullptr, WNOHANG) == p) {
        p = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (p > 0) {
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
      p = -1;
    }
  }
  for (const auto& n : config_.nodes) {
    unlink(n.path.c_str());
    unlink(n.socket.c_str());
  }
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    dir_.clear();
  }
  pids_.clear();
  return Status::OK();
}

LocalCluster::~LocalCluster() { (void)Stop(); }

}  // namespace quiver::control
