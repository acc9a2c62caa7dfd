// Arrow IPC write and read, each beside its reference from the same run.
//   - Write the thesis's Figure 5.1 table (int64, int8, uint16; 150 * 2^20
//     rows, 1.73 GB) as an IPC stream and as an IPC file into preallocated
//     memory, beside memcpy of the same column bytes into the same memory.
//   - Read an IPC stream from memory of 1 MiB and of 1 GiB: zero-copy reading
//     costs the same whatever the size (the reference is the 1 MiB read).
// QUIVER_BENCH_ROWS overrides the row count (the quick suite uses fewer).
#include <cstdlib>
#include <cstring>
#include <map>

#include "bench_util.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/ipc.h"

namespace quiver {
namespace {

// The table: one record batch per column chunk of 2^24 rows.
TablePtr MakeThesisTable(int64_t rows) {
  auto s = schema({field("a", int64()), field("b", int8()), field("c", uint16())});
  std::vector<RecordBatchPtr> batches;
  const int64_t chunk = 1 << 24;
  for (int64_t first = 0; first < rows; first += chunk) {
    const int64_t n = std::min(chunk, rows - first);
    batches.push_back(bench::MakeThesisBatch(first, n));
  }
  return Table::FromRecordBatches(batches, s).ValueOrDie();
}

struct WriteFixture {
  static WriteFixture& Get() {
    static WriteFixture* f = new WriteFixture();
    return *f;
  }
  TablePtr table;
  int64_t column_bytes = 0;
  int64_t capacity = 0;
  uint8_t* out = nullptr;

 private:
  WriteFixture() {
    table = MakeThesisTable(bench::BenchRows(150LL * 1024 * 1024));
    for (const auto& col : table->columns()) {
      for (const auto& chunk : col->chunks()) {
        column_bytes += chunk->data()->buffers[1]->size();
      }
    }
    capacity =
        std::max(ipc::GetSerializedSize(*table, ipc::IpcFormat::kStream).ValueOrDie(),
                 ipc::GetSerializedSize(*table, ipc::IpcFormat::kFile).ValueOrDie());
    out =
        static_cast<uint8_t*>(std::aligned_alloc(4096, (capacity + 4095) / 4096 * 4096));
    std::memset(out, 0, capacity);  // fault in every page before timing
  }
};

void BM_MemcpyColumns(benchmark::State& state) {
  auto& f = WriteFixture::Get();
  for (auto _ : state) {
    uint8_t* dst = f.out;
    for (const auto& col : f.table->columns()) {
      for (const auto& chunk : col->chunks()) {
        const auto& buf = chunk->data()->buffers[1];
        std::memcpy(dst, buf->data(), buf->size());
        dst += buf->size();
      }
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * f.column_bytes);
  state.counters["rows"] = static_cast<double>(f.table->num_rows());
}

void BM_IpcWrite(benchmark::State& state) {
  auto& f = WriteFixture::Get();
  const auto format = static_cast<ipc::IpcFormat>(state.range(0));
  int64_t written = 0;
  for (auto _ : state) {
    io::FixedSizeBufferWriter sink(f.out, f.capacity);
    Status st = ipc::WriteTable(*f.table, format, &sink);
    if (!st.ok()) state.SkipWithError(st.ToString().c_str());
    written = sink.Tell().ValueOrDie();
  }
  // Column bytes, as memcpy: the ratio is then the cost of the format.
  state.SetBytesProcessed(state.iterations() * f.column_bytes);
  state.counters["ipc_bytes"] = static_cast<double>(written);
}

// A stream of about `bytes` bytes (int64 column), serialized once.
std::shared_ptr<Buffer> StreamOfSize(int64_t bytes) {
  static std::map<int64_t, std::shared_ptr<Buffer>> cache;
  auto& slot = cache[bytes];
  if (!slot) {
    Int64Builder b;
    const int64_t n = bytes / 8;
    (void)b.Reserve(n);
    for (int64_t i = 0; i < n; ++i) b.UnsafeAppend(i);
    auto table =
        Table::FromRecordBatches(
            {RecordBatch::FromArrays({"v"}, {b.Finish().ValueOrDie()}).ValueOrDie()})
            .ValueOrDie();
    slot = ipc::SerializeTable(*table, ipc::IpcFormat::kStream).ValueOrDie();
  }
  return slot;
}

void BM_IpcReadStream(benchmark::State& state) {
  auto data = StreamOfSize(state.range(0));
  for (auto _ : state) {
    auto table = ipc::ReadTableFromBuffer(data).ValueOrDie();
    benchmark::DoNotOptimize(table);
    // Zero-copy: the column's values are the input's bytes.
    const uint8_t* p = table->column(0)->chunk(0)->data()->buffers[1]->data();
    if (p < data->data() || p >= data->data() + data->size()) {
      state.SkipWithError("read copied the data");
    }
  }
  state.counters["stream_bytes"] = static_cast<double>(data->size());
}

BENCHMARK(BM_MemcpyColumns)->Iterations(3)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_IpcWrite)
    ->ArgName("file")
    ->Arg(static_cast<int>(ipc::IpcFormat::kStream))
    ->Arg(static_cast<int>(ipc::IpcFormat::kFile))
    ->Iterations(3)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_IpcReadStream)->Arg(1 << 20)->Arg(1 << 30)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace quiver

int main(int argc, char** argv) {
  return quiver::bench::RunWithRatios(
      argc, argv,
      {{"BM_IpcWrite/file:0", "BM_MemcpyColumns"},
       {"BM_IpcWrite/file:1", "BM_MemcpyColumns"},
       {"BM_IpcReadStream/1073741824", "BM_IpcReadStream/1048576", "time"}});
}
