#include "quiver/columnar/concatenate.h"

#include <cstring>
#include <limits>
#include <type_traits>

#include "columnar/run_end_util.h"
#include "columnar/view_util.h"
#include "quiver/columnar/array.h"
#include "quiver/columnar/bit_util.h"

namespace quiver {

namespace {

using Inputs = std::vector<const ArrayData*>;

int64_t TotalLength(const Inputs& in) {
  int64_t n = 0;
  for (const ArrayData* d : in) n += d->length;
  return n;
}

// A bitmap of every input's bits in order, or null when no input has nulls
// (unless `always`, for boolean values). Inputs without a bitmap count as
// all set.
Result<std::shared_ptr<Buffer>> ConcatBitmaps(const Inputs& in, int index, bool always,
                                              MemoryPool* pool) {
  if (!always) {
    bool any = false;
    for (const ArrayData* d : in) {
      any = any || (d->GetBuffer(index) != nullptr && d->GetNullCount() != 0);
    }
    if (!any) return std::shared_ptr<Buffer>();
  }
  QUIVER_ASSIGN_OR_RAISE(
      auto out, AllocateZeroedBuffer(bit_util::BytesForBits(TotalLength(in)), pool));
  uint8_t* dst = out->mutable_data();
  int64_t pos = 0;
  for (const ArrayData* d : in) {
    const uint8_t* bits = d->GetBuffer(index);
    if (bits != nullptr) {
      bit_util::CopyBitmap(bits, d->offset, d->length, dst, pos);
    } else {
      bit_util::SetBitsTo(dst, pos, d->length, true);
    }
    pos += d->length;
  }
  return out;
}

// Bytes of the values of `d` that do not fit inline in their view.
int64_t OutOfLineBytes(const ArrayData& d) {
  int64_t total = 0;
  for (int64_t i = 0; i < d.length; ++i) {
    if (d.IsNull(i)) continue;
    std::string_view v;
    if (internal::LoadView(d, i, &v) && v.size() > 12)
      total += static_cast<int64_t>(v.size());
  }
  return total;
}

// Views: every input's values, the long ones gathered into one data buffer
// (so the result is compact, whatever buffers the inputs used); null slots
// become empty views.
Status ConcatViews(const Inputs& in, MemoryPool* pool, ArrayData* out) {
  int64_t total = 0;
  for (const ArrayData* d : in) total += OutOfLineBytes(*d);
  if (total > std::numeric_limits<int32_t>::max()) {
    return Status::CapacityError("concatenated views need ", total,
                                 " bytes of data, more than one data buffer holds");
  }
  QUIVER_ASSIGN_OR_RAISE(auto views, AllocateZeroedBuffer(TotalLength(in) * 16, pool));
  QUIVER_ASSIGN_OR_RAISE(auto data, AllocateResizableBuffer(total, pool));
  uint8_t* v = views->mutable_data();
  int32_t offset = 0;
  for (const ArrayData* d : in) {
    for (int64_t i = 0; i < d->length; ++i, v += 16) {
      std::string_view value;
      if (d->IsNull(i)) continue;
      if (!internal::LoadView(*d, i, &value)) {
        return Status::Invalid("a malformed view at position ", i, " of ",
                               d->type->ToString());
      }
      internal::WriteView(value, /*index=*/0, offset, v);
      if (value.size() <= 12) continue;
      std::memcpy(data->mutable_data() + offset, value.data(), value.size());
      offset += static_cast<int32_t>(value.size());
    }
  }
  out->buffers.push_back(std::move(views));
  if (total > 0) {
    data->ZeroPadding();
    out->buffers.push_back(std::shared_ptr<Buffer>(std::move(data)));
  }
  return Status::OK();
}

Result<std::shared_ptr<Buffer>> ConcatFixed(const Inputs& in, int index, int64_t width,
                                            MemoryPool* pool) {
  QUIVER_ASSIGN_OR_RAISE(auto out,
                         AllocateResizableBuffer(TotalLength(in) * width, pool));
  uint8_t* dst = out->mutable_data();
  for (const ArrayData* d : in) {
    const int64_t n = d->length * width;
    if (n > 0) std::memcpy(dst, d->GetBuffer(index) + d->offset * width, n);
    dst += n;
  }
  out->ZeroPadding();
  return std::shared_ptr<Buffer>(std::move(out));
}

template <typename O>
O OffsetAt(const ArrayData& d, int64_t i) {
  O v;
  std::memcpy(&v, d.GetBuffer(1) + (d.offset + i) * sizeof(O), sizeof(O));
  return v;
}

// Where each input's child values (or bytes) start, and how many there are.
struct Span {
  int64_t start = 0;
  int64_t length = 0;
};

// Offsets of every input in order, re-based to start at 0.
template <typename O>
Result<std::shared_ptr<Buffer>> ConcatOffsets(const Inputs& in, std::vector<Span>* spans,
                                              MemoryPool* pool) {
  const int64_t n = TotalLength(in);
  QUIVER_ASSIGN_OR_RAISE(auto out, AllocateResizableBuffer((n + 1) * sizeof(O), pool));
  O* dst = out->mutable_data_as<O>();
  int64_t pos = 0;
  int64_t base = 0;
  for (const ArrayData* d : in) {
    const int64_t first = d->length == 0 ? 0 : OffsetAt<O>(*d, 0);
    const int64_t last = d->length == 0 ? 0 : OffsetAt<O>(*d, d->length);
    spans->push_back({first, last - first});
    if (base + (last - first) > static_cast<int64_t>(std::numeric_limits<O>::max())) {
      return Status::CapacityError("concatenated values exceed ", sizeof(O) * 8,
                                   "-bit offsets");
    }
    // The source pointer and the shift are hoisted out of the loop (the
    // writes to dst could alias d's fields otherwise), so it vectorises;
    // unsigned arithmetic wraps where the old int64 sum was truncated.
    using U = std::make_unsigned_t<O>;
    const uint8_t* src = d->GetBuffer(1) + d->offset * static_cast<int64_t>(sizeof(O));
    const U shift = static_cast<U>(base - first);
    O* out_at = dst + pos;
    for (int64_t i = 0; i < d->length; ++i) {
      U v;
      std::memcpy(&v, src + i * static_cast<int64_t>(sizeof(O)), sizeof(O));
      out_at[i] = static_cast<O>(static_cast<U>(v + shift));
    }
    pos += d->length;
    base += last - first;
  }
  dst[pos] = static_cast<O>(base);
  out->ZeroPadding();
  return std::shared_ptr<Buffer>(std::move(out));
}

Result<std::shared_ptr<Buffer>> ConcatBytes(const Inputs& in,
                                            const std::vector<Span>& spans,
                                            MemoryPool* pool) {
  int64_t total = 0;
  for (const Span& s : spans) total += s.length;
  QUIVER_ASSIGN_OR_RAISE(auto out, AllocateResizableBuffer(total, pool));
  uint8_t* dst = out->mutable_data();
  for (size_t i = 0; i < in.size(); ++i) {
    if (spans[i].length > 0) {
      std::memcpy(dst, in[i]->GetBuffer(2) + spans[i].start, spans[i].length);
    }
    dst += spans[i].length;
  }
  out->ZeroPadding();
  return std::shared_ptr<Buffer>(std::move(out));
}

// The child `index` of every input, sliced to the spans given.
Result<ArrayDataPtr> ConcatChildren(const Inputs& in, int index,
                                    const std::vector<Span>& spans, MemoryPool* pool) {
  std::vector<ArrayDataPtr> slices;
  Inputs children;
  for (size_t i = 0; i < in.size(); ++i) {
    slices.push_back(in[i]->child_data[index]->Slice(spans[i].start, spans[i].length));
    children.push_back(slices.back().get());
  }
  return Concatenate(children, pool);
}

template <typename O>
Status ConcatVarSize(const Inputs& in, MemoryPool* pool, ArrayData* out) {
  std::vector<Span> spans;
  QUIVER_ASSIGN_OR_RAISE(auto offsets, ConcatOffsets<O>(in, &spans, pool));
  out->buffers.push_back(std::move(offsets));
  if (IsBaseBinary(out->type->id())) {
    QUIVER_ASSIGN_OR_RAISE(auto bytes, ConcatBytes(in, spans, pool));
    out->buffers.push_back(std::move(bytes));
    return Status::OK();
  }
  QUIVER_ASSIGN_OR_RAISE(auto child, ConcatChildren(in, 0, spans, pool));
  out->child_data.push_back(std::move(child));
  return Status::OK();
}

// Unions: the type codes in order; sparse children like a struct's; dense
// children whole, one after the other, each offset moved by the lengths of
// the same child in the inputs before.
Status ConcatUnions(const Inputs& in, MemoryPool* pool, ArrayData* out) {
  QUIVER_ASSIGN_OR_RAISE(auto codes, ConcatFixed(in, 1, 1, pool));
  out->buffers.push_back(codes);
  const DataType& t = *out->type;
  const size_t num_children = static_cast<size_t>(t.num_fields());
  std::vector<Span> spans;
  if (t.id() == TypeId::kSparseUnion) {
    for (const ArrayData* d : in) spans.push_back({d->offset, d->length});
    for (size_t k = 0; k < num_children; ++k) {
      QUIVER_ASSIGN_OR_RAISE(auto child,
                             ConcatChildren(in, static_cast<int>(k), spans, pool));
      out->child_data.push_back(std::move(child));
    }
    return Status::OK();
  }
  QUIVER_ASSIGN_OR_RAISE(auto offsets,
                         AllocateResizableBuffer(TotalLength(in) * 4, pool));
  int32_t* dst = offsets->mutable_data_as<int32_t>();
  const auto* all_codes = reinterpret_cast<const int8_t*>(codes->data());
  std::vector<int64_t> base(num_children, 0);
  int64_t pos = 0;
  for (const ArrayData* d : in) {
    const int32_t* src = d->GetValues<int32_t>(2);
    for (int64_t i = 0; i < d->length; ++i, ++pos) {
      const int k = t.child_id(all_codes[pos]);
      if (k < 0) {
        return Status::Invalid("cannot concatenate a union whose type code ",
                               static_cast<int>(all_codes[pos]), " names no child");
      }
      const int64_t moved = src[i] + base[static_cast<size_t>(k)];
      if (moved > std::numeric_limits<int32_t>::max()) {
        return Status::CapacityError("concatenated dense union offsets exceed 32 bits");
      }
      dst[pos] = static_cast<int32_t>(moved);
    }
    for (size_t k = 0; k < num_children; ++k) base[k] += d->child_data[k]->length;
  }
  offsets->ZeroPadding();
  out->buffers.push_back(std::shared_ptr<Buffer>(std::move(offsets)));
  for (size_t k = 0; k < num_children; ++k) {
    spans.clear();
    for (const ArrayData* d : in) spans.push_back({0, d->child_data[k]->length});
    QUIVER_ASSIGN_OR_RAISE(auto child,
                           ConcatChildren(in, static_cast<int>(k), spans, pool));
    out->child_data.push_back(std::move(child));
  }
  return Status::OK();
}

// List views: the children whole, one after the other; each offset moved by
// the lengths of the children before, sizes as they are (null slots: 0, 0).
template <typename O>
Status ConcatListViews(const Inputs& in, MemoryPool* pool, ArrayData* out) {
  const int64_t total = TotalLength(in);
  QUIVER_ASSIGN_OR_RAISE(auto offsets,
                         AllocateResizableBuffer(total * int64_t{sizeof(O)}, pool));
  QUIVER_ASSIGN_OR_RAISE(auto sizes,
                         AllocateResizableBuffer(total * int64_t{sizeof(O)}, pool));
  O* off_dst = offsets->mutable_data_as<O>();
  O* size_dst = sizes->mutable_data_as<O>();
  int64_t base = 0;
  int64_t pos = 0;
  for (const ArrayData* d : in) {
    const O* off_src = d->GetValues<O>(1);
    const O* size_src = d->GetValues<O>(2);
    for (int64_t i = 0; i < d->length; ++i, ++pos) {
      if (d->IsNull(i)) {
        off_dst[pos] = 0;
        size_dst[pos] = 0;
        continue;
      }
      const int64_t moved = static_cast<int64_t>(off_src[i]) + base;
      if (moved > std::numeric_limits<O>::max()) {
        return Status::CapacityError("concatenated list view offsets exceed ",
                                     sizeof(O) * 8, " bits");
      }
      off_dst[pos] = static_cast<O>(moved);
      size_dst[pos] = size_src[i];
    }
    base += d->child_data[0]->length;
  }
  offsets->ZeroPadding();
  sizes->ZeroPadding();
  out->buffers.push_back(std::shared_ptr<Buffer>(std::move(offsets)));
  out->buffers.push_back(std::shared_ptr<Buffer>(std::move(sizes)));
  std::vector<Span> spans;
  for (const ArrayData* d : in) spans.push_back({0, d->child_data[0]->length});
  QUIVER_ASSIGN_OR_RAISE(auto child, ConcatChildren(in, 0, spans, pool));
  out->child_data.push_back(std::move(child));
  return Status::OK();
}

// The dictionary of the last input, if every earlier one is a prefix of it.
// Run-end encoded: the runs each input's slots use, one after the other,
// their ends counted from the start of the result; the values those runs
// name (zero-copy slices) concatenated.
Status ConcatRunEndEncoded(const Inputs& in, MemoryPool* pool, ArrayData* out) {
  std::vector<int64_t> ends;
  std::vector<Span> spans;
  int64_t base = 0;
  for (const ArrayData* d : in) {
    int64_t first = -1;
    int64_t runs = 0;
    int64_t pos = base;
    if (!run_end::ForEachRun(*d, 0, d->length, [&](int64_t k, int64_t n) {
          if (first < 0) first = k;
          ++runs;
          pos += n;
          ends.push_back(pos);
          return true;
        })) {
      return Status::Invalid("cannot concatenate ", d->type->ToString(),
                             ": its run ends do not cover offset ", d->offset,
                             " + length ", d->length);
    }
    spans.push_back({first < 0 ? 0 : first, runs});
    base = pos;
  }
  const TypePtr& run_end_type = out->type->run_end_type();
  if (base > run_end::MaxRunEnd(*run_end_type)) {
    return Status::CapacityError("concatenated ", out->type->ToString(), " of ", base,
                                 " slots: more than ", run_end_type->ToString(),
                                 " run ends hold");
  }
  QUIVER_ASSIGN_OR_RAISE(auto packed, run_end::PackRunEnds(ends, *run_end_type, pool));
  out->child_data.push_back(ArrayData::Make(
      run_end_type, static_cast<int64_t>(ends.size()), {nullptr, std::move(packed)}, 0));
  QUIVER_ASSIGN_OR_RAISE(auto values, ConcatChildren(in, 1, spans, pool));
  out->child_data.push_back(std::move(values));
  return Status::OK();
}

Result<ArrayDataPtr> SharedDictionary(const Inputs& in) {
  const ArrayDataPtr& last = in.back()->dictionary;
  if (last == nullptr) return Status::Invalid("dictionary-encoded array without values");
  const ArrayPtr values = MakeArray(last);
  for (const ArrayData* d : in) {
    if (d->dictionary == last) continue;
    if (d->dictionary == nullptr || d->dictionary->length > last->length ||
        !values->RangeEquals(0, d->dictionary->length, 0, *MakeArray(d->dictionary))) {
      return Status::Invalid(
          "cannot concatenate dictionary-encoded arrays whose dictionaries differ "
          "(each must start with the values of the one before)");
    }
  }
  return last;
}

}  // namespace

Result<ArrayDataPtr> Concatenate(const std::vector<const ArrayData*>& in,
                                 MemoryPool* pool) {
  if (in.empty()) return Status::Invalid("concatenation of no arrays");
  const TypePtr& type = in.front()->type;
  for (const ArrayData* d : in) {
    if (!d->type->Equals(*type)) {
      return Status::TypeError("cannot append ", d->type->ToString(), " values to ",
                               type->ToString(), " values");
    }
  }
  auto out = std::make_shared<ArrayData>();
  out->type = type;
  out->length = TotalLength(in);
  const TypeId id = type->id();
  if (id == TypeId::kNull) {
    out->buffers = {nullptr};
    out->null_count = out->length;
    return out;
  }
  out->null_count = 0;
  for (const ArrayData* d : in) out->null_count += d->GetNullCount();
  QUIVER_ASSIGN_OR_RAISE(auto validity, ConcatBitmaps(in, 0, false, pool));
  out->buffers.push_back(std::move(validity));
  switch (id) {
    case TypeId::kBool: {
      QUIVER_ASSIGN_OR_RAISE(auto values, ConcatBitmaps(in, 1, true, pool));
      out->buffers.push_back(std::move(values));
      break;
    }
    case TypeId::kString:
    case TypeId::kBinary:
    case TypeId::kList:
    case TypeId::kMap:
      QUIVER_RETURN_NOT_OK(ConcatVarSize<int32_t>(in, pool, out.get()));
      break;
    case TypeId::kLargeString:
    case TypeId::kLargeBinary:
    case TypeId::kLargeList:
      QUIVER_RETURN_NOT_OK(ConcatVarSize<int64_t>(in, pool, out.get()));
      break;
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      QUIVER_RETURN_NOT_OK(ConcatViews(in, pool, out.get()));
      break;
    case TypeId::kFixedSizeList: {
      const int64_t size = type->list_size();
      std::vector<Span> spans;
      for (const ArrayData* d : in) spans.push_back({d->offset * size, d->length * size});
      QUIVER_ASSIGN_OR_RAISE(auto child, ConcatChildren(in, 0, spans, pool));
      out->child_data.push_back(std::move(child));
      break;
    }
    case TypeId::kStruct: {
      std::vector<Span> spans;
      for (const ArrayData* d : in) spans.push_back({d->offset, d->length});
      for (size_t i = 0; i < in.front()->child_data.size(); ++i) {
        QUIVER_ASSIGN_OR_RAISE(auto child,
                               ConcatChildren(in, static_cast<int>(i), spans, pool));
        out->child_data.push_back(std::move(child));
      }
      break;
    }
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion:
      QUIVER_RETURN_NOT_OK(ConcatUnions(in, pool, out.get()));
      break;
    case TypeId::kListView:
      QUIVER_RETURN_NOT_OK(ConcatListViews<int32_t>(in, pool, out.get()));
      break;
    case TypeId::kLargeListView:
      QUIVER_RETURN_NOT_OK(ConcatListViews<int64_t>(in, pool, out.get()));
      break;
    case TypeId::kRunEndEncoded:
      QUIVER_RETURN_NOT_OK(ConcatRunEndEncoded(in, pool, out.get()));
      break;
    case TypeId::kDictionary: {
      QUIVER_ASSIGN_OR_RAISE(out->dictionary, SharedDictionary(in));
      QUIVER_ASSIGN_OR_RAISE(auto indices,
                             ConcatFixed(in, 1, type->index_type()->byte_width(), pool));
      out->buffers.push_back(std::move(indices));
      break;
    }
    default: {
      const int width = type->byte_width();
      if (width < 0 || (width == 0 && id != TypeId::kFixedSizeBinary)) {
        return Status::NotImplemented("concatenation of ", type->ToString());
      }
      QUIVER_ASSIGN_OR_RAISE(auto values, ConcatFixed(in, 1, width, pool));
      out->buffers.push_back(std::move(values));
    }
  }
  return out;
}

int64_t ConcatenateBound(const ArrayData& d) {
  constexpr int64_t kPad = 64;
  const TypeId id = d.type->id();
  if (id == TypeId::kNull) return 0;
  const int64_t bits = d.length / 8 + 1 + kPad;  // a bitmap's share
  int64_t n = bits;                              // validity
  switch (id) {
    case TypeId::kBool:
      return n + bits;
    case TypeId::kString:
    case TypeId::kBinary:
    case TypeId::kList:
    case TypeId::kMap:
    case TypeId::kLargeString:
    case TypeId::kLargeBinary:
    case TypeId::kLargeList: {
      const bool large = IsLargeOffsets(id);
      const int64_t width = large ? 8 : 4;
      n += (d.length + 1) * width + kPad;
      int64_t first = 0, last = 0;
      if (d.length > 0) {
        first = large ? OffsetAt<int64_t>(d, 0) : OffsetAt<int32_t>(d, 0);
        last = large ? OffsetAt<int64_t>(d, d.length) : OffsetAt<int32_t>(d, d.length);
      }
      if (IsBaseBinary(id)) return n + (last - first) + kPad;
      return n + ConcatenateBound(*d.child_data[0]->Slice(first, last - first));
    }
    case TypeId::kFixedSizeList: {
      const int64_t size = d.type->list_size();
      return n +
             ConcatenateBound(*d.child_data[0]->Slice(d.offset * size, d.length * size));
    }
    case TypeId::kStruct:
      for (const auto& c : d.child_data)
        n += ConcatenateBound(*c->Slice(d.offset, d.length));
      return n;
    case TypeId::kDictionary:
      return n + d.length * d.type->index_type()->byte_width() + kPad;
    case TypeId::kSparseUnion:
      n += d.length + kPad;
      for (const auto& c : d.child_data)
        n += ConcatenateBound(*c->Slice(d.offset, d.length));
      return n;
    case TypeId::kDenseUnion:  // the children whole, as concatenated
      n += d.length * 5 + 2 * kPad;
      for (const auto& c : d.child_data) n += ConcatenateBound(*c);
      return n;
    case TypeId::kListView:
    case TypeId::kLargeListView:  // the child whole, as concatenated
      n += d.length * 2 * (IsLargeOffsets(id) ? 8 : 4) + 2 * kPad;
      return n + ConcatenateBound(*d.child_data[0]);
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      return n + d.length * 16 + kPad + OutOfLineBytes(d) + kPad;
    case TypeId::kRunEndEncoded:  // at most every run and value
      n += d.child_data[0]->length * 8 + kPad;
      return n + ConcatenateBound(*d.child_data[1]);
    default:
      return n + d.length * std::max(d.type->byte_width(), 1) + kPad;
  }
}

Result<RecordBatchPtr> ConcatenateBatches(const std::vector<RecordBatchPtr>& batches,
                                          MemoryPool* pool) {
  if (batches.empty()) return Status::Invalid("concatenation of no record batches");
  const SchemaPtr& schema = batches.front()->schema();
  int64_t rows = 0;
  for (const auto& b : batches) {
    if (!b->schema()->Equals(*schema)) {
      return Status::TypeError("cannot concatenate a batch of schema ",
                               b->schema()->ToString(), " to batches of ",
                               schema->ToString());
    }
    rows += b->num_rows();
  }
  std::vector<ArrayDataPtr> columns;
  for (int c = 0; c < schema->num_fields(); ++c) {
    Inputs in;
    for (const auto& b : batches) in.push_back(b->column_data(c).get());
    QUIVER_ASSIGN_OR_RAISE(auto column, Concatenate(in, pool));
    columns.push_back(std::move(column));
  }
  return RecordBatch::Make(schema, rows, std::move(columns));
}

}  // namespace quiver
