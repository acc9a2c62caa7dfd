#include "store/spill_checksum.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace quiver::store {

namespace {

constexpr uint64_t k1 = 0x9E3779B185EBCA87ULL, k2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint32_t kPrime32 = 0x9E3779B1u;
// Lane keys (fractional parts of square roots of primes).
alignas(32) constexpr uint64_t kKey[8] = {0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL,
                                          0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
                                          0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
                                          0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};
constexpr int kMixEvery = 16;  // blocks

constexpr uint64_t Rotl(uint64_t v, int r) { return (v << r) | (v >> (64 - r)); }

// The keys of block k of each mix period: with one key for all, blocks
// swapped inside a period would sum alike.
struct BlockKeys {
  alignas(32) uint64_t key[kMixEvery][8];
};
constexpr BlockKeys MakeBlockKeys() {
  BlockKeys b{};
  for (int k = 0; k < kMixEvery; ++k) {
    for (int j = 0; j < 8; ++j) {
      b.key[k][j] = Rotl(kKey[j], 4 * k + 1) ^ (static_cast<uint64_t>(k) * k1);
    }
  }
  return b;
}
constexpr BlockKeys kBlockKeys = MakeBlockKeys();

uint64_t Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= k2;
  h ^= h >> 29;
  return h;
}

// Lane j after the mix: xor-shift, keyed, each 32-bit half times a prime.
uint64_t Mix(uint64_t a, int j) {
  a ^= a >> 47;
  a ^= kKey[7 - j];
  return (a & 0xffffffffu) * kPrime32 + (((a >> 32) * kPrime32) << 32);
}

#if defined(__x86_64__)
// acc[j] += lo32(w[j] ^ key[j]) * hi32(w[j] ^ key[j]) + w[j ^ 1], four lanes
// (key: the block's).
__attribute__((target("avx2"))) inline __m256i Lanes(__m256i a, __m256i d, __m256i key) {
  const __m256i x = _mm256_xor_si256(d, key);
  const __m256i product = _mm256_mul_epu32(x, _mm256_srli_epi64(x, 32));
  const __m256i beside = _mm256_shuffle_epi32(d, _MM_SHUFFLE(1, 0, 3, 2));
  return _mm256_add_epi64(a, _mm256_add_epi64(product, beside));
}

// Mix of four lanes.
__attribute__((target("avx2"))) inline __m256i MixLanes(__m256i a, __m256i key,
                                                        __m256i prime) {
  a = _mm256_xor_si256(a, _mm256_srli_epi64(a, 47));
  a = _mm256_xor_si256(a, key);
  const __m256i lo = _mm256_mul_epu32(a, prime);
  const __m256i hi = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), prime);
  return _mm256_add_epi64(lo, _mm256_slli_epi64(hi, 32));
}

__attribute__((target("avx2"))) void BlocksAvx2(uint64_t* acc, uint64_t* blocks,
                                                const uint8_t* p, uint64_t n) {
  const __m256i mix0 =
      _mm256_setr_epi64x(static_cast<int64_t>(kKey[7]), static_cast<int64_t>(kKey[6]),
                         static_cast<int64_t>(kKey[5]), static_cast<int64_t>(kKey[4]));
  const __m256i mix1 =
      _mm256_setr_epi64x(static_cast<int64_t>(kKey[3]), static_cast<int64_t>(kKey[2]),
                         static_cast<int64_t>(kKey[1]), static_cast<int64_t>(kKey[0]));
  const __m256i prime = _mm256_set1_epi32(static_cast<int>(kPrime32));
  __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc));
  __m256i a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + 4));
  uint64_t b = *blocks;
  for (uint64_t i = 0; i < n; i += 64) {
    const uint64_t* key = kBlockKeys.key[b % kMixEvery];
    a0 = Lanes(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)),
               _mm256_load_si256(reinterpret_cast<const __m256i*>(key)));
    a1 = Lanes(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32)),
               _mm256_load_si256(reinterpret_cast<const __m256i*>(key + 4)));
    if (++b % kMixEvery == 0) {
      a0 = MixLanes(a0, mix0, prime);
      a1 = MixLanes(a1, mix1, prime);
    }
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc), a0);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 4), a1);
  *blocks = b;
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

}  // namespace

void SpillChecksumV1::Blocks(const uint8_t* p, uint64_t n) {
  for (uint64_t i = 0; i < n; i += kBlock) {
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * l, 8);
      lane_[l] = Rotl(lane_[l] + w * k2, 31) * k1;
    }
  }
  total_ += n;
}

uint64_t SpillChecksumV1::Finish(const uint8_t* p, uint64_t n) const {
  uint64_t h =
      Rotl(lane_[0], 1) + Rotl(lane_[1], 7) + Rotl(lane_[2], 12) + Rotl(lane_[3], 18);
  for (uint64_t i = 0; i < n; ++i) h = Rotl(h ^ (p[i] * k1), 11) * k2;
  h ^= total_ + n;
  return Avalanche(h);
}

void SpillChecksum::BlocksPortable(const uint8_t* p, uint64_t n) {
  for (uint64_t i = 0; i < n; i += kBlock) {
    uint64_t w[8];
    std::memcpy(w, p + i, sizeof(w));
    const uint64_t* key = kBlockKeys.key[blocks_ % kMixEvery];
    for (int j = 0; j < 8; ++j) {
      const uint64_t x = w[j] ^ key[j];
      acc_[j] += (x & 0xffffffffu) * (x >> 32) + w[j ^ 1];
    }
    if (++blocks_ % kMixEvery == 0) {
      for (int j = 0; j < 8; ++j) acc_[j] = Mix(acc_[j], j);
    }
  }
  total_ += n;
}

void SpillChecksum::Blocks(const uint8_t* p, uint64_t n) {
#if defined(__x86_64__)
  if (HasAvx2()) {
    BlocksAvx2(acc_, &blocks_, p, n);
    total_ += n;
    return;
  }
#endif
  BlocksPortable(p, n);
}

uint64_t SpillChecksum::Finish(const uint8_t* p, uint64_t n) const {
  uint64_t h = total_ + n;
  for (int j = 0; j < 8; ++j) h = Rotl(h ^ Avalanche(acc_[j] + kKey[j]), 27) * k1;
  for (uint64_t i = 0; i < n; ++i) h = Rotl(h ^ (p[i] * k1), 11) * k2;
  return Avalanche(h);
}

}  // namespace quiver::store
