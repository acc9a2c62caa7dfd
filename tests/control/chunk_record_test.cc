// Chunk records (control/catalogue/chunk.h): the bytes a node keeps in its
// region for every chunk it must find again after a restart. They are read
// back from memory any process of the node could have scribbled on, so
// DecodeChunkRecord treats them as untrusted: every field round-trips, and
// every truncation, extension, flipped byte, bad header field, length that
// does not add up and bad name is refused without reading outside the bytes.
//
// The fixed part's layout (little-endian): magic 0, version 8, flags 12,
// id 16, home 24, publisher 28, publisher_pid 32, name length 36,
// first_row 40, num_rows 48, owner count 56, descriptor length 60, and
// since version 2 group 64, group_chunks 72, reserved 76; then the owners
// (4 bytes each), the name, the descriptor and a 64-bit FNV-1a of
// everything before it.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "common/strings.h"
#include "control/catalogue/chunk.h"

namespace quiver::control {
namespace {

constexpr size_t kFixed = 80, kFixedV1 = 64;
constexpr size_t kFlagsAt = 12, kVersionAt = 8, kNameLenAt = 36, kOwnersAt = 56,
                 kDescLenAt = 60;

using ::quiver::testing::Contains;

ChunkMeta Sample() {
  ChunkMeta c;
  c.id = 0x0123456789ABCDEFULL;
  c.home = 3;
  c.publisher = 65534;
  c.publisher_pid = -42;  // informational: any value round-trips
  c.first_row = 1ULL << 40;
  c.num_rows = 123456789;
  c.explicit_rows = true;
  c.local_only = true;
  c.name = "sensor readings/2024 \xC3\xA9t\xC3\xA9";  // UTF-8 is allowed
  static const char kBytes[] = "\0\1\2\3 descriptor bytes \xFF\0";
  c.descriptor = std::string(kBytes, sizeof(kBytes) - 1);  // NULs included
  c.owners = {3, 7, 65534};
  c.group = 0xFEDCBA9876543210ULL;
  c.group_chunks = 3;
  return c;
}

void ExpectSame(const ChunkMeta& a, const ChunkMeta& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.home, b.home);
  EXPECT_EQ(a.publisher, b.publisher);
  EXPECT_EQ(a.publisher_pid, b.publisher_pid);
  EXPECT_EQ(a.first_row, b.first_row);
  EXPECT_EQ(a.num_rows, b.num_rows);
  EXPECT_EQ(a.explicit_rows, b.explicit_rows);
  EXPECT_EQ(a.local_only, b.local_only);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.descriptor, b.descriptor);
  EXPECT_EQ(a.owners, b.owners);
  EXPECT_EQ(a.group, b.group);
  EXPECT_EQ(a.group_chunks, b.group_chunks);
}

// Decodes from a heap block of exactly the record's size, so that a read
// past the end is caught by the sanitizers.
Result<ChunkMeta> DecodeExact(const std::string& bytes) {
  std::unique_ptr<char[]> copy(new char[bytes.size() + 1]);
  std::memcpy(copy.get(), bytes.data(), bytes.size());
  return DecodeChunkRecord(std::string_view(copy.get(), bytes.size()));
}

uint64_t Fnv1a(std::string_view bytes) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001B3ULL;
  }
  return h;
}

// Recomputes the checksum after a test changed the body on purpose, so
// that the check under test (not the checksum) is what refuses it.
void Reseal(std::string* bytes) {
  ASSERT_GE(bytes->size(), 8u);
  const uint64_t sum = Fnv1a(std::string_view(*bytes).substr(0, bytes->size() - 8));
  std::memcpy(bytes->data() + bytes->size() - 8, &sum, 8);
}

template <typename T>
void PutAt(std::string* bytes, size_t at, T v) {
  std::memcpy(bytes->data() + at, &v, sizeof(T));
}

