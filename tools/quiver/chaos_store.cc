// The chaos worker's object store and command-line operations
// (chaos_worker.h). Every object's bytes follow from its id and its
// metadata names its size (chaos.h), so any worker verifies any object;
// tables put with PutTable carry the self-checking columns of published
// tables; `quiver put` loads a CSV file whose count and sum are known.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "chaos_worker.h"
#include "control/local_cluster.h"
#include "quiver/columnar/builder.h"

extern char** environ;

namespace quiver::cli::chaos {

namespace {

constexpr uint64_t kMaxObject = 512 << 10;
constexpr size_t kMaxStoreTables = 4;
constexpr int kToolTimeoutMs = 60000;

std::string ShortId(const store::ObjectId& id) { return id.Hex().substr(0, 12); }

void FillObject(const store::ObjectId& id, uint8_t* data, uint64_t size) {
  const uint64_t prefix = id.Prefix();
  for (uint64_t i = 0; i < size; ++i) data[i] = ObjectByteAt(prefix, i);
}

struct ToolRun {
  int code = -1;  // exit code, 128 + signal, -1 not started
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs `argv` with stdout and stderr into files under `dir`, killing it
// after kToolTimeoutMs. The tool dies with this worker (PR_SET_PDEATHSIG):
// a worker SIGKILLed by the soak takes its `quiver put` with it, and none
// outlives the run.
ToolRun RunTool(const std::vector<std::string>& argv_in, const std::string& dir,
                const std::string& tag) {
  ToolRun r;
  const std::string out = dir + "/" + tag + ".out", err = dir + "/" + tag + ".err";
  std::vector<std::string> a = argv_in;
  std::vector<char*> argv;
  for (auto& x : a) argv.push_back(x.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    r.err = std::string("cannot start ") + argv[0];
    return r;
  }
  if (pid == 0) {
    // Only async-signal-safe calls until exec: the worker has threads.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    const int in = open("/dev/null", O_RDONLY);
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || o < 0 || e < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) {
      _exit(127);
    }
    execve(argv[0], argv.data(), environ);
    _exit(127);
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(kToolTimeoutMs);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = Slurp(out);
  r.err = Slurp(err);
  unlink(out.c_str());
  unlink(err.c_str());
  return r;
}

// The first line of a tool's stderr (its clear message), or a note that
// there was none.
std::string FirstLine(const std::string& text) {
  const std::string line = text.substr(0, text.find('\n'));
  return line.empty() ? "(no message on stderr)" : line;
}

}  // namespace

Outcome Worker::VerifyObject(const store::ObjectBuffer& got, uint64_t expected_size) {
  const std::string id = ShortId(got.id);
  if (!got.status.ok()) return Outcome::Err(got.status, id);
  if (got.data == nullptr || got.metadata == nullptr) {
    return Outcome::Wrong("a found object without buffers", id);
  }
  const std::string_view md(reinterpret_cast<const char*>(got.metadata->data()),
                            static_cast<size_t>(got.metadata->size()));
  const auto size = ParseObjectMetadata(md);
  if (!size || *size != expected_size ||
      static_cast<uint64_t>(got.data->size()) != expected_size) {
    return Outcome::Wrong("size: expected " + std::to_string(expected_size) +
                              ", got data of " + std::to_string(got.data->size()) +
                              " bytes and metadata '" + Escape(md.substr(0, 40)) + "'",
                          id);
  }
  const uint8_t* data = got.data->data();
  const uint64_t prefix = got.id.Prefix();
  for (uint64_t i = 0; i < expected_size; ++i) {
    if (data[i] != ObjectByteAt(prefix, i)) {
      uint64_t wrong = 0;
      for (uint64_t j = i; j < expected_size; ++j)
        wrong += data[j] != ObjectByteAt(prefix, j);
      return Outcome::Wrong(
          "byte " + std::to_string(i) + " of " + std::to_string(expected_size) +
              ": expected " + std::to_string(ObjectByteAt(prefix, i)) + ", got " +
              std::to_string(data[i]) + " (home node " + std::to_string(got.home) +
              ", at " + Where(data + i) + "); " + std::to_string(wrong) + " bytes wrong",
          id);
    }
  }
  return Outcome::Ok(id + " size=" + std::to_string(expected_size));
}

Outcome Worker::StorePut() {
  const auto id = store::ObjectId::FromName("chaos-" + std::to_string(options_.id) + "-" +
                                            std::to_string(++counter_));
  const uint64_t size = LogUniform(1, kMaxObject);
  const std::string md = ObjectMetadata(size);
  const std::string what = ShortId(id) + " size=" + std::to_string(size);
  store::CreateOptions co;
  if (Chance(0.3)) co.node = RandomNode();
  own_objects_.push_back(id);  // before: a failed call may have made it
  if (size + md.size() <= store::kMaxInlineObject && Chance(0.5)) {
    std::string data(size, '\0');
    FillObject(id, reinterpret_cast<uint8_t*>(data.data()), size);
    Status st = store_->CreateAndSeal(id, data, md, co);
    if (!st.ok()) return Outcome::Err(st, what + " CreateAndSeal");
  } else {
    auto buf = store_->Create(id, size, md, co);
    if (!buf.ok()) return Outcome::Err(buf.status(), what + " Create");
    FillObject(id, (*buf)->mutable_data(), size);
    buf->reset();
    Status st = store_->Seal(id);
    if (!st.ok()) {
      (void)store_->Abort(id);
      return Outcome::Err(st, what + " Seal");
    }
  }
  auto got = store_->Get({id}, 0);
  if (!got.ok()) return Outcome::Err(got.status(), what + " Get");
  Outcome o = VerifyObject((*got)[0], size);
  got->clear();
  (void)store_->Release(id);
  return o;
}

Outcome Worker::StoreGet() {
  std::vector<store::ObjectId> ids;
  if (!own_objects_.empty() && Chance(0.3)) {
    ids.push_back(own_objects_[Uniform(0, own_objects_.size() - 1)]);
  } else {
    auto listed = store_->List();
    if (!listed.ok()) return Outcome::Err(listed.status(), "List");
    for (const auto& o : *listed) {
      if (o.state != store::ObjectState::kCreating) ids.push_back(o.id);
    }
  }
  if (ids.empty()) return Outcome::Skip();
  const store::ObjectId id = ids[Uniform(0, ids.size() - 1)];
  auto got = store_->Get({id}, 0);
  if (!got.ok()) return Outcome::Err(got.status(), ShortId(id));
  const store::ObjectBuffer& b = (*got)[0];
  Outcome o = Outcome::Skip();  // PutTable's objects are checked by StoreTable
  if (!b.status.ok()) {
    o = Outcome::Err(b.status, ShortId(id));
  } else if (b.metadata != nullptr) {
    const std::string_view md(reinterpret_cast<const char*>(b.metadata->data()),
                              static_cast<size_t>(b.metadata->size()));
    if (auto size = ParseObjectMetadata(md)) o = VerifyObject(b, *size);
  }
  got->clear();
  (void)store_->Release(id);
  return o;
}

Outcome Worker::StoreDelete() {
  if (!own_store_tables_.empty() && (own_objects_.empty() || Chance(0.2))) {
    const std::string name = own_store_tables_.front();
    own_store_tables_.pop_front();
    Status st = store_->DeleteTable(store::ObjectId::FromName(name));
    if (st.IsUnavailable() || st.IsObjectLost()) own_store_tables_.push_back(name);
    return st.ok() ? Outcome::Ok(name) : Outcome::Err(st, name);
  }
  if (own_objects_.empty()) return Outcome::Skip();
  const store::ObjectId id = own_objects_.front();
  own_objects_.pop_front();
  Status st = store_->Delete({id});
  // A home that is down: try again later.
  if (st.IsUnavailable() || st.IsObjectLost() || st.IsDeadlineExceeded()) {
    own_objects_.push_back(id);
  }
  return st.ok() ? Outcome::Ok(ShortId(id)) : Outcome::Err(st, ShortId(id));
}

Outcome Worker::StoreTable() {
  const uint64_t rows = LogUniform(1, 50000);
  const std::string name = "c-" + std::to_string(options_.id) + "-" +
                           std::to_string(++counter_) + "-r" + std::to_string(rows);
  const auto what = ParseTableName(name);
  const uint64_t tag = NameTag(name);
  // Built on the heap: PutTable copies it into cluster memory as IPC.
  std::vector<RecordBatchPtr> batches;
  const uint64_t n = Uniform(1, std::min<uint64_t>(2, rows));
  for (uint64_t b = 0; b < n; ++b) {
    const uint64_t first = rows * b / n, end = rows * (b + 1) / n;
    Int64Builder v;
    StringBuilder s;
    for (uint64_t row = first; row < end; ++row) {
      (void)v.Append(ValueAt(tag, row));
      (void)(TextNullAt(tag, row) ? s.AppendNull() : s.Append(TextAt(tag, row)));
    }
    auto batch = RecordBatch::FromArrays(
        {"v", "s"}, {v.Finish().ValueOrDie(), s.Finish().ValueOrDie()});
    if (!batch.ok()) return Outcome::Err(batch.status(), name);
    batches.push_back(std::move(*batch));
  }
  auto table = Table::FromRecordBatches(batches);
  if (!table.ok()) return Outcome::Err(table.status(), name);
  const auto id = store::ObjectId::FromName(name);
  store::TableOptions to;
  if (Chance(0.3)) to.part_bytes = 64 << 10;  // in parts, over several nodes
  own_store_tables_.push_back(name);
  while (own_store_tables_.size() > kMaxStoreTables) {
    (void)store_->DeleteTable(store::ObjectId::FromName(own_store_tables_.front()));
    own_store_tables_.pop_front();
  }
  auto layout = store_->PutTable(id, **table, to);
  if (!layout.ok()) return Outcome::Err(layout.status(), name + " PutTable");
  const std::string detail = name + " parts=" + std::to_string(layout->parts.size()) +
                             " bytes=" + std::to_string(layout->bytes);
  auto got = store_->GetTable(id);
  if (!got.ok()) return Outcome::Err(got.status(), detail + " GetTable");
  std::vector<control::PositionedChunk> chunks;
  Outcome o = TableChunks(name, *what, **got, &chunks);
  if (!o.status.ok() || !o.wrong.empty()) return o;
  std::string wrong = Verify(name, *what, chunks);
  if (!wrong.empty()) return Outcome::Wrong(wrong, detail);
  chunks.clear();
  got->reset();
  if (Chance(0.5)) {
    Status st = store_->DeleteTable(id);
    if (st.ok()) own_store_tables_.pop_back();
  }
  return Outcome::Ok(detail);
}

void Worker::RunCli() {
  const std::string name =
      "cli-" + std::to_string(options_.id) + "-" + std::to_string(++counter_);
  const uint64_t rows = Uniform(1, 2000);
  const uint64_t tag = NameTag(name);
  int64_t sum = 0;
  const std::string csv = options_.work_dir + "/" + name + ".csv";
  {
    std::ofstream f(csv);
    f << "x,y\n";
    for (uint64_t i = 0; i < rows; ++i) {
      const int64_t x = static_cast<int64_t>(Mix64(tag + i) % 2000001) - 1000000;
      sum += x;
      f << x << ",w" << i << "\n";
    }
    if (!f) {
      Timed("cli.put", name,
            [&] { return Outcome::Err(Status::IOError("cannot write ", csv), name); });
      return;
    }
  }
  const std::string quiver = control::ExecutablePath();
  const std::string& dir = options_.state_dir;
  bool put = false;
  Timed("cli.put", name, [&] {
    ToolRun r =
        RunTool({quiver, "put", "--dir", dir, csv, name}, options_.work_dir, name);
    put = r.code == 0;
    return put ? Outcome::Ok(name)
               : Outcome::Exit(r.code, name + ": " + FirstLine(r.err));
  });
  unlink(csv.c_str());
  if (!put) return;
  Timed("cli.sql", name, [&] {
    ToolRun r = RunTool({quiver, "sql", "--dir", dir, "--format", "csv",
                         "SELECT count(*), sum(x) FROM \"" + name + "\""},
                        options_.work_dir, name);
    if (r.code != 0) return Outcome::Exit(r.code, name + ": " + FirstLine(r.err));
    // The header, then "count,sum".
    std::string last;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) last = line;
    }
    const std::string expected = std::to_string(rows) + "," + std::to_string(sum);
    if (last != expected) {
      return Outcome::Wrong(
          "count,sum: expected " + expected + ", got '" + Escape(last) + "'", name);
    }
    return Outcome::Ok(name);
  });
  Timed("cli.rm", name, [&] {
    ToolRun r = RunTool({quiver, "rm", "--dir", dir, name}, options_.work_dir, name);
    if (r.code == 0) return Outcome::Ok(name);
    // Left published: its publisher (the put) is gone, so we may unpublish
    // it later (the orphan sweep leaves the command line's tables alone).
    own_tables_.push_back(name);
    return Outcome::Exit(r.code, name + ": " + FirstLine(r.err));
  });
}

}  // namespace quiver::cli::chaos
