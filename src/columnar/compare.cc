// Logical equality of arrays (Array::Equals / RangeEquals).
//
// Two ranges are equal when their types are equal and, slot by slot, the
// validity and the value of every valid slot are. Offsets, slicing, buffer
// identity and the bytes behind null slots do not matter. Floating-point
// values compare numerically: NaN never equals anything and -0 equals +0, as
// Arrow's default equality does. Dictionary arrays compare their dictionaries
// and their indices as stored (no decoding).
//
// Speed matters (tests and benchmarks compare large arrays): validity is
// compared a word at a time, values of fixed width by memcmp over each run of
// valid slots, variable-size values by checking that the two offset
// sequences have the same shape and then one memcmp / one child comparison
// per run.
#include <cstring>
#include <type_traits>

#include "columnar/bitmap_runs.h"
#include "columnar/half_float.h"
#include "columnar/run_end_util.h"
#include "columnar/view_util.h"
#include "quiver/columnar/array.h"

namespace quiver {

namespace {

using internal::LoadValue;
using internal::ValidityBits;
using internal::VisitSetBitRuns;

bool RangesEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                 int64_t len);

// Whether comparing a range with itself may skip the values: not when a NaN
// could hide somewhere inside.
bool IdentityImpliesEquality(const DataType& t) {
  if (IsFloating(t.id())) return false;
  if (t.id() == TypeId::kDictionary) return IdentityImpliesEquality(*t.value_type());
  for (const FieldPtr& f : t.fields()) {
    if (!IdentityImpliesEquality(*f->type())) return false;
  }
  return true;
}

bool ValidityEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                   int64_t len) {
  const uint8_t* lb = ValidityBits(l);
  const uint8_t* rb = ValidityBits(r);
  if (lb == nullptr && rb == nullptr) return true;
  if (lb != nullptr && rb != nullptr) {
    return internal::BitRangesEqual(lb, l.offset + ls, rb, r.offset + rs, len);
  }
  // One side has no nulls: the other must have none in the range either.
  return lb != nullptr ? bit_util::CountSetBits(lb, l.offset + ls, len) == len
                       : bit_util::CountSetBits(rb, r.offset + rs, len) == len;
}

// Calls fn(start, n) for each run of valid slots of the range; the validity
// of both sides is known to be equal, so either side's bitmap serves.
template <typename Fn>
bool ForEachValidRun(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                     int64_t len, Fn&& fn) {
  if (const uint8_t* lb = ValidityBits(l)) {
    return VisitSetBitRuns(lb, l.offset + ls, len, fn);
  }
  if (const uint8_t* rb = ValidityBits(r)) {
    return VisitSetBitRuns(rb, r.offset + rs, len, fn);
  }
  return fn(int64_t{0}, len);
}

bool FixedWidthEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                     int64_t len, int64_t width) {
  if (width == 0) return true;
  const uint8_t* a = l.GetBuffer(1) + (l.offset + ls) * width;
  const uint8_t* b = r.GetBuffer(1) + (r.offset + rs) * width;
  return ForEachValidRun(l, r, ls, rs, len, [&](int64_t start, int64_t n) {
    return std::memcmp(a + start * width, b + start * width,
                       static_cast<size_t>(n * width)) == 0;
  });
}

bool BooleanEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                  int64_t len) {
  const uint8_t* a = l.GetBuffer(1);
  const uint8_t* b = r.GetBuffer(1);
  return ForEachValidRun(l, r, ls, rs, len, [&](int64_t start, int64_t n) {
    return internal::BitRangesEqual(a, l.offset + ls + start, b, r.offset + rs + start,
                                    n);
  });
}

// Numeric equality, blockwise without early exit inside a block so that the
// compiler can vectorise it.
template <typename T>
bool FloatRunEqual(const uint8_t* a, const uint8_t* b, int64_t n) {
  constexpr int64_t kBlock = 64;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    bool eq = true;
    for (int64_t k = i; k < i + kBlock; ++k) {
      eq &= LoadValue<T>(a, k) == LoadValue<T>(b, k);
    }
    if (!eq) return false;
  }
  for (; i < n; ++i) {
    if (!(LoadValue<T>(a, i) == LoadValue<T>(b, i))) return false;
  }
  return true;
}