void ExpectCorrupt(const std::string& bytes, const std::string& why) {
  auto r = DecodeExact(bytes);
  ASSERT_FALSE(r.ok()) << "accepted a record that should say: " << why;
  EXPECT_TRUE(r.status().IsInvalid()) << r.status().ToString();
  EXPECT_TRUE(Contains(r.status().message(), why)) << r.status().ToString();
}

TEST(ChunkRecordTest, EveryFieldRoundTrips) {
  const ChunkMeta c = Sample();
  const std::string bytes = EncodeChunkRecord(c);
  EXPECT_EQ(bytes.size(),
            kFixed + 4 * c.owners.size() + c.name.size() + c.descriptor.size() + 8);
  ASSERT_OK_AND_ASSIGN(ChunkMeta back, DecodeExact(bytes));
  ExpectSame(c, back);
}

TEST(ChunkRecordTest, EveryFlagCombinationRoundTrips) {
  for (bool explicit_rows : {false, true}) {
    for (bool local_only : {false, true}) {
      ChunkMeta c = Sample();
      c.explicit_rows = explicit_rows;
      c.local_only = local_only;
      ASSERT_OK_AND_ASSIGN(ChunkMeta back, DecodeExact(EncodeChunkRecord(c)));
      ExpectSame(c, back);
    }
  }
}

TEST(ChunkRecordTest, EmptyListsAndExtremeValuesRoundTrip) {
  ChunkMeta c;
  c.name = "t";
  c.id = std::numeric_limits<uint64_t>::max();
  c.home = std::numeric_limits<uint32_t>::max();
  c.publisher_pid = std::numeric_limits<int32_t>::min();
  c.first_row = std::numeric_limits<uint64_t>::max();  // with 0 rows: no overflow
  ASSERT_OK_AND_ASSIGN(ChunkMeta back, DecodeExact(EncodeChunkRecord(c)));
  ExpectSame(c, back);
  EXPECT_TRUE(back.owners.empty());
  EXPECT_TRUE(back.descriptor.empty());

  c.name = std::string(kMaxTableName, 'n');  // the longest name allowed
  c.first_row = 0;
  c.owners.assign(1000, 5);
  c.descriptor.assign(100000, '\xAB');
  ASSERT_OK_AND_ASSIGN(back, DecodeExact(EncodeChunkRecord(c)));
  ExpectSame(c, back);
}

TEST(ChunkRecordTest, EveryTruncationIsRefused) {
  const std::string bytes = EncodeChunkRecord(Sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = DecodeExact(bytes.substr(0, n));
    ASSERT_FALSE(r.ok()) << "a record cut to " << n << " of " << bytes.size()
                         << " bytes was accepted";
    EXPECT_TRUE(r.status().IsInvalid()) << r.status().ToString();
  }
}

TEST(ChunkRecordTest, TrailingBytesAreRefused) {
  const std::string bytes = EncodeChunkRecord(Sample());
  for (const std::string& tail : {std::string(1, '\0'), std::string(8, '\0'), bytes}) {
    ExpectCorrupt(bytes + tail, "lengths do not add up");
  }
}

TEST(ChunkRecordTest, EveryFlippedByteIsRefused) {
  const std::string bytes = EncodeChunkRecord(Sample());
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (unsigned char mask : {0x01, 0x10, 0x80, 0xFF}) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(static_cast<unsigned char>(bad[i]) ^ mask);
      auto r = DecodeExact(bad);
      ASSERT_FALSE(r.ok()) << "byte " << i << " ^ " << int{mask} << " was not noticed";
      EXPECT_TRUE(r.status().IsInvalid()) << r.status().ToString();
    }
  }
}

TEST(ChunkRecordTest, BodyChangesAreCaughtByTheChecksum) {
  // A changed id, row, owner, name byte or descriptor byte keeps every
  // length right: only the checksum can tell.
  const ChunkMeta c = Sample();
  const std::string bytes = EncodeChunkRecord(c);
  const size_t owners_at = kFixed;
  const size_t name_at = owners_at + 4 * c.owners.size();
  const size_t desc_at = name_at + c.name.size();
  for (size_t at : {size_t{16}, size_t{24}, size_t{40}, size_t{48}, owners_at,
                    name_at + 2, desc_at, bytes.size() - 9, bytes.size() - 1}) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x04);
    ExpectCorrupt(bad, "checksum mismatch");
  }
}

