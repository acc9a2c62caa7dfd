// cluster_actor: a client process the cluster tests script and kill.
//
//   cluster_actor --config F --node N [--alloc NODE:BYTES]... [--seal]
//                 [--publish NAME --rows R [--owner NODE]] [--get NAME]
//                 [--store-create NAME:BYTES[:NODE]]...
//
// It connects as a client of node N, makes the allocations (printing
// "allocated NODE ADDRESS"), seals them if asked, publishes an int64 table
// of R rows (0..R-1) built in NODE's memory, gets a table and holds it,
// creates store objects named NAME (ObjectId::FromName) without sealing them
// ("store-created NAME HOME"), then
// prints "ready" and waits: "sum" on stdin sums what it got again ("resum
// sums=..."), "close" calls Client::Close, end of input exits normally. A
// test kills it wherever it likes. Object store commands on stdin answer
// one line each, "reply ok ..." or "reply err <Code>: <message>":
//   create NAME BYTES SEED [NODE]   (writes the pattern of SEED)
//   seal|abort|release|delete|contains NAME
//   put NAME TEXT                   (CreateAndSeal, metadata "m")
//   get NAME TIMEOUT_MS SEED        ("reply ok HOME intact|corrupt"; held)
//   table NAME                      (GetTable: "reply ok rows=R sum=S")
//   lost                            ("reply ok lost=N": Client::lost_pins)
// and two of tables:
//   publish NAME ROWS AT_MS         (an int64 table 0..ROWS-1 in this node's
//                                    memory, published when the wall clock
//                                    reads AT_MS ms since the epoch)
//   unpublish NAME
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "quiver/client.h"
#include "quiver/columnar/builder.h"
#include "quiver/store.h"

using namespace quiver;

