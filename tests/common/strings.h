// String checks the tests share (one definition: a folder's tests compile
// several files at a time, tests/CMakeLists.txt).
#pragma once

#include <string_view>

namespace quiver::testing {

// Whether `haystack` contains `needle`.
inline bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

}  // namespace quiver::testing
