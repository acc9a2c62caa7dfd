// Client::Load: a reader's batches copied into cluster memory as chunks
// spread over the nodes (what `quiver put` and `quiver sql --publish` do;
// docs/put.md).
//
// Batches are gathered until their rows would fill a chunk, then
// concatenated straight into the next node's region: one copy from the
// reader's memory into cluster memory, no staging. A region that cannot take
// a chunk (full, or this session's quota there spent) passes it to the next
// node; the load fails only when none can.
#include <algorithm>

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
  std::vector<RecordBatchPtr> chunks;  // in cluster memory
  std::vector<RecordBatchPtr> pending;
  uint64_t pending_bytes = 0;
  size_t next_node = 0;
  LoadProgress progress;
  auto report = [&] {
    if (options.progress) options.progress(progress);
  };
  // Writes the pending batches as one chunk in the first node, from
  // next_node on, that takes it.
  auto flush = [&]() -> Status {
    if (pending.empty()) return Status::OK();
    Status last;
    for (size_t tried = 0; tried < nodes.size(); ++tried) {
      const uint32_t node = nodes[(next_node + tried) % nodes.size()];
      MemoryPool* p = pool(node);
      auto chunk = ConcatenateBatches(pending, p);
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
          continue;
        }
        chunks.push_back(RecordBatch::Make(schema, (*chunk)->num_rows(), columns));
        next_node = (next_node + tried + 1) % nodes.size();
        progress.bytes += pending_bytes;
        progress.chunks += 1;
        pending.clear();
        pending_bytes = 0;
        report();
        return Status::OK();
      }
      // Full, or over this session's quota: the next node may take it.
      if (!chunk.status().IsOutOfMemory()) return chunk.status();
      last = chunk.status();
    }
    return Status::OutOfMemory("no node has room for the next ", pending_bytes,
                               " bytes (", progress.bytes, " bytes in ", progress.chunks,
                               " chunks written before): ", last.message());
  };
  auto run = [&]() -> Status {
    for (;;) {
      if (options.cancelled && options.cancelled()) {
        return Status::Cancelled("load interrupted after ", progress.rows, " rows");
      }
      QUIVER_ASSIGN_OR_RAISE(auto batch, reader->Next());
      if (batch == nullptr) break;
      if (!batch->schema()->Equals(*schema)) {
        return Status::Invalid("batch ", progress.chunks, " has schema ",
                               batch->schema()->ToString(), ", the reader's is ",
                               schema->ToString());
      }
      if (batch->num_rows() == 0) continue;
      const uint64_t bytes = BatchBytes(*batch);
      if (!pending.empty() && pending_bytes + bytes > chunk_bytes) {
        QUIVER_RETURN_NOT_OK(flush());
      }
      pending.push_back(std::move(batch));
      pending_bytes += bytes;
      progress.rows += static_cast<uint64_t>(pending.back()->num_rows());
      report();
    }
    if (chunks.empty() && pending.empty()) {
      // No rows: one empty chunk keeps the schema.
      std::vector<ArrayPtr> columns;
      for (const auto& f : schema->fields()) {
        QUIVER_ASSIGN_OR_RAISE(auto empty, MakeEmptyArray(f->type(), pool(nodes[0])));
        columns.push_back(std::move(empty));
      }
      chunks.push_back(RecordBatch::Make(schema, 0, columns));
      return Status::OK();
    }
    return flush();
  };
  Status st = run();
  if (!st.ok()) {
    // What was written goes back to its owners now, not when the session
    // ends.
    pending.clear();
    chunks.clear();
    (void)Drain();
    return st;
  }
  return Table::FromRecordBatches(chunks, schema);
}

}  // namespace quiver
