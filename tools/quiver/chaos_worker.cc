// `quiver chaos-worker`: one client of one node looping seeded random
// operations -- publish, read, hold, unpublish, the object store and the
// command line (chaos_store.cc) -- and reporting each outcome on stdout.
// Every value read is checked against the table's name (chaos.h): a
// mismatch is reported WRONG with the row, the column, what was expected,
// what was found and whose region the buffer lies in.
#include "chaos_worker.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <thread>

#include "quiver/columnar/builder.h"

namespace quiver::cli::chaos {

bool Emit(const std::string& line) {
  const std::string text = line + "\n";
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

namespace {

// Keep at most this many of our own tables and holds at once.
constexpr size_t kMaxOwnTables = 24;
constexpr size_t kMaxHolds = 4;
constexpr uint64_t kMaxRows = 200000;

// A batch of rows [first, first + n) of the table tagged `tag`: column `v`
// in `v_pool`'s memory, column `s` in `s_pool`'s.
Result<RecordBatchPtr> BuildBatch(uint64_t tag, uint64_t first, uint64_t n,
                                  MemoryPool* v_pool, MemoryPool* s_pool) {
  Int64Builder v(v_pool);
  StringBuilder s(s_pool);
  QUIVER_RETURN_NOT_OK(v.Reserve(static_cast<int64_t>(n)));
  QUIVER_RETURN_NOT_OK(s.Reserve(static_cast<int64_t>(n)));
  QUIVER_RETURN_NOT_OK(s.ReserveData(static_cast<int64_t>(n) * 20));
  for (uint64_t row = first; row < first + n; ++row) {
    v.UnsafeAppend(ValueAt(tag, row));
    QUIVER_RETURN_NOT_OK(TextNullAt(tag, row) ? s.AppendNull()
                                              : s.Append(TextAt(tag, row)));
  }
  QUIVER_ASSIGN_OR_RAISE(auto va, v.Finish());
  QUIVER_ASSIGN_OR_RAISE(auto sa, s.Finish());
  return RecordBatch::FromArrays({"v", "s"}, {va, sa});
}

std::string Hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%" PRIxPTR, reinterpret_cast<uintptr_t>(p));
  return buf;
}

}  // namespace

Worker::Worker(const WorkerOptions& options, std::atomic<bool>* stop)
    : options_(options), stop_(stop), random_(Mix64(options.seed)) {}

Worker::~Worker() {
  holds_.clear();
  store_.reset();
  if (client_) (void)client_->Close();
}

uint64_t Worker::Uniform(uint64_t lo, uint64_t hi) {
  return std::uniform_int_distribution<uint64_t>(lo, hi)(random_);
}

uint64_t Worker::LogUniform(uint64_t lo, uint64_t hi) {
  std::uniform_real_distribution<double> d(std::log(static_cast<double>(lo)),
                                           std::log(static_cast<double>(hi) + 1));
  return std::clamp(static_cast<uint64_t>(std::exp(d(random_))), lo, hi);
}

bool Worker::Chance(double p) { return std::bernoulli_distribution(p)(random_); }

uint32_t Worker::RandomNode() {
  const auto& nodes = client_->config().nodes;
  return nodes[Uniform(0, nodes.size() - 1)].id;
}

std::string Worker::Where(const void* p) const {
  const auto* n = client_->config().NodeOfAddress(reinterpret_cast<uint64_t>(p));
  return n == nullptr ? "outside every region" : "node " + std::to_string(n->id);
}

void Worker::Connect() {
  while (!stop_->load() && client_ == nullptr) {
    Timed("connect", "node " + std::to_string(options_.node), [&] {
      ClientOptions o;
      o.config_path = options_.config;
      o.node = options_.node;
      o.connect_timeout_ms = 10000;
      auto c = Client::Connect(o);
      if (!c.ok()) return Outcome::Err(c.status());
      client_ = std::move(*c);
      return Outcome::Ok();
    });
    if (client_ == nullptr) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  if (client_ != nullptr) {
    store::StoreOptions so;
    so.prefault_ahead = 8ULL << 20;  // a little: many short-lived processes on 2 cores
    store_ = std::make_unique<store::ObjectStore>(*client_, so);
  }
}

int Worker::Run() {
  Emit("hello\t" + std::to_string(getpid()));
  next_cli_ = Clock::now() + std::chrono::milliseconds(Uniform(1000, 3000));
  Connect();
  while (!stop_->load()) {
    RunOne();
    std::this_thread::sleep_for(std::chrono::milliseconds(Uniform(0, 5)));
  }
  ReleaseHolds(/*all=*/true);
  Emit("bye");
  return kExitOk;
}

void Worker::RunOne() {
  ReleaseHolds(/*all=*/false);
  if (options_.plant_wrong && !planted_ && !own_tables_.empty()) {
    Timed("read", "planted", [&] { return Read(false); });
    return;
  }
  if (own_tables_.size() > kMaxOwnTables) {
    Timed("unpublish", "", [&] { return Unpublish(); });
    return;
  }
  if (own_objects_.size() > 16) {
    Timed("store.delete", "", [&] { return StoreDelete(); });
    return;
  }
  if (options_.cli && Clock::now() >= next_cli_) {
    RunCli();
    next_cli_ = Clock::now() + std::chrono::milliseconds(Uniform(3000, 6000));
    return;
  }
  const uint64_t pick = Uniform(0, 99);
  if (pick < 22) {
    Timed("publish", "", [&] { return Publish(); });
  } else if (pick < 50) {
    Timed("read", "", [&] { return Read(false); });
  } else if (pick < 60) {
    if (holds_.size() < kMaxHolds) Timed("hold", "", [&] { return Read(true); });
  } else if (pick < 74) {
    Timed("unpublish", "", [&] { return Unpublish(); });
  } else if (pick < 84) {
    Timed("store.put", "", [&] { return StorePut(); });
  } else if (pick < 93) {
    Timed("store.get", "", [&] { return StoreGet(); });
  } else if (pick < 97) {
    Timed("store.delete", "", [&] { return StoreDelete(); });
  } else {
    Timed("store.table", "", [&] { return StoreTable(); });
  }
}

Outcome Worker::Publish() {
  const uint64_t n = ++counter_;
  const uint64_t rows = LogUniform(1, kMaxRows);
  const std::string id = std::to_string(options_.id) + "-" + std::to_string(n);
  if (rows >= 2 && Chance(0.25)) {
    // A HugeTable in 2-3 parts, each its own Publish, in a random order.
    const auto parts = static_cast<uint32_t>(Uniform(2, std::min<uint64_t>(3, rows)));
    const std::string name =
        "h-" + id + "-r" + std::to_string(rows) + "-p" + std::to_string(parts);
    const TableName what{true, rows, parts};
    const uint64_t tag = NameTag(name);
    own_tables_.push_back(name);
    std::vector<uint32_t> order(parts);
    for (uint32_t j = 0; j < parts; ++j) order[j] = j;
    std::shuffle(order.begin(), order.end(), random_);
    for (uint32_t j : order) {
      const uint64_t first = what.PartStart(j), count = what.PartStart(j + 1) - first;
      auto batch = BuildBatch(tag, first, count, client_->pool(RandomNode()),
                              client_->pool(RandomNode()));
      if (!batch.ok())
        return Outcome::Err(batch.status(), name + " part " + std::to_string(j));
      PublishOptions po;
      po.first_row = first;
      Status st = client_->Publish(*batch, name, po);
      if (!st.ok()) return Outcome::Err(st, name + " part " + std::to_string(j));
    }
    return Outcome::Ok(name);
  }
  const std::string name = "c-" + id + "-r" + std::to_string(rows);
  const uint64_t tag = NameTag(name);
  const uint64_t batches = Uniform(1, std::min<uint64_t>(3, rows));
  std::vector<RecordBatchPtr> built;
  for (uint64_t b = 0; b < batches; ++b) {
    const uint64_t first = rows * b / batches, end = rows * (b + 1) / batches;
    auto batch = BuildBatch(tag, first, end - first, client_->pool(RandomNode()),
                            client_->pool(RandomNode()));
    if (!batch.ok()) return Outcome::Err(batch.status(), name);
    built.push_back(std::move(*batch));
  }
  auto table = Table::FromRecordBatches(built);
  if (!table.ok()) return Outcome::Err(table.status(), name);
  built.clear();
  own_tables_.push_back(name);  // before: a failed call may have published it
  Status st = client_->Publish(*table, name);
  return st.ok() ? Outcome::Ok(name) : Outcome::Err(st, name);
}

std::string Worker::PickName(bool own_only) {
  if (!own_tables_.empty() && (own_only || Chance(0.4))) {
    const std::string& name = own_tables_[Uniform(0, own_tables_.size() - 1)];
    return ParseTableName(name) ? name : "";
  }
  if (own_only) return "";
  auto listed = client_->List();
  if (!listed.ok()) return "";
  std::vector<std::string> names;
  for (const auto& t : *listed) {
    if (ParseTableName(t.name)) names.push_back(t.name);
  }
  return names.empty() ? "" : names[Uniform(0, names.size() - 1)];
}

Outcome Worker::Read(bool hold) {
  const bool plant = options_.plant_wrong && !planted_;
  const std::string name = PickName(plant);
  if (name.empty()) return Outcome::Skip();
  const auto what = ParseTableName(name);
  if (!what) return Outcome::Skip();
  std::vector<control::PositionedChunk> chunks;
  Outcome got = GetTable(name, *what, &chunks);
  if (!got.status.ok() || !got.wrong.empty()) return got;
  std::string wrong = Verify(name, *what, chunks);
  if (!wrong.empty()) return Outcome::Wrong(wrong, name);
  if (hold) {
    holds_.push_back({name, std::move(chunks),
                      Clock::now() + std::chrono::milliseconds(Uniform(200, 3000))});
  }
  return Outcome::Ok(name);
}

Outcome Worker::GetTable(const std::string& name, const TableName& what,
                         std::vector<control::PositionedChunk>* chunks) {
  if (what.huge) {
    auto got = client_->GetChunks(name);
    if (!got.ok()) return Outcome::Err(got.status(), name);
    *chunks = std::move(*got);
    return Outcome::Ok(name);
  }
  // A whole table through Get (chunks assembled by the library).
  auto got = client_->Get(name);
  if (!got.ok()) return Outcome::Err(got.status(), name);
  return TableChunks(name, what, **got, chunks);
}

Outcome Worker::TableChunks(const std::string& name, const TableName& what,
                            const Table& t,
                            std::vector<control::PositionedChunk>* chunks) {
  if (t.num_columns() != 2) {
    return Outcome::Wrong("columns: expected 2 (v, s), got " + t.schema()->ToString(),
                          name);
  }
  if (static_cast<uint64_t>(t.num_rows()) != what.rows) {
    return Outcome::Wrong("rows: expected " + std::to_string(what.rows) + ", got " +
                              std::to_string(t.num_rows()),
                          name);
  }
  const auto& v = t.column(0)->chunks();
  const auto& s = t.column(1)->chunks();
  if (v.size() != s.size()) {
    return Outcome::Wrong("columns chunked differently: " + std::to_string(v.size()) +
                              " and " + std::to_string(s.size()) + " chunks",
                          name);
  }
  uint64_t first = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i]->length() != s[i]->length()) {
      return Outcome::Wrong("chunk " + std::to_string(i) + ": columns of " +
                                std::to_string(v[i]->length()) + " and " +
                                std::to_string(s[i]->length()) + " rows",
                            name);
    }
    control::PositionedChunk c;
    c.first_row = first;
    c.batch = RecordBatch::Make(t.schema(), v[i]->length(), {v[i], s[i]});
    first += static_cast<uint64_t>(v[i]->length());
    chunks->push_back(std::move(c));
  }
  return Outcome::Ok(name);
}