bool HalfRunEqual(const uint8_t* a, const uint8_t* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t x = LoadValue<uint16_t>(a, i);
    const uint16_t y = LoadValue<uint16_t>(b, i);
    const bool eq = (x == y && !internal::HalfIsNaN(x)) ||
                    (internal::HalfIsZero(x) && internal::HalfIsZero(y));
    if (!eq) return false;
  }
  return true;
}

template <typename T>
bool FloatingEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                   int64_t len) {
  const uint8_t* a = l.GetBuffer(1) + (l.offset + ls) * int64_t{sizeof(T)};
  const uint8_t* b = r.GetBuffer(1) + (r.offset + rs) * int64_t{sizeof(T)};
  return ForEachValidRun(l, r, ls, rs, len, [&](int64_t start, int64_t n) {
    const int64_t skip = start * int64_t{sizeof(T)};
    if constexpr (std::is_same_v<T, uint16_t>) {
      return HalfRunEqual(a + skip, b + skip, n);
    } else {
      return FloatRunEqual<T>(a + skip, b + skip, n);
    }
  });
}

// True if lists/values [0, n) of the two offset sequences have the same
// lengths, i.e. o_a[i] - o_a[0] == o_b[i] - o_b[0] for all i <= n.
template <typename O>
bool SameShape(const uint8_t* oa, const uint8_t* ob, int64_t n) {
  // Unsigned arithmetic: the same answer for sound offsets, and no undefined
  // overflow for unsound ones.
  using U = std::make_unsigned_t<O>;
  const U a0 = LoadValue<U>(oa, 0);
  const U b0 = LoadValue<U>(ob, 0);
  bool eq = true;
  for (int64_t i = 1; i <= n; ++i) {
    eq &= static_cast<U>(LoadValue<U>(oa, i) - a0) ==
          static_cast<U>(LoadValue<U>(ob, i) - b0);
    if ((i & 63) == 0 && !eq) return false;
  }
  return eq;
}

template <typename O>
bool BinaryEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                 int64_t len) {
  const uint8_t* lo = l.GetBuffer(1) + (l.offset + ls) * int64_t{sizeof(O)};
  const uint8_t* ro = r.GetBuffer(1) + (r.offset + rs) * int64_t{sizeof(O)};
  const uint8_t* ld = l.GetBuffer(2);
  const uint8_t* rd = r.GetBuffer(2);
  return ForEachValidRun(l, r, ls, rs, len, [&](int64_t start, int64_t n) {
    const uint8_t* oa = lo + start * int64_t{sizeof(O)};
    const uint8_t* ob = ro + start * int64_t{sizeof(O)};
    if (!SameShape<O>(oa, ob, n)) return false;
    const int64_t a0 = LoadValue<O>(oa, 0);
    const int64_t bytes = LoadValue<O>(oa, n) - a0;
    return bytes == 0 || std::memcmp(ld + a0, rd + LoadValue<O>(ob, 0),
                                     static_cast<size_t>(bytes)) == 0;
  });
}

// Views are equal when the values they name are, wherever the bytes live.
bool ViewEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
               int64_t len) {
  return ForEachValidRun(l, r, ls, rs, len, [&](int64_t start, int64_t n) {
    for (int64_t k = start; k < start + n; ++k) {
      std::string_view a, b;
      if (!internal::LoadView(l, ls + k, &a) || !internal::LoadView(r, rs + k, &b) ||
          a != b)
        return false;
    }
    return true;
  });
}

template <typename O>
bool ListEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
               int64_t len) {
  const uint8_t* lo = l.GetBuffer(1) + (l.offset + ls) * int64_t{sizeof(O)};
  const uint8_t* ro = r.GetBuffer(1) + (r.offset + rs) * int64_t{sizeof(O)};
  const ArrayData& lc = *l.child_data[0];
  const ArrayData& rc = *r.child_data[0];
  return ForEachValidRun(l, r, ls, rs, len, [&](int64_t start, int64_t n) {
    const uint8_t* oa = lo + start * int64_t{sizeof(O)};
    const uint8_t* ob = ro + start * int64_t{sizeof(O)};
    if (!SameShape<O>(oa, ob, n)) return false;
    const int64_t a0 = LoadValue<O>(oa, 0);
    return RangesEqual(lc, rc, a0, LoadValue<O>(ob, 0), LoadValue<O>(oa, n) - a0);
  });
}

