// _Store and _Subscription: the handles behind quiver.ObjectStore
// (python/quiver/_store.py), Plasma's Python API over include/quiver/store.h.
//
// Buffers: a Get's objects come back as memoryviews of cluster memory
// (read-only, no copy) exported by a small type of our own, _ObjectBuffer,
// which holds the object's pinned Buffer and one Get reference: the store's
// Release(id) runs once per Get, at release(id) or when the last view of
// the buffer goes, whichever is first. Create's buffer is a writable view
// that the Python layer releases at seal/abort.
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>

#include "arrow_py.h"

namespace quiver::python {

void GetRefs::Add(const std::vector<store::ObjectId>& ids,
                  const std::vector<std::optional<store::ObjectBuffer>>& got) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!got[i]) continue;
    auto [it, added] = counts_.try_emplace(ids[i], 0);
    if (!added && it->second == 0) --zeros_;
    ++it->second;
  }
}

bool GetRefs::TakeLocked(const store::ObjectId& id) {
  auto it = counts_.find(id);
  if (it == counts_.end() || it->second == 0) return false;
  if (--it->second == 0 && ++zeros_ > 1024 && zeros_ > counts_.size() / 2) {
    std::erase_if(counts_, [](const auto& e) { return e.second == 0; });
    zeros_ = 0;
  }
  return true;
}

bool GetRefs::Take(const store::ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  return TakeLocked(id);
}

std::vector<bool> GetRefs::Take(const std::vector<store::ObjectId>& ids) {
  std::vector<bool> taken(ids.size());
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < ids.size(); ++i) taken[i] = TakeLocked(ids[i]);
  return taken;
}

namespace {

using store::ObjectId;

// ---- _ObjectBuffer: a buffer-protocol exporter of objects' bytes ----

// One object's bytes as one exporter hands them out.
struct Exported {
  std::shared_ptr<Buffer> buffer;  // the bytes and their pin; dropped with its view
  ObjectId id;
  bool owns_ref = false;  // its view's end gives back one Get reference of `id`
  int32_t exports = 0;    // views of it not released yet
};

// An exporter of one object (Create's writable buffer) or of every object
// one Get returned: one Python object for the whole batch instead of one
// per object, each object still given back (pin and Get reference) when its
// own view goes.
struct ObjectBufferObject {
  // Constructed in place by MakeExporter, destroyed by ObjectBufferDealloc.
  PyObject_HEAD std::vector<Exported> entries;
  std::shared_ptr<Session> session;  // set when entries own Get references
  bool writable;
  bool batch;  // each object goes with its view (else with the exporter)
  uint64_t generation;
  int64_t exports;  // buffer views handed out and not released yet
  Py_ssize_t next;  // the entry a batch's next getbuffer exports
};

// Gives back what entry `e` holds: its Get reference (once) and its pin.
void GiveBack(ObjectBufferObject* o, Exported& e) {
  if (Forked(o->generation)) {
    // The parent's pin: leak it here (moved to the heap and never freed).
    new std::shared_ptr<Buffer>(std::move(e.buffer));
    return;
  }
  if (e.owns_ref && o->session != nullptr) {
    Session& s = *o->session;
    if (!s.closed.load() && s.refs.Take(e.id) && s.use_mu.try_lock_shared()) {
      if (s.store != nullptr) (void)s.store->Release(e.id);
      s.use_mu.unlock_shared();
    }
  }
  e.owns_ref = false;
  e.buffer.reset();
}

void ObjectBufferDealloc(PyObject* self) {
  auto* o = reinterpret_cast<ObjectBufferObject*>(self);
  for (auto& e : o->entries) GiveBack(o, e);  // entries never exported
  if (Forked(o->generation)) {
    new std::shared_ptr<Session>(std::move(o->session));  // the parent's: leaked
  }
  o->entries.~vector<Exported>();
  o->session.~shared_ptr<Session>();
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);  // instances of heap types hold their type
}

int ObjectBufferGet(PyObject* self, Py_buffer* view, int flags) {
  auto* o = reinterpret_cast<ObjectBufferObject*>(self);
  view->obj = nullptr;
  if (Forked(o->generation)) {
    PyErr_SetString(PyExc_BufferError,
                    "this object buffer belongs to the process this one was forked from");
    return -1;
  }
  const Py_ssize_t k = o->batch ? o->next : 0;
  if (k < 0 || k >= static_cast<Py_ssize_t>(o->entries.size()) ||
      o->entries[k].buffer == nullptr) {
    PyErr_SetString(PyExc_BufferError,
                    "the views get() returned are this exporter's only views");
    return -1;
  }
  Exported& e = o->entries[k];
  const int rc = PyBuffer_FillInfo(view, self, const_cast<uint8_t*>(e.buffer->data()),
                                   e.buffer->size(), o->writable ? 0 : 1, flags);
  if (rc != 0) return rc;
  view->internal = reinterpret_cast<void*>(k);
  ++o->exports;
  ++e.exports;
  return 0;
}

