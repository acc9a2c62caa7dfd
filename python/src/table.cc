// _Table and _Column: the handles behind quiver.Table and quiver.Column
// (python/quiver/_table.py). Numpy views of cluster memory are made here:
// read-only arrays whose base (a capsule) holds the chunk's ArrayData, so
// the pins behind it last as long as the array, whatever happens to the
// Table, the Column or the Client.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <set>
#include <sstream>

#include "arrow_py.h"
#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc.h"
#include "quiver/columnar/pretty_print.h"

namespace quiver::python {

namespace {

// A capsule holding `data` alive (and its pins): the base of numpy views.
py::capsule KeepAlive(const ArrayDataPtr& data) {
  auto* held = new ForkSafe<ArrayData>(data);
  return py::capsule(held, [](void* p) { delete static_cast<ForkSafe<ArrayData>*>(p); });
}

py::array ReadOnly(py::array a) {
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

// A read-only view of `count` values of `dtype` at `ptr`, kept alive by
// `data`.
py::array View(const ArrayDataPtr& data, const py::dtype& dtype, const void* ptr,
               int64_t count) {
  py::array a(dtype, {static_cast<py::ssize_t>(count)}, {}, ptr, KeepAlive(data));
  return ReadOnly(std::move(a));
}

// The numpy dtype of a fixed-width type whose values numpy reads as they
// are, or none.
std::optional<py::dtype> NumpyDtype(const DataType& t) {
  auto unit = [&] { return std::string(TimeUnitName(t.unit())); };
  switch (t.id()) {
    case TypeId::kInt8:
      return py::dtype("i1");
    case TypeId::kInt16:
      return py::dtype("<i2");
    case TypeId::kInt32:
    case TypeId::kDate32:
    case TypeId::kTime32:
      return py::dtype("<i4");
    case TypeId::kInt64:
    case TypeId::kTime64:
      return py::dtype("<i8");
    case TypeId::kUInt8:
      return py::dtype("u1");
    case TypeId::kUInt16:
      return py::dtype("<u2");
    case TypeId::kUInt32:
      return py::dtype("<u4");
    case TypeId::kUInt64:
      return py::dtype("<u8");
    case TypeId::kHalfFloat:
      return py::dtype("<f2");
    case TypeId::kFloat:
      return py::dtype("<f4");
    case TypeId::kDouble:
      return py::dtype("<f8");
    case TypeId::kDate64:
      return py::dtype("<M8[ms]");
    case TypeId::kTimestamp:
      return py::dtype("<M8[" + unit() + "]");
    case TypeId::kDuration:
      return py::dtype("<m8[" + unit() + "]");
    case TypeId::kFixedSizeBinary:
      if (t.byte_width() == 0) return std::nullopt;
      return py::dtype("S" + std::to_string(t.byte_width()));
    case TypeId::kInterval: {
      py::module_ np = py::module_::import("numpy");
      py::list fields;
      switch (t.interval_unit()) {
        case IntervalUnit::kYearMonth:
          return py::dtype("<i4");
        case IntervalUnit::kDayTime:
          fields.append(py::make_tuple("days", "<i4"));
          fields.append(py::make_tuple("milliseconds", "<i4"));
          break;
        case IntervalUnit::kMonthDayNano:
          fields.append(py::make_tuple("months", "<i4"));
          fields.append(py::make_tuple("days", "<i4"));
          fields.append(py::make_tuple("nanoseconds", "<i8"));
          break;
      }
      return py::reinterpret_steal<py::dtype>(np.attr("dtype")(fields).release());
    }
    default:
      return std::nullopt;
  }
}

// numpy.empty(n, dtype=object): every slot None.
py::array ObjectArray(int64_t n) {
  return py::module_::import("numpy").attr("empty")(n, py::arg("dtype") = "O");
}

void SetSlot(py::array& a, int64_t i, py::object value) {
  auto** slots = static_cast<PyObject**>(a.mutable_data());
  Py_XDECREF(slots[i]);
  slots[i] = value.release().ptr();
}

// Null mask (numpy.ma's: True where null), or None without nulls.
py::object Mask(const Array& a) {
  if (a.null_count() == 0) return py::none();
  py::array_t<bool> mask(a.length());
  bool* m = mask.mutable_data();
  for (int64_t i = 0; i < a.length(); ++i) m[i] = a.IsNull(i);
  return mask;
}

py::object Text(std::string_view v, bool text) {
  if (!text) return py::bytes(v.data(), v.size());
  PyObject* s = PyUnicode_DecodeUTF8(v.data(), static_cast<Py_ssize_t>(v.size()),
                                     "surrogateescape");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(s);
}

template <typename A>
py::array Strings(const A& a, bool text) {
  py::array out = ObjectArray(a.length());
  for (int64_t i = 0; i < a.length(); ++i) {
    if (a.IsValid(i)) SetSlot(out, i, Text(a.GetView(i), text));
  }
  return out;
}

// (kind, values, mask, extra) of one chunk, for quiver.Column.to_numpy and
// to_pandas (python/quiver/_table.py): "numpy" values are final (zero-copy
// views where numpy reads Arrow's layout as it is); "date32" and "time" are
// integer views Python converts; "object" arrays hold Python values;
// "dictionary" gives the indices, with the dictionary as a _Column in
// `extra`; "null" has no values.
py::tuple ChunkValues(const ArrayPtr& array) {
  const Array& a = *array;
  const ArrayDataPtr& d = a.data();
  const DataType& t = *a.type();
  const int64_t n = a.length();
  py::object mask = Mask(a);
  auto result = [&](const char* kind, py::object values, py::object extra = py::none()) {
    return py::make_tuple(kind, std::move(values), mask, std::move(extra));
  };
  if (auto dtype = NumpyDtype(t)) {
    const int width = t.byte_width();
    const uint8_t* ptr = d->GetBuffer(1);
    static const uint8_t kEmpty[16] = {};
    if (ptr == nullptr) ptr = kEmpty;  // no values: an empty array
    py::array values = View(d, *dtype, ptr + d->offset * width, n);
    if (t.id() == TypeId::kDate32) return result("date32", values);
    if (t.id() == TypeId::kTime32 || t.id() == TypeId::kTime64) {
      return result("time", values, py::str(TimeUnitName(t.unit())));
    }
    return result("numpy", values);
  }
  switch (t.id()) {
    case TypeId::kNull:
      return py::make_tuple("null", py::none(), py::none(), py::none());
    case TypeId::kBool: {
      py::array_t<bool> values(n);
      bool* v = values.mutable_data();
      const auto& b = static_cast<const BooleanArray&>(a);
      for (int64_t i = 0; i < n; ++i) v[i] = b.Value(i);
      return result("numpy", values);
    }
    case TypeId::kString:
      return result("object", Strings(static_cast<const StringArray&>(a), true));
    case TypeId::kBinary:
      return result("object", Strings(static_cast<const BinaryArray&>(a), false));
    case TypeId::kLargeString:
      return result("object", Strings(static_cast<const LargeStringArray&>(a), true));
    case TypeId::kLargeBinary:
      return result("object", Strings(static_cast<const LargeBinaryArray&>(a), false));
    case TypeId::kStringView:
      return result("object", Strings(static_cast<const BinaryViewArray&>(a), true));
    case TypeId::kBinaryView:
      return result("object", Strings(static_cast<const BinaryViewArray&>(a), false));
    case TypeId::kFixedSizeBinary:  // width 0
      return result("object",
                    Strings(static_cast<const FixedSizeBinaryArray&>(a), false));
    case TypeId::kDecimal: {
      py::object decimal = py::module_::import("decimal").attr("Decimal");
      const auto& dec = static_cast<const DecimalArray&>(a);
      py::array out = ObjectArray(n);
      for (int64_t i = 0; i < n; ++i) {
        if (a.IsValid(i)) SetSlot(out, i, decimal(dec.FormatValue(i)));
      }
      return result("object", out);
    }
    case TypeId::kDictionary: {
      const auto& dict = static_cast<const DictionaryArray&>(a);
      py::tuple indices = ChunkValues(dict.indices());
      auto values = std::make_shared<PyColumn>();
      values->column = ForkSafe<ChunkedArray>(std::make_shared<ChunkedArray>(
          std::vector<ArrayPtr>{dict.dictionary()}, dict.dictionary()->type()));
      values->field = field("dictionary", dict.dictionary()->type());
      return result("dictionary", indices[1], py::cast(values));
    }
    default:
      ThrowClass("InvalidArgument",
                 "a column of type " + t.ToString() +
                     " has no numpy or pandas form here; hand the table to pyarrow, "
                     "polars or duckdb through __arrow_c_stream__ (zero-copy)",
                 "NotImplemented");
  }
}

// pyarrow's text of a column: [[v, v, ...], [...]] by chunk.
std::string ColumnPreview(const ChunkedArray& column, int64_t window) {
  std::string out = "[";
  const int max_chunks = 4;
  for (int c = 0; c < column.num_chunks(); ++c) {
    if (c == max_chunks) {
      out += ", ...(" + std::to_string(column.num_chunks() - c) + " more chunks)";
      break;
    }
    const Array& a = *column.chunk(c);
    out += c == 0 ? "[" : ",[";
    const int64_t n = a.length();
    for (int64_t i = 0; i < n; ++i) {
      if (n > 2 * window && i == window) {
        out += "...,";
        i = n - window;
      }
      out += FormatValue(a, i);
      if (i + 1 < n) out += ",";
    }
    out += "]";
  }
  return out + "]";
}

std::string TableText(const Table& t, int64_t window) {
  std::string out = "quiver.Table\n" + t.schema()->ToString() + "\n----";
  for (int i = 0; i < t.num_columns(); ++i) {
    out +=
        "\n" + t.schema()->field(i)->name() + ": " + ColumnPreview(*t.column(i), window);
  }
  return out;
}

// Every distinct buffer of the table, each counted once.
int64_t TableBytes(const Table& t) {
  std::set<const uint8_t*> seen;
  int64_t bytes = 0;
  for (const auto& col : t.columns()) {
    for (const auto& chunk : col->chunks()) {
      ForEachBuffer(*chunk->data(), [&](const Buffer& b) {
        if (seen.insert(b.data()).second) bytes += b.size();
      });
    }
  }
  return bytes;
}

std::shared_ptr<PyTable> MakeTable(TablePtr t) {
  auto p = std::make_shared<PyTable>();
  p->table = ForkSafe<Table>(std::move(t));
  return p;
}

const Table& TableOf(const PyTable& p) {
  if (Forked(p.table.generation())) {
    ThrowClass("ClosedError",
               "this table was got by the process this one was forked from: get it "
               "again here",
               "FailedPrecondition");
  }
  return *p.table;
}

const ChunkedArrayPtr& ColumnOf(const PyColumn& c) {
  if (Forked(c.column.generation())) {
    ThrowClass("ClosedError",
               "this column was got by the process this one was forked from",
               "FailedPrecondition");
  }
  return c.column.get();
}

std::shared_ptr<PyColumn> MakeColumn(const Table& t, int i) {
  auto c = std::make_shared<PyColumn>();
  c->column = ForkSafe<ChunkedArray>(t.column(i));
  c->field = t.schema()->field(i);
  return c;
}

}  // namespace

std::shared_ptr<PyTable> WrapTable(TablePtr t) { return MakeTable(std::move(t)); }

void BindTable(py::module_& m) {
  py::class_<PyTable, std::shared_ptr<PyTable>>(m, "_Table")
      .def_property_readonly("num_rows",
                             [](const PyTable& p) { return TableOf(p).num_rows(); })
      .def_property_readonly("num_columns",
                             [](const PyTable& p) { return TableOf(p).num_columns(); })
      .def_property_readonly("schema",
                             [](const PyTable& p) { return TableOf(p).schema(); })
      .def_property_readonly("nbytes",
                             [](const PyTable& p) { return TableBytes(TableOf(p)); })
      .def_property_readonly("num_chunks",
                             [](const PyTable& p) {
                               const Table& t = TableOf(p);
                               return t.num_columns() == 0 ? 0
                                                           : t.column(0)->num_chunks();
                             })
      .def("column",
           [](const PyTable& p, int i) {
             const Table& t = TableOf(p);
             if (i < 0 || i >= t.num_columns()) throw py::index_error("column index");
             return MakeColumn(t, i);
           })
      .def("equals",
           [](const PyTable& a, const PyTable& b, bool check_metadata) {
             return TableOf(a).Equals(TableOf(b), check_metadata);
           })
      .def("slice",
           [](const PyTable& p, int64_t offset, int64_t length) {
             const Table& t = TableOf(p);
             if (offset < 0 || length < 0 || offset > t.num_rows()) {
               throw py::index_error("slice outside the table");
             }
             return MakeTable(t.Slice(offset, std::min(length, t.num_rows() - offset)));
           })
      .def("validate",
           [](const PyTable& p, bool full) {
             Check(full ? TableOf(p).ValidateFull() : TableOf(p).Validate());
           })
      .def("text",
           [](const PyTable& p, int64_t window) { return TableText(TableOf(p), window); })
      .def("export_stream",
           [](const PyTable& p, py::object requested) {
             const Table& t = TableOf(p);
             CheckRequestedSchema(requested, *t.schema());
             return TableStreamCapsule(p.table.get());
           })
      .def("export_schema",
           [](const PyTable& p) { return SchemaCapsule(*TableOf(p).schema()); })
      .def_static("from_arrow",
                  [](py::object obj) { return MakeTable(TableFromProducer(obj)); })
      .def_static("read_ipc",
                  [](py::object source) {
                    std::shared_ptr<Buffer> data;
                    if (py::isinstance<py::bytes>(source)) {
                      data = Buffer::FromString(source.cast<std::string>());
                    } else {
                      const std::string path = py::str(source);
                      data = Unwrap(io::MemoryMapFile(path));
                    }
                    ipc::IpcReadOptions options;
                    options.validate_full = true;
                    return MakeTable(Unwrap(ipc::ReadTableFromBuffer(data, options)));
                  })
      .def("to_ipc", [](const PyTable& p, bool file) {
        auto buf = Unwrap(ipc::SerializeTable(
            TableOf(p), file ? ipc::IpcFormat::kFile : ipc::IpcFormat::kStream));
        return py::bytes(reinterpret_cast<const char*>(buf->data()),
                         static_cast<size_t>(buf->size()));
      });

  py::class_<PyColumn, std::shared_ptr<PyColumn>>(m, "_Column")
      .def_property_readonly("field", [](const PyColumn& c) { return c.field; })
      .def_property_readonly("length",
                             [](const PyColumn& c) { return ColumnOf(c)->length(); })
      .def_property_readonly("null_count",
                             [](const PyColumn& c) { return ColumnOf(c)->null_count(); })
      .def_property_readonly("num_chunks",
                             [](const PyColumn& c) { return ColumnOf(c)->num_chunks(); })
      .def("chunk",
           [](const PyColumn& c, int i) {
             const auto& col = ColumnOf(c);
             if (i < 0 || i >= col->num_chunks()) throw py::index_error("chunk index");
             auto out = std::make_shared<PyColumn>();
             out->column = ForkSafe<ChunkedArray>(std::make_shared<ChunkedArray>(
                 std::vector<ArrayPtr>{col->chunk(i)}, col->type()));
             out->field = c.field;
             return out;
           })
      .def("chunk_values",
           [](const PyColumn& c, int i) {
             const auto& col = ColumnOf(c);
             if (i < 0 || i >= col->num_chunks()) throw py::index_error("chunk index");
             return ChunkValues(col->chunk(i));
           })
      .def("chunk_address",
           [](const PyColumn& c, int i) -> uint64_t {
             const auto& col = ColumnOf(c);
             if (i < 0 || i >= col->num_chunks()) throw py::index_error("chunk index");
             const uint8_t* p = col->chunk(i)->data()->GetBuffer(1);
             return reinterpret_cast<uint64_t>(p);
           })
      .def("equals", [](const PyColumn& a,
                        const PyColumn& b) { return ColumnOf(a)->Equals(*ColumnOf(b)); })
      .def("text", [](const PyColumn& c,
                      int64_t window) { return ColumnPreview(*ColumnOf(c), window); })
      .def("export_stream", [](const PyColumn& c, py::object requested) {
        if (!requested.is_none()) (void)SchemaOfCapsule(requested);
        return ColumnStreamCapsule(ColumnOf(c), c.field);
      });
}

}  // namespace quiver::python