std::string Worker::Verify(const std::string& name, const TableName& what,
                           const std::vector<control::PositionedChunk>& chunks) {
  std::vector<bool> seen(what.parts, false);
  for (size_t i = 0; i < chunks.size(); ++i) {
    const auto& c = chunks[i];
    if (c.batch == nullptr) return "chunk " + std::to_string(i) + " has no batch";
    const auto rows = static_cast<uint64_t>(c.batch->num_rows());
    if (what.huge) {
      // Each chunk must be exactly one part, each part at most once.
      uint32_t j = 0;
      while (j < what.parts && what.PartStart(j) != c.first_row) ++j;
      if (j == what.parts || what.PartStart(j + 1) - c.first_row != rows) {
        return "chunk at row " + std::to_string(c.first_row) + " of " +
               std::to_string(rows) + " rows is no part of the table";
      }
      if (seen[j]) return "part " + std::to_string(j) + " came twice";
      seen[j] = true;
    } else if (c.first_row + rows > what.rows) {
      return "chunk at row " + std::to_string(c.first_row) + " of " +
             std::to_string(rows) + " rows is past the end";
    }
    std::string wrong = VerifyBatch(name, *c.batch, c.first_row);
    if (!wrong.empty()) {
      return wrong + " (chunk " + std::to_string(i) + " of " +
             std::to_string(chunks.size()) + ", published by node " +
             std::to_string(c.publisher) + ", read on node " +
             std::to_string(options_.node) + ")";
    }
  }
  return "";
}

