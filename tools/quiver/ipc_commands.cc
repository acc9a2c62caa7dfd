// quiver ipc cat | roundtrip
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli_parse.h"
#include "commands.h"
#include "quiver/columnar/ipc.h"
#include "quiver/columnar/pretty_print.h"

namespace quiver::cli {

namespace {

// Reads an IPC stream or file from `path` (memory-mapped: zero-copy), batch
// by batch: a round trip keeps every batch boundary, empty batches too.
struct Input {
  ipc::IpcFormat format;
  SchemaPtr schema;
  std::vector<RecordBatchPtr> batches;
  int64_t num_rows = 0;
};

Result<Input> ReadInput(const std::string& path) {
  QUIVER_ASSIGN_OR_RAISE(auto data, io::MemoryMapFile(path));
  Input in;
  QUIVER_ASSIGN_OR_RAISE(in.format, ipc::DetectFormat(*data));
  ipc::IpcReadOptions options;
  options.validate_full = true;
  QUIVER_ASSIGN_OR_RAISE(auto reader, ipc::OpenBatchReader(data, options));
  in.schema = reader->schema();
  QUIVER_ASSIGN_OR_RAISE(in.batches, reader->ReadAll());
  for (const auto& b : in.batches) {
    QUIVER_RETURN_NOT_OK(b->ValidateFull());
    in.num_rows += b->num_rows();
  }
  return in;
}

// Escape() line by line: field names come from the file.
std::string EscapeLines(const std::string& text) {
  std::string out;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find('\n', start);
    out += Escape(std::string_view(text).substr(start, end - start));
    if (end == std::string::npos) return out;
    out += '\n';
    start = end + 1;
  }
}

void PrintRows(const Input& in, int64_t limit) {
  int64_t row = 0;
  for (const auto& batch : in.batches) {
    std::vector<ArrayPtr> columns;
    for (int c = 0; c < batch->num_columns(); ++c) columns.push_back(batch->column(c));
    for (int64_t r = 0; r < batch->num_rows(); ++r, ++row) {
      if (row == limit) {
        std::printf("... (%lld more rows)\n",
                    static_cast<long long>(in.num_rows - limit));
        return;
      }
      std::ostringstream line;
      line << row << ":";
      for (int c = 0; c < batch->num_columns(); ++c) {
        line << (c == 0 ? " " : " | ") << batch->column_name(c) << "="
             << FormatValue(*columns[c], r);
      }
      std::puts(Escape(line.str()).c_str());
    }
  }
}

int Cat(const Args& in) {
  CommandLine cl("ipc cat", "FILE [--limit N]",
                 "Print the schema and rows of an Arrow IPC stream or file.");
  int64_t limit = 100;
  cl.app().add_option("--limit", limit, "rows to print at most")->capture_default_str();
  Args args;
  cl.Positionals("FILE", &args, "the Arrow IPC stream or file");
  if (auto code = cl.Parse(in)) return *code;
  if (args.size() != 1) return cl.Usage("one FILE");
  auto input = ReadInput(args[0]);
  if (!input.ok()) return Fail(args[0], input.status());
  std::printf("format: Arrow IPC %s\nrows: %lld\nbatches: %zu\nschema:\n%s\n--\n",
              ipc::IpcFormatName(input->format), static_cast<long long>(input->num_rows),
              input->batches.size(), EscapeLines(input->schema->ToString()).c_str());
  PrintRows(*input, limit);
  return kExitOk;
}

int Roundtrip(const Args& in) {
  CommandLine cl("ipc roundtrip", "IN OUT [--compression none|lz4|zstd]",
                 "Read an IPC stream or file, validate it fully, write it back in the "
                 "same format, batch for batch (empty ones too).");
  std::string codec = "none";
  cl.Text("--compression", &codec, "none, lz4 or zstd")->type_name("C");
  Args args;
  cl.Positionals("IN OUT", &args, "the file to read, the file to write");
  if (auto code = cl.Parse(in)) return *code;
  if (args.size() != 2) return cl.Usage("IN and OUT");
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
  Status st;
  auto writer = ipc::MakeWriter(input->format, sink->get(), input->schema, options);
  if (!writer.ok()) st = writer.status();
  for (size_t i = 0; st.ok() && i < input->batches.size(); ++i) {
    st = (*writer)->WriteRecordBatch(*input->batches[i]);
  }
  if (st.ok()) st = (*writer)->Close();
  if (st.ok()) st = (*sink)->Close();
  if (st.ok() && std::rename(tmp.c_str(), args[1].c_str()) != 0) {
    st = Status::FromErrno(errno, "renaming the output into place");
  }
  if (!st.ok()) {
    std::remove(tmp.c_str());
    return Fail(args[1], st, kExitFailed);
  }
  std::printf("%s: %lld rows in %zu batches, %d columns, Arrow IPC %s -> %s\n",
              Escape(args[0]).c_str(), static_cast<long long>(input->num_rows),
              input->batches.size(), input->schema->num_fields(),
              ipc::IpcFormatName(input->format), Escape(args[1]).c_str());
  return kExitOk;
}

}  // namespace

int IpcCommand(const Args& args) {
  if (!args.empty() && args[0] == "cat") return Cat(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "roundtrip") {
    return Roundtrip(Args(args.begin() + 1, args.end()));
  }
  CommandLine cl("ipc", "cat|roundtrip ...",
                 "Arrow IPC files: `quiver ipc cat --help`, `quiver ipc roundtrip "
                 "--help`.");
  Args verb;
  cl.Positionals("cat|roundtrip", &verb, "what to do");
  if (auto code = cl.Parse(args)) return *code;
  return cl.Usage(verb.empty() ? "cat or roundtrip?"
                               : "unknown ipc command '" + verb[0] + "'");
}

}  // namespace quiver::cli
