// Decimals of every width (decimal32, decimal64, decimal128, decimal256):
// types, parsing and printing at the widths' limits, builders, validation
// of precision, equality; their IPC and C Data forms are in the round trips
// of every type (tests/common/all_types.h), their peers in tests/interop.
#include "quiver/columnar/decimal.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/status_macros.h"
#include "quiver/columnar/array.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/c_data.h"

namespace quiver {
namespace {

TEST(Decimal, TypesAreNamedAndSizedAsArrowSays) {
  EXPECT_EQ(decimal32(9, 2)->ToString(), "decimal32(9, 2)");
  EXPECT_EQ(decimal64(18, -3)->ToString(), "decimal64(18, -3)");
  EXPECT_EQ(decimal128(38, 10)->ToString(), "decimal128(38, 10)");
  EXPECT_EQ(decimal256(76, 0)->ToString(), "decimal256(76, 0)");
  EXPECT_EQ(decimal32(9, 2)->byte_width(), 4);
  EXPECT_EQ(decimal64(9, 2)->byte_width(), 8);
  EXPECT_EQ(decimal256(9, 2)->byte_width(), 32);
  // The width is part of the type.
  EXPECT_FALSE(decimal32(9, 2)->Equals(*decimal64(9, 2)));
  EXPECT_TRUE(decimal256(40, 2)->Equals(*decimal256(40, 2)));
  EXPECT_FALSE(MakeDecimal(32, 10, 0).ok());
  EXPECT_FALSE(MakeDecimal(64, 19, 0).ok());
  EXPECT_FALSE(MakeDecimal(256, 77, 0).ok());
  auto odd = MakeDecimal(96, 5, 0);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("32, 64, 128 or 256"), std::string::npos);
}

// The largest magnitude of each width's precision, both signs, round trips
// through text and bytes; one digit more does not parse.
TEST(Decimal, TextAtEveryWidthsLimits) {
  for (int bits : {32, 64, 128, 256}) {
    SCOPED_TRACE(bits);
    const int width = bits / 8;
    const int p = MaxDecimalPrecision(bits);
    for (const std::string sign : {"", "-"}) {
      const std::string nines = sign + std::string(static_cast<size_t>(p), '9');
      uint8_t bytes[32];
      ASSERT_OK(ParseDecimal(nines, 0, width, bytes));
      EXPECT_EQ(FormatDecimal(bytes, width, 0), nines);
      EXPECT_EQ(DecimalDigits(bytes, width), p);
      EXPECT_FALSE(ParseDecimal(nines + "9", 0, width, bytes).ok());
      // With a scale, the point moves.
      ASSERT_OK(ParseDecimal(sign + "1.5", 3, width, bytes));
      EXPECT_EQ(FormatDecimal(bytes, width, 3), sign + "1.500");
    }
  }
  uint8_t bytes[32];
  // A negative scale: "12300" at scale -2 is the unscaled 123.
  ASSERT_OK(ParseDecimal("12300", -2, 8, bytes));
  EXPECT_EQ(FormatDecimal(bytes, 8, 0), "123");
  EXPECT_EQ(FormatDecimal(bytes, 8, -2), "12300");
  EXPECT_FALSE(ParseDecimal("12345", -2, 8, bytes).ok());
  EXPECT_FALSE(ParseDecimal("1.2.3", 2, 16, bytes).ok());
  EXPECT_FALSE(ParseDecimal("", 0, 16, bytes).ok());
  EXPECT_FALSE(ParseDecimal("1x", 0, 16, bytes).ok());
  EXPECT_FALSE(ParseDecimal("1.234", 2, 16, bytes).ok());
  // The most negative 256-bit value prints (its magnitude has no positive twin).
  uint8_t min256[32] = {};
  min256[31] = 0x80;
  EXPECT_EQ(
      FormatDecimal(min256, 32, 0),
      "-57896044618658097711785492504343953926634992332820282019728792003956564819968");
}

TEST(Decimal, BuildersCheckPrecisionAndArraysPrintTheirValues) {
  DecimalBuilder b32(decimal32(5, 2));
  ASSERT_OK(b32.Append(Decimal128(-99999)));
  ASSERT_OK(b32.AppendString("12.5"));
  ASSERT_OK(b32.AppendNull());
  EXPECT_FALSE(b32.Append(Decimal128(100000)).ok());
  EXPECT_FALSE(b32.AppendString("1000.00").ok());
  ASSERT_OK_AND_ASSIGN(auto a32, b32.Finish());
  ASSERT_OK(a32->ValidateFull());
  const auto& d32 = static_cast<const DecimalArray&>(*a32);
  EXPECT_EQ(d32.FormatValue(0), "-999.99");
  EXPECT_EQ(d32.FormatValue(1), "12.50");
  EXPECT_EQ(d32.Value(0), Decimal128(-99999));  // sign-extended

  DecimalBuilder b256(decimal256(76, 4));
  const std::string big = "-" + std::string(72, '8') + ".1234";
  ASSERT_OK(b256.AppendString(big));
  ASSERT_OK(b256.Append(Decimal128(42)));
  ASSERT_OK_AND_ASSIGN(auto a256, b256.Finish());
  ASSERT_OK(a256->ValidateFull());
  const auto& d256 = static_cast<const DecimalArray&>(*a256);
  EXPECT_EQ(d256.FormatValue(0), big);
  EXPECT_EQ(d256.FormatValue(1), "0.0042");

  // Equal values of one width are equal arrays; a different width is not.
  DecimalBuilder again(decimal256(76, 4));
  ASSERT_OK(again.AppendString(big));
  ASSERT_OK(again.AppendString("0.0042"));
  ASSERT_OK_AND_ASSIGN(auto a256b, again.Finish());
  EXPECT_TRUE(a256->Equals(*a256b));
}

// ValidateFull refuses a stored value with more digits than the precision,
// at every width, naming the value and its position.
TEST(Decimal, ValidateFullRefusesValuesPastThePrecision) {
  for (int bits : {32, 64, 128, 256}) {
    SCOPED_TRACE(bits);
    const int width = bits / 8;
    auto wide = MakeDecimal(bits, MaxDecimalPrecision(bits), 0).ValueOrDie();
    DecimalBuilder b(wide);
    ASSERT_OK(b.AppendString("7"));
    ASSERT_OK(b.AppendString(
        "-" + std::string(static_cast<size_t>(MaxDecimalPrecision(bits)), '9')));
    ASSERT_OK_AND_ASSIGN(auto array, b.Finish());
    // The same bytes under a type of 3 digits.
    auto narrow = MakeDecimal(bits, 3, 0).ValueOrDie();
    auto data = std::make_shared<ArrayData>(*array->data());
    data->type = narrow;
    auto as_narrow = MakeArray(data);
    ASSERT_OK(as_narrow->Validate());
    Status st = as_narrow->ValidateFull();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("at position 1 does not fit precision 3"),
              std::string::npos)
        << st.ToString();
    EXPECT_EQ(width, narrow->byte_width());
  }
}

// The C Data format strings of the four widths, both ways.
TEST(Decimal, CDataFormatsNameTheWidth) {
  for (const auto& [type, format] :
       std::vector<std::pair<TypePtr, std::string>>{{decimal32(9, 2), "d:9,2,32"},
                                                    {decimal64(18, -1), "d:18,-1,64"},
                                                    {decimal128(38, 0), "d:38,0"},
                                                    {decimal256(76, 5), "d:76,5,256"}}) {
    ArrowSchema c;
    ASSERT_OK(ExportType(*type, &c));
    EXPECT_EQ(std::string(c.format), format);
    ASSERT_OK_AND_ASSIGN(auto back, ImportType(&c));
    EXPECT_TRUE(back->Equals(*type)) << back->ToString();
  }
}

}  // namespace
}  // namespace quiver
