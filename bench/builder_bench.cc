// Builder append throughput per type, each beside memcpy of the bytes the
// builder produces (the floor of any way to fill those buffers).
#include <cstring>
#include <random>
#include <vector>

#include "bench_util.h"
#include "quiver/columnar/builder.h"

namespace quiver {
namespace {

constexpr int64_t kRows = 1 << 20;

// memcpy of `bytes` per iteration: the reference for each builder.
void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(bytes, 1), dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

template <typename Tag>
void BM_AppendOneByOne(benchmark::State& state) {
  using T = typename Tag::c_type;
  std::vector<T> values(kRows);
  for (int64_t i = 0; i < kRows; ++i) values[i] = static_cast<T>(i * 2654435761u);
  NumericBuilder<Tag> b;
  for (auto _ : state) {
    for (int64_t i = 0; i < kRows; ++i) {
      if (!b.Append(values[i]).ok()) state.SkipWithError("append failed");
    }
    auto arr = b.Finish();
    benchmark::DoNotOptimize(arr);
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * kRows * static_cast<int64_t>(sizeof(T)));
}

template <typename Tag>
void BM_AppendValuesBulk(benchmark::State& state) {
  using T = typename Tag::c_type;
  std::vector<T> values(kRows);
  for (int64_t i = 0; i < kRows; ++i) values[i] = static_cast<T>(i);
  NumericBuilder<Tag> b;
  for (auto _ : state) {
    if (!b.AppendValues(values.data(), kRows).ok()) state.SkipWithError("append failed");
    auto arr = b.Finish();
    benchmark::DoNotOptimize(arr);
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * kRows * static_cast<int64_t>(sizeof(T)));
}

void BM_AppendBoolean(benchmark::State& state) {
  BooleanBuilder b;
  for (auto _ : state) {
    for (int64_t i = 0; i < kRows; ++i) {
      if (!b.Append((i & 3) == 0).ok()) state.SkipWithError("append failed");
    }
    auto arr = b.Finish();
    benchmark::DoNotOptimize(arr);
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * kRows / 8);
}

void BM_AppendWithNulls(benchmark::State& state) {
  Int64Builder b;
  for (auto _ : state) {
    for (int64_t i = 0; i < kRows; ++i) {
      Status st = (i % 10 == 0) ? b.AppendNull() : b.Append(i);
      if (!st.ok()) state.SkipWithError("append failed");
    }
    auto arr = b.Finish();
    benchmark::DoNotOptimize(arr);
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * kRows * 8);
}

template <typename BuilderT>
void BM_AppendStrings(benchmark::State& state) {
  std::vector<std::string> strings;
  int64_t bytes = 0;
  for (int64_t i = 0; i < kRows; ++i) {
    strings.push_back("value-" + std::to_string(i));
    bytes += static_cast<int64_t>(strings.back().size());
  }
  BuilderT b;
  for (auto _ : state) {
    for (const auto& s : strings) {
      if (!b.Append(s).ok()) state.SkipWithError("append failed");
    }
    auto arr = b.Finish();
    benchmark::DoNotOptimize(arr);
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["value_bytes"] = static_cast<double>(bytes);
}

void BM_AppendFixedSizeBinary(benchmark::State& state) {
  FixedSizeBinaryBuilder b(fixed_size_binary(16));
  uint8_t value[16] = {1, 2, 3};
  for (auto _ : state) {
    for (int64_t i = 0; i < kRows; ++i) {
      value[0] = static_cast<uint8_t>(i);
      if (!b.Append(value).ok()) state.SkipWithError("append failed");
    }
    auto arr = b.Finish();
    benchmark::DoNotOptimize(arr);
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * kRows * 16);
}

void BM_AppendDecimal128(benchmark::State& state) {
  Decimal128Builder b(decimal128(38, 4));
  for (auto _ : state) {
    for (int64_t i = 0; i < kRows; ++i) {
      if (!b.Append(Decimal128(i)).ok()) state.SkipWithError("append failed");
    }
    auto arr = b.Finish();
    benchmark::DoNotOptimize(arr);
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * kRows * 16);
}

void BM_AppendListOfInt32(benchmark::State& state) {
  auto values = std::make_shared<Int32Builder>();
  ListBuilder b(nullptr, values);
  for (auto _ : state) {
    for (int64_t i = 0; i < kRows / 4; ++i) {
      if (!b.Append().ok()) state.SkipWithError("append failed");
      for (int j = 0; j < 4; ++j) (void)values->Append(static_cast<int32_t>(i + j));
    }
    auto arr = b.Finish();
    benchmark::DoNotOptimize(arr);
  }
  state.SetItemsProcessed(state.iterations() * kRows);  // child values
  state.SetBytesProcessed(state.iterations() * (kRows * 4 + kRows));
}

void BM_AppendStruct(benchmark::State& state) {
  auto type = struct_({field("a", int64()), field("b", float64())});
  auto builder = MakeBuilder(type).ValueOrDie();
  auto* s = static_cast<StructBuilder*>(builder.get());
  auto* a = static_cast<Int64Builder*>(s->field_builder(0));
  auto* d = static_cast<DoubleBuilder*>(s->field_builder(1));
  for (auto _ : state) {
    for (int64_t i = 0; i < kRows; ++i) {
      (void)s->Append();
      (void)a->Append(i);
      (void)d->Append(static_cast<double>(i));
    }
    auto arr = s->Finish();
    benchmark::DoNotOptimize(arr);
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * kRows * 16);
}

void BM_AppendDictionaryStrings(benchmark::State& state) {
  std::vector<std::string> words;
  for (int i = 0; i < 100; ++i) words.push_back("category-" + std::to_string(i));
  DictionaryBuilder b(dictionary(int32(), utf8()));
  for (auto _ : state) {
    for (int64_t i = 0; i < kRows; ++i) {
      if (!b.Append(std::string_view(words[i % 100])).ok()) state.SkipWithError("append");
    }
    auto arr = b.Finish();
    benchmark::DoNotOptimize(arr);
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * kRows * 4);  // index bytes produced
}

BENCHMARK(BM_Memcpy)
    ->Arg(kRows)
    ->Arg(kRows * 2)
    ->Arg(kRows * 4)
    ->Arg(kRows * 8)
    ->Arg(kRows * 16)
    ->Arg(kRows / 8);
BENCHMARK_TEMPLATE(BM_AppendOneByOne, Int8Type);
BENCHMARK_TEMPLATE(BM_AppendOneByOne, UInt16Type);
BENCHMARK_TEMPLATE(BM_AppendOneByOne, Int32Type);
BENCHMARK_TEMPLATE(BM_AppendOneByOne, Int64Type);
BENCHMARK_TEMPLATE(BM_AppendOneByOne, FloatType);
BENCHMARK_TEMPLATE(BM_AppendOneByOne, DoubleType);
BENCHMARK_TEMPLATE(BM_AppendOneByOne, HalfFloatType);
BENCHMARK_TEMPLATE(BM_AppendOneByOne, TimestampType);
BENCHMARK_TEMPLATE(BM_AppendValuesBulk, Int8Type);
BENCHMARK_TEMPLATE(BM_AppendValuesBulk, Int64Type);
BENCHMARK_TEMPLATE(BM_AppendValuesBulk, DoubleType);
BENCHMARK(BM_AppendBoolean);
BENCHMARK(BM_AppendWithNulls);
BENCHMARK_TEMPLATE(BM_AppendStrings, StringBuilder);
BENCHMARK_TEMPLATE(BM_AppendStrings, LargeBinaryBuilder);
BENCHMARK(BM_AppendFixedSizeBinary);
BENCHMARK(BM_AppendDecimal128);
BENCHMARK(BM_AppendListOfInt32);
BENCHMARK(BM_AppendStruct);
BENCHMARK(BM_AppendDictionaryStrings);

}  // namespace
}  // namespace quiver

int main(int argc, char** argv) {
  using quiver::bench::RatioSpec;
  const std::string m = "BM_Memcpy/";
  auto bytes = [](int64_t b) { return std::to_string(b); };
  const int64_t n = quiver::kRows;
  return quiver::bench::RunWithRatios(
      argc, argv,
      {{"BM_AppendOneByOne<Int8Type>", m + bytes(n)},
       {"BM_AppendOneByOne<UInt16Type>", m + bytes(n * 2)},
       {"BM_AppendOneByOne<Int32Type>", m + bytes(n * 4)},
       {"BM_AppendOneByOne<Int64Type>", m + bytes(n * 8)},
       {"BM_AppendOneByOne<FloatType>", m + bytes(n * 4)},
       {"BM_AppendOneByOne<DoubleType>", m + bytes(n * 8)},
       {"BM_AppendOneByOne<HalfFloatType>", m + bytes(n * 2)},
       {"BM_AppendOneByOne<TimestampType>", m + bytes(n * 8)},
       {"BM_AppendValuesBulk<Int8Type>", m + bytes(n)},
       {"BM_AppendValuesBulk<Int64Type>", m + bytes(n * 8)},
       {"BM_AppendValuesBulk<DoubleType>", m + bytes(n * 8)},
       {"BM_AppendBoolean", m + bytes(n / 8)},
       {"BM_AppendWithNulls", m + bytes(n * 8)},
       {"BM_AppendFixedSizeBinary", m + bytes(n * 16)},
       {"BM_AppendDecimal128", m + bytes(n * 16)},
       {"BM_AppendStruct", m + bytes(n * 16)},
       {"BM_AppendDictionaryStrings", m + bytes(n * 4)}});
}
