// Text rendering of arrays: PrettyPrint (multi-line, Arrow C++'s layout),
// FormatValue (one value on one line) and Array::ToString.
//
// Arrays are validated (structurally) before printing; on top of that, every
// value range read from offsets while printing is checked against the data
// buffer or child array it points into, so a middle offset that points
// elsewhere prints as "<invalid offsets>" instead of reading out of bounds.
#include "quiver/columnar/pretty_print.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "columnar/bitmap_runs.h"
#include "columnar/half_float.h"
#include "columnar/run_end_util.h"
#include "columnar/utf8.h"
#include "columnar/view_util.h"

namespace quiver {

namespace {

using internal::LoadValue;
using internal::ValidityBits;

constexpr char kInvalidOffsets[] = "<invalid offsets>";

bool IsNullAt(const ArrayData& d, int64_t i) {
  if (d.type->id() == TypeId::kNull) return true;
  const uint8_t* bits = ValidityBits(d);
  return bits != nullptr && !bit_util::GetBit(bits, d.offset + i);
}

// ---------------------------------------------------------------------------
// Scalars

template <typename T>
void AppendNumber(T v, std::string* out) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, res.ptr);
}

void AppendHex(std::string_view bytes, std::string* out) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  for (unsigned char c : bytes) {
    out->push_back(kDigits[c >> 4]);
    out->push_back(kDigits[c & 15]);
  }
}

void AppendEscapedAscii(unsigned char c, std::string* out) {
  switch (c) {
    case '"':
      out->append("\\\"");
      return;
    case '\\':
      out->append("\\\\");
      return;
    case '\n':
      out->append("\\n");
      return;
    case '\t':
      out->append("\\t");
      return;
    case '\r':
      out->append("\\r");
      return;
    default:
      if (c < 0x20 || c == 0x7F) {
        out->append("\\x");
        AppendHex(std::string_view(reinterpret_cast<const char*>(&c), 1), out);
      } else {
        out->push_back(static_cast<char>(c));
      }
  }
}

// "text" with escapes; bytes that are not part of valid UTF-8 print as \xNN.
void AppendQuoted(std::string_view s, std::string* out) {
  out->push_back('"');
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  int64_t i = 0;
  const int64_t n = static_cast<int64_t>(s.size());
  while (i < n) {
    const int64_t good = i + internal::Utf8ValidPrefixLength(p + i, n - i);
    for (; i < good; ++i) {
      if (p[i] < 0x80) {
        AppendEscapedAscii(p[i], out);
      } else {
        out->push_back(static_cast<char>(p[i]));
      }
    }
    if (i < n) {
      out->append("\\x");
      AppendHex(std::string_view(s.data() + i, 1), out);
      ++i;
    }
  }
  out->push_back('"');
}

// [begin, end) of value i of an offsets-based array, if it lies within what
// the offsets point into: the data buffer (binary) or the child array (lists,
// maps). The bound is checked directly, not through the first and last
// offsets, because a nested array is printed through slices whose own first
// and last offsets are middle offsets of the validated parent.
template <typename O>
bool ValueRange(const ArrayData& d, int64_t i, int64_t* begin, int64_t* end) {
  int64_t limit;
  if (IsBaseBinary(d.type->id())) {
    limit = d.buffers[2] == nullptr ? 0 : d.buffers[2]->size();
  } else {
    limit = d.child_data[0]->length;
  }
  const uint8_t* offsets = d.GetBuffer(1);
  *begin = LoadValue<O>(offsets, d.offset + i);
  *end = LoadValue<O>(offsets, d.offset + i + 1);
  return 0 <= *begin && *begin <= *end && *end <= limit;
}

// The child range [begin, end) a list view's slot i shows; false when the
// view does not lie in the child (shown, not read).
template <typename O>
bool ViewRange(const ArrayData& d, int64_t i, int64_t* begin, int64_t* end) {
  const int64_t limit = d.child_data[0]->length;
  *begin = LoadValue<O>(d.GetBuffer(1), d.offset + i);
  const int64_t size = LoadValue<O>(d.GetBuffer(2), d.offset + i);
  if (*begin < 0 || size < 0 || *begin > limit || size > limit - *begin) return false;
  *end = *begin + size;  // cannot overflow: both lie in [0, limit]
  return true;
}

