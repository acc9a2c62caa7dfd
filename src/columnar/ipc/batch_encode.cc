// Gathering the buffers of a batch into an IPC body payload.
//
// Buffers are referenced, not copied, wherever the format allows: only
// bitmaps of arrays sliced at a bit offset that is not a multiple of 8,
// offsets of sliced variable-size arrays (which must start at 0 on the wire)
// and compressed buffers are new memory. Arrays of a big-endian schema (kept
// so by a reader) are written as they are; only their offsets are read, and
// re-based ones written, big-endian.

#include <cstring>
#include <limits>

#include "columnar/ipc/compression.h"
#include "columnar/ipc/endian_swap.h"
#include "columnar/ipc/zero_offsets.h"
#include "columnar/run_end_util.h"
#include "quiver/columnar/bit_util.h"
#include "quiver/columnar/ipc/message.h"
#include "quiver/columnar/layout.h"

namespace quiver::ipc {

namespace {

class PayloadAssembler {
 public:
  PayloadAssembler(const IpcWriteOptions& options, BatchPayload* out,
                   Endianness endianness)
      : options_(options),
        pool_(options.pool ? options.pool : default_memory_pool()),
        out_(out),
        big_endian_(endianness == Endianness::kBig) {}

  Status Visit(const ArrayData& a, int depth) {
    if (depth > options_.max_nesting_depth) {
      return Status::Invalid("array nested deeper than ", options_.max_nesting_depth,
                             " levels");
    }
    const TypeId id = a.type->id();
    if (id == TypeId::kNull) {
      AddNode(a.length, a.length);
      return Status::OK();
    }
    if (id == TypeId::kRunEndEncoded) return VisitRunEndEncoded(a, depth);
    // A union has no nulls of its own, nor (V5) a validity buffer.
    const int64_t null_count = IsUnion(id) ? 0 : a.GetNullCount();
    AddNode(a.length, null_count);
    const DataTypeLayout layout = LayoutOf(*a.type);
    int64_t first = 0, last = 0;  // the span of the data or child the offsets cover
    for (size_t i = 0; i < layout.buffers.size(); ++i) {
      const BufferLayout& b = layout.buffers[i];
      if (b.kind == BufferKind::kValidity && null_count == 0) {
        AddBuffer(nullptr);
        continue;
      }
      QUIVER_RETURN_NOT_OK(AddOwnBuffer(a, b, static_cast<int>(i), &first, &last));
    }
    if (layout.variadic) {
      // Every data buffer whole (the views name them by index and offset).
      const int64_t n = static_cast<int64_t>(a.buffers.size()) -
                        static_cast<int64_t>(layout.buffers.size());
      for (int64_t k = 0; k < n; ++k) {
        AddBuffer(a.buffers[layout.buffers.size() + static_cast<size_t>(k)]);
      }
      out_->metadata.variadic_buffer_counts.push_back(n);
    }
    return VisitChildren(a, first, last, depth);
  }

  // Compresses if asked and lays the buffers out in the body.
  Status Finish(int64_t length) {
    BatchMetadata& md = out_->metadata;
    md.length = length;
    md.compression = options_.compression;
    if (options_.compression != Compression::kUncompressed) {
      for (auto& b : out_->buffers) {
        if (b == nullptr || b->size() == 0) continue;
        QUIVER_ASSIGN_OR_RAISE(
            b, internal::CompressBuffer(options_.compression, options_.compression_level,
                                        b->data(), b->size(), pool_));
      }
    }
    const int64_t align = options_.alignment;
    int64_t pos = 0;
    md.buffers.clear();
    md.buffers.reserve(out_->buffers.size());
    for (const auto& b : out_->buffers) {
      const int64_t size = b ? b->size() : 0;
      md.buffers.push_back(BufferSpec{pos, size});
      pos += (size + align - 1) & ~(align - 1);
    }
    md.body_length = pos;
    return Status::OK();
  }

 private:
  void AddNode(int64_t length, int64_t null_count) {
    out_->metadata.nodes.push_back(FieldNode{length, null_count});
  }
  void AddBuffer(std::shared_ptr<Buffer> buffer) {
    out_->buffers.push_back(std::move(buffer));
  }

  Result<ArrayDataPtr> Child(const ArrayData& a, int i) {
    if (i >= static_cast<int>(a.child_data.size()) || a.child_data[i] == nullptr) {
      return Status::Invalid("array of ", a.type->ToString(), " lacks child ", i);
    }
    return a.child_data[i];
  }

