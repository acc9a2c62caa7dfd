// The `_quiver` extension module: the C++ half of the `quiver` Python
// package. Everything public is re-exported, with its documentation, by
// python/quiver/__init__.py; this module is internal.
#include "arrow_py.h"

PYBIND11_MODULE(_quiver, m) {
  m.doc() = "The C++ half of the quiver package (internal: import quiver).";
  quiver::python::InstallForkHandler();
  quiver::python::InitErrors();
  quiver::python::BindTypes(m);
  quiver::python::BindTable(m);
  quiver::python::BindConvert(m);
  quiver::python::BindClient(m);
  quiver::python::BindStore(m);
}