// The child range [begin, end) of slot i of a list, large list, list view or
// large list view; false when it does not lie in the child.
bool ListRange(const ArrayData& d, int64_t i, int64_t* begin, int64_t* end) {
  switch (d.type->id()) {
    case TypeId::kList:
      return ValueRange<int32_t>(d, i, begin, end);
    case TypeId::kLargeList:
      return ValueRange<int64_t>(d, i, begin, end);
    case TypeId::kListView:
      return ViewRange<int32_t>(d, i, begin, end);
    default:  // kLargeListView
      return ViewRange<int64_t>(d, i, begin, end);
  }
}

template <typename O>
void AppendBinaryValue(const ArrayData& d, int64_t i, bool is_string, std::string* out) {
  int64_t begin;
  int64_t end;
  if (!ValueRange<O>(d, i, &begin, &end)) {
    out->append(kInvalidOffsets);
    return;
  }
  const std::string_view v(reinterpret_cast<const char*>(d.GetBuffer(2)) + begin,
                           static_cast<size_t>(end - begin));
  if (is_string) {
    AppendQuoted(v, out);
  } else {
    AppendHex(v, out);
  }
}

template <typename T>
void AppendFixed(const ArrayData& d, int64_t i, std::string* out) {
  AppendNumber(LoadValue<T>(d.GetBuffer(1), d.offset + i), out);
}

// A valid value of a non-nested, non-dictionary type.
void AppendScalar(const ArrayData& d, int64_t i, std::string* out) {
  const int64_t pos = d.offset + i;
  switch (d.type->id()) {
    case TypeId::kBool:
      out->append(bit_util::GetBit(d.GetBuffer(1), pos) ? "true" : "false");
      return;
    case TypeId::kInt8:
      return AppendFixed<int8_t>(d, i, out);
    case TypeId::kInt16:
      return AppendFixed<int16_t>(d, i, out);
    case TypeId::kInt32:
    case TypeId::kDate32:
    case TypeId::kTime32:
      return AppendFixed<int32_t>(d, i, out);
    case TypeId::kInt64:
    case TypeId::kDate64:
    case TypeId::kTime64:
    case TypeId::kTimestamp:
    case TypeId::kDuration:
      return AppendFixed<int64_t>(d, i, out);
    case TypeId::kUInt8:
      return AppendFixed<uint8_t>(d, i, out);
    case TypeId::kUInt16:
      return AppendFixed<uint16_t>(d, i, out);
    case TypeId::kUInt32:
      return AppendFixed<uint32_t>(d, i, out);
    case TypeId::kUInt64:
      return AppendFixed<uint64_t>(d, i, out);
    case TypeId::kHalfFloat:
      return AppendNumber(internal::HalfToFloat(LoadValue<uint16_t>(d.GetBuffer(1), pos)),
                          out);
    case TypeId::kFloat:
      return AppendFixed<float>(d, i, out);
    case TypeId::kDouble:
      return AppendFixed<double>(d, i, out);
    case TypeId::kDecimal:
      out->append(FormatDecimal(d.GetBuffer(1) + pos * d.type->byte_width(),
                                d.type->byte_width(), d.type->scale()));
      return;
    case TypeId::kInterval:
      out->append(FormatInterval(d.type->interval_unit(),
                                 d.GetBuffer(1) + pos * d.type->byte_width()));
      return;
    case TypeId::kFixedSizeBinary: {
      const int64_t width = d.type->byte_width();
      AppendHex(
          std::string_view(reinterpret_cast<const char*>(d.GetBuffer(1)) + pos * width,
                           static_cast<size_t>(width)),
          out);
      return;
    }
    case TypeId::kString:
      return AppendBinaryValue<int32_t>(d, i, true, out);
    case TypeId::kLargeString:
      return AppendBinaryValue<int64_t>(d, i, true, out);
    case TypeId::kBinary:
      return AppendBinaryValue<int32_t>(d, i, false, out);
    case TypeId::kLargeBinary:
      return AppendBinaryValue<int64_t>(d, i, false, out);
    case TypeId::kBinaryView:
    case TypeId::kStringView: {
      std::string_view v;
      if (!internal::LoadView(d, i, &v)) {
        out->append("<invalid view>");
      } else if (d.type->id() == TypeId::kStringView) {
        AppendQuoted(v, out);
      } else {
        AppendHex(v, out);
      }
      return;
    }
    default:
      out->append("<unprintable>");
  }
}

