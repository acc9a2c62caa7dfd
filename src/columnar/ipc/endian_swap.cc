// Byte-order conversion of arrays: which buffer of which type holds elements
// of which width, and the swap of each (see endian_swap.h).

#include "columnar/ipc/endian_swap.h"

#include <algorithm>
#include <string>
#include <utility>

#include "quiver/columnar/layout.h"

namespace quiver::ipc::internal {

namespace {

// How the elements of one buffer are laid out.
enum class Elements : int8_t {
  kWords,         // integers of `width` bytes, each reversed (decimals too)
  kMonthDayNano,  // 16-byte structs: int32 months, int32 days, int64 nanoseconds
  kViews,         // 16-byte binary/string views
};

struct BufferSwap {
  int slot;
  Elements elements;
  int width;  // bytes per element
};

void Reverse(const uint8_t* in, uint8_t* out, int width) {
  for (int k = 0; k < width; ++k) out[k] = in[width - 1 - k];
}

// The length field of a view, read from whichever copy holds it in
// little-endian order.
int32_t ViewLength(const uint8_t* little) {
  int32_t length;
  std::memcpy(&length, little, sizeof(length));
  return length;
}

// Swaps the whole elements of `in` into `out` (both `size` bytes); a trailing
// partial element is copied as it is.
void SwapElements(const uint8_t* in, uint8_t* out, int64_t size, const BufferSwap& s,
                  Endianness from) {
  const int64_t width = s.width;
  const int64_t whole = size / width * width;
  for (int64_t pos = 0; pos < whole; pos += width) {
    const uint8_t* src = in + pos;
    uint8_t* dst = out + pos;
    switch (s.elements) {
      case Elements::kWords:
        Reverse(src, dst, s.width);
        break;
      case Elements::kMonthDayNano:
        Reverse(src, dst, 4);
        Reverse(src + 4, dst + 4, 4);
        Reverse(src + 8, dst + 8, 8);
        break;
      case Elements::kViews: {
        // length; then either up to 12 inline bytes (no byte order) or a
        // 4-byte prefix (bytes) and two int32: buffer index and offset.
        Reverse(src, dst, 4);
        const int32_t length = ViewLength(from == Endianness::kBig ? dst : src);
        if (length > 12) {
          std::memcpy(dst + 4, src + 4, 4);
          Reverse(src + 8, dst + 8, 4);
          Reverse(src + 12, dst + 12, 4);
        } else {
          std::memcpy(dst + 4, src + 4, 12);
        }
        break;
      }
    }
  }
  if (whole < size)
    std::memcpy(out + whole, in + whole, static_cast<size_t>(size - whole));
}

// The buffers of `type` that have a byte order (LayoutOf says which, and
// how their elements are made). Integers of 1 byte have none.
Status SwapsFor(const DataType& type, std::vector<BufferSwap>* out) {
  if (static_cast<int>(type.id()) < 0 ||
      static_cast<int>(type.id()) > static_cast<int>(TypeId::kRunEndEncoded)) {
    return Status::NotImplemented("byte-swapping arrays of type id ",
                                  static_cast<int>(type.id()));
  }
  if (type.id() == TypeId::kDictionary && type.index_type() == nullptr) {
    return Status::Invalid("dictionary without index");
  }
  const DataTypeLayout layout = LayoutOf(type);
  for (size_t i = 0; i < layout.buffers.size(); ++i) {
    const BufferLayout& b = layout.buffers[i];
    const int slot = static_cast<int>(i);
    switch (b.byte_order) {
      case ByteOrder::kNone:
        break;
      case ByteOrder::kIntegers:
        if (b.integer_width > 1) {
          out->push_back(BufferSwap{slot, Elements::kWords, b.integer_width});
        }
        break;
      case ByteOrder::kMonthDayNano:
        out->push_back(BufferSwap{slot, Elements::kMonthDayNano, 16});
        break;
      case ByteOrder::kView:  // the variadic data buffers: bytes
        out->push_back(BufferSwap{slot, Elements::kViews, 16});
        break;
    }
  }
  return Status::OK();
}

Result<ArrayDataPtr> Swap(const ArrayData& data, Endianness from, bool swap_dictionaries,
                          MemoryPool* pool, int depth, int max_depth) {
  if (depth > max_depth) {
    return Status::Invalid("array nested deeper than ", max_depth, " levels");
  }
  if (data.type == nullptr) return Status::Invalid("array without a type");
  const DataType& type = *data.type;
  std::vector<BufferSwap> swaps;
  QUIVER_RETURN_NOT_OK(SwapsFor(type, &swaps));

  auto out = std::make_shared<ArrayData>(data);
  for (const BufferSwap& s : swaps) {
    const auto slot = static_cast<size_t>(s.slot);
    if (slot >= out->buffers.size()) {
      return Status::Invalid("array of ", type.ToString(), " has ", out->buffers.size(),
                             " buffers, no buffer ", s.slot);
    }
    const std::shared_ptr<Buffer>& in = out->buffers[slot];
    if (in == nullptr || in->size() == 0) continue;
    QUIVER_ASSIGN_OR_RAISE(auto swapped, AllocateResizableBuffer(in->size(), pool));
    SwapElements(in->data(), swapped->mutable_data(), in->size(), s, from);
    swapped->ZeroPadding();
    out->buffers[slot] = std::move(swapped);
  }

  if (static_cast<int>(data.child_data.size()) != type.num_fields()) {
    return Status::Invalid("array of ", type.ToString(), " has ", data.child_data.size(),
                           " children, its type ", type.num_fields());
  }
  for (size_t i = 0; i < data.child_data.size(); ++i) {
    if (data.child_data[i] == nullptr) return Status::Invalid("null child ", i);
    QUIVER_ASSIGN_OR_RAISE(
        out->child_data[i],
        Swap(*data.child_data[i], from, swap_dictionaries, pool, depth + 1, max_depth));
  }
  if (swap_dictionaries && data.dictionary != nullptr) {
    QUIVER_ASSIGN_OR_RAISE(
        out->dictionary,
        Swap(*data.dictionary, from, swap_dictionaries, pool, depth + 1, max_depth));
  }
  return out;
}

}  // namespace

Result<ArrayDataPtr> SwapEndianness(const ArrayData& data, Endianness from,
                                    bool swap_dictionaries, MemoryPool* pool,
                                    int max_depth) {
  return Swap(data, from, swap_dictionaries, pool ? pool : default_memory_pool(), 0,
              max_depth);
}

}  // namespace quiver::ipc::internal
