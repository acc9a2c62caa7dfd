// Descriptor encode and decode beside Arrow IPC stream serialisation and
// read-back of the same batch, measured in the same run (the thesis's
// Table 5.3).
//
// The batch: 3 columns (int64, int8, uint16), 2^20 rows, no nulls.
//   - BM_DescriptorEncode: EncodeDescriptor (metadata and addresses only)
//     vs BM_IpcSerialize: SerializeRecordBatch as a stream (copies 11 MB).
//   - BM_DescriptorDecode: DecodeDescriptor with a bounds-checking validator
//     (zero-copy) vs BM_IpcReadBack: reading the serialised stream back from
//     memory (also zero-copy).
//   - BM_DissociatedEncode / BM_DissociatedDecode: the same messages through
//     the protocol's streaming classes, one message at a time, as the
//     transport sends them (schema, batch with a type-1 body, end; the reader
//     resolves addresses zero-copy), beside the descriptor that frames them
//     in one byte string and checks every buffer first.
// Counters: descriptor_bytes and ipc_bytes, the sizes of what travels.
// QUIVER_BENCH_ROWS overrides the row count.
#include <cstdlib>
#include <vector>

#include "bench_util.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/ipc.h"
#include "quiver/columnar/ipc/dissociated.h"
#include "quiver/control/descriptor.h"

namespace quiver {
namespace {

struct Fixture {
  static Fixture& Get() {
    static Fixture* f = new Fixture();
    return *f;
  }
  RecordBatchPtr batch;
  std::string descriptor;
  std::vector<control::BufferRange> ranges;
  std::shared_ptr<Buffer> stream;
  uint64_t lo = ~uint64_t{0}, hi = 0;  // the span the batch's buffers cover

