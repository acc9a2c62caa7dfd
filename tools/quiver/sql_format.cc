// The output formats of `quiver sql`.
#include "sql_format.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "commands.h"
#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc/writer.h"
#include "quiver/columnar/pretty_print.h"

namespace quiver::cli {

namespace {

bool IsNumber(TypeId id) {
  return IsInteger(id) || IsFloating(id) || id == TypeId::kDecimal;
}

// Days since 1970-01-01 as YYYY-MM-DD (proleptic Gregorian calendar).
std::string FormatDate(int64_t days) {
  // Shift to 0000-03-01 so that leap days end a year; 146097 days make 400 years.
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  char buf[80];
  std::snprintf(buf, sizeof(buf), "%04lld-%02lld-%02lld", static_cast<long long>(year),
                static_cast<long long>(month), static_cast<long long>(day));
  return buf;
}

// One value as text, unquoted; nullopt for NULL.
std::optional<std::string> Cell(const Array& a, int64_t i) {
  if (a.IsNull(i)) return std::nullopt;
  const TypeId id = a.type()->id();
  if (id == TypeId::kString || id == TypeId::kLargeString || id == TypeId::kStringView) {
    if (id == TypeId::kString)
      return std::string(static_cast<const StringArray&>(a).GetView(i));
    if (id == TypeId::kLargeString) {
      return std::string(static_cast<const LargeStringArray&>(a).GetView(i));
    }
    return std::string(static_cast<const StringViewArray&>(a).GetView(i));
  }
  if (id == TypeId::kDate32)
    return FormatDate(static_cast<const Date32Array&>(a).Value(i));
  std::string text = FormatValue(a, i);
  if (text == "null") return std::nullopt;  // a null child of a union, run-end, ...
  return text;
}

// The result as rows of cells (QueryTable's columns share one chunking).
struct Cells {
  std::vector<std::string> names;
  std::vector<bool> numeric;
  std::vector<std::vector<std::optional<std::string>>> rows;
};

Cells Collect(const Table& table) {
  Cells c;
  const int n = table.num_columns();
  for (int j = 0; j < n; ++j) {
    c.names.push_back(table.schema()->field(j)->name());
    c.numeric.push_back(IsNumber(table.schema()->field(j)->type()->id()));
  }
  if (n == 0) return c;
  for (int k = 0; k < table.column(0)->num_chunks(); ++k) {
    const int64_t len = table.column(0)->chunk(k)->length();
    for (int64_t i = 0; i < len; ++i) {
      std::vector<std::optional<std::string>> row;
      for (int j = 0; j < n; ++j) row.push_back(Cell(*table.column(j)->chunk(k), i));
      c.rows.push_back(std::move(row));
    }
  }
  return c;
}

// Characters on a terminal: UTF-8 code points (Escape()d text is valid UTF-8).
size_t DisplayWidth(const std::string& s) {
  size_t w = 0;
  for (unsigned char ch : s) w += (ch & 0xC0) != 0x80;
  return w;
}

// The first `width - 1` code points of `s` and "…".
std::string Truncate(const std::string& s, size_t width) {
  if (DisplayWidth(s) <= width) return s;
  std::string out;
  size_t w = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    if ((ch & 0xC0) != 0x80 && ++w > width - 1) break;
    out.push_back(s[i]);
  }
  return out + "…";
}

void WriteTable(const Cells& c, int terminal_width, std::FILE* out) {
  const size_t n = c.names.size();
  std::vector<std::vector<std::string>> text;  // header first, escaped
  text.emplace_back();
  for (const auto& name : c.names) text.back().push_back(Escape(name));
  for (const auto& row : c.rows) {
    text.emplace_back();
    for (const auto& v : row) text.back().push_back(v ? Escape(*v) : "NULL");
  }
  std::vector<size_t> widths(n, 0);
  for (const auto& row : text) {
    for (size_t j = 0; j < n; ++j) widths[j] = std::max(widths[j], DisplayWidth(row[j]));
  }
  // Too wide for the terminal: cap the widest columns, never below 8.
  if (terminal_width > 0 && n > 0) {
    const size_t room = static_cast<size_t>(terminal_width) -
                        std::min<size_t>(terminal_width, 3 * (n - 1));
    size_t total = 0;
    for (size_t w : widths) total += w;
    size_t cap = *std::max_element(widths.begin(), widths.end());
    while (total > room && cap > 8) {
      --cap;
      total = 0;
      for (size_t w : widths) total += std::min(w, cap);
    }
    for (auto& w : widths) w = std::min(w, cap);
  }
  auto print_row = [&](const std::vector<std::string>& row, bool header) {
    std::string line;
    for (size_t j = 0; j < n; ++j) {
      const std::string v = Truncate(row[j], widths[j]);
      const std::string pad(widths[j] - DisplayWidth(v), ' ');
      if (j > 0) line += " | ";
      line += c.numeric[j] && !header ? pad + v : v + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::fprintf(out, "%s\n", line.c_str());
  };
  print_row(text[0], true);
  std::string rule;
  for (size_t j = 0; j < n; ++j)
    rule += (j > 0 ? "-+-" : "") + std::string(widths[j], '-');
  std::fprintf(out, "%s\n", rule.c_str());
  for (size_t r = 1; r < text.size(); ++r) print_row(text[r], false);
  std::fprintf(out, "(%zu row%s)\n", c.rows.size(), c.rows.size() == 1 ? "" : "s");
}

std::string CsvField(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char ch : v) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

void WriteCsv(const Cells& c, std::FILE* out) {
  auto line = [out](const std::vector<std::string>& fields) {
    std::string s;
    for (size_t j = 0; j < fields.size(); ++j)
      s += (j > 0 ? "," : "") + CsvField(fields[j]);
    std::fprintf(out, "%s\n", s.c_str());
  };
  line(c.names);
  for (const auto& row : c.rows) {
    std::vector<std::string> fields;
    for (const auto& v : row) fields.push_back(v.value_or(""));  // NULL: an empty field
    line(fields);
  }
}

// `s` as a JSON string; bytes that are not UTF-8 become \u00XX.
std::string JsonString(const std::string& s) {
  auto plain = [](uint8_t b) { return b >= 0x20 && b != '"' && b != '\\'; };
  auto escaped = [](uint8_t b) {
    if (b == '"' || b == '\\') return std::string("\\") + static_cast<char>(b);
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\u%04x", b);
    return std::string(buf);
  };
  return "\"" + EscapeText(s, plain, escaped) + "\"";
}

void WriteJson(const Table& table, const Cells& c, std::FILE* out) {
  std::vector<TypeId> ids;
  for (const auto& f : table.schema()->fields()) ids.push_back(f->type()->id());
  std::fprintf(out, "[");
  for (size_t r = 0; r < c.rows.size(); ++r) {
    std::string obj = r == 0 ? "\n{" : ",\n{";
    for (size_t j = 0; j < c.names.size(); ++j) {
      if (j > 0) obj += ",";
      obj += JsonString(c.names[j]) + ":";
      const auto& v = c.rows[r][j];
      const bool finite = v && std::isfinite(std::strtod(v->c_str(), nullptr));
      if (!v || (c.numeric[j] && !finite && ids[j] != TypeId::kDecimal)) {
        obj += "null";  // NULL, NaN and infinities
      } else if ((c.numeric[j] && ids[j] != TypeId::kDecimal) ||
                 ids[j] == TypeId::kBool) {
        obj += *v;
      } else {
        obj += JsonString(*v);  // strings, decimals (exact), dates, nested values
      }
    }
    std::fprintf(out, "%s}", obj.c_str());
  }
  std::fprintf(out, "%s]\n", c.rows.empty() ? "" : "\n");
}

Status WriteArrow(const Table& table, std::FILE* out) {
  std::fflush(out);
  QUIVER_ASSIGN_OR_RAISE(auto sink, io::FileOutputStream::FromFd(fileno(out)));
  QUIVER_ASSIGN_OR_RAISE(auto writer, ipc::MakeStreamWriter(sink.get(), table.schema()));
  QUIVER_RETURN_NOT_OK(writer->WriteTable(table));
  QUIVER_RETURN_NOT_OK(writer->Close());
  return sink->Close();
}

}  // namespace

Result<SqlFormat> ParseSqlFormat(const std::string& text) {
  if (text == "table") return SqlFormat::kTable;
  if (text == "csv") return SqlFormat::kCsv;
  if (text == "json") return SqlFormat::kJson;
  if (text == "arrow") return SqlFormat::kArrow;
  return Status::Invalid("--format '", text, "' is not one of table, csv, json, arrow");
}

Status WriteSqlResult(const Table& table, SqlFormat format, int width, std::FILE* out) {
  if (format == SqlFormat::kArrow) return WriteArrow(table, out);
  const Cells cells = Collect(table);
  if (format == SqlFormat::kTable) WriteTable(cells, width, out);
  if (format == SqlFormat::kCsv) WriteCsv(cells, out);
  if (format == SqlFormat::kJson) WriteJson(table, cells, out);
  std::fflush(out);
  return Status::OK();
}

}  // namespace quiver::cli
