// Rounding sizes and addresses up to a multiple (pages, granules, alignments).
#pragma once

#include <cstdint>

namespace quiver::util {

// The smallest multiple of `multiple` (not 0) that is >= `v`.
constexpr uint64_t RoundUp(uint64_t v, uint64_t multiple) {
  return (v + multiple - 1) / multiple * multiple;
}

}  // namespace quiver::util
