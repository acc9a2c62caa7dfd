// ObjectId: the name of an object in Quiver's object store (docs/store.md).
//
// Twenty bytes, as Plasma's: random (FromRandom), the SHA-1 of a string
// (FromName: the same name gives the same id in every process), or given
// (FromBinary, FromHex). An id is unique in the whole cluster: a second
// Create of it anywhere is AlreadyExists while the first lives.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "quiver/util/result.h"

namespace quiver::store {

class ObjectId {
 public:
  static constexpr size_t kSize = 20;

  ObjectId() { bytes_.fill(0); }  // the nil id: no object has it
  // 20 bytes from the system's random source.
  static ObjectId FromRandom();
  // SHA-1 of `name`.
  static ObjectId FromName(std::string_view name);
  // Exactly 20 bytes (Invalid otherwise).
  static Result<ObjectId> FromBinary(std::string_view bytes);
  // 40 hexadecimal digits, either case (Invalid otherwise).
  static Result<ObjectId> FromHex(std::string_view hex);

  std::string Binary() const {
    return std::string(reinterpret_cast<const char*>(bytes_.data()), kSize);
  }
  std::string Hex() const;  // 40 lower-case digits
  const uint8_t* data() const { return bytes_.data(); }
  bool nil() const { return *this == ObjectId(); }
  // The first eight bytes as a number: ids are uniform (random or a hash),
  // so this spreads them evenly (directory placement, hash tables).
  uint64_t Prefix() const {
    uint64_t v;
    std::memcpy(&v, bytes_.data(), sizeof(v));
    return v;
  }

  // Compared as words, inline (hash tables compare ids on every look-up).
  bool operator==(const ObjectId& o) const {
    uint64_t a[2], b[2];
    uint32_t c, d;
    std::memcpy(a, bytes_.data(), 16);
    std::memcpy(b, o.bytes_.data(), 16);
    std::memcpy(&c, bytes_.data() + 16, 4);
    std::memcpy(&d, o.bytes_.data() + 16, 4);
    return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (c ^ d)) == 0;
  }
  bool operator!=(const ObjectId& o) const { return !(*this == o); }
  bool operator<(const ObjectId& o) const { return bytes_ < o.bytes_; }

 private:
  std::array<uint8_t, kSize> bytes_;
};

struct ObjectIdHash {
  size_t operator()(const ObjectId& id) const { return id.Prefix(); }
};

}  // namespace quiver::store
