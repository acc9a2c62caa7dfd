#include "js_cases_util.h"

#include <bit>
#include <map>
#include <random>
#include <set>

#include "js_schemas_util.h"
#include "quiver/columnar/builder.h"

namespace quiver::interop::js {

namespace {

template <typename B>
Result<B*> As(ArrayBuilder* builder) {
  auto* typed = dynamic_cast<B*>(builder);
  if (typed == nullptr) {
    return Status::TypeError("builder for ", builder->type()->ToString(),
                             " is not the expected class");
  }
  return typed;
}

// A value of a dictionary's value type, in the form DictionaryBuilder takes.
struct DictValue {
  enum Kind { kBytes, kInt, kDouble, kDecimal } kind = kBytes;
  std::string bytes;
  int64_t integer = 0;
  double real = 0;
  Decimal128 decimal;
  Json json;
};

constexpr const char* kText[] = {"",         "a",         "quiver", "é",
                                 "ß",        "Ωμέγα",     "漢字",   "🙂",
                                 "🏹🎯", "tab\tnl\n", "\"q\"\\"};
constexpr uint16_t kHalfSpecial[] = {0x7e00, 0x7c00, 0xfc00, 0x8000,
                                     0x0000, 0x0001, 0x7bff, 0x3c00};
constexpr uint32_t kFloatSpecial[] = {0x7fc00000, 0x7f800000, 0xff800000, 0x80000000,
                                      0,          1,          0x7f7fffff, 0xffc00001};
constexpr uint64_t kDoubleSpecial[] = {
    0x7ff8000000000000, 0x7ff0000000000000, 0xfff0000000000000, 0x8000000000000000, 0, 1,
    0x7fefffffffffffff, 0x3ff0000000000000};
constexpr int64_t kDayMs = 86400000;

// Appends pseudo-random values of any Quiver type to the matching builder
// and records each value's canonical JSON.
class ValueGenerator {
 public:
  explicit ValueGenerator(uint64_t seed) : rng_(seed) {}

  Status Append(const TypePtr& type, bool nullable, ArrayBuilder* b, Json* out) {
    // A union has no nulls of its own: its children have them.
    if (type->id() == TypeId::kNull ||
        (nullable && !IsUnion(type->id()) && Uniform(6) == 0)) {
      *out = nullptr;
      return b->AppendNull();
    }
    if (IsInteger(type->id())) return AppendInteger(*type, b, out);
    switch (type->id()) {
      case TypeId::kBool: {
        const bool v = Uniform(2) == 1;
        *out = v;
        QUIVER_ASSIGN_OR_RAISE(auto* bb, As<BooleanBuilder>(b));
        return bb->Append(v);
      }
      case TypeId::kHalfFloat:
      case TypeId::kFloat:
      case TypeId::kDouble:
        return AppendFloat(*type, b, out);
      case TypeId::kDecimal:
        return AppendDecimal(*type, b, out);
      case TypeId::kDate32:
      case TypeId::kDate64:
      case TypeId::kTime32:
      case TypeId::kTime64:
      case TypeId::kTimestamp:
      case TypeId::kDuration:
        return AppendTemporal(*type, b, out);
      case TypeId::kString:
      case TypeId::kLargeString:
      case TypeId::kBinary:
      case TypeId::kLargeBinary:
      case TypeId::kFixedSizeBinary:
      case TypeId::kInterval:  // as hex of its bytes, like fixed_size_binary
      case TypeId::kStringView:
      case TypeId::kBinaryView:
        return AppendBinary(*type, b, out);
      case TypeId::kDictionary:
        return AppendDictionary(*type, b, out);
      default:
        return AppendNested(*type, b, out);
    }
  }

  uint64_t Uniform(uint64_t n) { return rng_() % n; }
  uint64_t Bits() { return rng_(); }

 private:
  template <typename Tag>
  Status AppendNumeric(ArrayBuilder* b, typename Tag::c_type v) {
    QUIVER_ASSIGN_OR_RAISE(auto* nb, As<NumericBuilder<Tag>>(b));
    return nb->Append(v);
  }