// Slot by slot: equal sizes, and equal child values under each view (the
// offsets themselves may differ).
template <typename O>
bool ListViewEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                   int64_t len) {
  const uint8_t* lo = l.GetBuffer(1) + (l.offset + ls) * int64_t{sizeof(O)};
  const uint8_t* ro = r.GetBuffer(1) + (r.offset + rs) * int64_t{sizeof(O)};
  const uint8_t* lsz = l.GetBuffer(2) + (l.offset + ls) * int64_t{sizeof(O)};
  const uint8_t* rsz = r.GetBuffer(2) + (r.offset + rs) * int64_t{sizeof(O)};
  const ArrayData& lc = *l.child_data[0];
  const ArrayData& rc = *r.child_data[0];
  return ForEachValidRun(l, r, ls, rs, len, [&](int64_t start, int64_t n) {
    for (int64_t i = start; i < start + n; ++i) {
      const int64_t size = LoadValue<O>(lsz, i);
      if (size != LoadValue<O>(rsz, i)) return false;
      if (!RangesEqual(lc, rc, LoadValue<O>(lo, i), LoadValue<O>(ro, i), size)) {
        return false;
      }
    }
    return true;
  });
}

bool FixedSizeListEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                        int64_t len) {
  const int64_t size = l.type->list_size();
  const ArrayData& lc = *l.child_data[0];
  const ArrayData& rc = *r.child_data[0];
  return ForEachValidRun(l, r, ls, rs, len, [&](int64_t start, int64_t n) {
    return RangesEqual(lc, rc, (l.offset + ls + start) * size,
                       (r.offset + rs + start) * size, n * size);
  });
}

bool StructEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                 int64_t len) {
  return ForEachValidRun(l, r, ls, rs, len, [&](int64_t start, int64_t n) {
    for (size_t k = 0; k < l.child_data.size(); ++k) {
      if (!RangesEqual(*l.child_data[k], *r.child_data[k], l.offset + ls + start,
                       r.offset + rs + start, n)) {
        return false;
      }
    }
    return true;
  });
}

// Unions: slot by slot, the same type code and equal values in that child
// (sparse: at the slots' own positions; dense: where the offsets point).
bool UnionEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                int64_t len) {
  const int8_t* lc = l.GetValues<int8_t>(1) + ls;
  const int8_t* rc = r.GetValues<int8_t>(1) + rs;
  const bool dense = l.type->id() == TypeId::kDenseUnion;
  const int32_t* lo = dense ? l.GetValues<int32_t>(2) + ls : nullptr;
  const int32_t* ro = dense ? r.GetValues<int32_t>(2) + rs : nullptr;
  for (int64_t i = 0; i < len; ++i) {
    if (lc[i] != rc[i]) return false;
    const int k = l.type->child_id(lc[i]);
    if (k < 0) return false;  // not a valid array: unequal rather than unsafe
    const ArrayData& a = *l.child_data[static_cast<size_t>(k)];
    const ArrayData& b = *r.child_data[static_cast<size_t>(k)];
    const int64_t ai = dense ? lo[i] : l.offset + ls + i;
    const int64_t bi = dense ? ro[i] : r.offset + rs + i;
    if (ai < 0 || bi < 0 || ai >= a.length || bi >= b.length) return false;
    if (!RangesEqual(a, b, ai, bi, 1)) return false;
  }
  return true;
}