int64_t DictionaryIndex(const ArrayData& d, int64_t i) {
  const uint8_t* b = d.GetBuffer(1);
  const int64_t pos = d.offset + i;
  switch (d.type->index_type()->id()) {
    case TypeId::kInt8:
      return LoadValue<int8_t>(b, pos);
    case TypeId::kInt16:
      return LoadValue<int16_t>(b, pos);
    case TypeId::kInt32:
      return LoadValue<int32_t>(b, pos);
    case TypeId::kInt64:
      return LoadValue<int64_t>(b, pos);
    case TypeId::kUInt8:
      return LoadValue<uint8_t>(b, pos);
    case TypeId::kUInt16:
      return LoadValue<uint16_t>(b, pos);
    case TypeId::kUInt32:
      return LoadValue<uint32_t>(b, pos);
    default: {
      const uint64_t v = LoadValue<uint64_t>(b, pos);
      return v > static_cast<uint64_t>(INT64_MAX) ? -1 : static_cast<int64_t>(v);
    }
  }
}

// ---------------------------------------------------------------------------
// One value on one line (FormatValue)

void AppendInline(const ArrayData& d, int64_t i, std::string* out);

void AppendInlineRange(const ArrayData& child, int64_t begin, int64_t n,
                       std::string* out) {
  out->push_back('[');
  for (int64_t k = 0; k < n; ++k) {
    if (k > 0) out->append(", ");
    AppendInline(child, begin + k, out);
  }
  out->push_back(']');
}

void AppendInlineList(const ArrayData& d, int64_t i, std::string* out) {
  int64_t begin;
  int64_t end;
  if (!ListRange(d, i, &begin, &end)) {
    out->append(kInvalidOffsets);
    return;
  }
  AppendInlineRange(*d.child_data[0], begin, end - begin, out);
}

void AppendInlineMap(const ArrayData& d, int64_t i, std::string* out) {
  int64_t begin;
  int64_t end;
  if (!ValueRange<int32_t>(d, i, &begin, &end)) {
    out->append(kInvalidOffsets);
    return;
  }
  const ArrayData& entries = *d.child_data[0];
  out->push_back('{');
  for (int64_t k = begin; k < end; ++k) {
    if (k > begin) out->append(", ");
    AppendInline(*entries.child_data[0], entries.offset + k, out);
    out->append(": ");
    AppendInline(*entries.child_data[1], entries.offset + k, out);
  }
  out->push_back('}');
}

void AppendInlineStruct(const ArrayData& d, int64_t i, std::string* out) {
  out->push_back('{');
  for (int k = 0; k < d.type->num_fields(); ++k) {
    if (k > 0) out->append(", ");
    out->append(d.type->field(k)->name());
    out->append(": ");
    AppendInline(*d.child_data[k], d.offset + i, out);
  }
  out->push_back('}');
}

// A union's slot as "{name: value}", the value from the child its type code
// names (checked: printing runs after Validate only).
void AppendInlineUnion(const ArrayData& d, int64_t i, std::string* out) {
  const int8_t code = d.GetValues<int8_t>(1)[i];
  const int k = d.type->child_id(code);
  if (k < 0) {
    out->append("<invalid type code " + std::to_string(code) + ">");
    return;
  }
  const ArrayData& child = *d.child_data[static_cast<size_t>(k)];
  const int64_t index =
      d.type->id() == TypeId::kDenseUnion ? d.GetValues<int32_t>(2)[i] : d.offset + i;
  if (index < 0 || index >= child.length) {
    out->append("<invalid offset " + std::to_string(index) + ">");
    return;
  }
  out->push_back('{');
  out->append(d.type->field(k)->name());
  out->append(": ");
  AppendInline(child, index, out);
  out->push_back('}');
}

