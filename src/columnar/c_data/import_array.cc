// Import of arrays and record batches from the C Data Interface, zero-copy.
//
// The caller's base ArrowArray is moved into one shared owner whose
// destructor calls the producer's release; every Buffer of the imported
// tree (children and dictionary included) wraps the producer's memory and
// holds that owner. The C interface carries no buffer sizes, so each size is
// computed from the type, offset + length and, for variable-size data, the
// last offset; a NULL buffer is accepted only where the specification allows
// it (the validity bitmap without nulls, or a buffer that would be empty).
#include <cstring>
#include <limits>
#include <string>

#include "columnar/c_data/c_data_internal.h"
#include "columnar/c_data/import_internal.h"
#include "columnar/validate_internal.h"
#include "quiver/columnar/c_data.h"
#include "quiver/columnar/layout.h"

namespace quiver {

namespace {

// The moved base structure. Destroyed with the last Buffer that points into
// the producer's memory (or at once if the import fails).
struct ImportedArrayOwner {
  ArrowArray array;
  ImportedArrayOwner(const ImportedArrayOwner&) = delete;
  ImportedArrayOwner& operator=(const ImportedArrayOwner&) = delete;
  explicit ImportedArrayOwner(ArrowArray* source) {
    std::memcpy(&array, source, sizeof(array));
    source->release = nullptr;
  }
  ~ImportedArrayOwner() {
    if (array.release != nullptr) array.release(&array);
  }
};

class ArrayImporter {
 public:
  explicit ArrayImporter(std::shared_ptr<const void> owner) : owner_(std::move(owner)) {}

  Result<ArrayDataPtr> Import(const ArrowArray* a, const TypePtr& type,
                              const std::string& what, int depth);

 private:
  Status CheckNode(const ArrowArray* a, const DataType& type, const std::string& what);
  Status ImportBuffers(const ArrowArray& a, ArrayData* d, const std::string& what);
  Status ImportValidity(const ArrowArray& a, const BufferLayout& b, ArrayData* d,
                        const std::string& what);
  // Buffer i of `a`, which must hold `size` bytes.
  Result<std::shared_ptr<Buffer>> Required(const ArrowArray& a, int i, int64_t size,
                                           const char* name, const std::string& what);
  template <typename O>
  Status ImportOffsets(const ArrowArray& a, int i, const BufferLayout& b, ArrayData* d,
                       int slot, int64_t* last, const std::string& what);
  Status ImportVariadic(const ArrowArray& a, ArrayData* d, const std::string& what);
  Status ImportChildren(const ArrowArray& a, ArrayData* d, const std::string& what,
                        int depth);

