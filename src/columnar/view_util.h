// Reading one value of a binary_view / string_view array, with the view
// checked against the buffers it names (for code that must not trust the
// array: printing, comparing arrays that may not have been validated).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "quiver/columnar/array_data.h"

namespace quiver::internal {

// The value at logical position `i` of `d`; false if its view is malformed
// (negative length, unknown buffer, bytes outside it).
inline bool LoadView(const ArrayData& d, int64_t i, std::string_view* out) {
  const uint8_t* v = d.GetBuffer(1) + (d.offset + i) * 16;
  int32_t n, index, offset;
  std::memcpy(&n, v, 4);
  if (n < 0) return false;
  if (n <= 12) {
    *out = {reinterpret_cast<const char*>(v + 4), static_cast<size_t>(n)};
    return true;
  }
  std::memcpy(&index, v + 8, 4);
  std::memcpy(&offset, v + 12, 4);
  if (index < 0 || static_cast<size_t>(index) + 2 >= d.buffers.size()) return false;
  const Buffer* data = d.buffers[2 + static_cast<size_t>(index)].get();
  if (data == nullptr || offset < 0 || int64_t{offset} + n > data->size()) return false;
  *out = {reinterpret_cast<const char*>(data->data()) + offset, static_cast<size_t>(n)};
  return true;
}

// Writes the view of `value` (at most 2^31-1 bytes) at `out` (16 bytes,
// zeroed by the caller): inline if it fits, else its prefix and where its
// bytes are (`index`, `offset`, ignored for an inline value).
inline void WriteView(std::string_view value, int32_t index, int32_t offset,
                      uint8_t* out) {
  const auto n = static_cast<int32_t>(value.size());
  std::memcpy(out, &n, 4);
  if (n <= 12) {
    std::memcpy(out + 4, value.data(), value.size());
    return;
  }
  std::memcpy(out + 4, value.data(), 4);
  std::memcpy(out + 8, &index, 4);
  std::memcpy(out + 12, &offset, 4);
}

}  // namespace quiver::internal
