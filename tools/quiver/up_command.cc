// quiver up / quiver down: a cluster on this host that keeps running in the
// background, kept in one state directory (control/local_cluster.h).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli_parse.h"
#include "commands.h"
#include "control/local_cluster.h"

namespace quiver::cli {

namespace {

using control::LocalCluster;

std::string PidList(const LocalCluster& c) {
  std::string out;
  for (int i = 0; i < c.nodes(); ++i) {
    if (c.recorded_pid(i) > 0) {
      out += (out.empty() ? "" : " ") + std::to_string(c.recorded_pid(i));
    }
  }
  return out.empty() ? "none recorded" : out;
}

// "3 region files, 3 sockets, pids, cluster.toml, credentials".
std::string DescribeRemoved(const LocalCluster& c) {
  int regions = 0, sockets = 0;
  std::string others;
  for (const std::string& path : c.stop_summary().removed) {
    bool region = false;
    for (const auto& n : c.config().nodes) region |= path == n.path;
    if (region) {
      ++regions;
    } else if (path.size() > 5 && path.compare(path.size() - 5, 5, ".sock") == 0) {
      ++sockets;
    } else {
      others += ", " + path.substr(path.rfind('/') + 1);
    }
  }
  auto count = [](int n, const char* what) {
    return n == 0 ? std::string()
                  : ", " + std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  const std::string out =
      count(regions, "region file") + count(sockets, "socket") + others;
  return out.empty() ? "nothing" : out.substr(2);
}

// Attaches to the cluster in `dir`; a stale one (no daemon alive) is
// cleaned up, saying so. Returns true when a cluster there is running.
Result<bool> RunningOrCleaned(const std::string& dir, const char* who) {
  auto c = LocalCluster::Attach(dir);
  if (!c.ok()) {
    if (c.status().IsNotFound()) return false;
    return c.status();
  }
  for (int i = 0; i < (*c)->nodes(); ++i) {
    if ((*c)->Running(i)) return true;
  }
  const std::string pids = PidList(**c);
  QUIVER_RETURN_NOT_OK((*c)->Stop());
  std::printf(
      "quiver %s: the cluster in %s was not running: no daemon of it is alive (pids %s; "
      "a crash or a reboot). Cleaned up what it left: %s\n",
      who, dir.c_str(), pids.c_str(), DescribeRemoved(**c).c_str());
  return false;
}

// `--dir D` / `QUIVER_DIR=D` for the commands a user types next; nothing
// for the default directory.
std::string DirFlag(const std::string& dir) {
  if (std::getenv("QUIVER_DIR") != nullptr) return "";
  return dir == control::DefaultStateDir() ? "" : " --dir " + dir;
}

// A cluster running with some nodes down (a daemon crashed or was
// killed): `quiver up` starts those again on their regions, as a restarted
// daemon takes over its region and its tables come back; the others are
// left running.
int RestartDown(LocalCluster& c, const std::string& down) {
  std::printf("quiver up: the cluster in %s is running with node%s %s down; restarting\n",
              c.dir().c_str(), down.find(',') == std::string::npos ? "" : "s",
              down.c_str());
  auto restarted = c.RestartStopped();
  if (!restarted.ok()) return Fail("up", restarted.status());
  for (int i : *restarted) {
    std::printf("  node %-3d      pid %-8d log %s\n", i, static_cast<int>(c.pid(i)),
                c.log_path(i).c_str());
  }
  std::printf(
      "its tables are readable again once every node has it back (quiver status%s)\n",
      DirFlag(c.dir()).c_str());
  return kExitOk;
}

}  // namespace

int UpCommand(const Args& in) {
  CommandLine cl("up", "[OPTIONS]",
                 "Start a cluster on this host that keeps running in the background; a "
                 "stale one in its directory is cleaned up first.");
  std::string dir = control::DefaultStateDir(), size_text = "1GiB";
  uint64_t nodes = 3;
  cl.Count("--nodes", &nodes, 64, "how many nodes (1-64)");
  cl.Text("--size", &size_text, "each node's region (1G, 512M, ...)")->type_name("S");
  cl.Text("--dir", &dir, "the cluster's state directory")->type_name("D");
  if (auto code = cl.Parse(in)) return *code;
  auto size = memory::ParseByteSize(size_text);
  if (!size.ok()) return Fail("--size", size.status());
  if (nodes == 0 || *size == 0 || dir.empty()) {
    return cl.Usage(nodes == 0    ? "--nodes is at least 1"
                    : dir.empty() ? "--dir is empty"
                                  : "--size is at least one page");
  }
  auto running = RunningOrCleaned(dir, "up");
  if (!running.ok()) return Fail(dir, running.status());
  if (*running) {
    auto c = LocalCluster::Attach(dir);
    if (c.ok()) {
      std::string down;
      for (int i = 0; i < (*c)->nodes(); ++i) {
        if (!(*c)->Running(i)) {
          down += (down.empty() ? "" : ", ") + std::to_string(i) + " (pid " +
                  std::to_string((*c)->recorded_pid(i)) + " gone)";
        }
      }
      if (!down.empty()) return RestartDown(**c, down);
    }
    std::fprintf(stderr,
                 "quiver: up: a cluster is already running in %s (nodes %d, pids %s); "
                 "`quiver down%s` first, or `quiver up --dir OTHER`\n",
                 Escape(dir).c_str(), c.ok() ? (*c)->nodes() : 0,
                 c.ok() ? PidList(**c).c_str() : "?", DirFlag(dir).c_str());
    return kExitFailed;
  }
  control::LocalClusterOptions o;
  o.nodes = static_cast<int>(nodes);
  o.region_size = *size;
  o.state_dir = dir;
  o.name_prefix = "up";  // regions: /dev/shm/quiver-up-PID-XXXXXX-N
  // One user's cluster, loaded by `quiver put`: a client may fill whole
  // regions (the cluster file's defaults keep half of each for others).
  o.limits.session_quota = {1.0, 0};
  o.limits.node_quota = {1.0, 0};
  CatchInterrupts();  // a Ctrl-C while starting stops what was started
  auto c = LocalCluster::Start(o);
  if (c.ok() && Interrupted()) {
    (void)(*c)->Stop();
    std::fprintf(stderr, "quiver: up: interrupted; stopped the daemons it had started\n");
    return kExitFailed;
  }
  if (!c.ok()) {
    return Fail("up", c.status(),
                c.status().IsAlreadyExists() ? kExitBadInput : kExitFailed);
  }
  (*c)->Detach();
  const auto& cfg = (*c)->config();
  const std::string flag = DirFlag((*c)->dir());
  std::printf("quiver up: cluster '%s' is running: %d node%s, regions of %s each\n",
              cfg.name.c_str(), (*c)->nodes(), (*c)->nodes() == 1 ? "" : "s",
              size_text.c_str());
  std::printf("  state dir     %s\n  cluster file  %s\n", (*c)->dir().c_str(),
              (*c)->config_path().c_str());
  for (const auto& n : cfg.nodes) {
    std::printf("  node %-3u      pid %-8d socket %s  control %s  log %s\n", n.id,
                static_cast<int>((*c)->pid(static_cast<int>(n.id))), n.socket.c_str(),
                n.control.c_str(), (*c)->log_path(static_cast<int>(n.id)).c_str());
  }
  std::printf(
      "next:\n  quiver status%s          # nodes, memory, tables\n"
      "  quiver down%s            # stop it and free its memory\n"
      "  programs: Client::Connect with the cluster file and a node id\n",
      flag.c_str(), flag.c_str());
  return kExitOk;
}

int DownCommand(const Args& in) {
  CommandLine cl("down", "[OPTIONS]",
                 "Stop the cluster of `quiver up`, remove its regions, sockets and "
                 "credentials (its logs stay).");
  std::string dir = control::DefaultStateDir();
  uint64_t timeout = 10;
  cl.Text("--dir", &dir, "the cluster's state directory")->type_name("D");
  cl.Count("--timeout", &timeout, 3600,
           "seconds before a daemon that does not stop is killed");
  if (auto code = cl.Parse(in)) return *code;
  if (dir.empty()) return cl.Usage("--dir is empty");
  auto c = LocalCluster::Attach(dir, static_cast<int>(timeout) * 1000);
  if (!c.ok() && c.status().IsNotFound()) {
    std::fprintf(stderr, "quiver: down: no cluster in %s, nothing to stop\n",
                 Escape(dir).c_str());
    return kExitFailed;
  }
  if (!c.ok()) return Fail(dir, c.status());
  int running = 0;
  for (int i = 0; i < (*c)->nodes(); ++i) running += (*c)->Running(i) ? 1 : 0;
  const std::string pids = PidList(**c);
  if (!(*c)->Stop().ok()) return kExitFailed;
  const auto& s = (*c)->stop_summary();
  if (running == 0) {
    std::printf(
        "quiver down: no daemon of the cluster in %s was running (pids %s; a crash or a "
        "reboot); cleaned up what it left: %s\n",
        (*c)->dir().c_str(), pids.c_str(), DescribeRemoved(**c).c_str());
    return kExitOk;
  }
  std::printf("quiver down: stopped %d daemon%s of %s", running, running == 1 ? "" : "s",
              (*c)->dir().c_str());
  if (s.killed > 0) {
    std::printf(" (%d killed after %d s without stopping)", s.killed,
                static_cast<int>(timeout));
  }
  std::printf("; removed %s; logs kept in %s/node*.log\n", DescribeRemoved(**c).c_str(),
              (*c)->dir().c_str());
  return kExitOk;
}

}  // namespace quiver::cli
