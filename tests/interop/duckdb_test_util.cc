#include "duckdb_test_util.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "quiver/columnar/builder.h"
#include "quiver/columnar/pretty_print.h"

namespace quiver::duckdb_test {

namespace {

// Rows every source array holds before the rows of the table, so that
// every batch is a slice at a non-zero offset.
constexpr int64_t kPad = 5;

// Null for one row in `every` (shifted so that row 0 is not always null).
template <typename T>
Opt<T> Maybe(int64_t i, int64_t every, T value) {
  return (i + 1) % every == 0 ? Opt<T>() : Opt<T>(std::move(value));
}

int64_t Scale(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond:
      return 1;
    case TimeUnit::kMilli:
      return 1000;
    case TimeUnit::kMicro:
      return 1000000;
    case TimeUnit::kNano:
      return 1000000000;
  }
  return 1;
}

}  // namespace

Opt<int64_t> SourceData::Timestamp(int64_t i, TimeUnit unit) const {
  if (!secs[i]) return {};
  const int64_t scale = Scale(unit);
  return *secs[i] * scale + (i * 7919) % scale;
}

SourceData MakeSourceData(int64_t rows) {
  SourceData d;
  for (int64_t i = 0; i < rows; ++i) {
    d.id.push_back(i);
    d.flag.push_back(Maybe(i, 11, i % 3 == 0));
    d.i8.push_back(Maybe(i, 13, static_cast<int8_t>((i * 7) % 256 - 128)));
    d.i16.push_back(Maybe(i, 17, static_cast<int16_t>((i * 31) % 65536 - 32768)));
    d.i32.push_back(
        Maybe(i, 19, static_cast<int32_t>((i * 1000003) % 2000000000 - 999999999)));
    d.i64.push_back(Maybe(i, 23, (i * 1234567891011LL) * (i % 2 == 0 ? 1 : -1)));
    d.u8.push_back(Maybe(i, 29, static_cast<uint8_t>(i * 13)));
    d.u16.push_back(Maybe(i, 31, static_cast<uint16_t>(i * 977)));
    d.u32.push_back(Maybe(i, 37, static_cast<uint32_t>(i * 2654435761ULL)));
    // Up to 1.84e19: values beyond the int64 range are there.
    d.u64.push_back(Maybe(i, 41, static_cast<uint64_t>(i % 10007) * 1843000000000000ULL));
    d.f32.push_back(Maybe(i, 43, static_cast<float>(i % 2001 - 1000) * 0.5f));
    d.f64.push_back(Maybe(i, 47, static_cast<double>(i % 40001 - 20000) * 0.25));
    d.dec.push_back(Maybe(i, 53, (i * 7919) % 2000000 - 1000000));
    d.days.push_back(Maybe(i, 59, static_cast<int32_t>(i - 5000)));
    d.time_ms.push_back(Maybe(i, 61, static_cast<int32_t>((i * 7777) % 86400000)));
    d.time_us.push_back(Maybe(i, 67, (i * 7777777LL) % 86400000000LL));
    d.secs.push_back(Maybe(i, 71, 946684800 + i * 86399));
    d.dur_us.push_back(Maybe(i, 73, i * 1000003 - 5000000000LL));
    d.dur_ms.push_back(Maybe(i, 79, i * 3601));
    std::string s = i % 41 == 0 ? "" : "s" + std::to_string((i * 7) % 1000);
    if (i % 5 == 0) s += "\xC3\xA9";  // é
    d.str.push_back(Maybe(i, 83, s));
    d.bin.push_back(Maybe(
        i, 89, std::string{static_cast<char>(i & 0xff), '\0', static_cast<char>(i * 3)}));
    d.fixed.push_back(
        Maybe(i, 97,
              std::string{static_cast<char>(i & 0xff), static_cast<char>((i >> 8) & 0xff),
                          '\xAB', '\0'}));
    IntList list;
    for (int64_t j = 0; j < i % 4; ++j) {
      list.push_back(j == 1 && i % 5 == 0 ? Opt<int32_t>() : Opt<int32_t>(i * 10 + j));
    }
    d.lists.push_back(Maybe(i, 101, list));
    d.pairs.push_back(Maybe(
        i, 103,
        std::array<Opt<int32_t>, 2>{static_cast<int32_t>(i),
                                    i % 3 == 0 ? Opt<int32_t>() : Opt<int32_t>(-i)}));
    d.structs.push_back(
        Maybe(i, 107,
              std::make_pair(i % 4 == 0 ? Opt<int32_t>() : Opt<int32_t>(i * 3),
                             Opt<std::string>("b" + std::to_string(i % 100)))));
    MapEntries entries;
    for (int64_t j = 0; j < i % 3; ++j) {
      entries.emplace_back("k" + std::to_string(j),
                           (i + j) % 5 == 0 ? Opt<int32_t>() : Opt<int32_t>(i + j));
    }
    d.maps.push_back(Maybe(i, 109, entries));
    d.dict.push_back(Maybe(i, 113, "d" + std::to_string(i % 7)));
  }
  return d;
}

