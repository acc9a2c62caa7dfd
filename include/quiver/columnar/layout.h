// The buffer layout of a data type: which buffers an array of it has, in
// which order, what each holds and how many bytes it needs for a given
// offset and length. The one description that validation, the IPC reader,
// descriptors, the C Data importer and exporter and byte-order conversion
// all read, so that the rule is written once.
//
// The buffers are listed in ArrayData order (slot 0 first). That is also
// the order of IPC messages and of the C Data Interface, without the
// always-null slots: unions and run-end encoded arrays keep slot 0 in
// ArrayData for a validity bitmap they do not have, and the null type keeps
// one too. (An IPC V4 message has a validity entry for a union; the IPC
// layer adds it.) Binary and string views have any number of variadic data
// buffers after the fixed ones.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "quiver/columnar/type.h"

namespace quiver {

enum class BufferKind : int8_t {
  kAlwaysNull,  // an ArrayData slot that is always null; no buffer on the wire
  kValidity,    // one bit per slot; may be absent when there are no nulls
  kBitmap,      // one bit per slot: bool values
  kFixedWidth,  // byte_width bytes per slot
  kOffsets,     // byte_width (4 or 8) per slot, plus one: binary, list, map
  kData,        // bytes of binary values, as many as the last offset says
};

// The byte order of a buffer's elements, for converting between big- and
// little-endian data.
enum class ByteOrder : int8_t {
  kNone,          // bits or bytes: nothing to swap
  kIntegers,      // integers of integer_width bytes (the element, or its parts)
  kMonthDayNano,  // int32 months, int32 days, int64 nanoseconds
  kView,          // binary view: int32 length, then 12 inline bytes or a
                  // 4-byte prefix, int32 buffer index and int32 offset
};

struct BufferLayout {
  BufferKind kind = BufferKind::kAlwaysNull;
  // For messages: "validity", "values", "indices", "offsets", "sizes",
  // "type ids", "views", "data".
  const char* name = "validity";
  int byte_width = 0;  // kFixedWidth and kOffsets: bytes per element
  ByteOrder byte_order = ByteOrder::kNone;
  int integer_width = 0;  // kIntegers: bytes per integer

  // Elements the buffer must hold for slots [offset, offset + length) (a
  // buffer starts at slot 0 of the array's data, not at `offset`): bits for
  // bitmaps, offset + length + 1 offsets, offset + length fixed-width
  // values; 0 for always-null and data buffers (the last offset bounds a
  // data buffer). False if that overflows int64.
  bool Elements(int64_t offset, int64_t length, int64_t* out) const;
  // The bytes `elements` elements take; false on overflow.
  bool BytesFor(int64_t elements, int64_t* out) const;
  // The fewest bytes the buffer must have for [offset, offset + length):
  // the bytes of Elements(), except that an empty array (length 0) may have
  // no offsets at all. False on overflow.
  bool MinimumBytes(int64_t offset, int64_t length, int64_t* out) const;
};

// A type's buffers: at most three (validity, offsets, data), held inline so
// that describing a type allocates nothing.
class BufferList {
 public:
  static constexpr size_t kMaxBuffers = 3;
  BufferList() = default;
  BufferList(std::initializer_list<BufferLayout> list) {
    for (const BufferLayout& b : list) {
      if (size_ < kMaxBuffers) items_[size_++] = b;  // no type has more
    }
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const BufferLayout& operator[](size_t i) const { return items_[i]; }
  const BufferLayout* begin() const { return items_.data(); }
  const BufferLayout* end() const { return items_.data() + size_; }

 private:
  std::array<BufferLayout, kMaxBuffers> items_{};
  size_t size_ = 0;
};

struct DataTypeLayout {
  BufferList buffers;     // in ArrayData order, slot 0 included
  bool variadic = false;  // views: variadic data buffers follow `buffers`

  // Buffers in IPC (V5) and the C Data Interface: all but the always-null
  // slots (views: the fixed ones).
  int num_wire_buffers() const;
  // The ArrayData slot of wire buffer `i`.
  int WireToSlot(int i) const;
};

// The layout of `type`'s own buffers (not its children's or dictionary's).
// Widths are read from the type: it should be well-formed (a dictionary
// without index type gets indices of width 0).
DataTypeLayout LayoutOf(const DataType& type);

}  // namespace quiver
