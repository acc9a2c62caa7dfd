// iterate: a scan's batches read from the Dissociated IPC streams. Over UCX
// metadata arrives as active messages, bodies as tagged messages taken in
// whatever order they come: a type-0 body is received straight into a
// buffer of the client's pool; a type-1 body's address list is checked
// against the memory the server registered (its pool) and fetched with one
// one-sided read per run of adjacent buffers, after which the addresses go
// back at once in a free_data message (the server's memory is no longer
// needed) and count as taken for the window. Without UCX both come as
// frames of the TLS stream, every body packed and already in the client's
// pool.
#include <algorithm>
#include <cstring>

#include "quiver/util/little_endian.h"
#include "transport/client_internal.h"

namespace quiver::transport {

namespace dis = ipc::dissociated;

namespace {

constexpr size_t kMaxFreePerMessage = 8192;
// Buffers of a type-1 body at most this far apart are fetched by one read
// (the padding between a batch's buffers; more would read memory no
// buffer of the body is in).
constexpr uint64_t kReadGap = 64;

class ScanReader final : public RecordBatchReader {
 public:
  ScanReader(std::shared_ptr<Client::Impl> impl, uint64_t scan)
      : impl_(std::move(impl)),
        scan_(scan),
        reader_([this](uint64_t address,
                       uint64_t length) { return Resolve(address, length); },
                IpcReadOptionsFor(impl_->options_.pool)) {}

  ~ScanReader() override {
    // UCX may still write into buffers of reads and receives in flight:
    // let them finish (or fail) before the buffers go.
    if (impl_->worker_ == nullptr) return;
    (void)impl_->worker_->ProgressUntil(
        [&] {
          for (Op& op : ops_) {
            if (op.Check() == UCS_INPROGRESS) return false;
          }
          return true;
        },
        1000, "finishing reads of a dropped scan");
  }

  Status Start();
  SchemaPtr schema() const override { return reader_.schema(); }
  Result<RecordBatchPtr> Next() override;

 private:
  struct Op {
    enum Kind { kPacked, kList, kGet } kind = kPacked;
    UcxRequest request;
    uint64_t tag = 0;
    std::shared_ptr<Buffer> buffer;  // the body or the list
    std::shared_ptr<Buffer> list;    // kGet: the address list it serves
    // kGet: one read per span of the server's memory the buffers lie in,
    // each with its first address and the bytes it read.
    std::vector<UcxRequest> reads;
    std::vector<std::pair<uint64_t, std::shared_ptr<Buffer>>> spans;
    std::vector<uint64_t> addresses;

    // In progress while any of its requests is; else the first failure.
    ucs_status_t Check() {
      ucs_status_t first = request.Check();
      if (first == UCS_INPROGRESS) return first;
      for (UcxRequest& r : reads) {
        const ucs_status_t st = r.Check();
        if (st == UCS_INPROGRESS) return st;
        if (first == UCS_OK) first = st;
      }
      return first;
    }
  };

  static ipc::IpcReadOptions IpcReadOptionsFor(MemoryPool* pool) {
    ipc::IpcReadOptions o = ipc::IpcReadOptions::Defaults();
    o.pool = pool;
    return o;
  }
  Result<std::shared_ptr<Buffer>> Resolve(uint64_t address, uint64_t length);
  Status Pump();
  Status TakeMessage();
  Status Finished(Op& op);
  bool Ready();

