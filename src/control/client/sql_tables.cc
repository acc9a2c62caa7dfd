// Client::GetTableForSql (what a table name in an SQL statement reads) and
// Client::CheckNameFree (a name a result is about to be published under).
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

Status Client::CheckNameFree(const std::string& name) {
  QUIVER_ASSIGN_OR_RAISE(auto listed, List());
  for (const auto& t : listed) {
    if (t.name == name) {
      return Status::AlreadyExists("a table named ", name,
                                   " is already published (`quiver rm ", name,
                                   "` removes it)");
    }
  }
  return Status::OK();
}

}  // namespace quiver
