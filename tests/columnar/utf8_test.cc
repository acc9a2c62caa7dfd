// Tests of the UTF-8 validator used for string arrays.
#include "columnar/utf8.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace quiver {
namespace {

// The UTF-8 validator against a reference: a byte sequence is one valid
// character exactly when it is the canonical encoding of a scalar value.

bool ReferenceIsOneChar(const std::vector<uint8_t>& s) {
  uint32_t cp;
  const size_t n = s.size();
  if (n == 1) return s[0] < 0x80;
  const uint8_t lead_mask = n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07;
  const uint8_t lead_tag = n == 2 ? 0xC0 : n == 3 ? 0xE0 : 0xF0;
  if ((s[0] & ~lead_mask & 0xFF) != lead_tag) return false;
  cp = s[0] & lead_mask;
  for (size_t k = 1; k < n; ++k) {
    if ((s[k] & 0xC0) != 0x80) return false;
    cp = (cp << 6) | (s[k] & 0x3F);
  }
  const uint32_t min_cp = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
  return cp >= min_cp && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
}

TEST(Utf8Test, MatchesReferenceOnShortSequences) {
  std::vector<uint8_t> s;
  for (int a = 0; a < 256; ++a) {
    s = {static_cast<uint8_t>(a)};
    ASSERT_EQ(internal::IsValidUtf8(s.data(), 1), ReferenceIsOneChar(s)) << a;
    for (int b = 0; b < 256; ++b) {
      s = {static_cast<uint8_t>(a), static_cast<uint8_t>(b)};
      const bool two = ReferenceIsOneChar(s) ||
                       (ReferenceIsOneChar({s[0]}) && ReferenceIsOneChar({s[1]}));
      ASSERT_EQ(internal::IsValidUtf8(s.data(), 2), two) << a << " " << b;
    }
  }
  const int kThird[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF};
  for (int a = 0xC0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      for (int c : kThird) {
        s = {static_cast<uint8_t>(a), static_cast<uint8_t>(b), static_cast<uint8_t>(c)};
        if (a >= 0xE0 && a < 0xF0) {
          ASSERT_EQ(internal::IsValidUtf8(s.data(), 3), ReferenceIsOneChar(s))
              << a << " " << b << " " << c;
        }
        if (a >= 0xF0) {
          s.push_back(0x80);
          ASSERT_EQ(internal::IsValidUtf8(s.data(), 4), ReferenceIsOneChar(s))
              << a << " " << b << " " << c;
        }
      }
    }
  }
}

TEST(Utf8Test, PrefixLengthPointsAtTheFirstBadSequence) {
  auto prefix = [](std::string_view s) {
    return internal::Utf8ValidPrefixLength(reinterpret_cast<const uint8_t*>(s.data()),
                                           static_cast<int64_t>(s.size()));
  };
  EXPECT_EQ(prefix(""), 0);
  EXPECT_EQ(prefix("abc\xFF"
                   "def"),
            3);
  const std::string long_ascii(40, 'x');
  EXPECT_EQ(prefix(long_ascii + "\xC3\xA9" + long_ascii), 82);
  EXPECT_EQ(prefix(long_ascii + "\xE2\x82"), 40);  // truncated at the end
  EXPECT_EQ(prefix("\xF0\x9F\x98\x80\x80"), 4);    // stray continuation byte
  EXPECT_TRUE(internal::IsValidUtf8("caf\xC3\xA9"));
  EXPECT_FALSE(internal::IsValidUtf8("caf\xC3"));
}

}  // namespace
}  // namespace quiver
