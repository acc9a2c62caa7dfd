// quiver put FILE... NAME: files loaded into cluster memory as one table
// (docs/put.md). CSV, Parquet and JSON are read by DuckDB's readers, Arrow
// IPC files by Quiver's own; Client::Load copies the rows into chunks
// spread over the nodes, and the table is published once every chunk is
// written. A bad file, a full cluster or an interrupt frees what was
// written and publishes nothing.
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "attach.h"
#include "duckdb/connection.h"
#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc.h"

namespace quiver::cli {

namespace {

enum class FileFormat { kUnknown, kCsv, kParquet, kJson, kArrow };

const char* FormatName(FileFormat f) {
  switch (f) {
    case FileFormat::kCsv:
      return "csv";
    case FileFormat::kParquet:
      return "parquet";
    case FileFormat::kJson:
      return "json";
    case FileFormat::kArrow:
      return "arrow";
    default:
      return "unknown";
  }
}

FileFormat ParseFormat(const std::string& name) {
  for (auto f :
       {FileFormat::kCsv, FileFormat::kParquet, FileFormat::kJson, FileFormat::kArrow}) {
    if (name == FormatName(f)) return f;
  }
  return FileFormat::kUnknown;
}

// The format a file's name says (compressed CSV and JSON included).
FileFormat FormatOfName(std::string path) {
  std::transform(path.begin(), path.end(), path.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* z : {".gz", ".zst"}) {
    if (EndsWith(path, z)) path.resize(path.size() - std::string(z).size());
  }
  for (const char* e : {".csv", ".tsv"}) {
    if (EndsWith(path, e)) return FileFormat::kCsv;
  }
  for (const char* e : {".parquet", ".pq"}) {
    if (EndsWith(path, e)) return FileFormat::kParquet;
  }
  for (const char* e : {".json", ".jsonl", ".ndjson"}) {
    if (EndsWith(path, e)) return FileFormat::kJson;
  }
  for (const char* e : {".arrow", ".arrows", ".ipc", ".feather"}) {
    if (EndsWith(path, e)) return FileFormat::kArrow;
  }
  return FileFormat::kUnknown;
}

// The files the arguments name, globs expanded (sorted), each checked to
// be a readable regular file.
Result<std::vector<std::string>> ExpandFiles(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const auto& arg : args) {
    std::vector<std::string> matched;
    if (arg.find_first_of("*?[") != std::string::npos) {
      glob_t g{};
      const int rc = glob(arg.c_str(), GLOB_ERR, nullptr, &g);
      for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) matched.push_back(g.gl_pathv[i]);
      globfree(&g);
      if (matched.empty()) return Status::IOError("no file matches '", arg, "'");
    } else {
      matched.push_back(arg);
    }
    for (const auto& path : matched) {
      struct stat st {};
      if (stat(path.c_str(), &st) != 0) {
        return Status::IOError(path, ": ", std::strerror(errno));
      }
      if (!S_ISREG(st.st_mode)) return Status::IOError(path, ": not a regular file");
      if (access(path.c_str(), R_OK) != 0) {
        return Status::IOError(path, ": ", std::strerror(errno));
      }
      files.push_back(path);
    }
  }
  return files;
}

// The batches of several Arrow IPC files (stream or file format, each
// memory-mapped), one after the other; their schemas must be equal.
class IpcFilesReader final : public RecordBatchReader {
 public:
  static Result<std::unique_ptr<IpcFilesReader>> Open(std::vector<std::string> files) {
    auto r = std::unique_ptr<IpcFilesReader>(new IpcFilesReader(std::move(files)));
    QUIVER_RETURN_NOT_OK(r->OpenNext());
    r->schema_ = r->current_->schema();
    return r;
  }
  SchemaPtr schema() const override { return schema_; }
  Result<RecordBatchPtr> Next() override {
    while (current_ != nullptr) {
      auto batch = current_->Next();
      if (!batch.ok()) return batch.status().WithContext(files_[index_ - 1]);
      if (*batch != nullptr) {
        Status valid = (*batch)->ValidateFull();
        if (!valid.ok()) return valid.WithContext(files_[index_ - 1]);
        return batch;
      }
      current_.reset();
      if (index_ == files_.size()) break;
      QUIVER_RETURN_NOT_OK(OpenNext());
      if (!current_->schema()->Equals(*schema_)) {
        return Status::Invalid(files_[index_ - 1], " has schema ",
                               current_->schema()->ToString(), ", unlike ", files_[0],
                               ": ", schema_->ToString());
      }
    }
    return RecordBatchPtr();
  }

