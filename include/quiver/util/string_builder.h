// Small helpers to build messages from heterogeneous values.
#pragma once

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

}  // namespace quiver::util
