// The C++ side of bench/python_bench.py: the same reads the Python
// benchmark times, done from C++ against the same running cluster, so that
// each Python figure has its C++ reference from the same run.
//
//   python_bench_ref --config C --node N [--table NAME] [--ids FILE] [--reps R]
//
// --table: Client::GetHugeTable of NAME and the address of its first
// column's values (what get() + column().to_numpy() does), R times.
// --ids: the object ids in FILE (40 hex digits a line): ObjectStore::Get of
// all of them and a Release of each, R times, first without kept pins (one
// round trip per home: a fresh store, pin cache off) and then with them
// (repeated Gets); and a Get + Release of the first id alone, many times.
// Prints one JSON object of median nanoseconds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "quiver/client.h"
#include "quiver/store.h"

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

template <typename F>
double TimeNs(F&& f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
}

int Fail(const std::string& what, const quiver::Status& st) {
  std::fprintf(stderr, "python_bench_ref: %s: %s\n", what.c_str(), st.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config, table, ids_file;
  uint32_t node = 0;
  int reps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--config") {
      config = value;
    } else if (flag == "--node") {
      node = static_cast<uint32_t>(std::stoul(value));
    } else if (flag == "--table") {
      table = value;
    } else if (flag == "--ids") {
      ids_file = value;
    } else if (flag == "--reps") {
      reps = std::stoi(value);
    } else {
      std::fprintf(stderr, "python_bench_ref: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  auto client = quiver::Client::Connect({.config_path = config, .node = node});
  if (!client.ok()) return Fail("connect", client.status());
  std::string out = "{";
  auto add = [&](const char* key, double ns) {
    if (out.size() > 1) out += ", ";
    out += "\"" + std::string(key) + "\": " + std::to_string(ns);
  };
  if (!table.empty()) {
    std::vector<double> times;
    for (int r = 0; r < reps; ++r) {
      const uint8_t* address = nullptr;
      quiver::Status st;
      times.push_back(TimeNs([&] {
        auto t = (*client)->GetHugeTable(table);
        if (!t.ok()) {
          st = t.status();
          return;
        }
        address = (*t)->column(0)->chunk(0)->data()->GetBuffer(1);
      }));
      if (!st.ok()) return Fail("get " + table, st);
      if (address == nullptr)
        return Fail("get " + table, quiver::Status::Invalid("no data"));
      (void)(*client)->Drain();
    }
    add("table_get_ns", Median(times));
  }
  if (!ids_file.empty()) {
    std::vector<quiver::store::ObjectId> ids;
    std::ifstream in(ids_file);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      auto id = quiver::store::ObjectId::FromHex(line);
      if (!id.ok()) return Fail("ids", id.status());
      ids.push_back(*id);
    }
    if (ids.empty()) {
      return Fail("ids", quiver::Status::Invalid(ids_file, " names no object id"));
    }
    auto get_all = [&](quiver::store::ObjectStore& s) -> quiver::Status {
      auto got = s.Get(ids, 0);
      if (!got.ok()) return got.status();
      for (const auto& b : *got) {
        if (!b.status.ok()) return b.status;
      }
      for (const auto& id : ids) QUIVER_RETURN_NOT_OK(s.Release(id));
      return quiver::Status::OK();
    };
    for (bool cached : {false, true}) {
      quiver::store::StoreOptions options;
      if (!cached) options.pin_cache_bytes = 0;
      quiver::store::ObjectStore s(**client, options);
      quiver::Status st = get_all(s);  // warm: the homes are known
      if (!st.ok()) return Fail("store get", st);
      std::vector<double> times;
      for (int r = 0; r < reps; ++r) {
        times.push_back(TimeNs([&] { st = get_all(s); }));
        if (!st.ok()) return Fail("store get", st);
      }
      add(cached ? "store_get_cached_ns" : "store_get_first_ns", Median(times));
      if (cached) {
        std::vector<double> one;
        const std::vector<quiver::store::ObjectId> first = {ids[0]};
        for (int r = 0; r < 5; ++r) {
          constexpr int kCalls = 20000;
          one.push_back(TimeNs([&] {
                          for (int c = 0; c < kCalls; ++c) {
                            auto got = s.Get(first, 0);
                            if (!got.ok() || !(*got)[0].status.ok()) return;
                            (void)s.Release(ids[0]);
                          }
                        }) /
                        kCalls);
        }
        add("store_get_one_ns", Median(one));
      }
    }
  }
  out += "}";
  std::printf("%s\n", out.c_str());
  return 0;
}