// ---- Building the Quiver table ----

namespace {

using Builder = std::function<Result<ArrayPtr>(const SourceData&, const TypePtr&)>;

template <typename T, typename F>
Result<ArrayPtr> BuildColumn(const TypePtr& type, const std::vector<Opt<T>>& v,
                             F append) {
  QUIVER_ASSIGN_OR_RAISE(auto b, MakeBuilder(type));
  auto put = [&](const Opt<T>& x) -> Status {
    return x ? append(b.get(), *x) : b->AppendNull();
  };
  for (int64_t j = 0; j < kPad; ++j) {
    QUIVER_RETURN_NOT_OK(put(v[(j * 7919) % v.size()]));
  }
  for (const auto& x : v) QUIVER_RETURN_NOT_OK(put(x));
  return b->Finish();
}

template <typename Tag, typename T>
Builder Numeric(std::vector<Opt<T>> SourceData::*member, int64_t factor = 1) {
  return [member, factor](const SourceData& d, const TypePtr& type) {
    return BuildColumn(type, d.*member, [factor](ArrayBuilder* b, T x) {
      using C = typename Tag::c_type;
      return static_cast<NumericBuilder<Tag>*>(b)->Append(static_cast<C>(x) *
                                                          static_cast<C>(factor));
    });
  };
}

Builder Timestamps(TimeUnit unit) {
  return [unit](const SourceData& d, const TypePtr& type) {
    std::vector<Opt<int64_t>> ts;
    for (int64_t i = 0; i < d.rows(); ++i) ts.push_back(d.Timestamp(i, unit));
    return BuildColumn(type, ts, [](ArrayBuilder* b, int64_t x) {
      return static_cast<TimestampBuilder*>(b)->Append(x);
    });
  };
}

template <typename Offset>
Builder Bytes(std::vector<Opt<std::string>> SourceData::*member) {
  return [member](const SourceData& d, const TypePtr& type) {
    return BuildColumn(type, d.*member, [](ArrayBuilder* b, const std::string& x) {
      return static_cast<BaseBinaryBuilder<Offset>*>(b)->Append(x);
    });
  };
}

Status AppendInt(ArrayBuilder* b, const Opt<int32_t>& v) {
  return v ? static_cast<Int32Builder*>(b)->Append(*v) : b->AppendNull();
}

template <typename ListB>
Builder Lists() {
  return [](const SourceData& d, const TypePtr& type) {
    return BuildColumn(type, d.lists, [](ArrayBuilder* b, const IntList& l) {
      QUIVER_RETURN_NOT_OK(static_cast<ListB*>(b)->Append());
      for (const auto& v : l) QUIVER_RETURN_NOT_OK(AppendInt(b->child(0), v));
      return Status::OK();
    });
  };
}

Result<ArrayPtr> BuildPairs(const SourceData& d, const TypePtr& type) {
  return BuildColumn(type, d.pairs, [](ArrayBuilder* b, const auto& p) {
    QUIVER_RETURN_NOT_OK(static_cast<FixedSizeListBuilder*>(b)->Append());
    QUIVER_RETURN_NOT_OK(AppendInt(b->child(0), p[0]));
    return AppendInt(b->child(0), p[1]);
  });
}

Result<ArrayPtr> BuildStructs(const SourceData& d, const TypePtr& type) {
  return BuildColumn(type, d.structs, [](ArrayBuilder* b, const auto& s) {
    auto* sb = static_cast<StructBuilder*>(b);
    QUIVER_RETURN_NOT_OK(sb->Append());
    QUIVER_RETURN_NOT_OK(AppendInt(sb->field_builder(0), s.first));
    auto* strings = static_cast<BaseBinaryBuilder<int32_t>*>(sb->field_builder(1));
    return s.second ? strings->Append(*s.second) : strings->AppendNull();
  });
}

Result<ArrayPtr> BuildMaps(const SourceData& d, const TypePtr& type) {
  return BuildColumn(type, d.maps, [](ArrayBuilder* b, const MapEntries& m) {
    auto* mb = static_cast<MapBuilder*>(b);
    QUIVER_RETURN_NOT_OK(mb->Append());
    for (const auto& [key, value] : m) {
      QUIVER_RETURN_NOT_OK(
          static_cast<BaseBinaryBuilder<int32_t>*>(mb->key_builder())->Append(key));
      QUIVER_RETURN_NOT_OK(AppendInt(mb->item_builder(), value));
    }
    return Status::OK();
  });
}

struct ColumnDef {
  std::string name;
  TypePtr type;
  Builder build;
};

const std::vector<ColumnDef>& Columns() {
  using S = SourceData;
  static const std::vector<ColumnDef> columns = {
      {"id", int64(),
       [](const S& d, const TypePtr& t) {
         std::vector<Opt<int64_t>> ids(d.id.begin(), d.id.end());
         return BuildColumn(t, ids, [](ArrayBuilder* b, int64_t x) {
           return static_cast<Int64Builder*>(b)->Append(x);
         });
       }},
      {"flag", boolean(),
       [](const S& d, const TypePtr& t) {
         return BuildColumn(t, d.flag, [](ArrayBuilder* b, bool x) {
           return static_cast<BooleanBuilder*>(b)->Append(x);
         });
       }},
      {"i8", int8(), Numeric<Int8Type>(&S::i8)},
      {"i16", int16(), Numeric<Int16Type>(&S::i16)},
      {"i32", int32(), Numeric<Int32Type>(&S::i32)},
      {"i64", int64(), Numeric<Int64Type>(&S::i64)},
      {"u8", uint8(), Numeric<UInt8Type>(&S::u8)},
      {"u16", uint16(), Numeric<UInt16Type>(&S::u16)},
      {"u32", uint32(), Numeric<UInt32Type>(&S::u32)},
      {"u64", uint64(), Numeric<UInt64Type>(&S::u64)},
      {"f32", float32(), Numeric<FloatType>(&S::f32)},
      {"f64", float64(), Numeric<DoubleType>(&S::f64)},
      {"dec", decimal128(18, 3),
       [](const S& d, const TypePtr& t) {
         return BuildColumn(t, d.dec, [](ArrayBuilder* b, int64_t x) {
           return static_cast<Decimal128Builder*>(b)->Append(Decimal128(x));
         });
       }},
      {"d32", date32(), Numeric<Date32Type>(&S::days)},
      {"d64", date64(), Numeric<Date64Type>(&S::days, 86400000)},
      {"t32", time32(TimeUnit::kMilli), Numeric<Time32Type>(&S::time_ms)},
      {"t64", time64(TimeUnit::kMicro), Numeric<Time64Type>(&S::time_us)},
      {"t64n", time64(TimeUnit::kNano), Numeric<Time64Type>(&S::time_us, 1000)},
      {"ts_s", timestamp(TimeUnit::kSecond), Timestamps(TimeUnit::kSecond)},
      {"ts_ms", timestamp(TimeUnit::kMilli), Timestamps(TimeUnit::kMilli)},
      {"ts_us", timestamp(TimeUnit::kMicro), Timestamps(TimeUnit::kMicro)},
      {"ts_ns", timestamp(TimeUnit::kNano), Timestamps(TimeUnit::kNano)},
      {"tz_us", timestamp(TimeUnit::kMicro, "UTC"), Timestamps(TimeUnit::kMicro)},
      {"tz_ms", timestamp(TimeUnit::kMilli, "Europe/Paris"),
       Timestamps(TimeUnit::kMilli)},
      {"dur_us", duration(TimeUnit::kMicro), Numeric<DurationType>(&S::dur_us)},
      {"dur_ms", duration(TimeUnit::kMilli), Numeric<DurationType>(&S::dur_ms)},
      {"s", utf8(), Bytes<int32_t>(&S::str)},
      {"ls", large_utf8(), Bytes<int64_t>(&S::str)},
      {"b", binary(), Bytes<int32_t>(&S::bin)},
      {"lb", large_binary(), Bytes<int64_t>(&S::bin)},
      {"fsb", fixed_size_binary(4),
       [](const S& d, const TypePtr& t) {
         return BuildColumn(t, d.fixed, [](ArrayBuilder* b, const std::string& x) {
           return static_cast<FixedSizeBinaryBuilder*>(b)->Append(x);
         });
       }},
      // DuckDB's names for the children, so that a round trip is exact.
      {"l", list(field("l", int32())), Lists<ListBuilder>()},
      {"ll", large_list(field("l", int32())), Lists<LargeListBuilder>()},
      {"fsl", fixed_size_list(field("", int32()), 2), BuildPairs},
      {"st", struct_({field("a", int32()), field("b", utf8())}), BuildStructs},
      {"m", map(utf8(), int32()), BuildMaps},
      {"dict", dictionary(int32(), utf8()),
       [](const S& d, const TypePtr& t) {
         return BuildColumn(t, d.dict, [](ArrayBuilder* b, const std::string& x) {
           return static_cast<DictionaryBuilder*>(b)->Append(x);
         });
       }},
      {"nul", null(),
       [](const S& d, const TypePtr& t) {
         std::vector<Opt<bool>> nulls(static_cast<size_t>(d.rows()));
         return BuildColumn(t, nulls, [](ArrayBuilder*, bool) { return Status::OK(); });
       }},
  };
  return columns;
}

}  // namespace

