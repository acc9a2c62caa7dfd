#include "arrow_py.h"

#include <cerrno>
#include <cstring>

namespace quiver::python {

namespace {

constexpr const char* kSchemaName = "arrow_schema";
constexpr const char* kArrayName = "arrow_array";
constexpr const char* kStreamName = "arrow_array_stream";

// A structure of ours inside a capsule: the structure first (its address is
// the capsule's pointer), then the fork generation it was made in.
template <typename S>
struct Owned {
  S s{};
  uint64_t generation = ForkGeneration();
};

template <typename S>
void DestroyCapsule(PyObject* capsule, const char* name) {
  auto* owned = static_cast<Owned<S>*>(PyCapsule_GetPointer(capsule, name));
  if (owned == nullptr) {
    PyErr_Clear();
    return;
  }
  // In a forked child the export's private data is the parent's: leak it.
  if (owned->s.release != nullptr && !Forked(owned->generation)) {
    owned->s.release(&owned->s);
  }
  delete owned;
}

void DestroySchemaCapsule(PyObject* c) { DestroyCapsule<ArrowSchema>(c, kSchemaName); }
void DestroyStreamCapsule(PyObject* c) {
  DestroyCapsule<ArrowArrayStream>(c, kStreamName);
}

template <typename S>
py::capsule Wrap(std::unique_ptr<Owned<S>> owned, const char* name,
                 void (*destroy)(PyObject*)) {
  PyObject* c = PyCapsule_New(&owned->s, name, destroy);
  if (c == nullptr) throw py::error_already_set();
  owned.release();
  return py::reinterpret_steal<py::capsule>(c);
}

template <typename S>
S* OfCapsule(py::handle capsule, const char* name) {
  if (!PyCapsule_CheckExact(capsule.ptr()) || !PyCapsule_IsValid(capsule.ptr(), name)) {
    ThrowClass("InvalidArgument",
               std::string("expected a PyCapsule named \"") + name + "\", got " +
                   std::string(py::str(py::type::of(capsule).attr("__name__"))));
  }
  auto* s = static_cast<S*>(PyCapsule_GetPointer(capsule.ptr(), name));
  if (s == nullptr) throw py::error_already_set();
  if (s->release == nullptr) {
    ThrowClass("InvalidArgument",
               std::string("the \"") + name +
                   "\" capsule was consumed already (a capsule can be imported once)");
  }
  return s;
}

// ---- A column (chunked array) as a C stream ----

struct ColumnStream {
  ChunkedArrayPtr column;
  FieldPtr field;
  int next = 0;
  std::string error;
};

int ColumnGetSchema(ArrowArrayStream* s, ArrowSchema* out) {
  auto* p = static_cast<ColumnStream*>(s->private_data);
  Status st = ExportField(*p->field, out);
  if (st.ok()) return 0;
  p->error = st.message();
  return EINVAL;
}

int ColumnGetNext(ArrowArrayStream* s, ArrowArray* out) {
  auto* p = static_cast<ColumnStream*>(s->private_data);
  if (p->next >= p->column->num_chunks()) {
    std::memset(out, 0, sizeof(*out));  // released: the end
    return 0;
  }
  Status st = ExportArray(*p->column->chunk(p->next), out);
  if (!st.ok()) {
    p->error = st.message();
    return EINVAL;
  }
  ++p->next;
  return 0;
}

const char* ColumnLastError(ArrowArrayStream* s) {
  auto* p = static_cast<ColumnStream*>(s->private_data);
  return p->error.empty() ? nullptr : p->error.c_str();
}

void ColumnRelease(ArrowArrayStream* s) {
  delete static_cast<ColumnStream*>(s->private_data);
  s->release = nullptr;
}

}  // namespace

py::capsule SchemaCapsule(const Schema& schema) {
  auto owned = std::make_unique<Owned<ArrowSchema>>();
  Check(ExportSchema(schema, &owned->s));
  return Wrap(std::move(owned), kSchemaName, &DestroySchemaCapsule);
}

py::capsule FieldCapsule(const Field& field) {
  auto owned = std::make_unique<Owned<ArrowSchema>>();
  Check(ExportField(field, &owned->s));
  return Wrap(std::move(owned), kSchemaName, &DestroySchemaCapsule);
}

py::capsule TypeCapsule(const DataType& type) {
  auto owned = std::make_unique<Owned<ArrowSchema>>();
  Check(ExportType(type, &owned->s));
  return Wrap(std::move(owned), kSchemaName, &DestroySchemaCapsule);
}

py::capsule TableStreamCapsule(const TablePtr& table) {
  auto owned = std::make_unique<Owned<ArrowArrayStream>>();
  Check(ExportTable(table, &owned->s));
  return Wrap(std::move(owned), kStreamName, &DestroyStreamCapsule);
}

py::capsule ColumnStreamCapsule(const ChunkedArrayPtr& column, const FieldPtr& field) {
  auto owned = std::make_unique<Owned<ArrowArrayStream>>();
  ArrowArrayStream& s = owned->s;
  s.get_schema = &ColumnGetSchema;
  s.get_next = &ColumnGetNext;
  s.get_last_error = &ColumnLastError;
  s.release = &ColumnRelease;
  auto* p = new ColumnStream;
  p->column = column;
  p->field = field;
  s.private_data = p;
  return Wrap(std::move(owned), kStreamName, &DestroyStreamCapsule);
}

ArrowSchema* SchemaOfCapsule(py::handle c) {
  return OfCapsule<ArrowSchema>(c, kSchemaName);
}
ArrowArray* ArrayOfCapsule(py::handle c) { return OfCapsule<ArrowArray>(c, kArrayName); }
ArrowArrayStream* StreamOfCapsule(py::handle c) {
  return OfCapsule<ArrowArrayStream>(c, kStreamName);
}

std::shared_ptr<RecordBatchReader> ReaderFromProducer(py::handle obj) {
  // An attribute set to None says "not supported", as for other protocols.
  py::object stream_method = py::getattr(obj, "__arrow_c_stream__", py::none());
  py::object array_method = py::getattr(obj, "__arrow_c_array__", py::none());
  if (!stream_method.is_none()) {
    py::object capsule = stream_method();
    ArrowArrayStream* stream = StreamOfCapsule(capsule);
    // Moves the stream out of the capsule (its release is set to NULL).
    return Unwrap(ImportRecordBatchReader(stream));
  }
  if (!array_method.is_none()) {
    py::object pair = array_method();
    if (!py::isinstance<py::tuple>(pair) || py::len(pair) != 2) {
      ThrowClass("InvalidArgument",
                 "__arrow_c_array__ must return a (schema, array) pair of capsules");
    }
    py::tuple t = pair.cast<py::tuple>();
    ArrowSchema* schema = SchemaOfCapsule(t[0]);
    ArrowArray* array = ArrayOfCapsule(t[1]);
    if (schema->format == nullptr || std::strcmp(schema->format, "+s") != 0) {
      ThrowClass("InvalidArgument",
                 std::string("a table is a struct array (format \"+s\"), not \"") +
                     (schema->format ? schema->format : "") +
                     "\": give a record batch, a table or a stream");
    }
    RecordBatchPtr batch = Unwrap(ImportRecordBatch(array, schema));
    return RecordBatchReader::FromBatches(batch->schema(), {batch});
  }
  return nullptr;
}

TablePtr TableFromProducer(py::handle obj) {
  std::shared_ptr<RecordBatchReader> reader = ReaderFromProducer(obj);
  if (reader == nullptr) {
    PyErr_SetString(PyExc_TypeError,
                    ("expected an Arrow PyCapsule producer (__arrow_c_stream__ or "
                     "__arrow_c_array__), got " +
                     std::string(py::str(py::type::of(obj).attr("__name__"))))
                        .c_str());
    throw py::error_already_set();
  }
  std::vector<RecordBatchPtr> batches;
  Status st;
  {
    // The producer's get_next may take the GIL itself (a Python producer).
    py::gil_scoped_release release;
    auto read = reader->ReadAll();
    if (read.ok()) {
      batches = std::move(*read);
    } else {
      st = read.status();
    }
  }
  Check(st);
  return Unwrap(Table::FromRecordBatches(batches, reader->schema()));
}

void CheckRequestedSchema(py::handle requested, const Schema& schema) {
  if (requested.is_none()) return;
  ArrowSchema* s = SchemaOfCapsule(requested);
  // Read, not consumed: the capsule stays the caller's.
  const bool is_struct = s->format != nullptr && std::strcmp(s->format, "+s") == 0;
  if (!is_struct || s->n_children != schema.num_fields()) {
    ThrowClass("InvalidArgument",
               "requested_schema has " +
                   (is_struct ? std::to_string(s->n_children) + " fields"
                              : std::string("no struct type")) +
                   ", this table " + std::to_string(schema.num_fields()) +
                   ": a requested schema may change representations, not the fields");
  }
  for (int i = 0; i < schema.num_fields(); ++i) {
    const char* name = s->children[i] != nullptr ? s->children[i]->name : nullptr;
    if (name != nullptr && schema.field(i)->name() != name) {
      ThrowClass("InvalidArgument", "requested_schema names field " + std::to_string(i) +
                                        " '" + name + "', this table '" +
                                        schema.field(i)->name() + "'");
    }
  }
}

}  // namespace quiver::python
