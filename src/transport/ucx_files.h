// Where UCX keeps the shared-memory files of memory it allocates (the
// server's body pool, its shared-memory transports' receive queues), and
// how files of processes that died are taken back.
//
// UCX creates each file under a name, writes every page of it (to learn
// whether /dev/shm has room) and only then unlinks the name, peers opening
// the file through /proc/<pid>/fd. A process killed in between leaves the
// file, and its memory, in /dev/shm for good. Quiver therefore points UCX
// at a directory of its own, /dev/shm/quiver-ucx-<uid> (mode 0700), and
// every process that starts UCX removes the files there that no process
// holds open.
#pragma once

#include <cstddef>
#include <string>

namespace quiver::transport {

// The directory for this user, created if missing; empty when it cannot be
// made private (another user's, a symlink, no /dev/shm): UCX then keeps
// its default.
std::string UcxFileDir();

// Removes the files named ucx_* in `dir` that no process has open. Skipped
// (returns 0) when UCX_POSIX_USE_PROC_LINK turns proc links off: peers then
// open files by name, closed by their creator while in use. Returns how
// many went.
size_t SweepUcxFiles(const std::string& dir);

}  // namespace quiver::transport
