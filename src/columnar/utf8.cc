#include "columnar/utf8.h"

#include <cstring>

namespace quiver::internal {

namespace {

constexpr uint64_t kHighBits = 0x8080808080808080ULL;

// Length of the well-formed character starting at p (at most `avail` bytes
// readable), or 0 if the bytes there are not one. The ranges of the second
// byte encode the RFC 3629 rules: E0 and F0 exclude overlong forms, ED
// excludes surrogates, F4 stops at U+10FFFF; C0, C1 and F5..FF never occur.
int CharLength(const uint8_t* p, int64_t avail) {
  const uint8_t b0 = p[0];
  int len;
  uint8_t lo = 0x80;
  uint8_t hi = 0xBF;
  if (b0 < 0x80) {
    return 1;
  } else if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (avail < len) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (int k = 2; k < len; ++k) {
    if (!IsUtf8ContinuationByte(p[k])) return 0;
  }
  return len;
}

}  // namespace

int64_t Utf8ValidPrefixLength(const uint8_t* data, int64_t size) {
  int64_t i = 0;
  while (i < size) {
    // ASCII runs dominate real text: skip them 16 bytes at a time.
    while (i + 16 <= size) {
      uint64_t a;
      uint64_t b;
      std::memcpy(&a, data + i, 8);
      std::memcpy(&b, data + i + 8, 8);
      if (((a | b) & kHighBits) != 0) break;
      i += 16;
    }
    if (i >= size) break;
    if (data[i] < 0x80) {
      ++i;
      continue;
    }
    const int len = CharLength(data + i, size - i);
    if (len == 0) return i;
    i += len;
  }
  return size;
}

}  // namespace quiver::internal
