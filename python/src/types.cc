// quiver.DataType, quiver.Field and quiver.Schema: immutable values over the
// columnar layer's types (include/quiver/columnar/type.h), safe to share
// between threads, exportable through __arrow_c_schema__.
#include <pybind11/stl.h>

#include "arrow_py.h"

namespace quiver::python {

namespace {

bool HasUnit(TypeId id) {
  return id == TypeId::kTime32 || id == TypeId::kTime64 || id == TypeId::kTimestamp ||
         id == TypeId::kDuration;
}

py::object Metadata(const MetadataPtr& m) {
  if (m == nullptr) return py::none();
  py::dict d;
  for (int64_t i = 0; i < m->size(); ++i)
    d[py::bytes(m->key(i))] = py::bytes(m->value(i));
  return d;
}

py::object OrNone(bool has, py::object value) { return has ? value : py::none(); }

}  // namespace

void BindTypes(py::module_& m) {
  py::class_<DataType, std::shared_ptr<DataType>>(m, "DataType", R"doc(
An Arrow data type: ``int64``, ``timestamp[ms, tz=UTC]``, ``list<item: int32>``...

Immutable and safe to share between threads. ``str(t)`` is Arrow's text of
the type, ``t.id`` its short name. Exportable to any Arrow library through
``__arrow_c_schema__``.
)doc")
      .def_property_readonly("id", &DataType::name,
                             "Short name of the type: 'int64', 'timestamp', 'list'...")
      .def_property_readonly("bit_width", &DataType::bit_width,
                             "Bits per value of fixed-width types (1 for bool); 0 else.")
      .def_property_readonly("byte_width", &DataType::byte_width,
                             "Bytes per value of byte-sized fixed-width types; 0 else.")
      .def_property_readonly(
          "unit",
          [](const DataType& t) {
            return OrNone(HasUnit(t.id()), py::str(TimeUnitName(t.unit())));
          },
          "'s', 'ms', 'us' or 'ns' for times, timestamps and durations; None else.")
      .def_property_readonly(
          "timezone",
          [](const DataType& t) {
            return OrNone(t.id() == TypeId::kTimestamp && !t.timezone().empty(),
                          py::str(t.timezone()));
          },
          "The time zone of a timestamp type, or None (naive).")
      .def_property_readonly(
          "precision",
          [](const DataType& t) {
            return OrNone(t.id() == TypeId::kDecimal, py::int_(t.precision()));
          },
          "Decimal precision, or None.")
      .def_property_readonly(
          "scale",
          [](const DataType& t) {
            return OrNone(t.id() == TypeId::kDecimal, py::int_(t.scale()));
          },
          "Decimal scale, or None.")
      .def_property_readonly(
          "list_size",
          [](const DataType& t) {
            return OrNone(t.id() == TypeId::kFixedSizeList, py::int_(t.list_size()));
          },
          "The size of a fixed_size_list, or None.")
      .def_property_readonly(
          "fields", [](const DataType& t) { return t.fields(); },
          "Child fields: a list's value field, a struct's fields, a map's entries.")
      .def_property_readonly(
          "value_type",
          [](const DataType& t) -> py::object {
            if (IsListLike(t.id()) || IsListView(t.id()) ||
                t.id() == TypeId::kDictionary || t.id() == TypeId::kRunEndEncoded) {
              return py::cast(t.value_type());
            }
            return py::none();
          },
          "The value type of list-like, dictionary and run-end encoded types, or None.")
      .def_property_readonly(
          "index_type",
          [](const DataType& t) -> py::object {
            if (t.id() != TypeId::kDictionary) return py::none();
            return py::cast(t.index_type());
          },
          "The index type of a dictionary type, or None.")
      .def("__str__", &DataType::ToString)
      .def("__repr__",
           [](const DataType& t) { return "quiver.DataType(" + t.ToString() + ")"; })
      .def("__eq__",
           [](const DataType& a, py::object b) {
             return py::isinstance<DataType>(b) && a.Equals(*b.cast<TypePtr>());
           })
      .def("__hash__", [](const DataType& t) { return py::hash(py::str(t.ToString())); })
      .def("__arrow_c_schema__", &TypeCapsule,
           "Exports the type as an Arrow C schema (a PyCapsule named 'arrow_schema').");

  py::class_<Field, std::shared_ptr<Field>>(m, "Field", R"doc(
A named column of a schema: name, type, nullability and metadata.

Immutable; exportable through ``__arrow_c_schema__``.
)doc")
      .def_property_readonly("name", &Field::name)
      .def_property_readonly("type", &Field::type)
      .def_property_readonly("nullable", &Field::nullable)
      .def_property_readonly(
          "metadata", [](const Field& f) { return Metadata(f.metadata()); },
          "Key/value metadata as a dict of bytes, or None.")
      .def("__str__", &Field::ToString)
      .def("__repr__",
           [](const Field& f) { return "quiver.Field(" + f.ToString() + ")"; })
      .def("__eq__",
           [](const Field& a, py::object b) {
             return py::isinstance<Field>(b) && a.Equals(*b.cast<FieldPtr>());
           })
      .def("__hash__", [](const Field& f) { return py::hash(py::str(f.ToString())); })
      .def("__arrow_c_schema__", &FieldCapsule,
           "Exports the field as an Arrow C schema (a PyCapsule named 'arrow_schema').");

  py::class_<Schema, std::shared_ptr<Schema>>(m, "Schema", R"doc(
The fields of a table, in order, and the table's metadata.

Immutable. ``schema[i]`` or ``schema["name"]`` is a Field; exportable
through ``__arrow_c_schema__`` and importable from any object that has it
with ``Schema.from_arrow``.
)doc")
      .def_property_readonly("fields", &Schema::fields)
      .def_property_readonly("names",
                             [](const Schema& s) {
                               std::vector<std::string> names;
                               for (const auto& f : s.fields())
                                 names.push_back(f->name());
                               return names;
                             })
      .def_property_readonly("types",
                             [](const Schema& s) {
                               std::vector<TypePtr> types;
                               for (const auto& f : s.fields())
                                 types.push_back(f->type());
                               return types;
                             })
      .def_property_readonly(
          "metadata", [](const Schema& s) { return Metadata(s.metadata()); },
          "Key/value metadata as a dict of bytes, or None.")
      .def("get_field_index", &Schema::GetFieldIndex, py::arg("name"),
           "Index of the first field called `name`, or -1.")
      .def("__len__", &Schema::num_fields)
      .def("__getitem__",
           [](const Schema& s, py::object key) -> FieldPtr {
             if (py::isinstance<py::str>(key)) {
               const std::string name = key.cast<std::string>();
               FieldPtr f = s.GetFieldByName(name);
               if (f == nullptr) {
                 ThrowClass("NotFound", "no field named '" + name + "'", "KeyError");
               }
               return f;
             }
             int64_t i = key.cast<int64_t>();
             if (i < 0) i += s.num_fields();
             if (i < 0 || i >= s.num_fields()) throw py::index_error("field index");
             return s.field(static_cast<int>(i));
           })
      .def("__iter__", [](const Schema& s) { return py::iter(py::cast(s.fields())); })
      .def("equals", &Schema::Equals, py::arg("other"), py::arg("check_metadata") = false,
           "Field by field equality (metadata compared only if asked).")
      .def("__eq__",
           [](const Schema& a, py::object b) {
             return py::isinstance<Schema>(b) && a.Equals(*b.cast<SchemaPtr>());
           })
      .def("__str__", &Schema::ToString)
      .def("__repr__", [](const Schema& s) { return "quiver.Schema\n" + s.ToString(); })
      .def("__arrow_c_schema__", &SchemaCapsule,
           "Exports the schema as an Arrow C schema (a struct; PyCapsule "
           "'arrow_schema').")
      .def_static(
          "from_arrow",
          [](py::object obj) {
            if (!py::hasattr(obj, "__arrow_c_schema__")) {
              PyErr_SetString(
                  PyExc_TypeError,
                  "Schema.from_arrow takes an object with __arrow_c_schema__");
              throw py::error_already_set();
            }
            py::object capsule = obj.attr("__arrow_c_schema__")();
            return Unwrap(ImportSchema(SchemaOfCapsule(capsule)));
          },
          py::arg("obj"),
          "The schema of any object with __arrow_c_schema__ (a struct type).");
}

}  // namespace quiver::python
