#include "columnar/ipc/concatenate.h"

#include <cstring>
#include <limits>

#include "quiver/columnar/bit_util.h"

namespace quiver::ipc::internal {

namespace {

// A bitmap of a.length + b.length bits, or null when neither side has nulls.
Result<std::shared_ptr<Buffer>> ConcatBitmaps(const ArrayData& a, int a_index,
                                              const ArrayData& b, int b_index,
                                              bool always, MemoryPool* pool) {
  const uint8_t* abits = a.GetBuffer(a_index);
  const uint8_t* bbits = b.GetBuffer(b_index);
  if (!always && (abits == nullptr || a.GetNullCount() == 0) &&
      (bbits == nullptr || b.GetNullCount() == 0)) {
    return std::shared_ptr<Buffer>();
  }
  const int64_t n = a.length + b.length;
  QUIVER_ASSIGN_OR_RAISE(auto out, AllocateZeroedBuffer(bit_util::BytesForBits(n), pool));
  uint8_t* dst = out->mutable_data();
  if (abits != nullptr) {
    bit_util::CopyBitmap(abits, a.offset, a.length, dst, 0);
  } else {
    bit_util::SetBitsTo(dst, 0, a.length, true);
  }
  if (bbits != nullptr) {
    bit_util::CopyBitmap(bbits, b.offset, b.length, dst, a.length);
  } else {
    bit_util::SetBitsTo(dst, a.length, b.length, true);
  }
  return out;
}

Result<std::shared_ptr<Buffer>> ConcatFixed(const ArrayData& a, const ArrayData& b,
                                            int index, int64_t width, MemoryPool* pool) {
  const int64_t an = a.length * width;
  const int64_t bn = b.length * width;
  QUIVER_ASSIGN_OR_RAISE(auto out, AllocateResizableBuffer(an + bn, pool));
  if (an > 0) std::memcpy(out->mutable_data(), a.GetBuffer(index) + a.offset * width, an);
  if (bn > 0) {
    std::memcpy(out->mutable_data() + an, b.GetBuffer(index) + b.offset * width, bn);
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

// Offsets of a followed by b, re-based to start at 0. Returns the ranges of
// child values (or bytes) each side spans.
template <typename O>
Result<std::shared_ptr<Buffer>> ConcatOffsets(const ArrayData& a, const ArrayData& b,
                                              int64_t spans[2][2], MemoryPool* pool) {
  const ArrayData* sides[2] = {&a, &b};
  const int64_t n = a.length + b.length;
  QUIVER_ASSIGN_OR_RAISE(auto out, AllocateResizableBuffer((n + 1) * sizeof(O), pool));
  O* dst = out->mutable_data_as<O>();
  int64_t pos = 0;
  int64_t base = 0;
  for (int s = 0; s < 2; ++s) {
    const ArrayData& d = *sides[s];
    O first = d.length == 0 ? 0 : OffsetAt<O>(d, 0);
    O last = d.length == 0 ? 0 : OffsetAt<O>(d, d.length);
    spans[s][0] = first;
    spans[s][1] = last - first;
    for (int64_t i = 0; i < d.length; ++i) {
      dst[pos++] = static_cast<O>(OffsetAt<O>(d, i) - first + base);
    }
    base += last - first;
  }
  if (base > static_cast<int64_t>(std::numeric_limits<O>::max())) {
    return Status::CapacityError("concatenated dictionary exceeds ", sizeof(O) * 8,
                                 "-bit offsets");
  }
  dst[pos] = static_cast<O>(base);
  out->ZeroPadding();
  return std::shared_ptr<Buffer>(std::move(out));
}

Result<std::shared_ptr<Buffer>> ConcatBytes(const ArrayData& a, const ArrayData& b,
                                            const int64_t spans[2][2], MemoryPool* pool) {
  QUIVER_ASSIGN_OR_RAISE(auto out,
                         AllocateResizableBuffer(spans[0][1] + spans[1][1], pool));
  if (spans[0][1] > 0) {
    std::memcpy(out->mutable_data(), a.GetBuffer(2) + spans[0][0], spans[0][1]);
  }
  if (spans[1][1] > 0) {
    std::memcpy(out->mutable_data() + spans[0][1], b.GetBuffer(2) + spans[1][0],
                spans[1][1]);
  }
  out->ZeroPadding();
  return std::shared_ptr<Buffer>(std::move(out));
}

template <typename O>
Status ConcatVarSize(const ArrayData& a, const ArrayData& b, MemoryPool* pool,
                     ArrayData* out) {
  int64_t spans[2][2];
  QUIVER_ASSIGN_OR_RAISE(auto offsets, ConcatOffsets<O>(a, b, spans, pool));
  out->buffers.push_back(std::move(offsets));
  if (IsBaseBinary(a.type->id())) {
    QUIVER_ASSIGN_OR_RAISE(auto bytes, ConcatBytes(a, b, spans, pool));
    out->buffers.push_back(std::move(bytes));
    return Status::OK();
  }
  QUIVER_ASSIGN_OR_RAISE(
      auto child, Concatenate(*a.child_data[0]->Slice(spans[0][0], spans[0][1]),
                              *b.child_data[0]->Slice(spans[1][0], spans[1][1]), pool));
  out->child_data.push_back(std::move(child));
  return Status::OK();
}

}  // namespace

Result<ArrayDataPtr> Concatenate(const ArrayData& a, const ArrayData& b,
                                 MemoryPool* pool) {
  if (!a.type->Equals(*b.type)) {
    return Status::TypeError("cannot append ", b.type->ToString(), " values to ",
                             a.type->ToString(), " values");
  }
  auto out = std::make_shared<ArrayData>();
  out->type = a.type;
  out->length = a.length + b.length;
  const TypeId id = a.type->id();
  if (id == TypeId::kNull) {
    out->buffers = {nullptr};
    out->null_count = out->length;
    return out;
  }
  out->null_count = a.GetNullCount() + b.GetNullCount();
  QUIVER_ASSIGN_OR_RAISE(auto validity, ConcatBitmaps(a, 0, b, 0, false, pool));
  out->buffers.push_back(std::move(validity));
  switch (id) {
    case TypeId::kBool: {
      QUIVER_ASSIGN_OR_RAISE(auto values, ConcatBitmaps(a, 1, b, 1, true, pool));
      out->buffers.push_back(std::move(values));
      break;
    }
    case TypeId::kString:
    case TypeId::kBinary:
    case TypeId::kList:
    case TypeId::kMap:
      QUIVER_RETURN_NOT_OK(ConcatVarSize<int32_t>(a, b, pool, out.get()));
      break;
    case TypeId::kLargeString:
    case TypeId::kLargeBinary:
    case TypeId::kLargeList:
      QUIVER_RETURN_NOT_OK(ConcatVarSize<int64_t>(a, b, pool, out.get()));
      break;
    case TypeId::kFixedSizeList: {
      const int64_t size = a.type->list_size();
      QUIVER_ASSIGN_OR_RAISE(
          auto child,
          Concatenate(*a.child_data[0]->Slice(a.offset * size, a.length * size),
                      *b.child_data[0]->Slice(b.offset * size, b.length * size), pool));
      out->child_data.push_back(std::move(child));
      break;
    }
    case TypeId::kStruct:
      for (size_t i = 0; i < a.child_data.size(); ++i) {
        QUIVER_ASSIGN_OR_RAISE(
            auto child, Concatenate(*a.child_data[i]->Slice(a.offset, a.length),
                                    *b.child_data[i]->Slice(b.offset, b.length), pool));
        out->child_data.push_back(std::move(child));
      }
      break;
    case TypeId::kDictionary: {
      QUIVER_ASSIGN_OR_RAISE(
          auto indices, ConcatFixed(a, b, 1, a.type->index_type()->byte_width(), pool));
      out->buffers.push_back(std::move(indices));
      out->dictionary = b.dictionary ? b.dictionary : a.dictionary;
      break;
    }
    default: {
      const int width = a.type->byte_width();
      if (width < 0 || (width == 0 && id != TypeId::kFixedSizeBinary)) {
        return Status::NotImplemented("concatenation of ", a.type->ToString());
      }
      QUIVER_ASSIGN_OR_RAISE(auto values, ConcatFixed(a, b, 1, width, pool));
      out->buffers.push_back(std::move(values));
    }
  }
  return out;
}

}  // namespace quiver::ipc::internal
