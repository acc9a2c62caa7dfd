// Every command `quiver help` lists answers --help and -h with its usage and
// one line per option on stdout (exit 0), and refuses an unknown option in
// one line on stderr (exit 2): tools/quiver/cli_parse.h.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_util.h"

namespace quiver {
namespace {

using HelpRan = testing::ProcessResult;

// The commands `quiver help` lists (the hidden ones are run by programs).
const std::vector<std::string> kUserCommands = {
    "demo",  "up",      "down",  "status", "sql",          "put", "ls",    "rm",   "get",
    "store", "cluster", "serve", "scan",   "interop-demo", "ipc", "chaos", "bench"};

// Lines of `text` that describe an option: indented, starting with '-'.
int OptionLines(const std::string& text) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find_first_not_of(' ');
    if (at != std::string::npos && at > 0 && line[at] == '-') ++n;
  }
  return n;
}

class HelpTest : public testing::TempDirTest {
 public:
  HelpRan Run(const std::vector<std::string>& args) {
    return testing::RunQuiver(args, dir_);
  }
};

TEST_F(HelpTest, EveryCommandPrintsItsOptions) {
  for (const std::string& command : kUserCommands) {
    for (const char* flag : {"--help", "-h"}) {
      HelpRan r = Run({command, flag});
      SCOPED_TRACE(command + " " + flag);
      EXPECT_EQ(r.code, 0) << r.err;
      EXPECT_NE(r.out.find("usage: quiver " + command), std::string::npos) << r.out;
      EXPECT_GE(OptionLines(r.out), 1) << r.out;
      EXPECT_TRUE(r.err.empty()) << r.err;
    }
  }
  // Commands with options beyond --help list them, one line each.
  HelpRan put = Run({"put", "--help"});
  for (const char* option : {"--dir", "--node", "--format", "--chunk-size"}) {
    EXPECT_NE(put.out.find(option), std::string::npos) << option << "\n" << put.out;
  }
  EXPECT_GE(OptionLines(put.out), 5) << put.out;
  // The verbs of ipc have their own.
  HelpRan cat = Run({"ipc", "cat", "--help"});
  EXPECT_EQ(cat.code, 0);
  EXPECT_NE(cat.out.find("--limit"), std::string::npos) << cat.out;
}

TEST_F(HelpTest, UnknownOptionsExitTwoInOneLine) {
  for (const std::string& command : kUserCommands) {
    HelpRan r = Run({command, "--no-such-option"});
    SCOPED_TRACE(command);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("quiver: " + command + ": unknown option --no-such-option"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

// Missing arguments and bad values: exit 2, one line with the usage.
TEST_F(HelpTest, BadUsageExitsTwo) {
  const std::vector<std::vector<std::string>> cases = {{"get"},
                                                       {"get", "t"},
                                                       {"rm"},
                                                       {"put", "only-a-name"},
                                                       {"up", "--nodes", "x"},
                                                       {"up", "--nodes"},
                                                       {"down", "--timeout", "-1"},
                                                       {"scan", "host:1"},
                                                       {"store", "ls"},
                                                       {"cluster"},
                                                       {"ipc"},
                                                       {"ipc", "cat"},
                                                       {"up", "stray"}};
  for (const auto& args : cases) {
    HelpRan r = Run(args);
    std::string line;
    for (const auto& a : args) line += a + " ";
    SCOPED_TRACE(line);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("usage: quiver " + args[0]), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  HelpRan r = Run({"up", "--nodes", "65"});
  EXPECT_NE(r.err.find("--nodes: '65' is not a whole number up to 64"), std::string::npos)
      << r.err;
}

// `-h` is help only before the query: after it, it is the query's (here one
// argument too many).
TEST_F(HelpTest, SqlHelpOnlyBeforeTheQuery) {
  HelpRan help = Run({"sql", "-h"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("usage: quiver sql"), std::string::npos) << help.out;
  HelpRan after = Run({"sql", "SELECT 1", "-h"});
  EXPECT_EQ(after.code, 2) << after.err;
  EXPECT_EQ(after.out.find("usage"), std::string::npos) << after.out;
  EXPECT_NE(after.err.find("one QUERY"), std::string::npos) << after.err;
}

// docs/cli.md's rule: 1 for what the cluster answers at run time (no
// cluster, no table of that name), 2 for what is wrong before it is asked.
TEST_F(HelpTest, ExitCodesFollowOneRule) {
  const std::string state = dir_ + "/state", file = dir_ + "/f.arrow";
  for (const char* command : {"down", "ls", "status"}) {
    HelpRan r = Run({command, "--dir", state});
    EXPECT_EQ(r.code, 1) << command << ": " << r.err;
    EXPECT_NE(r.err.find("no cluster in " + state), std::string::npos) << r.err;
  }
  HelpRan r = Run({"get", "--dir", state, "nosuch", "-o", file});
  EXPECT_EQ(r.code, 1) << r.err;
  // An output name of no known format is bad input, with or without a
  // cluster.
  r = Run({"get", "--dir", state, "t", "-o", dir_ + "/x.xlsx"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("x.xlsx: the format is not known"), std::string::npos) << r.err;
  r = Run({"store", "ls", "--config", dir_ + "/none.toml"});  // a missing file
  EXPECT_EQ(r.code, 2) << r.err;
  r = Run({"scan", "no-port", "SELECT 1"});  // not HOST:PORT
  EXPECT_EQ(r.code, 2) << r.err;
  r = Run({"scan", "127.0.0.1:1", "SELECT 1"});  // no server there
  EXPECT_EQ(r.code, 1) << r.err;

  ASSERT_EQ(Run({"up", "--nodes", "2", "--size", "64M", "--dir", state}).code, 0);
  struct Down {
    HelpTest* t;
    std::string state;
    ~Down() { (void)t->Run({"down", "--dir", state}); }
  } down{this, state};
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"get", "--dir", state, "nosuch", "-o", file},
        std::vector<std::string>{"rm", "--dir", state, "nosuch"}}) {
    r = Run(args);
    EXPECT_EQ(r.code, 1) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("quiver: " + args[0] + ": no table 'nosuch' is published"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("unix:"), std::string::npos) << r.err;  // no socket address
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_NE(access(file.c_str(), F_OK), 0) << "get of no table wrote " << file;
  r = Run({"get", "--dir", state, "t", "-o", dir_ + "/x.xlsx"});
  EXPECT_EQ(r.code, 2) << r.err;
  const std::string config = state + "/cluster.toml";
  r = Run({"store", "rm", "--config", config, "nosuch-object"});
  EXPECT_EQ(r.code, 1) << r.err;
  r = Run({"store", "ls", "--config", config, "--node", "5"});
  EXPECT_EQ(r.code, 2) << r.err;
  r = Run({"ls", "--dir", state, "--node", "5"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("no node 5"), std::string::npos) << r.err;
  r = Run({"ls", "--dir", state});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Run({"down", "--dir", state}).code, 0);
  EXPECT_EQ(Run({"down", "--dir", state}).code, 1);  // nothing left to stop
}

TEST_F(HelpTest, TopLevelHelpStays) {
  for (const char* flag : {"help", "--help", "-h"}) {
    HelpRan r = Run({flag});
    EXPECT_EQ(r.code, 0);
    EXPECT_NE(r.out.find("usage: quiver <command> [args]"), std::string::npos) << r.out;
  }
  HelpRan none = Run({});
  EXPECT_EQ(none.code, 2);
}

}  // namespace
}  // namespace quiver
