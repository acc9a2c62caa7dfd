// UTF-8 validation for Arrow string data (the Arrow format requires the
// values of string and large_string arrays to be valid UTF-8).
//
// "Valid" is RFC 3629 well-formedness: shortest-form encodings only, no
// UTF-16 surrogates (U+D800..U+DFFF), nothing above U+10FFFF. Used by
// ValidateFull and by the importers of foreign data (C Data, IPC). All
// functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace quiver::internal {

// Length of the longest prefix of [data, data + size) that is a sequence of
// complete, well-formed UTF-8 characters: `size` exactly when the whole
// range is valid, otherwise the byte offset of the first bad sequence.
int64_t Utf8ValidPrefixLength(const uint8_t* data, int64_t size);

inline bool IsValidUtf8(const uint8_t* data, int64_t size) {
  return Utf8ValidPrefixLength(data, size) == size;
}
inline bool IsValidUtf8(std::string_view s) {
  return IsValidUtf8(reinterpret_cast<const uint8_t*>(s.data()),
                     static_cast<int64_t>(s.size()));
}

// True for the bytes 10xxxxxx, which never start a character.
inline bool IsUtf8ContinuationByte(uint8_t b) { return (b & 0xC0) == 0x80; }

}  // namespace quiver::internal