// Run-end encoded: the decoded values, slot by slot, whatever the runs (a
// run may be split in two on one side): walks both sides' runs at once and
// compares one value per stretch where neither changes run.
bool RunEndEncodedEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                        int64_t len) {
  std::vector<std::pair<int64_t, int64_t>> left;  // (run, slots) of l's range
  if (!run_end::ForEachRun(l, ls, len, [&](int64_t k, int64_t n) {
        left.emplace_back(k, n);
        return true;
      })) {
    return false;  // not a valid array: unequal rather than unsafe
  }
  const ArrayData& lv = *l.child_data[1];
  const ArrayData& rv = *r.child_data[1];
  size_t at = 0;
  int64_t used = 0;  // slots of left[at] already compared
  return run_end::ForEachRun(r, rs, len, [&](int64_t k, int64_t n) {
    while (n > 0) {
      if (at >= left.size()) return false;
      const int64_t step = std::min(n, left[at].second - used);
      if (!RangesEqual(lv, rv, left[at].first, k, 1)) return false;
      n -= step;
      used += step;
      if (used == left[at].second) {
        ++at;
        used = 0;
      }
    }
    return true;
  });
}

bool DictionaryEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                     int64_t len) {
  const ArrayData& ld = *l.dictionary;
  const ArrayData& rd = *r.dictionary;
  if (ld.length != rd.length || !RangesEqual(ld, rd, 0, 0, ld.length)) return false;
  return FixedWidthEqual(l, r, ls, rs, len, l.type->index_type()->byte_width());
}

bool ValuesEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                 int64_t len) {
  switch (l.type->id()) {
    case TypeId::kNull:
      return true;
    case TypeId::kBool:
      return BooleanEqual(l, r, ls, rs, len);
    case TypeId::kHalfFloat:
      return FloatingEqual<uint16_t>(l, r, ls, rs, len);
    case TypeId::kFloat:
      return FloatingEqual<float>(l, r, ls, rs, len);
    case TypeId::kDouble:
      return FloatingEqual<double>(l, r, ls, rs, len);
    case TypeId::kString:
    case TypeId::kBinary:
      return BinaryEqual<int32_t>(l, r, ls, rs, len);
    case TypeId::kLargeString:
    case TypeId::kLargeBinary:
      return BinaryEqual<int64_t>(l, r, ls, rs, len);
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      return ViewEqual(l, r, ls, rs, len);
    case TypeId::kList:
    case TypeId::kMap:
      return ListEqual<int32_t>(l, r, ls, rs, len);
    case TypeId::kLargeList:
      return ListEqual<int64_t>(l, r, ls, rs, len);
    case TypeId::kFixedSizeList:
      return FixedSizeListEqual(l, r, ls, rs, len);
    case TypeId::kListView:
      return ListViewEqual<int32_t>(l, r, ls, rs, len);
    case TypeId::kLargeListView:
      return ListViewEqual<int64_t>(l, r, ls, rs, len);
    case TypeId::kStruct:
      return StructEqual(l, r, ls, rs, len);
    case TypeId::kDictionary:
      return DictionaryEqual(l, r, ls, rs, len);
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion:
      return UnionEqual(l, r, ls, rs, len);
    case TypeId::kRunEndEncoded:
      return RunEndEncodedEqual(l, r, ls, rs, len);
    default:  // integers, dates, times, timestamps, durations, decimals, fixed binary
      return FixedWidthEqual(l, r, ls, rs, len, l.type->byte_width());
  }
}

// [ls, ls + len) of l against [rs, rs + len) of r (logical positions, before
// each array's offset). Types are known to be equal, ranges in bounds.
bool RangesEqual(const ArrayData& l, const ArrayData& r, int64_t ls, int64_t rs,
                 int64_t len) {
  if (len == 0) return true;
  if (&l == &r && ls == rs && IdentityImpliesEquality(*l.type)) return true;
  if (l.type->id() == TypeId::kNull) return true;
  if (!ValidityEqual(l, r, ls, rs, len)) return false;
  return ValuesEqual(l, r, ls, rs, len);
}

}  // namespace

bool Array::Equals(const Array& other) const {
  if (length() != other.length()) return false;
  return RangeEquals(0, length(), 0, other);
}

bool Array::RangeEquals(int64_t start, int64_t end, int64_t other_start,
                        const Array& other) const {
  if (!type()->Equals(*other.type())) return false;
  if (start < 0 || end < start || end > length() || other_start < 0 ||
      other_start > other.length() - (end - start)) {
    return false;
  }
  return RangesEqual(*data_, *other.data_, start, other_start, end - start);
}

}  // namespace quiver
