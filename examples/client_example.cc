// The example of docs/control-plane.md, compiled and run by the test command.
// It starts a 2-node cluster on this host (two quiverd processes, with
// fresh credentials), builds a batch in node 1's memory from node 0,
// publishes it and reads it back zero-copy.
#include <cstdio>

#include "control/local_cluster.h"  // the test harness: stands in for real daemons
#include "quiver/client.h"
#include "quiver/columnar/builder.h"

using namespace quiver;

#define CHECK_OK(expr)                                                 \
  do {                                                                 \
    Status _st = (expr);                                               \
    if (!_st.ok()) {                                                   \
      std::fprintf(stderr, "%s: %s\n", #expr, _st.ToString().c_str()); \
      return 1;                                                        \
    }                                                                  \
  } while (false)

int main() {
  // A cluster of two daemons; in production each node runs
  // `quiverd --config cluster.toml --id N` and this step does not exist.
  control::LocalClusterOptions options;
  options.nodes = 2;
  options.region_size = 64ULL << 20;
  options.quiverd = QUIVER_BINARY_DIR "/quiverd";
  auto cluster = control::LocalCluster::Start(options);
  CHECK_OK(cluster.status());

  // A process of node 0.
  auto client = Client::Connect({(*cluster)->config_path(), /*node=*/0});
  CHECK_OK(client.status());
  auto& c = *client;
  CHECK_OK(c->WaitAllOnline(10000));

  // Build straight into node 1's memory (remote allocation).
  Int64Builder prices(c->pool(1));
  for (int64_t i = 0; i < 1000; ++i) CHECK_OK(prices.Append(i * 3));
  auto column = prices.Finish();
  CHECK_OK(column.status());
  auto batch = RecordBatch::FromArrays({"price"}, {*column});
  CHECK_OK(batch.status());

  // Seal and publish: a descriptor of a few hundred bytes goes to every node.
  CHECK_OK(c->Publish(*batch, "prices"));

  // Any process of any node gets it zero-copy: same addresses.
  auto table = c->Get("prices");
  CHECK_OK(table.status());
  auto got = std::static_pointer_cast<Int64Array>((*table)->column(0)->chunk(0));
  const bool same =
      got->raw_values() == std::static_pointer_cast<Int64Array>(*column)->raw_values();
  std::printf("rows %lld, value[999] %lld, zero-copy %s\n",
              static_cast<long long>((*table)->num_rows()),
              static_cast<long long>(got->Value(999)), same ? "yes" : "no");
  if (!same || got->Value(999) != 2997) return 1;

  // Unpublishing takes the name away at once; the memory stays while a
  // reader holds it (our `table` is one) and returns when the last goes.
  CHECK_OK(c->Unpublish("prices"));
  std::printf("unpublished; value[999] still reads %lld\n",
              static_cast<long long>(got->Value(999)));
  if (got->Value(999) != 2997) return 1;
  if (c->Get("prices").ok()) return 1;  // the name is gone
  got.reset();
  table = Status::Invalid("released");
  CHECK_OK(c->Close());  // sends the releases and frees now
  std::printf("released\n");
  return 0;
}
