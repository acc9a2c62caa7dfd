#include "quiver/columnar/decimal.h"

#include <algorithm>
#include <array>

#include "quiver/columnar/type.h"

namespace quiver {

namespace {
unsigned __int128 Abs(__int128 v) {
  return v < 0 ? static_cast<unsigned __int128>(0) - static_cast<unsigned __int128>(v)
               : static_cast<unsigned __int128>(v);
}

std::string DigitsOf(unsigned __int128 v) {
  if (v == 0) return "0";
  std::string s;
  while (v > 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  std::reverse(s.begin(), s.end());
  return s;
}
}  // namespace

int32_t Decimal128::NumDigits() const {
  const unsigned __int128 v = Abs(ToInt128());
  unsigned __int128 bound = 10;
  int32_t digits = 1;
  // At most 39 steps; 10^38 still fits in unsigned 128 bits.
  while (digits < 39 && v >= bound) {
    bound *= 10;
    ++digits;
  }
  return digits;
}

std::string Decimal128::ToString(int32_t scale) const {
  __int128 v = ToInt128();
  std::string digits = DigitsOf(Abs(v));
  std::string out = v < 0 ? "-" : "";
  if (scale <= 0) {
    out += digits;
    if (digits != "0") out.append(static_cast<size_t>(-scale), '0');
    return out;
  }
  size_t s = static_cast<size_t>(scale);
  if (digits.size() <= s) digits.insert(0, s - digits.size() + 1, '0');
  out += digits.substr(0, digits.size() - s);
  out += '.';
  out += digits.substr(digits.size() - s);
  return out;
}

Result<Decimal128> Decimal128::FromString(std::string_view s, int32_t scale) {
  std::string_view in = s;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return Status::Invalid("empty decimal string '", in, "'");
  unsigned __int128 value = 0;
  int digits = 0;
  int frac = -1;
  const unsigned __int128 kLimit = static_cast<unsigned __int128>(1) << 126;
  for (char c : s) {
    if (c == '.') {
      if (frac >= 0) return Status::Invalid("two decimal points in '", in, "'");
      frac = 0;
      continue;
    }
    if (c < '0' || c > '9') return Status::Invalid("bad character in decimal '", in, "'");
    if (value > kLimit / 10) return Status::Invalid("decimal '", in, "' overflows");
    value = value * 10 + static_cast<unsigned>(c - '0');
    ++digits;
    if (frac >= 0) ++frac;
  }
  if (digits == 0) return Status::Invalid("decimal '", in, "' has no digits");
  if (frac < 0) frac = 0;
  if (frac > scale) {
    return Status::Invalid("decimal '", in, "' has more than ", scale,
                           " fractional digits");
  }
  for (int i = frac; i < scale; ++i) {
    if (value > kLimit / 10) return Status::Invalid("decimal '", in, "' overflows");
    value *= 10;
  }
  __int128 signed_value = static_cast<__int128>(value);
  return Decimal128(negative ? -signed_value : signed_value);
}

}  // namespace quiver

// ---------------------------------------------------------------------------
// Every width, through a 256-bit magnitude in four 64-bit limbs (low first).

namespace quiver {

namespace {

using Limbs = std::array<uint64_t, 4>;

// Sign-extends `width` little-endian bytes; returns the magnitude and sign.
Limbs MagnitudeOf(const uint8_t* bytes, int width, bool* negative) {
  uint8_t full[32];
  *negative = (bytes[width - 1] & 0x80) != 0;
  std::memcpy(full, bytes, static_cast<size_t>(width));
  std::memset(full + width, *negative ? 0xFF : 0x00, static_cast<size_t>(32 - width));
  Limbs v;
  std::memcpy(v.data(), full, 32);
  if (*negative) {  // two's complement: invert and add one
    uint64_t carry = 1;
    for (uint64_t& limb : v) {
      limb = ~limb + carry;
      carry = carry != 0 && limb == 0 ? 1 : 0;
    }
  }
  return v;
}

bool IsZero(const Limbs& v) { return (v[0] | v[1] | v[2] | v[3]) == 0; }

// v /= divisor; returns the remainder.
uint64_t DivideBy(Limbs* v, uint64_t divisor) {
  unsigned __int128 rest = 0;
  for (int i = 3; i >= 0; --i) {
    const unsigned __int128 cur = (rest << 64) | (*v)[static_cast<size_t>(i)];
    (*v)[static_cast<size_t>(i)] = static_cast<uint64_t>(cur / divisor);
    rest = cur % divisor;
  }
  return static_cast<uint64_t>(rest);
}

// v = v * factor + add; returns false on overflow of 256 bits.
bool MultiplyAdd(Limbs* v, uint64_t factor, uint64_t add) {
  unsigned __int128 carry = add;
  for (uint64_t& limb : *v) {
    const unsigned __int128 cur = static_cast<unsigned __int128>(limb) * factor + carry;
    limb = static_cast<uint64_t>(cur);
    carry = cur >> 64;
  }
  return carry == 0;
}

std::string MagnitudeDigits(Limbs v) {
  if (IsZero(v)) return "0";
  constexpr uint64_t kChunk = 10000000000000000000ull;  // 10^19
  std::string s;
  while (!IsZero(v)) {
    uint64_t part = DivideBy(&v, kChunk);
    for (int i = 0; i < 19 && (part != 0 || !IsZero(v)); ++i) {
      s.push_back(static_cast<char>('0' + part % 10));
      part /= 10;
    }
  }
  std::reverse(s.begin(), s.end());
  return s;
}

}  // namespace

std::string FormatDecimal(const uint8_t* bytes, int width, int32_t scale) {
  bool negative;
  std::string digits = MagnitudeDigits(MagnitudeOf(bytes, width, &negative));
  std::string out = negative ? "-" : "";
  if (scale <= 0) {
    out += digits;
    if (digits != "0") out.append(static_cast<size_t>(-scale), '0');
    return out;
  }
  const size_t s = static_cast<size_t>(scale);
  if (digits.size() <= s) digits.insert(0, s - digits.size() + 1, '0');
  out += digits.substr(0, digits.size() - s);
  out += '.';
  out += digits.substr(digits.size() - s);
  return out;
}

int32_t DecimalDigits(const uint8_t* bytes, int width) {
  bool negative;
  return static_cast<int32_t>(
      MagnitudeDigits(MagnitudeOf(bytes, width, &negative)).size());
}

Status ParseDecimal(std::string_view text, int32_t scale, int width, uint8_t* out) {
  const int32_t max_digits = MaxDecimalPrecision(8 * width);
  if (max_digits == 0) return Status::Invalid("no decimal is ", width, " bytes wide");
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  Limbs v{};
  int digits = 0;    // significant digits so far
  bool any = false;  // any digit at all
  int frac = -1;     // digits after the point, once one is seen
  for (char c : s) {
    if (c == '.') {
      if (frac >= 0) return Status::Invalid("two decimal points in '", text, "'");
      frac = 0;
      continue;
    }
    if (c < '0' || c > '9') {
      return Status::Invalid("bad character in decimal '", text, "'");
    }
    any = true;
    if (frac >= 0) ++frac;
    if (digits == 0 && c == '0') continue;
    // A negative scale drops that many trailing zeros below: allow them.
    if (++digits > max_digits + std::max(0, -scale)) {
      return Status::Invalid("decimal '", text, "' has more than ", max_digits,
                             " digits");
    }
    MultiplyAdd(&v, 10, static_cast<uint64_t>(c - '0'));
  }
  if (!any) return Status::Invalid("decimal '", text, "' has no digits");
  if (frac < 0) frac = 0;
  if (scale < 0 && frac == 0) {
    // "12300" at scale -2 is the unscaled 123.
    for (int i = 0; i < -scale && digits > 0; ++i, --digits) {
      if (DivideBy(&v, 10) != 0) {
        return Status::Invalid("decimal '", text, "' is not a multiple of 10^", -scale,
                               " (scale ", scale, ")");
      }
    }
    if (digits > max_digits) {
      return Status::Invalid("decimal '", text, "' has more than ", max_digits,
                             " digits");
    }
  } else if (frac > scale) {
    return Status::Invalid("decimal '", text, "' has more than ", scale,
                           " fractional digits");
  }
  for (int i = frac; i < scale; ++i) {
    if (digits > 0 && ++digits > max_digits) {
      return Status::Invalid("decimal '", text, "' has more than ", max_digits,
                             " digits at scale ", scale);
    }
    MultiplyAdd(&v, 10, 0);
  }
  if (negative) {
    uint64_t carry = 1;
    for (uint64_t& limb : v) {
      limb = ~limb + carry;
      carry = carry != 0 && limb == 0 ? 1 : 0;
    }
  }
  uint8_t full[32];
  std::memcpy(full, v.data(), 32);
  std::memcpy(out, full, static_cast<size_t>(width));
  return Status::OK();
}

void StoreDecimal(const Decimal128& value, int width, uint8_t* out) {
  uint8_t full[32];
  value.ToBytes(full);
  std::memset(full + 16, value.high_bits() < 0 ? 0xFF : 0x00, 16);
  std::memcpy(out, full, static_cast<size_t>(width));
}

}  // namespace quiver
