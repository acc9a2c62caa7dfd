// Byte-order conversion of decoded arrays (internal to the IPC reader and
// writer).
//
// Arrow IPC data whose Schema says `endianness: Big` stores every multi-byte
// value of a buffer in big-endian order; bitmaps, boolean values, union type
// ids, fixed-size binary and raw byte data have no byte order. Converting an
// array swaps each buffer element by element, at the widths its type lays
// out, into new memory (the input may be read-only, e.g. a mapped file).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "quiver/columnar/array_data.h"
#include "quiver/columnar/memory_pool.h"

namespace quiver::ipc::internal {

// A copy of `data` (and its children; its dictionary too when
// `swap_dictionaries`, else the dictionary is shared as it is) with every
// buffer converted from `from` byte order to the other one. Buffers without a
// byte order are shared, not copied. Never reads outside a buffer: only
// whole elements of each buffer are swapped, and a trailing partial element
// is copied unchanged, so undersized input stays undersized for the checks
// that follow. NotImplemented for a type it does not know; Invalid for
// nesting deeper than `max_depth` or children that do not match the type.
Result<ArrayDataPtr> SwapEndianness(const ArrayData& data, Endianness from,
                                    bool swap_dictionaries, MemoryPool* pool,
                                    int max_depth = 64);

// The integer of type T at byte offset `pos` of `p`, stored big-endian.
template <typename T>
T LoadBigEndian(const uint8_t* p) {
  static_assert(std::is_integral_v<T>);
  using U = std::make_unsigned_t<T>;
  U v;
  std::memcpy(&v, p, sizeof(U));
  if constexpr (sizeof(U) == 2) {
    v = __builtin_bswap16(v);
  } else if constexpr (sizeof(U) == 4) {
    v = __builtin_bswap32(v);
  } else if constexpr (sizeof(U) == 8) {
    v = __builtin_bswap64(v);
  }
  return static_cast<T>(v);
}

}  // namespace quiver::ipc::internal
