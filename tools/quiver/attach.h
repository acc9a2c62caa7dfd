// Reaching the cluster `quiver up` keeps from a command (sql, put, ls, rm,
// get): its state directory (--dir, else control::DefaultStateDir()), a
// node whose daemon runs (--node, else the first), and a client session
// there.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_parse.h"
#include "commands.h"
#include "control/local_cluster.h"
#include "quiver/client.h"

namespace quiver::cli {

struct Attached {
  std::unique_ptr<control::LocalCluster> cluster;
  std::unique_ptr<Client> client;
  std::string dir;
  bool node_given = false;        // --node was on the command line
  std::vector<uint32_t> running;  // nodes whose daemons run
};

// Whether `s` ends with `tail` (file extensions).
inline bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() &&
         s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// --dir and --node of a command that attaches.
struct ClusterFlags {
  static constexpr uint64_t kAnyNode = ~0ULL;
  std::string dir;           // empty: control::DefaultStateDir()
  uint64_t node = kAnyNode;  // kAnyNode: the first whose daemon runs
};
// Adds --dir D and --node N (when `with_node`) to `cl`, into *flags.
void AddClusterFlags(CommandLine* cl, ClusterFlags* flags, bool with_node = true);

// Attaches to the cluster in flags.dir and connects to a node. On failure
// prints one clear line naming `command` and what to do, sets *code and
// returns nothing.
std::optional<Attached> AttachCluster(const std::string& command,
                                      const ClusterFlags& flags, int* code);

}  // namespace quiver::cli
