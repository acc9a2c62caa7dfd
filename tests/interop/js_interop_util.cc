#include "js_interop_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cerrno>
#include <filesystem>
#include <sstream>

namespace quiver::interop::js {

namespace fs = std::filesystem;

namespace {

// Single-quotes `s` for /bin/sh.
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

CommandResult RunNodeScript(const std::string& script, const std::string& arg) {
  const std::string command = "cd " + ShellQuote(QUIVER_SOURCE_DIR) +
                              " && node tests/interop/js/" + script + " " +
                              ShellQuote(arg) + " 2>&1";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    result.output = "popen failed for: " + command;
    return result;
  }
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), pipe)) > 0) result.output.append(chunk, n);
  const int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (result.exit_code == 127) {
    result.output += "\n(exit 127: is node on PATH? The Arrow JS interop tests need it.)";
  }
  return result;
}

std::vector<std::string> CheckArrowJsBanner(const std::string& output) {
  std::istringstream lines(output);
  std::string first;
  std::getline(lines, first);
  std::istringstream words(first);
  std::string tag, version, dir;
  words >> tag >> version >> dir;
  std::vector<std::string> problems;
  if (tag != "apache-arrow" || version.empty() || dir.empty()) {
    problems.push_back(
        "the script did not report the apache-arrow it loaded; first line: '" + first +
        "'");
    return problems;
  }
  if (version != kPinnedArrowJsVersion) {
    problems.push_back("node loaded apache-arrow " + version + ", the tests pin " +
                       kPinnedArrowJsVersion);
  }
  auto pinned = ReadJsonFile(std::string(QUIVER_SOURCE_DIR) + "/package.json");
  if (!pinned.ok() || (*pinned)["dependencies"].value("apache-arrow", "") != version) {
    problems.push_back("package.json does not pin apache-arrow " + version);
  }
  std::error_code ec;
  const fs::path expected_dir = fs::weakly_canonical(
      fs::path(QUIVER_SOURCE_DIR) / "node_modules" / "apache-arrow", ec);
  if (fs::weakly_canonical(dir, ec) != expected_dir) {
    problems.push_back("apache-arrow was loaded from " + dir + ", not from " +
                       expected_dir.string());
  }
  return problems;
}

