// The command line of each `quiver` command, parsed by CLI11 (Debian
// libcli11-dev): one CommandLine per command, built where the command is,
// and this one place that turns what CLI11 finds into the tool's output and
// exit codes (commands.h):
//   -h, --help          the usage line and one line per option on stdout, 0
//   an unknown option   "quiver: CMD: unknown option X" on stderr, 2
//   a bad or missing value, a missing argument
//                       "quiver: CMD: <what> (usage: ...)" on stderr, 2
// (every error one line: commands.h).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"

namespace quiver::cli {

// `text` as a whole number in [0, max]; Invalid naming `name` otherwise.
Result<uint64_t> ParseCount(const std::string& name, const std::string& text,
                            uint64_t max);

class CommandLine {
 public:
  // `command` as typed after `quiver` ("put", "ipc cat"); `usage` what follows
  // it on the usage line ("[OPTIONS] FILE... NAME"); `description` one
  // sentence for --help.
  CommandLine(std::string command, std::string usage, const std::string& description);

  CLI::App& app() { return app_; }
  const std::string& command() const { return command_; }

  // "--name V" (and "--name=V") into *value, whose value is the default.
  CLI::Option* Text(const std::string& name, std::string* value, const std::string& help);
  // "--name N": a whole number in [0, max] into *value.
  CLI::Option* Count(const std::string& name, uint64_t* value, uint64_t max,
                     const std::string& help);
  // "--name": *value becomes true.
  CLI::Option* Flag(const std::string& name, bool* value, const std::string& help);
  // The positional arguments, in order, into *values (named `name` in help).
  CLI::Option* Positionals(const std::string& name, std::vector<std::string>* values,
                           const std::string& help);

  // Parses `args`. Nothing when the command goes on; else the exit code once
  // help or the error is printed.
  std::optional<int> Parse(const Args& args);

  // "quiver: CMD: what (usage: quiver CMD ...)" on stderr, one line;
  // returns kExitBadInput.
  int Usage(const std::string& what) const;

 private:
  std::string command_;
  std::string usage_;
  CLI::App app_;
};

}  // namespace quiver::cli
