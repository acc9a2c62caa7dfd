#include "json_values_util.h"

#include <algorithm>
#include <bit>
#include <fstream>
#include <sstream>
#include <vector>

namespace quiver::interop {

namespace {

std::string MetadataSuffix(const MetadataPtr& metadata) {
  if (metadata == nullptr || metadata->size() == 0) return "";
  std::string out = " {";
  for (int64_t i = 0; i < metadata->size(); ++i) {
    if (i > 0) out += ", ";
    out += metadata->key(i) + ": " + metadata->value(i);
  }
  return out + "}";
}

std::string IntName(const DataType& type) {
  return (IsSignedInteger(type.id()) ? "int" : "uint") + std::to_string(type.bit_width());
}

std::string FieldList(const FieldVector& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += ", ";
    out += CanonicalFieldString(*fields[i]);
  }
  return out;
}

}  // namespace

std::string CanonicalFieldString(const Field& field) {
  return field.name() + ": " + CanonicalTypeString(*field.type()) +
         (field.nullable() ? "" : " not null") + MetadataSuffix(field.metadata());
}

std::string CanonicalTypeString(const DataType& type) {
  const std::string unit = TimeUnitName(type.unit());
  switch (type.id()) {
    case TypeId::kNull:
      return "null";
    case TypeId::kBool:
      return "bool";
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kUInt8:
    case TypeId::kUInt16:
    case TypeId::kUInt32:
    case TypeId::kUInt64:
      return IntName(type);
    case TypeId::kHalfFloat:
      return "float16";
    case TypeId::kFloat:
      return "float32";
    case TypeId::kDouble:
      return "float64";
    case TypeId::kDecimal:
      return "decimal" + std::to_string(type.bit_width()) + "(" +
             std::to_string(type.precision()) + ", " + std::to_string(type.scale()) + ")";
    case TypeId::kDate32:
      return "date32";
    case TypeId::kDate64:
      return "date64";
    case TypeId::kTime32:
      return "time32[" + unit + "]";
    case TypeId::kTime64:
      return "time64[" + unit + "]";
    case TypeId::kTimestamp:
      return "timestamp[" + unit +
             (type.timezone().empty() ? "" : ", tz=" + type.timezone()) + "]";
    case TypeId::kDuration:
      return "duration[" + unit + "]";
    case TypeId::kInterval:
      return type.name();
    case TypeId::kString:
      return "utf8";
    case TypeId::kLargeString:
      return "large_utf8";
    case TypeId::kBinary:
      return "binary";
    case TypeId::kLargeBinary:
      return "large_binary";
    case TypeId::kStringView:
      return "string_view";
    case TypeId::kBinaryView:
      return "binary_view";
    case TypeId::kFixedSizeBinary:
      return "fixed_size_binary[" + std::to_string(type.byte_width()) + "]";
    case TypeId::kList:
      return "list<" + FieldList(type.fields()) + ">";
    case TypeId::kLargeList:
      return "large_list<" + FieldList(type.fields()) + ">";
    case TypeId::kListView:
      return "list_view<" + FieldList(type.fields()) + ">";
    case TypeId::kLargeListView:
      return "large_list_view<" + FieldList(type.fields()) + ">";
    case TypeId::kRunEndEncoded:
      return "run_end_encoded<" + FieldList(type.fields()) + ">";
    case TypeId::kFixedSizeList:
      return "fixed_size_list<" + FieldList(type.fields()) + ">[" +
             std::to_string(type.list_size()) + "]";
    case TypeId::kStruct:
      return "struct<" + FieldList(type.fields()) + ">";
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {  // each field with its type code: "a: int32=5"
      std::string out = type.name() + "<";
      for (int k = 0; k < type.num_fields(); ++k) {
        if (k > 0) out += ", ";
        out +=
            CanonicalFieldString(*type.field(k)) + "=" +
            std::to_string(static_cast<int>(type.type_codes()[static_cast<size_t>(k)]));
      }
      return out + ">";
    }
    case TypeId::kMap:
      return "map<" + FieldList(type.fields()) +
             (type.keys_sorted() ? ", keys_sorted" : "") + ">";
    case TypeId::kDictionary:
      return "dictionary<values=" + CanonicalTypeString(*type.value_type()) +
             ", indices=" + IntName(*type.index_type()) + ", " +
             (type.ordered() ? "ordered" : "unordered") + ">";
  }
  return "unsupported(" + type.ToString() + ")";
}

