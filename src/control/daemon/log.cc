#include "control/daemon/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <ctime>

namespace quiver::control::daemon {

namespace {
std::atomic<uint32_t> g_node{0};
}  // namespace

void SetLogNode(uint32_t node) { g_node.store(node); }

void Log(const char* fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  gmtime_r(&ts.tv_sec, &t);
  // One fprintf per line: lines of several threads do not interleave.
  std::fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ quiverd[%u] %s\n",
               t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
               ts.tv_nsec / 1000000, g_node.load(), msg);
  std::fflush(stderr);
}

}  // namespace quiver::control::daemon
