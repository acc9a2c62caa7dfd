// The copy-free upload piece encoding: what the client sends is the
// generated message's encoding, and the daemon's parser reads it as the
// generated parser does (fields in any order, the last value winning), with
// the data left in place; it refuses what no sender writes. The fuzz target
// (fuzz/control_fuzz.cc) checks on arbitrary bytes that it accepts nothing
// the generated parser refuses.
#include "control/rpc/wire.h"

#include <gtest/gtest.h>

#include <string>

#include "common/status_macros.h"

namespace quiver::control {
namespace {

TEST(UploadPieceTest, HeadAndDataAreTheGeneratedEncoding) {
  const std::string data(100000, 'q');
  const std::string bytes = UploadPieceHead(7, 1 << 20, data.size()) + data;
  auto generated = ParseMessage<wire::UploadPieceRequest>(bytes);
  ASSERT_TRUE(generated.ok()) << generated.status().ToString();
  EXPECT_EQ(generated->upload(), 7u);
  EXPECT_EQ(generated->offset(), 1u << 20);
  EXPECT_EQ(generated->data(), data);

  wire::UploadPieceRequest m;
  m.set_upload(7);
  m.set_offset(1 << 20);
  m.set_data(data);
  EXPECT_EQ(m.SerializeAsString(), bytes);
}

TEST(UploadPieceTest, ReadsInPlaceWhatTheGeneratedParserReads) {
  wire::UploadPieceRequest m;
  m.set_upload(3);
  m.set_offset(0);  // zero: absent from the encoding
  m.set_data("abc");
  const std::string bytes = m.SerializeAsString();
  ASSERT_OK_AND_ASSIGN(UploadPieceView v, ParseUploadPiece(bytes));
  EXPECT_EQ(v.upload, 3u);
  EXPECT_EQ(v.offset, 0u);
  EXPECT_EQ(v.data, "abc");
  EXPECT_EQ(v.data.data(), bytes.data() + bytes.size() - 3);  // not a copy

  // Data first, a padded varint, the upload twice: the last value wins.
  std::string odd = std::string("\x1a\x02hi", 4) + "\x08\x01" +
                    std::string("\x10\x89\x00", 3) + "\x08\x02";
  auto generated = ParseMessage<wire::UploadPieceRequest>(odd);
  ASSERT_TRUE(generated.ok());
  ASSERT_OK_AND_ASSIGN(v, ParseUploadPiece(odd));
  EXPECT_EQ(v.upload, generated->upload());
  EXPECT_EQ(v.upload, 2u);
  EXPECT_EQ(v.offset, 9u);
  EXPECT_EQ(v.data, "hi");

  ASSERT_OK_AND_ASSIGN(v, ParseUploadPiece(""));  // every field absent
  EXPECT_EQ(v.upload, 0u);
  EXPECT_TRUE(v.data.empty());
}

TEST(UploadPieceTest, MalformedPiecesAreRefusedByBoth) {
  const std::string good = UploadPieceHead(1, 2, 10) + std::string(10, 'x');
  const std::string cases[] = {
      good.substr(0, good.size() - 1),  // data cut short
      std::string("\x08", 1),           // a field without its value
      std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                  12),                             // varint > 10 bytes
      std::string("\x00\x01", 2),                  // field number 0
      std::string("\x1a\xff\xff\xff\xff\x0f", 6),  // a length past the end
      std::string("\x0f", 1),                      // wire type 7 does not exist
  };
  for (const std::string& bytes : cases) {
    EXPECT_FALSE(ParseMessage<wire::UploadPieceRequest>(bytes).ok());
    auto own = ParseUploadPiece(bytes);
    ASSERT_FALSE(own.ok());
    EXPECT_TRUE(own.status().IsInvalid());
    EXPECT_NE(own.status().message().find("UploadPieceRequest"), std::string::npos)
        << own.status().ToString();
  }
}

TEST(UploadPieceTest, SpellingsNoSenderWritesAreRefused) {
  const std::string cases[] = {
      std::string("\x98\x06\x05", 3),          // an unknown field (99)
      std::string("\x88\x00\x05", 3),          // field 1's tag in two bytes
      std::string("\x0d\x01\x02\x03\x04", 5),  // field 1 as fixed32
  };
  for (const std::string& bytes : cases) {
    EXPECT_TRUE(ParseMessage<wire::UploadPieceRequest>(bytes).ok());
    EXPECT_TRUE(ParseUploadPiece(bytes).status().IsInvalid());
  }
}

}  // namespace
}  // namespace quiver::control
