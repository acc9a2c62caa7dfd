// The examples of README.md and docs/columnar.md, compiled and run by the
// test command (ctest -R example) so the documentation stays true.
#include <cstdio>

#include "quiver/columnar/builder.h"
#include "quiver/columnar/ipc.h"

using namespace quiver;

int main() {
  // README: build, serialize, read back zero-copy.
  Int64Builder ids;
  (void)ids.AppendValues({1, 2, 3}, {true, false, true});
  auto column = ids.Finish().ValueOrDie();
  auto batch = RecordBatch::FromArrays({"id"}, {column}).ValueOrDie();
  auto bytes = ipc::SerializeRecordBatch(*batch, ipc::IpcFormat::kStream).ValueOrDie();
  auto back = ipc::ReadTableFromBuffer(bytes).ValueOrDie();
  const uint8_t* p = back->column(0)->chunk(0)->data()->buffers[1]->data();
  if (p < bytes->data() || p >= bytes->data() + bytes->size()) return 1;
  if (!back->column(0)->chunk(0)->Equals(*column)) return 2;

  // docs/columnar.md: schemas and builders on a pool.
  auto s = schema({field("id", int64(), false), field("price", decimal128(12, 2)),
                   field("when", timestamp(TimeUnit::kMicro, "UTC")),
                   field("tags", list(utf8())), field("attrs", map(utf8(), float64())),
                   field("color", dictionary(int8(), utf8(), false))},
                  key_value_metadata({{"source", "example"}}));
  std::printf("%s\n", s->ToString().c_str());
  SystemMemoryPool pool;
  StringBuilder names(&pool);
  (void)names.AppendValues({"a", "b", "c"}, {true, false, true});
  ArrayPtr a = names.Finish().ValueOrDie();
  auto values = std::make_shared<Int32Builder>(&pool);
  ListBuilder lists(&pool, values);
  (void)lists.Append();
  (void)values->AppendValues({1, 2});
  (void)lists.AppendNull();
  ArrayPtr l = lists.Finish().ValueOrDie();
  std::printf("%s\n%s\n", a->ToString().c_str(), l->ToString().c_str());
  if (pool.bytes_allocated() == 0) return 3;  // the builders used our pool
  auto any = MakeBuilder(map(utf8(), int64()), &pool);
  if (!any.ok()) return 4;
  return MakeDecimal128(39, 0).ok() ? 5 : 0;
}
