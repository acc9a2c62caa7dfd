// The example of docs/store.md, compiled and run by the test command.
// It starts a 2-node cluster on this host, puts an object and a table from
// a process of node 0, gets them back from a second store (as another
// process would), follows the events, and deletes them.
#include <cstdio>
#include <cstring>

#include "control/local_cluster.h"  // the test harness: stands in for real daemons
#include "quiver/client.h"
#include "quiver/columnar/builder.h"
#include "quiver/store.h"

using namespace quiver;
using store::ObjectId;

#define CHECK_OK(expr)                                                 \
  do {                                                                 \
    Status _st = (expr);                                               \
    if (!_st.ok()) {                                                   \
      std::fprintf(stderr, "%s: %s\n", #expr, _st.ToString().c_str()); \
      return 1;                                                        \
    }                                                                  \
  } while (false)

int main() {
  // In production each node runs `quiverd --config cluster.toml --id N`.
  control::LocalClusterOptions options;
  options.nodes = 2;
  options.region_size = 64ULL << 20;
  options.quiverd = QUIVER_BINARY_DIR "/quiverd";
  auto cluster = control::LocalCluster::Start(options);
  CHECK_OK(cluster.status());
  auto client = Client::Connect({(*cluster)->config_path(), /*node=*/0});
  CHECK_OK(client.status());
  CHECK_OK((*client)->WaitAllOnline(10000));
  store::ObjectStore objects(**client);
  auto sub = objects.Subscribe();  // seal/delete/evict events of every node
  CHECK_OK(sub.status());

  // Create, write, seal: the bytes are written once, in cluster memory.
  const ObjectId id = ObjectId::FromName("features");
  auto buf = objects.Create(id, 1 << 20, /*metadata=*/"v1");
  CHECK_OK(buf.status());
  std::memset((*buf)->mutable_data(), 7, 1 << 20);
  CHECK_OK(objects.Seal(id));
  // Small objects: one round trip, written and sealed by their home.
  CHECK_OK(objects.CreateAndSeal(ObjectId::FromName("tiny"), "hello", "", {.node = 1}));

  // A table, read back zero-copy.
  Int64Builder prices((*client)->pool(0));
  for (int64_t i = 0; i < 1000; ++i) CHECK_OK(prices.Append(i * 3));
  auto column = prices.Finish();
  CHECK_OK(column.status());
  auto batch = RecordBatch::FromArrays({"price"}, {*column});
  CHECK_OK(batch.status());
  auto table = Table::FromRecordBatches({*batch});
  CHECK_OK(table.status());
  const ObjectId t = ObjectId::FromName("prices");
  CHECK_OK(objects.PutTable(t, **table).status());

  // Another store (another process would do the same): one round trip per
  // home for the whole batch, zero-copy, pinned until released.
  store::ObjectStore reader(**client);
  auto got = reader.Get({id, ObjectId::FromName("tiny")}, /*timeout_ms=*/1000);
  CHECK_OK(got.status());
  for (const auto& o : *got) CHECK_OK(o.status);
  const auto& f = (*got)[0];
  const auto& tiny = (*got)[1];
  auto back = reader.GetTable(t);
  CHECK_OK(back.status());
  auto col = std::static_pointer_cast<Int64Array>((*back)->column(0)->chunk(0));
  std::printf(
      "features: %lld bytes of %d, metadata %s; tiny: '%s' at node %u; "
      "prices: %lld rows, price[999] %lld\n",
      static_cast<long long>(f.data->size()), f.data->data()[0],
      std::string(f.metadata->view()).c_str(), std::string(tiny.data->view()).c_str(),
      tiny.home, static_cast<long long>((*back)->num_rows()),
      static_cast<long long>(col->Value(999)));
  if (f.data->data()[12345] != 7 || tiny.data->view() != "hello" || tiny.home != 1 ||
      col->Value(999) != 2997) {
    return 1;
  }
  CHECK_OK(reader.Release(id));
  CHECK_OK(reader.Release(ObjectId::FromName("tiny")));

  // Deleting: readers keep their bytes; the memory returns after them.
  CHECK_OK(objects.Delete({id, ObjectId::FromName("tiny")}));
  CHECK_OK(objects.DeleteTable(t));
  auto events = (*sub)->Next(/*timeout_ms=*/2000);
  CHECK_OK(events.status());
  std::printf("%zu events so far; resume from \"%s\"\n", events->size(),
              (*sub)->cursor().ToString().c_str());
  return events->empty() ? 1 : 0;
}