 private:
  Fixture() {
    const int64_t n = bench::BenchRows(int64_t{1} << 20);
    batch = bench::MakeThesisBatch(0, n);
    descriptor = control::EncodeDescriptor(*batch, nullptr, &ranges).ValueOrDie();
    for (const auto& r : ranges) {
      lo = std::min(lo, r.address);
      hi = std::max(hi, r.address + r.length);
    }
    stream = ipc::SerializeRecordBatch(*batch, ipc::IpcFormat::kStream).ValueOrDie();
  }
};

void BM_DescriptorEncode(benchmark::State& state) {
  auto& f = Fixture::Get();
  std::vector<control::BufferRange> ranges;
  size_t size = 0;
  for (auto _ : state) {
    ranges.clear();
    auto bytes = control::EncodeDescriptor(*f.batch, nullptr, &ranges);
    if (!bytes.ok()) state.SkipWithError(bytes.status().ToString().c_str());
    size = bytes->size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["descriptor_bytes"] = static_cast<double>(size);
  state.counters["rows"] = static_cast<double>(f.batch->num_rows());
}

void BM_IpcSerialize(benchmark::State& state) {
  auto& f = Fixture::Get();
  int64_t size = 0;
  for (auto _ : state) {
    auto bytes = ipc::SerializeRecordBatch(*f.batch, ipc::IpcFormat::kStream);
    if (!bytes.ok()) state.SkipWithError(bytes.status().ToString().c_str());
    size = (*bytes)->size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["ipc_bytes"] = static_cast<double>(size);
  state.counters["rows"] = static_cast<double>(f.batch->num_rows());
}

void BM_DescriptorDecode(benchmark::State& state) {
  auto& f = Fixture::Get();
  // What a receiver checks at least: the range lies in known memory.
  control::RangeValidator validator = [&f](uint64_t address, uint64_t length) {
    if (address < f.lo || address + length > f.hi) {
      return Status::Invalid("range outside the batch");
    }
    return Status::OK();
  };
  for (auto _ : state) {
    auto batch = control::DecodeDescriptor(f.descriptor, validator, nullptr);
    if (!batch.ok()) {
      state.SkipWithError(batch.status().ToString().c_str());
      break;
    }
    // Zero-copy: the values are the original buffer.
    if ((*batch)->column_data(0)->buffers[1]->data() !=
        f.batch->column_data(0)->buffers[1]->data()) {
      state.SkipWithError("decode copied the data");
    }
    benchmark::DoNotOptimize(batch);
  }
  state.counters["descriptor_bytes"] = static_cast<double>(f.descriptor.size());
}

void BM_IpcReadBack(benchmark::State& state) {
  auto& f = Fixture::Get();
  for (auto _ : state) {
    auto reader = ipc::RecordBatchStreamReader::Open(f.stream);
    if (!reader.ok()) {
      state.SkipWithError(reader.status().ToString().c_str());
      break;
    }
    auto batch = (*reader)->Next();
    if (!batch.ok() || *batch == nullptr) {
      state.SkipWithError("no batch read back");
      break;
    }
    benchmark::DoNotOptimize(batch);
  }
  state.counters["ipc_bytes"] = static_cast<double>(f.stream->size());
}

namespace dis = ipc::dissociated;

// The whole conversation of one batch: what travels, and the writer's
// buffers (alive while the reader uses them).
struct Conversation {
  std::vector<std::string> metadata;
  uint64_t tag = 0;
  std::shared_ptr<Buffer> body;
  size_t bytes = 0;
};

Result<Conversation> Speak(const RecordBatch& batch) {
  Conversation c;
  QUIVER_ASSIGN_OR_RAISE(
      auto w, dis::StreamWriter::Make(batch.schema(), dis::BodyType::kAddresses));
  QUIVER_ASSIGN_OR_RAISE(auto begin, w->Begin());
  c.metadata.push_back(std::move(begin.metadata));
  QUIVER_ASSIGN_OR_RAISE(auto out, w->Write(batch));
  for (auto& o : out) {
    c.metadata.push_back(std::move(o.metadata));
    c.tag = o.tag;
    c.body = Buffer::FromString(std::move(o.body));
  }
  QUIVER_ASSIGN_OR_RAISE(auto end, w->End());
  c.metadata.push_back(std::move(end.metadata));
  for (const auto& m : c.metadata) c.bytes += m.size();
  c.bytes += static_cast<size_t>(c.body->size());
  return c;
}

void BM_DissociatedEncode(benchmark::State& state) {
  auto& f = Fixture::Get();
  size_t size = 0;
  for (auto _ : state) {
    auto c = Speak(*f.batch);
    if (!c.ok()) {
      state.SkipWithError(c.status().ToString().c_str());
      break;
    }
    size = c->bytes;
    benchmark::DoNotOptimize(c);
  }
  state.counters["descriptor_bytes"] = static_cast<double>(size);
}

void BM_DissociatedDecode(benchmark::State& state) {
  auto& f = Fixture::Get();
  auto c = Speak(*f.batch);
  if (!c.ok()) return state.SkipWithError(c.status().ToString().c_str());
  // The same check as the descriptor's validator, then the bytes in place.
  auto resolve = [&f](uint64_t address,
                      uint64_t length) -> Result<std::shared_ptr<Buffer>> {
    if (address < f.lo || address + length > f.hi) {
      return Status::Invalid("range outside the batch");
    }
    return Buffer::Wrap(reinterpret_cast<const uint8_t*>(address),
                        static_cast<int64_t>(length));
  };
  for (auto _ : state) {
    dis::StreamReader reader(resolve);
    Status st;
    for (const auto& m : c->metadata) {
      if (st.ok()) st = reader.OnMetadata(m);
    }
    if (st.ok()) st = reader.OnBody(c->tag, c->body);
    auto batch = reader.Next();
    if (!st.ok() || !batch.ok() || !batch->has_value()) {
      state.SkipWithError("the dissociated stream did not decode");
      break;
    }
    if ((**batch)->column_data(0)->buffers[1]->data() !=
        f.batch->column_data(0)->buffers[1]->data()) {
      state.SkipWithError("decode copied the data");
    }
    benchmark::DoNotOptimize(batch);
  }
  state.counters["descriptor_bytes"] = static_cast<double>(c->bytes);
}

BENCHMARK(BM_DescriptorEncode)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DissociatedEncode)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DissociatedDecode)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_IpcSerialize)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DescriptorDecode)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_IpcReadBack)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace quiver

int main(int argc, char** argv) {
  // For times, a ratio below 1 means "faster than the reference".
  return quiver::bench::RunWithRatios(
      argc, argv,
      {{"BM_DescriptorEncode", "BM_IpcSerialize", "time"},
       {"BM_DescriptorDecode", "BM_IpcReadBack", "time"},
       {"BM_DissociatedEncode", "BM_DescriptorEncode", "time"},
       {"BM_DissociatedDecode", "BM_DescriptorDecode", "time"}});
}
