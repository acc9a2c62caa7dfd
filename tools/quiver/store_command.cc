// quiver store: the cluster's object store from the command line.
//
//   quiver store ls   --config F [--node N]        every object of every node
//   quiver store stat --config F [--node N] [ID]   one object, or every node's counters
//   quiver store rm   --config F [--node N] ID...  delete (a table with its parts)
//
// ID is 40 hexadecimal digits, or any other text, whose SHA-1 is the id
// (ObjectId::FromName: what a program storing under that name used).
#include <cinttypes>
#include <cstdio>
#include <ctime>

#include "cli_parse.h"
#include "commands.h"
#include "quiver/client.h"
#include "quiver/memory/cluster_config.h"
#include "quiver/store.h"

namespace quiver::cli {

namespace {

using store::ObjectId;
using store::ObjectInfo;

ObjectId ParseId(const std::string& text) {
  auto hex = ObjectId::FromHex(text);
  return hex.ok() ? *hex : ObjectId::FromName(text);
}

std::string Age(std::chrono::system_clock::time_point t) {
  if (t.time_since_epoch().count() == 0) return "-";
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now() - t)
                     .count();
  if (s < 120) return std::to_string(std::max<long long>(s, 0)) + "s ago";
  if (s < 7200) return std::to_string(s / 60) + "m ago";
  return std::to_string(s / 3600) + "h ago";
}

std::string ObjectBytes(uint64_t n) {
  char buf[32];
  if (n < 10 * 1024) {
    std::snprintf(buf, sizeof(buf), "%" PRIu64 " B", n);
  } else if (n < 10ULL << 20) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", n / 1024.0);
  } else if (n < 10ULL << 30) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", n / 1048576.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", n / 1073741824.0);
  }
  return buf;
}

int List(store::ObjectStore& objects) {
  auto list = objects.List();
  if (!list.ok()) return Fail("store ls", list.status(), kExitFailed);
  std::printf("%-40s %-8s %4s %12s %10s %5s %s\n", "id", "state", "home", "data",
              "metadata", "pins", "last use");
  for (const ObjectInfo& o : *list) {
    std::printf("%-40s %-8s %4u %12s %10s %5u %s\n", o.id.Hex().c_str(),
                store::StateName(o.state), o.home, ObjectBytes(o.data_size).c_str(),
                ObjectBytes(o.metadata_size).c_str(), o.pins, Age(o.last_use).c_str());
  }
  std::printf("(%zu objects)\n", list->size());
  return kExitOk;
}

int StatOne(store::ObjectStore& objects, const std::string& text) {
  const ObjectId id = ParseId(text);
  auto list = objects.List();
  if (!list.ok()) return Fail("store stat", list.status(), kExitFailed);
  for (const ObjectInfo& o : *list) {
    if (o.id != id) continue;
    std::printf("id        %s\nstate     %s\nhome      node %u\ndata      %" PRIu64
                " bytes\nmetadata  %" PRIu64 " bytes\npins      %u\nlast use  %s\n",
                o.id.Hex().c_str(), store::StateName(o.state), o.home, o.data_size,
                o.metadata_size, o.pins, Age(o.last_use).c_str());
    return kExitOk;
  }
  return Fail("store stat",
              Status::NotFound("no object ", id.Hex(), " on a reachable node"),
              kExitFailed);
}

