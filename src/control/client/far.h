// Far chunks: published chunks whose memory this node cannot map, because
// their home is in another memory group (memory::NodeConfig::memory). Their
// rows come over the transport (src/transport/) from the home's daemon,
// which serves each chunk as dataset "chunk:<id>", and land in this node's
// own region, allocated for this client's session there: the copy is freed
// when its last array goes, and by the node's daemon if this process dies.
// The transport connection to a home is opened with a ticket the home gave
// this client's session there (TransferConnect, over the session's mutual
// TLS link): it lives and dies with that session.
//
// Thread-safe: one scan per home at a time (a transport client iterates one
// scan at a time), several homes at once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "quiver/columnar/record_batch.h"
#include "quiver/control/descriptor.h"
#include "quiver/memory/region_pool.h"
#include "quiver/transport/client.h"

namespace quiver::control::client {

class Core;
class Link;

// A transport client of node `transport_address`'s daemon, opened with a
// ticket asked for on `link` (a session with that daemon): Unavailable if
// the daemon serves no transport, the transport's own errors otherwise.
// Blocks the calling thread; any thread may call it.
Result<std::unique_ptr<transport::Client>> ConnectToHomeTransport(
    Link* link, const std::string& transport_address, transport::ClientOptions options,
    int call_timeout_ms);

class FarReader {
 public:
  // `core` owns the reader; `allocator` allocates in the core's own node.
  FarReader(Core* core, memory::RemoteAllocator* allocator);
  ~FarReader();

  // The rows of chunk `id` homed at node `home`, checked against what its
  // descriptor says (schema and row count), as batches in this node's
  // region. Each batch keeps `keep` (the core, whose session holds the
  // memory) alive as long as it lives.
  Result<std::vector<RecordBatchPtr>> Fetch(uint64_t id, uint32_t home,
                                            const DescriptorInfo& info,
                                            const std::shared_ptr<const void>& keep);

 private:
  struct Home {
    std::mutex mu;  // one scan at a time
    std::unique_ptr<transport::Client> client;
  };
  Result<std::vector<RecordBatchPtr>> Scan(Home* home, uint64_t id);

  Core* core_;
  memory::RemoteMemoryPool pool_;
  std::mutex mu_;  // homes_
  std::map<uint32_t, std::unique_ptr<Home>> homes_;
};

// The batch with every buffer (children and dictionaries too) holding
// `hold` besides what it held: whatever its memory needs stays alive.
RecordBatchPtr HoldWith(const RecordBatchPtr& batch, std::shared_ptr<const void> hold);

}  // namespace quiver::control::client
