// ArrayData: the plain description of one Arrow array (type, length, offset,
// null count, buffers, children, dictionary). Typed Array classes
// (array.h) are thin views over it.
//
// Buffer slots follow the Arrow layout of the type, validity bitmap first:
//   null: [null]    primitive/bool/decimal/fixed_size_binary: [validity, values]
//   string/binary (and large): [validity, offsets, data]
//   list/large_list/map: [validity, offsets] + 1 child
//   fixed_size_list: [validity] + 1 child     struct: [validity] + N children
//   dictionary: [validity, indices] + `dictionary` holds the values.
// A null validity buffer means "no nulls". Offsets and the validity bitmap are
// interpreted starting at `offset` (slicing never copies).
// ArrayData is immutable once shared; concurrent reads are safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "quiver/columnar/buffer.h"
#include "quiver/columnar/type.h"

namespace quiver {

constexpr int64_t kUnknownNullCount = -1;

struct ArrayData;
using ArrayDataPtr = std::shared_ptr<ArrayData>;

struct ArrayData {
  TypePtr type;
  int64_t length = 0;
  // May be kUnknownNullCount; GetNullCount() computes and caches it.
  mutable int64_t null_count = 0;
  int64_t offset = 0;
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::vector<ArrayDataPtr> child_data;
  ArrayDataPtr dictionary;  // dictionary-encoded types only

  static ArrayDataPtr Make(TypePtr type, int64_t length,
                           std::vector<std::shared_ptr<Buffer>> buffers,
                           int64_t null_count = kUnknownNullCount, int64_t offset = 0);
  static ArrayDataPtr Make(TypePtr type, int64_t length,
                           std::vector<std::shared_ptr<Buffer>> buffers,
                           std::vector<ArrayDataPtr> child_data,
                           int64_t null_count = kUnknownNullCount, int64_t offset = 0);

  // Zero-copy slice [off, off + len) of this array; clamps nothing: the
  // caller must keep the range inside [0, length).
  ArrayDataPtr Slice(int64_t off, int64_t len) const;
  // Like Slice, but returns IndexError for a range outside the array.
  Result<ArrayDataPtr> SliceSafe(int64_t off, int64_t len) const;

  // The null count, computing it from the validity bitmap if unknown.
  int64_t GetNullCount() const;
  bool MayHaveNulls() const {
    return null_count != 0 && !buffers.empty() && buffers[0] != nullptr;
  }

  // Pointer to the first value slot of buffer i, adjusted for `offset` and
  // element width T. Only for buffers of fixed-width elements.
  template <typename T>
  const T* GetValues(int i) const {
    if (i >= static_cast<int>(buffers.size()) || buffers[i] == nullptr) return nullptr;
    return reinterpret_cast<const T*>(buffers[i]->data()) + offset;
  }
  // Pointer to the first byte of buffer i without offset adjustment.
  const uint8_t* GetBuffer(int i) const {
    if (i >= static_cast<int>(buffers.size()) || buffers[i] == nullptr) return nullptr;
    return buffers[i]->data();
  }
  bool IsValid(int64_t i) const;
  bool IsNull(int64_t i) const { return !IsValid(i); }
};

// Calls `fn` for every non-empty buffer of `data`, of its children and of its
// dictionary, recursively: all the memory an array references (a sliced
// array's buffers whole).
void ForEachBuffer(const ArrayData& data, const std::function<void(const Buffer&)>& fn);

}  // namespace quiver
