// The Arrow C Data Interface and C Stream Interface for Quiver.
//
// Export hands Quiver types, arrays, record batches and readers to any Arrow
// consumer in the same process (DuckDB, Arrow C++, nanoarrow, polars...)
// through the ABI structures of c_abi.h; import takes them from any
// producer. Both directions are zero-copy: exported structures point at
// Quiver's Buffers, imported Buffers point at the producer's memory.
//
// Ownership, export: on success the consumer owns `*out` and must call
// out->release(out) once it is done; until then the exported structure keeps
// every Buffer it points at alive (the exporting Array/RecordBatch may be
// destroyed at once). Children (and dictionaries) may be moved out and
// released on their own, as the specification allows. On failure `*out` is
// left untouched.
//
// Ownership, import: the importer takes the structure over whether it
// succeeds or not. On return the caller's structure is marked released
// (release == NULL) and must not be used or released again; on failure the
// producer's release has already been called. An imported array's Buffers
// share one owner that calls the producer's release exactly once, when the
// last Buffer (of any array sliced or derived from the import) is gone.
//
// Imports validate everything the C structures allow to check: format
// strings, buffer and child counts, null pointers, lengths and offsets, and
// Array::Validate() on the result (O(1) per buffer). They cannot check that
// the producer's pointers are valid, nor the content of buffers: call
// ValidateFull() on data from a producer you do not trust.
//
// Thread-safety: the functions are thread-safe for distinct structures. An
// exported stream, like the RecordBatchReader behind it, serves one consumer
// at a time (calls must be serialized, as the specification requires).
#pragma once

#include <memory>

#include "quiver/columnar/c_abi.h"
#include "quiver/columnar/record_batch.h"
#include "quiver/columnar/table.h"

namespace quiver {

// ---- Export ----

// The type alone: unnamed, nullable, no metadata.
Status ExportType(const DataType& type, ArrowSchema* out);
// The field's name, type, nullability (ARROW_FLAG_NULLABLE) and metadata.
Status ExportField(const Field& field, ArrowSchema* out);
// A struct ("+s") whose children are the fields; schema metadata on the root.
Status ExportSchema(const Schema& schema, ArrowSchema* out);

// Exports the array's data, zero-copy; a slice is exported through the
// `offset` member. With `out_schema`, also its type (as ExportType). The
// array must be valid (Validate()).
Status ExportArray(const Array& array, ArrowArray* out,
                   ArrowSchema* out_schema = nullptr);
// Exports the batch as a struct array without a validity bitmap whose
// children are the columns; with `out_schema`, also the schema (as
// ExportSchema).
Status ExportRecordBatch(const RecordBatch& batch, ArrowArray* out,
                         ArrowSchema* out_schema = nullptr);

// ---- Import ----

// The type described by `schema` (its name, flags other than the dictionary
// ordered / map keys sorted flags, and metadata are ignored).
Result<TypePtr> ImportType(ArrowSchema* schema);
// The field: name (NULL = ""), type, ARROW_FLAG_NULLABLE, metadata.
Result<FieldPtr> ImportField(ArrowSchema* schema);
// A schema from a struct ("+s") type whose children are the fields.
Result<SchemaPtr> ImportSchema(ArrowSchema* schema);

// An array of the type `schema` describes (`schema` is consumed too).
Result<ArrayPtr> ImportArray(ArrowArray* array, ArrowSchema* schema);
// An array of a type known by convention.
Result<ArrayPtr> ImportArray(ArrowArray* array, const TypePtr& type);
// A record batch from a struct array without top-level nulls.
Result<RecordBatchPtr> ImportRecordBatch(ArrowArray* array, ArrowSchema* schema);
Result<RecordBatchPtr> ImportRecordBatch(ArrowArray* array, const SchemaPtr& schema);

// ---- Streams ----

// Exports `reader` as a C stream: get_schema exports reader->schema(),
// get_next exports the next batch (a released array at the end), an error
// of the reader becomes an errno value (EINVAL, ENOMEM, EIO, ...) with the
// Status text in get_last_error. The stream keeps `reader` alive until
// released. A batch whose schema differs from the reader's is an error.
Status ExportRecordBatchReader(std::shared_ptr<RecordBatchReader> reader,
                               ArrowArrayStream* out);
// A reader over a C stream (consumed as for the imports above). The schema
// is fetched at once; each Next() imports one array as a record batch. A
// stream error becomes a Status whose code follows the errno value and
// whose message carries get_last_error's text. The reader releases the
// stream when destroyed.
Result<std::shared_ptr<RecordBatchReader>> ImportRecordBatchReader(
    ArrowArrayStream* stream);

// The table as a stream of record batches (split where its chunks split).
Status ExportTable(const TablePtr& table, ArrowArrayStream* out);
// Every batch of the stream gathered into a table (zero-copy).
Result<TablePtr> ImportTable(ArrowArrayStream* stream);

}  // namespace quiver
