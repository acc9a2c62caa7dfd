// Format strings, metadata encoding and errno mapping of the C Data
// Interface (see c_data_internal.h).
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>

#include "columnar/c_data/c_data_internal.h"

namespace quiver::internal {

namespace {

char UnitChar(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond:
      return 's';
    case TimeUnit::kMilli:
      return 'm';
    case TimeUnit::kMicro:
      return 'u';
    case TimeUnit::kNano:
      return 'n';
  }
  return '?';
}

Status BadFormat(std::string_view format, std::string_view why) {
  return Status::Invalid("invalid format string ", QuoteForMessage(format), ": ", why);
}

// A whole decimal integer (optionally negative) in [min, max].
bool ParseInt(std::string_view text, int64_t min, int64_t max, int32_t* out) {
  if (text.empty()) return false;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return false;
  if (v < min || v > max) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();

// The types whose format string is one character and that take no
// parameters: one table serves the exporter, the parser and the factories.
struct SimpleType {
  char code;
  TypeId id;
  const TypePtr& (*factory)();
};
constexpr SimpleType kSimpleTypes[] = {
    {'n', TypeId::kNull, &null},
    {'b', TypeId::kBool, &boolean},
    {'c', TypeId::kInt8, &int8},
    {'C', TypeId::kUInt8, &uint8},
    {'s', TypeId::kInt16, &int16},
    {'S', TypeId::kUInt16, &uint16},
    {'i', TypeId::kInt32, &int32},
    {'I', TypeId::kUInt32, &uint32},
    {'l', TypeId::kInt64, &int64},
    {'L', TypeId::kUInt64, &uint64},
    {'e', TypeId::kHalfFloat, &float16},
    {'f', TypeId::kFloat, &float32},
    {'g', TypeId::kDouble, &float64},
    {'u', TypeId::kString, &utf8},
    {'U', TypeId::kLargeString, &large_utf8},
    {'z', TypeId::kBinary, &binary},
    {'Z', TypeId::kLargeBinary, &large_binary},
};

const SimpleType* FindSimple(TypeId id) {
  for (const SimpleType& t : kSimpleTypes) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

Result<FormatSpec> ParseSingleChar(std::string_view f) {
  for (const SimpleType& t : kSimpleTypes) {
    if (t.code == f[0]) {
      FormatSpec spec;
      spec.id = t.id;
      return spec;
    }
  }
  return BadFormat(f, "unknown type code");
}

// "d:P,S" or "d:P,S,BITS".
Result<FormatSpec> ParseDecimal(std::string_view f) {
  std::string_view rest = f.substr(2);
  size_t comma = rest.find(',');
  if (comma == std::string_view::npos) {
    return BadFormat(f, "a decimal needs 'd:precision,scale'");
  }
  FormatSpec spec;
  spec.id = TypeId::kDecimal;
  std::string_view scale_text = rest.substr(comma + 1);
  size_t comma2 = scale_text.find(',');
  int32_t bits = 128;
  if (comma2 != std::string_view::npos) {
    if (!ParseInt(scale_text.substr(comma2 + 1), 1, kInt32Max, &bits)) {
      return BadFormat(f, "the decimal bit width is not a positive integer");
    }
    scale_text = scale_text.substr(0, comma2);
  }
  if (!ParseInt(rest.substr(0, comma), 1, kInt32Max, &spec.precision)) {
    return BadFormat(f, "the decimal precision is not a positive integer");
  }
  if (!ParseInt(scale_text, kInt32Min, kInt32Max, &spec.scale)) {
    return BadFormat(f, "the decimal scale is not an integer");
  }
  if (MaxDecimalPrecision(bits) == 0) {
    return BadFormat(f, "decimal bit width must be 32, 64, 128 or 256");
  }
  if (spec.precision > MaxDecimalPrecision(bits)) {
    return BadFormat(f, "decimal" + std::to_string(bits) + " precision must be in [1, " +
                            std::to_string(MaxDecimalPrecision(bits)) + "]");
  }
  spec.size = bits;
  return spec;
}

// "w:N" (fixed_size_binary) or "+w:N" (fixed_size_list); `prefix` is 2 or 3.
Result<FormatSpec> ParseFixedSize(std::string_view f, size_t prefix, TypeId id) {
  FormatSpec spec;
  spec.id = id;
  if (!ParseInt(f.substr(prefix), 0, kInt32Max, &spec.size)) {
    return BadFormat(f, "the size after ':' is not a non-negative 32-bit integer");
  }
  return spec;
}

Result<TimeUnit> ParseUnit(std::string_view f, char c) {
  switch (c) {
    case 's':
      return TimeUnit::kSecond;
    case 'm':
      return TimeUnit::kMilli;
    case 'u':
      return TimeUnit::kMicro;
    case 'n':
      return TimeUnit::kNano;
    default:
      return BadFormat(f, "unknown time unit");
  }
}

// Temporal formats: "tdD", "tdm", "tt?", "ts?:TZ", "tD?", "ti?".
Result<FormatSpec> ParseTemporal(std::string_view f) {
  FormatSpec spec;
  if (f.size() < 3) return BadFormat(f, "incomplete temporal type");
  const char kind = f[1];
  if (kind == 's') {
    if (f.size() < 4 || f[3] != ':') {
      return BadFormat(f,
                       "a timestamp needs ':' after the unit, even without a time zone");
    }
    spec.id = TypeId::kTimestamp;
    QUIVER_ASSIGN_OR_RAISE(spec.unit, ParseUnit(f, f[2]));
    spec.timezone = std::string(f.substr(4));
    return spec;
  }
  if (f.size() != 3) return BadFormat(f, "unexpected characters after the unit");
  if (kind == 'd') {
    if (f[2] != 'D' && f[2] != 'm') return BadFormat(f, "a date unit must be 'D' or 'm'");
    spec.id = f[2] == 'D' ? TypeId::kDate32 : TypeId::kDate64;
    return spec;
  }
  if (kind == 'i') {
    spec.id = TypeId::kInterval;
    if (f[2] == 'M') {
      spec.size = static_cast<int32_t>(IntervalUnit::kYearMonth);
    } else if (f[2] == 'D') {
      spec.size = static_cast<int32_t>(IntervalUnit::kDayTime);
    } else if (f[2] == 'n') {
      spec.size = static_cast<int32_t>(IntervalUnit::kMonthDayNano);
    } else {
      return BadFormat(f, "unknown interval unit");
    }
    return spec;
  }
  if (kind != 't' && kind != 'D') return BadFormat(f, "unknown temporal type");
  QUIVER_ASSIGN_OR_RAISE(spec.unit, ParseUnit(f, f[2]));
  if (kind == 'D') {
    spec.id = TypeId::kDuration;
  } else {
    const bool coarse = spec.unit == TimeUnit::kSecond || spec.unit == TimeUnit::kMilli;
    spec.id = coarse ? TypeId::kTime32 : TypeId::kTime64;
  }
  return spec;
}

// "+us:I,J,..." / "+ud:I,J,...": the type code of each child, in [0, 127]
// (no codes at all for a union of no children).
Result<FormatSpec> ParseUnion(std::string_view f) {
  FormatSpec spec;
  spec.id = f[2] == 'd' ? TypeId::kDenseUnion : TypeId::kSparseUnion;
  std::string_view rest = f.substr(4);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    int32_t code;
    if (!ParseInt(item, 0, kMaxUnionTypeCode, &code)) {
      return BadFormat(f, "a union type code must be an integer in [0, 127]");
    }
    spec.type_codes.push_back(static_cast<int8_t>(code));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
    if (rest.empty()) return BadFormat(f, "a union type code list ends with ','");
  }
  return spec;
}

Result<FormatSpec> ParseNested(std::string_view f) {
  static const std::pair<const char*, TypeId> kNested[] = {
      {"+l", TypeId::kList},          {"+L", TypeId::kLargeList},
      {"+vl", TypeId::kListView},     {"+vL", TypeId::kLargeListView},
      {"+s", TypeId::kStruct},        {"+m", TypeId::kMap},
      {"+r", TypeId::kRunEndEncoded},
  };
  for (const auto& [format, id] : kNested) {
    if (f == format) {
      FormatSpec spec;
      spec.id = id;
      return spec;
    }
  }
  if (f.starts_with("+w:")) return ParseFixedSize(f, 3, TypeId::kFixedSizeList);
  if (f.starts_with("+ud:") || f.starts_with("+us:")) return ParseUnion(f);
  return BadFormat(f, "unknown nested type");
}

}  // namespace

std::string QuoteForMessage(std::string_view text) {
  constexpr size_t kMax = 64;
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (text.size() > kMax) out += "...";
  return out + "'";
}

Result<std::string> FormatOf(const DataType& type) {
  if (const SimpleType* simple = FindSimple(type.id())) {
    return std::string(1, simple->code);
  }
  switch (type.id()) {
    case TypeId::kDecimal:
      return "d:" + std::to_string(type.precision()) + "," +
             std::to_string(type.scale()) +
             (type.bit_width() == 128 ? "" : "," + std::to_string(type.bit_width()));
    case TypeId::kBinaryView:
      return std::string("vz");
    case TypeId::kStringView:
      return std::string("vu");
    case TypeId::kDate32:
      return std::string("tdD");
    case TypeId::kDate64:
      return std::string("tdm");
    case TypeId::kTime32:
    case TypeId::kTime64:
      return std::string("tt") + UnitChar(type.unit());
    case TypeId::kTimestamp:
      return std::string("ts") + UnitChar(type.unit()) + ":" + type.timezone();
    case TypeId::kDuration:
      return std::string("tD") + UnitChar(type.unit());
    case TypeId::kInterval:
      return std::string(type.interval_unit() == IntervalUnit::kYearMonth ? "tiM"
                         : type.interval_unit() == IntervalUnit::kDayTime ? "tiD"
                                                                          : "tin");
    case TypeId::kFixedSizeBinary:
      return "w:" + std::to_string(type.byte_width());
    case TypeId::kList:
      return std::string("+l");
    case TypeId::kLargeList:
      return std::string("+L");
    case TypeId::kListView:
      return std::string("+vl");
    case TypeId::kLargeListView:
      return std::string("+vL");
    case TypeId::kRunEndEncoded:
      return std::string("+r");
    case TypeId::kFixedSizeList:
      return "+w:" + std::to_string(type.list_size());
    case TypeId::kStruct:
      return std::string("+s");
    case TypeId::kMap:
      return std::string("+m");
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {
      std::string f = type.id() == TypeId::kDenseUnion ? "+ud:" : "+us:";
      for (size_t k = 0; k < type.type_codes().size(); ++k) {
        if (k > 0) f += ',';
        f += std::to_string(static_cast<int>(type.type_codes()[k]));
      }
      return f;
    }
    case TypeId::kDictionary:
      if (type.index_type() == nullptr || !IsInteger(type.index_type()->id())) {
        return Status::Invalid("dictionary type without an integer index type");
      }
      return FormatOf(*type.index_type());
    default:
      break;
  }
  return Status::NotImplemented("no format string for type id ",
                                static_cast<int>(type.id()));
}

Result<FormatSpec> ParseFormat(std::string_view f) {
  if (f.empty()) return BadFormat(f, "empty");
  if (f.size() == 1) return ParseSingleChar(f);
  switch (f[0]) {
    case 'd':
      if (f[1] != ':') break;
      return ParseDecimal(f);
    case 'w':
      if (f[1] != ':') break;
      return ParseFixedSize(f, 2, TypeId::kFixedSizeBinary);
    case 't':
      return ParseTemporal(f);
    case '+':
      return ParseNested(f);
    case 'v':
      if (f == "vu" || f == "vz") {
        FormatSpec spec;
        spec.id = f == "vu" ? TypeId::kStringView : TypeId::kBinaryView;
        return spec;
      }
      break;
    default:
      break;
  }
  return BadFormat(f, "unknown type code");
}

Result<TypePtr> LeafTypeFromSpec(const FormatSpec& spec) {
  if (const SimpleType* simple = FindSimple(spec.id)) return simple->factory();
  switch (spec.id) {
    case TypeId::kDecimal:
      return MakeDecimal(spec.size, spec.precision, spec.scale);
    case TypeId::kBinaryView:
      return binary_view();
    case TypeId::kStringView:
      return utf8_view();
    case TypeId::kDate32:
      return date32();
    case TypeId::kDate64:
      return date64();
    case TypeId::kTime32:
      return MakeTime32(spec.unit);
    case TypeId::kTime64:
      return MakeTime64(spec.unit);
    case TypeId::kTimestamp:
      return timestamp(spec.unit, spec.timezone);
    case TypeId::kDuration:
      return duration(spec.unit);
    case TypeId::kInterval:
      return interval(static_cast<IntervalUnit>(spec.size));
    case TypeId::kFixedSizeBinary:
      return MakeFixedSizeBinary(spec.size);
    default:
      return Status::Invalid("type id ", static_cast<int>(spec.id),
                             " is not a leaf type");
  }
}

Result<std::string> EncodeMetadata(const KeyValueMetadata& metadata) {
  std::string out;
  auto put_int = [&out](int64_t v) {
    const int32_t n = static_cast<int32_t>(v);
    out.append(reinterpret_cast<const char*>(&n), sizeof(n));
  };
  if (metadata.size() > std::numeric_limits<int32_t>::max()) {
    return Status::CapacityError("too many metadata pairs: ", metadata.size());
  }
  put_int(metadata.size());
  for (int64_t i = 0; i < metadata.size(); ++i) {
    for (const std::string* s : {&metadata.key(i), &metadata.value(i)}) {
      if (s->size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
        return Status::CapacityError("metadata string of ", s->size(),
                                     " bytes does not fit the C encoding");
      }
      put_int(static_cast<int64_t>(s->size()));
      out.append(*s);
    }
  }
  return out;
}

Result<MetadataPtr> DecodeMetadata(const char* data) {
  auto get_int = [&data]() {
    int32_t n;
    std::memcpy(&n, data, sizeof(n));
    data += sizeof(n);
    return n;
  };
  const int32_t count = get_int();
  if (count < 0) return Status::Invalid("metadata has a negative pair count ", count);
  std::vector<std::string> keys, values;
  for (int32_t i = 0; i < count; ++i) {
    for (auto* list : {&keys, &values}) {
      const int32_t len = get_int();
      if (len < 0) {
        return Status::Invalid("metadata pair ", i, " has a negative length ", len);
      }
      list->emplace_back(data, static_cast<size_t>(len));
      data += len;
    }
  }
  return std::make_shared<const KeyValueMetadata>(std::move(keys), std::move(values));
}

int ErrnoFromStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kOutOfMemory:
      return ENOMEM;
    case StatusCode::kIOError:
      return EIO;
    case StatusCode::kNotImplemented:
      return ENOSYS;
    case StatusCode::kCancelled:
      return ECANCELED;
    case StatusCode::kNotFound:
      return ENOENT;
    case StatusCode::kPermissionDenied:
      return EACCES;
    case StatusCode::kUnavailable:
      return EAGAIN;
    case StatusCode::kAlreadyExists:
      return EEXIST;
    case StatusCode::kCapacityError:
      return EOVERFLOW;
    case StatusCode::kUnknownError:
      return EIO;
    default:
      return EINVAL;  // Invalid, TypeError, KeyError, IndexError, ...
  }
}

StatusCode StatusCodeFromErrno(int errnum) {
  switch (errnum) {
    case ENOMEM:
      return StatusCode::kOutOfMemory;
    case EIO:
      return StatusCode::kIOError;
    case ENOSYS:
      return StatusCode::kNotImplemented;
    case ECANCELED:
      return StatusCode::kCancelled;
    case ENOENT:
      return StatusCode::kNotFound;
    case EACCES:
    case EPERM:
      return StatusCode::kPermissionDenied;
    case EAGAIN:
      return StatusCode::kUnavailable;
    case EEXIST:
      return StatusCode::kAlreadyExists;
    case EOVERFLOW:
      return StatusCode::kCapacityError;
    case EINVAL:
      return StatusCode::kInvalid;
    default:
      return StatusCode::kIOError;
  }
}

}  // namespace quiver::internal
