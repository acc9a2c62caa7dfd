// quiver status: the cluster as one node's daemon sees it.
#include <cinttypes>
#include <cstdio>

#include "commands.h"
#include "quiver/control/node_client.h"

namespace quiver::cli {

int StatusCommand(const Args& in) {
  Args args = in;
  const std::string config_path = TakeOption(&args, "config", "");
  const std::string node_text = TakeOption(&args, "node", "0");
  if (config_path.empty() || !args.empty()) {
    std::fprintf(stderr, "usage: quiver status --config FILE [--node N]\n");
    return kExitBadInput;
  }
  auto config = memory::LoadClusterConfig(config_path);
  if (!config.ok()) return Fail(config_path, config.status());
  char* end = nullptr;
  const unsigned long id = std::strtoul(node_text.c_str(), &end, 10);
  const auto* node = *end == 0 ? config->FindNode(static_cast<uint32_t>(id)) : nullptr;
  if (node == nullptr) {
    return Fail("--node",
                Status::Invalid("'", node_text, "' is not a node of ", config_path));
  }
  auto client = control::NodeClient::Make(control::NodeTarget(*node, true), config->token,
                                          node->id, node->id, 0);
  rpc::StatusRequest req;
  rpc::StatusReply rep;
  Status st = client->Call(&rpc::Node::Stub::Status, &req, &rep, 5000, "Status");
  if (!st.ok()) return Fail("status", st, kExitFailed);
  std::printf("cluster '%s' (asked node %u)\n\n", config->name.c_str(), node->id);
  std::printf("%-5s %-8s %-22s %-16s %-10s %10s %10s %10s %8s\n", "node", "state",
              "control", "region base", "backing", "size MiB", "used MiB", "free MiB",
              "objects");
  for (const auto& n : rep.nodes()) {
    std::printf("%-5u %-8s %-22s 0x%-14" PRIx64 " %-10s %10.1f %10.1f %10.1f %8" PRIu64
                "\n",
                n.node(), n.online() ? "online" : "OFFLINE", n.control().c_str(),
                n.region_base(), n.backing().c_str(), n.region_size() / 1048576.0,
                n.used() / 1048576.0, n.free() / 1048576.0, n.live_allocations());
  }
  std::printf("\n%-32s %8s %14s %-12s %6s %s\n", "table", "chunks", "rows", "publishers",
              "pins", "state");
  if (rep.tables().empty()) std::printf("(no published tables)\n");
  for (const auto& t : rep.tables()) {
    std::string pubs;
    for (uint32_t p : t.publishers())
      pubs += (pubs.empty() ? "" : ",") + std::to_string(p);
    std::printf("%-32s %8u %14" PRIu64 " %-12s %6u %s\n", t.name().c_str(), t.chunks(),
                t.num_rows(), pubs.c_str(), t.pins(),
                t.lost() ? ("LOST: " + t.lost_reason()).c_str() : "ok");
  }
  return kExitOk;
}

}  // namespace quiver::cli
