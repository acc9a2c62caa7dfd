// _Session: the handle behind quiver.Client (python/quiver/_client.py).
// connect() finds a `quiver up` cluster by its state directory as the
// command line does (tools/quiver/attach.cc), with the same messages; put()
// is `quiver put`'s load (Client::Load over a reader, published only when
// complete); get() is GetHugeTable; sql() is `quiver sql` (sql.cc).
#include <pybind11/stl.h>

#include <chrono>
#include <set>

#include "arrow_py.h"
#include "control/local_cluster.h"
#include "sql.h"

namespace quiver::python {

namespace {

using Clock = std::chrono::steady_clock;

std::shared_ptr<Session> Connect(std::optional<std::string> dir,
                                 std::optional<std::string> config,
                                 std::optional<int64_t> node, int connect_timeout_ms,
                                 int call_timeout_ms) {
  InstallForkHandler();
  auto s = std::make_shared<Session>();
  s->pid = getpid();
  if (node && (*node < 0 || *node > memory::kMaxNodeId)) {
    ThrowClass("InvalidArgument", "node " + std::to_string(*node) + " is not a node id");
  }
  if (config && dir) {
    ThrowClass("InvalidArgument",
               "give a state directory (dir) or a cluster file (config), not both");
  }
  if (config) {
    s->config_path = *config;
    s->node = node ? static_cast<uint32_t>(*node) : 0;
  } else {
    s->state_dir = dir ? *dir : control::DefaultStateDir();
    std::unique_ptr<control::LocalCluster> cluster;
    Status st;
    {
      py::gil_scoped_release release;
      auto attached = control::LocalCluster::Attach(s->state_dir);
      if (attached.ok()) {
        cluster = std::move(*attached);
      } else {
        st = attached.status();
      }
    }
    if (st.IsNotFound()) {
      ThrowClass("NotFound",
                 "no cluster in " + s->state_dir + ": start one with `quiver up`",
                 "NotFound");
    }
    Check(st.WithContext(s->state_dir));
    std::vector<uint32_t> running;
    for (int i = 0; i < cluster->nodes(); ++i) {
      if (cluster->Running(i)) running.push_back(cluster->config().nodes[i].id);
    }
    if (!node) {
      if (running.empty()) {
        ThrowClass("Unavailable",
                   "no daemon of the cluster in " + s->state_dir +
                       " is running (`quiver down` cleans it up, `quiver up` starts a "
                       "new one)",
                   "Unavailable");
      }
      s->node = running[0];
    } else if (*node >= cluster->nodes() ||
               cluster->config().FindNode(static_cast<uint32_t>(*node)) == nullptr) {
      ThrowClass("InvalidArgument",
                 "no node " + std::to_string(*node) + " in the cluster in " +
                     s->state_dir + " (it has " + std::to_string(cluster->nodes()) + ")");
    } else if (!cluster->Running(static_cast<int>(*node))) {
      ThrowClass("Unavailable",
                 "the daemon of node " + std::to_string(*node) +
                     " is not running (`quiver status` shows the cluster)",
                 "Unavailable");
    } else {
      s->node = static_cast<uint32_t>(*node);
    }
    s->config_path = cluster->config_path();
    cluster->Detach();
  }
  ClientOptions options;
  options.config_path = s->config_path;
  options.node = s->node;
  options.connect_timeout_ms = connect_timeout_ms;
  options.call_timeout_ms = call_timeout_ms;
  Status st;
  {
    py::gil_scoped_release release;
    auto client = Client::Connect(options);
    if (client.ok()) {
      s->client = std::move(*client);
    } else {
      st = client.status();
    }
  }
  Check(st.WithContext("node " + std::to_string(s->node)));
  return s;
}

template <typename F>
auto Blocking(F&& f) {
  py::gil_scoped_release release;
  return f();
}

py::dict TableInfoDict(const TableInfo& t) {
  py::dict d;
  d["name"] = t.name;
  d["chunks"] = t.chunks;
  d["rows"] = t.rows;
  d["publishers"] = t.publishers;
  d["nodes"] = t.nodes;
  d["lost"] = t.lost;
  d["lost_reason"] = t.lost_reason;
  d["pins"] = t.pins;
  d["orphaned"] = t.orphaned;
  d["local_only"] = t.local_only;
  d["incomplete"] = t.incomplete;
  d["incomplete_reason"] = t.incomplete_reason;
  return d;
}

py::dict NodeStatusDict(const NodeStatus& n) {
  py::dict d;
  d["node"] = n.node;
  d["online"] = n.online;
  d["control"] = n.control;
  d["region_base"] = n.region_base;
  d["region_size"] = n.region_size;
  d["used"] = n.used;
  d["free"] = n.free;
  d["largest_free"] = n.largest_free;
  d["live_allocations"] = n.live_allocations;
  d["generation"] = n.generation;
  d["backing"] = n.backing;
  d["sessions"] = n.sessions;
  d["recovering"] = n.recovering;
  return d;
}

std::vector<TableInfo> List(Session& s) {
  SessionUse use(s);
  auto r = Blocking([&] { return use.client().List(); });
  return Unwrap(std::move(r));
}

// `quiver put`: the source read once into chunks over `nodes` (default:
// every node online), published as `name` only when all are written.
py::dict Put(Session& s, const std::string& name, py::object source,
             std::optional<std::vector<uint32_t>> nodes, uint64_t chunk_bytes) {
  SessionUse use(s);
  Client& client = use.client();
  Check(Blocking([&] { return client.CheckNameFree(name); }));
  std::shared_ptr<RecordBatchReader> reader = ReaderOfSource(source);
  LoadOptions load;
  if (nodes) {
    load.nodes = *nodes;
  } else {
    auto status = Unwrap(Blocking([&] { return client.GetClusterStatus(); }));
    for (const auto& n : status.nodes) {
      if (n.online && client.config().SharesMemory(client.node_id(), n.node)) {
        load.nodes.push_back(n.node);
      }
    }
  }
  load.chunk_bytes = chunk_bytes;
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  load.cancelled = [cancelled] { return cancelled->load(); };
  Status st;
  int64_t rows = 0;
  uint64_t bytes = 0;
  size_t chunks = 0;
  std::set<uint32_t> used;
  const auto start = Clock::now();
  RunInterruptible(
      [&] {
        auto table = client.Load(reader.get(), load);
        if (!table.ok()) {
          st = table.status();
          return;
        }
        st = client.Publish(*table, name);
        if (!st.ok()) return;
        rows = (*table)->num_rows();
        std::set<const uint8_t*> seen;
        auto batches = (*table)->ToRecordBatches();
        if (batches.ok()) chunks = batches->size();
        for (const auto& b : batches.ok() ? *batches : std::vector<RecordBatchPtr>{}) {
          for (int i = 0; i < b->num_columns(); ++i) {
            ForEachBuffer(*b->column(i)->data(), [&](const Buffer& buf) {
              if (!seen.insert(buf.data()).second) return;
              bytes += static_cast<uint64_t>(buf.size());
              const auto* owner =
                  client.config().NodeOfAddress(reinterpret_cast<uint64_t>(buf.data()));
              if (owner != nullptr) used.insert(owner->id);
            });
          }
        }
      },
      [&] {
        cancelled->store(true);
        reader->Cancel();
      });
  Check(st.ok() ? st : st.WithContext("put " + name));
  py::dict d;
  d["name"] = name;
  d["rows"] = rows;
  d["bytes"] = bytes;
  d["chunks"] = chunks;
  d["nodes"] = std::vector<uint32_t>(used.begin(), used.end());
  d["seconds"] = std::chrono::duration<double>(Clock::now() - start).count();
  return d;
}

// GetHugeTable, waiting up to wait_ms (< 0: for ever) in slices that Ctrl-C
// and close() interrupt.
std::shared_ptr<PyTable> Get(Session& s, const std::string& name, int64_t wait_ms,
                             uint32_t min_chunks) {
  const SlicedWait wait(wait_ms);
  for (;;) {
    const int64_t slice = wait.Slice();
    std::optional<Result<TablePtr>> r;
    {
      SessionUse use(s);
      GetOptions options;
      options.wait_ms = static_cast<uint32_t>(slice);
      options.min_chunks = min_chunks;
      r.emplace(Blocking([&] { return use.client().GetHugeTable(name, options); }));
    }
    if (r->ok()) return WrapTable(std::move(**r));
    const bool waiting = r->status().IsNotFound() || r->status().IsInvalid();
    if (!waiting || wait.Over()) Throw(r->status());
    CheckSignals();
  }
}

py::dict StatusOf(Session& s) {
  SessionUse use(s);
  auto st = Unwrap(Blocking([&] { return use.client().GetClusterStatus(); }));
  py::list nodes, tables;
  for (const auto& n : st.nodes) nodes.append(NodeStatusDict(n));
  for (const auto& t : st.tables) tables.append(TableInfoDict(t));
  py::dict d;
  d["nodes"] = nodes;
  d["tables"] = tables;
  d["node"] = s.node;
  d["cluster"] = use.client().config().name;
  return d;
}

}  // namespace

void BindClient(py::module_& m) {
  py::class_<Session, std::shared_ptr<Session>>(m, "_Session")
      .def_property_readonly("node", [](const Session& s) { return s.node; })
      .def_property_readonly("state_dir", [](const Session& s) { return s.state_dir; })
      .def_property_readonly("config_path",
                             [](const Session& s) { return s.config_path; })
      .def_property_readonly(
          "closed",
          [](const Session& s) { return s.closed.load() || Forked(s.generation); })
      .def_property_readonly("lost_pins",
                             [](Session& s) {
                               SessionUse use(s);
                               return use.client().lost_pins();
                             })
      .def("regions",
           [](Session& s) {
             SessionUse use(s);
             py::list out;
             for (const auto& n : use.client().config().nodes) {
               out.append(py::make_tuple(n.id, n.base, n.size));
             }
             return out;
           })
      .def("close",
           [](Session& s) {
             if (Forked(s.generation)) return;  // the parent's: nothing to do here
             py::gil_scoped_release release;
             s.Close();
           })
      .def("put", &Put, py::arg("name"), py::arg("source"), py::arg("nodes"),
           py::arg("chunk_bytes"))
      .def("get", &Get, py::arg("name"), py::arg("wait_ms"), py::arg("min_chunks"))
      .def("ls",
           [](Session& s) {
             py::list out;
             for (const auto& t : List(s)) out.append(TableInfoDict(t));
             return out;
           })
      .def("rm",
           [](Session& s, const std::string& name) {
             SessionUse use(s);
             Check(Blocking([&] { return use.client().Unpublish(name); }));
           })
      .def("status", &StatusOf)
      .def("sql", &RunSql, py::arg("query"), py::arg("allow_files"), py::arg("publish"),
           py::arg("node"));
  m.def("_connect", &Connect, py::arg("dir"), py::arg("config"), py::arg("node"),
        py::arg("connect_timeout_ms"), py::arg("call_timeout_ms"));
  m.def("_default_state_dir", &control::DefaultStateDir);
}

}  // namespace quiver::python
