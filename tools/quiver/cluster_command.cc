// quiver cluster init: make a cluster's TLS credentials (docs/security.md).
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "control/tls/credentials.h"
#include "quiver/memory/cluster_config.h"

namespace quiver::cli {

namespace {

constexpr const char* kClusterUsage = "usage: quiver cluster init CONFIG [--force]\n";

int ClusterInit(Args args) {
  const bool force = TakeFlag(&args, "force");
  if (args.size() != 1 || args[0].starts_with("-")) {
    std::fputs(kClusterUsage, stderr);
    return kExitBadInput;
  }
  const std::string& config_path = args[0];
  auto config = memory::LoadClusterConfig(config_path);
  if (!config.ok()) return Fail(config_path, config.status());
  const std::string& dir = config->credentials;
  if (dir.empty()) {
    return Fail(
        config_path,
        Status::Invalid(config_path, " has no credentials = \"DIR\" in [cluster]"));
  }
  std::vector<uint32_t> nodes;
  for (const auto& node : config->nodes) nodes.push_back(node.id);
  Status st = control::InitCredentials(dir, config->name, nodes, {.overwrite = force});
  if (!st.ok()) return Fail("cluster init", st);
  std::printf("wrote %s (0600)\nwrote %s (0644)\n", control::CaKeyPath(dir).c_str(),
              control::CaCertPath(dir).c_str());
  for (uint32_t node : nodes) {
    for (auto role : {control::PeerRole::kDaemon, control::PeerRole::kClient}) {
      std::printf("wrote %s (0600)\nwrote %s (0644)\n",
                  control::KeyPath(dir, role, node).c_str(),
                  control::CertPath(dir, role, node).c_str());
    }
  }
  return kExitOk;
}

}  // namespace

int ClusterCommand(const Args& args) {
  if (!args.empty() && args[0] == "init") {
    return ClusterInit(Args(args.begin() + 1, args.end()));
  }
  std::fputs(kClusterUsage, stderr);
  return kExitBadInput;
}

}  // namespace quiver::cli