Result<TempDir> TempDir::Make(const std::string& prefix) {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string pattern = (base / (prefix + "-XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return Status::FromErrno(errno, "mkdtemp " + pattern);
  }
  return TempDir(pattern);
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  if (keep_) {
    fprintf(stderr, "interop files kept in %s\n", path_.c_str());
    return;
  }
  std::error_code ec;
  fs::remove_all(path_, ec);
}

Status WriteCase(const InteropCase& c, ipc::IpcFormat format, const std::string& path,
                 ipc::WriteStats* stats) {
  QUIVER_ASSIGN_OR_RAISE(auto sink, io::FileOutputStream::Open(path));
  ipc::IpcWriteOptions options;
  options.alignment = c.alignment;
  options.write_legacy_format = c.legacy_format;
  QUIVER_ASSIGN_OR_RAISE(auto writer,
                         ipc::MakeWriter(format, sink.get(), c.schema, options));
  for (const RecordBatchPtr& batch : c.batches) {
    QUIVER_RETURN_NOT_OK(writer->WriteRecordBatch(*batch));
  }
  QUIVER_RETURN_NOT_OK(writer->Close());
  *stats = writer->stats();
  return sink->Close();
}

Result<ReadResult> ReadIpcFile(const std::string& path, ipc::IpcFormat format) {
  QUIVER_ASSIGN_OR_RAISE(std::shared_ptr<Buffer> data, io::MemoryMapFile(path));
  ipc::IpcReadOptions options;
  options.validate_full = true;
  ReadResult out;
  if (format == ipc::IpcFormat::kStream) {
    QUIVER_ASSIGN_OR_RAISE(auto reader,
                           ipc::RecordBatchStreamReader::Open(data, options));
    out.schema = reader->schema();
    while (true) {
      QUIVER_ASSIGN_OR_RAISE(RecordBatchPtr batch, reader->Next());
      if (batch == nullptr) break;
      out.batches.push_back(std::move(batch));
    }
    out.stats = reader->stats();
  } else {
    QUIVER_ASSIGN_OR_RAISE(auto reader, ipc::RecordBatchFileReader::Open(data, options));
    out.schema = reader->schema();
    for (int i = 0; i < reader->num_record_batches(); ++i) {
      QUIVER_ASSIGN_OR_RAISE(RecordBatchPtr batch, reader->ReadRecordBatch(i));
      out.batches.push_back(std::move(batch));
    }
  }
  for (size_t b = 0; b < out.batches.size(); ++b) {
    Status st = out.batches[b]->ValidateFull();
    if (!st.ok()) {
      return Status::Invalid("batch ", b, " of ", path,
                             " fails ValidateFull: ", st.message());
    }
  }
  return out;
}

std::vector<std::string> CompareSchema(const Json& expected, const Schema& actual,
                                       const std::string& where) {
  std::vector<std::string> problems;
  const Json got = SchemaToJson(actual);
  const Json& want_fields = expected["fields"];
  if (want_fields.size() != got["fields"].size()) {
    problems.push_back(where + " schema: expected " + std::to_string(want_fields.size()) +
                       " fields, got " + std::to_string(got["fields"].size()) + ": " +
                       actual.ToString());
    return problems;
  }
  for (size_t c = 0; c < want_fields.size(); ++c) {
    for (const char* key : {"name", "type", "nullable", "metadata"}) {
      std::string d = FirstDifference(want_fields[c][key], got["fields"][c][key]);
      if (!d.empty()) {
        problems.push_back(where + " schema field=" + std::to_string(c) + " (" +
                           want_fields[c]["name"].get<std::string>() + "): " + key + " " +
                           d);
      }
    }
  }
  std::string d = FirstDifference(expected["metadata"], got["metadata"]);
  if (!d.empty()) problems.push_back(where + " schema metadata " + d);
  return problems;
}

namespace {

constexpr size_t kMaxProblems = 25;

void CompareColumn(const Json& want, const Array& column, const std::string& where,
                   std::vector<std::string>* problems) {
  auto got = CanonicalColumn(column);
  if (!got.ok()) {
    problems->push_back(where + ": cannot canonicalise: " + got.status().message());
    return;
  }
  if (want.size() != got->size()) {
    problems->push_back(where + ": expected " + std::to_string(want.size()) +
                        " rows, got " + std::to_string(got->size()));
    return;
  }
  for (size_t r = 0; r < want.size() && problems->size() < kMaxProblems; ++r) {
    std::string d = FirstDifference(want[r], (*got)[r]);
    if (!d.empty()) problems->push_back(where + " row=" + std::to_string(r) + ": " + d);
  }
}

}  // namespace

std::vector<std::string> CompareBatches(const Json& expected,
                                        const std::vector<RecordBatchPtr>& batches,
                                        const Schema& schema, const std::string& where) {
  std::vector<std::string> problems;
  if (expected.size() != batches.size()) {
    problems.push_back(where + ": expected " + std::to_string(expected.size()) +
                       " record batches, got " + std::to_string(batches.size()));
    return problems;
  }
  for (size_t b = 0; b < batches.size(); ++b) {
    const std::string at = where + " batch=" + std::to_string(b);
    const int64_t rows = expected[b]["length"].get<int64_t>();
    if (batches[b]->num_rows() != rows) {
      problems.push_back(at + ": expected " + std::to_string(rows) + " rows, got " +
                         std::to_string(batches[b]->num_rows()));
      continue;
    }
    const Json& columns = expected[b]["columns"];
    if (static_cast<int>(columns.size()) != batches[b]->num_columns()) {
      problems.push_back(at + ": expected " + std::to_string(columns.size()) +
                         " columns, got " + std::to_string(batches[b]->num_columns()));
      continue;
    }
    for (int c = 0; c < batches[b]->num_columns(); ++c) {
      CompareColumn(
          columns[static_cast<size_t>(c)], *batches[b]->column(c),
          at + " column=" + std::to_string(c) + " (" + schema.field(c)->name() + ")",
          &problems);
    }
  }
  return problems;
}

}  // namespace quiver::interop::js
