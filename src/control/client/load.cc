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

  // A reader thread gathers batches into groups of about chunk_bytes while
  // this thread writes the previous group into cluster memory: reading
  // (parsing, decompressing, DuckDB's Arrow conversion) and copying overlap.
  struct Group {
    std::vector<RecordBatchPtr> batches;
    uint64_t bytes = 0;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Group> queue;  // at most two groups wait
  bool read_done = false;
  bool stop = false;  // the writer failed: the reader stops
  Status read_status;
  std::atomic<uint64_t> written_bytes{0};
  std::atomic<uint32_t> written_chunks{0};

  std::thread read_thread([&] {
    auto push = [&](Group&& g) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return queue.size() < 2 || stop; });
      if (stop) return false;
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

  std::vector<RecordBatchPtr> chunks;  // in cluster memory
  size_t next_node = 0;
  // Writes a group as one chunk in the first node, from next_node on, that
  // takes it.
  auto write = [&](const Group& group) -> Status {
    Status last;
    std::string refusals;  // each node's reason, for the error
    for (size_t tried = 0; tried < nodes.size(); ++tried) {
      const uint32_t node = nodes[(next_node + tried) % nodes.size()];
      MemoryPool* p = pool(node);
      auto chunk = ConcatenateBatches(group.batches, p);
      if (chunk.ok()) {
        std::vector<ArrayPtr> columns;
        for (int i = 0; i < (*chunk)->num_columns(); ++i) {
          auto data = CopyDictionaries((*chunk)->column(i)->data(), p);
          if (!data.ok()) {
            last = data.status();
            break;
          }
          columns.push_back(MakeArray(*data));
        }
        if (!last.ok()) {
          if (!last.IsOutOfMemory()) return last;
          refusals += "; node " + std::to_string(node) + ": " + last.message();
          last = Status::OK();
          continue;
        }
        chunks.push_back(RecordBatch::Make(schema, (*chunk)->num_rows(), columns));
        next_node = (next_node + tried + 1) % nodes.size();
        written_bytes += group.bytes;
        written_chunks += 1;
        return Status::OK();
      }
      // Full, or over this session's quota: the next node may take it.
      if (!chunk.status().IsOutOfMemory()) return chunk.status();
      refusals += "; node " + std::to_string(node) + ": " + chunk.status().message();
    }
    return Status::OutOfMemory("no node has room for the next ", group.bytes, " bytes (",
                               written_bytes.load(), " bytes in ", written_chunks.load(),
                               " chunks written before)", refusals);
  };
  Status st;
  for (;;) {
    Group group;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return !queue.empty() || read_done; });
      // The reader failed: what waits is not written.
      if (queue.empty() || (read_done && !read_status.ok())) break;
      group = std::move(queue.front());
      queue.pop_front();
      cv.notify_all();
    }
    st = write(group);
    if (!st.ok()) break;
  }
  if (!st.ok()) {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
      queue.clear();
      cv.notify_all();
    }
    reader->Cancel();
  }
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
