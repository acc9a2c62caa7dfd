// A scan's producer thread: runs the query, coalesces its batches into
// blocks of the registered pool, and hands the Dissociated IPC messages to
// the progress thread within the window the client asked for.
#include <deque>
#include <functional>

#include "quiver/columnar/concatenate.h"
#include "quiver/util/little_endian.h"
#include "transport/server_internal.h"

namespace quiver::transport {

namespace dis = ipc::dissociated;

uint64_t WindowBytes(const dis::Outgoing& out) {
  const std::string_view body = out.body_bytes();
  auto tag = dis::DecodeTag(out.tag);
  if (tag.ok() && tag->type == dis::BodyType::kAddresses && body.size() >= 8) {
    return util::LoadLE<uint64_t>(body, 0);
  }
  return body.size();
}

bool Scan::WaitForWindow(uint64_t bytes) {
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] {
    return cancelled.load() ||
           (in_flight < request.window_batches &&
            (in_flight == 0 || in_flight_bytes + bytes <= request.window_bytes));
  });
  if (cancelled) return false;
  ++in_flight;
  in_flight_bytes += bytes;
  return true;
}

void Scan::Release(uint32_t bodies, uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu);
    in_flight -= std::min(in_flight, bodies);
    in_flight_bytes -= std::min(in_flight_bytes, bytes);
  }
  cv.notify_all();
}

namespace {

bool AllIn(const ipc::BatchPayload& payload, const uint8_t* block, uint64_t size) {
  for (const auto& b : payload.buffers) {
    if (b == nullptr || b->size() == 0) continue;
    if (b->data() < block || b->data() + b->size() > block + size) return false;
  }
  return true;
}

Message Of(dis::Outgoing out, std::shared_ptr<Block> block) {
  Message m;
  m.out = std::move(out);
  m.block = std::move(block);
  return m;
}

void Push(Scan* s, Message m) {
  std::lock_guard<std::mutex> lock(s->mu);
  s->outbox.push_back(std::move(m));
}

}  // namespace

void Server::Impl::Produce(Scan* s) {
  auto reader = runner_(s->request.sql, s->request.dataset, s->owner);
  if (reader.ok()) {
    std::lock_guard<std::mutex> lock(s->mu);
    s->reader = *reader;
    if (s->cancelled) (*reader)->Cancel();
  }
  // The scan is ready once its first batch is (a runner may run the query
  // lazily, as DuckDB's streaming results do): a query that fails at once
  // fails init_scan with its error, and ending the scan meanwhile cancels
  // the query through the reader.
  Result<RecordBatchPtr> first = reader.ok() ? (*reader)->Next() : reader.status();
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->ready = first.status();
  }
  Wake();
  Status st = !first.ok() ? Status::OK() : [&]() -> Status {
    auto cancelled = [s] { return s->cancelled.load(); };
    QUIVER_ASSIGN_OR_RAISE(auto writer, dis::StreamWriter::Make((*reader)->schema(),
                                                                dis::BodyType::kPacked));
    QUIVER_ASSIGN_OR_RAISE(auto begin, writer->Begin());
    Push(s, Of(std::move(begin), nullptr));
    Wake();
    // Writes `batch` (its body chosen by `chooser`) and hands its messages
    // over within the window; each body keeps `block`.
    auto send = [&](const RecordBatch& batch, const std::shared_ptr<Block>& block,
                    dis::BodyChooser chooser) -> Status {
      writer->set_body_chooser(std::move(chooser));
      auto messages = writer->Write(batch);
      writer->set_body_chooser(nullptr);
      QUIVER_RETURN_NOT_OK(messages.status());
      for (auto& m : *messages) {
        if (m.tagged && !s->WaitForWindow(WindowBytes(m))) {
          return Status::Cancelled("scan ", s->id, " cancelled");
        }
        Push(s, Of(std::move(m), block));
        Wake();
      }
      return Status::OK();
    };
    // Batches taken from the query and not yet sent (the rest of one cut
    // into pieces, or one that did not fit the last body).
    std::deque<RecordBatchPtr> pending;
    pending.push_back(std::move(*first));
    auto take = [&]() -> Result<RecordBatchPtr> {
      if (pending.empty()) return (*reader)->Next();
      RecordBatchPtr b = std::move(pending.front());
      pending.pop_front();
      return b;
    };
    const uint64_t min_rows = std::max<uint64_t>(s->request.min_rows, 1);
    bool end = false;
    while (!end && !cancelled()) {
      std::vector<RecordBatchPtr> chunks;
      uint64_t rows = 0;
      uint64_t bytes = 64;
      while (rows < min_rows && bytes < options_.max_batch_bytes) {
        QUIVER_ASSIGN_OR_RAISE(RecordBatchPtr b, take());
        if (b == nullptr) {
          end = true;
          break;
        }
        uint64_t b_bytes = 0;
        for (const auto& column : b->column_data()) b_bytes += ConcatenateBound(*column);
        if (!chunks.empty() && b_bytes > options_.max_batch_bytes) {
          pending.push_front(std::move(b));  // the next body's
          break;
        }
        if (b_bytes > options_.max_batch_bytes && b->num_rows() > 1) {
          // Too big for one body: cut into pieces that fit, in order.
          const auto n = static_cast<uint64_t>(b->num_rows());
          const auto step = static_cast<int64_t>(
              std::max<uint64_t>(1, n * options_.max_batch_bytes / b_bytes));
          for (int64_t at = b->num_rows(); at > 0;) {
            const int64_t from = (at - 1) / step * step;
            pending.push_front(b->Slice(from, at - from));
            at = from;
          }
          continue;
        }
        bytes += b_bytes;
        rows += static_cast<uint64_t>(b->num_rows());
        chunks.push_back(std::move(b));
      }
      if (chunks.empty()) break;
      auto block = std::make_shared<Block>();
      block->pool = pool_.get();
      QUIVER_ASSIGN_OR_RAISE(block->data, pool_->Allocate(bytes, cancelled));
      block->arena = std::make_unique<ArenaPool>(block->data, (bytes + 63) / 64 * 64);
      QUIVER_ASSIGN_OR_RAISE(block->batch,
                             ConcatenateBatches(chunks, block->arena.get()));
      chunks.clear();
      const uint64_t used = block->arena->used();
      const uint64_t addresses_from = s->request.addresses_from;
      const uint8_t* data = block->data;
      QUIVER_RETURN_NOT_OK(
          send(*block->batch, block, [&](const ipc::BatchPayload& payload) {
            dis::BodyChoice choice;  // packed (copied) unless it is all in the block
            if (!AllIn(payload, data, used)) return choice;
            if (used >= addresses_from) {
              choice.type = dis::BodyType::kAddresses;
            } else {
              choice.block = data;
              choice.block_size = used;
            }
            return choice;
          }));
    }
    if (cancelled()) return Status::Cancelled("scan ", s->id, " cancelled");
    QUIVER_ASSIGN_OR_RAISE(auto last, writer->End());
    Push(s, Of(std::move(last), nullptr));
    return Status::OK();
  }();
  if (!st.ok() && !s->cancelled) {
    Message m;
    m.is_error = true;
    m.error = st.ToString();
    Push(s, std::move(m));
  }
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->reader = nullptr;
    s->producer_done = true;
  }
  Wake();
}

}  // namespace quiver::transport