TEST(ChunkRecordTest, BadMagicIsRefused) {
  std::string bytes = EncodeChunkRecord(Sample());
  EXPECT_EQ(bytes.substr(0, 8), "QVCHUNK1");
  bytes[7] = '2';
  Reseal(&bytes);
  ExpectCorrupt(bytes, "bad magic");
  std::memset(bytes.data(), 0, 8);
  Reseal(&bytes);
  ExpectCorrupt(bytes, "bad magic");
}

TEST(ChunkRecordTest, UnknownVersionIsRefused) {
  for (uint32_t version : {0u, 3u, 0xFFFFFFFFu}) {
    std::string bytes = EncodeChunkRecord(Sample());
    PutAt<uint32_t>(&bytes, kVersionAt, version);
    Reseal(&bytes);
    ExpectCorrupt(bytes, "unknown version");
  }
}

TEST(ChunkRecordTest, UnknownFlagsAreRefused) {
  for (uint32_t flags : {4u, 7u, 0x80000000u, 0xFFFFFFFFu}) {
    std::string bytes = EncodeChunkRecord(Sample());
    PutAt<uint32_t>(&bytes, kFlagsAt, flags);
    Reseal(&bytes);
    ExpectCorrupt(bytes, "unknown flags");
  }
}

TEST(ChunkRecordTest, LengthsThatDoNotAddUpAreRefused) {
  const ChunkMeta c = Sample();
  const auto name_len = static_cast<uint32_t>(c.name.size());
  const auto desc_len = static_cast<uint32_t>(c.descriptor.size());
  const auto owners = static_cast<uint32_t>(c.owners.size());
  struct Case {
    size_t at;
    uint32_t value;
  };
  for (const Case& k :
       {Case{kNameLenAt, name_len + 1}, Case{kNameLenAt, name_len - 1},
        Case{kNameLenAt, 0}, Case{kDescLenAt, desc_len + 1},
        Case{kDescLenAt, desc_len - 1}, Case{kDescLenAt, 0xFFFFFFFFu},
        Case{kOwnersAt, owners + 1}, Case{kOwnersAt, owners - 1}, Case{kOwnersAt, 0}}) {
    std::string bytes = EncodeChunkRecord(c);
    PutAt<uint32_t>(&bytes, k.at, k.value);
    Reseal(&bytes);
    ExpectCorrupt(bytes, "lengths do not add up");
  }
  // Lengths moved between fields keep the total (and the checksum is
  // right): the fields then take each other's bytes, never bytes outside.
  std::string shifted = EncodeChunkRecord(c);
  PutAt<uint32_t>(&shifted, kNameLenAt, name_len + 4);
  PutAt<uint32_t>(&shifted, kDescLenAt, desc_len - 4);
  Reseal(&shifted);
  // The name now ends in the descriptor's first bytes ("\0\1\2\3").
  ExpectCorrupt(shifted, "control byte");
}

TEST(ChunkRecordTest, CountsOutOfRangeAreRefused) {
  std::string bytes = EncodeChunkRecord(Sample());
  PutAt<uint32_t>(&bytes, kOwnersAt, 65536);
  Reseal(&bytes);
  ExpectCorrupt(bytes, "counts out of range");

  bytes = EncodeChunkRecord(Sample());
  PutAt<uint32_t>(&bytes, kOwnersAt, 0xFFFFFFFFu);
  Reseal(&bytes);
  ExpectCorrupt(bytes, "counts out of range");

  bytes = EncodeChunkRecord(Sample());
  PutAt<uint32_t>(&bytes, kNameLenAt, static_cast<uint32_t>(kMaxTableName + 1));
  Reseal(&bytes);
  ExpectCorrupt(bytes, "counts out of range");
}