  Result<const std::shared_ptr<Buffer>*> Slot(const ArrayData& a, int i,
                                              const char* what) {
    if (i >= static_cast<int>(a.buffers.size()) || a.buffers[i] == nullptr) {
      return Status::Invalid("array of ", a.type->ToString(), " (length ", a.length,
                             ") has no ", what, " buffer");
    }
    return &a.buffers[i];
  }

  // A bitmap re-aligned to bit 0: a slice when the offset is byte-aligned,
  // else a re-packed copy.
  Status AddBitmap(const ArrayData& a, int i, const char* what) {
    if (a.length == 0) {
      AddBuffer(nullptr);
      return Status::OK();
    }
    QUIVER_ASSIGN_OR_RAISE(auto slot, Slot(a, i, what));
    const std::shared_ptr<Buffer>& bits = *slot;
    const int64_t nbytes = bit_util::BytesForBits(a.length);
    if (bit_util::BytesForBits(a.offset + a.length) > bits->size()) {
      return Status::Invalid("array of ", a.type->ToString(), ": ", what, " bitmap of ",
                             bits->size(), " bytes is too short for offset ", a.offset,
                             " and length ", a.length);
    }
    if (a.offset % 8 == 0) {
      QUIVER_ASSIGN_OR_RAISE(auto slice, Buffer::SliceSafe(bits, a.offset / 8, nbytes));
      AddBuffer(std::move(slice));
      return Status::OK();
    }
    QUIVER_ASSIGN_OR_RAISE(auto copy, AllocateZeroedBuffer(nbytes, pool_));
    bit_util::CopyBitmap(bits->data(), a.offset, a.length, copy->mutable_data(), 0);
    AddBuffer(std::move(copy));
    return Status::OK();
  }

  // Buffer `i` of `a`, as the slice needs it on the wire: bitmaps re-aligned
  // to bit 0, fixed-width elements of the slice, offsets re-based to 0 (and
  // [*first, *last) the span they cover), data that span.
  Status AddOwnBuffer(const ArrayData& a, const BufferLayout& b, int i, int64_t* first,
                      int64_t* last) {
    switch (b.kind) {
      case BufferKind::kAlwaysNull:
        return Status::OK();
      case BufferKind::kValidity:
      case BufferKind::kBitmap:
        return AddBitmap(a, i, b.name);
      case BufferKind::kFixedWidth:
        return AddValues(a, b.byte_width, i, b.name);
      case BufferKind::kOffsets:
        return b.byte_width == 4 ? AddOffsets<int32_t>(a, first, last)
                                 : AddOffsets<int64_t>(a, first, last);
      case BufferKind::kData: {
        if (*last == *first) {
          AddBuffer(nullptr);
          return Status::OK();
        }
        QUIVER_ASSIGN_OR_RAISE(auto slot, Slot(a, i, b.name));
        auto data = Buffer::SliceSafe(*slot, *first, *last - *first);
        if (!data.ok()) {
          return data.status().WithContext("array of " + a.type->ToString());
        }
        AddBuffer(std::move(*data));
        return Status::OK();
      }
    }
    return Status::OK();
  }

  // The children a slice uses: a list's the span its offsets cover; a
  // fixed-size list's its lists' values; a struct's and a sparse union's
  // sliced alike; a dense union's and a list view's whole (their offsets
  // index them).
  Status VisitChildren(const ArrayData& a, int64_t first, int64_t last, int depth) {
    switch (a.type->id()) {
      case TypeId::kList:
      case TypeId::kLargeList:
      case TypeId::kMap: {
        QUIVER_ASSIGN_OR_RAISE(auto child, Child(a, 0));
        if (last > child->length) {
          return Status::Invalid("array of ", a.type->ToString(), ": offsets reach ",
                                 last, " but the child has ", child->length, " values");
        }
        if (first == 0 && last == child->length) return Visit(*child, depth + 1);
        return Visit(*child->Slice(first, last - first), depth + 1);
      }
      case TypeId::kFixedSizeList: {
        const int64_t size = a.type->list_size();
        QUIVER_ASSIGN_OR_RAISE(auto child, Child(a, 0));
        return Visit(*child->Slice(a.offset * size, a.length * size), depth + 1);
      }
      case TypeId::kStruct:
      case TypeId::kSparseUnion:
      case TypeId::kDenseUnion:
      case TypeId::kListView:
      case TypeId::kLargeListView: {
        const bool whole =
            a.type->id() != TypeId::kStruct && a.type->id() != TypeId::kSparseUnion;
        for (int i = 0; i < a.type->num_fields(); ++i) {
          QUIVER_ASSIGN_OR_RAISE(auto child, Child(a, i));
          if (whole || (a.offset == 0 && child->length == a.length)) {
            QUIVER_RETURN_NOT_OK(Visit(*child, depth + 1));
          } else {
            QUIVER_RETURN_NOT_OK(Visit(*child->Slice(a.offset, a.length), depth + 1));
          }
        }
        return Status::OK();
      }
      default:
        return Status::OK();
    }
  }