  // Signed values as int64, unsigned as uint64, with the extremes often.
  Status AppendInteger(const DataType& type, ArrayBuilder* b, Json* out) {
    const int bits = type.bit_width();
    const bool is_signed = IsSignedInteger(type.id());
    uint64_t raw = Bits();
    const uint64_t r = Uniform(10);
    if (r == 0) raw = is_signed ? uint64_t{1} << (bits - 1) : 0;                   // min
    if (r == 1) raw = is_signed ? (uint64_t{1} << (bits - 1)) - 1 : ~uint64_t{0};  // max
    if (bits < 64) raw &= (uint64_t{1} << bits) - 1;
    const int64_t sv = bits < 64 && is_signed && (raw >> (bits - 1)) != 0
                           ? static_cast<int64_t>(raw | ~((uint64_t{1} << bits) - 1))
                           : static_cast<int64_t>(raw);
    *out = is_signed ? std::to_string(sv) : std::to_string(raw);
    switch (type.id()) {
      case TypeId::kInt8:
        return AppendNumeric<Int8Type>(b, static_cast<int8_t>(sv));
      case TypeId::kInt16:
        return AppendNumeric<Int16Type>(b, static_cast<int16_t>(sv));
      case TypeId::kInt32:
        return AppendNumeric<Int32Type>(b, static_cast<int32_t>(sv));
      case TypeId::kInt64:
        return AppendNumeric<Int64Type>(b, sv);
      case TypeId::kUInt8:
        return AppendNumeric<UInt8Type>(b, static_cast<uint8_t>(raw));
      case TypeId::kUInt16:
        return AppendNumeric<UInt16Type>(b, static_cast<uint16_t>(raw));
      case TypeId::kUInt32:
        return AppendNumeric<UInt32Type>(b, static_cast<uint32_t>(raw));
      default:
        return AppendNumeric<UInt64Type>(b, raw);
    }
  }

  // Random bit patterns plus NaN, infinities, -0, subnormals and extremes.
  // NaNs are kept quiet so that no hardware path can change their bits.
  Status AppendFloat(const DataType& type, ArrayBuilder* b, Json* out) {
    const bool special = Uniform(4) == 0;
    if (type.id() == TypeId::kHalfFloat) {
      const uint16_t v =
          special ? kHalfSpecial[Uniform(8)] : static_cast<uint16_t>(Bits());
      *out = std::to_string(v);
      return AppendNumeric<HalfFloatType>(b, v);
    }
    if (type.id() == TypeId::kFloat) {
      uint32_t v = special ? kFloatSpecial[Uniform(8)] : static_cast<uint32_t>(Bits());
      if ((v & 0x7f800000) == 0x7f800000 && (v & 0x7fffff) != 0) v |= 0x400000;
      *out = std::to_string(v);
      return AppendNumeric<FloatType>(b, std::bit_cast<float>(v));
    }
    uint64_t v = special ? kDoubleSpecial[Uniform(8)] : Bits();
    if ((v & 0x7ff0000000000000) == 0x7ff0000000000000 && (v & 0xfffffffffffff) != 0) {
      v |= uint64_t{1} << 51;
    }
    *out = std::to_string(v);
    return AppendNumeric<DoubleType>(b, std::bit_cast<double>(v));
  }

  // The canonical text is built from the digits drawn, independently of
  // FormatDecimal (which works from the 128-bit value).
  std::pair<Decimal128, std::string> RandomDecimal(const DataType& type) {
    const int digits =
        1 + static_cast<int>(Uniform(static_cast<uint64_t>(type.precision())));
    std::string text;
    unsigned __int128 magnitude = 0;
    for (int i = 0; i < digits; ++i) {
      const int d = static_cast<int>(Uniform(10));
      magnitude = magnitude * 10 + static_cast<unsigned>(d);  // wraps past 38 digits
      if (!text.empty() || d != 0) text += static_cast<char>('0' + d);
    }
    if (text.empty()) text = "0";
    const bool negative = Uniform(2) == 1 && text != "0";
    const int scale = type.scale();
    if (scale > 0) {
      if (text.size() <= static_cast<size_t>(scale)) {
        text.insert(0, static_cast<size_t>(scale) + 1 - text.size(), '0');
      }
      text.insert(text.size() - static_cast<size_t>(scale), ".");
    } else if (text != "0") {
      text.append(static_cast<size_t>(-scale), '0');
    }
    const __int128 value =
        negative ? -static_cast<__int128>(magnitude) : static_cast<__int128>(magnitude);
    return {Decimal128(value), (negative ? "-" : "") + text};
  }

