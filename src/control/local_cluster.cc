#include "control/local_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "control/tls/credentials.h"
#include "util/private_dir.h"

extern char** environ;

namespace quiver::control {

std::string DefaultStateDir() {
  if (const char* d = std::getenv("QUIVER_DIR"); d != nullptr && *d != 0) return d;
  if (const char* r = std::getenv("XDG_RUNTIME_DIR"); r != nullptr && *r == '/') {
    return std::string(r) + "/quiver";
  }
  return "/tmp/quiver-" + std::to_string(getuid());
}

namespace {

// Binds a TCP socket to host:port (0: any) and returns the port it got, or
// -1 with errno set.
int TryBind(const sockaddr_in& base, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr = base;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

// The lowest port the kernel gives outgoing connections.
int EphemeralLow() {
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  return (f >> low >> high) ? low : 32768;
}

}  // namespace

Result<int> FreeTcpPort(const std::string& host) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Status::Invalid("'", host, "' is not an IPv4 address");
  }
  constexpr int kLowest = 10000;
  const int below = EphemeralLow();
  if (below - kLowest >= 1000) {
    static std::mutex mu;
    static std::mt19937 random(std::random_device{}());
    for (int attempt = 0; attempt < 64; ++attempt) {
      int port;
      {
        std::lock_guard<std::mutex> lock(mu);
        port = std::uniform_int_distribution<int>(kLowest, below - 1)(random);
      }
      if (TryBind(addr, port) == port) return port;
    }
  }
  const int port = TryBind(addr, 0);
  if (port < 0) return Status::FromErrno(errno, "bind " + host + ":0");
  return port;
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
                          bool append, bool detached) {
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
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (detached) {
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    // Its own session, default dispositions and no blocked signals, whatever
    // the caller (nohup, a shell's job control) left.
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) sigaddset(&defaults, sig);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
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

// Whether `pid` is, per /proc, a quiverd started with `--config config --id
// node` (a zombie or a reused pid is not).
bool IsDaemonOf(pid_t pid, const std::string& config, int node) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  for (std::string arg; std::getline(f, arg, '\0');) argv.push_back(arg);
  bool quiverd = false, has_config = false, has_id = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const auto slash = a.rfind('/');
    quiverd |= (slash == std::string::npos ? a : a.substr(slash + 1)) == "quiverd";
    if (i + 1 == argv.size()) break;
    has_config |= a == "--config" && argv[i + 1] == config;
    has_id |= a == "--id" && argv[i + 1] == std::to_string(node);
  }
  return quiverd && has_config && has_id;
}

std::string Absolute(const std::string& dir) {
  std::error_code ec;
  auto p = std::filesystem::absolute(dir, ec);
  return (ec ? std::filesystem::path(dir) : p).lexically_normal().string();
}

// Files a state directory may hold between runs: node logs and sockets.
bool LeftBetweenRuns(const std::string& name) {
  const auto ends = [&name](const std::string& tail) {
    return name.size() > tail.size() &&
           name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return name.rfind("node", 0) == 0 && (ends(".log") || ends(".sock"));
}

}  // namespace

Status LocalCluster::PrepareStateDir() {
  dir_ = Absolute(options_.state_dir);
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(dir_).parent_path(), ec);
  if (mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::FromErrno(errno, "creating '" + dir_ + "'");
  }
  struct stat st {};
  if (lstat(dir_.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
      (st.st_mode & 077) != 0) {
    chmod(dir_.c_str(), 0700);  // ours: only we may read credentials and sockets
  }
  QUIVER_RETURN_NOT_OK(util::CheckPrivateDir(dir_, "state directory"));
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "cluster.toml" || name == "pids") {
      return Status::AlreadyExists("'", dir_, "' already holds a cluster");
    }
    if (!LeftBetweenRuns(name)) {
      return Status::AlreadyExists("'", dir_, "' is not empty ('", name,
                                   "') and holds no Quiver cluster; choose another");
    }
  }
  if (ec) return Status::IOError("listing '", dir_, "': ", ec.message());
  return Status::OK();
}

Status LocalCluster::WritePids() const {
  const std::string path = dir_ + "/pids", tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    for (size_t i = 0; i < pids_.size(); ++i) {
      if (pids_[i] > 0) f << i << " " << pids_[i] << "\n";
    }
    if (!f.flush()) return Status::IOError("cannot write ", tmp);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::FromErrno(errno, "renaming into '" + path + "'");
  }
  return Status::OK();
}