// A run-end encoded slot as its run's value; a slot the runs do not cover
// (an invalid array) is shown, not read.
void AppendInlineRunEndEncoded(const ArrayData& d, int64_t i, std::string* out) {
  int64_t run = -1;
  run_end::ForEachRun(d, i, 1, [&](int64_t k, int64_t) {
    run = k;
    return true;
  });
  if (run < 0) {
    out->append("<invalid run ends>");
    return;
  }
  AppendInline(*d.child_data[1], run, out);
}

void AppendInline(const ArrayData& d, int64_t i, std::string* out) {
  if (IsNullAt(d, i)) {
    out->append("null");
    return;
  }
  switch (d.type->id()) {
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kListView:
    case TypeId::kLargeListView:
      return AppendInlineList(d, i, out);
    case TypeId::kFixedSizeList: {
      const int64_t size = d.type->list_size();
      return AppendInlineRange(*d.child_data[0], (d.offset + i) * size, size, out);
    }
    case TypeId::kMap:
      return AppendInlineMap(d, i, out);
    case TypeId::kStruct:
      return AppendInlineStruct(d, i, out);
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion:
      return AppendInlineUnion(d, i, out);
    case TypeId::kRunEndEncoded:
      return AppendInlineRunEndEncoded(d, i, out);
    case TypeId::kDictionary: {
      const int64_t index = DictionaryIndex(d, i);
      if (index < 0 || index >= d.dictionary->length) {
        out->append("<invalid index>");
        return;
      }
      return AppendInline(*d.dictionary, index, out);
    }
    default:
      return AppendScalar(d, i, out);
  }
}

// ---------------------------------------------------------------------------
// Multi-line printing (PrettyPrint)

class Printer {
 public:
  Printer(const PrettyPrintOptions& options, std::ostream* out)
      : options_(options), out_(*out) {}

  void Print(const ArrayData& d, int indent) {
    switch (d.type->id()) {
      case TypeId::kNull:
        Indent(indent);
        out_ << d.length << " nulls";
        return;
      case TypeId::kStruct:
        return PrintStruct(d, indent);
      case TypeId::kDictionary:
        return PrintDictionary(d, indent);
      case TypeId::kList:
      case TypeId::kLargeList:
      case TypeId::kListView:
      case TypeId::kLargeListView:
        return PrintValues(d, indent, true,
                           [&](int64_t i, int in) { PrintListValue(d, i, in); });
      case TypeId::kFixedSizeList:
        return PrintValues(d, indent, true, [&](int64_t i, int in) {
          const int64_t size = d.type->list_size();
          Print(*d.child_data[0]->Slice((d.offset + i) * size, size), in);
        });
      case TypeId::kMap:
        return PrintValues(d, indent, true,
                           [&](int64_t i, int in) { PrintMapValue(d, i, in); });
      case TypeId::kSparseUnion:
      case TypeId::kDenseUnion:     // one slot a line: {field: value}
      case TypeId::kRunEndEncoded:  // one slot a line: its run's value
        return PrintValues(d, indent, false, [&](int64_t i, int in) {
          Indent(in);
          std::string text;
          AppendInline(d, i, &text);
          out_ << text;
        });
      default:
        return PrintValues(d, indent, false, [&](int64_t i, int in) {
          Indent(in);
          std::string text;
          AppendScalar(d, i, &text);
          out_ << text;
        });
    }
  }

 private:
  void Indent(int n) {
    for (int k = 0; k < n; ++k) out_ << ' ';
  }

