#include "cli_parse.h"

#include <algorithm>
#include <cstdio>

namespace quiver::cli {

namespace {

// CLI11's help, starting with the tool's usage line ("usage: quiver CMD
// ...") in place of the generated one, then the description; positional
// arguments by their names alone.
class Formatter : public CLI::Formatter {
 public:
  explicit Formatter(std::string usage_line) : usage_line_(std::move(usage_line)) {
    column_width(32);
  }
  std::string make_description(const CLI::App*) const override { return ""; }
  std::string make_usage(const CLI::App* app, std::string) const override {
    return usage_line_ + "\n\n" + app->get_description() + "\n";
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    return opt->get_positional() ? std::string() : CLI::Formatter::make_option_opts(opt);
  }

 private:
  std::string usage_line_;
};

}  // namespace

Result<uint64_t> ParseCount(const std::string& name, const std::string& text,
                            uint64_t max) {
  uint64_t v = 0;
  bool ok = !text.empty();
  for (char c : text) {
    if (c < '0' || c > '9' || v > (max - static_cast<uint64_t>(c - '0')) / 10) {
      ok = false;
      break;
    }
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (!ok)
    return Status::Invalid(name, " '", text, "' is not a whole number up to ", max);
  return v;
}

CommandLine::CommandLine(std::string command, std::string usage,
                         const std::string& description)
    : command_(std::move(command)),
      usage_(std::move(usage)),
      app_(description, "quiver " + command_) {
  app_.formatter(std::make_shared<Formatter>("usage: quiver " + command_ + " " + usage_));
  app_.set_help_flag("-h,--help", "print this help and exit");
  // Unknown options are named by Parse (CLI11 would list them in one
  // sentence with the extra positional arguments).
  app_.allow_extras();
}

CLI::Option* CommandLine::Text(const std::string& name, std::string* value,
                               const std::string& help) {
  CLI::Option* o = app_.add_option(name, *value, help);
  if (!value->empty()) o->capture_default_str();
  return o;
}

CLI::Option* CommandLine::Count(const std::string& name, uint64_t* value, uint64_t max,
                                const std::string& help) {
  CLI::Option* o = app_.add_option(name, *value, help);
  o->type_name("N");
  if (*value != ~0ULL) o->capture_default_str();  // ~0: "not given"
  o->check(CLI::Validator(
      [max](std::string& text) -> std::string {
        auto v = ParseCount("", text, max);
        return v.ok() ? std::string() : v.status().message().substr(1);
      },
      ""));
  return o;
}

CLI::Option* CommandLine::Flag(const std::string& name, bool* value,
                               const std::string& help) {
  return app_.add_flag(name, *value, help);
}

CLI::Option* CommandLine::Positionals(const std::string& name,
                                      std::vector<std::string>* values,
                                      const std::string& help) {
  return app_.add_option(name, *values, help)->type_name("");
}

std::optional<int> CommandLine::Parse(const Args& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // as CLI11 takes it
  try {
    app_.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app_.help().c_str(), stdout);
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app_.help().c_str(), stdout);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    return Usage(e.what());
  }
  for (const std::string& extra : app_.remaining()) {
    if (extra.size() > 1 && extra[0] == '-') return Usage("unknown option " + extra);
  }
  if (!app_.remaining().empty()) {
    return Usage("unexpected argument " + app_.remaining().front());
  }
  return std::nullopt;
}

int CommandLine::Usage(const std::string& what) const {
  std::string line = what;
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::fprintf(stderr, "quiver: %s: %s (usage: quiver %s %s; --help lists the options)\n",
               command_.c_str(), Escape(line).c_str(), command_.c_str(), usage_.c_str());
  return kExitBadInput;
}

}  // namespace quiver::cli