  std::shared_ptr<Client::Impl> impl_;
  uint64_t scan_;
  dis::StreamReader reader_;
  std::deque<Op> ops_;
  std::map<uint64_t, std::shared_ptr<Buffer>> spans_;  // first address -> bytes read
  std::vector<uint64_t> to_free_;
  uint32_t credits_ = 0;
  RecordBatchPtr first_;
  bool done_ = false;
};

Result<std::shared_ptr<Buffer>> ScanReader::Resolve(uint64_t address, uint64_t length) {
  auto it = spans_.upper_bound(address);
  if (it == spans_.begin()) {
    return Status::Invalid("address 0x", std::hex, address, " was not read");
  }
  --it;
  const uint64_t offset = address - it->first;
  if (offset > static_cast<uint64_t>(it->second->size()) ||
      length > static_cast<uint64_t>(it->second->size()) - offset) {
    return Status::Invalid("buffer at 0x", std::hex, address, " of ", std::dec, length,
                           " bytes is outside the span read for it");
  }
  return Buffer::Slice(it->second, static_cast<int64_t>(offset),
                       static_cast<int64_t>(length));
}

// Takes one body the server sent, if there is one.
Status ScanReader::TakeMessage() {
  ucp_tag_recv_info_t info{};
  ucp_tag_message_h message = nullptr;
  std::shared_ptr<Buffer> streamed;
  if (!impl_->ucx_) {
    if (impl_->stream_bodies_.empty()) return Status::OK();
    info.sender_tag = impl_->stream_bodies_.front().first;
    streamed = std::move(impl_->stream_bodies_.front().second);
    info.length = static_cast<size_t>(streamed->size());
    impl_->stream_bodies_.pop_front();
  } else {
    message = ucp_tag_probe_nb(impl_->worker_->get(), 0, 0, /*remove=*/1, &info);
    if (message == nullptr) return Status::OK();
  }
  auto tag = dis::DecodeTag(info.sender_tag);
  Status st = tag.status();
  const uint64_t limit = !tag.ok() ? 0
                         : tag->type == dis::BodyType::kPacked
                             ? impl_->options_.max_body_bytes
                             : 16 + 16 * uint64_t{1 << 20};
  if (st.ok() && streamed != nullptr && tag->type != dis::BodyType::kPacked) {
    st = Status::Invalid("an address list (tag 0x", std::hex, info.sender_tag,
                         ") on a connection without UCX");
  }
  if (st.ok() && info.length > limit) {
    st = Status::Invalid("a body of ", info.length, " bytes (tag 0x", std::hex,
                         info.sender_tag, ") exceeds the limit of ", std::dec, limit);
  }
  if (!st.ok()) {
    impl_->connection_error_ = st.ToString();
    return Status::IOError("transport server sent a bad tagged message: ", st.ToString());
  }
  ++impl_->bodies_taken_;
  Op op;
  op.kind = tag->type == dis::BodyType::kPacked ? Op::kPacked : Op::kList;
  op.tag = info.sender_tag;
  if (streamed != nullptr) {
    op.buffer = std::move(streamed);  // arrived whole: nothing in flight
  } else {
    QUIVER_ASSIGN_OR_RAISE(op.buffer, AllocateBuffer(static_cast<int64_t>(info.length),
                                                     impl_->options_.pool));
    op.request = TagRecvMessage(impl_->worker_->get(), op.buffer->mutable_data(),
                                info.length, message);
  }
  ops_.push_back(std::move(op));
  return Status::OK();
}

// One operation done: a body to the reader, or a list to read from.
Status ScanReader::Finished(Op& op) {
  const ucs_status_t st = op.Check();
  if (st != UCS_OK) return UcxError(st, "receiving a body");
  switch (op.kind) {
    case Op::kPacked:
      ++credits_;
      return reader_.OnBody(op.tag, std::move(op.buffer));
    case Op::kList: {
      QUIVER_ASSIGN_OR_RAISE(auto ranges, dis::DecodeAddressList(op.buffer->view()));
      // Each buffer must lie in memory the server registered (its pool).
      // Buffers close together are fetched by one read.
      struct Piece {
        uint64_t address, end;
      };
      std::vector<Piece> pieces;
      uint64_t total = 0;
      Op get;
      for (const auto& r : ranges) {
        if (r.length == 0) continue;
        if (!impl_->InPool(r.address, r.length)) {
          return Status::IOError("transport server sent address 0x", std::hex, r.address,
                                 " (", std::dec, r.length,
                                 " bytes), outside the memory it registered");
        }
        pieces.push_back({r.address, r.address + r.length});
        total += r.length;
        get.addresses.push_back(r.address);
      }
      if (pieces.empty()) {  // every buffer empty: nothing to read,
        return reader_.OnBody(op.tag, std::move(op.buffer));  // nothing to free
      }
      if (total > impl_->options_.max_body_bytes) {
        return Status::IOError("transport server sent a body of ", total,
                               " bytes, over the limit of ",
                               impl_->options_.max_body_bytes);
      }
      std::sort(pieces.begin(), pieces.end(),
                [](const Piece& a, const Piece& b) { return a.address < b.address; });
      std::vector<Piece> runs;
      for (const Piece& p : pieces) {
        if (!runs.empty() && p.address <= runs.back().end + kReadGap) {
          runs.back().end = std::max(runs.back().end, p.end);
        } else {
          runs.push_back(p);
        }
      }
      get.kind = Op::kGet;
      get.tag = op.tag;
      get.list = std::move(op.buffer);
      for (const Piece& run : runs) {
        QUIVER_ASSIGN_OR_RAISE(auto bytes,
                               AllocateBuffer(static_cast<int64_t>(run.end - run.address),
                                              impl_->options_.pool));
        ucp_request_param_t p{};
        get.reads.emplace_back(
            impl_->worker_->get(),
            ucp_get_nbx(impl_->data_ep_, bytes->mutable_data(), run.end - run.address,
                        run.address, impl_->rkey_, &p));
        get.spans.emplace_back(run.address, std::move(bytes));
      }
      ops_.push_back(std::move(get));
      return Status::OK();
    }
    case Op::kGet:
      for (auto& [low, bytes] : op.spans) spans_[low] = std::move(bytes);
      to_free_.insert(to_free_.end(), op.addresses.begin(), op.addresses.end());
      return reader_.OnBody(op.tag, std::move(op.list));
  }
  return Status::OK();
}

Status ScanReader::Pump() {
  auto error = impl_->scan_errors_.find(scan_);
  if (error != impl_->scan_errors_.end()) {
    return Status::IOError("transport server: scan ", scan_, ": ", error->second);
  }
  auto& metadata = impl_->metadata_[scan_];
  while (!metadata.empty()) {
    Status st = reader_.OnMetadata(metadata.front());
    metadata.pop_front();
    QUIVER_RETURN_NOT_OK(st);
  }
  for (int i = 0; i < 64; ++i) {
    const size_t before = ops_.size();
    QUIVER_RETURN_NOT_OK(TakeMessage());
    if (ops_.size() == before) break;
  }
  for (size_t i = 0; i < ops_.size();) {
    if (ops_[i].Check() == UCS_INPROGRESS) {
      ++i;
      continue;
    }
    Op op = std::move(ops_[i]);
    ops_.erase(ops_.begin() + static_cast<std::ptrdiff_t>(i));
    QUIVER_RETURN_NOT_OK(Finished(op));
  }
  for (size_t at = 0; at < to_free_.size(); at += kMaxFreePerMessage) {
    std::vector<uint64_t> part(
        to_free_.begin() + static_cast<std::ptrdiff_t>(at),
        to_free_.begin() + static_cast<std::ptrdiff_t>(
                               std::min(to_free_.size(), at + kMaxFreePerMessage)));
    QUIVER_RETURN_NOT_OK(
        impl_->SendTagged(impl_->hello_.free_data, dis::EncodeFreeData(part)));
  }
  to_free_.clear();
  if (credits_ > 0) {
    QUIVER_RETURN_NOT_OK(
        impl_->Post(wire::Kind::kCredit, wire::Encode(wire::Credit{scan_, credits_})));
    credits_ = 0;
  }
  impl_->PollSends();
  return Status::OK();
}

// Something arrived that Pump can use.
bool ScanReader::Ready() {
  if (!impl_->metadata_[scan_].empty() || impl_->scan_errors_.count(scan_) != 0)
    return true;
  for (Op& op : ops_) {
    if (op.Check() != UCS_INPROGRESS) return true;
  }
  if (!impl_->ucx_) return !impl_->stream_bodies_.empty();
  ucp_tag_recv_info_t info{};
  return ucp_tag_probe_nb(impl_->worker_->get(), 0, 0, /*remove=*/0, &info) != nullptr;
}

Status ScanReader::Start() {
  if (impl_->ucx_) {
    std::string id;
    util::AppendLE(&id, scan_);
    QUIVER_RETURN_NOT_OK(impl_->SendTagged(impl_->hello_.want_data, std::move(id)));
  } else {
    QUIVER_RETURN_NOT_OK(impl_->Send(wire::Kind::kWantData, scan_, {}));
  }
  while (reader_.schema() == nullptr) {
    QUIVER_RETURN_NOT_OK(Pump());
    QUIVER_ASSIGN_OR_RAISE(auto b, reader_.Next());
    if (b.has_value()) first_ = *b;
    if (reader_.schema() != nullptr) break;
    QUIVER_RETURN_NOT_OK(impl_->Until([&] { return Ready(); }, "waiting for the schema"));
  }
  return Status::OK();
}

Result<RecordBatchPtr> ScanReader::Next() {
  if (first_ != nullptr) return std::exchange(first_, nullptr);
  while (!done_) {
    QUIVER_RETURN_NOT_OK(Pump());
    QUIVER_ASSIGN_OR_RAISE(auto b, reader_.Next());
    for (uint64_t address : reader_.TakeAddressesToFree()) {
      // The span the address was read into, if it is still listed (a span
      // holds several buffers: the first of them already took it away).
      auto it = spans_.upper_bound(address);
      if (it == spans_.begin()) continue;
      --it;
      if (address - it->first < static_cast<uint64_t>(it->second->size())) {
        spans_.erase(it);
      }
    }
    if (b.has_value()) return *b;
    if (reader_.finished()) {
      done_ = true;
      impl_->active_scan_ = 0;
      break;
    }
    QUIVER_RETURN_NOT_OK(
        impl_->Until([&] { return Ready(); }, "waiting for the next batch"));
  }
  return RecordBatchPtr();
}

}  // namespace

Result<std::shared_ptr<RecordBatchReader>> Client::Impl::Iterate(
    std::shared_ptr<Impl> self, uint64_t scan) {
  if (active_scan_ != 0) {
    return Status::Invalid("scan ", scan, ": scan ", active_scan_,
                           " of this client is being iterated; read it to its end or "
                           "finalize it first");
  }
  active_scan_ = scan;
  bodies_taken_ = 0;
  auto reader = std::make_shared<ScanReader>(std::move(self), scan);
  QUIVER_RETURN_NOT_OK(reader->Start());
  return reader;
}

Result<std::shared_ptr<RecordBatchReader>> Client::Iterate(uint64_t scan) {
  return impl_->Iterate(impl_, scan);
}

}  // namespace quiver::transport
