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

namespace {

using store::ObjectId;

// ---- _ObjectBuffer: a buffer-protocol exporter of one object's bytes ----

struct ObjectBufferObject {
  // Constructed in place by MemoryView, destroyed by ObjectBufferDealloc.
  PyObject_HEAD std::shared_ptr<Buffer> buffer;  // the bytes (and their pin)
  std::shared_ptr<Session> session;              // set: owns a Get reference
  ObjectId id;
  bool writable;
  uint64_t generation;
  int64_t exports;  // buffer views handed out and not released yet
};

// Takes back one Get reference of `id` held by this process, if any is.
bool TakeRef(Session& s, const ObjectId& id) {
  std::lock_guard<std::mutex> lock(s.refs_mu);
  auto it = s.refs.find(id);
  if (it == s.refs.end()) return false;
  if (--it->second == 0) s.refs.erase(it);
  return true;
}

// One more Get reference of each of `ids[i]` for which `got[i]` holds.
template <typename Got>
void AddRefs(Session& s, const std::vector<ObjectId>& ids, const Got& got) {
  std::lock_guard<std::mutex> lock(s.refs_mu);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (got[i]) ++s.refs[ids[i]];
  }
}

void ObjectBufferDealloc(PyObject* self) {
  auto* o = reinterpret_cast<ObjectBufferObject*>(self);
  if (Forked(o->generation)) {
    // The parent's pin and session: leak them here (moved to the heap and
    // never freed).
    new std::shared_ptr<Buffer>(std::move(o->buffer));
    new std::shared_ptr<Session>(std::move(o->session));
  } else if (o->session != nullptr) {
    Session& s = *o->session;
    if (!s.closed.load() && TakeRef(s, o->id) && s.use_mu.try_lock_shared()) {
      if (s.store != nullptr) (void)s.store->Release(o->id);
      s.use_mu.unlock_shared();
    }
  }
  o->buffer.~shared_ptr<Buffer>();
  o->session.~shared_ptr<Session>();
  o->id.~ObjectId();
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);  // instances of heap types hold their type
}

int ObjectBufferGet(PyObject* self, Py_buffer* view, int flags) {
  auto* o = reinterpret_cast<ObjectBufferObject*>(self);
  if (Forked(o->generation)) {
    PyErr_SetString(PyExc_BufferError,
                    "this object buffer belongs to the process this one was forked from");
    view->obj = nullptr;
    return -1;
  }
  const Buffer& b = *o->buffer;
  const int rc = PyBuffer_FillInfo(view, self, const_cast<uint8_t*>(b.data()), b.size(),
                                   o->writable ? 0 : 1, flags);
  if (rc == 0) ++o->exports;
  return rc;
}

void ObjectBufferRelease(PyObject* self, Py_buffer*) {
  --reinterpret_cast<ObjectBufferObject*>(self)->exports;
}

// Made at module import (PyType_FromSpec: a heap type).
PyTypeObject* object_buffer_type = nullptr;

PyTypeObject* MakeObjectBufferType() {
  static PyType_Slot slots[] = {
      {Py_tp_dealloc, reinterpret_cast<void*>(&ObjectBufferDealloc)},
      {Py_bf_getbuffer, reinterpret_cast<void*>(&ObjectBufferGet)},
      {Py_bf_releasebuffer, reinterpret_cast<void*>(&ObjectBufferRelease)},
      {Py_tp_doc, const_cast<char*>("The bytes of one store object in cluster memory "
                                    "(read through a memoryview).")},
      {0, nullptr}};
  static PyType_Spec spec = {"quiver._quiver._ObjectBuffer",
                             static_cast<int>(sizeof(ObjectBufferObject)), 0,
                             Py_TPFLAGS_DEFAULT, slots};
  PyObject* type = PyType_FromSpec(&spec);
  if (type == nullptr) throw py::error_already_set();
  return reinterpret_cast<PyTypeObject*>(type);
}

// A memoryview of `buffer`; with `session`, the view's exporter owns one Get
// reference of `id`.
py::object MemoryView(std::shared_ptr<Buffer> buffer,
                      const std::shared_ptr<Session>* session, const ObjectId& id,
                      bool writable) {
  PyObject* obj = PyType_GenericAlloc(object_buffer_type, 0);
  if (obj == nullptr) throw py::error_already_set();
  auto* o = reinterpret_cast<ObjectBufferObject*>(obj);
  new (&o->id) ObjectId(id);
  new (&o->buffer) std::shared_ptr<Buffer>(std::move(buffer));
  new (&o->session) std::shared_ptr<Session>(session != nullptr ? *session : nullptr);
  o->writable = writable;
  o->generation = ForkGeneration();
  o->exports = 0;
  PyObject* view = PyMemoryView_FromObject(obj);
  Py_DECREF(obj);  // the view holds it
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
  return MemoryView(std::move(buf), nullptr, id, /*writable=*/true);
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
  // What this call got goes back if it fails, but for the objects whose
  // views were made (`owned` of them, in order): those views own their
  // references and give them back as they go.
  struct Undo {
    PyStore& p;
    const std::vector<ObjectId>& ids;
    std::vector<std::optional<store::ObjectBuffer>>& got;
    bool armed = true;
    bool counted = false;  // AddRefs ran: take the references back too
    size_t owned = 0;
    ~Undo() {
      if (!armed || p.session->closed.load()) return;
      py::gil_scoped_release release;
      for (size_t i = owned; i < got.size(); ++i) {
        if (!got[i] || p.session->store == nullptr) continue;
        if (counted) (void)TakeRef(*p.session, ids[i]);
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
  py::list out(ids.size());
  AddRefs(*p.session, ids, got);
  undo.counted = true;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!got[i]) {
      out[i] = py::none();
      continue;
    }
    got[i]->status = Status::OK();
    py::object data = MemoryView(got[i]->data, &p.session, ids[i], false);
    undo.owned = i + 1;  // the view owns i's reference now
    if (with_meta) {
      py::object meta = MemoryView(got[i]->metadata, nullptr, ids[i], false);
      out[i] = py::make_tuple(meta, data);
    } else {
      out[i] = data;
    }
  }
  undo.armed = false;
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
  for (const auto& id : ids) {
    if (!TakeRef(*p.session, id)) {
      missing += (missing.empty() ? "" : ", ") + id.Hex();
      continue;
    }
    Status st = p.session->Store().Release(id);
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
