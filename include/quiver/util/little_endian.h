// Fixed-width integers in little-endian byte order, appended to and read from
// byte strings: the wire forms that name their byte order (the object store's
// records, Dissociated IPC). Reads go through memcpy, so any offset works.
#pragma once

#include <bit>
#include <cstring>
#include <string>
#include <string_view>

namespace quiver::util {

static_assert(std::endian::native == std::endian::little,
              "the little-endian wire forms are written as the host stores integers");

template <typename T>
void AppendLE(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

// The caller checks that `at + sizeof(T)` is inside `bytes`.
template <typename T>
T LoadLE(std::string_view bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(v));
  return v;
}

}  // namespace quiver::util
