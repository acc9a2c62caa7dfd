// Small helpers to build messages from heterogeneous values.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

namespace quiver::util {

template <typename... Args>
std::string StringBuilder(Args&&... args) {
  if constexpr (sizeof...(Args) == 0) {
    return std::string();
  } else {
    std::ostringstream ss;
    (ss << ... << std::forward<Args>(args));
    return ss.str();
  }
}

// "0x" followed by the value in lower-case hex.
inline std::string Hex(uint64_t v) {
  std::ostringstream ss;
  ss << "0x" << std::hex << v;
  return ss.str();
}

}  // namespace quiver::util
