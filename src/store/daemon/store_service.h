// The object store's methods in a node daemon (docs/store.md): the
// ObjectTable of the objects homed in this node's region, and the id
// directory of the ids this node is the directory node of.
//
// Added to the daemon as a service (control/daemon/service.h) by quiverd's
// command line, so the control plane does not depend on the store.
#pragma once

#include <string>

#include "control/daemon/service.h"
#include "store/object_table.h"

namespace quiver::store {

struct StoreServiceOptions {
  StoreLimits limits;
  int resync_ms = 500;  // how often homes and directory nodes reconcile
  // Set: eviction spills objects to files here (docs/store.md, "Spilling").
  std::string spill_dir;
};

control::daemon::ServiceSpec StoreServiceSpec(StoreServiceOptions options);

}  // namespace quiver::store
