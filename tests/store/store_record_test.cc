// The byte forms of src/store/store_record.h: the record a home keeps in its
// region, and the packed ids and found objects a batched Get travels in.
#include "store/store_record.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace quiver::store {
namespace {

TEST(StoreRecordTest, ARecordRoundTripsAndRefusesEveryDamagedByte) {
  const StoreRecord r{ObjectId::FromName("r"), 0x300000001000ULL, 1 << 20, 23};
  const std::string bytes = EncodeStoreRecord(r);
  ASSERT_EQ(bytes.size(), kStoreRecordSize);
  auto back = DecodeStoreRecord(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->id, r.id);
  EXPECT_EQ(back->address, r.address);
  EXPECT_EQ(back->data_size, r.data_size);
  EXPECT_EQ(back->metadata_size, r.metadata_size);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x40);
    EXPECT_TRUE(DecodeStoreRecord(bad).status().IsInvalid()) << "byte " << i;
  }
  EXPECT_TRUE(DecodeStoreRecord(bytes.substr(1)).status().IsInvalid());
}

TEST(StoreRecordTest, PackedIdsRoundTripAndNameWhatIsWrong) {
  const std::vector<ObjectId> ids = {ObjectId::FromName("a"), ObjectId::FromName("b"),
                                     ObjectId::FromName("a")};
  const std::string packed = EncodePackedIds(ids);
  ASSERT_EQ(packed.size(), 3 * ObjectId::kSize);
  auto back = DecodePackedIds(packed);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, ids);
  EXPECT_TRUE(DecodePackedIds("").ValueOrDie().empty());

  auto cut = DecodePackedIds(packed.substr(0, 45));
  ASSERT_TRUE(cut.status().IsInvalid());
  EXPECT_NE(cut.status().message().find("45 bytes is not a multiple of 20"),
            std::string::npos)
      << cut.status().message();
  std::string with_nil = packed;
  with_nil.replace(ObjectId::kSize, ObjectId::kSize, std::string(ObjectId::kSize, '\0'));
  auto nil = DecodePackedIds(with_nil);
  ASSERT_TRUE(nil.status().IsInvalid());
  EXPECT_NE(nil.status().message().find("object id #1 is nil"), std::string::npos)
      << nil.status().message();
}

TEST(StoreRecordTest, FoundRecordsRoundTripAndRefuseMalformedReplies) {
  const std::vector<StoreRecord> found = {
      {ObjectId::FromName("x"), 0x300000001000ULL, 1000, 0},
      {ObjectId::FromName("y"), 0x300000002000ULL, 0, 77}};
  std::string bytes;
  for (const auto& r : found) AppendFoundRecord(&bytes, r);
  ASSERT_EQ(bytes.size(), 2 * kFoundRecordSize);
  auto back = DecodeFoundRecords(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ((*back)[k].id, found[k].id);
    EXPECT_EQ((*back)[k].address, found[k].address);
    EXPECT_EQ((*back)[k].data_size, found[k].data_size);
    EXPECT_EQ((*back)[k].metadata_size, found[k].metadata_size);
  }
  EXPECT_TRUE(DecodeFoundRecords(bytes.substr(0, 50)).status().IsInvalid());

  std::string overflow;
  AppendFoundRecord(&overflow, {ObjectId::FromName("z"), 1, UINT64_MAX, 1});
  auto o = DecodeFoundRecords(overflow);
  ASSERT_TRUE(o.status().IsInvalid());
  EXPECT_NE(o.status().message().find("sizes overflow"), std::string::npos);
  std::string nil;
  AppendFoundRecord(&nil, {ObjectId(), 1, 1, 1});
  EXPECT_TRUE(DecodeFoundRecords(nil).status().IsInvalid());
}

}  // namespace
}  // namespace quiver::store
