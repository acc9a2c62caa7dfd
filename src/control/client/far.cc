#include "control/client/far.h"

#include <algorithm>

#include "control/client/core.h"
#include "control/client/link.h"
#include "quiver_rpc/control.pb.h"

namespace quiver::control::client {

namespace {

// The batch's original buffers first, then what they need (the core).
struct Hold {
  std::shared_ptr<const void> keep;
  RecordBatchPtr original;
};

ArrayDataPtr Rewrap(const ArrayDataPtr& a, const std::shared_ptr<const void>& hold) {
  if (a == nullptr) return nullptr;
  auto out = std::make_shared<ArrayData>(*a);
  for (auto& b : out->buffers) {
    if (b != nullptr) b = Buffer::Wrap(b->data(), b->size(), hold);
  }
  for (auto& c : out->child_data) c = Rewrap(c, hold);
  out->dictionary = Rewrap(out->dictionary, hold);
  return out;
}

// A connection that broke (the home's daemon restarted, a network fault) is
// made again once; errors of the request itself are the answer.
bool ConnectionLost(const Status& st) {
  return st.code() == StatusCode::kIOError || st.code() == StatusCode::kUnavailable ||
         st.code() == StatusCode::kCancelled;
}

}  // namespace

RecordBatchPtr HoldWith(const RecordBatchPtr& batch, std::shared_ptr<const void> hold) {
  auto h = std::make_shared<Hold>(Hold{std::move(hold), batch});
  std::vector<ArrayDataPtr> columns;
  for (const auto& c : batch->column_data()) columns.push_back(Rewrap(c, h));
  return RecordBatch::Make(batch->schema(), batch->num_rows(), std::move(columns));
}

Result<std::unique_ptr<transport::Client>> ConnectToHomeTransport(
    Link* link, const std::string& transport_address, transport::ClientOptions options,
    int call_timeout_ms) {
  wire::TransferConnectReply ticket;
  QUIVER_RETURN_NOT_OK(link->Call(rpc::Method::kTransferConnect,
                                  wire::TransferConnectRequest(), &ticket,
                                  call_timeout_ms));
  options.token.clear();
  options.ticket_identity = ticket.identity();
  options.ticket_secret = ticket.secret();
  return transport::Client::Connect(transport_address, std::move(options));
}

FarReader::FarReader(Core* core, memory::RemoteAllocator* allocator)
    : core_(core), pool_(core->node(), allocator) {}

FarReader::~FarReader() = default;

Result<std::vector<RecordBatchPtr>> FarReader::Scan(Home* home, uint64_t id) {
  transport::ScanOptions so;
  so.dataset = "chunk:" + std::to_string(id);
  so.min_rows = uint64_t{1} << 62;  // bodies as large as the home makes them
  QUIVER_ASSIGN_OR_RAISE(const uint64_t scan, home->client->InitScan("", so));
  std::vector<RecordBatchPtr> out;
  Status st = [&]() -> Status {
    QUIVER_ASSIGN_OR_RAISE(auto reader, home->client->Iterate(scan));
    for (;;) {
      QUIVER_ASSIGN_OR_RAISE(auto batch, reader->Next());
      if (batch == nullptr) return Status::OK();
      out.push_back(std::move(batch));
    }
  }();
  Status fin = home->client->Finalize(scan);
  QUIVER_RETURN_NOT_OK(st);
  QUIVER_RETURN_NOT_OK(fin);
  return out;
}

Result<std::vector<RecordBatchPtr>> FarReader::Fetch(
    uint64_t id, uint32_t home_id, const DescriptorInfo& info,
    const std::shared_ptr<const void>& keep) {
  const auto& cfg = core_->config();
  const memory::NodeConfig* node = cfg.FindNode(home_id);
  if (node == nullptr)
    return Status::Invalid("chunk home ", home_id, " is not in the config");
  if (node->transport.empty()) {
    return Status::Invalid("node ", home_id, " (memory group '", node->memory,
                           "') shares no memory with node ", core_->node(),
                           " and serves no transport: give it a `transport` address in "
                           "the cluster file");
  }
  Home* home = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = homes_[home_id];
    if (slot == nullptr) slot = std::make_unique<Home>();
    home = slot.get();
  }
  std::vector<RecordBatchPtr> batches;
  {
    std::lock_guard<std::mutex> lock(home->mu);
    for (int attempt = 0;; ++attempt) {
      if (home->client == nullptr) {
        Link* link = core_->link(home_id);
        if (link == nullptr) {
          return Status::Invalid("chunk home ", home_id, " is not in the config");
        }
        transport::ClientOptions co;
        co.timeout_ms = core_->options().call_timeout_ms;
        co.pool = &pool_;
        auto client = ConnectToHomeTransport(link, node->transport, co,
                                             core_->options().call_timeout_ms);
        if (!client.ok()) {
          return client.status().WithContext("reaching node " + std::to_string(home_id) +
                                             "'s transport at " + node->transport);
        }
        home->client = std::move(*client);
      }
      auto got = Scan(home, id);
      if (got.ok()) {
        batches = std::move(*got);
        break;
      }
      home->client.reset();  // its state after a failed scan is not to be trusted
      if (attempt == 1 || !ConnectionLost(got.status())) {
        return got.status().WithContext("reading chunk " + std::to_string(id) +
                                        " from node " + std::to_string(home_id));
      }
    }
  }
  int64_t rows = 0;
  std::vector<RecordBatchPtr> out;
  for (const auto& b : batches) {
    if (!b->schema()->Equals(*info.schema, true)) {
      return Status::Invalid("node ", home_id, " sent chunk ", id,
                             " with another schema than its descriptor's");
    }
    rows += b->num_rows();
    out.push_back(HoldWith(b, keep));
  }
  if (rows != info.num_rows) {
    return Status::Invalid("node ", home_id, " sent ", rows, " rows of chunk ", id,
                           "; its descriptor has ", info.num_rows);
  }
  return out;
}

}  // namespace quiver::control::client