void ObjectBufferRelease(PyObject* self, Py_buffer* view) {
  auto* o = reinterpret_cast<ObjectBufferObject*>(self);
  --o->exports;
  Exported& e = o->entries[reinterpret_cast<size_t>(view->internal)];
  if (--e.exports == 0 && o->batch) GiveBack(o, e);
}

// Made at module import (PyType_FromSpec: a heap type).
PyTypeObject* object_buffer_type = nullptr;

PyTypeObject* MakeObjectBufferType() {
  static PyType_Slot slots[] = {
      {Py_tp_dealloc, reinterpret_cast<void*>(&ObjectBufferDealloc)},
      {Py_bf_getbuffer, reinterpret_cast<void*>(&ObjectBufferGet)},
      {Py_bf_releasebuffer, reinterpret_cast<void*>(&ObjectBufferRelease)},
      {Py_tp_doc, const_cast<char*>("The bytes of store objects in cluster memory "
                                    "(read through memoryviews).")},
      {0, nullptr}};
  static PyType_Spec spec = {"quiver._quiver._ObjectBuffer",
                             static_cast<int>(sizeof(ObjectBufferObject)), 0,
                             Py_TPFLAGS_DEFAULT, slots};
  PyObject* type = PyType_FromSpec(&spec);
  if (type == nullptr) throw py::error_already_set();
  return reinterpret_cast<PyTypeObject*>(type);
}

// An exporter with no entries yet (`Entries` fills them); with `session`,
// the entries that own Get references give them back through it; `batch`:
// each object goes with its own view, not with the exporter.
py::object MakeExporter(const std::shared_ptr<Session>* session, bool writable,
                        bool batch) {
  PyObject* obj = PyType_GenericAlloc(object_buffer_type, 0);
  if (obj == nullptr) throw py::error_already_set();
  auto* o = reinterpret_cast<ObjectBufferObject*>(obj);
  new (&o->entries) std::vector<Exported>();
  new (&o->session) std::shared_ptr<Session>(session != nullptr ? *session : nullptr);
  o->writable = writable;
  o->batch = batch;
  o->generation = ForkGeneration();
  o->exports = 0;
  o->next = -1;
  return py::reinterpret_steal<py::object>(obj);
}

std::vector<Exported>& Entries(const py::object& exporter) {
  return reinterpret_cast<ObjectBufferObject*>(exporter.ptr())->entries;
}