  Status AppendDecimal(const DataType& type, ArrayBuilder* b, Json* out) {
    auto [value, text] = RandomDecimal(type);
    *out = text;
    QUIVER_ASSIGN_OR_RAISE(auto* db, As<DecimalBuilder>(b));
    // Past 38 digits the value is known only as text.
    return type.precision() > 38 ? db->AppendString(text) : db->Append(value);
  }

  int64_t RandomTemporal(const DataType& type) {
    const int64_t day = static_cast<int64_t>(Uniform(200000)) - 100000;
    switch (type.id()) {
      case TypeId::kDate32:
        return day;
      case TypeId::kDate64:
        return day * kDayMs;
      case TypeId::kTime32:
      case TypeId::kTime64: {
        static constexpr int64_t kPerDay[] = {86400, 86400000, 86400000000,
                                              86400000000000};
        return static_cast<int64_t>(Uniform(kPerDay[static_cast<int>(type.unit())]));
      }
      default:  // timestamp, duration: any int64, often small
        return static_cast<int64_t>(Bits()) >> Uniform(40);
    }
  }

  Status AppendTemporal(const DataType& type, ArrayBuilder* b, Json* out) {
    const int64_t v = RandomTemporal(type);
    *out = std::to_string(v);
    switch (type.id()) {
      case TypeId::kDate32:
        return AppendNumeric<Date32Type>(b, static_cast<int32_t>(v));
      case TypeId::kDate64:
        return AppendNumeric<Date64Type>(b, v);
      case TypeId::kTime32:
        return AppendNumeric<Time32Type>(b, static_cast<int32_t>(v));
      case TypeId::kTime64:
        return AppendNumeric<Time64Type>(b, v);
      case TypeId::kTimestamp:
        return AppendNumeric<TimestampType>(b, v);
      default:
        return AppendNumeric<DurationType>(b, v);
    }
  }

  std::string RandomText() {
    std::string s;
    for (uint64_t n = 1 + Uniform(3); n > 0; --n) s += kText[Uniform(std::size(kText))];
    return s;
  }

  std::string RandomBytes(int64_t n) {
    std::string s;
    for (int64_t i = 0; i < n; ++i) s += static_cast<char>(Uniform(256));
    return s;
  }

  Status AppendBinary(const DataType& type, ArrayBuilder* b, Json* out) {
    switch (type.id()) {
      case TypeId::kString:
      case TypeId::kLargeString: {
        std::string s = RandomText();
        *out = s;
        if (type.id() == TypeId::kString) {
          QUIVER_ASSIGN_OR_RAISE(auto* sb, As<BaseBinaryBuilder<int32_t>>(b));
          return sb->Append(s);
        }
        QUIVER_ASSIGN_OR_RAISE(auto* lb, As<BaseBinaryBuilder<int64_t>>(b));
        return lb->Append(s);
      }
      case TypeId::kBinary:
      case TypeId::kLargeBinary: {
        std::string s = RandomBytes(static_cast<int64_t>(Uniform(9)));
        *out = ToHex(s);
        if (type.id() == TypeId::kBinary) {
          QUIVER_ASSIGN_OR_RAISE(auto* bb, As<BaseBinaryBuilder<int32_t>>(b));
          return bb->Append(s);
        }
        QUIVER_ASSIGN_OR_RAISE(auto* lb, As<BaseBinaryBuilder<int64_t>>(b));
        return lb->Append(s);
      }
      case TypeId::kStringView:
      case TypeId::kBinaryView: {  // inline and out of line
        const bool text = type.id() == TypeId::kStringView;
        std::string s = text ? RandomText() + (Uniform(2) == 1 ? RandomText() : "")
                             : RandomBytes(static_cast<int64_t>(Uniform(40)));
        *out = text ? Json(s) : Json(ToHex(s));
        QUIVER_ASSIGN_OR_RAISE(auto* vb, As<BinaryViewBuilder>(b));
        return vb->Append(s);
      }
      default: {
        std::string s = RandomBytes(type.byte_width());
        *out = ToHex(s);
        QUIVER_ASSIGN_OR_RAISE(auto* fb, As<FixedSizeBinaryBuilder>(b));
        return fb->Append(s);
      }
    }
  }

