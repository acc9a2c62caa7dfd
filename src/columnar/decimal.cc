#include "quiver/columnar/decimal.h"

#include <algorithm>

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
