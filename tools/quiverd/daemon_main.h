// The command line of the node daemon, shared by `quiverd` and `quiver node`.
#pragma once

namespace quiver::control::daemon {

// Parses "--config F --id N [options]" and runs the daemon until SIGTERM.
// Returns the process exit code: 0 after a clean stop, 1 if it could not
// start, 2 for bad arguments (a clear message on stderr, at once).
int DaemonMain(int argc, char** argv);

}  // namespace quiver::control::daemon