Json MetadataPairs(const MetadataPtr& metadata) {
  Json out = Json::array();
  if (metadata == nullptr) return out;
  for (int64_t i = 0; i < metadata->size(); ++i) {
    out.push_back(Json::array({metadata->key(i), metadata->value(i)}));
  }
  return out;
}

Json SchemaToJson(const Schema& schema) {
  Json fields = Json::array();
  for (const FieldPtr& f : schema.fields()) {
    Json field = Json::object();
    field["name"] = f->name();
    field["type"] = CanonicalTypeString(*f->type());
    field["nullable"] = f->nullable();
    field["metadata"] = MetadataPairs(f->metadata());
    fields.push_back(std::move(field));
  }
  Json out = Json::object();
  out["fields"] = std::move(fields);
  out["metadata"] = MetadataPairs(schema.metadata());
  return out;
}

std::string ToHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string FormatDecimalBytes(const uint8_t* bytes, int width, int32_t scale) {
  // Two's complement to sign and magnitude, then long division by ten over
  // the bytes, most significant first.
  std::vector<uint8_t> mag(bytes, bytes + width);
  const bool negative = (mag.back() & 0x80) != 0;
  if (negative) {
    unsigned carry = 1;
    for (uint8_t& byte : mag) {
      const unsigned v = static_cast<uint8_t>(~byte) + carry;
      byte = static_cast<uint8_t>(v);
      carry = v >> 8;
    }
  }
  std::string digits;
  for (;;) {
    unsigned rest = 0;
    bool zero = true;
    for (size_t k = mag.size(); k-- > 0;) {
      const unsigned cur = (rest << 8) | mag[k];
      mag[k] = static_cast<uint8_t>(cur / 10);
      rest = cur % 10;
      zero = zero && mag[k] == 0;
    }
    digits += static_cast<char>('0' + rest);
    if (zero) break;
  }
  std::reverse(digits.begin(), digits.end());
  if (scale <= 0) {
    if (digits != "0") digits.append(static_cast<size_t>(-scale), '0');
    return (negative ? "-" : "") + digits;
  }
  if (digits.size() <= static_cast<size_t>(scale)) {
    digits.insert(0, static_cast<size_t>(scale) + 1 - digits.size(), '0');
  }
  digits.insert(digits.size() - static_cast<size_t>(scale), ".");
  return (negative ? "-" : "") + digits;
}

std::string FormatDecimal(const Decimal128& v, int32_t scale) {
  uint8_t bytes[16];
  v.ToBytes(bytes);
  return FormatDecimalBytes(bytes, 16, scale);
}

