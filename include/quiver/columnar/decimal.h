// Decimal values. Decimal128: a 128-bit two's complement integer, the
// storage of Arrow's decimal128(precision, scale) values (little-endian in
// memory). The free functions below read and write values of every decimal
// width (4, 8, 16 or 32 bytes) straight from their bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "quiver/util/result.h"

namespace quiver {

class Decimal128 {
 public:
  constexpr Decimal128() = default;
  constexpr Decimal128(int64_t high, uint64_t low) : low_(low), high_(high) {}
  constexpr Decimal128(int64_t v)  // NOLINT(runtime/explicit)
      : low_(static_cast<uint64_t>(v)), high_(v < 0 ? -1 : 0) {}
  constexpr Decimal128(int v)  // NOLINT(runtime/explicit)
      : Decimal128(static_cast<int64_t>(v)) {}
  explicit Decimal128(__int128 v)
      : low_(static_cast<uint64_t>(v)), high_(static_cast<int64_t>(v >> 64)) {}

  // Reads 16 little-endian bytes.
  static Decimal128 FromBytes(const uint8_t* bytes) {
    Decimal128 d;
    std::memcpy(&d.low_, bytes, 8);
    std::memcpy(&d.high_, bytes + 8, 8);
    return d;
  }
  void ToBytes(uint8_t* out) const {
    std::memcpy(out, &low_, 8);
    std::memcpy(out + 8, &high_, 8);
  }

  // Parses "-123.45" as an unscaled integer with the given scale
  // ("1.5" with scale 2 -> 150). Fails on bad syntax, overflow of 38 digits,
  // or more fractional digits than `scale`.
  static Result<Decimal128> FromString(std::string_view s, int32_t scale);

  uint64_t low_bits() const { return low_; }
  int64_t high_bits() const { return high_; }
  __int128 ToInt128() const {
    return static_cast<__int128>((static_cast<unsigned __int128>(high_) << 64) | low_);
  }
  // The decimal text of the unscaled value with `scale` digits after the point.
  std::string ToString(int32_t scale) const;
  // Number of decimal digits of |value| (0 has 1 digit).
  int32_t NumDigits() const;

  friend bool operator==(const Decimal128& a, const Decimal128& b) {
    return a.low_ == b.low_ && a.high_ == b.high_;
  }
  friend bool operator!=(const Decimal128& a, const Decimal128& b) { return !(a == b); }

 private:
  uint64_t low_ = 0;
  int64_t high_ = 0;
};

// The decimal text of the `width`-byte value at `bytes`, with `scale`
// digits after the point.
std::string FormatDecimal(const uint8_t* bytes, int width, int32_t scale);
// Number of decimal digits of the |value| at `bytes` (0 has 1 digit).
int32_t DecimalDigits(const uint8_t* bytes, int width);
// Parses "-123.45" with `scale` into `width` bytes at `out`. Fails on bad
// syntax, more fractional digits than `scale`, or more digits than
// MaxDecimalPrecision(8 * width).
Status ParseDecimal(std::string_view text, int32_t scale, int width, uint8_t* out);
// The `width`-byte value at `bytes` as a Decimal128: sign-extended from 4 or
// 8 bytes; from 32 bytes, its low 16 (exact only when it fits).
inline Decimal128 LoadDecimal128(const uint8_t* bytes, int width) {
  if (width >= 16) return Decimal128::FromBytes(bytes);
  uint8_t full[16];
  std::memcpy(full, bytes, static_cast<size_t>(width));
  std::memset(full + width, (bytes[width - 1] & 0x80) != 0 ? 0xFF : 0,
              static_cast<size_t>(16 - width));
  return Decimal128::FromBytes(full);
}
// Writes `value` as `width` bytes (sign-extended, or its low bytes: the
// caller has checked that it fits).
void StoreDecimal(const Decimal128& value, int width, uint8_t* out);

}  // namespace quiver
