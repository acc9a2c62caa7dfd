// quiver ipc cat | roundtrip
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "quiver/columnar/ipc.h"
#include "quiver/columnar/pretty_print.h"

namespace quiver::cli {

namespace {

// Reads an IPC stream or file from `path` (memory-mapped: zero-copy).
struct Input {
  ipc::IpcFormat format;
  TablePtr table;
};

Result<Input> ReadInput(const std::string& path) {
  QUIVER_ASSIGN_OR_RAISE(auto data, io::MemoryMapFile(path));
  QUIVER_ASSIGN_OR_RAISE(ipc::IpcFormat format, ipc::DetectFormat(*data));
  ipc::IpcReadOptions options;
  options.validate_full = true;
  QUIVER_ASSIGN_OR_RAISE(TablePtr table, ipc::ReadTableFromBuffer(data, options));
  QUIVER_RETURN_NOT_OK(table->ValidateFull());
  return Input{format, std::move(table)};
}

void PrintRows(const Table& table, int64_t limit) {
  auto batches = table.ToRecordBatches();
  if (!batches.ok()) return;
  int64_t row = 0;
  for (const auto& batch : *batches) {
    std::vector<ArrayPtr> columns;
    for (int c = 0; c < batch->num_columns(); ++c) columns.push_back(batch->column(c));
    for (int64_t r = 0; r < batch->num_rows(); ++r, ++row) {
      if (row == limit) {
        std::printf("... (%lld more rows)\n",
                    static_cast<long long>(table.num_rows() - limit));
        return;
      }
      std::ostringstream line;
      line << row << ":";
      for (int c = 0; c < batch->num_columns(); ++c) {
        line << (c == 0 ? " " : " | ") << batch->column_name(c) << "="
             << FormatValue(*columns[c], r);
      }
      std::puts(line.str().c_str());
    }
  }
}

int Cat(Args args) {
  std::string limit_text = TakeOption(&args, "limit", "100");
  if (args.size() != 1) {
    std::fprintf(stderr, "usage: quiver ipc cat FILE [--limit N]\n");
    return kExitBadInput;
  }
  int64_t limit = 0;
  try {
    limit = std::stoll(limit_text);
  } catch (...) {
    return Fail("ipc cat", Status::Invalid("--limit '", limit_text, "' is not a number"));
  }
  auto input = ReadInput(args[0]);
  if (!input.ok()) return Fail(args[0], input.status());
  const Table& t = *input->table;
  std::printf("format: Arrow IPC %s\nrows: %lld\nschema:\n%s\n--\n",
              ipc::IpcFormatName(input->format), static_cast<long long>(t.num_rows()),
              t.schema()->ToString().c_str());
  PrintRows(t, limit);
  return kExitOk;
}

int Roundtrip(Args args) {
  std::string codec = TakeOption(&args, "compression", "none");
  if (args.size() != 2) {
    std::fprintf(stderr,
                 "usage: quiver ipc roundtrip IN OUT [--compression none|lz4|zstd]\n");
    return kExitBadInput;
  }
  auto compression = ipc::CompressionFromName(codec);
  if (!compression.ok()) return Fail("--compression", compression.status());
  auto input = ReadInput(args[0]);
  if (!input.ok()) return Fail(args[0], input.status());
  // Write beside OUT and rename over it: OUT is never left half-written, and
  // IN may be OUT (the input stays mapped until we are done).
  const std::string tmp = args[1] + ".tmp-" + std::to_string(getpid());
  auto sink = io::FileOutputStream::Open(tmp);
  if (!sink.ok()) return Fail(args[1], sink.status());
  ipc::IpcWriteOptions options = ipc::IpcWriteOptions::Defaults();
  options.compression = *compression;
  Status st = ipc::WriteTable(*input->table, input->format, sink->get(), options);
  if (st.ok()) st = (*sink)->Close();
  if (st.ok() && std::rename(tmp.c_str(), args[1].c_str()) != 0) {
    st = Status::FromErrno(errno, "renaming the output into place");
  }
  if (!st.ok()) {
    std::remove(tmp.c_str());
    return Fail(args[1], st, kExitFailed);
  }
  std::printf("%s: %lld rows, %d columns, Arrow IPC %s -> %s\n", args[0].c_str(),
              static_cast<long long>(input->table->num_rows()),
              input->table->num_columns(), ipc::IpcFormatName(input->format),
              args[1].c_str());
  return kExitOk;
}

}  // namespace

int IpcCommand(const Args& args) {
  if (args.empty()) {
    std::fprintf(stderr, "usage: quiver ipc cat|roundtrip ...\n");
    return kExitBadInput;
  }
  Args rest(args.begin() + 1, args.end());
  if (args[0] == "cat") return Cat(rest);
  if (args[0] == "roundtrip") return Roundtrip(rest);
  std::fprintf(stderr, "quiver: unknown ipc command '%s'\n", args[0].c_str());
  return kExitBadInput;
}

}  // namespace quiver::cli