std::vector<std::pair<std::string, TypePtr>> SourceColumns() {
  std::vector<std::pair<std::string, TypePtr>> out;
  for (const ColumnDef& c : Columns()) out.emplace_back(c.name, c.type);
  return out;
}

Result<TablePtr> MakeSourceTable(const SourceData& d, int64_t batch_rows,
                                 const std::vector<std::string>& names) {
  FieldVector fields;
  std::vector<ArrayPtr> arrays;
  for (const ColumnDef& c : Columns()) {
    if (!names.empty() && std::find(names.begin(), names.end(), c.name) == names.end()) {
      continue;
    }
    fields.push_back(field(c.name, c.type));
    QUIVER_ASSIGN_OR_RAISE(auto array, c.build(d, c.type));
    arrays.push_back(std::move(array));
  }
  auto schema = quiver::schema(fields);
  std::vector<RecordBatchPtr> batches;
  for (int64_t start = 0, k = 0; start < d.rows(); ++k) {
    const int64_t len = std::min(batch_rows + (k % 3) * 7 - 5, d.rows() - start);
    std::vector<ArrayPtr> columns;
    for (const ArrayPtr& a : arrays) columns.push_back(a->Slice(kPad + start, len));
    batches.push_back(RecordBatch::Make(schema, len, columns));
    start += len;
  }
  return Table::FromRecordBatches(batches, schema);
}