int StatNodes(Client& client, store::ObjectStore& objects) {
  for (const auto& n : client.config().nodes) {
    auto st = objects.Stats(n.id);
    if (!st.ok()) {
      std::printf("node %u: %s\n\n", n.id, st.status().message().c_str());
      continue;
    }
    std::printf(
        "node %u  capacity %s, region used %s\n"
        "  objects   sealed %" PRIu64 " (%s), creating %" PRIu64 " (%s), spilled %" PRIu64
        " (%s)\n"
        "  calls     creates %" PRIu64 ", seals %" PRIu64 ", aborts %" PRIu64
        ", deletes %" PRIu64
        "\n"
        "  gets      hits %" PRIu64 ", misses %" PRIu64
        "\n"
        "  eviction  evictions %" PRIu64 " (%s), spills %" PRIu64
        " (%s), restores %" PRIu64 " (%s), failed spills %" PRIu64
        "\n"
        "  directory %" PRIu64 " ids; spill directory %s\n",
        st->node, ObjectBytes(st->capacity).c_str(), ObjectBytes(st->region_used).c_str(),
        st->objects_sealed, ObjectBytes(st->bytes_sealed).c_str(), st->objects_creating,
        ObjectBytes(st->bytes_creating).c_str(), st->objects_spilled,
        ObjectBytes(st->bytes_spilled).c_str(), st->creates, st->seals, st->aborts,
        st->deletes, st->hits, st->misses, st->evictions,
        ObjectBytes(st->evicted_bytes).c_str(), st->spills,
        ObjectBytes(st->spilled_bytes).c_str(), st->restores,
        ObjectBytes(st->restored_bytes).c_str(), st->spill_failures,
        st->directory_entries,
        st->spill_dir.empty() ? "(none: eviction drops objects)" : st->spill_dir.c_str());
    if (!st->last_spill_error.empty()) {
      std::printf("  last failed spill: %s\n", st->last_spill_error.c_str());
    }
    std::printf("\n");
  }
  return kExitOk;
}

int Remove(store::ObjectStore& objects, const Args& ids) {
  int code = kExitOk;
  for (const auto& text : ids) {
    const ObjectId id = ParseId(text);
    // A table goes with its parts; any other object alone.
    Status st = objects.DeleteTable(id);
    if (st.IsInvalid()) st = objects.Delete({id});
    if (!st.ok()) {
      code = Fail("store rm " + id.Hex(), st, kExitFailed);
      continue;
    }
    std::printf("deleted %s\n", id.Hex().c_str());
  }
  return code;
}

}  // namespace

int StoreCommand(const Args& in) {
  CommandLine cl("store", "ls|stat|rm [ID...] --config FILE [--node N]",
                 "The object store: `ls` its objects, `stat` one object (or every "
                 "node's counters without ID), `rm` objects (tables with parts). ID: 40 "
                 "hex digits, or a name (its SHA-1 is the id).");
  std::string config_path;
  uint64_t node = 0;
  cl.Text("--config", &config_path, "the cluster file (required)")->type_name("FILE");
  cl.Count("--node", &node, memory::kMaxNodeId, "the node to connect to");
  Args args;
  cl.Positionals("ls|stat|rm ID...", &args, "what to do, then the objects");
  if (auto code = cl.Parse(in)) return *code;
  if (args.empty()) return cl.Usage("ls, stat or rm?");
  if (config_path.empty()) return cl.Usage("--config FILE is missing");
  const std::string verb = args[0];
  args.erase(args.begin());
  if (verb != "ls" && verb != "stat" && verb != "rm") {
    return cl.Usage("unknown store command '" + verb + "'");
  }
  const bool ok_args = (verb == "ls" && args.empty()) ||
                       (verb == "stat" && args.size() <= 1) ||
                       (verb == "rm" && !args.empty());
  if (!ok_args) {
    return cl.Usage(verb == "ls"     ? "ls takes no ID"
                    : verb == "stat" ? "stat takes at most one ID"
                                     : "rm needs an ID");
  }
  // A cluster file that is missing or malformed is bad input (2), read
  // before the cluster is asked; failing to reach a node is 1.
  auto config = memory::LoadClusterConfig(config_path);
  if (!config.ok()) return Fail(config_path, config.status());
  if (config->FindNode(static_cast<uint32_t>(node)) == nullptr) {
    return Fail("--node", Status::Invalid("node ", node, " is not in ", config_path));
  }
  ClientOptions options;
  options.config_path = config_path;
  options.node = static_cast<uint32_t>(node);
  auto client = Client::Connect(options);
  if (!client.ok()) return Fail("store", client.status(), kExitFailed);
  store::ObjectStore objects(**client);
  if (verb == "ls") return List(objects);
  if (verb == "stat")
    return args.empty() ? StatNodes(**client, objects) : StatOne(objects, args[0]);
  return Remove(objects, args);
}

}  // namespace quiver::cli
