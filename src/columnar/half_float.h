// Helpers for IEEE 754 binary16 values ("half floats"), which Quiver's
// float16 arrays store as uint16_t bits. Pure functions.
#pragma once

#include <bit>
#include <cstdint>

namespace quiver::internal {

// Exact: every half value is representable as a float.
inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {  // inf or NaN (payload kept)
    bits = sign | 0x7F800000u | (mant << 13);
  } else if (exp != 0) {  // normal: rebias 15 -> 127
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {  // signed zero
    bits = sign;
  } else {  // subnormal half: normalise into a float
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while ((mant & 0x400) == 0);
    bits = sign | static_cast<uint32_t>(112 - e) << 23 | ((mant & 0x3FF) << 13);
  }
  return std::bit_cast<float>(bits);
}

// True for the two zeros and for nothing else.
inline bool HalfIsZero(uint16_t h) { return (h & 0x7FFF) == 0; }
inline bool HalfIsNaN(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; }

}  // namespace quiver::internal