Result<std::unique_ptr<LocalCluster>> LocalCluster::Attach(const std::string& state_dir,
                                                           int stop_timeout_ms) {
  std::unique_ptr<LocalCluster> c(new LocalCluster());
  c->detached_ = true;
  c->options_.stop_timeout_ms = stop_timeout_ms;
  c->dir_ = Absolute(state_dir);
  while (c->dir_.size() > 1 && c->dir_.back() == '/') c->dir_.pop_back();
  c->options_.state_dir = c->options_.log_dir = c->dir_;
  c->config_path_ = c->dir_ + "/cluster.toml";
  const std::string pids = c->dir_ + "/pids";
  const bool has_config = access(c->config_path_.c_str(), F_OK) == 0;
  if (!has_config) {
    if (access(pids.c_str(), F_OK) == 0) {
      return Status::Invalid("'", c->dir_, "' has a pids file but no cluster.toml");
    }
    return Status::NotFound("no cluster in '", c->dir_, "'");
  }
  QUIVER_RETURN_NOT_OK(util::CheckPrivateDir(c->dir_, "state directory"));
  QUIVER_ASSIGN_OR_RAISE(c->config_, memory::LoadClusterConfig(c->config_path_));
  c->recorded_.assign(c->config_.nodes.size(), -1);
  std::ifstream f(pids);
  for (long node = 0, pid = 0; f >> node >> pid;) {
    if (node >= 0 && node < c->nodes() && pid > 0) c->recorded_[node] = pid;
  }
  c->pids_ = c->recorded_;
  for (int i = 0; i < c->nodes(); ++i) (void)c->Running(i);
  return c;
}

pid_t LocalCluster::recorded_pid(int node) const {
  if (node >= 0 && node < static_cast<int>(recorded_.size())) return recorded_[node];
  return node >= 0 && node < static_cast<int>(pids_.size()) ? pids_[node] : -1;
}

bool LocalCluster::Running(int node) {
  if (node < 0 || node >= static_cast<int>(pids_.size())) return false;
  return !Gone(node);
}

bool LocalCluster::Gone(int node) {
  pid_t& p = pids_[node];
  if (p <= 0) return true;
  const pid_t r = waitpid(p, nullptr, WNOHANG);
  if (r == 0) return false;  // our child, running
  if (r == p || !IsDaemonOf(p, config_path_, node)) {
    p = -1;
    return true;
  }
  return false;  // not our child (attached), still quiverd of this node
}

