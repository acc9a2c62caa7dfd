// Python data in: numpy arrays and pandas columns (as laid out by
// python/quiver/_convert.py) become record batches that point into the
// numpy memory, zero-copy, through the Arrow C Data Interface's importer
// (so they are checked as any producer's are). Client.put and
// ObjectStore.put_table then copy them once into cluster memory.
//
// A column spec is (format, length, null_count, buffers, dictionary):
// `format` an Arrow C format string, `buffers` the Arrow C layout's buffers
// (validity first; None for an absent one) as objects with the buffer
// protocol, `dictionary` the spec of a dictionary's values or None.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>

#include "arrow_py.h"
#include "quiver/columnar/concatenate.h"

namespace quiver::python {

namespace {

// Batches of about this many bytes: Client::Load gathers them into chunks
// and reads the next while it writes one, and Ctrl-C is seen between them.
constexpr int64_t kBatchBytes = 4 << 20;

// What ImportArray takes over: our structures, freed by their release.
struct Node {
  std::string format;
  std::vector<const void*> buffers;
  ArrowArray dictionary_array{};
  ArrowSchema dictionary_schema{};
  ArrowArray* dictionary_array_ptr = nullptr;
  ArrowSchema* dictionary_schema_ptr = nullptr;
};

void ReleaseArray(ArrowArray* a) {
  auto* node = static_cast<Node*>(a->private_data);
  if (node->dictionary_array.release != nullptr) {
    node->dictionary_array.release(&node->dictionary_array);
  }
  if (node->dictionary_schema.release != nullptr) {
    node->dictionary_schema.release(&node->dictionary_schema);
  }
  delete node;
  a->release = nullptr;
}

void ReleaseSchema(ArrowSchema* s) {
  delete static_cast<std::string*>(s->private_data);
  s->release = nullptr;
}

int64_t Width(const std::string& f) {
  if (f.size() == 1) {
    switch (f[0]) {
      case 'c':
      case 'C':
        return 1;
      case 's':
      case 'S':
      case 'e':
        return 2;
      case 'i':
      case 'I':
      case 'f':
        return 4;
      case 'l':
      case 'L':
      case 'g':
        return 8;
    }
    return 0;
  }
  if (f == "tdD" || f == "tts" || f == "ttm" || f == "tiM") return 4;
  if (f == "tdm" || f == "ttu" || f == "ttn" || f == "tiD") return 8;
  if (f == "tin") return 16;
  if (f.rfind("ts", 0) == 0 || f.rfind("tD", 0) == 0) return 8;
  if (f.rfind("w:", 0) == 0) return std::stoll(f.substr(2));
  return 0;
}

struct Checked {
  std::vector<const void*> pointers;
};

// Checks that each buffer holds what `format` and `length` need, and keeps
// its export alive in `views`.
Checked CheckBuffers(const std::string& format, int64_t length, int64_t null_count,
                     const py::list& buffers, bool dictionary,
                     std::vector<std::unique_ptr<py::buffer_info>>* views) {
  auto need = [&](size_t i, int64_t bytes, const char* what) -> const void* {
    if (i >= buffers.size()) ThrowClass("InvalidArgument", std::string("no ") + what);
    py::object b = buffers[i];
    if (b.is_none()) {
      if (bytes == 0 || (i == 0 && null_count == 0)) return nullptr;
      ThrowClass("InvalidArgument", std::string("the ") + what + " buffer is missing");
    }
    auto info = std::make_unique<py::buffer_info>(py::buffer(b).request());
    const int64_t have = info->size * info->itemsize;
    if (have < bytes) {
      ThrowClass("InvalidArgument", std::string("the ") + what + " buffer has " +
                                        std::to_string(have) + " bytes, " +
                                        std::to_string(bytes) + " needed");
    }
    const void* p = info->ptr;
    views->push_back(std::move(info));
    return p;
  };
  Checked out;
  if (format == "n") return out;  // the null type: no buffers at all
  const int64_t bitmap = (length + 7) / 8;
  out.pointers.push_back(need(0, null_count == 0 ? 0 : bitmap, "validity"));
  if (dictionary && Width(format) == 0) {
    ThrowClass("InvalidArgument", "dictionary indices of format '" + format + "'");
  }
  if (format == "b") {
    out.pointers.push_back(need(1, bitmap, "values"));
  } else if (format == "u" || format == "z" || format == "U" || format == "Z") {
    const bool large = format == "U" || format == "Z";
    const int64_t w = large ? 8 : 4;
    const void* offsets = need(1, (length + 1) * w, "offsets");
    out.pointers.push_back(offsets);
    int64_t last = 0;
    if (large) {
      std::memcpy(&last, static_cast<const uint8_t*>(offsets) + length * 8, 8);
    } else {
      int32_t l;
      std::memcpy(&l, static_cast<const uint8_t*>(offsets) + length * 4, 4);
      last = l;
    }
    out.pointers.push_back(need(2, last, "data"));
  } else if (int64_t w = Width(format); w > 0) {
    out.pointers.push_back(need(1, length * w, "values"));
  } else {
    ThrowClass("InvalidArgument", "a column of Arrow format '" + format +
                                      "' cannot be made from Python buffers");
  }
  return out;
}

// The ArrowArray/ArrowSchema of one spec (and its dictionary's).
void FromSpec(const py::tuple& spec, const std::string& name,
              std::vector<std::unique_ptr<py::buffer_info>>* views, ArrowArray* array,
              ArrowSchema* schema) {
  if (spec.size() != 5) ThrowClass("InvalidArgument", "a column spec has 5 items");
  const std::string format = spec[0].cast<std::string>();
  const int64_t length = spec[1].cast<int64_t>();
  const int64_t null_count = spec[2].cast<int64_t>();
  py::list buffers = spec[3];
  py::object dictionary = spec[4];
  if (length < 0 || null_count < 0 || null_count > length) {
    ThrowClass("InvalidArgument", "column '" + name + "': bad length or null count");
  }
  Checked checked =
      CheckBuffers(format, length, null_count, buffers, !dictionary.is_none(), views);
  auto node = std::make_unique<Node>();
  node->format = format;
  node->buffers = std::move(checked.pointers);
  if (!dictionary.is_none()) {
    FromSpec(dictionary.cast<py::tuple>(), name, views, &node->dictionary_array,
             &node->dictionary_schema);
    node->dictionary_array_ptr = &node->dictionary_array;
    node->dictionary_schema_ptr = &node->dictionary_schema;
  }
  std::memset(array, 0, sizeof(*array));
  array->length = length;
  array->null_count = null_count;
  array->n_buffers = static_cast<int64_t>(node->buffers.size());
  array->buffers = node->buffers.data();
  array->dictionary = node->dictionary_array_ptr;
  array->release = &ReleaseArray;

  std::memset(schema, 0, sizeof(*schema));
  auto* text = new std::string(format);
  schema->format = text->c_str();
  schema->name = nullptr;
  schema->flags = ARROW_FLAG_NULLABLE;
  schema->dictionary = node->dictionary_schema_ptr;
  schema->release = &ReleaseSchema;
  schema->private_data = text;
  array->private_data = node.release();
}

// `_batches(names, specs, batch_bytes)`: one table's columns as batches of
// about kBatchBytes, or a quarter of `batch_bytes` (a put's chunk size) when
// that is less (zero-copy slices).
std::shared_ptr<PyBatches> MakeBatches(const std::vector<std::string>& names,
                                       const py::list& specs, int64_t batch_bytes) {
  if (names.size() != specs.size()) {
    ThrowClass("InvalidArgument", "as many names as column specs are needed");
  }
  auto out = std::make_shared<PyBatches>();
  std::vector<ArrayPtr> columns;
  FieldVector fields;
  int64_t rows = -1;
  for (size_t i = 0; i < names.size(); ++i) {
    ArrowArray array;
    ArrowSchema schema;
    FromSpec(specs[i].cast<py::tuple>(), names[i], &out->views, &array, &schema);
    auto imported = ImportArray(&array, &schema);
    if (!imported.ok()) {
      Throw(imported.status().WithContext("column '" + names[i] + "'"));
    }
    if (rows >= 0 && (*imported)->length() != rows) {
      ThrowClass("InvalidArgument", "column '" + names[i] + "' has " +
                                        std::to_string((*imported)->length()) +
                                        " rows, the first " + std::to_string(rows));
    }
    rows = (*imported)->length();
    fields.push_back(field(names[i], (*imported)->type()));
    columns.push_back(std::move(*imported));
  }
  if (rows < 0) rows = 0;
  out->schema = quiver::schema(fields);
  out->rows = rows;
  int64_t bytes = 0;
  for (const auto& v : out->views) bytes += v->size * v->itemsize;
  const int64_t per_row = rows == 0 ? 1 : std::max<int64_t>(1, bytes / rows);
  // Batches of at most a quarter of a chunk, so that chunks come out near
  // the size asked for.
  const int64_t target =
      batch_bytes > 0
          ? std::min<int64_t>(kBatchBytes, std::max<int64_t>(batch_bytes / 4, 1))
          : kBatchBytes;
  const int64_t step = std::max<int64_t>(64, target / per_row);
  for (int64_t at = 0; at < rows; at += step) {
    const int64_t n = std::min(step, rows - at);
    std::vector<ArrayPtr> slice;
    for (const auto& c : columns) slice.push_back(c->Slice(at, n));
    out->batches.push_back(RecordBatch::Make(out->schema, n, slice));
  }
  return out;
}

// Packs `valid` (numpy bools, True = valid) LSB first, as Arrow's bitmaps.
py::array_t<uint8_t> PackBits(const bool* valid, int64_t n) {
  py::array_t<uint8_t> out((n + 7) / 8);
  uint8_t* bits = out.mutable_data();
  std::memset(bits, 0, static_cast<size_t>((n + 7) / 8));
  for (int64_t i = 0; i < n; ++i) {
    if (valid[i]) bits[i >> 3] |= static_cast<uint8_t>(1u << (i & 7));
  }
  return out;
}

// `_encode_strings(values, nulls, binary)`: an object array of str (or
// bytes) as Arrow's offsets and data; `nulls` (bools, True = null, or None)
// marks missing values. Returns (format, offsets, data, validity,
// null_count), "u"/"z" or, past 2 GiB of data, "U"/"Z".
py::tuple EncodeStrings(py::array values, py::object nulls, bool binary,
                        const std::string& column) {
  if (values.dtype().kind() != 'O' || values.ndim() != 1) {
    ThrowClass("InvalidArgument", "column '" + column + "': expected a 1-D object array");
  }
  const int64_t n = values.shape(0);
  py::array_t<bool> null_mask;
  const bool* is_null = nullptr;
  if (!nulls.is_none()) {
    null_mask = py::array_t<bool, py::array::c_style | py::array::forcecast>(nulls);
    if (null_mask.size() != n) ThrowClass("InvalidArgument", "null mask length");
    is_null = null_mask.data();
  }
  py::array contiguous = py::array::ensure(values, py::array::c_style);
  auto** items = static_cast<PyObject**>(const_cast<void*>(contiguous.data()));
  std::vector<std::pair<const char*, int64_t>> views(static_cast<size_t>(n));
  std::vector<bool> valid(static_cast<size_t>(n), true);
  int64_t total = 0, null_count = 0;
  for (int64_t i = 0; i < n; ++i) {
    PyObject* o = items[i];
    if ((is_null != nullptr && is_null[i]) || o == Py_None) {
      valid[i] = false;
      ++null_count;
      views[i] = {nullptr, 0};
      continue;
    }
    const char* p = nullptr;
    Py_ssize_t len = 0;
    if (!binary && PyUnicode_Check(o)) {
      p = PyUnicode_AsUTF8AndSize(o, &len);
      if (p == nullptr) throw py::error_already_set();
    } else if (binary && PyBytes_Check(o)) {
      p = PyBytes_AS_STRING(o);
      len = PyBytes_GET_SIZE(o);
    } else if (binary && PyByteArray_Check(o)) {
      p = PyByteArray_AS_STRING(o);
      len = PyByteArray_GET_SIZE(o);
    } else {
      PyErr_SetString(
          PyExc_TypeError,
          ("column '" + column + "': value " + std::to_string(i) + " is " +
           std::string(Py_TYPE(o)->tp_name) + ", not " + (binary ? "bytes" : "str") +
           " (a column holds values of one kind; None is null)")
              .c_str());
      throw py::error_already_set();
    }
    views[i] = {p, len};
    total += len;
  }
  const bool large = total > INT32_MAX;
  py::array data = py::array_t<uint8_t>(total);
  auto* out = static_cast<uint8_t*>(data.mutable_data());
  py::array offsets = large ? py::array(py::array_t<int64_t>(n + 1))
                            : py::array(py::array_t<int32_t>(n + 1));
  int64_t at = 0;
  for (int64_t i = 0; i <= n; ++i) {
    if (large) {
      static_cast<int64_t*>(offsets.mutable_data())[i] = at;
    } else {
      static_cast<int32_t*>(offsets.mutable_data())[i] = static_cast<int32_t>(at);
    }
    if (i == n) break;
    if (views[i].second > 0) std::memcpy(out + at, views[i].first, views[i].second);
    at += views[i].second;
  }
  py::object validity = py::none();
  if (null_count > 0) {
    std::unique_ptr<bool[]> v(new bool[static_cast<size_t>(n)]);
    for (int64_t i = 0; i < n; ++i) v[i] = valid[i];
    validity = PackBits(v.get(), n);
  }
  const char* format = binary ? (large ? "Z" : "z") : (large ? "U" : "u");
  return py::make_tuple(format, offsets, data, validity, null_count);
}

}  // namespace

std::shared_ptr<RecordBatchReader> ReaderOfSource(py::handle source) {
  if (py::isinstance<PyBatches>(source)) {
    const auto& b = source.cast<const PyBatches&>();
    return RecordBatchReader::FromBatches(b.schema, b.batches);
  }
  if (py::isinstance<PyTable>(source)) {
    TablePtr t = source.cast<const PyTable&>().table.get();
    auto batches = Unwrap(t->ToRecordBatches());
    return RecordBatchReader::FromBatches(t->schema(), std::move(batches));
  }
  auto reader = ReaderFromProducer(source);
  if (reader == nullptr) {
    PyErr_SetString(PyExc_TypeError,
                    ("expected a pandas DataFrame, a dict of numpy arrays, a "
                     "quiver.Table or an Arrow PyCapsule producer, got " +
                     std::string(py::str(py::type::of(source).attr("__name__"))))
                        .c_str());
    throw py::error_already_set();
  }
  return reader;
}

TablePtr TableOfSource(py::handle source) {
  if (py::isinstance<PyBatches>(source)) {
    const auto& b = source.cast<const PyBatches&>();
    return Unwrap(Table::FromRecordBatches(b.batches, b.schema));
  }
  if (py::isinstance<PyTable>(source)) return source.cast<const PyTable&>().table.get();
  return TableFromProducer(source);
}

void BindConvert(py::module_& m) {
  py::class_<PyBatches, std::shared_ptr<PyBatches>>(m, "_Batches")
      .def_property_readonly("num_rows", [](const PyBatches& b) { return b.rows; })
      .def_property_readonly("schema", [](const PyBatches& b) { return b.schema; })
      .def("to_table", [](const PyBatches& b) {
        // A copy into this process's memory: the views end with this object.
        TablePtr t = Unwrap(Table::FromRecordBatches(b.batches, b.schema));
        std::vector<ChunkedArrayPtr> columns;
        for (int i = 0; i < t->num_columns(); ++i) {
          std::vector<ArrayPtr> chunks;
          for (const auto& chunk : t->column(i)->chunks()) {
            auto copy = Unwrap(Concatenate({chunk->data().get()}));
            if (copy->dictionary != nullptr) {  // shared by Concatenate: copied too
              copy->dictionary = Unwrap(Concatenate({copy->dictionary.get()}));
            }
            chunks.push_back(MakeArray(copy));
          }
          columns.push_back(Unwrap(ChunkedArray::Make(chunks, t->column(i)->type())));
        }
        return WrapTable(Table::Make(t->schema(), columns, t->num_rows()));
      });
  m.def("_batches", &MakeBatches, py::arg("names"), py::arg("specs"),
        py::arg("batch_bytes") = 0);
  m.def("_encode_strings", &EncodeStrings, py::arg("values"), py::arg("nulls"),
        py::arg("binary"), py::arg("column"));
}

}  // namespace quiver::python