  // "[", one value per line (null_rep for nulls, print_value(i, indent) for
  // the others), a "..." line in place of the middle of long arrays, "]".
  template <typename Fn>
  void PrintValues(const ArrayData& d, int indent, bool is_container, Fn&& print_value) {
    Indent(indent);
    out_ << '[';
    if (d.length == 0) {
      out_ << ']';
      return;
    }
    out_ << '\n';
    const int64_t window =
        std::max<int64_t>(0, is_container ? options_.container_window : options_.window);
    const bool elide = d.length > 2 * window;
    for (int64_t i = 0; i < d.length; ++i) {
      if (elide && i == window) {
        Indent(indent + 2);
        out_ << "...\n";
        i = d.length - window;
        if (i >= d.length) break;
      }
      if (IsNullAt(d, i)) {
        Indent(indent + 2);
        out_ << options_.null_rep;
      } else {
        print_value(i, indent + 2);
      }
      if (i != d.length - 1) out_ << ',';
      out_ << '\n';
    }
    Indent(indent);
    out_ << ']';
  }

  void PrintListValue(const ArrayData& d, int64_t i, int indent) {
    int64_t begin;
    int64_t end;
    if (!ListRange(d, i, &begin, &end)) {
      Indent(indent);
      out_ << kInvalidOffsets;
      return;
    }
    Print(*d.child_data[0]->Slice(begin, end - begin), indent);
  }

  void PrintMapValue(const ArrayData& d, int64_t i, int indent) {
    int64_t begin;
    int64_t end;
    if (!ValueRange<int32_t>(d, i, &begin, &end)) {
      Indent(indent);
      out_ << kInvalidOffsets;
      return;
    }
    const ArrayData& entries = *d.child_data[0];
    Indent(indent);
    out_ << "keys:\n";
    Print(*entries.child_data[0]->Slice(entries.offset + begin, end - begin), indent);
    out_ << '\n';
    Indent(indent);
    out_ << "values:\n";
    Print(*entries.child_data[1]->Slice(entries.offset + begin, end - begin), indent);
  }

  void PrintStruct(const ArrayData& d, int indent) {
    Indent(indent);
    out_ << "-- is_valid:";
    const uint8_t* bits = ValidityBits(d);
    if (bits == nullptr || bit_util::CountSetBits(bits, d.offset, d.length) == d.length) {
      out_ << " all not null";
    } else {
      out_ << '\n';
      // The bitmap read as a boolean array, without copying it.
      auto valid =
          ArrayData::Make(boolean(), d.length, {nullptr, d.buffers[0]}, 0, d.offset);
      Print(*valid, indent + 2);
    }
    for (size_t k = 0; k < d.child_data.size(); ++k) {
      out_ << '\n';
      Indent(indent);
      out_ << "-- child " << k << " type: " << d.child_data[k]->type->ToString() << '\n';
      Print(*d.child_data[k]->Slice(d.offset, d.length), indent + 2);
    }
  }

  void PrintDictionary(const ArrayData& d, int indent) {
    Indent(indent);
    out_ << "-- dictionary:\n";
    Print(*d.dictionary, indent + 2);
    out_ << '\n';
    Indent(indent);
    out_ << "-- indices:\n";
    ArrayData indices = d;
    indices.type = d.type->index_type();
    indices.dictionary = nullptr;
    Print(indices, indent + 2);
  }

  const PrettyPrintOptions& options_;
  std::ostream& out_;
};

}  // namespace

Status PrettyPrint(const Array& array, const PrettyPrintOptions& options,
                   std::ostream* out) {
  QUIVER_RETURN_NOT_OK(array.Validate());
  Printer(options, out).Print(*array.data(), std::max(0, options.indent));
  return Status::OK();
}

std::string FormatValue(const Array& array, int64_t i) {
  if (i < 0 || i >= array.length()) return "<out of range>";
  std::string out;
  AppendInline(*array.data(), i, &out);
  return out;
}

std::string Array::ToString() const {
  std::ostringstream ss;
  Status st = PrettyPrint(*this, PrettyPrintOptions{}, &ss);
  if (!st.ok()) return "<invalid array: " + st.message() + ">";
  return ss.str();
}

}  // namespace quiver
