// Export of types, fields, schemas, arrays and record batches to the C Data
// Interface.
//
// Every exported structure, children and dictionary included, has its own
// private data, so that a consumer may move a child out and release it on
// its own: a release frees only what its own structure owns (plus the
// children and dictionary still attached). Exported arrays point at the
// Buffers of the ArrayData their private data holds a reference to.
#include <memory>
#include <string>
#include <vector>

#include "columnar/c_data/c_data_internal.h"
#include "quiver/columnar/c_data.h"
#include "quiver/columnar/layout.h"

namespace quiver {

namespace {

// Stands in for a buffer an ArrayData leaves out although the layout has a
// slot for it (a zero-length array's offsets, a values buffer of 0 bytes):
// consumers may read offsets[0] of an empty array, and some dereference any
// data pointer they are given.
alignas(64) const uint8_t kZeros[64] = {};

// ---- Schemas ----

struct ExportedSchema {
  std::string format;
  std::string name;
  std::string metadata;  // encoded; empty = no metadata (NULL)
  std::vector<ArrowSchema> children;
  std::vector<ArrowSchema*> child_pointers;
  std::unique_ptr<ArrowSchema> dictionary;
};

// Releases what is still attached to `schema`, then marks it released.
void ReleaseExportedSchema(ArrowSchema* schema) {
  if (schema == nullptr || schema->release == nullptr) return;
  for (int64_t i = 0; i < schema->n_children; ++i) {
    ArrowSchema* child = schema->children[i];
    if (child->release != nullptr) child->release(child);
  }
  if (schema->dictionary != nullptr && schema->dictionary->release != nullptr) {
    schema->dictionary->release(schema->dictionary);
  }
  delete static_cast<ExportedSchema*>(schema->private_data);
  schema->private_data = nullptr;
  schema->release = nullptr;
}

// Frees a half-built private structure together with the children and the
// dictionary already filled in (an export that failed half-way).
void DiscardSchema(ExportedSchema* p) {
  for (ArrowSchema& child : p->children) ReleaseExportedSchema(&child);
  if (p->dictionary) ReleaseExportedSchema(p->dictionary.get());
  delete p;
}

Status FillSchema(const std::string& name, const DataType& type, int64_t flags,
                  const KeyValueMetadata* metadata, ArrowSchema* out, int depth);

Status FillChildren(const FieldVector& fields, ExportedSchema* p, int depth) {
  p->children.resize(fields.size());
  for (ArrowSchema& child : p->children) child.release = nullptr;
  p->child_pointers.resize(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    const Field& f = *fields[i];
    if (f.type() == nullptr) return Status::Invalid("field '", f.name(), "' has no type");
    QUIVER_RETURN_NOT_OK(FillSchema(f.name(), *f.type(),
                                    f.nullable() ? ARROW_FLAG_NULLABLE : 0,
                                    f.metadata().get(), &p->children[i], depth + 1));
    p->child_pointers[i] = &p->children[i];
  }
  return Status::OK();
}

Status FillSchemaData(const DataType& type, const KeyValueMetadata* metadata,
                      int64_t* flags, ExportedSchema* p, int depth) {
  if (depth > internal::kMaxCDataNesting) {
    return Status::Invalid("cannot export types nested deeper than ",
                           internal::kMaxCDataNesting, " levels");
  }
  QUIVER_ASSIGN_OR_RAISE(p->format, internal::FormatOf(type));
  if (metadata != nullptr && metadata->size() > 0) {
    QUIVER_ASSIGN_OR_RAISE(p->metadata, internal::EncodeMetadata(*metadata));
  }
  if (type.id() == TypeId::kDictionary) {
    if (type.value_type() == nullptr) {
      return Status::Invalid("dictionary type without a value type");
    }
    if (type.ordered()) *flags |= ARROW_FLAG_DICTIONARY_ORDERED;
    p->dictionary = std::make_unique<ArrowSchema>();
    p->dictionary->release = nullptr;
    return FillSchema("", *type.value_type(), ARROW_FLAG_NULLABLE, nullptr,
                      p->dictionary.get(), depth + 1);
  }
  if (type.id() == TypeId::kMap && type.keys_sorted()) {
    *flags |= ARROW_FLAG_MAP_KEYS_SORTED;
  }
  return FillChildren(type.fields(), p, depth);
}

Status FillSchema(const std::string& name, const DataType& type, int64_t flags,
                  const KeyValueMetadata* metadata, ArrowSchema* out, int depth) {
  auto* p = new ExportedSchema;
  p->name = name;
  Status st = FillSchemaData(type, metadata, &flags, p, depth);
  if (!st.ok()) {
    DiscardSchema(p);
    return st;
  }
  out->format = p->format.c_str();
  out->name = p->name.c_str();
  out->metadata = p->metadata.empty() ? nullptr : p->metadata.data();
  out->flags = flags;
  out->n_children = static_cast<int64_t>(p->children.size());
  out->children = p->child_pointers.empty() ? nullptr : p->child_pointers.data();
  out->dictionary = p->dictionary.get();
  out->private_data = p;
  out->release = &ReleaseExportedSchema;
  return Status::OK();
}

// ---- Arrays ----

struct ExportedArray {
  ArrayDataPtr data;  // keeps the buffers alive
  std::vector<const void*> buffers;
  std::vector<ArrowArray> children;
  std::vector<ArrowArray*> child_pointers;
  std::unique_ptr<ArrowArray> dictionary;
  std::vector<int64_t> variadic_sizes;  // views: the sizes of the data buffers
};

void ReleaseExportedArray(ArrowArray* array) {
  if (array == nullptr || array->release == nullptr) return;
  for (int64_t i = 0; i < array->n_children; ++i) {
    ArrowArray* child = array->children[i];
    if (child->release != nullptr) child->release(child);
  }
  if (array->dictionary != nullptr && array->dictionary->release != nullptr) {
    array->dictionary->release(array->dictionary);
  }
  delete static_cast<ExportedArray*>(array->private_data);
  array->private_data = nullptr;
  array->release = nullptr;
}

void DiscardArray(ExportedArray* p) {
  for (ArrowArray& child : p->children) ReleaseExportedArray(&child);
  if (p->dictionary) ReleaseExportedArray(p->dictionary.get());
  delete p;
}

Status FillArray(const ArrayDataPtr& data, ArrowArray* out, int depth);

// The buffer pointers of `d` in the C layout: LayoutOf its type without the
// always-null slots (the null type and run-end encoded arrays have no
// buffers, unions no validity buffer). Only a validity bitmap may be NULL
// (no nulls); other missing buffers point at zeros. Views add their data
// buffers and, last, the buffer of the data buffers' sizes.
void CollectBuffers(const ArrayData& d, std::vector<const void*>* out,
                    std::vector<int64_t>* variadic_sizes) {
  const DataTypeLayout layout = LayoutOf(*d.type);
  for (size_t i = 0; i < layout.buffers.size(); ++i) {
    const BufferKind kind = layout.buffers[i].kind;
    if (kind == BufferKind::kAlwaysNull) continue;
    const Buffer* b = i < d.buffers.size() ? d.buffers[i].get() : nullptr;
    const void* ptr = b != nullptr ? b->data() : nullptr;
    if (kind == BufferKind::kValidity) {
      out->push_back(d.GetNullCount() == 0 ? nullptr : ptr);
    } else {
      out->push_back(ptr != nullptr ? ptr : kZeros);
    }
  }
  if (!layout.variadic) return;
  for (size_t i = layout.buffers.size(); i < d.buffers.size(); ++i) {
    const Buffer* b = d.buffers[i].get();
    out->push_back(b != nullptr && b->data() != nullptr ? b->data() : kZeros);
    variadic_sizes->push_back(b != nullptr ? b->size() : 0);
  }
  out->push_back(variadic_sizes->empty() ? static_cast<const void*>(kZeros)
                                         : variadic_sizes->data());
}

Status FillArrayData(const ArrayDataPtr& data, ExportedArray* p, int depth) {
  if (depth > internal::kMaxCDataNesting) {
    return Status::Invalid("cannot export arrays nested deeper than ",
                           internal::kMaxCDataNesting, " levels");
  }
  if (data->type == nullptr) {
    return Status::Invalid("cannot export an array without type");
  }
  CollectBuffers(*data, &p->buffers, &p->variadic_sizes);
  p->children.resize(data->child_data.size());
  for (ArrowArray& child : p->children) child.release = nullptr;
  p->child_pointers.resize(data->child_data.size());
  for (size_t i = 0; i < data->child_data.size(); ++i) {
    if (data->child_data[i] == nullptr) return Status::Invalid("missing child array ", i);
    QUIVER_RETURN_NOT_OK(FillArray(data->child_data[i], &p->children[i], depth + 1));
    p->child_pointers[i] = &p->children[i];
  }
  if (data->type->id() == TypeId::kDictionary) {
    if (data->dictionary == nullptr) {
      return Status::Invalid("cannot export a dictionary array without its dictionary");
    }
    p->dictionary = std::make_unique<ArrowArray>();
    p->dictionary->release = nullptr;
    QUIVER_RETURN_NOT_OK(FillArray(data->dictionary, p->dictionary.get(), depth + 1));
  }
  return Status::OK();
}

Status FillArray(const ArrayDataPtr& data, ArrowArray* out, int depth) {
  auto* p = new ExportedArray;
  p->data = data;
  Status st = FillArrayData(data, p, depth);
  if (!st.ok()) {
    DiscardArray(p);
    return st;
  }
  out->length = data->length;
  out->null_count = data->GetNullCount();
  out->offset = data->offset;
  out->n_buffers = static_cast<int64_t>(p->buffers.size());
  out->n_children = static_cast<int64_t>(p->children.size());
  out->buffers = p->buffers.empty() ? nullptr : p->buffers.data();
  out->children = p->child_pointers.empty() ? nullptr : p->child_pointers.data();
  out->dictionary = p->dictionary.get();
  out->private_data = p;
  out->release = &ReleaseExportedArray;
  return Status::OK();
}

}  // namespace

Status ExportType(const DataType& type, ArrowSchema* out) {
  return FillSchema("", type, ARROW_FLAG_NULLABLE, nullptr, out, 0);
}

Status ExportField(const Field& field, ArrowSchema* out) {
  if (field.type() == nullptr) {
    return Status::Invalid("field '", field.name(), "' has no type");
  }
  return FillSchema(field.name(), *field.type(),
                    field.nullable() ? ARROW_FLAG_NULLABLE : 0, field.metadata().get(),
                    out, 0);
}

Status ExportSchema(const Schema& schema, ArrowSchema* out) {
  // The interface has no byte order: its consumers read native order.
  if (!schema.is_native_endian()) {
    return Status::NotImplemented(
        "the C Data interface carries native (little-endian) data only; this "
        "schema is big-endian (read with ensure_native_endian = false)");
  }
  // A struct type carries the fields; the schema's own metadata goes on the
  // root, which has no name and no flags.
  return FillSchema("", *struct_(schema.fields()), 0, schema.metadata().get(), out, 0);
}

Status ExportArray(const Array& array, ArrowArray* out, ArrowSchema* out_schema) {
  if (array.data() == nullptr) {
    return Status::Invalid("cannot export an array without data");
  }
  if (out_schema != nullptr) QUIVER_RETURN_NOT_OK(ExportType(*array.type(), out_schema));
  Status st = FillArray(array.data(), out, 0);
  if (!st.ok() && out_schema != nullptr) out_schema->release(out_schema);
  return st;
}

Status ExportRecordBatch(const RecordBatch& batch, ArrowArray* out,
                         ArrowSchema* out_schema) {
  if (out_schema != nullptr)
    QUIVER_RETURN_NOT_OK(ExportSchema(*batch.schema(), out_schema));
  Status st = FillArray(batch.ToStructArray()->data(), out, 0);
  if (!st.ok() && out_schema != nullptr) out_schema->release(out_schema);
  return st;
}

}  // namespace quiver
