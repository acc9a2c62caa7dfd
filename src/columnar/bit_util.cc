#include "quiver/columnar/bit_util.h"

namespace quiver::bit_util {

int64_t CountSetBits(const uint8_t* bits, int64_t offset, int64_t length) {
  int64_t count = 0;
  int64_t i = offset;
  const int64_t end = offset + length;
  // Leading bits up to a byte boundary.
  for (; i < end && (i & 7) != 0; ++i) count += GetBit(bits, i);
  // Whole 64-bit words.
  const uint8_t* p = bits + (i >> 3);
  for (; i + 64 <= end; i += 64, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    count += __builtin_popcountll(word);
  }
  // Whole bytes.
  for (; i + 8 <= end; i += 8, ++p) count += __builtin_popcount(*p);
  for (; i < end; ++i) count += GetBit(bits, i);
  return count;
}

void SetBitsTo(uint8_t* bits, int64_t offset, int64_t length, bool value) {
  int64_t i = offset;
  const int64_t end = offset + length;
  for (; i < end && (i & 7) != 0; ++i) SetBitTo(bits, i, value);
  int64_t whole = (end - i) >> 3;
  if (whole > 0) {
    std::memset(bits + (i >> 3), value ? 0xFF : 0x00, static_cast<size_t>(whole));
    i += whole * 8;
  }
  for (; i < end; ++i) SetBitTo(bits, i, value);
}

void CopyBitmap(const uint8_t* src, int64_t src_offset, int64_t length, uint8_t* dst,
                int64_t dst_offset) {
  if (length <= 0) return;
  if ((src_offset & 7) == 0 && (dst_offset & 7) == 0) {
    int64_t whole = length >> 3;
    std::memcpy(dst + (dst_offset >> 3), src + (src_offset >> 3),
                static_cast<size_t>(whole));
    for (int64_t i = whole * 8; i < length; ++i) {
      SetBitTo(dst, dst_offset + i, GetBit(src, src_offset + i));
    }
    return;
  }
  for (int64_t i = 0; i < length; ++i) {
    SetBitTo(dst, dst_offset + i, GetBit(src, src_offset + i));
  }
}

bool BitmapEquals(const uint8_t* a, int64_t a_offset, const uint8_t* b, int64_t b_offset,
                  int64_t length) {
  if ((a_offset & 7) == 0 && (b_offset & 7) == 0) {
    int64_t whole = length >> 3;
    if (std::memcmp(a + (a_offset >> 3), b + (b_offset >> 3),
                    static_cast<size_t>(whole)) != 0) {
      return false;
    }
    for (int64_t i = whole * 8; i < length; ++i) {
      if (GetBit(a, a_offset + i) != GetBit(b, b_offset + i)) return false;
    }
    return true;
  }
  for (int64_t i = 0; i < length; ++i) {
    if (GetBit(a, a_offset + i) != GetBit(b, b_offset + i)) return false;
  }
  return true;
}

}  // namespace quiver::bit_util