namespace {

template <typename T>
std::string DecimalString(T v) {
  return std::to_string(v);
}

template <typename ArrayType>
Result<Json> ListValue(const ArrayType& list, int64_t i) {
  Json out = Json::array();
  const ArrayPtr& values = list.values();
  for (int64_t j = list.value_offset(i); j < list.value_offset(i + 1); ++j) {
    QUIVER_ASSIGN_OR_RAISE(Json v, CanonicalValue(*values, j));
    out.push_back(std::move(v));
  }
  return out;
}

Result<Json> NestedValue(const Array& array, int64_t i) {
  switch (array.type_id()) {
    case TypeId::kList:
      return ListValue(static_cast<const ListArray&>(array), i);
    case TypeId::kLargeList:
      return ListValue(static_cast<const LargeListArray&>(array), i);
    case TypeId::kFixedSizeList: {
      const auto& list = static_cast<const FixedSizeListArray&>(array);
      Json out = Json::array();
      for (int32_t j = 0; j < list.list_size(); ++j) {
        QUIVER_ASSIGN_OR_RAISE(Json v,
                               CanonicalValue(*list.values(), list.value_offset(i) + j));
        out.push_back(std::move(v));
      }
      return out;
    }
    case TypeId::kStruct: {
      const auto& st = static_cast<const StructArray&>(array);
      Json out = Json::object();
      for (int k = 0; k < st.num_fields(); ++k) {
        QUIVER_ASSIGN_OR_RAISE(out[array.type()->field(k)->name()],
                               CanonicalValue(*st.field(k), i));
      }
      return out;
    }
    case TypeId::kMap: {
      const auto& map = static_cast<const MapArray&>(array);
      Json out = Json::array();
      for (int64_t j = map.value_offset(i); j < map.value_offset(i + 1); ++j) {
        QUIVER_ASSIGN_OR_RAISE(Json key, CanonicalValue(*map.keys(), j));
        QUIVER_ASSIGN_OR_RAISE(Json item, CanonicalValue(*map.items(), j));
        out.push_back(Json::array({std::move(key), std::move(item)}));
      }
      return out;
    }
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {  // {"type_code": c, "value": the child's value}
      const auto& u = static_cast<const UnionArray&>(array);
      const int k = u.child_id(i);
      if (k < 0) {
        return Status::Invalid("union type code ", static_cast<int>(u.type_code(i)),
                               " at row ", i, " names no child");
      }
      Json out = Json::object();
      out["type_code"] = static_cast<int>(u.type_code(i));
      QUIVER_ASSIGN_OR_RAISE(out["value"], CanonicalValue(*u.field(k), u.child_index(i)));
      return out;
    }
    case TypeId::kDictionary: {
      const auto& dict = static_cast<const DictionaryArray&>(array);
      const int64_t index = dict.GetValueIndex(i);
      if (index < 0 || index >= dict.dictionary()->length()) {
        return Status::IndexError("dictionary index ", index, " at row ", i,
                                  " outside a dictionary of ",
                                  dict.dictionary()->length());
      }
      return CanonicalValue(*dict.dictionary(), index);
    }
    default:
      return Status::NotImplemented("no canonical form for ", array.type()->ToString());
  }
}

}  // namespace

Result<Json> CanonicalValue(const Array& array, int64_t i) {
  if (array.type_id() == TypeId::kNull || array.IsNull(i)) return Json(nullptr);
  const ArrayData& d = *array.data();
  switch (array.type_id()) {
    case TypeId::kBool:
      return Json(static_cast<const BooleanArray&>(array).Value(i));
    case TypeId::kInt8:
      return Json(DecimalString(d.GetValues<int8_t>(1)[i]));
    case TypeId::kInt16:
      return Json(DecimalString(d.GetValues<int16_t>(1)[i]));
    case TypeId::kInt32:
    case TypeId::kDate32:
    case TypeId::kTime32:
      return Json(DecimalString(d.GetValues<int32_t>(1)[i]));
    case TypeId::kInt64:
    case TypeId::kDate64:
    case TypeId::kTime64:
    case TypeId::kTimestamp:
    case TypeId::kDuration:
      return Json(DecimalString(d.GetValues<int64_t>(1)[i]));
    case TypeId::kUInt8:
      return Json(DecimalString(d.GetValues<uint8_t>(1)[i]));
    case TypeId::kUInt16:
    case TypeId::kHalfFloat:
      return Json(DecimalString(d.GetValues<uint16_t>(1)[i]));
    case TypeId::kUInt32:
      return Json(DecimalString(d.GetValues<uint32_t>(1)[i]));
    case TypeId::kUInt64:
      return Json(DecimalString(d.GetValues<uint64_t>(1)[i]));
    case TypeId::kFloat:
      return Json(DecimalString(std::bit_cast<uint32_t>(d.GetValues<float>(1)[i])));
    case TypeId::kDouble:
      return Json(DecimalString(std::bit_cast<uint64_t>(d.GetValues<double>(1)[i])));
    case TypeId::kDecimal:
      return Json(FormatDecimalBytes(static_cast<const DecimalArray&>(array).GetValue(i),
                                     array.type()->byte_width(), array.type()->scale()));
    case TypeId::kString:
      return Json(static_cast<const StringArray&>(array).GetString(i));
    case TypeId::kLargeString:
      return Json(static_cast<const LargeStringArray&>(array).GetString(i));
    case TypeId::kBinary:
      return Json(ToHex(static_cast<const BinaryArray&>(array).GetView(i)));
    case TypeId::kLargeBinary:
      return Json(ToHex(static_cast<const LargeBinaryArray&>(array).GetView(i)));
    case TypeId::kStringView:
      return Json(static_cast<const BinaryViewArray&>(array).GetString(i));
    case TypeId::kBinaryView:
      return Json(ToHex(static_cast<const BinaryViewArray&>(array).GetView(i)));
    case TypeId::kFixedSizeBinary:
    case TypeId::kInterval:  // the value's bytes (little-endian parts), in hex
      return Json(ToHex(static_cast<const FixedSizeBinaryArray&>(array).GetView(i)));
    default:
      return NestedValue(array, i);
  }
}

