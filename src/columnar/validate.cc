// Structural validation of ArrayData (Array::Validate): see
// validate_internal.h. Content checks are in validate_full.cc.
#include <limits>

#include "columnar/bitmap_runs.h"
#include "columnar/run_end_util.h"
#include "columnar/validate_internal.h"
#include "quiver/columnar/array.h"
#include "quiver/columnar/layout.h"

namespace quiver {

namespace internal {

namespace {

// Deeper nesting is refused so that a hostile type cannot exhaust the stack
// of the recursive checks (or of the type's own recursive Equals/ToString).
constexpr int kMaxNestingDepth = 512;

// ---------------------------------------------------------------------------
// Types

Status CheckField(const DataType& parent, const FieldPtr& f, int i) {
  if (f == nullptr) return InvalidArray(parent, "type has a null child field ", i);
  if (f->type() == nullptr) {
    return InvalidArray(parent, "child field ", i, " '", f->name(), "' has no type");
  }
  return Status::OK();
}

Status CheckTypeParameters(const DataType& t) {
  switch (t.id()) {
    case TypeId::kDecimal:
      if (MaxDecimalPrecision(t.bit_width()) == 0) {
        return InvalidArray(t, "a decimal of ", t.bit_width(), " bits");
      }
      if (t.precision() < 1 || t.precision() > MaxDecimalPrecision(t.bit_width())) {
        return InvalidArray(t, "precision ", t.precision(), " is outside [1, ",
                            MaxDecimalPrecision(t.bit_width()), "]");
      }
      return Status::OK();
    case TypeId::kTime32:
      if (t.unit() != TimeUnit::kSecond && t.unit() != TimeUnit::kMilli) {
        return InvalidArray(t, "time32 unit must be s or ms");
      }
      return Status::OK();
    case TypeId::kTime64:
      if (t.unit() != TimeUnit::kMicro && t.unit() != TimeUnit::kNano) {
        return InvalidArray(t, "time64 unit must be us or ns");
      }
      return Status::OK();
    case TypeId::kFixedSizeBinary:
      if (t.bit_width() < 0) return InvalidArray(t, "negative byte width");
      return Status::OK();
    case TypeId::kFixedSizeList:
      if (t.list_size() < 0) return InvalidArray(t, "negative list size ", t.list_size());
      return Status::OK();
    case TypeId::kInterval:
      if (t.list_size() < 0 || t.list_size() > 2) {
        return InvalidArray(t, "unknown interval unit ", t.list_size());
      }
      return Status::OK();
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {
      if (t.num_fields() > kMaxUnionTypeCode + 1) {
        return InvalidArray(t, "a union of ", t.num_fields(), " children (at most ",
                            kMaxUnionTypeCode + 1, ")");
      }
      if (t.type_codes().size() != static_cast<size_t>(t.num_fields())) {
        return InvalidArray(t, "a union of ", t.num_fields(), " children with ",
                            t.type_codes().size(), " type codes");
      }
      for (size_t k = 0; k < t.type_codes().size(); ++k) {
        const int8_t code = t.type_codes()[k];
        if (code < 0 || t.child_id(code) != static_cast<int>(k)) {
          return InvalidArray(t, "type code ", static_cast<int>(code), " of child ", k,
                              " is negative or repeated");
        }
      }
      return Status::OK();
    }
    default:
      return Status::OK();
  }
}

// The number and shape of child fields each nested type declares.
Status CheckTypeChildren(const DataType& t) {
  const TypeId id = t.id();
  if ((IsListLike(id) || IsListView(id)) && t.num_fields() != 1) {
    return InvalidArray(t, "type has ", t.num_fields(), " child fields, expected 1");
  }
  for (int i = 0; i < t.num_fields(); ++i) {
    QUIVER_RETURN_NOT_OK(CheckField(t, t.field(i), i));
  }
  if (id == TypeId::kMap) {
    const DataType& entries = *t.field(0)->type();
    if (entries.id() != TypeId::kStruct || entries.num_fields() != 2) {
      return InvalidArray(t, "entries must be a struct of 2 fields, got ",
                          TypeLabel(entries), " with ", entries.num_fields());
    }
    QUIVER_RETURN_NOT_OK(CheckField(entries, entries.field(0), 0));
    QUIVER_RETURN_NOT_OK(CheckField(entries, entries.field(1), 1));
    if (entries.field(0)->nullable()) return InvalidArray(t, "the key field is nullable");
  }
  if (id == TypeId::kRunEndEncoded) {
    if (t.num_fields() != 2) {
      return InvalidArray(t, "type has ", t.num_fields(),
                          " child fields, expected 2 (run_ends, values)");
    }
    const TypeId ends = t.field(0)->type()->id();
    if (!IsRunEndType(ends)) {
      return InvalidArray(t, "run ends must be int16, int32 or int64, got ",
                          TypeLabel(*t.field(0)->type()));
    }
  }
  if (id == TypeId::kDictionary) {
    if (t.index_type() == nullptr || !IsInteger(t.index_type()->id())) {
      return InvalidArray(t, "index type must be an integer type, got ",
                          t.index_type() ? TypeLabel(*t.index_type()) : "none");
    }
    if (t.value_type() == nullptr) return InvalidArray(t, "no value type");
  }
  return Status::OK();
}

// Checks the whole type tree, so that DataType::Equals and ToString (which
// trust their input) are safe to call on it afterwards.
Status ValidateTypeTree(const DataType& t, int depth) {
  if (depth > kMaxNestingDepth) {
    return InvalidArray(t, "types are nested deeper than ", kMaxNestingDepth, " levels");
  }
  if (static_cast<int>(t.id()) < 0 ||
      static_cast<int>(t.id()) > static_cast<int>(TypeId::kRunEndEncoded)) {
    return Status::Invalid("unknown type id ", static_cast<int>(t.id()));
  }
  QUIVER_RETURN_NOT_OK(CheckTypeParameters(t));
  QUIVER_RETURN_NOT_OK(CheckTypeChildren(t));
  for (int i = 0; i < t.num_fields(); ++i) {
    QUIVER_RETURN_NOT_OK(ValidateTypeTree(*t.field(i)->type(), depth + 1));
  }
  if (t.id() == TypeId::kDictionary) {
    QUIVER_RETURN_NOT_OK(ValidateTypeTree(*t.value_type(), depth + 1));
  }
  return Status::OK();
}

// True if `actual` (a child or dictionary array's type, unchecked so far) is
// a well-formed type equal to `declared`; otherwise the error.
Status CheckArrayType(const DataType& parent, const TypePtr& declared,
                      const TypePtr& actual, const std::string& what, int depth) {
  if (actual == nullptr) return InvalidArray(parent, what, " has no type");
  if (actual == declared) return Status::OK();
  QUIVER_RETURN_NOT_OK(ValidateTypeTree(*actual, depth).WithContext(what));
  if (!declared->Equals(*actual)) {
    return InvalidArray(parent, what, " has type ", actual->ToString(),
                        " but the type declares ", declared->ToString());
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Arrays

Status ValidateNode(const ArrayData& d, int depth);

Status CheckLengths(const ArrayData& d) {
  const DataType& t = *d.type;
  if (d.length < 0) return InvalidArray(t, "negative length ", d.length);
  if (d.offset < 0) return InvalidArray(t, "negative offset ", d.offset);
  int64_t end;
  if (__builtin_add_overflow(d.offset, d.length, &end)) {
    return InvalidArray(t, "offset ", d.offset, " + length ", d.length, " overflows");
  }
  if (d.null_count < kUnknownNullCount || d.null_count > d.length) {
    return InvalidArray(t, "null_count ", d.null_count, " is outside [0, length ",
                        d.length, "]");
  }
  return Status::OK();
}

Status CheckBufferSlots(const ArrayData& d, const DataTypeLayout& layout) {
  const DataType& t = *d.type;
  for (size_t i = 0; i < d.buffers.size(); ++i) {
    const Buffer* b = d.buffers[i].get();
    if (b == nullptr) continue;
    if (b->size() < 0) return InvalidArray(t, "buffer ", i, " has negative size");
    if (b->size() > 0 && b->data() == nullptr) {
      return InvalidArray(t, "buffer ", i, " has ", b->size(), " bytes but no address");
    }
  }
  if (t.id() == TypeId::kNull) {  // slot 0 (always null) may be left out
    if (d.buffers.size() > 1) {
      return InvalidArray(t, "expected at most 1 buffer, got ", d.buffers.size());
    }
    if (!d.buffers.empty() && d.buffers[0] != nullptr) {
      return InvalidArray(t, "a null array has no validity bitmap");
    }
    if (d.null_count != kUnknownNullCount && d.null_count != d.length) {
      return InvalidArray(t, "null_count ", d.null_count, " must equal the length ",
                          d.length);
    }
    return Status::OK();
  }
  const size_t expected = layout.buffers.size();
  if (t.id() == TypeId::kRunEndEncoded) {  // slot 0 kept, as unions keep it
    if (d.buffers.size() != expected || d.buffers[0] != nullptr) {
      return InvalidArray(t,
                          "expected exactly 1 buffer slot, null (a run-end encoded "
                          "array has no buffers; its nulls are its values')");
    }
    if (d.null_count != 0 && d.null_count != kUnknownNullCount) {
      return InvalidArray(t, "null_count is ", d.null_count,
                          ", must be 0 (its nulls are its values')");
    }
    return Status::OK();
  }
  if (layout.variadic) {  // then any number of variadic data buffers
    if (d.buffers.size() < expected) {
      return InvalidArray(t, "expected at least ", expected, " buffers, got ",
                          d.buffers.size());
    }
  } else if (d.buffers.size() != expected) {
    // A union keeps slot 0 for a validity bitmap it does not have.
    return InvalidArray(t, "expected ", expected, " buffers",
                        IsUnion(t.id()) ? " (the first null)" : "", ", got ",
                        d.buffers.size());
  }
  for (size_t i = 0; i < expected; ++i) {
    if (layout.buffers[i].kind == BufferKind::kAlwaysNull && d.buffers[i] != nullptr) {
      return InvalidArray(t,
                          "a union has no validity bitmap (its nulls are its "
                          "children's)");
    }
  }
  return Status::OK();
}

// Buffer i must hold `needed` bytes; a missing buffer is fine when none are.
Status CheckBufferSize(const ArrayData& d, int i, const char* what, int64_t needed) {
  const Buffer* b = d.buffers[i].get();
  const int64_t have = b == nullptr ? 0 : b->size();
  if (have >= needed) return Status::OK();
  if (b == nullptr) {
    return InvalidArray(*d.type, "the ", what, " buffer is missing (", needed,
                        " bytes needed for offset ", d.offset, " + length ", d.length,
                        ")");
  }
  return InvalidArray(*d.type, "the ", what, " buffer has ", have, " bytes but ", needed,
                      " are needed for offset ", d.offset, " + length ", d.length);
}

// Each buffer of the layout holds what offset + length slots need (data
// buffers: see CheckOffsetsLayout); a validity bitmap may be missing when
// there are no nulls.
Status CheckBufferSizes(const ArrayData& d, const DataTypeLayout& layout) {
  for (size_t i = 0; i < layout.buffers.size(); ++i) {
    const BufferLayout& b = layout.buffers[i];
    if (b.kind == BufferKind::kAlwaysNull || b.kind == BufferKind::kData) continue;
    if (b.kind == BufferKind::kValidity && d.buffers[i] == nullptr) {
      if (d.null_count > 0) {
        return InvalidArray(*d.type, "null_count is ", d.null_count,
                            " but there is no validity bitmap");
      }
      continue;
    }
    int64_t needed;
    if (!b.MinimumBytes(d.offset, d.length, &needed)) {
      return InvalidArray(*d.type, "offset + length ", d.offset + d.length,
                          " overflows the ", b.name, " buffer size");
    }
    QUIVER_RETURN_NOT_OK(CheckBufferSize(d, static_cast<int>(i), b.name, needed));
  }
  return Status::OK();
}

// The offsets (slot 1, long enough: CheckBufferSizes) of a binary or list
// array when length > 0 (an empty array may have none at all): the first
// one non-negative and no greater than the last, the last within `limit`
// (the data buffer's size or the child's length).
template <typename O>
Status CheckOffsetsLayout(const ArrayData& d, int64_t limit, const char* limit_what) {
  if (d.length == 0) return Status::OK();
  const uint8_t* base = d.buffers[1]->data();
  const int64_t first = LoadValue<O>(base, d.offset);
  const int64_t last = LoadValue<O>(base, d.offset + d.length);
  if (first < 0) return InvalidArray(*d.type, "first offset ", first, " is negative");
  if (first > last) {
    return InvalidArray(*d.type, "first offset ", first,
                        " is greater than the last offset ", last);
  }
  if (last > limit) {
    return InvalidArray(*d.type, "last offset ", last, " is beyond the end of the ",
                        limit_what, " (", limit, ")");
  }
  return Status::OK();
}

template <typename O>
Status CheckBinaryLayout(const ArrayData& d) {
  const Buffer* data = d.buffers[2].get();
  const int64_t data_size = data == nullptr ? 0 : data->size();
  return CheckOffsetsLayout<O>(d, data_size, "data buffer");
}

Status CheckChildArrays(const ArrayData& d, int depth) {
  const DataType& t = *d.type;
  const size_t expected = IsNested(t.id()) ? static_cast<size_t>(t.num_fields()) : 0;
  if (d.child_data.size() != expected) {
    return InvalidArray(t, "expected ", expected, " child arrays, got ",
                        d.child_data.size());
  }
  for (size_t i = 0; i < d.child_data.size(); ++i) {
    const int ci = static_cast<int>(i);
    const ArrayDataPtr& child = d.child_data[i];
    if (child == nullptr) return InvalidArray(t, ChildLabel(t, ci), " is missing");
    // Labels are built only when needed: this runs for every imported batch.
    const TypePtr& declared = t.field(ci)->type();
    if (child->type != declared) {
      QUIVER_RETURN_NOT_OK(
          CheckArrayType(t, declared, child->type, ChildLabel(t, ci), depth + 1));
    }
    Status st = ValidateNode(*child, depth + 1);
    if (!st.ok()) return st.WithContext(ChildLabel(t, ci));
  }
  return Status::OK();
}

Status CheckFixedSizeListLayout(const ArrayData& d) {
  const ArrayData& child = *d.child_data[0];
  int64_t needed;
  if (__builtin_mul_overflow(d.offset + d.length, int64_t{d.type->list_size()},
                             &needed)) {
    return InvalidArray(*d.type, "offset + length ", d.offset + d.length,
                        " lists of size ", d.type->list_size(), " overflow");
  }
  if (child.length < needed) {
    return InvalidArray(*d.type, "child array has ", child.length, " values but ", needed,
                        " are needed for offset ", d.offset, " + length ", d.length,
                        " lists of size ", d.type->list_size());
  }
  return Status::OK();
}

Status CheckStructLayout(const ArrayData& d) {
  for (size_t i = 0; i < d.child_data.size(); ++i) {
    const ArrayData& child = *d.child_data[i];
    if (child.length < d.offset + d.length) {
      return InvalidArray(*d.type, ChildLabel(*d.type, static_cast<int>(i)),
                          " has length ", child.length, ", less than offset ", d.offset,
                          " + length ", d.length);
    }
  }
  return Status::OK();
}

// As many run ends as values, none null; when there are slots, a first run
// end above 0 and a last one reaching offset + length (each in between is
// checked by ValidateFull).
Status CheckRunEndEncodedLayout(const ArrayData& d) {
  const DataType& t = *d.type;
  const ArrayData& ends = *d.child_data[0];
  const ArrayData& values = *d.child_data[1];
  if (ends.length != values.length) {
    return InvalidArray(t, ends.length, " run ends but ", values.length, " values");
  }
  if (ends.GetNullCount() != 0) {
    return InvalidArray(t, "run ends must not be null (", ends.GetNullCount(), " are)");
  }
  const int64_t end = d.offset + d.length;
  if (d.length == 0) return Status::OK();
  const int width = ends.type->byte_width();
  const int64_t max_end = width == 2   ? std::numeric_limits<int16_t>::max()
                          : width == 4 ? std::numeric_limits<int32_t>::max()
                                       : std::numeric_limits<int64_t>::max();
  if (end > max_end) {
    return InvalidArray(t, "offset ", d.offset, " + length ", d.length, " does not fit ",
                        ends.type->ToString(), " run ends");
  }
  if (ends.length == 0) {
    return InvalidArray(t, "no runs for offset ", d.offset, " + length ", d.length);
  }
  const int64_t first = run_end::RunEndAt(ends, 0);
  if (first <= 0) return InvalidArray(t, "run end 0 is ", first, ", must be positive");
  const int64_t last = run_end::RunEndAt(ends, ends.length - 1);
  if (last < end) {
    return InvalidArray(t, "the last run end ", last, " is less than offset ", d.offset,
                        " + length ", d.length);
  }
  return Status::OK();
}

Status CheckDictionaryLayout(const ArrayData& d, int depth) {
  const DataType& t = *d.type;
  if (d.dictionary == nullptr) return InvalidArray(t, "the dictionary is missing");
  QUIVER_RETURN_NOT_OK(CheckArrayType(t, t.value_type(), d.dictionary->type,
                                      "dictionary values", depth + 1));
  return ValidateNode(*d.dictionary, depth + 1).WithContext("dictionary values");
}

// Checks that depend on the type, once lengths, slots, buffer sizes and
// children are known to be sound.
Status CheckTypeLayout(const ArrayData& d, int depth) {
  switch (d.type->id()) {
    case TypeId::kString:
    case TypeId::kBinary:
      return CheckBinaryLayout<int32_t>(d);
    case TypeId::kLargeString:
    case TypeId::kLargeBinary:
      return CheckBinaryLayout<int64_t>(d);
    case TypeId::kList:
    case TypeId::kMap:
      return CheckOffsetsLayout<int32_t>(d, d.child_data[0]->length, "child array");
    case TypeId::kLargeList:
      return CheckOffsetsLayout<int64_t>(d, d.child_data[0]->length, "child array");
    case TypeId::kFixedSizeList:
      return CheckFixedSizeListLayout(d);
    case TypeId::kStruct:
      return CheckStructLayout(d);
    case TypeId::kDictionary:
      return CheckDictionaryLayout(d, depth);
    case TypeId::kSparseUnion:  // children at least offset + length long
      return CheckStructLayout(d);
    case TypeId::kRunEndEncoded:
      return CheckRunEndEncodedLayout(d);
    default:  // the buffers are all there is (views and list views: ValidateFull
              // checks each against the data buffers or the child)
      return Status::OK();
  }
}

// Validates `d`, whose type tree is known to be well-formed.
Status ValidateNode(const ArrayData& d, int depth) {
  const DataType& t = *d.type;
  if (depth > kMaxNestingDepth) {
    return InvalidArray(t, "arrays are nested deeper than ", kMaxNestingDepth, " levels");
  }
  QUIVER_RETURN_NOT_OK(CheckLengths(d));
  const DataTypeLayout layout = LayoutOf(t);
  QUIVER_RETURN_NOT_OK(CheckBufferSlots(d, layout));
  QUIVER_RETURN_NOT_OK(CheckBufferSizes(d, layout));
  if (t.id() != TypeId::kDictionary && d.dictionary != nullptr) {
    return InvalidArray(t, "unexpected dictionary on a non-dictionary array");
  }
  QUIVER_RETURN_NOT_OK(CheckChildArrays(d, depth));
  return CheckTypeLayout(d, depth);
}

}  // namespace

std::string TypeLabel(const DataType& type) {
  if (IsNested(type.id()) || type.id() == TypeId::kDictionary) return type.name();
  return type.ToString();
}

std::string ChildLabel(const DataType& parent, int i) {
  switch (parent.id()) {
    case TypeId::kStruct: {
      std::string label = "struct field " + std::to_string(i);
      const FieldPtr& f = parent.fields()[i];
      if (f != nullptr) label += " '" + f->name() + "'";
      return label;
    }
    case TypeId::kMap:
      return "map entries";
    case TypeId::kRunEndEncoded:
      return i == 0 ? "run_end_encoded run ends" : "run_end_encoded values";
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {
      std::string label = parent.name() + " field " + std::to_string(i);
      const FieldPtr& f = parent.fields()[i];
      if (f != nullptr) label += " '" + f->name() + "'";
      return label;
    }
    default:
      return parent.name() + " values";
  }
}

Status ValidateArrayData(const ArrayData& data) {
  if (data.type == nullptr) return Status::Invalid("array has no type");
  QUIVER_RETURN_NOT_OK(ValidateTypeTree(*data.type, 0));
  return ValidateNode(data, 0);
}

}  // namespace internal

Status Array::Validate() const {
  if (data_ == nullptr) return Status::Invalid("array has no data");
  return internal::ValidateArrayData(*data_);
}

Status Array::ValidateFull() const {
  if (data_ == nullptr) return Status::Invalid("array has no data");
  return internal::ValidateArrayDataFull(*data_);
}

}  // namespace quiver