std::string Worker::VerifyBatch(const std::string& name, const RecordBatch& batch,
                                uint64_t first_row) {
  const auto& schema = *batch.schema();
  if (batch.num_columns() != 2 || schema.field(0)->name() != "v" ||
      schema.field(0)->type()->id() != TypeId::kInt64 || schema.field(1)->name() != "s" ||
      schema.field(1)->type()->id() != TypeId::kString) {
    return "schema: expected v: int64, s: utf8, got " + schema.ToString();
  }
  const auto v = std::static_pointer_cast<Int64Array>(batch.column(0));
  const auto s = std::static_pointer_cast<StringArray>(batch.column(1));
  // Offsets and UTF-8 first: reading garbage offsets would read anywhere.
  if (Status st = s->ValidateFull(); !st.ok()) {
    return "column s does not validate (" + st.message() + "), its data in " +
           Where(s->data()->GetBuffer(2)) + " at " + Hex(s->data()->GetBuffer(2));
  }
  if (Status st = v->Validate(); !st.ok()) {
    return "column v does not validate (" + st.message() + ")";
  }
  const uint64_t tag = NameTag(name);
  std::string first_wrong;
  uint64_t wrong_rows = 0;
  auto note = [&](uint64_t row, const char* column, const std::string& expected,
                  const std::string& got, const void* at) {
    if (wrong_rows++ == 0) {
      first_wrong = "row=" + std::to_string(row) + " column=" + column +
                    " expected=" + expected + " got=" + got + " (at " + Hex(at) + " in " +
                    Where(at) + "'s region)";
    }
  };
  const int64_t* values = v->raw_values();
  for (int64_t i = 0; i < batch.num_rows(); ++i) {
    const uint64_t row = first_row + static_cast<uint64_t>(i);
    int64_t expected = ValueAt(tag, row);
    if (i == 0 && options_.plant_wrong && !planted_) {
      planted_ = true;  // --plant-wrong: this one expectation is wrong on purpose
      ++expected;
      note(row, "v", std::to_string(expected) + "(planted)", std::to_string(values[i]),
           values + i);
      continue;
    }
    if (v->IsNull(i)) {
      note(row, "v", std::to_string(expected), "null", values + i);
    } else if (values[i] != expected) {
      note(row, "v", std::to_string(expected), std::to_string(values[i]), values + i);
    }
    const bool null = TextNullAt(tag, row);
    if (s->IsNull(i) != null) {
      note(row, "s", null ? "null" : TextAt(tag, row),
           s->IsNull(i) ? "null" : "'" + Escape(s->GetView(i)) + "'",
           s->GetView(i).data());
    } else if (!null && s->GetView(i) != TextAt(tag, row)) {
      note(row, "s", TextAt(tag, row), "'" + Escape(s->GetView(i)) + "'",
           s->GetView(i).data());
    }
  }
  if (wrong_rows == 0) return "";
  return first_wrong + "; " + std::to_string(wrong_rows) + " of " +
         std::to_string(batch.num_rows()) + " rows wrong";
}