Result<Json> CanonicalColumn(const Array& array) {
  Json out = Json::array();
  for (int64_t i = 0; i < array.length(); ++i) {
    QUIVER_ASSIGN_OR_RAISE(Json v, CanonicalValue(array, i));
    out.push_back(std::move(v));
  }
  return out;
}

namespace {

std::string Show(const Json& v) {
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  return s.size() > 200 ? s.substr(0, 200) + "..." : s;
}

std::string Where(const std::string& path) { return path.empty() ? "value" : path; }

}  // namespace

std::string FirstDifference(const Json& expected, const Json& actual,
                            const std::string& path) {
  const bool both_arrays = expected.is_array() && actual.is_array();
  const bool both_objects = expected.is_object() && actual.is_object();
  if (!both_arrays && !both_objects) {
    if (expected == actual) return "";
    return Where(path) + ": expected " + Show(expected) + ", got " + Show(actual);
  }
  if (both_arrays) {
    if (expected.size() != actual.size()) {
      return Where(path) + ": expected " + std::to_string(expected.size()) +
             " elements " + Show(expected) + ", got " + std::to_string(actual.size()) +
             " " + Show(actual);
    }
    for (size_t k = 0; k < expected.size(); ++k) {
      std::string d =
          FirstDifference(expected[k], actual[k], path + "[" + std::to_string(k) + "]");
      if (!d.empty()) return d;
    }
    return "";
  }
  Json expected_keys = Json::array();
  Json actual_keys = Json::array();
  for (const auto& [k, v] : expected.items()) expected_keys.push_back(k);
  for (const auto& [k, v] : actual.items()) actual_keys.push_back(k);
  if (expected_keys != actual_keys) {
    return Where(path) + ": expected fields " + Show(expected_keys) + ", got " +
           Show(actual_keys);
  }
  for (const auto& [k, v] : expected.items()) {
    std::string d = FirstDifference(v, actual[k], path + "." + k);
    if (!d.empty()) return d;
  }
  return "";
}

Result<Json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot open ", path);
  std::stringstream text;
  text << in.rdbuf();
  Json value = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return Status::Invalid(path, " is not valid JSON");
  return value;
}

Status WriteJsonFile(const std::string& path, const Json& value) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::IOError("cannot create ", path);
  out << value.dump(1);
  out.close();
  if (!out) return Status::IOError("cannot write ", path);
  return Status::OK();
}

}  // namespace quiver::interop
