// Spill checksums (store/spill_checksum.h): the vector code sums as the
// portable code does, every kind of damage changes the sum, and files an
// earlier version spilled (checksum version 1) still come back.
#include "store/spill_checksum.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "store/spill_dir.h"

namespace quiver::store {
namespace {

std::vector<uint8_t> Random(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// The sum of `v`, given to Blocks in pieces of `piece` bytes (whole blocks).
template <typename Sum>
uint64_t SumOf(const std::vector<uint8_t>& v, size_t piece, bool portable = false) {
  Sum s;
  const size_t whole = v.size() - v.size() % Sum::kBlock;
  for (size_t at = 0; at < whole; at += piece) {
    const size_t n = std::min(piece, whole - at);
    if constexpr (std::is_same_v<Sum, SpillChecksum>) {
      if (portable) {
        s.BlocksPortable(v.data() + at, n);
        continue;
      }
    }
    s.Blocks(v.data() + at, n);
  }
  return s.Finish(v.data() + whole, v.size() - whole);
}

TEST(SpillChecksumTest, TheVectorCodeSumsAsThePortableCode) {
  for (size_t n : {0, 1, 63, 64, 65, 1023, 1024, 1025, 64 * 17 + 5, 1 << 20}) {
    const auto v = Random(n, static_cast<uint32_t>(n));
    const uint64_t portable = SumOf<SpillChecksum>(v, 1 << 18, true);
    EXPECT_EQ(SumOf<SpillChecksum>(v, 1 << 18), portable) << n;
    // However the blocks are cut into calls.
    EXPECT_EQ(SumOf<SpillChecksum>(v, 64), portable) << n;
    EXPECT_EQ(SumOf<SpillChecksum>(v, 64 * 3, true), portable) << n;
  }
}

TEST(SpillChecksumTest, EveryKindOfDamageChangesTheSum) {
  const auto v = Random(64 * 1024 + 17, 7);
  const uint64_t sum = SumOf<SpillChecksum>(v, 1 << 18);
  // One bit anywhere, in the blocks and in the tail.
  for (size_t at : {size_t{0}, size_t{7}, size_t{8}, size_t{63}, size_t{64},
                    size_t{64 * 16 - 1}, size_t{40000}, v.size() - 17, v.size() - 1}) {
    for (int bit : {0, 5, 7}) {
      auto w = v;
      w[at] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_NE(SumOf<SpillChecksum>(w, 1 << 18), sum) << at << " bit " << bit;
    }
  }
  // Two neighbouring words swapped (each lane also adds the word beside it).
  auto swapped = v;
  std::swap_ranges(swapped.begin() + 128, swapped.begin() + 136, swapped.begin() + 136);
  EXPECT_NE(SumOf<SpillChecksum>(swapped, 1 << 18), sum);
  // Two whole blocks swapped, and everything shifted by a byte.
  auto blocks = v;
  std::swap_ranges(blocks.begin(), blocks.begin() + 64, blocks.begin() + 64);
  EXPECT_NE(SumOf<SpillChecksum>(blocks, 1 << 18), sum);
  auto periods = v;  // blocks 0 and 16: the same place in two mix periods
  std::swap_ranges(periods.begin(), periods.begin() + 64, periods.begin() + 64 * 16);
  EXPECT_NE(SumOf<SpillChecksum>(periods, 1 << 18), sum);
  std::vector<uint8_t> shifted(v.begin() + 1, v.end());
  shifted.push_back(0);
  EXPECT_NE(SumOf<SpillChecksum>(shifted, 1 << 18), sum);
  // Zeros of another length.
  EXPECT_NE(SumOf<SpillChecksum>(std::vector<uint8_t>(1024), 1 << 18),
            SumOf<SpillChecksum>(std::vector<uint8_t>(1088), 1 << 18));
}

TEST(SpillChecksumTest, FilesOfTheFirstVersionStillComeBack) {
  char path[] = "/tmp/quiver-spill-sum-XXXXXX";
  ASSERT_NE(mkdtemp(path), nullptr);
  const std::string dir = path;
  ASSERT_OK_AND_ASSIGN(SpillDir spill, SpillDir::Open(dir));
  const ObjectId id = ObjectId::FromName("from an earlier daemon");
  const auto bytes = Random(300000 + 5, 9);
  // Written as a daemon of version 1 wrote it: the bytes, then the trailer
  // "QUVSPILL", the id's prefix, the length and the version-1 sum.
  auto write = [&](const std::vector<uint8_t>& body) {
    const uint64_t trailer[4] = {0x4C4C495053565551ULL, id.Prefix(), bytes.size(),
                                 SumOf<SpillChecksumV1>(bytes, 1 << 18)};
    std::ofstream f(dir + "/" + id.Hex() + ".spill", std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(body.data()),
            static_cast<std::streamsize>(body.size()));
    f.write(reinterpret_cast<const char*>(trailer), sizeof(trailer));
  };
  write(bytes);
  std::vector<uint8_t> out(bytes.size());
  ASSERT_OK(spill.Read(id, out.data(), out.size()));
  EXPECT_EQ(out, bytes);
  auto damaged = bytes;
  damaged[123456] ^= 0x10;
  write(damaged);
  Status st = spill.Read(id, out.data(), out.size());
  EXPECT_TRUE(st.IsIOError());
  EXPECT_NE(st.message().find("corrupt"), std::string::npos) << st.ToString();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace quiver::store
