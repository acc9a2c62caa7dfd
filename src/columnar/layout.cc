// The buffer layout of each type (include/quiver/columnar/layout.h).
#include "quiver/columnar/layout.h"

#include <limits>

namespace quiver {

namespace {

BufferLayout AlwaysNull() { return BufferLayout{}; }

BufferLayout Validity() {
  return BufferLayout{BufferKind::kValidity, "validity", 0, ByteOrder::kNone, 0};
}

BufferLayout Fixed(const char* name, int width, ByteOrder order = ByteOrder::kIntegers,
                   int integer_width = -1) {
  if (order == ByteOrder::kIntegers && integer_width < 0) integer_width = width;
  return BufferLayout{BufferKind::kFixedWidth, name, width, order,
                      order == ByteOrder::kIntegers ? integer_width : 0};
}

BufferLayout Offsets(int width, const char* name = "offsets") {
  return BufferLayout{BufferKind::kOffsets, name, width, ByteOrder::kIntegers, width};
}

// The values of a fixed-width type: bits for bool, bytes for
// fixed_size_binary, integers for the rest (two int32 for day_time
// intervals, three fields for month_day_nano ones).
BufferLayout Values(const DataType* type, TypeId id) {
  if (id == TypeId::kBool) {
    return BufferLayout{BufferKind::kBitmap, "values", 0, ByteOrder::kNone, 0};
  }
  const int width = type != nullptr ? type->byte_width() : 0;
  if (id == TypeId::kFixedSizeBinary) return Fixed("values", width, ByteOrder::kNone);
  if (id == TypeId::kInterval && type != nullptr) {
    switch (type->interval_unit()) {
      case IntervalUnit::kMonthDayNano:
        return Fixed("values", width, ByteOrder::kMonthDayNano);
      case IntervalUnit::kDayTime:
        return Fixed("values", width, ByteOrder::kIntegers, 4);
      default:
        break;
    }
  }
  return Fixed("values", width);
}

// `type` may be null (only the kinds and counts are wanted): widths are then 0.
DataTypeLayout Describe(TypeId id, const DataType* type) {
  DataTypeLayout out;
  auto& b = out.buffers;
  switch (id) {
    case TypeId::kNull:
    case TypeId::kRunEndEncoded:  // its children hold everything
      b = {AlwaysNull()};
      return out;
    case TypeId::kSparseUnion:
      b = {AlwaysNull(), Fixed("type ids", 1)};
      return out;
    case TypeId::kDenseUnion:  // one offset per slot, not length + 1
      b = {AlwaysNull(), Fixed("type ids", 1), Fixed("offsets", 4)};
      return out;
    case TypeId::kString:
    case TypeId::kBinary:
      b = {Validity(), Offsets(4), BufferLayout{BufferKind::kData, "data"}};
      return out;
    case TypeId::kLargeString:
    case TypeId::kLargeBinary:
      b = {Validity(), Offsets(8), BufferLayout{BufferKind::kData, "data"}};
      return out;
    case TypeId::kList:
    case TypeId::kMap:
      b = {Validity(), Offsets(4)};
      return out;
    case TypeId::kLargeList:
      b = {Validity(), Offsets(8)};
      return out;
    case TypeId::kListView:  // an offset and a size per slot
      b = {Validity(), Fixed("offsets", 4), Fixed("sizes", 4)};
      return out;
    case TypeId::kLargeListView:
      b = {Validity(), Fixed("offsets", 8), Fixed("sizes", 8)};
      return out;
    case TypeId::kFixedSizeList:
    case TypeId::kStruct:
      b = {Validity()};
      return out;
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      b = {Validity(), Fixed("views", 16, ByteOrder::kView)};
      out.variadic = true;
      return out;
    case TypeId::kDictionary: {
      const DataType* index = type != nullptr ? type->index_type().get() : nullptr;
      b = {Validity(), Fixed("indices", index != nullptr ? index->byte_width() : 0)};
      return out;
    }
    default:  // bool and the fixed-width types
      b = {Validity(), Values(type, id)};
      return out;
  }
}

}  // namespace

bool BufferLayout::Elements(int64_t offset, int64_t length, int64_t* out) const {
  int64_t end;
  if (__builtin_add_overflow(offset, length, &end)) return false;
  switch (kind) {
    case BufferKind::kAlwaysNull:
    case BufferKind::kData:
      *out = 0;
      return true;
    case BufferKind::kOffsets:
      return !__builtin_add_overflow(end, int64_t{1}, out);
    default:
      *out = end;
      return true;
  }
}

bool BufferLayout::BytesFor(int64_t elements, int64_t* out) const {
  switch (kind) {
    case BufferKind::kValidity:
    case BufferKind::kBitmap:
      *out = elements / 8 + (elements % 8 != 0 ? 1 : 0);
      return true;
    case BufferKind::kFixedWidth:
    case BufferKind::kOffsets:
      return !__builtin_mul_overflow(elements, int64_t{byte_width}, out);
    default:
      *out = 0;
      return true;
  }
}

bool BufferLayout::MinimumBytes(int64_t offset, int64_t length, int64_t* out) const {
  if (kind == BufferKind::kOffsets && length == 0) {
    *out = 0;
    return true;
  }
  int64_t elements;
  return Elements(offset, length, &elements) && BytesFor(elements, out);
}

int DataTypeLayout::num_wire_buffers() const {
  int n = 0;
  for (const BufferLayout& b : buffers) n += b.kind != BufferKind::kAlwaysNull;
  return n;
}

int DataTypeLayout::WireToSlot(int i) const {
  for (size_t slot = 0; slot < buffers.size(); ++slot) {
    if (buffers[slot].kind == BufferKind::kAlwaysNull) continue;
    if (i-- == 0) return static_cast<int>(slot);
  }
  return static_cast<int>(buffers.size()) + i;  // a variadic buffer
}

DataTypeLayout LayoutOf(const DataType& type) { return Describe(type.id(), &type); }

int LayoutBufferCount(TypeId id) { return Describe(id, nullptr).num_wire_buffers(); }

}  // namespace quiver
