// Content validation of ArrayData (Array::ValidateFull): every offset, UTF-8
// sequence, dictionary index, map key, decimal and time value, and the null
// count. Runs only after the structural checks of validate.cc passed, so every
// buffer read here is known to be in bounds.
#include <cstring>
#include <type_traits>

#include "columnar/bitmap_runs.h"
#include "columnar/run_end_util.h"
#include "columnar/utf8.h"
#include "columnar/validate_internal.h"
#include "quiver/columnar/array.h"

namespace quiver::internal {

namespace {

// The values (or offsets) buffer, positioned at the array's first slot.
template <typename T>
const uint8_t* SlotBase(const ArrayData& d, int i) {
  const Buffer* b = d.buffers[i].get();
  if (b == nullptr) return nullptr;
  return b->data() + d.offset * static_cast<int64_t>(sizeof(T));
}

Status CheckNullCount(const ArrayData& d) {
  if (d.type->id() == TypeId::kNull) return Status::OK();
  const Buffer* bitmap = d.buffers[0].get();
  const int64_t actual =
      bitmap == nullptr
          ? 0
          : d.length - bit_util::CountSetBits(bitmap->data(), d.offset, d.length);
  if (d.null_count != kUnknownNullCount && d.null_count != actual) {
    return InvalidArray(*d.type, "null_count is ", d.null_count,
                        " but the validity bitmap has ", actual, " nulls");
  }
  return Status::OK();
}

// All offsets non-decreasing. The first is known to be >= 0 and the last
// within the data or child, so every offset then lies inside them.
template <typename O>
Status CheckAllOffsets(const ArrayData& d) {
  if (d.length == 0) return Status::OK();
  const uint8_t* base = SlotBase<O>(d, 1);
  O prev = LoadValue<O>(base, 0);
  for (int64_t i = 1; i <= d.length; ++i) {
    const O next = LoadValue<O>(base, i);
    if (QUIVER_PREDICT_FALSE(next < prev)) {
      return InvalidArray(*d.type, "offset ", prev, " at position ", i - 1,
                          " is greater than the next offset ", next);
    }
    prev = next;
  }
  return Status::OK();
}

template <typename O>
Status Utf8ErrorInValue(const ArrayData& d, int64_t i) {
  const uint8_t* offsets = SlotBase<O>(d, 1);
  const int64_t begin = LoadValue<O>(offsets, i);
  const int64_t size = LoadValue<O>(offsets, i + 1) - begin;
  const int64_t bad = Utf8ValidPrefixLength(d.buffers[2]->data() + begin, size);
  return InvalidArray(*d.type, "invalid UTF-8 in the value at position ", i, " (byte ",
                      bad, " of ", size, ")");
}

// Each valid value must be valid UTF-8 on its own. Fast path: when all the
// bytes spanned are valid UTF-8, a value is valid exactly when both its ends
// fall on character starts (or the end of the span).
template <typename O>
Status CheckUtf8(const ArrayData& d) {
  if (d.length == 0) return Status::OK();
  const uint8_t* offsets = SlotBase<O>(d, 1);
  const int64_t begin = LoadValue<O>(offsets, 0);
  const int64_t end = LoadValue<O>(offsets, d.length);
  if (begin == end) return Status::OK();
  const uint8_t* data = d.buffers[2]->data();
  const uint8_t* valid = ValidityBits(d);
  int64_t bad = -1;
  if (IsValidUtf8(data + begin, end - begin)) {
    auto starts_char = [&](int64_t pos) {
      return pos >= end || !IsUtf8ContinuationByte(data[pos]);
    };
    VisitSetBits(valid, d.offset, d.length, [&](int64_t i) {
      if (starts_char(LoadValue<O>(offsets, i)) &&
          starts_char(LoadValue<O>(offsets, i + 1))) {
        return true;
      }
      bad = i;
      return false;
    });
  } else {
    VisitSetBits(valid, d.offset, d.length, [&](int64_t i) {
      const int64_t b = LoadValue<O>(offsets, i);
      if (IsValidUtf8(data + b, LoadValue<O>(offsets, i + 1) - b)) return true;
      bad = i;
      return false;
    });
  }
  return bad < 0 ? Status::OK() : Utf8ErrorInValue<O>(d, bad);
}

template <typename I>
Status CheckIndicesOf(const ArrayData& d, int64_t dict_length) {
  const uint8_t* base = SlotBase<I>(d, 1);
  int64_t bad = -1;
  VisitSetBits(ValidityBits(d), d.offset, d.length, [&](int64_t i) {
    const I v = LoadValue<I>(base, i);
    bool ok;
    if constexpr (std::is_signed_v<I>) {
      ok = v >= 0 && static_cast<int64_t>(v) < dict_length;
    } else {
      ok = static_cast<uint64_t>(v) < static_cast<uint64_t>(dict_length);
    }
    if (!ok) bad = i;
    return ok;
  });
  if (bad < 0) return Status::OK();
  using Wide = std::conditional_t<std::is_signed_v<I>, int64_t, uint64_t>;
  return InvalidArray(*d.type, "index ", static_cast<Wide>(LoadValue<I>(base, bad)),
                      " at position ", bad, " is out of bounds for a dictionary of ",
                      dict_length, " values");
}

Status CheckDictionaryIndices(const ArrayData& d) {
  const int64_t n = d.dictionary->length;
  switch (d.type->index_type()->id()) {
    case TypeId::kInt8:
      return CheckIndicesOf<int8_t>(d, n);
    case TypeId::kInt16:
      return CheckIndicesOf<int16_t>(d, n);
    case TypeId::kInt32:
      return CheckIndicesOf<int32_t>(d, n);
    case TypeId::kInt64:
      return CheckIndicesOf<int64_t>(d, n);
    case TypeId::kUInt8:
      return CheckIndicesOf<uint8_t>(d, n);
    case TypeId::kUInt16:
      return CheckIndicesOf<uint16_t>(d, n);
    case TypeId::kUInt32:
      return CheckIndicesOf<uint32_t>(d, n);
    default:
      return CheckIndicesOf<uint64_t>(d, n);
  }
}

// |value| < 10^precision for every valid slot.
Status CheckDecimalPrecision(const ArrayData& d) {
  const int32_t precision = d.type->precision();
  const int width = d.type->byte_width();
  unsigned __int128 limit = 1;
  for (int32_t k = 0; k < precision && k < 38; ++k) limit *= 10;
  const uint8_t* base = d.buffers[1]->data() + d.offset * width;
  int64_t bad = -1;
  VisitSetBits(ValidityBits(d), d.offset, d.length, [&](int64_t i) {
    const uint8_t* value = base + i * width;
    if (width == 32) {  // past 128 bits: count the digits
      if (DecimalDigits(value, width) <= precision) return true;
      bad = i;
      return false;
    }
    const __int128 v = LoadDecimal128(value, width).ToInt128();
    const unsigned __int128 mag =
        v < 0 ? static_cast<unsigned __int128>(0) - static_cast<unsigned __int128>(v)
              : static_cast<unsigned __int128>(v);
    if (mag < limit) return true;
    bad = i;
    return false;
  });
  if (bad < 0) return Status::OK();
  return InvalidArray(*d.type, "value ",
                      FormatDecimal(base + bad * width, width, d.type->scale()),
                      " at position ", bad, " does not fit precision ", precision);
}

int64_t UnitsPerDay(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond:
      return 86400;
    case TimeUnit::kMilli:
      return 86400LL * 1000;
    case TimeUnit::kMicro:
      return 86400LL * 1000 * 1000;
    case TimeUnit::kNano:
      return 86400LL * 1000 * 1000 * 1000;
  }
  return 86400;
}

// The Arrow format defines time32/time64 as time since midnight, in
// [0, one day).
template <typename T>
Status CheckTimeOfDay(const ArrayData& d) {
  const int64_t day = UnitsPerDay(d.type->unit());
  const uint8_t* base = SlotBase<T>(d, 1);
  int64_t bad = -1;
  VisitSetBits(ValidityBits(d), d.offset, d.length, [&](int64_t i) {
    const int64_t v = LoadValue<T>(base, i);
    if (v >= 0 && v < day) return true;
    bad = i;
    return false;
  });
  if (bad < 0) return Status::OK();
  return InvalidArray(*d.type, "value ", static_cast<int64_t>(LoadValue<T>(base, bad)),
                      " at position ", bad, " is outside a day [0, ", day, ")");
}

// The Arrow format defines date64 values as whole days in milliseconds.
Status CheckWholeDays(const ArrayData& d) {
  constexpr int64_t kMillisPerDay = 86400LL * 1000;
  const uint8_t* base = SlotBase<int64_t>(d, 1);
  int64_t bad = -1;
  VisitSetBits(ValidityBits(d), d.offset, d.length, [&](int64_t i) {
    if (LoadValue<int64_t>(base, i) % kMillisPerDay == 0) return true;
    bad = i;
    return false;
  });
  if (bad < 0) return Status::OK();
  return InvalidArray(*d.type, "value ", LoadValue<int64_t>(base, bad), " at position ",
                      bad, " is not a whole number of days (a multiple of ",
                      kMillisPerDay, ")");
}

// No null key inside the entries of a valid map. Entries under null map
// slots are not part of the map's value and may hold anything.
Status CheckMapKeys(const ArrayData& d) {
  const ArrayData& entries = *d.child_data[0];
  const ArrayData& keys = *entries.child_data[0];
  const uint8_t* key_bits = ValidityBits(keys);
  if (key_bits == nullptr || d.length == 0) return Status::OK();
  const uint8_t* offsets = SlotBase<int32_t>(d, 1);
  Status st;
  VisitSetBitRuns(ValidityBits(d), d.offset, d.length, [&](int64_t start, int64_t n) {
    const int64_t first = LoadValue<int32_t>(offsets, start);
    const int64_t last = LoadValue<int32_t>(offsets, start + n);
    const int64_t at = keys.offset + entries.offset + first;
    const int64_t null_at = FindFirstClearBit(key_bits, at, last - first);
    if (null_at == last - first) return true;
    const int64_t entry = first + null_at;
    int64_t map = start;
    while (LoadValue<int32_t>(offsets, map + 1) <= entry) ++map;
    st = InvalidArray(*d.type, "null key at entry ", entry, " (map at position ", map,
                      ")");
    return false;
  });
  return st;
}

// Every valid view of a binary_view / string_view array: a length >= 0; a
// value of up to 12 bytes inline (the bytes after it zero, as the format
// says); a longer one inside its data buffer, its prefix equal to the
// value's first 4 bytes; for string_view, UTF-8.
Status CheckViews(const ArrayData& d) {
  if (d.length == 0) return Status::OK();  // the views buffer may be missing
  const uint8_t* views = d.buffers[1]->data() + d.offset * 16;
  const int64_t num_data = static_cast<int64_t>(d.buffers.size()) - 2;
  const bool utf8 = d.type->id() == TypeId::kStringView;
  Status st;
  VisitSetBits(ValidityBits(d), d.offset, d.length, [&](int64_t i) {
    const uint8_t* v = views + i * 16;
    int32_t n, index, offset;
    std::memcpy(&n, v, 4);
    const uint8_t* value;
    if (n < 0) {
      st = InvalidArray(*d.type, "view ", i, " has negative length ", n);
      return false;
    }
    if (n <= 12) {
      for (int k = 4 + n; k < 16; ++k) {
        if (v[k] != 0) {
          st = InvalidArray(*d.type, "view ", i, " of ", n,
                            " inline bytes is not padded with zeros");
          return false;
        }
      }
      value = v + 4;
    } else {
      std::memcpy(&index, v + 8, 4);
      std::memcpy(&offset, v + 12, 4);
      if (index < 0 || index >= num_data) {
        st = InvalidArray(*d.type, "view ", i, " names data buffer ", index, " of ",
                          num_data);
        return false;
      }
      const Buffer* data = d.buffers[2 + index].get();
      const int64_t size = data == nullptr ? 0 : data->size();
      if (offset < 0 || static_cast<int64_t>(offset) + n > size) {
        st = InvalidArray(*d.type, "view ", i, " of ", n, " bytes at offset ", offset,
                          " is outside data buffer ", index, " (", size, " bytes)");
        return false;
      }
      value = data->data() + offset;
      if (std::memcmp(value, v + 4, 4) != 0) {
        st = InvalidArray(*d.type, "view ", i, " has a prefix that is not its value's");
        return false;
      }
    }
    if (utf8 && !IsValidUtf8(value, n)) {
      st = InvalidArray(*d.type, "invalid UTF-8 in the value at position ", i);
      return false;
    }
    return true;
  });
  return st;
}

// Every type code names a child; dense: every offset lies in its child
// (offsets of one child need not increase: the format does not ask it).
Status CheckUnionContent(const ArrayData& d) {
  const DataType& t = *d.type;
  const auto* codes = reinterpret_cast<const int8_t*>(SlotBase<int8_t>(d, 1));
  const bool dense = t.id() == TypeId::kDenseUnion;
  const uint8_t* offsets = dense ? SlotBase<int32_t>(d, 2) : nullptr;
  for (int64_t i = 0; i < d.length; ++i) {
    const int8_t code = codes[i];
    const int k = t.child_id(code);
    if (QUIVER_PREDICT_FALSE(k < 0)) {
      return InvalidArray(t, "type code ", static_cast<int>(code), " at position ", i,
                          " is not one of the union's type codes");
    }
    if (!dense) continue;
    const int32_t off = LoadValue<int32_t>(offsets, i);
    const int64_t child_length = d.child_data[static_cast<size_t>(k)]->length;
    if (QUIVER_PREDICT_FALSE(off < 0 || off >= child_length)) {
      return InvalidArray(t, "offset ", off, " at position ", i, " is outside ",
                          ChildLabel(t, k), " (", child_length, " values)");
    }
  }
  return Status::OK();
}

// Every non-null view lies in the child: offset, size >= 0 and
// offset + size <= the child's length (views need not be ordered).
template <typename O>
Status CheckListViewContent(const ArrayData& d) {
  const uint8_t* offsets = SlotBase<O>(d, 1);
  const uint8_t* sizes = SlotBase<O>(d, 2);
  const int64_t child_length = d.child_data[0]->length;
  int64_t bad = -1;
  VisitSetBits(ValidityBits(d), d.offset, d.length, [&](int64_t i) {
    const int64_t off = LoadValue<O>(offsets, i);
    const int64_t size = LoadValue<O>(sizes, i);
    if (off >= 0 && size >= 0 && off <= child_length && size <= child_length - off) {
      return true;
    }
    bad = i;
    return false;
  });
  if (bad < 0) return Status::OK();
  const int64_t off = LoadValue<O>(offsets, bad);
  const int64_t size = LoadValue<O>(sizes, bad);
  if (off < 0)
    return InvalidArray(*d.type, "offset ", off, " at position ", bad, " is negative");
  if (size < 0)
    return InvalidArray(*d.type, "size ", size, " at position ", bad, " is negative");
  return InvalidArray(*d.type, "view at position ", bad, " (offset ", off, ", size ",
                      size, ") ends beyond the child array (", child_length, " values)");
}

// Every run end positive and greater than the one before (the last one is
// known to reach offset + length).
Status CheckRunEnds(const ArrayData& d) {
  const ArrayData& ends = *d.child_data[0];
  int64_t previous = 0;
  for (int64_t k = 0; k < ends.length; ++k) {
    const int64_t end = run_end::RunEndAt(ends, k);
    if (end <= previous) {
      if (k == 0) {
        return InvalidArray(*d.type, "run end 0 is ", end, ", must be positive");
      }
      return InvalidArray(*d.type, "run end ", k, " (", end,
                          ") is not greater than run end ", k - 1, " (", previous,
                          "): run ends must increase strictly");
    }
    previous = end;
  }
  return Status::OK();
}

Status CheckTypeContent(const ArrayData& d) {
  switch (d.type->id()) {
    case TypeId::kRunEndEncoded:
      return CheckRunEnds(d);
    case TypeId::kListView:
      return CheckListViewContent<int32_t>(d);
    case TypeId::kLargeListView:
      return CheckListViewContent<int64_t>(d);
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion:
      return CheckUnionContent(d);
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      return CheckViews(d);
    case TypeId::kString:
      QUIVER_RETURN_NOT_OK(CheckAllOffsets<int32_t>(d));
      return CheckUtf8<int32_t>(d);
    case TypeId::kLargeString:
      QUIVER_RETURN_NOT_OK(CheckAllOffsets<int64_t>(d));
      return CheckUtf8<int64_t>(d);
    case TypeId::kBinary:
    case TypeId::kList:
      return CheckAllOffsets<int32_t>(d);
    case TypeId::kLargeBinary:
    case TypeId::kLargeList:
      return CheckAllOffsets<int64_t>(d);
    case TypeId::kMap:
      QUIVER_RETURN_NOT_OK(CheckAllOffsets<int32_t>(d));
      return CheckMapKeys(d);
    case TypeId::kDecimal:
      return CheckDecimalPrecision(d);
    case TypeId::kTime32:
      return CheckTimeOfDay<int32_t>(d);
    case TypeId::kTime64:
      return CheckTimeOfDay<int64_t>(d);
    case TypeId::kDate64:
      return CheckWholeDays(d);
    case TypeId::kDictionary:
      return CheckDictionaryIndices(d);
    default:
      return Status::OK();
  }
}

Status ValidateContent(const ArrayData& d) {
  QUIVER_RETURN_NOT_OK(CheckNullCount(d));
  QUIVER_RETURN_NOT_OK(CheckTypeContent(d));
  for (size_t i = 0; i < d.child_data.size(); ++i) {
    Status st = ValidateContent(*d.child_data[i]);
    if (!st.ok()) return st.WithContext(ChildLabel(*d.type, static_cast<int>(i)));
  }
  if (d.dictionary != nullptr) {
    QUIVER_RETURN_NOT_OK(ValidateContent(*d.dictionary).WithContext("dictionary values"));
  }
  return Status::OK();
}

}  // namespace

Status ValidateArrayDataFull(const ArrayData& data) {
  QUIVER_RETURN_NOT_OK(ValidateArrayData(data));
  return ValidateContent(data);
}

}  // namespace quiver::internal