  // Run-end encoded: no buffers and no nulls of its own; a slice is sent as
  // the runs its slots use, their ends counted from its first slot (a field
  // node has no offset), the values they name sliced zero-copy.
  Status VisitRunEndEncoded(const ArrayData& a, int depth) {
    QUIVER_RETURN_NOT_OK(Child(a, 0).status());
    QUIVER_RETURN_NOT_OK(Child(a, 1).status());
    AddNode(a.length, 0);
    if (big_endian_) {
      // Kept big-endian: written as it is when it covers its runs exactly;
      // re-basing a slice would mean re-encoding foreign-order run ends.
      const ArrayData& ends = *a.child_data[0];
      if (a.offset != 0 || ends.length == 0 || LastBigEndianRunEnd(ends) != a.length) {
        return Status::NotImplemented(
            "writing a slice of a run-end encoded array kept big-endian; read it "
            "with ensure_native_endian = true");
      }
      QUIVER_RETURN_NOT_OK(Visit(ends, depth + 1));
      return Visit(*a.child_data[1], depth + 1);
    }
    QUIVER_ASSIGN_OR_RAISE(auto whole,
                           run_end::Unslice(std::make_shared<ArrayData>(a), pool_));
    QUIVER_RETURN_NOT_OK(Visit(*whole->child_data[0], depth + 1));
    return Visit(*whole->child_data[1], depth + 1);
  }

  static int64_t LastBigEndianRunEnd(const ArrayData& ends) {
    const int64_t k = ends.offset + ends.length - 1;
    const uint8_t* values = ends.buffers[1]->data();
    switch (ends.type->id()) {
      case TypeId::kInt16:
        return internal::LoadBigEndian<int16_t>(values + 2 * k);
      case TypeId::kInt32:
        return internal::LoadBigEndian<int32_t>(values + 4 * k);
      default:
        return internal::LoadBigEndian<int64_t>(values + 8 * k);
    }
  }

  Status AddValues(const ArrayData& a, int64_t width, int index = 1,
                   const char* what = "values") {
    if (a.length == 0 || width == 0) {
      AddBuffer(nullptr);
      return Status::OK();
    }
    QUIVER_ASSIGN_OR_RAISE(auto slot, Slot(a, index, what));
    auto slice = Buffer::SliceSafe(*slot, a.offset * width, a.length * width);
    if (!slice.ok()) {
      return slice.status().WithContext("array of " + a.type->ToString() + " values");
    }
    AddBuffer(std::move(*slice));
    return Status::OK();
  }

