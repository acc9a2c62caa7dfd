#include "control/daemon/daemon.h"

#include <google/protobuf/stubs/logging.h>
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "control/daemon/dispatch.h"
#include "control/daemon/log.h"
#include "control/daemon/node.h"

namespace quiver::control::daemon {

namespace {

using util::Hex;

CatalogueLimits ResolveLimits(const memory::ClusterLimits& l, uint64_t data_size,
                              const DaemonOptions& o) {
  CatalogueLimits c;
  c.session_quota = l.session_quota.Resolve(data_size);
  c.node_quota = l.node_quota.Resolve(data_size);
  c.max_malloc =
      o.max_malloc_bytes ? o.max_malloc_bytes : l.max_malloc.Resolve(data_size);
  c.malloc_rate = o.malloc_rate ? o.malloc_rate : l.malloc_rate;
  c.node_malloc_rate = std::max(c.malloc_rate, l.node_malloc_rate);
  c.max_sessions_per_node = l.max_sessions_per_node;
  c.max_pins_per_session = l.max_pins_per_session;
  return c;
}

// Re-arms itself: drops silent sessions every quarter lease.
void ScheduleLeaseCheck(Node* node) {
  const int every = std::max<int>(100, static_cast<int>(node->lease_ms / 4));
  node->engine->timers().After(every, [node] {
    if (node->stopping) return;
    ExpireSilentSessions(*node);
    ScheduleLeaseCheck(node);
  });
}

// A taken-over region: objects and records come back; what nobody claims
// within the grace period (at least a session lease) is freed, and nothing
// recovered is freed before it ends, whatever is published or unpublished
// meanwhile.
Status Recover(Node* node) {
  QUIVER_ASSIGN_OR_RAISE(auto records, node->catalogue->Recover());
  Status st = node->directory->LoadRecords(records, &node->service_records);
  if (!st.ok())
    Log("some chunk records were unusable and freed: %s", st.ToString().c_str());
  const auto stats = node->catalogue->Stats();
  Log("recovered %llu objects and %llu chunk records; unclaimed objects are freed in %u "
      "ms",
      static_cast<unsigned long long>(stats.objects),
      static_cast<unsigned long long>(stats.records), node->grace_ms);
  node->engine->timers().After(node->grace_ms, [node] {
    if (node->stopping) return;
    const uint64_t freed = node->catalogue->EndRecovery();
    Log("recovery over: freed %llu bytes nobody re-claimed",
        static_cast<unsigned long long>(freed));
    node->Changed();
  });
  return Status::OK();
}

Status Start(Node* node, const DaemonOptions& o) {
  node->options = o;
  SetLogNode(o.node);
  QUIVER_ASSIGN_OR_RAISE(node->config, memory::LoadClusterConfig(o.config_path));
  const auto& cfg = node->config;
  node->self = cfg.FindNode(o.node);
  if (node->self == nullptr) {
    return Status::Invalid("node ", o.node, " is not in ", o.config_path);
  }
  node->id = o.node;
  if (cfg.credentials.empty()) {
    return Status::Invalid(o.config_path,
                           " names no credentials directory ([cluster] credentials); "
                           "make one with `quiver cluster init`");
  }
  QUIVER_ASSIGN_OR_RAISE(auto server, TlsContext::Make(cfg.credentials, cfg.name,
                                                       PeerRole::kDaemon, o.node, true));
  QUIVER_ASSIGN_OR_RAISE(auto client, TlsContext::Make(cfg.credentials, cfg.name,
                                                       PeerRole::kDaemon, o.node, false));
  node->tls_server.emplace(std::move(server));
  node->tls_client.emplace(std::move(client));

  memory::ClusterMap::Options mo;
  mo.create_own_region = true;
  mo.keep_allocations_on_takeover = true;
  mo.remove_own_region_on_close = o.remove_region_on_exit;
  mo.wait_ready_ms = 120000;  // peers start in any order: wait for their regions
  QUIVER_ASSIGN_OR_RAISE(node->map, memory::ClusterMap::Open(cfg, o.node, mo));
  auto* region = node->map->local_region();
  node->generation = region->header().generation;
  Log("region %s at %s, %llu MiB, backing %s, generation %llu%s",
      node->self->path.c_str(), Hex(node->self->base).c_str(),
      static_cast<unsigned long long>(node->self->size >> 20),
      memory::BackingKindName(node->self->backing),
      static_cast<unsigned long long>(node->generation),
      region->took_over() ? " (taken over: recovering what it holds)" : "");

  node->limits = ResolveLimits(cfg.limits, region->data_size(), o);
  node->lease_ms = cfg.limits.session_lease_ms;
  // A reader that held a pin before the restart may stay silent for up to
  // a lease and still be alive: nothing it held may go before then.
  node->grace_ms = std::max(cfg.limits.restart_grace_ms, cfg.limits.session_lease_ms);
  node->catalogue =
      std::make_unique<Catalogue>(region->allocator(), o.node, cfg.granule, node->limits);
  node->directory =
      std::make_unique<Directory>(node->catalogue.get(), &node->config, o.node);
  rpc::EngineOptions eo;
  eo.io_threads =
      o.io_threads > 0
          ? o.io_threads
          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / 2);
  eo.cluster = cfg.name;
  eo.max_connections = cfg.limits.max_connections;
  eo.max_unestablished = cfg.limits.max_setup_connections;
  eo.handshake_timeout_ms = static_cast<int>(cfg.limits.setup_timeout_ms);
  eo.sessions = true;  // OpenSession establishes a connection (session_service.cc)
  eo.spin_us = static_cast<int>(cfg.limits.spin_us);
  QUIVER_ASSIGN_OR_RAISE(auto handlers, MakeHandlers(node));
  node->engine = std::make_unique<rpc::Engine>(eo, std::move(handlers));
  node->waiters =
      std::make_unique<Waiters>(&node->engine->timers(), cfg.limits.max_waiting_calls);
  node->workers = std::make_unique<WorkerPool>(std::max(1, o.worker_threads), 64);
  if (region->took_over()) QUIVER_RETURN_NOT_OK(Recover(node));

