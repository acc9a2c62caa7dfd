// quiver cluster init: make a cluster's TLS credentials (docs/security.md).
#include <cstdio>
#include <string>
#include <vector>

#include "cli_parse.h"
#include "commands.h"
#include "control/tls/credentials.h"
#include "quiver/memory/cluster_config.h"

namespace quiver::cli {

namespace {

int ClusterInit(const std::string& config_path, bool force) {
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

int ClusterCommand(const Args& in) {
  CommandLine cl("cluster", "init CONFIG [--force]",
                 "`init`: make the cluster's TLS credentials (a CA, and each node's "
                 "daemon and client certificate and key) in the directory its "
                 "credentials = \"DIR\" names.");
  bool force = false;
  cl.Flag("--force", &force, "overwrite credentials that are there");
  Args args;
  cl.Positionals("init CONFIG", &args, "the command, then the cluster file");
  if (auto code = cl.Parse(in)) return *code;
  if (args.empty() || args[0] != "init") {
    return cl.Usage(args.empty() ? "init?" : "unknown cluster command '" + args[0] + "'");
  }
  if (args.size() != 2) return cl.Usage("init takes one CONFIG");
  return ClusterInit(args[1], force);
}

}  // namespace quiver::cli
