// Internals of the C Data Interface shared by the exporter and importer:
// format strings, the binary metadata encoding and the mapping between
// Status codes and the errno values of the C Stream Interface.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "quiver/columnar/c_abi.h"
#include "quiver/columnar/type.h"
#include "quiver/util/result.h"

namespace quiver::internal {

// How deep the importer follows children and dictionaries before refusing a
// structure: a cyclic or hostile producer cannot exhaust the stack.
constexpr int kMaxCDataNesting = 256;

// The format string of `type`; for a dictionary type, its index type's.
Result<std::string> FormatOf(const DataType& type);

// A parsed format string: the type id and the parameters the string holds.
// Nested types still need their children, dictionaries are described by the
// `dictionary` member of the schema, so neither is complete here.
struct FormatSpec {
  TypeId id = TypeId::kNull;
  TimeUnit unit = TimeUnit::kSecond;
  std::string timezone;
  int32_t precision = 0;
  int32_t scale = 0;
  int32_t size = 0;  // w:N byte width, +w:N list size, interval unit, decimal bits
  std::vector<int8_t> type_codes;  // +us:I,J,... / +ud:I,J,...
};

// Parses a format string. Invalid for malformed strings (every type of the
// format has a Quiver type). The message names the format string.
Result<FormatSpec> ParseFormat(std::string_view format);

// The leaf type a FormatSpec describes (not for nested ids).
Result<TypePtr> LeafTypeFromSpec(const FormatSpec& spec);

// `text` quoted for an error message: at most 64 bytes, non-printable bytes
// as \xNN, so that garbage from a buggy producer stays readable.
std::string QuoteForMessage(std::string_view text);

// The C Data Interface metadata encoding: int32 count, then for each pair
// int32 key length, key bytes, int32 value length, value bytes (native
// endianness). An empty string encodes "no metadata" (a NULL pointer).
Result<std::string> EncodeMetadata(const KeyValueMetadata& metadata);
// Decodes metadata at `data` (not null-terminated; its length is implied by
// the encoding). Negative counts or lengths are errors.
Result<MetadataPtr> DecodeMetadata(const char* data);

// The errno value a failed Status travels as through a C stream, and back.
int ErrnoFromStatus(const Status& status);
StatusCode StatusCodeFromErrno(int errnum);

}  // namespace quiver::internal
