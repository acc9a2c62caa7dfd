// The schemas of the random cases Quiver writes for Arrow JS
// (js_cases_util.cc), and the field helper they share.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "quiver/columnar/type.h"

namespace quiver::interop::js {

// A field with optional metadata pairs.
FieldPtr F(std::string name, TypePtr type, bool nullable = true,
           std::vector<std::pair<std::string, std::string>> metadata = {});

SchemaPtr PrimitivesSchema();     // every primitive and temporal type
SchemaPtr BinaryDecimalSchema();  // strings, binaries, views, decimals
SchemaPtr NestedSchema();         // lists, structs, maps, combinations
SchemaPtr DictionariesSchema();   // every index type, several value types
SchemaPtr UnionsSchema();         // sparse and dense unions, nested both ways

}  // namespace quiver::interop::js
