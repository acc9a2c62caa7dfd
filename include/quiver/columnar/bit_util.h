// Bit-level helpers for Arrow validity bitmaps and boolean data
// (least-significant-bit numbering, as the Arrow columnar format specifies).
#pragma once

#include <cstdint>
#include <cstring>

namespace quiver::bit_util {

// Never overflows, whatever length an untrusted file gives.
constexpr int64_t BytesForBits(int64_t bits) { return (bits >> 3) + ((bits & 7) != 0); }

inline bool GetBit(const uint8_t* bits, int64_t i) {
  return (bits[i >> 3] >> (i & 7)) & 1;
}
inline void SetBit(uint8_t* bits, int64_t i) {
  bits[i >> 3] |= static_cast<uint8_t>(1u << (i & 7));
}
inline void ClearBit(uint8_t* bits, int64_t i) {
  bits[i >> 3] &= static_cast<uint8_t>(~(1u << (i & 7)));
}
inline void SetBitTo(uint8_t* bits, int64_t i, bool v) {
  uint8_t mask = static_cast<uint8_t>(1u << (i & 7));
  bits[i >> 3] = v ? (bits[i >> 3] | mask) : (bits[i >> 3] & ~mask);
}

// Number of set bits in [offset, offset + length) of `bits`.
int64_t CountSetBits(const uint8_t* bits, int64_t offset, int64_t length);

// Sets bits [offset, offset + length) to `value`.
void SetBitsTo(uint8_t* bits, int64_t offset, int64_t length, bool value);

// Copies `length` bits from src at src_offset to dst at dst_offset.
void CopyBitmap(const uint8_t* src, int64_t src_offset, int64_t length, uint8_t* dst,
                int64_t dst_offset);

// True if the bit ranges are equal.
bool BitmapEquals(const uint8_t* a, int64_t a_offset, const uint8_t* b, int64_t b_offset,
                  int64_t length);

}  // namespace quiver::bit_util