// The memoryview of entry `k` of `exporter`.
py::object ViewOf(const py::object& exporter, Py_ssize_t k) {
  auto* o = reinterpret_cast<ObjectBufferObject*>(exporter.ptr());
  o->next = k;
  PyObject* view = PyMemoryView_FromObject(exporter.ptr());
  o->next = -1;
  if (view == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(view);
}

// ---- ids ----

ObjectId IdOf(py::handle h) {
  static PyObject* const kIdAttr = PyUnicode_InternFromString("_id");
  PyObject* o = h.ptr();
  py::object attr;
  if (!PyBytes_Check(o)) {
    attr = py::reinterpret_steal<py::object>(PyObject_GetAttr(o, kIdAttr));
    if (!attr) {
      PyErr_Clear();
      PyErr_SetString(PyExc_TypeError, ("expected a quiver.ObjectID (or 20 bytes), got " +
                                        std::string(Py_TYPE(o)->tp_name))
                                           .c_str());
      throw py::error_already_set();
    }
    o = attr.ptr();
    if (!PyBytes_Check(o)) {
      PyErr_SetString(PyExc_TypeError, "ObjectID._id must be bytes");
      throw py::error_already_set();
    }
  }
  auto id = ObjectId::FromBinary(
      std::string_view(PyBytes_AS_STRING(o), static_cast<size_t>(PyBytes_GET_SIZE(o))));
  if (!id.ok()) Throw(id.status());
  return *id;
}

std::vector<ObjectId> IdsOf(py::handle seq) {
  std::vector<ObjectId> ids;
  py::sequence s = py::reinterpret_borrow<py::sequence>(seq);
  ids.reserve(s.size());
  for (auto item : s) ids.push_back(IdOf(item));
  return ids;
}

const char* KindName(store::ObjectEvent::Kind k) {
  switch (k) {
    case store::ObjectEvent::Kind::kSealed:
      return "sealed";
    case store::ObjectEvent::Kind::kDeleted:
      return "deleted";
    case store::ObjectEvent::Kind::kEvicted:
      return "evicted";
  }
  return "unknown";
}

// ---- _Store ----

struct PyStore {
  std::shared_ptr<Session> session;
};

template <typename F>
auto WithStore(PyStore& p, F&& f) {
  SessionUse use(*p.session);
  py::gil_scoped_release release;
  return f(p.session->Store());
}

py::object Create(PyStore& p, py::handle id_obj, uint64_t size, std::string metadata,
                  std::optional<uint32_t> node) {
  const ObjectId id = IdOf(id_obj);
  store::CreateOptions options;
  options.node = node;
  auto buf = Unwrap(WithStore(
      p, [&](store::ObjectStore& s) { return s.Create(id, size, metadata, options); }));
  py::object exporter = MakeExporter(nullptr, /*writable=*/true, /*batch=*/false);
  Entries(exporter).push_back({std::move(buf), id, false, 0});
  return ViewOf(exporter, 0);
}

void PutBytes(PyStore& p, py::handle id_obj, py::buffer data, std::string metadata,
              std::optional<uint32_t> node) {
  const ObjectId id = IdOf(id_obj);
  py::buffer_info info = data.request();
  if (info.ndim > 1 && !PyBuffer_IsContiguous(info.view(), 'C')) {
    ThrowClass("InvalidArgument", "put takes a contiguous buffer");
  }
  const auto bytes = static_cast<uint64_t>(info.size * info.itemsize);
  const auto* src = static_cast<const char*>(info.ptr);
  store::CreateOptions options;
  options.node = node;
  Status st = WithStore(p, [&](store::ObjectStore& s) -> Status {
    if (bytes + metadata.size() <= store::kMaxInlineObject) {
      return s.CreateAndSeal(id, std::string_view(src, bytes), metadata, options);
    }
    QUIVER_ASSIGN_OR_RAISE(auto buf, s.Create(id, bytes, metadata, options));
    std::memcpy(buf->mutable_data(), src, bytes);
    buf.reset();
    Status sealed = s.Seal(id);
    if (!sealed.ok()) (void)s.Abort(id);
    return sealed;
  });
  Check(st);
}

// Plasma's get: every id (waiting up to timeout_ms, < 0 for ever, in
// slices that Ctrl-C interrupts), a memoryview or None (not there in time)
// each; with_meta: (metadata, data) pairs.
py::list GetObjects(PyStore& p, py::handle ids_obj, int64_t timeout_ms, bool with_meta) {
  const std::vector<ObjectId> ids = IdsOf(ids_obj);
  std::vector<std::optional<store::ObjectBuffer>> got(ids.size());
  std::vector<size_t> pending(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) pending[i] = i;
  const SlicedWait wait(timeout_ms);
  // What this call got goes back if it fails before the exporter below
  // holds it.
  struct Undo {
    PyStore& p;
    const std::vector<ObjectId>& ids;
    std::vector<std::optional<store::ObjectBuffer>>& got;
    bool armed = true;
    ~Undo() {
      if (!armed || p.session->closed.load()) return;
      py::gil_scoped_release release;
      for (size_t i = 0; i < got.size(); ++i) {
        if (!got[i] || p.session->store == nullptr) continue;
        (void)p.session->store->Release(ids[i]);
      }
    }
  } undo{p, ids, got};
  for (;;) {
    const int64_t slice = wait.Slice();
    std::vector<ObjectId> asked;
    asked.reserve(pending.size());
    for (size_t i : pending) asked.push_back(ids[i]);
    auto r = WithStore(p, [&](store::ObjectStore& s) { return s.Get(asked, slice); });
    if (!r.ok()) Throw(r.status());
    std::vector<size_t> still;
    for (size_t k = 0; k < pending.size(); ++k) {
      store::ObjectBuffer& b = (*r)[k];
      if (b.status.ok()) {
        got[pending[k]] = std::move(b);
      } else if (b.status.IsNotFound() ||
                 b.status.code() == StatusCode::kDeadlineExceeded) {
        still.push_back(pending[k]);
      } else {
        Throw(b.status);
      }
    }
    pending = std::move(still);
    if (pending.empty() || wait.Over()) break;
    CheckSignals();
    p.session->CheckUsable();
  }
  // From here one exporter owns every reference this call got: each goes
  // back when its object's view does.
  py::object exporter = MakeExporter(&p.session, /*writable=*/false, /*batch=*/true);
  std::vector<Exported>& entries = Entries(exporter);
  entries.reserve(ids.size() * (with_meta ? 2 : 1));
  p.session->refs.Add(ids, got);
  undo.armed = false;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!got[i]) continue;
    entries.push_back({std::move(got[i]->data), ids[i], true, 0});
    if (with_meta) entries.push_back({std::move(got[i]->metadata), ids[i], false, 0});
  }
  py::list out(ids.size());
  Py_ssize_t k = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!got[i]) {
      out[i] = py::none();
      continue;
    }
    py::object data = ViewOf(exporter, k++);
    if (with_meta) {
      py::object meta = ViewOf(exporter, k++);
      out[i] = py::make_tuple(meta, data);
    } else {
      out[i] = data;
    }
  }
  return out;
}

