// quiver status: the cluster as one node's daemon sees it.
#include <cinttypes>
#include <cstdio>

#include "commands.h"
#include "control/client/admin.h"
#include "store/client/admin.h"

namespace quiver::cli {

int StatusCommand(const Args& in) {
  Args args = in;
  const std::string config_path = TakeOption(&args, "config", "");
  auto node_r = TakeCount(&args, "node", 0, memory::kMaxNodeId);
  if (!node_r.ok()) return Fail("status", node_r.status());
  if (config_path.empty() || !args.empty()) {
    std::fprintf(stderr, "usage: quiver status --config FILE [--node N]\n");
    return kExitBadInput;
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
  std::printf("\n%-32s %8s %14s %-12s %6s %s\n", "table", "chunks", "rows", "publishers",
              "pins", "state");
  if (status->tables.empty()) std::printf("(no published tables)\n");
  for (const auto& t : status->tables) {
    std::string pubs;
    for (uint32_t p : t.publishers) pubs += (pubs.empty() ? "" : ",") + std::to_string(p);
    std::string state = t.lost ? "LOST: " + t.lost_reason : "ok";
    if (t.orphaned) state += " (publisher gone)";
    if (t.local_only) state += " (this node only)";
    std::printf("%-32s %8u %14" PRIu64 " %-12s %6u %s\n", t.name.c_str(), t.chunks,
                t.rows, pubs.c_str(), t.pins, state.c_str());
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
  return kExitOk;
}

}  // namespace quiver::cli
