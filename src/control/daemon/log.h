// The daemon's log: one line per event on stderr, with UTC time and node.
#pragma once

#include <cstdint>

namespace quiver::control::daemon {

// The node id every line carries.
void SetLogNode(uint32_t node);
void Log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace quiver::control::daemon
