#include "quiver/columnar/type.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "quiver/columnar/bit_util.h"

namespace quiver {

TEST(TypeTest, ToStringMatchesArrowNames) {
  EXPECT_EQ(int64()->ToString(), "int64");
  EXPECT_EQ(timestamp(TimeUnit::kMilli, "UTC")->ToString(), "timestamp[ms, tz=UTC]");
  EXPECT_EQ(list(int32())->ToString(), "list<item: int32>");
  EXPECT_EQ(map(utf8(), int32())->ToString(), "map<string, int32>");
  EXPECT_EQ(fixed_size_list(int16(), 3)->ToString(), "fixed_size_list<item: int16>[3]");
  EXPECT_EQ(dictionary(int8(), utf8(), true)->ToString(),
            "dictionary<values=string, indices=int8, ordered=1>");
  EXPECT_EQ(decimal128(10, 2)->ToString(), "decimal128(10, 2)");
}

TEST(TypeTest, EqualityComparesParameters) {
  EXPECT_TRUE(timestamp(TimeUnit::kMicro)->Equals(timestamp(TimeUnit::kMicro)));
  EXPECT_FALSE(timestamp(TimeUnit::kMicro)->Equals(timestamp(TimeUnit::kMicro, "UTC")));
  EXPECT_FALSE(list(int32())->Equals(list(int64())));
  EXPECT_FALSE(list(field("a", int32()))->Equals(list(field("b", int32()))));
  EXPECT_FALSE(decimal128(10, 2)->Equals(decimal128(10, 3)));
  EXPECT_FALSE(dictionary(int8(), utf8())->Equals(dictionary(int16(), utf8())));
  EXPECT_TRUE(struct_({field("a", int8())})->Equals(struct_({field("a", int8())})));
}

TEST(TypeTest, InvalidParametersAreErrors) {
  EXPECT_TRUE(MakeDecimal128(0, 0).status().IsInvalid());
  EXPECT_TRUE(MakeDecimal128(39, 0).status().IsInvalid());
  EXPECT_TRUE(MakeTime32(TimeUnit::kNano).status().IsInvalid());
  EXPECT_TRUE(MakeTime64(TimeUnit::kSecond).status().IsInvalid());
  EXPECT_TRUE(MakeFixedSizeBinary(-1).status().IsInvalid());
  EXPECT_TRUE(MakeDictionary(utf8(), utf8()).status().IsTypeError());
}

TEST(TypeTest, MapChildren) {
  auto m = map(utf8(), int64(), true);
  EXPECT_EQ(m->key_type()->id(), TypeId::kString);
  EXPECT_EQ(m->item_type()->id(), TypeId::kInt64);
  EXPECT_FALSE(m->key_field()->nullable());
  EXPECT_TRUE(m->keys_sorted());
  EXPECT_EQ(m->field(0)->name(), "entries");
}

TEST(TypeTest, SchemaLookupAndMetadata) {
  auto s = schema({field("x", int32()), field("y", utf8(), false)},
                  key_value_metadata({{"k", "v"}}));
  EXPECT_EQ(s->GetFieldIndex("y"), 1);
  EXPECT_EQ(s->GetFieldIndex("z"), -1);
  EXPECT_EQ(s->metadata()->Get("k").ValueOrDie(), "v");
  EXPECT_TRUE(s->metadata()->Get("missing").status().code() == StatusCode::kKeyError);
  auto t = s->WithMetadata(nullptr);
  EXPECT_TRUE(s->Equals(*t));
  EXPECT_FALSE(s->Equals(*t, /*check_metadata=*/true));
}

TEST(TypeTest, SchemaEndianness) {
  auto s = schema({field("x", int32())}, key_value_metadata({{"k", "v"}}));
  EXPECT_EQ(s->endianness(), Endianness::kLittle);
  EXPECT_TRUE(s->is_native_endian());
  EXPECT_EQ(s->ToString().find("endianness"), std::string::npos);
  auto big = s->WithEndianness(Endianness::kBig);
  EXPECT_FALSE(big->is_native_endian());
  EXPECT_FALSE(s->Equals(*big));
  EXPECT_FALSE(big->Equals(*s));
  EXPECT_TRUE(big->Equals(*schema(s->fields(), nullptr, Endianness::kBig)));
  // Changing the metadata keeps the byte order, and back again.
  EXPECT_EQ(big->WithMetadata(nullptr)->endianness(), Endianness::kBig);
  EXPECT_TRUE(big->WithEndianness(Endianness::kLittle)->Equals(*s, true));
  EXPECT_NE(big->ToString().find("\n-- endianness: big --"), std::string::npos)
      << big->ToString();
  EXPECT_STREQ(EndiannessName(Endianness::kBig), "big");
  EXPECT_STREQ(EndiannessName(Endianness::kLittle), "little");
}

TEST(TypeTest, LayoutBufferCounts) {
  EXPECT_EQ(LayoutBufferCount(TypeId::kNull), 0);
  EXPECT_EQ(LayoutBufferCount(TypeId::kInt32), 2);
  EXPECT_EQ(LayoutBufferCount(TypeId::kString), 3);
  EXPECT_EQ(LayoutBufferCount(TypeId::kList), 2);
  EXPECT_EQ(LayoutBufferCount(TypeId::kStruct), 1);
  EXPECT_EQ(LayoutBufferCount(TypeId::kFixedSizeList), 1);
}

}  // namespace quiver

namespace quiver {
namespace {

// Lengths come from untrusted files: the byte count of a bitmap must not
// overflow for any of them (the IPC fuzzer found (bits + 7) >> 3 did).
TEST(BitUtil, BytesForBitsNeverOverflows) {
  EXPECT_EQ(bit_util::BytesForBits(0), 0);
  EXPECT_EQ(bit_util::BytesForBits(1), 1);
  EXPECT_EQ(bit_util::BytesForBits(8), 1);
  EXPECT_EQ(bit_util::BytesForBits(9), 2);
  EXPECT_EQ(bit_util::BytesForBits(INT64_MAX), INT64_MAX / 8 + 1);
  EXPECT_EQ(bit_util::BytesForBits(INT64_MAX - 2), INT64_MAX / 8 + 1);
  EXPECT_EQ(bit_util::BytesForBits(INT64_MAX - 7), INT64_MAX / 8);
}

}  // namespace
}  // namespace quiver
