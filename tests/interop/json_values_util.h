// Canonical JSON of Arrow types and values, for comparing Quiver with other
// Arrow implementations (docs/interop.md, "Canonical encoding").
//
// Both sides of an interop test turn what they hold into this encoding and
// compare text-exact JSON: integers and temporal values as decimal strings,
// floats as the decimal string of their IEEE bit pattern, decimals as
// scaled decimal text, binaries as lowercase hex, nested values as JSON
// arrays/objects, dictionary values decoded. The Arrow JS side is
// tests/interop/js/canonical.mjs, written independently.
//
// Functions are pure and thread-compatible.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "quiver/columnar/array.h"
#include "quiver/columnar/decimal.h"
#include "quiver/columnar/type.h"
#include "quiver/util/result.h"

namespace quiver::interop {

// Ordered: struct values and schema objects keep their field order.
using Json = nlohmann::ordered_json;

// "name: type[ not null][ {k: v, ...}]".
std::string CanonicalFieldString(const Field& field);
// "int64", "timestamp[ms, tz=UTC]", "list<item: int32 not null>",
// "dictionary<values=utf8, indices=int8, ordered>", ...
std::string CanonicalTypeString(const DataType& type);
// [[key, value], ...] in order; [] for null metadata.
Json MetadataPairs(const MetadataPtr& metadata);
// {"fields": [{"name", "type", "nullable", "metadata"}...], "metadata": [...]}
Json SchemaToJson(const Schema& schema);

// Lowercase hex of the bytes.
std::string ToHex(std::string_view bytes);
// The unscaled value `v` as decimal text with `scale` digits after the point
// ("-12.345" for -12345 at scale 3; a negative scale appends zeros).
std::string FormatDecimal(const Decimal128& v, int32_t scale);
// The same for the `width`-byte two's complement value at `bytes` (any
// decimal width), written here apart from Quiver's own FormatDecimal.
std::string FormatDecimalBytes(const uint8_t* bytes, int width, int32_t scale);

// The canonical value of logical row `i` of `array`. The array must be
// valid (ValidateFull); a dictionary index outside the dictionary is still
// reported as an error rather than read.
Result<Json> CanonicalValue(const Array& array, int64_t i);
// Every row of `array` as a JSON array.
Result<Json> CanonicalColumn(const Array& array);

// "" when `expected` and `actual` are identical (object keys in the same
// order), else the first difference as "PATH: expected X, got Y".
std::string FirstDifference(const Json& expected, const Json& actual,
                            const std::string& path = "");

Result<Json> ReadJsonFile(const std::string& path);
Status WriteJsonFile(const std::string& path, const Json& value);

}  // namespace quiver::interop