Result<std::unique_ptr<LocalCluster>> LocalCluster::Start(const LocalClusterOptions& o) {
  if (o.nodes < 1) return Status::Invalid("a cluster needs at least one node");
  std::unique_ptr<LocalCluster> c(new LocalCluster());
  c->options_ = o;
  QUIVER_RETURN_NOT_OK(c->FindQuiverd());
  const bool kept = !o.state_dir.empty();
  std::string unique;
  if (kept) {
    // Until the directory is known to hold no other cluster, a failure
    // must not remove anything in it.
    c->detached_ = true;
    QUIVER_RETURN_NOT_OK(c->PrepareStateDir());
    c->detached_ = false;
    std::random_device random;
    char hex[16];
    std::snprintf(hex, sizeof(hex), "%06x", random() & 0xffffffu);
    unique = hex;
  } else {
    char tmpl[] = "/tmp/quiver-cluster-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return Status::FromErrno(errno, "mkdtemp");
    c->dir_ = tmpl;
    unique = c->dir_.substr(c->dir_.size() - 6);
  }
  if (c->options_.log_dir.empty()) c->options_.log_dir = c->dir_;
  memory::ClusterConfig& cfg = c->config_;
  cfg.name = o.name_prefix + "-" + std::to_string(getpid()) + "-" + unique;
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
  // A kept cluster may run for long; a throwaway one needs a short lifetime.
  QUIVER_RETURN_NOT_OK(InitCredentials(cfg.credentials, cfg.name, ids,
                                       {.validity_days = kept ? 3650 : 2}));
  c->config_path_ = c->dir_ + "/cluster.toml";
  {
    std::ofstream f(c->config_path_);
    f << cfg.ToToml();
    if (!f) return Status::IOError("cannot write ", c->config_path_);
  }
  c->pids_.assign(o.nodes, -1);
  for (int i = 0; i < o.nodes; ++i) {
    QUIVER_RETURN_NOT_OK(c->Spawn(i));
    if (kept) QUIVER_RETURN_NOT_OK(c->WritePids());
  }
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
  QUIVER_ASSIGN_OR_RAISE(pid_t pid,
                         SpawnLogged(args, log_path(i), /*append=*/true,
                                     /*detached=*/!options_.state_dir.empty()));
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

Status LocalCluster::FindQuiverd() {
  if (options_.quiverd.empty()) {
    for (const char* where : {"/quiverd", "/../quiverd"}) {
      const std::string candidate = ExecutableDir() + where;
      if (access(candidate.c_str(), X_OK) == 0) {
        options_.quiverd = candidate;
        break;
      }
    }
  }
  if (options_.quiverd.empty() || access(options_.quiverd.c_str(), X_OK) != 0) {
    return Status::Invalid("quiverd binary '",
                           options_.quiverd.empty()
                               ? "quiverd next to " + ExecutablePath()
                               : options_.quiverd,
                           "' is not executable");
  }
  return Status::OK();
}

Result<std::vector<int>> LocalCluster::RestartStopped() {
  QUIVER_RETURN_NOT_OK(FindQuiverd());
  std::vector<int> restarted;
  for (int i = 0; i < nodes(); ++i) {
    if (Running(i)) continue;
    // A daemon just killed may linger a moment as a zombie until its parent
    // reaps it; its region counts as in use by it until then.
    const pid_t old = recorded_pid(i);
    const std::string proc = "/proc/" + std::to_string(old);
    for (int waited = 0; old > 0 && waited < 1000 && access(proc.c_str(), F_OK) == 0;
         ++waited) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pids_[i] = -1;
    Status st = Spawn(i);
    if (st.ok()) st = WaitAccepting(i);
    // The pids file names every daemon started so far, whatever happens.
    Status written = WritePids();
    QUIVER_RETURN_NOT_OK(st.WithContext("restarting node " + std::to_string(i)));
    QUIVER_RETURN_NOT_OK(written);
    restarted.push_back(i);
  }
  return restarted;
}

Status LocalCluster::Restart(int node) {
  if (pids_[node] > 0) return Status::Invalid("node ", node, " is still running");
  QUIVER_RETURN_NOT_OK(Spawn(node));
  return WaitAccepting(node);
}

Status LocalCluster::Stop() {
  stopped_ = {};
  std::vector<bool> signalled(pids_.size(), false);
  for (size_t i = 0; i < pids_.size(); ++i) {
    if (Gone(static_cast<int>(i))) continue;  // never a pid that is no longer ours
    kill(pids_[i], SIGTERM);
    kill(pids_[i], SIGCONT);  // a stopped daemon handles its SIGTERM only once running
    signalled[i] = true;
  }
  // A daemon that has not stopped by the deadline is killed.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(options_.stop_timeout_ms);
  for (size_t i = 0; i < pids_.size(); ++i) {
    const int node = static_cast<int>(i);
    while (!Gone(node) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (Gone(node)) {
      stopped_.terminated += signalled[i] ? 1 : 0;
      continue;
    }
    kill(pids_[i], SIGKILL);
    ++stopped_.killed;
    // Our child is reaped here; another's goes once its parent (init) reaps.
    for (int waited = 0; waited < 1000 && !Gone(node); ++waited) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pids_[i] = -1;
  }
  RemoveFiles();
  pids_.clear();
  detached_ = true;  // nothing left for the destructor
  return Status::OK();
}

void LocalCluster::RemoveFiles() {
  auto remove = [this](const std::string& path) {
    if (unlink(path.c_str()) == 0) stopped_.removed.push_back(path);
  };
  for (const auto& n : config_.nodes) {
    remove(n.path);
    remove(n.socket);
  }
  if (dir_.empty()) return;
  std::error_code ignored;
  if (options_.state_dir.empty()) {
    std::filesystem::remove_all(dir_, ignored);
    dir_.clear();
    return;
  }
  // A kept directory keeps the logs (and itself).
  remove(dir_ + "/pids");
  remove(dir_ + "/pids.tmp");
  remove(config_path_);
  const std::string credentials = dir_ + "/credentials";
  if (std::filesystem::remove_all(credentials, ignored) > 0) {
    stopped_.removed.push_back(credentials);
  }
}

LocalCluster::~LocalCluster() {
  if (!detached_) (void)Stop();
}

}  // namespace quiver::control