  Peers::Self self;
  self.generation = [node] { return node->generation; };
  self.version = [node] { return node->directory->version(); };
  self.flags = [node] { return node->flags.load(); };
  PeersOptions po;
  po.heartbeat_ms = o.heartbeat_ms;
  po.offline_after = o.offline_after;
  node->peers = std::make_unique<Peers>(
      &node->config, o.node, node->engine.get(), &*node->tls_client,
      node->directory.get(), self, [node] { node->Changed(); }, po);
  for (const auto& spec : o.services) {
    auto made = spec.make(*node);
    if (!made.ok()) return made.status().WithContext("starting the " + spec.name);
    node->services.push_back(std::move(*made));
  }
  for (const auto& s : node->services) s->ClaimRecords(&node->service_records);
  if (!node->service_records.empty()) {
    Log("freed %zu records no service claimed", node->service_records.size());
    for (const auto& r : node->service_records) node->catalogue->FreeRecord(r.address);
    node->service_records.clear();
  }

  if (!node->self->transport.empty()) QUIVER_RETURN_NOT_OK(StartTransfer(node));
  QUIVER_RETURN_NOT_OK(node->engine->ListenTcp(node->self->control, &*node->tls_server));
  if (!node->self->socket.empty()) {
    QUIVER_RETURN_NOT_OK(node->engine->ListenUnix(node->self->socket));
  }
  QUIVER_RETURN_NOT_OK(node->engine->Start());
  node->peers->Start();
  ScheduleLeaseCheck(node);
  Log("serving peers and remote clients on %s (mutual TLS), local clients on %s",
      node->self->control.c_str(),
      node->self->socket.empty() ? "(no socket)" : node->self->socket.c_str());
  return Status::OK();
}

void Shutdown(Node* node) {
  if (node->stopping.exchange(true)) return;
  Log("shutting down");
  for (auto& s : node->services) s->Stopping();
  if (node->peers) node->peers->Stop();
  if (node->waiters)
    node->waiters->FailAll(Status::Unavailable("the daemon is stopping"));
  if (node->engine) node->engine->Stop();
  // After the engine: no TransferConnect can reach a freed server. Its
  // scans release their pins in the catalogue.
  node->transfer.reset();
  if (node->workers) node->workers->Stop();
  if (node->map) {
    Status st = node->map->Close();
    if (!st.ok()) Log("closing regions: %s", st.ToString().c_str());
  }
  Log("stopped");
}

}  // namespace

int RunDaemon(const DaemonOptions& options) {
  // SIGTERM/SIGINT are taken by sigwait below; block them in every thread.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // A malformed message is refused with an error to its sender; protobuf's
  // own log line for it (e.g. a string that is not UTF-8) would let any
  // peer flood this daemon's log.
  google::protobuf::SetLogHandler(nullptr);
  if (!options.cpus.empty()) {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    for (int c : options.cpus) CPU_SET(c, &cpus);
    if (sched_setaffinity(0, sizeof(cpus), &cpus) != 0) {
      Log("cannot run on the CPUs given with --cpus: %s", std::strerror(errno));
      return 1;
    }
  }
  // Destroyed after Shutdown: members refer to each other.
  auto node = std::make_unique<Node>();
  Status st = Start(node.get(), options);
  if (!st.ok()) {
    Log("cannot start: %s", st.ToString().c_str());
    Shutdown(node.get());
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  Log("received %s", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  Shutdown(node.get());
  return 0;
}

}  // namespace quiver::control::daemon