TEST(ChunkRecordTest, BadNamesAreRefused) {
  // The encoder writes whatever it is given (with a right checksum); the
  // decoder applies the table-name rules.
  for (const std::string& name :
       {std::string(), std::string(kMaxTableName + 1, 'x'), std::string("tab\tle"),
        std::string("new\nline"), std::string("nul\0byte", 8), std::string("del\x7F"),
        std::string("\x1B[31mred")}) {
    ChunkMeta c = Sample();
    c.name = name;
    auto r = DecodeExact(EncodeChunkRecord(c));
    ASSERT_FALSE(r.ok()) << "name of " << name.size() << " bytes was accepted";
    EXPECT_TRUE(r.status().IsInvalid()) << r.status().ToString();
  }
}

TEST(ChunkRecordTest, RowRangeThatOverflowsIsRefused) {
  ChunkMeta c = Sample();
  c.first_row = std::numeric_limits<uint64_t>::max() - 5;
  c.num_rows = 6;
  ExpectCorrupt(EncodeChunkRecord(c), "row range overflows");
  c.num_rows = 5;  // ends exactly at the largest row: fine
  ASSERT_OK(DecodeExact(EncodeChunkRecord(c)).status());
}

TEST(ChunkRecordTest, TableNameRules) {
  ASSERT_OK(CheckTableName("a"));
  ASSERT_OK(CheckTableName(std::string(kMaxTableName, 'z')));
  ASSERT_OK(CheckTableName("with spaces, punctuation: and \xE2\x82\xAC"));
  EXPECT_TRUE(CheckTableName("").IsInvalid());
  EXPECT_TRUE(CheckTableName(std::string(kMaxTableName + 1, 'z')).IsInvalid());
  for (int c = 0; c < 0x20; ++c) {
    EXPECT_TRUE(CheckTableName(std::string("x") + static_cast<char>(c)).IsInvalid()) << c;
  }
  EXPECT_TRUE(CheckTableName("x\x7F").IsInvalid());
}

// Records written before publish groups (version 1: no group fields) are
// still read; their chunks count as whole publishes.
TEST(ChunkRecordTest, VersionOneRecordsAreStillRead) {
  ChunkMeta c = Sample();
  std::string v2 = EncodeChunkRecord(c);
  std::string v1 = v2.substr(0, kFixedV1) + v2.substr(kFixed, v2.size() - 8 - kFixed);
  v1.append(8, '\0');
  PutAt<uint32_t>(&v1, kVersionAt, 1);
  Reseal(&v1);
  ASSERT_OK_AND_ASSIGN(ChunkMeta back, DecodeExact(v1));
  c.group = 0;
  c.group_chunks = 0;
  ExpectSame(c, back);
  EXPECT_EQ(IncompleteGroups({back}), "");
  // A version 2 record with a non-zero reserved field is refused.
  PutAt<uint32_t>(&v2, 76, 1);
  Reseal(&v2);
  ExpectCorrupt(v2, "reserved");
}

// The one rule of whole publishes: every group has as many chunks as its
// publish made; chunks without a group are whole by themselves.
TEST(ChunkRecordTest, IncompleteGroupsNamesThePublishThatIsNotWhole) {
  auto chunk = [](uint64_t group, uint32_t of, uint64_t first_row, uint32_t publisher) {
    ChunkMeta c;
    c.group = group;
    c.group_chunks = of;
    c.first_row = first_row;
    c.publisher = publisher;
    return c;
  };
  EXPECT_EQ(IncompleteGroups({}), "");
  EXPECT_EQ(IncompleteGroups({chunk(0, 0, 0, 1), chunk(0, 0, 10, 2)}), "");
  EXPECT_EQ(
      IncompleteGroups({chunk(7, 2, 0, 1), chunk(7, 2, 500, 1), chunk(9, 1, 1000, 2)}),
      "");
  const std::string why =
      IncompleteGroups({chunk(7, 3, 500, 1), chunk(7, 3, 0, 1), chunk(9, 1, 1000, 2)});
  EXPECT_EQ(why, "2 of 3 chunks of the publish by node 1 (first row 0) are registered");
}

}  // namespace
}  // namespace quiver::control
