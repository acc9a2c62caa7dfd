// Rebuilding arrays from a RecordBatch / DictionaryBatch message.
//
// The message is untrusted: counts are compared with the schema before any
// indexing, every buffer is checked to be long enough for the lengths the
// field nodes state (with overflow-safe arithmetic), and offsets are checked
// at both ends before a child or data range is derived from them. Validate()
// then runs on the result.
//
// A big-endian body (the schema said so) is loaded as it is, offsets read
// big-endian for the checks above; the result is then byte-swapped into new
// memory and validated in little-endian order. The swapped arrays are
// returned, or with options.ensure_native_endian false the big-endian ones.

#include <cstring>
#include <string>
#include <vector>

#include "columnar/ipc/compression.h"
#include "columnar/ipc/endian_swap.h"
#include "columnar/ipc/metadata_internal.h"
#include "columnar/ipc/zero_offsets.h"
#include "quiver/columnar/ipc/message.h"
#include "quiver/columnar/layout.h"

namespace quiver::ipc {

namespace {

// a * b, or false on overflow (both non-negative).
bool MulOk(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// Node and buffer counts of `type` in a batch; a view field takes the next
// of the batch's variadic buffer counts.
Status CountLayout(const DataType& type, int depth, int max_depth,
                   const BatchMetadata& md, size_t* views, int64_t* nodes,
                   int64_t* buffers) {
  if (depth > max_depth) {
    return Status::Invalid("type nested deeper than ", max_depth, " levels");
  }
  ++*nodes;
  const DataTypeLayout layout = LayoutOf(type);
  *buffers += layout.num_wire_buffers();
  // V4 writers put a validity buffer entry first in a union's.
  if (IsUnion(type.id()) && md.version == MetadataVersion::kV4) ++*buffers;
  if (layout.variadic) {
    if (*views >= md.variadic_buffer_counts.size()) {
      return Status::Invalid("batch has ", md.variadic_buffer_counts.size(),
                             " variadic buffer counts, the schema has more view fields");
    }
    const int64_t n = md.variadic_buffer_counts[(*views)++];
    if (n > static_cast<int64_t>(md.buffers.size())) {
      return Status::Invalid("variadic buffer count ", n, " exceeds the batch's ",
                             md.buffers.size(), " buffers");
    }
    *buffers += n;
  }
  if (type.id() == TypeId::kDictionary) return Status::OK();
  for (const FieldPtr& child : type.fields()) {
    QUIVER_RETURN_NOT_OK(
        CountLayout(*child->type(), depth + 1, max_depth, md, views, nodes, buffers));
  }
  return Status::OK();
}

class ArrayLoader {
 public:
  ArrayLoader(const BatchMetadata& md, const BodyResolver& resolver,
              const DictionaryMemo& memo, const IpcReadOptions& options,
              Endianness wire_endianness)
      : md_(md),
        resolver_(resolver),
        memo_(memo),
        options_(options),
        pool_(options.pool ? options.pool : default_memory_pool()),
        big_endian_(wire_endianness == Endianness::kBig) {}

  // Checks the counts of the header against `types` (one per column).
  Status CheckCounts(const std::vector<const DataType*>& types) {
    int64_t nodes = 0, buffers = 0;
    size_t views = 0;
    for (const DataType* t : types) {
      QUIVER_RETURN_NOT_OK(
          CountLayout(*t, 0, options_.max_nesting_depth, md_, &views, &nodes, &buffers));
    }
    if (views != md_.variadic_buffer_counts.size()) {
      return Status::Invalid("batch has ", md_.variadic_buffer_counts.size(),
                             " variadic buffer counts, the schema has ", views,
                             " view fields");
    }
    if (nodes != static_cast<int64_t>(md_.nodes.size())) {
      return Status::Invalid("batch has ", md_.nodes.size(),
                             " field nodes, the schema needs ", nodes);
    }
    if (buffers != static_cast<int64_t>(md_.buffers.size())) {
      return Status::Invalid("batch has ", md_.buffers.size(),
                             " buffer entries, the schema needs ", buffers);
    }
    return Status::OK();
  }

  Result<ArrayDataPtr> Load(const TypePtr& type, std::vector<int>* path, int depth) {
    if (depth > options_.max_nesting_depth) {
      return Status::Invalid("type nested deeper than ", options_.max_nesting_depth);
    }
    if (node_index_ >= md_.nodes.size()) return Status::Invalid("ran out of field nodes");
    const int64_t node_index = static_cast<int64_t>(node_index_);
    const FieldNode node = md_.nodes[node_index_++];
    auto out = std::make_shared<ArrayData>();
    out->type = type;
    out->length = node.length;
    out->null_count = node.null_count;
    Status st = LoadInto(node, path, depth, out.get());
    if (!st.ok()) {
      return st.WithContext("field node " + std::to_string(node_index) + " (" +
                            type->ToString() + ", length " + std::to_string(node.length) +
                            ")");
    }
    return out;
  }

 private:
  // The node's buffers as LayoutOf its type lists them, then its children.
  Status LoadInto(const FieldNode& node, std::vector<int>* path, int depth,
                  ArrayData* out) {
    const TypeId id = out->type->id();
    if (id == TypeId::kNull) {
      out->buffers = {nullptr};
      out->null_count = node.length;
      return Status::OK();
    }
    if (id == TypeId::kRunEndEncoded && node.null_count != 0) {
      return Status::Invalid("a run-end encoded field node with null_count ",
                             node.null_count,
                             " (it has no nulls of its own: they are its values')");
    }
    // Unions have no validity bitmap since V5; a V4 message's validity entry
    // comes first and must not hold nulls.
    if (IsUnion(id) && md_.version == MetadataVersion::kV4) {
      QUIVER_ASSIGN_OR_RAISE(auto validity, NextBuffer());
      if (node.null_count > 0 && validity->size() > 0) {
        return Status::NotImplemented("a V4 union with a validity bitmap of its own (",
                                      node.null_count,
                                      " nulls): unions have no validity bitmap since V5");
      }
    }
    const DataTypeLayout layout = LayoutOf(*out->type);
    int64_t last = 0;  // the last offset, which bounds the data or the child
    for (const BufferLayout& b : layout.buffers) {
      QUIVER_RETURN_NOT_OK(LoadBuffer(node, b, &last, out));
    }
    if (layout.variadic) {
      if (view_index_ >= md_.variadic_buffer_counts.size()) {
        return Status::Invalid("no variadic buffer count for this view field");
      }
      const int64_t n = md_.variadic_buffer_counts[view_index_++];
      for (int64_t k = 0; k < n; ++k) {
        QUIVER_ASSIGN_OR_RAISE(auto data, NextBuffer());
        out->buffers.push_back(std::move(data));
      }
    }
    switch (id) {
      case TypeId::kList:
      case TypeId::kLargeList:
      case TypeId::kMap: {
        QUIVER_ASSIGN_OR_RAISE(auto child, LoadChild(0, path, depth, out));
        if (child->length < last) {
          return Status::Invalid("offsets reach ", last, " but the child has ",
                                 child->length, " values");
        }
        return Status::OK();
      }
      case TypeId::kFixedSizeList:
        return LoadFixedSizeList(node, path, depth, out);
      case TypeId::kStruct:
      case TypeId::kSparseUnion:
      case TypeId::kDenseUnion:
        return LoadFields(node, path, depth, out);
      case TypeId::kListView:
      case TypeId::kLargeListView:
      case TypeId::kRunEndEncoded:
        // Validation checks each view against the child, and that run ends
        // and values agree and the runs cover the node.
        for (int i = 0; i < out->type->num_fields(); ++i) {
          QUIVER_RETURN_NOT_OK(LoadChild(i, path, depth, out).status());
        }
        return Status::OK();
      case TypeId::kDictionary:
        return LoadDictionary(path, out);
      default:
        return Status::OK();
    }
  }

  // One buffer of the node's own: checked against what its length needs
  // (data: the last offset).
  Status LoadBuffer(const FieldNode& node, const BufferLayout& b, int64_t* last,
                    ArrayData* out) {
    if (b.kind == BufferKind::kAlwaysNull) {
      out->buffers.push_back(nullptr);
      out->null_count = 0;
      return Status::OK();
    }
    if (b.kind == BufferKind::kOffsets) {
      return b.byte_width == 4 ? LoadOffsets<int32_t>(node, b, out, last)
                               : LoadOffsets<int64_t>(node, b, out, last);
    }
    QUIVER_ASSIGN_OR_RAISE(auto buf, NextBuffer());
    int64_t needed = *last;
    if (b.kind == BufferKind::kValidity) {
      if (node.null_count == 0) {  // bitmap not needed
        out->buffers.push_back(nullptr);
        out->null_count = 0;
        return Status::OK();
      }
    }
    if (b.kind != BufferKind::kData && !b.MinimumBytes(0, node.length, &needed)) {
      return Status::Invalid("length ", node.length, " overflows the ", b.name,
                             " buffer size");
    }
    if (buf->size() < needed) return TooShort(b.name, *buf, needed);
    out->buffers.push_back(std::move(buf));
    return Status::OK();
  }

  // The next buffer entry, resolved, decompressed and aligned.
  Result<std::shared_ptr<Buffer>> NextBuffer() {
    if (buffer_index_ >= md_.buffers.size()) return Status::Invalid("ran out of buffers");
    const int64_t index = static_cast<int64_t>(buffer_index_++);
    const BufferSpec& spec = md_.buffers[index];
    auto resolved = resolver_(index, spec.offset, spec.length);
    if (!resolved.ok()) return resolved.status();
    std::shared_ptr<Buffer> buf = std::move(*resolved);
    if (buf == nullptr || buf->size() != spec.length) {
      return Status::Invalid("buffer ", index, " [offset ", spec.offset, ", length ",
                             spec.length, "] did not resolve to ", spec.length, " bytes");
    }
    if (md_.compression != Compression::kUncompressed) {
      int64_t allocated = 0;
      auto plain = internal::DecompressBuffer(
          md_.compression, buf, options_.max_decompressed_size - decompressed_, pool_,
          &allocated);
      decompressed_ += allocated;
      if (!plain.ok()) {
        return plain.status().WithContext("buffer " + std::to_string(index) +
                                          " [offset " + std::to_string(spec.offset) +
                                          ", length " + std::to_string(spec.length) +
                                          "]");
      }
      buf = std::move(*plain);
    }
    if (buf->size() > 0) {
      QUIVER_ASSIGN_OR_RAISE(buf, internal::EnsureAligned(buf, pool_));
    }
    last_index_ = index;
    return buf;
  }

  Status TooShort(const char* what, const Buffer& buf, int64_t needed) {
    return Status::Invalid(what, " buffer ", last_index_, " has ", buf.size(),
                           " bytes, needs ", needed);
  }

  template <typename O>
  O OffsetAt(const Buffer& buf, int64_t i) const {
    const uint8_t* p = buf.data() + i * static_cast<int64_t>(sizeof(O));
    if (big_endian_) return internal::LoadBigEndian<O>(p);
    O v;
    std::memcpy(&v, p, sizeof(O));
    return v;
  }

  // Loads the offsets and returns the last one. Unless the array is empty
  // and has none at all, length + 1 of them (not only MinimumBytes: the
  // first and last are read).
  template <typename O>
  Status LoadOffsets(const FieldNode& node, const BufferLayout& b, ArrayData* out,
                     int64_t* last) {
    QUIVER_ASSIGN_OR_RAISE(auto buf, NextBuffer());
    *last = 0;
    if (node.length == 0 && buf->size() == 0) {
      out->buffers.push_back(
          Buffer::SliceSafe(internal::ZeroOffsets(), 0, sizeof(O)).ValueOrDie());
      return Status::OK();
    }
    int64_t entries, needed;
    if (!b.Elements(0, node.length, &entries) || !b.BytesFor(entries, &needed)) {
      return Status::Invalid("length ", node.length, " overflows the offsets size");
    }
    if (buf->size() < needed) return TooShort("offsets", *buf, needed);
    const int64_t first = OffsetAt<O>(*buf, 0);
    *last = OffsetAt<O>(*buf, node.length);
    if (first < 0 || *last < first) {
      return Status::Invalid("offsets buffer ", last_index_, " runs from ", first, " to ",
                             *last);
    }
    out->buffers.push_back(std::move(buf));
    return Status::OK();
  }

  Status LoadFixedSizeList(const FieldNode& node, std::vector<int>* path, int depth,
                           ArrayData* out) {
    QUIVER_ASSIGN_OR_RAISE(auto child, LoadChild(0, path, depth, out));
    int64_t needed;
    if (!MulOk(node.length, out->type->list_size(), &needed)) {
      return Status::Invalid("length ", node.length, " x list size ",
                             out->type->list_size(), " overflows");
    }
    if (child->length < needed) {
      return Status::Invalid("child has ", child->length, " values, needs ", needed);
    }
    return Status::OK();
  }

  // Struct and union children; those of a struct and a sparse union as long
  // as the node.
  Status LoadFields(const FieldNode& node, std::vector<int>* path, int depth,
                    ArrayData* out) {
    const TypeId id = out->type->id();
    for (int i = 0; i < out->type->num_fields(); ++i) {
      QUIVER_ASSIGN_OR_RAISE(auto child, LoadChild(i, path, depth, out));
      if (id != TypeId::kDenseUnion && child->length < node.length) {
        return Status::Invalid(id == TypeId::kStruct ? "struct" : "sparse union",
                               " child ", i, " has ", child->length, " values, needs ",
                               node.length);
      }
    }
    return Status::OK();
  }

  Result<ArrayDataPtr> LoadChild(int i, std::vector<int>* path, int depth,
                                 ArrayData* out) {
    path->push_back(i);
    auto child = Load(out->type->field(i)->type(), path, depth + 1);
    path->pop_back();
    QUIVER_RETURN_NOT_OK(child.status());
    out->child_data.push_back(*child);
    return *child;
  }

  // The indices are loaded; the values come from the memo.
  Status LoadDictionary(std::vector<int>* path, ArrayData* out) {
    QUIVER_ASSIGN_OR_RAISE(int64_t id, memo_.fields().IdForPath(*path));
    QUIVER_ASSIGN_OR_RAISE(out->dictionary, memo_.GetDictionary(id));
    return Status::OK();
  }

  const BatchMetadata& md_;
  const BodyResolver& resolver_;
  const DictionaryMemo& memo_;
  const IpcReadOptions& options_;
  MemoryPool* pool_;
  bool big_endian_;
  size_t node_index_ = 0;
  size_t buffer_index_ = 0;
  size_t view_index_ = 0;
  int64_t last_index_ = 0;
  int64_t decompressed_ = 0;  // bytes allocated by decompression so far
};

Status ValidateColumns(const RecordBatch& batch, const IpcReadOptions& options) {
  QUIVER_RETURN_NOT_OK(batch.Validate());
  if (options.validate_full) QUIVER_RETURN_NOT_OK(batch.ValidateFull());
  return Status::OK();
}

// The little-endian copy of a big-endian array as loaded. Its dictionaries
// come from the memo: little-endian already when the reader converts, else
// big-endian and swapped too (for validation only).
Result<ArrayDataPtr> ToLittleEndian(const ArrayData& data,
                                    const IpcReadOptions& options) {
  return internal::SwapEndianness(data, Endianness::kBig,
                                  /*swap_dictionaries=*/!options.ensure_native_endian,
                                  options.pool, options.max_nesting_depth);
}

}  // namespace

BodyResolver PackedBodyResolver(std::shared_ptr<Buffer> body) {
  return [body = std::move(body)](int64_t index, int64_t offset,
                                  int64_t length) -> Result<std::shared_ptr<Buffer>> {
    const int64_t size = body ? body->size() : 0;
    if (offset < 0 || length < 0 || offset > size || length > size - offset) {
      return Status::Invalid("buffer ", index, " [offset ", offset, ", length ", length,
                             "] exceeds body of ", size, " bytes");
    }
    if (body == nullptr) return Buffer::Wrap(ZeroSizeArea(), 0);
    return Buffer::SliceSafe(body, offset, length);
  };
}

Result<RecordBatchPtr> DecodeRecordBatch(const Message& message, const SchemaPtr& schema,
                                         const DictionaryMemo& memo,
                                         const BodyResolver& resolver,
                                         const IpcReadOptions& options,
                                         Endianness wire_endianness) {
  if (message.type() != MessageType::kRecordBatch) {
    return Status::Invalid("expected a RecordBatch message, got ",
                           MessageTypeName(message.type()));
  }
  QUIVER_ASSIGN_OR_RAISE(BatchMetadata md, message.batch_metadata());
  ArrayLoader loader(md, resolver, memo, options, wire_endianness);
  std::vector<const DataType*> types;
  for (const FieldPtr& f : schema->fields()) types.push_back(f->type().get());
  QUIVER_RETURN_NOT_OK(loader.CheckCounts(types));
  std::vector<ArrayDataPtr> columns;
  columns.reserve(schema->fields().size());
  std::vector<int> path;
  for (int i = 0; i < schema->num_fields(); ++i) {
    path.assign(1, i);
    auto column = loader.Load(schema->field(i)->type(), &path, 0);
    if (!column.ok()) {
      return column.status().WithContext("column '" + schema->field(i)->name() + "'");
    }
    if ((*column)->length != md.length) {
      return Status::Invalid("column '", schema->field(i)->name(), "' has ",
                             (*column)->length, " rows, the batch states ", md.length);
    }
    columns.push_back(std::move(*column));
  }
  if (wire_endianness == Endianness::kLittle) {
    auto batch = RecordBatch::Make(schema, md.length, std::move(columns));
    QUIVER_RETURN_NOT_OK(ValidateColumns(*batch, options));
    return batch;
  }
  std::vector<ArrayDataPtr> swapped;
  swapped.reserve(columns.size());
  for (size_t i = 0; i < columns.size(); ++i) {
    auto column = ToLittleEndian(*columns[i], options);
    if (!column.ok()) {
      return column.status().WithContext(
          "column '" + schema->field(static_cast<int>(i))->name() + "'");
    }
    swapped.push_back(std::move(*column));
  }
  auto native = RecordBatch::Make(schema, md.length, std::move(swapped));
  QUIVER_RETURN_NOT_OK(ValidateColumns(*native, options));
  if (options.ensure_native_endian) return native;
  return RecordBatch::Make(schema, md.length, std::move(columns));
}

Result<DictionaryUpdate> DecodeDictionaryBatch(const Message& message,
                                               DictionaryMemo* memo,
                                               const BodyResolver& resolver,
                                               const IpcReadOptions& options,
                                               Endianness wire_endianness) {
  if (message.type() != MessageType::kDictionaryBatch) {
    return Status::Invalid("expected a DictionaryBatch message, got ",
                           MessageTypeName(message.type()));
  }
  const int64_t id = message.dictionary_id();
  const DictionaryField* field = memo->fields().FindById(id);
  if (field == nullptr) {
    return Status::Invalid("dictionary batch for id ", id,
                           ", which no field of the schema uses");
  }
  QUIVER_ASSIGN_OR_RAISE(BatchMetadata md, message.batch_metadata());
  const TypePtr& value_type = field->type->value_type();
  ArrayLoader loader(md, resolver, *memo, options, wire_endianness);
  QUIVER_RETURN_NOT_OK(loader.CheckCounts({value_type.get()}));
  std::vector<int> path = field->path;
  auto values = loader.Load(value_type, &path, 0);
  if (!values.ok()) {
    return values.status().WithContext("dictionary " + std::to_string(id));
  }
  if ((*values)->length != md.length) {
    return Status::Invalid("dictionary ", id, " has ", (*values)->length,
                           " values, the batch states ", md.length);
  }
  ArrayDataPtr checked = *values;
  if (wire_endianness == Endianness::kBig) {
    auto swapped = ToLittleEndian(**values, options);
    if (!swapped.ok()) {
      return swapped.status().WithContext("dictionary " + std::to_string(id));
    }
    checked = std::move(*swapped);
  }
  ArrayPtr array = MakeArray(checked);
  Status st = options.validate_full ? array->ValidateFull() : array->Validate();
  if (!st.ok()) return st.WithContext("dictionary " + std::to_string(id));
  if (wire_endianness == Endianness::kBig && !options.ensure_native_endian) {
    // The memo keeps the batches' byte order.
    return memo->Apply(id, message.is_delta(), std::move(*values), options.pool,
                       Endianness::kBig);
  }
  return memo->Apply(id, message.is_delta(), std::move(checked), options.pool);
}

}  // namespace quiver::ipc
