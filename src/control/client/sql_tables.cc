// Client::GetTableForSql: what a table name in an SQL statement reads.
#include <algorithm>
#include <cctype>

#include "quiver/client.h"

namespace quiver {

namespace {

bool SameIgnoringCase(const std::string& a, const std::string& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

Result<TablePtr> Client::GetTableForSql(const std::string& name) {
  auto table = GetHugeTable(name);
  if (table.ok()) return table;
  if (!table.status().IsNotFound()) {
    return table.status().WithContext("table " + name + " is published but unavailable");
  }
  QUIVER_ASSIGN_OR_RAISE(auto listed, List());
  const std::string* match = nullptr;
  for (const auto& t : listed) {
    if (t.name == name || !SameIgnoringCase(t.name, name)) continue;
    if (match != nullptr) return table.status();  // ambiguous: none, as DuckDB would
    match = &t.name;
  }
  if (match == nullptr) return table.status();
  auto other = GetHugeTable(*match);
  if (other.ok() || other.status().IsNotFound()) return other;
  return other.status().WithContext("table " + *match + " is published but unavailable");
}

}  // namespace quiver