  Result<DictValue> RandomDictValue(const DataType& type) {
    DictValue v;
    switch (type.id()) {
      case TypeId::kString:
      case TypeId::kLargeString:
        v.bytes = RandomText();
        v.json = v.bytes;
        return v;
      case TypeId::kBinary:
      case TypeId::kLargeBinary:
      case TypeId::kFixedSizeBinary:
        v.bytes = RandomBytes(type.id() == TypeId::kFixedSizeBinary
                                  ? type.byte_width()
                                  : static_cast<int64_t>(Uniform(9)));
        v.json = ToHex(v.bytes);
        return v;
      case TypeId::kDouble: {
        uint64_t bits = Bits();
        if ((bits & 0x7ff0000000000000) == 0x7ff0000000000000) bits ^= uint64_t{1} << 62;
        v.kind = DictValue::kDouble;
        v.real = std::bit_cast<double>(bits);
        v.json = std::to_string(bits);
        return v;
      }
      case TypeId::kDecimal: {
        auto [value, text] = RandomDecimal(type);
        v.kind = DictValue::kDecimal;
        v.decimal = value;
        v.json = text;
        return v;
      }
      case TypeId::kInt16:
        v.kind = DictValue::kInt;
        v.integer = static_cast<int16_t>(Bits());
        v.json = std::to_string(v.integer);
        return v;
      case TypeId::kInt64:
        v.kind = DictValue::kInt;
        v.integer = static_cast<int64_t>(Bits());
        v.json = std::to_string(v.integer);
        return v;
      case TypeId::kDate32:
      case TypeId::kTimestamp:
        v.kind = DictValue::kInt;
        v.integer = RandomTemporal(type);
        v.json = std::to_string(v.integer);
        return v;
      default:
        return Status::NotImplemented("no dictionary values of ", type.ToString(),
                                      " in the interop generator");
    }
  }

  // Dictionary columns draw from a pool of five values per value type, so
  // that values repeat and the dictionary stays small.
  Status AppendDictionary(const DataType& type, ArrayBuilder* b, Json* out) {
    const std::string key = CanonicalTypeString(*type.value_type());
    auto& pool = pools_[key];
    while (pool.size() < 5) {
      QUIVER_ASSIGN_OR_RAISE(DictValue v, RandomDictValue(*type.value_type()));
      pool.push_back(std::move(v));
    }
    const DictValue& v = pool[Uniform(pool.size())];
    *out = v.json;
    QUIVER_ASSIGN_OR_RAISE(auto* db, As<DictionaryBuilder>(b));
    switch (v.kind) {
      case DictValue::kBytes:
        return db->Append(std::string_view(v.bytes));
      case DictValue::kInt:
        return db->Append(v.integer);
      case DictValue::kDouble:
        return db->Append(v.real);
      case DictValue::kDecimal:
        return db->Append(v.decimal);
    }
    return Status::OK();
  }

  template <typename ListBuilderType>
  Status AppendList(const DataType& type, ArrayBuilder* b, Json* out) {
    QUIVER_ASSIGN_OR_RAISE(auto* lb, As<ListBuilderType>(b));
    QUIVER_RETURN_NOT_OK(lb->Append(true));
    *out = Json::array();
    const FieldPtr& item = type.value_field();
    for (uint64_t n = Uniform(5); n > 0; --n) {
      Json v;
      QUIVER_RETURN_NOT_OK(
          Append(item->type(), item->nullable(), lb->value_builder(), &v));
      out->push_back(std::move(v));
    }
    return Status::OK();
  }

  // Draws a key; false (nothing appended) when it repeats an earlier key of
  // the same map: Arrow allows repeated keys, but most readers turn maps
  // into dictionaries where they would collapse.
  Result<bool> AppendNewKey(const DataType& key_type, ArrayBuilder* keys,
                            std::set<std::string>* seen, Json* out) {
    switch (key_type.id()) {
      case TypeId::kString: {
        std::string s = RandomText();
        if (!seen->insert(s).second) return false;
        *out = s;
        QUIVER_ASSIGN_OR_RAISE(auto* sb, As<BaseBinaryBuilder<int32_t>>(keys));
        QUIVER_RETURN_NOT_OK(sb->Append(s));
        return true;
      }
      case TypeId::kInt32:
      case TypeId::kInt64: {
        Json v;
        auto scratch = MakeBuilder(key_type.id() == TypeId::kInt32 ? int32() : int64());
        if (!scratch.ok()) return scratch.status();
        QUIVER_RETURN_NOT_OK(AppendInteger(key_type, scratch->get(), &v));
        if (!seen->insert(v.get<std::string>()).second) return false;
        *out = v;
        const int64_t k = std::stoll(v.get<std::string>());
        if (key_type.id() == TypeId::kInt32) {
          QUIVER_RETURN_NOT_OK(AppendNumeric<Int32Type>(keys, static_cast<int32_t>(k)));
        } else {
          QUIVER_RETURN_NOT_OK(AppendNumeric<Int64Type>(keys, k));
        }
        return true;
      }
      default:
        return Status::NotImplemented("interop generator: map keys of ",
                                      key_type.ToString());
    }
  }