 private:
  explicit IpcFilesReader(std::vector<std::string> files) : files_(std::move(files)) {}
  Status OpenNext() {
    const std::string& path = files_[index_++];
    QUIVER_ASSIGN_OR_RAISE(auto data, io::MemoryMapFile(path));
    ipc::IpcReadOptions options;
    options.validate_full = true;
    auto reader = ipc::OpenBatchReader(data, options);
    if (!reader.ok()) return reader.status().WithContext(path);
    current_ = std::move(*reader);
    return Status::OK();
  }
  std::vector<std::string> files_;
  size_t index_ = 0;
  SchemaPtr schema_;
  std::unique_ptr<RecordBatchReader> current_;
};

// A reader that remembers whether its source failed: a file that does not
// parse is bad input (exit code 2); a cluster that fails is not (1).
class WatchedReader final : public RecordBatchReader {
 public:
  explicit WatchedReader(std::shared_ptr<RecordBatchReader> source)
      : source_(std::move(source)) {}
  SchemaPtr schema() const override { return source_->schema(); }
  Result<RecordBatchPtr> Next() override {
    auto batch = source_->Next();
    // Cancelled: Load stopped the source because writing failed.
    if (!batch.ok() && batch.status().code() != StatusCode::kCancelled) failed_ = true;
    return batch;
  }
  void Cancel() override { source_->Cancel(); }
  bool failed() const { return failed_; }

 private:
  std::shared_ptr<RecordBatchReader> source_;
  std::atomic<bool> failed_{false};
};

// "1.25 GiB".
std::string BinaryBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", b, units[u]);
  return buf;
}

// One line on a terminal's stderr, redrawn at most ten times a second.
class ProgressBar {
 public:
  explicit ProgressBar(bool on) : on_(on), start_(Clock::now()) {}
  void Update(double percent, const LoadProgress& p) {
    if (!on_) return;
    const auto now = Clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    std::string bar;
    if (percent >= 0) {
      const int width = 30, done = static_cast<int>(percent / 100 * width + 0.5);
      bar = "[" + std::string(done, '#') + std::string(width - done, ' ') + "] ";
      char pct[16];
      std::snprintf(pct, sizeof(pct), "%3.0f%% ", percent);
      bar += pct;
    }
    std::fprintf(stderr, "\r%s%llu rows, %s written, %s/s\033[K", bar.c_str(),
                 static_cast<unsigned long long>(p.rows), BinaryBytes(p.bytes).c_str(),
                 BinaryBytes(secs > 0 ? p.bytes / secs : 0).c_str());
    std::fflush(stderr);
    drawn_ = true;
  }
  void Clear() {
    if (drawn_) std::fputs("\r\033[K", stderr);
    drawn_ = false;
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool on_, drawn_ = false;
  Clock::time_point start_, last_{};
};

}  // namespace

