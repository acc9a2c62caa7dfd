// Checksums of spill files (spill_dir.h): fast enough to cost a spill or a
// restore little beside the copy the kernel makes, strong enough to catch
// a truncated, shifted, swapped or altered file. Not a defence against an
// attacker (the directory is the daemon's own, mode 0700).
//
// Both take whole blocks in order (Blocks, any number of calls) and then
// the last bytes, fewer than a block (Finish).
#pragma once

#include <cstdint>

namespace quiver::store {

// Files of version 1 ("QUVSPILL"): four multiply-rotate lanes over 8-byte
// words, 32-byte blocks; about 12 GB/s here. Read only, for files a daemon
// of an earlier version spilled.
class SpillChecksumV1 {
 public:
  static constexpr uint64_t kBlock = 32;
  void Blocks(const uint8_t* p, uint64_t n);
  uint64_t Finish(const uint8_t* p, uint64_t n) const;

 private:
  uint64_t lane_[4] = {0x9E3779B185EBCA87ULL + 0xC2B2AE3D27D4EB4FULL,
                       0xC2B2AE3D27D4EB4FULL, 0, 0 - 0x9E3779B185EBCA87ULL};
  uint64_t total_ = 0;
};

// Files of version 2 ("QUVSPIL2"): eight lanes, each adding the product of
// the two 32-bit halves of a word keyed by its lane and its block's place,
// and the raw word beside it; mixed every 16 blocks of 64 bytes. The
// lanes are those of a 256-bit vector: with AVX2 about 34 GB/s here (2.8x
// version 1); the portable code gives the same sums.
class SpillChecksum {
 public:
  static constexpr uint64_t kBlock = 64;
  void Blocks(const uint8_t* p, uint64_t n);
  uint64_t Finish(const uint8_t* p, uint64_t n) const;
  // The portable code, whatever the CPU (for tests).
  void BlocksPortable(const uint8_t* p, uint64_t n);

 private:
  uint64_t acc_[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  uint64_t blocks_ = 0;
  uint64_t total_ = 0;
};

}  // namespace quiver::store