// release(id) or release([ids]): one Get reference of each. Ids this
// client holds no reference of are NotFound, after the others are released.
void Release(PyStore& p, py::handle ids_obj) {
  const bool many = PyList_Check(ids_obj.ptr()) || PyTuple_Check(ids_obj.ptr());
  const std::vector<ObjectId> ids = many ? IdsOf(ids_obj) : std::vector{IdOf(ids_obj)};
  SessionUse use(*p.session);
  std::string missing;
  Status failed;
  const std::vector<bool> taken = p.session->refs.Take(ids);
  store::ObjectStore& store = p.session->Store();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!taken[i]) {
      missing += (missing.empty() ? "" : ", ") + ids[i].Hex();
      continue;
    }
    Status st = store.Release(ids[i]);
    if (failed.ok()) failed = st;
  }
  if (!missing.empty()) {
    ThrowClass(
        "NotFound",
        "object " + missing + " is not held by this client (no get left to release)",
        "NotFound");
  }
  Check(failed);
}

py::list ListObjects(PyStore& p) {
  auto infos = Unwrap(WithStore(p, [](store::ObjectStore& s) { return s.List(); }));
  py::list out;
  for (const auto& i : infos) {
    const double last_use =
        std::chrono::duration<double>(i.last_use.time_since_epoch()).count();
    out.append(py::make_tuple(py::bytes(i.id.Binary()), store::StateName(i.state), i.home,
                              i.data_size, i.metadata_size, i.pins, last_use));
  }
  return out;
}

py::dict Stats(PyStore& p, uint32_t node) {
  auto s = Unwrap(WithStore(p, [&](store::ObjectStore& st) { return st.Stats(node); }));
  py::dict d;
  d["node"] = s.node;
  d["creates"] = s.creates;
  d["seals"] = s.seals;
  d["aborts"] = s.aborts;
  d["deletes"] = s.deletes;
  d["hits"] = s.hits;
  d["misses"] = s.misses;
  d["evictions"] = s.evictions;
  d["evicted_bytes"] = s.evicted_bytes;
  d["objects_creating"] = s.objects_creating;
  d["bytes_creating"] = s.bytes_creating;
  d["objects_sealed"] = s.objects_sealed;
  d["bytes_sealed"] = s.bytes_sealed;
  d["objects_spilled"] = s.objects_spilled;
  d["bytes_spilled"] = s.bytes_spilled;
  d["capacity"] = s.capacity;
  d["region_used"] = s.region_used;
  return d;
}

py::dict PutTable(PyStore& p, py::handle id_obj, py::object source,
                  std::optional<uint32_t> node, uint64_t part_bytes) {
  const ObjectId id = IdOf(id_obj);
  TablePtr table = TableOfSource(source);
  store::TableOptions options;
  options.node = node;
  options.part_bytes = part_bytes;
  auto layout = Unwrap(WithStore(
      p, [&](store::ObjectStore& s) { return s.PutTable(id, *table, options); }));
  py::dict d;
  d["bytes"] = layout.bytes;
  py::list parts;
  for (const auto& part : layout.parts) parts.append(py::bytes(part.Binary()));
  d["parts"] = parts;
  d["part_homes"] = layout.part_homes;
  return d;
}

std::shared_ptr<PyTable> GetTable(PyStore& p, py::handle id_obj, int64_t timeout_ms) {
  const ObjectId id = IdOf(id_obj);
  const SlicedWait wait(timeout_ms);
  for (;;) {
    const int64_t slice = wait.Slice();
    auto r = WithStore(p, [&](store::ObjectStore& s) { return s.GetTable(id, slice); });
    if (r.ok()) return WrapTable(std::move(*r));
    const bool waiting =
        r.status().IsNotFound() || r.status().code() == StatusCode::kDeadlineExceeded;
    if (!waiting || wait.Over()) {
      Throw(r.status());
    }
    CheckSignals();
  }
}

// ---- _Subscription ----

