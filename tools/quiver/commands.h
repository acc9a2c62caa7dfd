// The `quiver` command line: one function per subcommand.
//
// Exit codes, one rule for every command (docs/cli.md), each failure one
// clear line on stderr naming the user's objects:
//   0 success;
//   1 the command line was right but the command failed at run time: what
//     the cluster holds or does was not what it needed (no cluster in the
//     state directory, a daemon down or dying, no table or store object of
//     that name, a name already published, no room, a query DuckDB refuses,
//     a failed write) or its check failed (a demo or chaos mismatch);
//   2 bad usage or bad input, found before the cluster is asked: an unknown
//     option, a bad or missing value or argument (cli_parse.h), a --node the
//     cluster's configuration does not have, a file that is missing,
//     unreadable or malformed, an output name of no known format.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "quiver/util/result.h"
#include "quiver/util/status.h"

namespace quiver::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;

using Args = std::vector<std::string>;

int IpcCommand(const Args& args);
int DemoCommand(const Args& args);         // quiver interop-demo
int ClusterDemoCommand(const Args& args);  // quiver demo
int DemoNodeCommand(const Args& args);     // quiver demo-node
int DemoReadCommand(const Args& args);     // quiver demo-read
int NodeCommand(const Args& args);         // quiver node (the daemon)
int StatusCommand(const Args& args);       // quiver status
int UpCommand(const Args& args);           // quiver up
int DownCommand(const Args& args);         // quiver down
int BenchCommand(const Args& args);        // quiver bench
int ClusterCommand(const Args& args);      // quiver cluster init
int StoreCommand(const Args& args);        // quiver store ls|stat|rm
int ServeCommand(const Args& args);        // quiver serve (transport server)
int ScanCommand(const Args& args);         // quiver scan (transport client)
int SqlCommand(const Args& args);          // quiver sql
int PutCommand(const Args& args);          // quiver put
int LsCommand(const Args& args);           // quiver ls
int RmCommand(const Args& args);           // quiver rm
int GetCommand(const Args& args);          // quiver get
int ChaosCommand(const Args& args);        // quiver chaos (the soak)
int ChaosWorkerCommand(const Args& args);  // quiver chaos-worker (one of its workers)

// Prints "quiver: <what>: <status message>" on stderr, on one line, both
// Escape()d, and returns code.
int Fail(const std::string& what, const Status& st, int code = kExitBadInput);
// Text from input made safe for a terminal: valid UTF-8 stays as it is;
// control characters (NUL included) and bytes that are not UTF-8 become
// \xNN.
std::string Escape(std::string_view text);
// `text` with each byte for which plain() is false, and each byte that is
// not part of valid UTF-8, replaced by escaped(byte).
std::string EscapeText(std::string_view text, bool (*plain)(uint8_t),
                       std::string (*escaped)(uint8_t));

// From now on SIGINT and SIGTERM only set a flag (no SA_RESTART: blocking
// calls return EINTR); long commands poll Interrupted() and clean up.
void CatchInterrupts();
bool Interrupted();

// The length of `d` in seconds, for reports.
inline double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace quiver::cli
