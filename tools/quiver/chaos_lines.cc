// What the chaos parent and its workers share (chaos.h): names, object
// metadata and the line protocol.
#include <charconv>
#include <cstdio>

#include "chaos.h"

namespace quiver::cli::chaos {

namespace {

// The whole of `text` as a number.
std::optional<uint64_t> Number(std::string_view text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return v;
}

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  for (size_t at = 0;;) {
    const size_t next = text.find(sep, at);
    out.push_back(text.substr(at, next == std::string_view::npos ? next : next - at));
    if (next == std::string_view::npos) return out;
    at = next + 1;
  }
}

}  // namespace

std::optional<TableName> ParseTableName(std::string_view name) {
  const auto parts = Split(name, '-');
  TableName t;
  if (parts.size() == 4 && parts[0] == "c") {
    t.huge = false;
  } else if (parts.size() == 5 && parts[0] == "h" && parts[4].size() > 1 &&
             parts[4][0] == 'p') {
    t.huge = true;
    auto p = Number(parts[4].substr(1));
    if (!p || *p < 1 || *p > 64) return std::nullopt;
    t.parts = static_cast<uint32_t>(*p);
  } else {
    return std::nullopt;
  }
  if (!Number(parts[1]) || !Number(parts[2]) || parts[3].size() < 2 ||
      parts[3][0] != 'r') {
    return std::nullopt;
  }
  auto rows = Number(parts[3].substr(1));
  if (!rows || *rows == 0 || *rows < t.parts) return std::nullopt;
  t.rows = *rows;
  return t;
}

std::string ObjectMetadata(uint64_t data_size) {
  return "chaos size=" + std::to_string(data_size);
}

std::optional<uint64_t> ParseObjectMetadata(std::string_view metadata) {
  constexpr std::string_view kPrefix = "chaos size=";
  if (metadata.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  return Number(metadata.substr(kPrefix.size()));
}

std::string OneField(std::string_view text) {
  std::string out = Escape(text);
  for (char& c : out) {
    if (c == '\t') c = ' ';
  }
  return out;
}

std::string FormatOp(std::string_view kind, std::string_view result, double ms,
                     std::string_view detail) {
  char time[32];
  std::snprintf(time, sizeof(time), "%.1f", ms);
  std::string line = "op\t";
  line.append(kind).append("\t").append(result).append("\t").append(time).append("\t");
  line += OneField(detail);
  return line;
}

std::optional<Line> ParseLine(std::string_view text) {
  const auto f = Split(text, '\t');
  Line l;
  l.type = std::string(f[0]);
  if (l.type == "hello" || l.type == "bye") {
    if (f.size() > 1) l.detail = std::string(f[1]);
    return l;
  }
  if (l.type == "start" && f.size() >= 2) {
    l.kind = std::string(f[1]);
    if (f.size() > 2) l.detail = std::string(f[2]);
    return l;
  }
  if (l.type == "op" && f.size() >= 4) {
    l.kind = std::string(f[1]);
    l.result = std::string(f[2]);
    l.ms = std::strtod(std::string(f[3]).c_str(), nullptr);
    if (f.size() > 4) l.detail = std::string(f[4]);
    return l;
  }
  return std::nullopt;
}

}  // namespace quiver::cli::chaos