struct PySubscription {
  std::shared_ptr<Session> session;
  std::unique_ptr<store::Subscription> sub;
  uint64_t generation = ForkGeneration();
  ~PySubscription() {
    if (Forked(generation)) (void)sub.release();
  }
};

py::list Next(PySubscription& p, int64_t timeout_ms) {
  const SlicedWait wait(timeout_ms);
  for (;;) {
    const int64_t slice = wait.Slice();
    std::optional<Result<std::vector<store::ObjectEvent>>> r;
    {
      SessionUse use(*p.session);
      py::gil_scoped_release release;
      r.emplace(p.sub->Next(slice));
    }
    if (!r->ok()) Throw(r->status());
    if (!(*r)->empty() || wait.Over()) {
      py::list out;
      for (const auto& e : **r) {
        out.append(py::make_tuple(KindName(e.kind), py::bytes(e.id.Binary()), e.home,
                                  e.seq, e.data_size, e.metadata_size));
      }
      return out;
    }
    CheckSignals();
  }
}

}  // namespace

void BindStore(py::module_& m) {
  object_buffer_type = MakeObjectBufferType();
  m.add_object("_ObjectBuffer", reinterpret_cast<PyObject*>(object_buffer_type));

  m.def("_exports", [](py::handle obj) -> int64_t {
    if (Py_TYPE(obj.ptr()) != object_buffer_type) return 0;
    return reinterpret_cast<ObjectBufferObject*>(obj.ptr())->exports;
  });
  m.def("_id_from_name", [](const std::string& name) {
    return py::bytes(ObjectId::FromName(name).Binary());
  });
  m.def("_id_from_random", [] { return py::bytes(ObjectId::FromRandom().Binary()); });

  py::class_<PyStore, std::shared_ptr<PyStore>>(m, "_Store")
      .def(py::init([](std::shared_ptr<Session> s) {
        auto p = std::make_shared<PyStore>();
        p->session = std::move(s);
        return p;
      }))
      .def("create", &Create)
      .def("seal",
           [](PyStore& p, py::handle id) {
             const ObjectId oid = IdOf(id);
             Check(WithStore(p, [&](store::ObjectStore& s) { return s.Seal(oid); }));
           })
      .def("abort",
           [](PyStore& p, py::handle id) {
             const ObjectId oid = IdOf(id);
             Check(WithStore(p, [&](store::ObjectStore& s) { return s.Abort(oid); }));
           })
      .def("put", &PutBytes)
      .def("get", &GetObjects)
      .def("release", &Release)
      .def("delete",
           [](PyStore& p, py::handle ids) {
             const auto oids = IdsOf(ids);
             Check(WithStore(p, [&](store::ObjectStore& s) { return s.Delete(oids); }));
           })
      .def("contains",
           [](PyStore& p, py::handle id) {
             const ObjectId oid = IdOf(id);
             return Unwrap(
                 WithStore(p, [&](store::ObjectStore& s) { return s.Contains(oid); }));
           })
      .def("list", &ListObjects)
      .def("evict",
           [](PyStore& p, uint64_t bytes, std::optional<uint32_t> node) {
             return Unwrap(WithStore(p, [&](store::ObjectStore& s) {
               // This process's kept pins would keep its own objects in.
               s.DropCachedPins();
               return s.Evict(bytes, node);
             }));
           })
      .def("stats", &Stats)
      .def("drop_cached_pins",
           [](PyStore& p) {
             WithStore(p, [](store::ObjectStore& s) { s.DropCachedPins(); });
           })
      .def("put_table", &PutTable)
      .def("get_table", &GetTable)
      .def("delete_table",
           [](PyStore& p, py::handle id) {
             const ObjectId oid = IdOf(id);
             Check(
                 WithStore(p, [&](store::ObjectStore& s) { return s.DeleteTable(oid); }));
           })
      .def("subscribe", [](PyStore& p, const std::string& cursor) {
        store::EventCursor from;
        if (!cursor.empty()) from = Unwrap(store::EventCursor::FromString(cursor));
        auto sub = std::make_shared<PySubscription>();
        sub->session = p.session;
        sub->sub = Unwrap(
            WithStore(p, [&](store::ObjectStore& s) { return s.Subscribe(from); }));
        return sub;
      });

  py::class_<PySubscription, std::shared_ptr<PySubscription>>(m, "_Subscription")
      .def("next", &Next)
      .def("take_lost", [](PySubscription& p) { return p.sub->TakeLost(); })
      .def_property_readonly(
          "cursor", [](PySubscription& p) { return p.sub->cursor().ToString(); });
}

}  // namespace quiver::python