namespace {

int Die(const std::string& what, const Status& st) {
  std::printf("error %s: %s\n", what.c_str(), st.ToString().c_str());
  std::fflush(stdout);
  return 1;
}

uint8_t Pattern(uint64_t i, uint8_t seed) { return static_cast<uint8_t>(i * 31 + seed); }

std::string Err(const Status& st) {
  return std::string("err ") + StatusCodeName(st.code()) + ": " + st.message();
}

int64_t Sum(const Table& t);

// An int64 column "v" of 0..rows-1 built in `pool`.
Result<RecordBatchPtr> Counting(MemoryPool* pool, int64_t rows) {
  Int64Builder b(pool);
  QUIVER_RETURN_NOT_OK(b.Reserve(rows));
  for (int64_t i = 0; i < rows; ++i) b.UnsafeAppend(i);
  QUIVER_ASSIGN_OR_RAISE(auto col, b.Finish());
  return RecordBatch::FromArrays({"v"}, {col});
}

// A table command (see the top of the file).
std::string TableCommand(Client& c, const std::string& line) {
  std::istringstream in(line);
  std::string verb, name;
  in >> verb >> name;
  if (verb == "unpublish") {
    Status st = c.Unpublish(name);
    return st.ok() ? "ok" : Err(st);
  }
  int64_t rows = 0, at_ms = 0;
  in >> rows >> at_ms;
  auto batch = Counting(c.local_pool(), rows);
  if (!batch.ok()) return Err(batch.status());
  const auto at = std::chrono::system_clock::time_point(std::chrono::milliseconds(at_ms));
  while (std::chrono::system_clock::now() < at) {
  }
  Status st = c.Publish(*batch, name);
  return st.ok() ? "ok" : Err(st);
}

// One object store command (see the top of the file).
std::string StoreCommand(store::ObjectStore& objects, const std::string& line,
                         std::vector<store::ObjectBuffer>* held) {
  std::istringstream in(line);
  std::string verb, name;
  in >> verb >> name;
  const auto id = store::ObjectId::FromName(name);
  if (verb == "create") {
    uint64_t bytes = 0;
    int seed = 0;
    in >> bytes >> seed;
    store::CreateOptions where;
    uint32_t node = 0;
    if (in >> node) where.node = node;
    auto buf = objects.Create(id, bytes, "m", where);
    if (!buf.ok()) return Err(buf.status());
    for (uint64_t i = 0; i < bytes; ++i) {
      (*buf)->mutable_data()[i] = Pattern(i, static_cast<uint8_t>(seed));
    }
    return "ok";
  }
  if (verb == "put") {
    std::string text;
    in >> text;
    Status st = objects.CreateAndSeal(id, text, "m");
    return st.ok() ? "ok" : Err(st);
  }
  if (verb == "get") {
    int64_t timeout = 0;
    int seed = 0;
    in >> timeout >> seed;
    auto r = objects.Get({id}, timeout);
    if (!r.ok()) return Err(r.status());
    auto& o = (*r)[0];
    if (!o.status.ok()) return Err(o.status);
    bool intact = true;
    for (int64_t i = 0; i < o.data->size(); ++i) {
      intact = intact && o.data->data()[i] == Pattern(i, static_cast<uint8_t>(seed));
    }
    held->push_back(o);
    return "ok " + std::to_string(o.home) + (intact ? " intact" : " corrupt");
  }
  if (verb == "table") {
    auto t = objects.GetTable(id, 1000);
    if (!t.ok()) return Err(t.status());
    return "ok rows=" + std::to_string((*t)->num_rows()) +
           " sum=" + std::to_string(Sum(**t));
  }
  if (verb == "contains") {
    auto r = objects.Contains(id);
    if (!r.ok()) return Err(r.status());
    return *r ? "ok true" : "ok false";
  }
  Status st;
  if (verb == "seal") {
    st = objects.Seal(id);
  } else if (verb == "abort") {
    st = objects.Abort(id);
  } else if (verb == "release") {
    st = objects.Release(id);
    for (auto it = held->begin(); it != held->end(); ++it) {
      if (it->id == id) {
        held->erase(it);
        break;
      }
    }
  } else if (verb == "delete") {
    st = objects.Delete({id});
  } else {
    return "err Invalid: unknown command " + verb;
  }
  return st.ok() ? "ok" : Err(st);
}

int64_t Sum(const Table& t) {
  int64_t s = 0;
  for (const auto& c : t.column(0)->chunks()) {
    auto a = std::static_pointer_cast<Int64Array>(c);
    for (int64_t i = 0; i < a->length(); ++i) s += a->Value(i);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config, publish, get;
  uint32_t node = 0, owner = ~0u;
  int64_t rows = 1000;
  bool seal = false;
  std::vector<std::pair<uint32_t, uint64_t>> allocs;
  std::vector<std::string> creates;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--seal") {
      seal = true;
      continue;
    }
    ++i;
    if (a == "--config") {
      config = v;
    } else if (a == "--node") {
      node = static_cast<uint32_t>(std::stoul(v));
    } else if (a == "--owner") {
      owner = static_cast<uint32_t>(std::stoul(v));
    } else if (a == "--rows") {
      rows = std::stoll(v);
    } else if (a == "--publish") {
      publish = v;
    } else if (a == "--get") {
      get = v;
    } else if (a == "--store-create") {
      creates.push_back(v);
    } else if (a == "--alloc") {
      const auto colon = v.find(':');
      allocs.emplace_back(static_cast<uint32_t>(std::stoul(v.substr(0, colon))),
                          std::stoull(v.substr(colon + 1)));
    } else {
      std::fprintf(stderr, "cluster_actor: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  auto client = Client::Connect({config, node});
  if (!client.ok()) return Die("connect", client.status());
  auto& c = *client;
  std::vector<std::pair<uint32_t, uint8_t*>> made;
  for (auto [where, bytes] : allocs) {
    uint8_t* p = nullptr;
    Status st = c->pool(where)->Allocate(static_cast<int64_t>(bytes), 64, &p);
    if (!st.ok()) return Die("alloc", st);
    std::memset(p, 0x5A, bytes);
    made.emplace_back(where, p);
    std::printf("allocated %u %" PRIu64 "\n", where, reinterpret_cast<uint64_t>(p));
  }
  if (seal) {
    for (size_t i = 0; i < made.size(); ++i) {
      auto buffer = Buffer::Wrap(made[i].second, static_cast<int64_t>(allocs[i].second));
      auto data = ArrayData::Make(uint8(), allocs[i].second, {nullptr, buffer}, 0);
      auto batch = RecordBatch::Make(schema({field("b", uint8(), false)}),
                                     static_cast<int64_t>(allocs[i].second), {data});
      Status st = c->Seal(*batch);
      if (!st.ok()) return Die("seal", st);
    }
  }
  RecordBatchPtr published;
  if (!publish.empty()) {
    auto batch = Counting(c->pool(owner == ~0u ? node : owner), rows);
    if (!batch.ok()) return Die("build", batch.status());
    published = *batch;
    Status st = c->Publish(published, publish);
    if (!st.ok()) return Die("publish", st);
    std::printf("published %s\n", publish.c_str());
  }
  TablePtr held;
  if (!get.empty()) {
    auto t = c->Get(get, {30000, 1});
    if (!t.ok()) return Die("get", t.status());
    held = *t;
    std::printf("got %s sums=%" PRId64 "\n", get.c_str(), Sum(*held));
  }
  store::ObjectStore objects(*c);
  for (const auto& spec : creates) {
    const auto colon = spec.find(':');
    const auto colon2 = spec.find(':', colon + 1);
    const std::string name = spec.substr(0, colon);
    const uint64_t bytes = std::stoull(spec.substr(colon + 1, colon2 - colon - 1));
    store::CreateOptions where;
    if (colon2 != std::string::npos) {
      where.node = static_cast<uint32_t>(std::stoul(spec.substr(colon2 + 1)));
    }
    auto buf = objects.Create(store::ObjectId::FromName(name), bytes, "meta", where);
    if (!buf.ok()) return Die("store-create", buf.status());
    std::memset((*buf)->mutable_data(), 0x5A, bytes);
    auto listed = objects.List();
    uint32_t home = ~0u;
    if (listed.ok()) {
      for (const auto& o : *listed) {
        if (o.id == store::ObjectId::FromName(name)) home = o.home;
      }
    }
    std::printf("store-created %s %u\n", name.c_str(), home);
  }
  std::printf("ready\n");
  std::fflush(stdout);
  std::vector<store::ObjectBuffer> store_held;
  char line[256];
  while (std::fgets(line, sizeof(line), stdin) != nullptr) {
    std::string text(line);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (text.rfind("publish ", 0) == 0 || text.rfind("unpublish ", 0) == 0) {
      std::printf("reply %s\n", TableCommand(*c, text).c_str());
    } else if (text == "lost") {
      std::printf("reply ok lost=%" PRIu64 "\n", c->lost_pins());
    } else if (text != "sum" && text != "close") {
      std::printf("reply %s\n", StoreCommand(objects, text, &store_held).c_str());
    } else if (std::string(line) == "sum\n" && held) {
      std::printf("resum sums=%" PRId64 "\n", Sum(*held));
    } else if (std::string(line) == "close\n") {
      published.reset();
      held.reset();
      Status st = c->Close();
      std::printf("closed %s\n", st.ToString().c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}