std::shared_ptr<RecordBatchReader> ReaderOf(const TablePtr& table) {
  auto batches = table->ToRecordBatches();
  return RecordBatchReader::FromBatches(table->schema(), batches.ValueOrDie());
}

// ---- Canonical text ----

std::string CanonDouble(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

std::string CanonFloat(float v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
  return buf;
}

namespace {

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

// The value slot i of a fixed-width array (any type stored as T).
template <typename T>
std::string Int(const Array& a, int64_t i) {
  return std::to_string(a.data()->GetValues<T>(1)[i]);
}

template <typename ListA>
std::string ListText(const Array& a, int64_t i) {
  const auto& l = static_cast<const ListA&>(a);
  std::string out = "[";
  for (int64_t j = l.value_offset(i); j < l.value_offset(i) + l.value_length(i); ++j) {
    if (j > l.value_offset(i)) out += ",";
    out += Canon(*l.values(), j);
  }
  return out + "]";
}

std::string NestedText(const Array& a, int64_t i) {
  switch (a.type_id()) {
    case TypeId::kList:
      return ListText<ListArray>(a, i);
    case TypeId::kLargeList:
      return ListText<LargeListArray>(a, i);
    case TypeId::kFixedSizeList: {
      const auto& l = static_cast<const FixedSizeListArray&>(a);
      std::string out = "[";
      for (int32_t j = 0; j < l.list_size(); ++j) {
        out += (j > 0 ? "," : "") + Canon(*l.values(), l.value_offset(i) + j);
      }
      return out + "]";
    }
    case TypeId::kStruct: {
      const auto& s = static_cast<const StructArray&>(a);
      std::string out = "{";
      for (int f = 0; f < s.num_fields(); ++f) {
        out += (f > 0 ? "," : "") + Canon(*s.field(f), i);
      }
      return out + "}";
    }
    case TypeId::kMap: {
      const auto& m = static_cast<const MapArray&>(a);
      std::string out = "{";
      for (int64_t j = m.value_offset(i); j < m.value_offset(i) + m.value_length(i);
           ++j) {
        if (j > m.value_offset(i)) out += ",";
        out += Canon(*m.keys(), j) + ":" + Canon(*m.items(), j);
      }
      return out + "}";
    }
    default:
      return "?" + a.type()->ToString();
  }
}

}  // namespace

std::string Canon(const Array& a, int64_t i) {
  if (a.IsNull(i)) return "null";
  switch (a.type_id()) {
    case TypeId::kBool:
      return static_cast<const BooleanArray&>(a).Value(i) ? "true" : "false";
    case TypeId::kInt8:
      return Int<int8_t>(a, i);
    case TypeId::kInt16:
      return Int<int16_t>(a, i);
    case TypeId::kInt32:
    case TypeId::kDate32:
    case TypeId::kTime32:
      return Int<int32_t>(a, i);
    case TypeId::kInt64:
    case TypeId::kDate64:
    case TypeId::kTime64:
    case TypeId::kTimestamp:
    case TypeId::kDuration:
      return Int<int64_t>(a, i);
    case TypeId::kUInt8:
      return Int<uint8_t>(a, i);
    case TypeId::kUInt16:
    case TypeId::kHalfFloat:
      return Int<uint16_t>(a, i);
    case TypeId::kUInt32:
      return Int<uint32_t>(a, i);
    case TypeId::kUInt64:
      return Int<uint64_t>(a, i);
    case TypeId::kFloat:
      return CanonFloat(static_cast<const FloatArray&>(a).Value(i));
    case TypeId::kDouble:
      return CanonDouble(static_cast<const DoubleArray&>(a).Value(i));
    case TypeId::kDecimal:
      return static_cast<const Decimal128Array&>(a).FormatValue(i);
    case TypeId::kString:
    case TypeId::kBinary:
      return Quoted(static_cast<const BinaryArray&>(a).GetView(i));
    case TypeId::kLargeString:
    case TypeId::kLargeBinary:
      return Quoted(static_cast<const LargeBinaryArray&>(a).GetView(i));
    case TypeId::kFixedSizeBinary:
      return Quoted(static_cast<const FixedSizeBinaryArray&>(a).GetView(i));
    case TypeId::kInterval:
      return static_cast<const IntervalArray&>(a).FormatValue(i);
    case TypeId::kDictionary: {
      const auto& d = static_cast<const DictionaryArray&>(a);
      return Canon(*d.dictionary(), d.GetValueIndex(i));
    }
    default:
      return NestedText(a, i);
  }
}

std::vector<std::string> CanonColumn(const ChunkedArray& column) {
  std::vector<std::string> out;
  for (const ArrayPtr& chunk : column.chunks()) {
    for (int64_t i = 0; i < chunk->length(); ++i) out.push_back(Canon(*chunk, i));
  }
  return out;
}

// ---- Expected text from the source vectors ----

namespace {

template <typename T, typename F>
std::vector<std::string> Texts(const std::vector<Opt<T>>& v, F f) {
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(x ? f(*x) : "null");
  return out;
}

auto Integer(int64_t factor = 1) {
  return [factor](auto x) { return std::to_string(static_cast<int64_t>(x) * factor); };
}

std::string OptInt(const Opt<int32_t>& v) { return v ? std::to_string(*v) : "null"; }

std::vector<std::string> TimestampTexts(const SourceData& d, TimeUnit unit) {
  std::vector<Opt<int64_t>> ts;
  for (int64_t i = 0; i < d.rows(); ++i) ts.push_back(d.Timestamp(i, unit));
  return Texts(ts, Integer());
}

std::vector<std::string> NestedExpected(const SourceData& d, const std::string& name) {
  if (name == "l" || name == "ll") {
    return Texts(d.lists, [](const IntList& l) {
      std::string out = "[";
      for (size_t j = 0; j < l.size(); ++j) out += (j > 0 ? "," : "") + OptInt(l[j]);
      return out + "]";
    });
  }
  if (name == "fsl") {
    return Texts(d.pairs, [](const auto& p) {
      return "[" + OptInt(p[0]) + "," + OptInt(p[1]) + "]";
    });
  }
  if (name == "st") {
    return Texts(d.structs, [](const auto& s) {
      return "{" + OptInt(s.first) + "," + (s.second ? Quoted(*s.second) : "null") + "}";
    });
  }
  if (name == "m") {
    return Texts(d.maps, [](const MapEntries& m) {
      std::string out = "{";
      for (size_t j = 0; j < m.size(); ++j) {
        out += (j > 0 ? "," : "") + Quoted(m[j].first) + ":" + OptInt(m[j].second);
      }
      return out + "}";
    });
  }
  return {};
}

}  // namespace

std::vector<std::string> ExpectedColumn(const SourceData& d, const std::string& name,
                                        bool duckdb) {
  using S = SourceData;
  const std::vector<std::pair<std::string, std::vector<Opt<int64_t>> S::*>> int64s = {
      {"i64", &S::i64}, {"t64", &S::time_us}, {"dur_us", &S::dur_us}};
  for (const auto& [n, member] : int64s) {
    if (name == n) return Texts(d.*member, Integer());
  }
  if (name == "id") {
    return Texts(std::vector<Opt<int64_t>>(d.id.begin(), d.id.end()), Integer());
  }
  if (name == "flag") {
    return Texts(d.flag, [](bool b) { return std::string(b ? "true" : "false"); });
  }
  if (name == "i8") return Texts(d.i8, Integer());
  if (name == "i16") return Texts(d.i16, Integer());
  if (name == "i32") return Texts(d.i32, Integer());
  if (name == "u8") return Texts(d.u8, Integer());
  if (name == "u16") return Texts(d.u16, Integer());
  if (name == "u32") return Texts(d.u32, Integer());
  if (name == "u64") return Texts(d.u64, [](uint64_t x) { return std::to_string(x); });
  if (name == "f32") return Texts(d.f32, CanonFloat);
  if (name == "f64") return Texts(d.f64, CanonDouble);
  if (name == "dec") {
    return Texts(d.dec, [](int64_t x) { return Decimal128(x).ToString(3); });
  }
  if (name == "d32") return Texts(d.days, Integer());
  if (name == "d64") return Texts(d.days, Integer(duckdb ? 1 : 86400000));
  if (name == "t32") return Texts(d.time_ms, Integer(duckdb ? 1000 : 1));
  if (name == "t64n") return Texts(d.time_us, Integer(1000));
  if (name == "ts_s") return TimestampTexts(d, TimeUnit::kSecond);
  if (name == "ts_ms") return TimestampTexts(d, TimeUnit::kMilli);
  if (name == "ts_us" || name == "tz_us") return TimestampTexts(d, TimeUnit::kMicro);
  if (name == "ts_ns") return TimestampTexts(d, TimeUnit::kNano);
  if (name == "tz_ms") {
    if (!duckdb) return TimestampTexts(d, TimeUnit::kMilli);
    std::vector<Opt<int64_t>> us;
    for (int64_t i = 0; i < d.rows(); ++i) us.push_back(d.Timestamp(i, TimeUnit::kMilli));
    return Texts(us, Integer(1000));  // DuckDB's TIMESTAMPTZ is in microseconds
  }
  if (name == "dur_ms") return Texts(d.dur_ms, Integer(duckdb ? 1000 : 1));
  if (name == "s" || name == "ls") return Texts(d.str, Quoted);
  if (name == "b" || name == "lb") return Texts(d.bin, Quoted);
  if (name == "fsb") return Texts(d.fixed, Quoted);
  if (name == "dict") return Texts(d.dict, Quoted);
  if (name == "nul")
    return std::vector<std::string>(static_cast<size_t>(d.rows()), "null");
  return NestedExpected(d, name);
}

Result<std::unique_ptr<duckdb::Connection>> OpenConnection() {
  QUIVER_ASSIGN_OR_RAISE(auto db, duckdb::Database::Open());
  return duckdb::Connection::Open(std::move(db));
}

Result<std::unique_ptr<duckdb::Connection>> OpenWithTable(
    const std::vector<RecordBatchPtr>& batches, const std::string& name) {
  QUIVER_ASSIGN_OR_RAISE(auto conn, OpenConnection());
  QUIVER_ASSIGN_OR_RAISE(auto table, Table::FromRecordBatches(batches));
  QUIVER_RETURN_NOT_OK(conn->RegisterTable(name, std::move(table)));
  return conn;
}

std::vector<std::string> FormatRows(const Table& table, int c) {
  std::vector<std::string> out;
  ForEachRow(table, [&](const std::vector<ArrayPtr>& columns, int64_t k) {
    out.push_back(FormatValue(*columns[static_cast<size_t>(c)], k));
  });
  return out;
}

int64_t ForEachRow(const Table& table,
                   const std::function<void(const std::vector<ArrayPtr>&, int64_t)>& fn) {
  int64_t rows = 0;
  for (const auto& batch : table.ToRecordBatches().ValueOrDie()) {
    // column() makes a new Array each time: hold them while reading.
    std::vector<ArrayPtr> columns;
    for (int c = 0; c < batch->num_columns(); ++c) columns.push_back(batch->column(c));
    for (int64_t k = 0; k < batch->num_rows(); ++k, ++rows) fn(columns, k);
  }
  return rows;
}

}  // namespace quiver::duckdb_test
