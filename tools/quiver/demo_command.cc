// quiver demo: a generated table round-tripped through Arrow IPC (stream
// and file, zero-copy reads) and through DuckDB (C Stream Interface both
// ways), with every figure checked against values computed while
// generating. Exit 1 on any mismatch.
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "cli_parse.h"
#include "commands.h"
#include "demo_duckdb.h"
#include "demo_table.h"
#include "quiver/columnar/ipc.h"

namespace quiver::cli {

namespace {

template <typename F>
auto Timed(double* seconds, F&& f) {
  auto start = std::chrono::steady_clock::now();
  auto r = f();
  *seconds = Seconds(std::chrono::steady_clock::now() - start);
  return r;
}

void Step(const char* what, double seconds, const std::string& detail) {
  std::printf("  %-34s %10.3f ms   %s\n", what, seconds * 1e3, detail.c_str());
  std::fflush(stdout);
}

std::string Megabytes(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// Counts the buffers of `table` and how many lie inside `input`.
std::pair<int64_t, int64_t> CountAliasing(const Table& table, const Buffer& input) {
  int64_t total = 0, inside = 0;
  auto visit = [&](const Buffer& b) {
    ++total;
    inside +=
        (b.data() >= input.data() && b.data() + b.size() <= input.data() + input.size())
            ? 1
            : 0;
  };
  for (const auto& col : table.columns()) {
    for (const auto& chunk : col->chunks()) ForEachBuffer(*chunk->data(), visit);
  }
  return {total, inside};
}

// Writes `table` in `format` into memory, reads it back zero-copy and
// checks it. Returns false on any mismatch.
bool IpcRoundTrip(const Table& table, ipc::IpcFormat format, const std::string& path) {
  double t = 0;
  auto out = Timed(&t, [&]() -> Result<std::shared_ptr<Buffer>> {
    if (path.empty()) return ipc::SerializeTable(table, format);
    QUIVER_ASSIGN_OR_RAISE(auto sink, io::FileOutputStream::Open(path));
    QUIVER_RETURN_NOT_OK(ipc::WriteTable(table, format, sink.get()));
    QUIVER_RETURN_NOT_OK(sink->Close());
    return io::MemoryMapFile(path);
  });
  const std::string name = std::string("IPC ") + ipc::IpcFormatName(format);
  if (!out.ok()) return Fail(name + " write", out.status()) == 0;
  const Buffer& bytes = **out;
  char detail[160];
  std::snprintf(detail, sizeof(detail), "%s, %.2f GB/s%s%s",
                Megabytes(bytes.size()).c_str(),
                static_cast<double>(bytes.size()) / t / 1e9, path.empty() ? "" : " -> ",
                path.c_str());
  Step((name + " write").c_str(), t, detail);
  auto back = Timed(&t, [&] { return ipc::ReadTableFromBuffer(*out); });
  if (!back.ok()) return Fail(name + " read", back.status()) == 0;
  auto [total, inside] = CountAliasing(**back, bytes);
  const bool equal = (*back)->Equals(table, /*check_metadata=*/true);
  Status valid = (*back)->ValidateFull();
  std::snprintf(detail, sizeof(detail),
                "%lld of %lld buffers point into the %s; equal: %s; ValidateFull: %s",
                static_cast<long long>(inside), static_cast<long long>(total),
                path.empty() ? "stream buffer" : "mapped file", equal ? "yes" : "NO",
                valid.ok() ? "ok" : valid.ToString().c_str());
  Step((name + " read (zero-copy)").c_str(), t, detail);
  return equal && valid.ok() && inside == total;
}

}  // namespace

int DemoCommand(const Args& in) {
  CommandLine cl("interop-demo", "[--rows N]",
                 "Build a table, round-trip it through Arrow IPC and DuckDB, print what "
                 "happened.");
  uint64_t rows_flag = 1000000;
  cl.Count("--rows", &rows_flag, 1ULL << 40, "rows of the table");
  if (auto code = cl.Parse(in)) return *code;
  const auto rows = static_cast<int64_t>(rows_flag);
  std::printf("quiver demo: %lld rows, 8 columns, through Arrow IPC and DuckDB\n\n",
              static_cast<long long>(rows));
  DemoExpect expect;
  double t = 0;
  auto table = Timed(&t, [&] { return MakeDemoTable(rows, 1 << 17, &expect); });
  if (!table.ok()) return Fail("building the table", table.status(), kExitFailed);
  Step("build (Quiver builders)", t,
       std::to_string((*table)->column(0)->num_chunks()) + " record batches");
  std::printf("\nschema:\n%s\n\n", (*table)->schema()->ToString().c_str());
  bool ok = IpcRoundTrip(**table, ipc::IpcFormat::kStream, "");
  const std::string path = "/tmp/quiver-demo-" + std::to_string(getpid()) + ".arrow";
  ok = IpcRoundTrip(**table, ipc::IpcFormat::kFile, path) && ok;
  std::remove(path.c_str());
  ok = DuckDbRoundTrip(*table, expect) && ok;
  std::printf("\n%s\n", ok ? "demo passed: every check agreed"
                           : "demo FAILED: see the lines marked NO / MISMATCH above");
  return ok ? kExitOk : kExitFailed;
}

}  // namespace quiver::cli
