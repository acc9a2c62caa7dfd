#include "attach.h"

#include <cstdio>

namespace quiver::cli {

void AddClusterFlags(CommandLine* cl, ClusterFlags* flags, bool with_node) {
  cl->Text("--dir", &flags->dir,
           "the cluster's state directory (default $QUIVER_DIR, else "
           "$XDG_RUNTIME_DIR/quiver, else /tmp/quiver-UID)")
      ->type_name("D");
  if (with_node) {
    cl->Count("--node", &flags->node, memory::kMaxNodeId,
              "the node to run on (default: the first whose daemon runs)");
  }
}

std::optional<Attached> AttachCluster(const std::string& command,
                                      const ClusterFlags& flags, int* code) {
  const std::string& dir_flag = flags.dir;
  constexpr uint64_t kAnyNode = ClusterFlags::kAnyNode;
  std::optional<uint64_t> node = flags.node;
  Attached a;
  a.dir = dir_flag.empty() ? control::DefaultStateDir() : dir_flag;
  a.node_given = *node != kAnyNode;
  auto cluster = control::LocalCluster::Attach(a.dir);
  if (!cluster.ok()) {
    if (!cluster.status().IsNotFound()) {
      *code = Fail(a.dir, cluster.status());
    } else {
      std::fprintf(stderr, "quiver: %s: no cluster in %s: start one with `quiver up`\n",
                   command.c_str(), Escape(a.dir).c_str());
      *code = kExitFailed;
    }
    return std::nullopt;
  }
  a.cluster = std::move(*cluster);
  for (int i = 0; i < a.cluster->nodes(); ++i) {
    if (a.cluster->Running(i)) a.running.push_back(a.cluster->config().nodes[i].id);
  }
  if (!a.node_given) {
    if (a.running.empty()) {
      std::fprintf(stderr,
                   "quiver: %s: no daemon of the cluster in %s is running (`quiver "
                   "down` cleans it up, `quiver up` starts a new one)\n",
                   command.c_str(), Escape(a.dir).c_str());
      *code = kExitFailed;
      return std::nullopt;
    }
    *node = a.running[0];
  } else if (*node >= static_cast<uint64_t>(a.cluster->nodes()) ||
             a.cluster->config().FindNode(static_cast<uint32_t>(*node)) == nullptr) {
    std::fprintf(stderr, "quiver: %s: no node %llu in the cluster in %s (it has %d)\n",
                 command.c_str(), static_cast<unsigned long long>(*node),
                 Escape(a.dir).c_str(), a.cluster->nodes());
    *code = kExitBadInput;
    return std::nullopt;
  } else if (!a.cluster->Running(static_cast<int>(*node))) {
    std::fprintf(stderr,
                 "quiver: %s: the daemon of node %llu is not running (`quiver status` "
                 "shows the cluster)\n",
                 command.c_str(), static_cast<unsigned long long>(*node));
    *code = kExitFailed;
    return std::nullopt;
  }
  auto client = Client::Connect(
      {.config_path = a.cluster->config_path(), .node = static_cast<uint32_t>(*node)});
  if (!client.ok()) {
    *code =
        Fail(command + ": node " + std::to_string(*node), client.status(), kExitFailed);
    return std::nullopt;
  }
  a.client = std::move(*client);
  return a;
}

}  // namespace quiver::cli
