// Word-at-a-time helpers over Arrow bitmaps (validity and boolean data) for
// the validation, comparison and printing code.
//
// Every function reads only the bytes that hold bits of the requested range
// [offset, offset + length), so a bitmap exactly BytesForBits(offset + length)
// long is never overrun. Bits are numbered least-significant first, as the
// Arrow format specifies; the word loads below rely on a little-endian host
// (the only byte order Quiver supports, like the Arrow format's default).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

#include "quiver/columnar/array_data.h"

namespace quiver::internal {

static_assert(std::endian::native == std::endian::little,
              "bitmap word loads assume a little-endian host");

// The bits [pos, min(pos + 64, end)) of `bits` as the low bits of a word; the
// bits beyond `end` read as zero and their bytes are not touched.
inline uint64_t ReadBitWord(const uint8_t* bits, int64_t pos, int64_t end) {
  const int64_t nbits = std::min<int64_t>(64, end - pos);
  const int64_t first = pos >> 3;
  const int64_t nbytes = ((pos + nbits - 1) >> 3) - first + 1;  // 1..9
  const int shift = static_cast<int>(pos & 7);
  uint64_t word = 0;
  if (nbytes <= 8) {
    std::memcpy(&word, bits + first, static_cast<size_t>(nbytes));
    word >>= shift;
  } else {
    // Nine bytes only happen when the range starts inside a byte (shift > 0).
    std::memcpy(&word, bits + first, 8);
    word = (word >> shift) | (static_cast<uint64_t>(bits[first + 8]) << (64 - shift));
  }
  if (nbits < 64) word &= (uint64_t{1} << nbits) - 1;
  return word;
}

// True if bits [a_offset, a_offset + length) of `a` equal those of `b` at
// b_offset, whatever the alignment of either range.
inline bool BitRangesEqual(const uint8_t* a, int64_t a_offset, const uint8_t* b,
                           int64_t b_offset, int64_t length) {
  for (int64_t i = 0; i < length; i += 64) {
    if (ReadBitWord(a, a_offset + i, a_offset + length) !=
        ReadBitWord(b, b_offset + i, b_offset + length)) {
      return false;
    }
  }
  return true;
}

// Calls fn(start, run_length) for every maximal run of set bits in
// [offset, offset + length) of `bits`, in order; `start` is relative to
// `offset`. A null `bits` is one run covering everything (no nulls). Stops
// and returns false as soon as fn returns false; returns true otherwise.
template <typename Fn>
bool VisitSetBitRuns(const uint8_t* bits, int64_t offset, int64_t length, Fn&& fn) {
  if (length <= 0) return true;
  if (bits == nullptr) return fn(int64_t{0}, length);
  const int64_t end = offset + length;
  int64_t run_start = -1;  // absolute bit position of the open run, or -1
  for (int64_t pos = offset; pos < end; pos += 64) {
    const uint64_t word = ReadBitWord(bits, pos, end);
    const int nbits = static_cast<int>(std::min<int64_t>(64, end - pos));
    int i = 0;
    while (i < nbits) {
      if (run_start < 0) {
        const uint64_t rest = word >> i;
        if (rest == 0) break;
        i += std::countr_zero(rest);
        run_start = pos + i;
      } else {
        // Bits past nbits are zero in `word`, so a run reaching the end of a
        // short (final) word is closed at nbits.
        const uint64_t rest = ~word >> i;
        if (rest == 0) break;  // the run continues into the next word
        i = std::min(nbits, i + std::countr_zero(rest));
        if (!fn(run_start - offset, pos + i - run_start)) return false;
        run_start = -1;
      }
    }
  }
  if (run_start >= 0) return fn(run_start - offset, end - run_start);
  return true;
}

// Calls fn(i) for every set bit i (relative to `offset`); a null `bits`
// means all set. Stops and returns false as soon as fn returns false.
template <typename Fn>
bool VisitSetBits(const uint8_t* bits, int64_t offset, int64_t length, Fn&& fn) {
  return VisitSetBitRuns(bits, offset, length, [&](int64_t start, int64_t n) {
    for (int64_t i = start; i < start + n; ++i) {
      if (!fn(i)) return false;
    }
    return true;
  });
}

// Position (relative to `offset`) of the first clear bit, or `length` if all
// bits in the range are set.
inline int64_t FindFirstClearBit(const uint8_t* bits, int64_t offset, int64_t length) {
  for (int64_t i = 0; i < length; i += 64) {
    const int64_t n = std::min<int64_t>(64, length - i);
    uint64_t clear = ~ReadBitWord(bits, offset + i, offset + length);
    if (n < 64) clear &= (uint64_t{1} << n) - 1;
    if (clear != 0) return i + std::countr_zero(clear);
  }
  return length;
}

// Reads the i-th T of a buffer that may not be aligned for T.
template <typename T>
inline T LoadValue(const uint8_t* base, int64_t i) {
  T v;
  std::memcpy(&v, base + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

// The validity bitmap of `d` as the readers above take it: null when every
// slot is valid (no bitmap, or a null count of 0 that makes it irrelevant).
inline const uint8_t* ValidityBits(const ArrayData& d) {
  if (d.null_count == 0 || d.buffers.empty() || d.buffers[0] == nullptr) return nullptr;
  return d.buffers[0]->data();
}

}  // namespace quiver::internal
