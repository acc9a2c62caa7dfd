// Client::Load: a reader's batches copied into cluster memory as chunks
// spread over the nodes (what `quiver put` and `quiver sql --publish` do;
// docs/put.md).
//
// Batches are gathered until their rows would fill a chunk, then
// concatenated straight into the next node's region: one copy from the
// reader's memory into cluster memory, no staging, while the reader goes on
// with the next chunk's rows on a thread of its own. A region that cannot take
// a chunk (full, or this session's quota there spent) passes it to the next
// node; the load fails only when none can.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "quiver/client.h"
#include "quiver/columnar/concatenate.h"

namespace quiver {

namespace {

constexpr uint64_t kDefaultChunkBytes = 64ULL << 20;

// The bytes a batch's rows take once concatenated (dictionaries aside).
uint64_t BatchBytes(const RecordBatch& batch) {
  uint64_t bytes = 0;
  for (int i = 0; i < batch.num_columns(); ++i) {
    bytes += static_cast<uint64_t>(ConcatenateBound(*batch.column(i)->data()));
  }
  return bytes;
}

// Dictionaries are shared by Concatenate, not copied; a chunk must hold
// all its bytes in cluster memory, so they are copied here.
Result<ArrayDataPtr> CopyDictionaries(const ArrayDataPtr& data, MemoryPool* pool) {
  if (data == nullptr) return data;
  bool changed = false;
  auto copy = std::make_shared<ArrayData>(*data);
  for (auto& child : copy->child_data) {
    QUIVER_ASSIGN_OR_RAISE(auto c, CopyDictionaries(child, pool));
    changed |= c != child;
    child = std::move(c);
  }
  if (copy->dictionary != nullptr) {
    QUIVER_ASSIGN_OR_RAISE(auto dict, CopyDictionaries(copy->dictionary, pool));
    QUIVER_ASSIGN_OR_RAISE(copy->dictionary, Concatenate({dict.get()}, pool));
    changed = true;
  }
  return changed ? copy : data;
}

}  // namespace

Result<TablePtr> Client::Load(RecordBatchReader* reader, const LoadOptions& options) {
  if (reader == nullptr) return Status::Invalid("Load from a null reader");
  std::vector<uint32_t> nodes = options.nodes;
  if (nodes.empty()) {
    for (const auto& n : config().nodes) nodes.push_back(n.id);
  }
  uint64_t smallest = ~0ULL;
  for (uint32_t n : nodes) {
    const auto* node = config().FindNode(n);
    if (node == nullptr || pool(n) == nullptr) {
      return Status::Invalid("Load to node ", n, ", which the cluster does not have");
    }
    smallest = std::min<uint64_t>(smallest, node->size);
  }
  const uint64_t chunk_bytes =
      options.chunk_bytes != 0
          ? options.chunk_bytes
          : std::max<uint64_t>(std::min(kDefaultChunkBytes, smallest / 16), 1 << 20);
  const SchemaPtr schema = reader->schema();
  // The round robin starts at the node with the most room, so that tables of
  // one chunk or a few spread over the nodes instead of all starting at the
  // first one. Without an answer from every daemon the order stays as given.
  if (nodes.size() > 1) {
    auto status = GetClusterStatus();
    if (status.ok()) {
      size_t best = 0;
      uint64_t best_free = 0;
      for (size_t i = 0; i < nodes.size(); ++i) {
        for (const auto& n : status->nodes) {
          if (n.node == nodes[i] && n.online && n.free > best_free) {
            best = i;
            best_free = n.free;
          }
        }
      }
      std::rotate(nodes.begin(), nodes.begin() + static_cast<long>(best), nodes.end());
    }
  }

  // A reader thread gathers batches into groups of about chunk_bytes while
  // writer threads copy earlier groups into cluster memory: reading
  // (parsing, decompressing, DuckDB's Arrow conversion) and copying overlap,
  // and one core's memory bandwidth is not the limit of a copy.
  const uint32_t writers =
      options.writers != 0
          ? options.writers
          : std::clamp<uint32_t>(std::thread::hardware_concurrency(), 1, 4);
  struct Group {
    size_t seq = 0;  // the chunk's place in the table
    std::vector<RecordBatchPtr> batches;
    uint64_t bytes = 0;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Group> queue;  // at most `writers` groups wait
  bool read_done = false;
  bool stop = false;  // a writer failed: everyone stops
  Status read_status;
  Status write_status;                          // the first writer's failure
  std::vector<RecordBatchPtr> chunks;           // in cluster memory, by seq
  std::vector<bool> full(nodes.size(), false);  // refused a chunk for room
  std::atomic<uint64_t> written_bytes{0};
  std::atomic<uint32_t> written_chunks{0};

  std::thread read_thread([&] {
    size_t seq = 0;
    auto push = [&](Group&& g) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return queue.size() < writers || stop; });
      if (stop) return false;
      g.seq = seq++;
      queue.push_back(std::move(g));
      cv.notify_all();
      return true;
    };
    auto read = [&]() -> Status {
      Group group;
      LoadProgress progress;
      for (;;) {
        if (options.cancelled && options.cancelled()) {
          return Status::Cancelled("load interrupted after ", progress.rows, " rows");
        }
        QUIVER_ASSIGN_OR_RAISE(auto batch, reader->Next());
        if (batch == nullptr) break;
        if (!batch->schema()->Equals(*schema)) {
          return Status::Invalid("a batch has schema ", batch->schema()->ToString(),
                                 ", the reader's is ", schema->ToString());
        }
        if (batch->num_rows() == 0) continue;
        const uint64_t bytes = BatchBytes(*batch);
        if (!group.batches.empty() && group.bytes + bytes > chunk_bytes) {
          if (!push(std::move(group))) return Status::OK();
          group = Group{};
        }
        progress.rows += static_cast<uint64_t>(batch->num_rows());
        group.batches.push_back(std::move(batch));
        group.bytes += bytes;
        progress.bytes = written_bytes.load();
        progress.chunks = written_chunks.load();
        if (options.progress) options.progress(progress);
      }
      if (!group.batches.empty()) push(std::move(group));
      return Status::OK();
    };
    Status st = read();
    std::lock_guard<std::mutex> lock(mu);
    read_status = std::move(st);
    read_done = true;
    cv.notify_all();
  });

  // Copies a group as one chunk into a node's memory: chunk `seq` goes to
  // nodes[seq % n] first, then to the next ones; nodes that refused one for
  // room are tried last. Only OutOfMemory (full, or over this session's
  // quota) passes a chunk on.
  auto copy_chunk = [&](const Group& group, uint32_t node) -> Result<RecordBatchPtr> {
    MemoryPool* p = pool(node);
    QUIVER_ASSIGN_OR_RAISE(auto chunk, ConcatenateBatches(group.batches, p));
    std::vector<ArrayPtr> columns;
    for (int i = 0; i < chunk->num_columns(); ++i) {
      QUIVER_ASSIGN_OR_RAISE(auto data, CopyDictionaries(chunk->column(i)->data(), p));
      columns.push_back(MakeArray(data));
    }
    return RecordBatch::Make(schema, chunk->num_rows(), columns);
  };
  auto write = [&](const Group& group) -> Status {
    std::vector<size_t> order;
    for (int pass = 0; pass < 2; ++pass) {
      std::lock_guard<std::mutex> lock(mu);
      for (size_t k = 0; k < nodes.size(); ++k) {
        const size_t i = (group.seq + k) % nodes.size();
        if (full[i] == (pass == 1)) order.push_back(i);
      }
    }
    std::string refusals;  // each node's reason, for the error
    for (size_t i : order) {
      auto chunk = copy_chunk(group, nodes[i]);
      if (chunk.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (chunks.size() <= group.seq) chunks.resize(group.seq + 1);
        chunks[group.seq] = std::move(*chunk);
        written_bytes += group.bytes;
        written_chunks += 1;
        return Status::OK();
      }
      if (!chunk.status().IsOutOfMemory()) return chunk.status();
      refusals += "; node " + std::to_string(nodes[i]) + ": " + chunk.status().message();
      std::lock_guard<std::mutex> lock(mu);
      full[i] = true;
    }
    return Status::OutOfMemory("no node has room for the next ", group.bytes, " bytes (",
                               written_bytes.load(), " bytes in ", written_chunks.load(),
                               " chunks written before)", refusals);
  };
  auto writer = [&] {
    for (;;) {
      Group group;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return !queue.empty() || read_done || stop; });
        // The reader failed: what waits is not written.
        if (stop || queue.empty() || (read_done && !read_status.ok())) return;
        group = std::move(queue.front());
        queue.pop_front();
        cv.notify_all();
      }
      Status st = write(group);
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (write_status.ok()) write_status = std::move(st);
        stop = true;
        queue.clear();
        cv.notify_all();
        return;
      }
    }
  };
  std::vector<std::thread> more;
  for (uint32_t w = 1; w < writers; ++w) more.emplace_back(writer);
  writer();
  for (auto& t : more) t.join();
  Status st = write_status;
  if (!st.ok()) reader->Cancel();
  read_thread.join();
  if (st.ok()) st = read_status;
  if (st.ok() && chunks.empty()) {
    // No rows: one empty chunk keeps the schema.
    std::vector<ArrayPtr> columns;
    for (const auto& f : schema->fields()) {
      auto empty = MakeEmptyArray(f->type(), pool(nodes[0]));
      if (!empty.ok()) {
        st = empty.status();
        break;
      }
      columns.push_back(std::move(*empty));
    }
    if (st.ok()) chunks.push_back(RecordBatch::Make(schema, 0, columns));
  }
  if (!st.ok()) {
    // What was written goes back to its owners now, not when the session
    // ends.
    chunks.clear();
    (void)Drain();
    return st;
  }
  return Table::FromRecordBatches(chunks, schema);
}

}  // namespace quiver
