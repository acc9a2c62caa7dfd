// The examples of docs/memory.md, compiled and run by the test command.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "quiver/coherence/flush.h"
#include "quiver/columnar/builder.h"
#include "quiver/memory/region.h"
#include "quiver/memory/region_pool.h"

using namespace quiver;
using namespace quiver::memory;

int main() {
  const std::string name = "example" + std::to_string(getpid());
  auto config = ParseClusterConfig(R"(
[cluster]
name = ")" + name + R"("


[[node]]
id = 0
control = "127.0.0.1:7600"
base = "0x300000000000"
size = "64MiB"
)");
  if (!config.ok())
    return std::fprintf(stderr, "%s\n", config.status().ToString().c_str()), 1;
  ClusterMap::Options options;
  options.create_own_region = true;
  options.remove_own_region_on_close = true;
  auto cluster = ClusterMap::Open(*config, 0, options);
  if (!cluster.ok()) return 2;
  RegionAllocator* alloc = (*cluster)->local_region()->allocator();
  uint8_t* p = alloc->Allocate(1000).ValueOrDie();
  p = alloc->Reallocate(p, 4096).ValueOrDie();
  Status st = alloc->Free(p + 8);
  std::printf("freeing an interior pointer: %s\n", st.ToString().c_str());
  if (st.ok() || !alloc->Free(p).ok()) return 3;

  RegionMemoryPool pool(alloc, 0);
  Int64Builder b(&pool);
  for (int64_t i = 0; i < 1000; ++i) (void)b.Append(i);
  auto array = b.Finish().ValueOrDie();
  const uint8_t* values = array->data()->buffers[1]->data();
  if (!(*cluster)->local_region()->Contains(values)) return 4;
  if (!coherence::FlushRange(values, 8000).ok()) return 5;
  std::printf("1000 int64 built at %p in node 0's region, flushed with %s\n",
              static_cast<const void*>(values),
              coherence::FlushMethodName(coherence::ActiveFlushMethod()));
  AllocatorStats s = alloc->Stats();
  std::printf("region: %llu bytes used in %llu allocations\n",
              static_cast<unsigned long long>(s.used),
              static_cast<unsigned long long>(s.live_allocations));
  return 0;
}