  Status AppendMap(const DataType& type, ArrayBuilder* b, Json* out) {
    QUIVER_ASSIGN_OR_RAISE(auto* mb, As<MapBuilder>(b));
    QUIVER_RETURN_NOT_OK(mb->Append());
    *out = Json::array();
    std::set<std::string> seen;
    for (uint64_t n = Uniform(4); n > 0; --n) {
      Json key;
      QUIVER_ASSIGN_OR_RAISE(
          bool added, AppendNewKey(*type.key_type(), mb->key_builder(), &seen, &key));
      if (!added) continue;
      Json item;
      QUIVER_RETURN_NOT_OK(Append(type.item_type(), type.item_field()->nullable(),
                                  mb->item_builder(), &item));
      out->push_back(Json::array({std::move(key), std::move(item)}));
    }
    return Status::OK();
  }

  Status AppendNested(const DataType& type, ArrayBuilder* b, Json* out) {
    switch (type.id()) {
      case TypeId::kList:
        return AppendList<ListBuilder>(type, b, out);
      case TypeId::kLargeList:
        return AppendList<LargeListBuilder>(type, b, out);
      case TypeId::kFixedSizeList: {
        QUIVER_ASSIGN_OR_RAISE(auto* fb, As<FixedSizeListBuilder>(b));
        QUIVER_RETURN_NOT_OK(fb->Append());
        *out = Json::array();
        const FieldPtr& item = type.value_field();
        for (int32_t i = 0; i < type.list_size(); ++i) {
          Json v;
          QUIVER_RETURN_NOT_OK(
              Append(item->type(), item->nullable(), fb->value_builder(), &v));
          out->push_back(std::move(v));
        }
        return Status::OK();
      }
      case TypeId::kStruct: {
        QUIVER_ASSIGN_OR_RAISE(auto* sb, As<StructBuilder>(b));
        QUIVER_RETURN_NOT_OK(sb->Append(true));
        *out = Json::object();
        for (int k = 0; k < type.num_fields(); ++k) {
          const FieldPtr& f = type.field(k);
          QUIVER_RETURN_NOT_OK(
              Append(f->type(), f->nullable(), sb->field_builder(k), &(*out)[f->name()]));
        }
        return Status::OK();
      }
      case TypeId::kMap:
        return AppendMap(type, b, out);
      case TypeId::kSparseUnion:
      case TypeId::kDenseUnion: {  // a random child's value
        QUIVER_ASSIGN_OR_RAISE(auto* ub, As<UnionBuilder>(b));
        const int k = static_cast<int>(Uniform(static_cast<uint64_t>(type.num_fields())));
        const int8_t code = type.type_codes()[static_cast<size_t>(k)];
        QUIVER_RETURN_NOT_OK(ub->Append(code));
        *out = Json::object();
        (*out)["type_code"] = static_cast<int>(code);
        const FieldPtr& f = type.field(k);
        return Append(f->type(), f->nullable(), ub->child_builder(k), &(*out)["value"]);
      }
      default:
        return Status::NotImplemented("interop generator: no values for ",
                                      type.ToString());
    }
  }

