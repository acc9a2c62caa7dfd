// A directory only this process's user may write: where Quiver keeps what
// others must not plant, replace or read (spill files, a local cluster's
// credentials and sockets, UCX's shared-memory files).
#pragma once

#include <string>
#include <string_view>

#include "quiver/util/status.h"

namespace quiver::util {

// OK if `path` is a directory (not a symlink to one) that belongs to the
// effective user and that neither group nor others may write. `what` names
// it in the error ("spill directory").
Status CheckPrivateDir(const std::string& path, std::string_view what);
// Creates `path` with mode 0700 unless it exists (its parent must), then
// checks it as CheckPrivateDir does.
Status MakePrivateDir(const std::string& path, std::string_view what);

}  // namespace quiver::util