  // Adds the offsets (re-based to 0) and returns the span [first, last) they
  // cover in the data buffer or child.
  template <typename O>
  Status AddOffsets(const ArrayData& a, int64_t* first, int64_t* last) {
    *first = *last = 0;
    if (a.length == 0) {
      AddBuffer(Buffer::SliceSafe(internal::ZeroOffsets(), 0, sizeof(O)).ValueOrDie());
      return Status::OK();
    }
    QUIVER_ASSIGN_OR_RAISE(auto slot, Slot(a, 1, "offsets"));
    const std::shared_ptr<Buffer>& buf = *slot;
    const int64_t count = a.length + 1;
    if ((a.offset + count) * static_cast<int64_t>(sizeof(O)) > buf->size()) {
      return Status::Invalid("array of ", a.type->ToString(), ": offsets buffer of ",
                             buf->size(), " bytes is too short for offset ", a.offset,
                             " and length ", a.length);
    }
    const O* src = buf->data_as<O>() + a.offset;
    auto at = [&](int64_t i) -> O {
      if (!big_endian_) return src[i];
      return internal::LoadBigEndian<O>(reinterpret_cast<const uint8_t*>(src + i));
    };
    *first = at(0);
    *last = at(a.length);
    if (*first < 0 || *last < *first) {
      return Status::Invalid("array of ", a.type->ToString(), ": offsets run from ",
                             *first, " to ", *last);
    }
    if (*first == 0) {
      AddBuffer(
          Buffer::SliceSafe(buf, a.offset * sizeof(O), count * sizeof(O)).ValueOrDie());
      return Status::OK();
    }
    QUIVER_ASSIGN_OR_RAISE(auto rebased,
                           AllocateResizableBuffer(count * sizeof(O), pool_));
    O* dst = rebased->mutable_data_as<O>();
    for (int64_t i = 0; i < count; ++i) {
      const O v = static_cast<O>(at(i) - *first);
      if (!big_endian_) {
        dst[i] = v;
        continue;
      }
      using U = std::make_unsigned_t<O>;
      U u = static_cast<U>(v);
      if constexpr (sizeof(U) == 4) u = __builtin_bswap32(u);
      if constexpr (sizeof(U) == 8) u = __builtin_bswap64(u);
      std::memcpy(dst + i, &u, sizeof(u));
    }
    rebased->ZeroPadding();
    AddBuffer(std::move(rebased));
    return Status::OK();
  }

  const IpcWriteOptions& options_;
  MemoryPool* pool_;
  BatchPayload* out_;
  bool big_endian_;
};

Status CheckOptions(const IpcWriteOptions& options) {
  const int32_t a = options.alignment;
  if (a < 8 || (a & (a - 1)) != 0) {
    return Status::Invalid("IPC alignment must be a power of two >= 8, got ", a);
  }
  return Status::OK();
}

}  // namespace

Result<BatchPayload> AssembleRecordBatch(const RecordBatch& batch,
                                         const IpcWriteOptions& options) {
  QUIVER_RETURN_NOT_OK(CheckOptions(options));
  BatchPayload out;
  PayloadAssembler assembler(options, &out, batch.schema()->endianness());
  for (int i = 0; i < batch.num_columns(); ++i) {
    const ArrayDataPtr& column = batch.column_data(i);
    if (column == nullptr || column->length != batch.num_rows()) {
      return Status::Invalid("column ", i, " ('", batch.column_name(i), "') has ",
                             column ? column->length : 0, " rows, the batch has ",
                             batch.num_rows());
    }
    Status st = assembler.Visit(*column, 0);
    if (!st.ok()) return st.WithContext("column '" + batch.column_name(i) + "'");
  }
  QUIVER_RETURN_NOT_OK(assembler.Finish(batch.num_rows()));
  return out;
}

Result<BatchPayload> AssembleDictionary(const ArrayDataPtr& values,
                                        const IpcWriteOptions& options,
                                        Endianness endianness) {
  QUIVER_RETURN_NOT_OK(CheckOptions(options));
  if (values == nullptr) return Status::Invalid("null dictionary values");
  BatchPayload out;
  PayloadAssembler assembler(options, &out, endianness);
  QUIVER_RETURN_NOT_OK(assembler.Visit(*values, 0));
  QUIVER_RETURN_NOT_OK(assembler.Finish(values->length));
  return out;
}

Result<EncodedBatch> EncodeRecordBatchMessage(const RecordBatch& batch,
                                              const IpcWriteOptions& options) {
  EncodedBatch out;
  QUIVER_ASSIGN_OR_RAISE(out.payload, AssembleRecordBatch(batch, options));
  QUIVER_ASSIGN_OR_RAISE(out.metadata,
                         EncodeRecordBatch(out.payload.metadata, options.pool));
  return out;
}

Result<EncodedBatch> EncodeDictionaryMessage(const DictionaryWriteTracker::Send& send,
                                             const IpcWriteOptions& options) {
  EncodedBatch out;
  QUIVER_ASSIGN_OR_RAISE(out.payload,
                         AssembleDictionary(send.values, options, send.endianness));
  QUIVER_ASSIGN_OR_RAISE(
      out.metadata,
      EncodeDictionaryBatch(send.id, send.is_delta, out.payload.metadata, options.pool));
  return out;
}

}  // namespace quiver::ipc