  std::shared_ptr<const void> owner_;
};

int64_t ExpectedChildren(const DataType& type) {
  return IsNested(type.id()) ? type.num_fields() : 0;
}

Status ArrayImporter::CheckNode(const ArrowArray* a, const DataType& type,
                                const std::string& what) {
  if (a == nullptr) return Status::Invalid(what, " is a NULL pointer");
  if (a->release == nullptr) return Status::Invalid(what, " is released");
  if (a->length < 0) return Status::Invalid(what, " has a negative length ", a->length);
  if (a->offset < 0) return Status::Invalid(what, " has a negative offset ", a->offset);
  if (a->length > std::numeric_limits<int64_t>::max() - a->offset - 1) {
    return Status::Invalid(what, ": offset ", a->offset, " + length ", a->length,
                           " overflows");
  }
  if (a->null_count < -1 || a->null_count > a->length) {
    return Status::Invalid(what, " has null_count ", a->null_count,
                           " outside [-1, length ", a->length, "]");
  }
  const DataTypeLayout layout = LayoutOf(type);
  const int64_t buffers = layout.num_wire_buffers();
  if (layout.variadic) {
    // validity, views, any number of data buffers, their sizes
    if (a->n_buffers < buffers + 1) {
      return Status::Invalid(what, " of type ", type.ToString(), " has ", a->n_buffers,
                             " buffers, expected at least ", buffers + 1);
    }
  } else if (a->n_buffers != buffers) {
    return Status::Invalid(what, " of type ", type.ToString(), " has ", a->n_buffers,
                           " buffers, expected ", buffers);
  }
  if (buffers > 0 && a->buffers == nullptr) {
    return Status::Invalid(what, " has no buffers array");
  }
  const int64_t children = ExpectedChildren(type);
  if (a->n_children != children) {
    return Status::Invalid(what, " of type ", type.ToString(), " has ", a->n_children,
                           " children, expected ", children);
  }
  if (children > 0 && a->children == nullptr) {
    return Status::Invalid(what, " has no children array");
  }
  const bool is_dictionary = type.id() == TypeId::kDictionary;
  if (is_dictionary && a->dictionary == nullptr) {
    return Status::Invalid(what, " is dictionary-encoded but has no dictionary");
  }
  if (!is_dictionary && a->dictionary != nullptr) {
    return Status::Invalid(what, " of type ", type.ToString(),
                           " has a dictionary but is not dictionary-encoded");
  }
  return Status::OK();
}

Result<std::shared_ptr<Buffer>> ArrayImporter::Required(const ArrowArray& a, int i,
                                                        int64_t size, const char* name,
                                                        const std::string& what) {
  const void* ptr = a.buffers[i];
  if (ptr != nullptr) {
    return Buffer::Wrap(static_cast<const uint8_t*>(ptr), size, owner_);
  }
  if (size == 0) return Buffer::Wrap(ZeroSizeArea(), 0);
  return Status::Invalid(what, ": the ", name, " buffer (", i, ") is NULL but ", size,
                         " bytes are needed for offset ", a.offset, " + length ",
                         a.length);
}

Status ArrayImporter::ImportValidity(const ArrowArray& a, const BufferLayout& b,
                                     ArrayData* d, const std::string& what) {
  if (a.buffers[0] == nullptr) {
    if (a.null_count > 0) {
      return Status::Invalid(what, " has null_count ", a.null_count,
                             " but no validity bitmap");
    }
    d->null_count = 0;
    return Status::OK();
  }
  d->null_count = a.null_count;  // -1 stays unknown: computed on demand
  int64_t size = 0;
  b.MinimumBytes(a.offset, a.length, &size);  // CheckNode: offset + length fits
  d->buffers[0] = Buffer::Wrap(static_cast<const uint8_t*>(a.buffers[0]), size, owner_);
  return Status::OK();
}

// Offsets in C buffer i: offset + length + 1 entries; *last is the last one,
// which bounds the data buffer or the child array. An empty array may omit
// the buffer entirely.
template <typename O>
Status ArrayImporter::ImportOffsets(const ArrowArray& a, int i, const BufferLayout& b,
                                    ArrayData* d, int slot, int64_t* last,
                                    const std::string& what) {
  *last = 0;
  if (a.length == 0 && a.buffers[i] == nullptr) {
    d->buffers[slot] = Buffer::Wrap(ZeroSizeArea(), 0);
    return Status::OK();
  }
  int64_t entries, size;
  if (!b.Elements(a.offset, a.length, &entries) || !b.BytesFor(entries, &size)) {
    return Status::Invalid(what, ": the offsets buffer size overflows");
  }
  QUIVER_ASSIGN_OR_RAISE(d->buffers[slot], Required(a, i, size, b.name, what));
  O value;
  std::memcpy(&value, d->buffers[slot]->data() + (entries - 1) * sizeof(O), sizeof(O));
  if (value < 0) {
    return Status::Invalid(what, ": the last offset ", value, " is negative");
  }
  *last = static_cast<int64_t>(value);
  return Status::OK();
}

// The C buffers in LayoutOf order without the always-null slots (a union's
// and a run-end encoded array's slot 0), each as long as offset + length
// needs (data: the last offset); then a view's variadic data buffers.
Status ArrayImporter::ImportBuffers(const ArrowArray& a, ArrayData* d,
                                    const std::string& what) {
  const DataType& type = *d->type;
  if (type.id() == TypeId::kNull) {
    d->null_count = a.length;
    return Status::OK();
  }
  if (IsUnion(type.id()) && a.null_count > 0) {
    return Status::Invalid(what, " of type ", type.ToString(), " has null_count ",
                           a.null_count, ": a union has no nulls of its own");
  }
  if (type.id() == TypeId::kRunEndEncoded && a.null_count > 0) {
    return Status::Invalid(what, " of type ", type.ToString(), " has null_count ",
                           a.null_count,
                           ": a run-end encoded array has no nulls of its own (its "
                           "values have them)");
  }
  const DataTypeLayout layout = LayoutOf(type);
  d->buffers.assign(layout.buffers.size(), nullptr);
  int i = 0;         // the C buffer
  int64_t last = 0;  // the last offset
  for (size_t slot = 0; slot < layout.buffers.size(); ++slot) {
    const BufferLayout& b = layout.buffers[slot];
    const int s = static_cast<int>(slot);
    switch (b.kind) {
      case BufferKind::kAlwaysNull:
        d->null_count = 0;
        continue;
      case BufferKind::kValidity:
        QUIVER_RETURN_NOT_OK(ImportValidity(a, b, d, what));
        break;
      case BufferKind::kOffsets:
        QUIVER_RETURN_NOT_OK(b.byte_width == 4
                                 ? ImportOffsets<int32_t>(a, i, b, d, s, &last, what)
                                 : ImportOffsets<int64_t>(a, i, b, d, s, &last, what));
        break;
      case BufferKind::kData: {
        QUIVER_ASSIGN_OR_RAISE(d->buffers[slot], Required(a, i, last, b.name, what));
        break;
      }
      default: {
        int64_t size;
        if (!b.MinimumBytes(a.offset, a.length, &size)) {
          return Status::Invalid(what, ": offset + length ", a.offset + a.length,
                                 " overflows the ", b.name, " buffer size");
        }
        QUIVER_ASSIGN_OR_RAISE(d->buffers[slot], Required(a, i, size, b.name, what));
        break;
      }
    }
    ++i;
  }
  return layout.variadic ? ImportVariadic(a, d, what) : Status::OK();
}

// Views: after the views, n_buffers - 3 data buffers whose sizes the last
// buffer holds (int64 each).
Status ArrayImporter::ImportVariadic(const ArrowArray& a, ArrayData* d,
                                     const std::string& what) {
  const int64_t data_buffers = a.n_buffers - 3;
  const void* sizes_ptr = a.buffers[a.n_buffers - 1];
  if (data_buffers > 0 && sizes_ptr == nullptr) {
    return Status::Invalid(what, ": the buffer of variadic buffer sizes is NULL");
  }
  d->buffers.resize(static_cast<size_t>(2 + data_buffers));
  for (int64_t k = 0; k < data_buffers; ++k) {
    int64_t size;
    std::memcpy(&size, static_cast<const uint8_t*>(sizes_ptr) + k * 8, 8);
    if (size < 0) {
      return Status::Invalid(what, ": data buffer ", k, " has negative size ", size);
    }
    QUIVER_ASSIGN_OR_RAISE(d->buffers[static_cast<size_t>(2 + k)],
                           Required(a, static_cast<int>(2 + k), size, "view data", what));
  }
  return Status::OK();
}

Status ArrayImporter::ImportChildren(const ArrowArray& a, ArrayData* d,
                                     const std::string& what, int depth) {
  const DataType& type = *d->type;
  for (int64_t i = 0; i < a.n_children; ++i) {
    const int ci = static_cast<int>(i);
    const std::string child_what = what + " > " + internal::ChildLabel(type, ci);
    QUIVER_ASSIGN_OR_RAISE(
        ArrayDataPtr child,
        Import(a.children[i], type.field(ci)->type(), child_what, depth + 1));
    d->child_data.push_back(std::move(child));
  }
  if (type.id() == TypeId::kDictionary) {
    QUIVER_ASSIGN_OR_RAISE(d->dictionary, Import(a.dictionary, type.value_type(),
                                                 what + " > dictionary", depth + 1));
  }
  return Status::OK();
}

Result<ArrayDataPtr> ArrayImporter::Import(const ArrowArray* a, const TypePtr& type,
                                           const std::string& what, int depth) {
  if (depth > internal::kMaxCDataNesting) {
    return Status::Invalid(what, ": arrays nested deeper than ",
                           internal::kMaxCDataNesting, " levels");
  }
  QUIVER_RETURN_NOT_OK(CheckNode(a, *type, what));
  auto d = std::make_shared<ArrayData>();
  d->type = type;
  d->length = a->length;
  d->offset = a->offset;
  QUIVER_RETURN_NOT_OK(ImportBuffers(*a, d.get(), what));
  QUIVER_RETURN_NOT_OK(ImportChildren(*a, d.get(), what, depth));
  return d;
}

// Imports the moved array `owner` as `type` and validates the result.
Result<ArrayDataPtr> ImportOwned(std::shared_ptr<ImportedArrayOwner> owner,
                                 const TypePtr& type) {
  const ArrowArray* base = &owner->array;
  ArrayImporter importer(std::move(owner));
  QUIVER_ASSIGN_OR_RAISE(ArrayDataPtr data, importer.Import(base, type, "array", 0));
  Status st = internal::ValidateArrayData(*data);
  if (!st.ok()) return st.WithContext("imported array");
  return data;
}

Result<ArrayDataPtr> ImportData(ArrowArray* array, const TypePtr& type) {
  if (array == nullptr || array->release == nullptr) {
    return Status::Invalid("the ArrowArray is NULL or already released");
  }
  auto owner = std::make_shared<ImportedArrayOwner>(array);
  if (type == nullptr) return Status::Invalid("cannot import an array without a type");
  return ImportOwned(std::move(owner), type);
}

// The columns of a struct array without top-level nulls, sliced to its
// offset and length.
Result<RecordBatchPtr> BatchFromStruct(const ArrayDataPtr& data, SchemaPtr schema) {
  if (data->GetNullCount() != 0) {
    return Status::Invalid("cannot import a record batch from a struct array with ",
                           data->GetNullCount(), " top-level nulls");
  }
  std::vector<ArrayDataPtr> columns;
  for (const ArrayDataPtr& child : data->child_data) {
    const bool whole = data->offset == 0 && child->length == data->length;
    columns.push_back(whole ? child : child->Slice(data->offset, data->length));
  }
  return RecordBatch::Make(std::move(schema), data->length, std::move(columns));
}

}  // namespace

Result<ArrayPtr> ImportArray(ArrowArray* array, const TypePtr& type) {
  QUIVER_ASSIGN_OR_RAISE(ArrayDataPtr data, ImportData(array, type));
  return MakeArray(std::move(data));
}

Result<ArrayPtr> ImportArray(ArrowArray* array, ArrowSchema* schema) {
  // Both structures are taken over before anything can fail.
  internal::SchemaGuard guard(schema);
  std::shared_ptr<ImportedArrayOwner> owner;
  if (array != nullptr && array->release != nullptr) {
    owner = std::make_shared<ImportedArrayOwner>(array);
  }
  QUIVER_RETURN_NOT_OK(guard.CheckLive("ArrowSchema"));
  QUIVER_ASSIGN_OR_RAISE(TypePtr type, internal::ImportTypeFrom(guard.get()));
  if (owner == nullptr) {
    return Status::Invalid("the ArrowArray is NULL or already released");
  }
  QUIVER_ASSIGN_OR_RAISE(ArrayDataPtr data, ImportOwned(std::move(owner), type));
  return MakeArray(std::move(data));
}

Result<RecordBatchPtr> ImportRecordBatch(ArrowArray* array, const SchemaPtr& schema) {
  if (schema == nullptr) {
    if (array != nullptr && array->release != nullptr) array->release(array);
    return Status::Invalid("cannot import a record batch without a schema");
  }
  QUIVER_ASSIGN_OR_RAISE(ArrayDataPtr data, ImportData(array, struct_(schema->fields())));
  return BatchFromStruct(data, schema);
}

Result<RecordBatchPtr> ImportRecordBatch(ArrowArray* array, ArrowSchema* schema) {
  internal::SchemaGuard guard(schema);
  std::shared_ptr<ImportedArrayOwner> owner;
  if (array != nullptr && array->release != nullptr) {
    owner = std::make_shared<ImportedArrayOwner>(array);
  }
  QUIVER_RETURN_NOT_OK(guard.CheckLive("ArrowSchema"));
  QUIVER_ASSIGN_OR_RAISE(SchemaPtr imported, internal::ImportSchemaFrom(guard.get()));
  if (owner == nullptr) {
    return Status::Invalid("the ArrowArray is NULL or already released");
  }
  QUIVER_ASSIGN_OR_RAISE(ArrayDataPtr data,
                         ImportOwned(std::move(owner), struct_(imported->fields())));
  return BatchFromStruct(data, std::move(imported));
}

}  // namespace quiver
