// Arrow data in the extension: the Table and Column handles Python holds,
// and the Arrow PyCapsule protocol (docs/source/format/CDataInterface/
// PyCapsuleInterface.rst of the Arrow docs) in both directions.
//
// Capsules: "arrow_schema", "arrow_array" and "arrow_array_stream", each
// owning a heap structure; the capsule's destructor calls the structure's
// release callback if a consumer has not moved it out (release still set),
// then frees the structure. Importing moves the structure out of the
// producer's capsule (quiver's importers mark it released), so the
// producer's release runs exactly once, when the imported data is gone.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "quiver/columnar/c_data.h"
#include "quiver/columnar/table.h"

namespace quiver::python {

// A table Python holds: zero-copy over cluster memory (a Get), a DuckDB
// result, or an import; what it points at lives as long as the table.
struct PyTable {
  ForkSafe<Table> table;
};

// One column (a chunked array) of a table, and its field.
struct PyColumn {
  ForkSafe<ChunkedArray> column;
  FieldPtr field;
};

// A new handle of `table`.
std::shared_ptr<PyTable> WrapTable(TablePtr table);

// Batches made from Python buffers (python/quiver/_convert.py): zero-copy
// views of numpy arrays and bytes, valid while this object lives (it holds
// the buffer exports). Read by Client.put and ObjectStore.put_table, which
// copy them into cluster memory; never outlives the call that reads it
// without the GIL.
struct PyBatches {
  SchemaPtr schema;
  std::vector<RecordBatchPtr> batches;
  int64_t rows = 0;
  // The buffer exports the batches point into (released with the GIL, when
  // this object goes).
  std::vector<std::unique_ptr<py::buffer_info>> views;
};

// What Client.put and ObjectStore.put_table take, as a reader: _Batches, a
// _Table, or any PyCapsule producer (TypeError otherwise). The reader is
// valid while `source` lives.
std::shared_ptr<RecordBatchReader> ReaderOfSource(py::handle source);
// The same as a table.
TablePtr TableOfSource(py::handle source);

// New capsules owning exports of Quiver data.
py::capsule SchemaCapsule(const Schema& schema);
py::capsule FieldCapsule(const Field& field);
py::capsule TypeCapsule(const DataType& type);
py::capsule TableStreamCapsule(const TablePtr& table);
py::capsule ColumnStreamCapsule(const ChunkedArrayPtr& column, const FieldPtr& field);

// The structure inside a producer's capsule of `name` (InvalidArgument if
// it is not one, or was consumed already).
ArrowSchema* SchemaOfCapsule(py::handle capsule);
ArrowArray* ArrayOfCapsule(py::handle capsule);
ArrowArrayStream* StreamOfCapsule(py::handle capsule);

// Any PyCapsule producer as a reader (__arrow_c_stream__, else
// __arrow_c_array__ of a struct array: one batch), or nullptr when `obj`
// offers neither. Called with the GIL; the reader may be read without it.
std::shared_ptr<RecordBatchReader> ReaderFromProducer(py::handle obj);

// The whole of a producer as a table (zero-copy: the producer's memory,
// released when the table is gone).
TablePtr TableFromProducer(py::handle obj);

// Checks a requested_schema capsule against `schema`: a request of another
// shape is refused (InvalidArgument); one of the same fields is served with
// our own types (the protocol allows it). None is fine.
void CheckRequestedSchema(py::handle requested, const Schema& schema);

}  // namespace quiver::python
