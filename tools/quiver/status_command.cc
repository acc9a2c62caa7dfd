// quiver status: the cluster as one node's daemon sees it.
#include <cinttypes>
#include <cstdio>
#include <optional>

#include "cli_parse.h"
#include "commands.h"
#include "control/client/admin.h"
#include "control/local_cluster.h"
#include "store/client/admin.h"

namespace quiver::cli {

namespace {

constexpr uint64_t kAnyNode = ~0ULL;

// The daemons of the cluster `quiver up` keeps in `dir`, one line each.
// Sets *config_path and *node (the first running one unless given) and
// *down (how many are not running); an exit code when there is nothing to
// ask.
std::optional<int> LocalDaemons(const std::string& dir, std::string* config_path,
                                uint64_t* node, int* down) {
  auto c = control::LocalCluster::Attach(dir);
  if (!c.ok()) {
    if (!c.status().IsNotFound()) return Fail(dir, c.status());
    std::fprintf(stderr, "quiver: status: no cluster in %s (`quiver up` starts one)\n",
                 Escape(dir).c_str());
    return kExitFailed;
  }
  *config_path = (*c)->config_path();
  std::printf("state dir %s, cluster file %s\n", (*c)->dir().c_str(),
              config_path->c_str());
  uint64_t first = kAnyNode;
  for (int i = 0; i < (*c)->nodes(); ++i) {
    if ((*c)->Running(i)) {
      std::printf("daemon of node %d: running (pid %d)\n", i,
                  static_cast<int>((*c)->pid(i)));
      if (first == kAnyNode) first = static_cast<uint64_t>(i);
    } else {
      ++*down;
      std::printf("daemon of node %d: DOWN (pid %d is gone; its log: %s)\n", i,
                  static_cast<int>((*c)->recorded_pid(i)), (*c)->log_path(i).c_str());
    }
  }
  if (*down > 0 && first != kAnyNode) {
    std::printf(
        "(`quiver up%s` starts the nodes that are down again, on their regions)\n",
        dir == control::DefaultStateDir() ? "" : (" --dir " + dir).c_str());
  }
  std::printf("\n");
  if (first == kAnyNode) {
    std::fprintf(stderr,
                 "quiver: status: no daemon of the cluster in %s is running (stale: "
                 "`quiver down` cleans it up, `quiver up` starts a new one)\n",
                 Escape(dir).c_str());
    return kExitFailed;
  }
  if (*node == kAnyNode) *node = first;
  return std::nullopt;
}

}  // namespace

int StatusCommand(const Args& in) {
  CommandLine cl("status", "[--dir D | --config FILE] [--node N]",
                 "Nodes, regions, memory use, published tables and the object store's "
                 "use per node (no options: the cluster of `quiver up`).");
  std::string config_path, dir;
  uint64_t node_flag = kAnyNode;
  cl.Text("--dir", &dir, "the state directory of a cluster of `quiver up`")
      ->type_name("D");
  cl.Text("--config", &config_path, "a cluster file (instead of --dir)")
      ->type_name("FILE");
  cl.Count("--node", &node_flag, memory::kMaxNodeId,
           "the node to ask (default: the first running, or 0 with --config)");
  if (auto code = cl.Parse(in)) return *code;
  if (!config_path.empty() && !dir.empty())
    return cl.Usage("--dir or --config, not both");
  std::optional<uint64_t> node_r = node_flag;
  // Without --config: the cluster `quiver up` keeps in --dir, $QUIVER_DIR
  // or the default state directory.
  int down = 0;
  if (config_path.empty()) {
    auto code = LocalDaemons(dir.empty() ? control::DefaultStateDir() : dir, &config_path,
                             &*node_r, &down);
    if (code) return *code;
  } else if (*node_r == kAnyNode) {
    *node_r = 0;
  }
  auto config = memory::LoadClusterConfig(config_path);
  if (!config.ok()) return Fail(config_path, config.status());
  const auto* node = config->FindNode(static_cast<uint32_t>(*node_r));
  if (node == nullptr) {
    return Fail("--node", Status::Invalid("node ", *node_r, " is not in ", config_path));
  }
  auto status = control::client::QueryClusterStatus(*node, 5000);
  if (!status.ok()) return Fail("status", status.status(), kExitFailed);
  std::printf("cluster '%s' (asked node %u)\n\n", config->name.c_str(), node->id);
  std::printf("%-5s %-10s %-22s %-16s %-10s %10s %10s %10s %8s %8s\n", "node", "state",
              "control", "region base", "backing", "size MiB", "used MiB", "free MiB",
              "objects", "sessions");
  for (const auto& n : status->nodes) {
    const char* state = !n.online ? "OFFLINE" : n.recovering ? "recovering" : "online";
    std::printf("%-5u %-10s %-22s 0x%-14" PRIx64 " %-10s %10.1f %10.1f %10.1f %8" PRIu64
                " %8u\n",
                n.node, state, n.control.c_str(), n.region_base, n.backing.c_str(),
                n.region_size / 1048576.0, n.used / 1048576.0, n.free / 1048576.0,
                n.live_allocations, n.sessions);
  }
  std::printf("\n%-32s %8s %14s %-12s %-12s %6s %s\n", "table", "chunks", "rows",
              "on nodes", "publishers", "pins", "state");
  if (status->tables.empty()) std::printf("(no published tables)\n");
  auto list = [](const std::vector<uint32_t>& nodes) {
    std::string out;
    for (uint32_t n : nodes) out += (out.empty() ? "" : ",") + std::to_string(n);
    return out;
  };
  for (const auto& t : status->tables) {
    std::string state = t.lost         ? "LOST: " + t.lost_reason
                        : t.incomplete ? "INCOMPLETE: " + t.incomplete_reason
                                       : "ok";
    if (t.orphaned) state += " (publisher gone)";
    if (t.local_only) state += " (this node only)";
    std::printf("%-32s %8u %14" PRIu64 " %-12s %-12s %6u %s\n", Escape(t.name).c_str(),
                t.chunks, t.rows, list(t.nodes).c_str(), list(t.publishers).c_str(),
                t.pins, Escape(state).c_str());
  }
  // The object store at each node whose socket is on this host.
  std::printf("\n%-5s %10s %10s %16s %16s %16s %10s %10s %10s\n", "store", "cap MiB",
              "used MiB", "sealed", "creating", "spilled", "hits", "misses", "evicted");
  for (const auto& n : status->nodes) {
    const auto* nc = config->FindNode(n.node);
    auto st = n.online && nc != nullptr ? store::QueryStoreStats(*nc, 2000)
                                        : Result<store::StoreStats>(Status::Unavailable(
                                              "node ", n.node, " is offline"));
    if (!st.ok()) {
      std::printf("%-5u %s\n", n.node, st.status().message().c_str());
      continue;
    }
    auto objects = [](uint64_t count, uint64_t bytes) {
      char buf[40];
      std::snprintf(buf, sizeof(buf), "%" PRIu64 " / %.1f MiB", count, bytes / 1048576.0);
      return std::string(buf);
    };
    std::printf("%-5u %10.1f %10.1f %16s %16s %16s %10" PRIu64 " %10" PRIu64 " %10" PRIu64
                "\n",
                st->node, st->capacity / 1048576.0, st->region_used / 1048576.0,
                objects(st->objects_sealed, st->bytes_sealed).c_str(),
                objects(st->objects_creating, st->bytes_creating).c_str(),
                objects(st->objects_spilled, st->bytes_spilled).c_str(), st->hits,
                st->misses, st->evictions + st->spills);
  }
  return down > 0 ? kExitFailed : kExitOk;
}

}  // namespace quiver::cli
