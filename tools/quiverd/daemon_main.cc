#include "daemon_main.h"

#include <malloc.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "control/daemon/daemon.h"
#include "quiver/memory/cluster_config.h"
#include "store/daemon/store_service.h"

namespace quiver::control::daemon {

namespace {

int Usage(const char* program) {
  std::fprintf(
      stderr,
      "usage: %s --config FILE --id N [--max-malloc SIZE] [--malloc-rate N]\n"
      "          [--heartbeat-ms MS] [--io-threads N] [--cpus LIST]\n"
      "          [--store-high PCT] [--store-low PCT] [--store-capacity SIZE]\n"
      "          [--store-spill DIR]\n"
      "  runs the Quiver node daemon of node N of the cluster FILE\n"
      "  --max-malloc    largest single allocation (default: [limits] max_malloc)\n"
      "  --malloc-rate   allocations per second per session (default: [limits])\n"
      "  --heartbeat-ms  interval of the heartbeats to peers (default 100)\n"
      "  --io-threads    threads serving connections (default: one per two CPUs)\n"
      "  --cpus          run on these CPUs only (e.g. 0,1)\n"
      "  --store-high    object store: evict when a Create would pass this %% of\n"
      "                  its capacity (default 95)\n"
      "  --store-low     ... down to this %% (default 85)\n"
      "  --store-capacity bytes of the region the store may fill (default: all)\n"
      "  --store-spill   evicted objects are written here (created 0700) and read\n"
      "                  back on Get, instead of being dropped\n",
      program);
  return 2;
}

int Bad(const std::string& option, const std::string& value, const char* what) {
  std::fprintf(stderr, "quiverd: %s '%s' is not %s\n", option.c_str(), value.c_str(),
               what);
  return 2;
}

// A whole number in [lo, hi], or false.
bool ParseCount(const std::string& text, long long lo, long long hi, long long* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != 0 || v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace

int DaemonMain(int argc, char** argv) {
  // Frames of up to 64 MiB come and go with their calls: buffers of 1 MiB
  // and more are mapped on their own and unmapped when freed, so that what
  // a peer made the daemon hold goes back to the system with it. (glibc's
  // own threshold rises after such a free, and its arenas then keep the
  // next big buffers resident after they are freed.)
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  DaemonOptions o;
  store::StoreServiceOptions store;
  bool have_config = false, have_id = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      Usage(argv[0]);
      return 0;
    }
    if (i + 1 >= argc) {
      if (a.rfind("--", 0) == 0) {
        std::fprintf(stderr, "quiverd: %s needs a value\n", a.c_str());
        return Usage(argv[0]);
      }
      std::fprintf(stderr, "quiverd: unknown argument '%s'\n", a.c_str());
      return Usage(argv[0]);
    }
    const std::string v = argv[++i];
    long long n = 0;
    if (a == "--config") {
      o.config_path = v;
      have_config = true;
    } else if (a == "--id") {
      if (!ParseCount(v, 0, memory::kMaxNodeId, &n)) return Bad(a, v, "a node id");
      o.node = static_cast<uint32_t>(n);
      have_id = true;
    } else if (a == "--max-malloc") {
      auto size = memory::ParseByteSize(v);
      if (!size.ok() || *size == 0) return Bad(a, v, "a positive size");
      o.max_malloc_bytes = *size;
    } else if (a == "--malloc-rate") {
      if (!ParseCount(v, 1, 1000000000, &n)) return Bad(a, v, "a positive count");
      o.malloc_rate = static_cast<uint64_t>(n);
    } else if (a == "--heartbeat-ms") {
      if (!ParseCount(v, 10, 60000, &n)) return Bad(a, v, "a time in [10, 60000] ms");
      o.heartbeat_ms = static_cast<int>(n);
    } else if (a == "--io-threads") {
      if (!ParseCount(v, 1, 64, &n)) return Bad(a, v, "a thread count in [1, 64]");
      o.io_threads = static_cast<int>(n);
    } else if (a == "--cpus") {
      size_t pos = 0;
      while (pos <= v.size()) {
        const size_t comma = v.find(',', pos);
        const std::string item =
            v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        if (!ParseCount(item, 0, CPU_SETSIZE - 1, &n)) return Bad(a, v, "a list of CPUs");
        o.cpus.push_back(static_cast<int>(n));
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    } else if (a == "--store-high" || a == "--store-low") {
      if (!ParseCount(v, 1, 100, &n)) return Bad(a, v, "a percentage in [1, 100]");
      (a == "--store-high" ? store.limits.high_watermark : store.limits.low_watermark) =
          static_cast<double>(n) / 100.0;
    } else if (a == "--store-capacity") {
      auto size = memory::ParseByteSize(v);
      if (!size.ok() || *size == 0) return Bad(a, v, "a positive size");
      store.limits.capacity = *size;
    } else if (a == "--store-spill") {
      if (v.empty()) return Bad(a, v, "a directory");
      store.spill_dir = v;
    } else {
      std::fprintf(stderr, "quiverd: unknown argument '%s'\n", a.c_str());
      return Usage(argv[0]);
    }
  }
  if (!have_config || !have_id) return Usage(argv[0]);
  if (store.limits.low_watermark > store.limits.high_watermark) {
    std::fprintf(stderr, "quiverd: --store-low (%.0f%%) is above --store-high (%.0f%%)\n",
                 store.limits.low_watermark * 100, store.limits.high_watermark * 100);
    return 2;
  }
  o.services.push_back(store::StoreServiceSpec(store));
  return RunDaemon(o);
}

}  // namespace quiver::control::daemon