  std::mt19937_64 rng_;
  std::map<std::string, std::vector<DictValue>> pools_;
};

}  // namespace

namespace {

// `rows` random rows cut into batches at `cuts`: every batch after the first
// is a zero-copy slice with a non-zero offset of one set of arrays, so all
// batches share each column's dictionary, as one table's would.
Result<InteropCase> RandomCase(std::string name, uint64_t seed, SchemaPtr schema,
                               int64_t rows, std::vector<int64_t> cuts) {
  ValueGenerator gen(seed);
  std::vector<ArrayPtr> columns;
  std::vector<Json> values;
  for (const FieldPtr& f : schema->fields()) {
    QUIVER_ASSIGN_OR_RAISE(auto builder, MakeBuilder(f->type()));
    Json column = Json::array();
    for (int64_t r = 0; r < rows; ++r) {
      Json v;
      QUIVER_RETURN_NOT_OK(gen.Append(f->type(), f->nullable(), builder.get(), &v));
      column.push_back(std::move(v));
    }
    QUIVER_ASSIGN_OR_RAISE(ArrayPtr array, builder->Finish());
    columns.push_back(std::move(array));
    values.push_back(std::move(column));
  }
  RecordBatchPtr whole = RecordBatch::Make(schema, rows, columns);
  InteropCase c;
  c.name = std::move(name);
  c.schema = schema;
  cuts.insert(cuts.begin(), 0);
  cuts.push_back(rows);
  for (size_t b = 0; b + 1 < cuts.size(); ++b) {
    const int64_t lo = cuts[b], hi = cuts[b + 1];
    c.batches.push_back(whole->Slice(lo, hi - lo));
    Json batch = Json::object();
    batch["length"] = hi - lo;
    batch["columns"] = Json::array();
    for (const Json& column : values) {
      batch["columns"].push_back(Json(column.begin() + lo, column.begin() + hi));
    }
    c.expected_batches.push_back(std::move(batch));
  }
  return c;
}

// Dictionaries that grow from batch to batch: each batch's dictionary
// starts with the previous one's values, so the writer sends only the new
// values as delta dictionary batches.
Result<InteropCase> DeltaCase() {
  TypePtr color_type = dictionary(int32(), utf8());
  TypePtr code_type = dictionary(int8(), int64());
  InteropCase c;
  c.name = "dictionary_deltas";
  c.schema = schema({F("color", color_type), F("code", code_type), F("n", int32())});
  c.min_dictionary_deltas = 4;  // two columns, two growing batches each
  const std::vector<std::vector<const char*>> colors = {
      {"red", "green", nullptr, "red"},
      {"blue", "green", "violet"},
      {nullptr, "ochre", "red", "blue", "ochre"}};
  DictionaryBuilder color_builder(color_type);
  DictionaryBuilder code_builder(code_type);
  for (size_t b = 0; b < colors.size(); ++b) {
    Json color_json = Json::array(), code_json = Json::array(), n_json = Json::array();
    Int32Builder n_builder;
    for (size_t i = 0; i < colors[b].size(); ++i) {
      const char* color = colors[b][i];
      if (color == nullptr) {
        QUIVER_RETURN_NOT_OK(color_builder.AppendNull());
        color_json.push_back(nullptr);
      } else {
        QUIVER_RETURN_NOT_OK(color_builder.Append(std::string_view(color)));
        color_json.push_back(color);
      }
      const int64_t code =
          -1000000000000 * static_cast<int64_t>(b) + static_cast<int64_t>(i % 2);
      QUIVER_RETURN_NOT_OK(code_builder.Append(code));
      code_json.push_back(std::to_string(code));
      QUIVER_RETURN_NOT_OK(n_builder.Append(static_cast<int32_t>(100 * b + i)));
      n_json.push_back(std::to_string(100 * b + i));
    }
    QUIVER_ASSIGN_OR_RAISE(ArrayPtr color_array, color_builder.FinishKeepDictionary());
    QUIVER_ASSIGN_OR_RAISE(ArrayPtr code_array, code_builder.FinishKeepDictionary());
    QUIVER_ASSIGN_OR_RAISE(ArrayPtr n_array, n_builder.Finish());
    const int64_t rows = static_cast<int64_t>(colors[b].size());
    c.batches.push_back(
        RecordBatch::Make(c.schema, rows, {color_array, code_array, n_array}));
    Json batch = Json::object();
    batch["length"] = rows;
    batch["columns"] = Json::array({color_json, code_json, n_json});
    c.expected_batches.push_back(std::move(batch));
  }
  return c;
}

// A stream whose second batch has a dictionary that does not extend the
// first: a replacement, which only the stream format allows.
Result<InteropCase> ReplacementCase() {
  TypePtr type = dictionary(int8(), utf8());
  InteropCase c;
  c.name = "dictionary_replacement";
  c.schema = schema({F("word", type)});
  c.stream_only = true;
  c.min_replaced_dictionaries = 1;
  const std::vector<std::vector<const char*>> words = {
      {"beta", "alpha", nullptr, "beta"}, {"alpha", "gamma", "delta", nullptr}};
  for (const auto& batch_words : words) {
    DictionaryBuilder builder(type);
    Json column = Json::array();
    for (const char* w : batch_words) {
      QUIVER_RETURN_NOT_OK(w ? builder.Append(std::string_view(w))
                             : builder.AppendNull());
      column.push_back(w ? Json(w) : Json(nullptr));
    }
    QUIVER_ASSIGN_OR_RAISE(ArrayPtr array, builder.Finish());
    c.batches.push_back(RecordBatch::Make(c.schema, array->length(), {array}));
    Json batch = Json::object();
    batch["length"] = array->length();
    batch["columns"] = Json::array({column});
    c.expected_batches.push_back(std::move(batch));
  }
  return c;
}

InteropCase EmptyTableCase() {
  InteropCase c;
  c.name = "empty_table";
  c.schema = schema({F("a", int32()), F("b", utf8()), F("c", dictionary(int8(), utf8())),
                     F("d", list(F("item", float64(), false)))},
                    key_value_metadata({{"empty", "yes"}}));
  return c;
}

}  // namespace

Result<std::vector<InteropCase>> MakeJsInteropCases() {
  std::vector<InteropCase> cases;
  auto add = [&](Result<InteropCase> c) -> Status {
    QUIVER_ASSIGN_OR_RAISE(InteropCase value, std::move(c));
    cases.push_back(std::move(value));
    return Status::OK();
  };
  QUIVER_RETURN_NOT_OK(
      add(RandomCase("primitives", 1, PrimitivesSchema(), 300, {37, 100, 101, 229})));
  QUIVER_RETURN_NOT_OK(
      add(RandomCase("binary_decimal", 2, BinaryDecimalSchema(), 200, {13, 150})));
  QUIVER_RETURN_NOT_OK(add(RandomCase("nested", 3, NestedSchema(), 160, {5, 77})));
  QUIVER_RETURN_NOT_OK(
      add(RandomCase("dictionaries", 4, DictionariesSchema(), 120, {9, 64})));
  QUIVER_RETURN_NOT_OK(add(RandomCase("single_row", 5, NestedSchema(), 1, {})));
  QUIVER_RETURN_NOT_OK(add(RandomCase("unions", 9, UnionsSchema(), 150, {7, 90})));
  QUIVER_RETURN_NOT_OK(add(RandomCase("zero_row_batch", 6,
                                      schema({F("a", int64()), F("b", list(utf8())),
                                              F("c", dictionary(int32(), utf8()))}),
                                      40, {0, 0, 17})));
  // The same data with the smallest body alignment and with the legacy
  // framing (4-byte length prefix, no continuation marker).
  QUIVER_ASSIGN_OR_RAISE(InteropCase aligned8,
                         RandomCase("nested_align8", 7, NestedSchema(), 50, {3, 29}));
  aligned8.alignment = 8;
  cases.push_back(std::move(aligned8));
  QUIVER_ASSIGN_OR_RAISE(InteropCase legacy, RandomCase("primitives_legacy_framing", 8,
                                                        PrimitivesSchema(), 60, {11}));
  legacy.legacy_format = true;
  cases.push_back(std::move(legacy));
  QUIVER_RETURN_NOT_OK(add(DeltaCase()));
  QUIVER_RETURN_NOT_OK(add(ReplacementCase()));
  cases.push_back(EmptyTableCase());
  return cases;
}

Json CaseToJson(const InteropCase& c, const std::string& stream_file,
                const std::string& file_file) {
  Json out = Json::object();
  out["case"] = c.name;
  out["producer"] = "quiver";
  out["stream"] = stream_file;
  out["file"] = c.stream_only ? Json(nullptr) : Json(file_file);
  out["schema"] = SchemaToJson(*c.schema);
  out["batches"] = c.expected_batches;
  return out;
}

void CollectTypeIds(const DataType& type, std::vector<bool>* seen) {
  (*seen)[static_cast<size_t>(type.id())] = true;
  for (const FieldPtr& f : type.fields()) CollectTypeIds(*f->type(), seen);
  if (type.id() == TypeId::kDictionary) {
    CollectTypeIds(*type.value_type(), seen);
    CollectTypeIds(*type.index_type(), seen);
  }
}

}  // namespace quiver::interop::js