int PutCommand(const Args& in) {
  CommandLine cl("put", "[OPTIONS] FILE... NAME",
                 "Load CSV, Parquet, JSON or Arrow IPC files (globs too) into cluster "
                 "memory as one table NAME, spread over the nodes, published once "
                 "complete; an error or an interrupt leaves nothing.");
  ClusterFlags flags;
  AddClusterFlags(&cl, &flags);
  std::string format_flag;
  uint64_t chunk_bytes = 0;
  cl.Text("--format", &format_flag,
          "csv, parquet, json or arrow (default: by the files' names)")
      ->type_name("F");
  cl.Count("--chunk-size", &chunk_bytes, 1ULL << 40,
           "bytes per chunk (0: 64 MiB, at most a sixteenth of the smallest region)");
  Args positional;
  cl.Positionals("FILE... NAME", &positional, "the files, then the table's name");
  if (auto code = cl.Parse(in)) return *code;
  FileFormat format = FileFormat::kUnknown;
  if (!format_flag.empty() &&
      (format = ParseFormat(format_flag)) == FileFormat::kUnknown) {
    return Fail("put", Status::Invalid("--format '", format_flag,
                                       "' is not one of csv, parquet, json, arrow"));
  }
  if (positional.size() < 2) return cl.Usage("give the files and then the table's name");
  const std::string name = positional.back();
  positional.pop_back();
  auto files = ExpandFiles(positional);
  if (!files.ok()) return Fail("put", files.status());
  for (const auto& f : *files) {
    const FileFormat by_name = format_flag.empty() ? FormatOfName(f) : format;
    if (by_name == FileFormat::kUnknown) {
      return Fail("put", Status::Invalid(f,
                                         ": the format is not known by the file's name "
                                         "(give --format csv|parquet|json|arrow)"));
    }
    if (format != FileFormat::kUnknown && by_name != format) {
      return Fail("put", Status::Invalid(f, " is ", FormatName(by_name), " but ",
                                         (*files)[0], " is ", FormatName(format),
                                         ": one table is put from files of one format"));
    }
    format = by_name;
  }

  int code = kExitOk;
  auto attached = AttachCluster("put", flags, &code);
  if (!attached) return code;
  Client& client = *attached->client;
  Status free = client.CheckNameFree(name);
  if (!free.ok()) return Fail("put", free, kExitFailed);

  // The rows, as a reader: DuckDB streaming its reader's result, or the
  // IPC files themselves.
  std::shared_ptr<duckdb::Database> db;
  std::unique_ptr<duckdb::Connection> conn;
  std::shared_ptr<RecordBatchReader> reader;
  if (format == FileFormat::kArrow) {
    auto r = IpcFilesReader::Open(*files);
    if (!r.ok()) return Fail("put", r.status());
    reader = std::move(*r);
  } else {
    auto opened = duckdb::Database::Open();
    if (!opened.ok()) return Fail("put: DuckDB", opened.status(), kExitFailed);
    db = *opened;
    auto c = duckdb::Connection::Open(db);
    if (!c.ok()) return Fail("put: DuckDB", c.status(), kExitFailed);
    conn = std::move(*c);
    duckdb::KeepFreedMemory();
    Status ahead = conn->Execute(duckdb::kLoadSettings);
    if (!ahead.ok()) return Fail("put: DuckDB", ahead, kExitFailed);
    std::string list;
    for (const auto& f : *files)
      list += (list.empty() ? "" : ", ") + duckdb::QuoteLiteral(f);
    const char* fn = format == FileFormat::kCsv       ? "read_csv"
                     : format == FileFormat::kParquet ? "read_parquet"
                                                      : "read_json";
    auto r = conn->StreamArrow(std::string("SELECT * FROM ") + fn + "([" + list + "])");
    if (!r.ok()) return Fail("put", r.status());
    reader = *r;
  }

  CatchInterrupts();
  ProgressBar bar(isatty(fileno(stderr)) != 0);
  const auto start = std::chrono::steady_clock::now();
  LoadOptions load;
  if (attached->node_given) {
    load.nodes = {client.node_id()};
  } else {
    load.nodes = attached->running;
  }
  load.chunk_bytes = chunk_bytes;
  load.cancelled = [] { return Interrupted(); };
  load.progress = [&](const LoadProgress& p) {
    bar.Update(conn != nullptr ? conn->Progress() : -1, p);
  };
  WatchedReader watched(std::move(reader));
  auto table = client.Load(&watched, load);
  bar.Clear();
  if (!table.ok()) {
    (void)client.Close();
    if (table.status().code() == StatusCode::kCancelled) {
      std::fprintf(stderr,
                   "quiver: put: interrupted: nothing published, what was written "
                   "is freed\n");
      return 130;
    }
    return Fail("put: " + name, table.status(),
                watched.failed() ? kExitBadInput : kExitFailed);
  }
  Status st = client.Publish(*table, name);
  // What the table takes in cluster memory and where: every buffer, of
  // children and dictionaries too, each counted once.
  uint64_t bytes = 0;
  std::set<uint32_t> used;
  std::set<const uint8_t*> seen;
  auto count = [&](const Buffer& buf) {
    if (!seen.insert(buf.data()).second) return;
    bytes += static_cast<uint64_t>(buf.size());
    const auto* owner =
        client.config().NodeOfAddress(reinterpret_cast<uint64_t>(buf.data()));
    if (owner != nullptr) used.insert(owner->id);
  };
  auto batches = (*table)->ToRecordBatches();
  for (const auto& b : batches.ok() ? *batches : std::vector<RecordBatchPtr>{}) {
    for (int i = 0; i < b->num_columns(); ++i)
      ForEachBuffer(*b->column(i)->data(), count);
  }
  const size_t chunks = batches.ok() ? batches->size() : 0;
  const int64_t rows = (*table)->num_rows();
  const int columns = (*table)->num_columns();
  table->reset();
  if (!st.ok()) {
    (void)client.Close();
    return Fail("put: publishing " + name, st, kExitFailed);
  }
  (void)client.Close();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string where;
  for (uint32_t n : used) where += (where.empty() ? "" : ", ") + std::to_string(n);
  if (rows == 0) {
    std::printf("put %s: 0 rows (a table of %d columns and no rows)\n",
                Escape(name).c_str(), columns);
    return kExitOk;
  }
  std::printf("put %s: %lld rows, %s in %zu chunk%s on node%s %s (%.2f s, %s/s)\n",
              Escape(name).c_str(), static_cast<long long>(rows),
              BinaryBytes(bytes).c_str(), chunks, chunks == 1 ? "" : "s",
              used.size() == 1 ? "" : "s", where.c_str(), secs,
              BinaryBytes(secs > 0 ? bytes / secs : 0).c_str());
  return kExitOk;
}

}  // namespace quiver::cli
