// cluster_actor: a client process the cluster tests script and kill.
//
//   cluster_actor --config F --node N [--alloc NODE:BYTES]... [--seal]
//                 [--publish NAME --rows R [--owner NODE]] [--get NAME]
//
// It connects as a client of node N, makes the allocations (printing
// "allocated NODE ADDRESS"), seals them if asked, publishes an int64 table
// of R rows (0..R-1) built in NODE's memory, gets a table and holds it, then
// prints "ready" and waits: "sum" on stdin sums what it got again ("resum
// sums=..."), "close" calls Client::Close, end of input exits normally. A
// test kills it wherever it likes.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "quiver/client.h"
#include "quiver/columnar/builder.h"

using namespace quiver;

namespace {

int Die(const std::string& what, const Status& st) {
  std::printf("error %s: %s\n", what.c_str(), st.ToString().c_str());
  std::fflush(stdout);
  return 1;
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
    Int64Builder b(c->pool(owner == ~0u ? node : owner));
    if (!b.Reserve(rows).ok()) return Die("reserve", Status::OutOfMemory("rows"));
    for (int64_t i = 0; i < rows; ++i) b.UnsafeAppend(i);
    auto col = b.Finish();
    if (!col.ok()) return Die("build", col.status());
    published = RecordBatch::FromArrays({"v"}, {*col}).ValueOrDie();
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
  std::printf("ready\n");
  std::fflush(stdout);
  char line[256];
  while (std::fgets(line, sizeof(line), stdin) != nullptr) {
    if (std::string(line) == "sum\n" && held) {
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
