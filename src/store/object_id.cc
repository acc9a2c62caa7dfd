#include "quiver/store/object_id.h"

#include <openssl/rand.h>
#include <openssl/sha.h>
#include <sys/random.h>

#include <cerrno>

namespace quiver::store {

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

ObjectId ObjectId::FromRandom() {
  ObjectId id;
  size_t got = 0;
  while (got < kSize) {
    const ssize_t n = getrandom(id.bytes_.data() + got, kSize - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      // No getrandom (very old kernels): OpenSSL's generator, seeded by it.
      if (RAND_bytes(id.bytes_.data(), static_cast<int>(kSize)) != 1) std::abort();
      got = kSize;
    }
  }
  return id;
}

ObjectId ObjectId::FromName(std::string_view name) {
  static_assert(SHA_DIGEST_LENGTH == kSize);
  ObjectId id;
  SHA1(reinterpret_cast<const unsigned char*>(name.data()), name.size(),
       id.bytes_.data());
  return id;
}

Result<ObjectId> ObjectId::FromBinary(std::string_view bytes) {
  if (bytes.size() != kSize) {
    return Status::Invalid("an object id is ", kSize, " bytes, not ", bytes.size());
  }
  ObjectId id;
  std::memcpy(id.bytes_.data(), bytes.data(), kSize);
  return id;
}

Result<ObjectId> ObjectId::FromHex(std::string_view hex) {
  if (hex.size() != 2 * kSize) {
    return Status::Invalid("an object id is ", 2 * kSize, " hexadecimal digits, not ",
                           hex.size());
  }
  ObjectId id;
  for (size_t i = 0; i < kSize; ++i) {
    const int hi = HexDigit(hex[2 * i]), lo = HexDigit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return Status::Invalid("an object id is hexadecimal: character ",
                             hi < 0 ? 2 * i : 2 * i + 1, " is not a digit");
    }
    id.bytes_[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return id;
}

std::string ObjectId::Hex() const {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(2 * kSize, '0');
  for (size_t i = 0; i < kSize; ++i) {
    out[2 * i] = kDigits[bytes_[i] >> 4];
    out[2 * i + 1] = kDigits[bytes_[i] & 15];
  }
  return out;
}

}  // namespace quiver::store