void Worker::ReleaseHolds(bool all) {
  const auto now = Clock::now();
  for (size_t i = 0; i < holds_.size();) {
    if (!all && holds_[i].until > now) {
      ++i;
      continue;
    }
    Held held = std::move(holds_[i]);
    holds_.erase(holds_.begin() + static_cast<long>(i));
    // Held for a while through faults: every value must still be there.
    Timed("release", held.name, [&] {
      const auto what = ParseTableName(held.name);
      std::string wrong = Verify(held.name, *what, held.chunks);
      held.chunks.clear();  // drops the pins
      return wrong.empty() ? Outcome::Ok(held.name)
                           : Outcome::Wrong(wrong + " (while held)", held.name);
    });
  }
}

Outcome Worker::Unpublish() {
  const bool forced = own_tables_.size() > kMaxOwnTables;
  if (!own_tables_.empty() && (forced || Chance(0.7))) {
    const size_t at = forced ? 0 : Uniform(0, own_tables_.size() - 1);
    const std::string name = own_tables_[at];
    own_tables_.erase(own_tables_.begin() + static_cast<long>(at));
    Status st = client_->Unpublish(name);
    // A home that is down decides later: try again then.
    if (st.IsUnavailable() || st.code() == StatusCode::kDeadlineExceeded) {
      own_tables_.push_back(name);
    }
    return st.ok() ? Outcome::Ok(name) : Outcome::Err(st, name);
  }
  // Tables whose publisher is gone (a killed worker's): anyone may.
  auto listed = client_->List();
  if (!listed.ok()) return Outcome::Err(listed.status(), "List");
  std::vector<std::string> orphans;
  for (const auto& t : *listed) {
    // Only the tables of the API's workers: a command line's table is
    // orphaned as soon as `quiver put` exits, and its worker reads it next.
    if (t.orphaned && ParseTableName(t.name)) orphans.push_back(t.name);
  }
  if (orphans.empty()) return Outcome::Skip();
  const std::string name = orphans[Uniform(0, orphans.size() - 1)];
  Status st = client_->Unpublish(name);
  return st.ok() ? Outcome::Ok(name + " (orphaned)")
                 : Outcome::Err(st, name + " (orphaned)");
}

int WorkerMain(const WorkerOptions& options) {
  signal(SIGPIPE, SIG_IGN);  // a parent gone: writes fail, and we stop
  // A Ctrl-C at the terminal is the parent's to handle: it stops us by
  // closing our stdin once the cluster is whole again.
  signal(SIGINT, SIG_IGN);
  static std::atomic<bool> stop{false};
  // The parent closes our stdin (or dies) to stop us.
  std::thread([] {
    char buf[256];
    for (;;) {
      const ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
      if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    stop = true;
  }).detach();
  Worker worker(options, &stop);
  return worker.Run();
}

}  // namespace quiver::cli::chaos
