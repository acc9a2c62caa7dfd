// Tests of the buffer layout description (quiver/columnar/layout.h): the
// layout of every type against the ArrayData the builders make and what the
// C Data export hands out, and the sizes it asks for, sliced or not.
#include "quiver/columnar/layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>

#include "common/all_types.h"
#include "quiver/columnar/array.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/c_data.h"

namespace quiver {
namespace {

using quiver::testing::AllTypes;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

int64_t Min(const BufferLayout& b, int64_t offset, int64_t length) {
  int64_t bytes = -1;
  EXPECT_TRUE(b.MinimumBytes(offset, length, &bytes));
  return bytes;
}

// The last offset of `d` (slot 1), which bounds its data buffer.
int64_t LastOffset(const ArrayData& d, int width) {
  if (d.length == 0 && d.buffers[1]->size() < width) return 0;
  const uint8_t* p = d.buffers[1]->data() + (d.offset + d.length) * width;
  if (width == 4) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  int64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// `d` has the buffers its type's layout lists, each as big as that says.
void ExpectMatchesLayout(const ArrayData& d) {
  SCOPED_TRACE("offset " + std::to_string(d.offset) + ", length " +
               std::to_string(d.length));
  const DataTypeLayout layout = LayoutOf(*d.type);
  if (layout.variadic) {
    EXPECT_GE(d.buffers.size(), layout.buffers.size());
  } else {
    EXPECT_EQ(d.buffers.size(), layout.buffers.size());
  }
  for (size_t i = 0; i < layout.buffers.size() && i < d.buffers.size(); ++i) {
    const BufferLayout& b = layout.buffers[i];
    const Buffer* buf = d.buffers[i].get();
    SCOPED_TRACE(std::string("buffer ") + std::to_string(i) + " (" + b.name + ")");
    if (b.kind == BufferKind::kAlwaysNull) {
      EXPECT_EQ(buf, nullptr);
      continue;
    }
    if (buf == nullptr) {
      EXPECT_EQ(b.kind, BufferKind::kValidity);
      continue;
    }
    const int64_t needed = b.kind == BufferKind::kData
                               ? LastOffset(d, layout.buffers[1].byte_width)
                               : Min(b, d.offset, d.length);
    EXPECT_GE(buf->size(), needed);
  }
  for (const ArrayDataPtr& child : d.child_data) ExpectMatchesLayout(*child);
  if (d.dictionary != nullptr) ExpectMatchesLayout(*d.dictionary);
}

std::vector<ArrayPtr> ArraysOf(const TypePtr& type) {
  auto builder = MakeBuilder(type).ValueOrDie();
  EXPECT_TRUE(builder->AppendEmptyValues(3).ok());
  EXPECT_TRUE(builder->AppendNulls(2).ok());
  EXPECT_TRUE(builder->AppendEmptyValues(4).ok());
  ArrayPtr built = builder->Finish().ValueOrDie();
  return {built,
          built->Slice(1, 5),
          built->Slice(3, 6),
          built->Slice(9, 0),
          MakeArrayOfNull(type, 11).ValueOrDie()->Slice(2, 7),
          MakeEmptyArray(type).ValueOrDie()};
}

TEST(LayoutTest, EveryTypeMatchesItsArrays) {
  for (const TypePtr& type : AllTypes()) {
    SCOPED_TRACE(type->ToString());
    for (const ArrayPtr& a : ArraysOf(type)) ExpectMatchesLayout(*a->data());
  }
}

// The C Data export has exactly the wire buffers (views: the variadic data
// buffers and their sizes after them).
TEST(LayoutTest, WireBuffersAreTheCDataBuffers) {
  for (const TypePtr& type : AllTypes()) {
    SCOPED_TRACE(type->ToString());
    const DataTypeLayout layout = LayoutOf(*type);
    EXPECT_EQ(layout.num_wire_buffers(), LayoutBufferCount(type->id()));
    ArrayPtr a = ArraysOf(type)[0];
    ArrowArray c;
    ASSERT_TRUE(ExportArray(*a, &c).ok());
    const int64_t variadic = layout.variadic
                                 ? static_cast<int64_t>(a->data()->buffers.size()) -
                                       static_cast<int64_t>(layout.buffers.size()) + 1
                                 : 0;
    EXPECT_EQ(c.n_buffers, layout.num_wire_buffers() + variadic);
    c.release(&c);
  }
}

TEST(LayoutTest, BuffersOfEachKindOfType) {
  auto kinds = [](const TypePtr& t) {
    std::string out;
    for (const BufferLayout& b : LayoutOf(*t).buffers) {
      out += std::string(out.empty() ? "" : ", ") + b.name;
      if (b.kind == BufferKind::kAlwaysNull) out += "(null)";
      if (b.byte_width != 0) out += "/" + std::to_string(b.byte_width);
    }
    return out;
  };
  EXPECT_EQ(kinds(null()), "validity(null)");
  EXPECT_EQ(kinds(boolean()), "validity, values");
  EXPECT_EQ(kinds(int16()), "validity, values/2");
  EXPECT_EQ(kinds(decimal256(76, 0)), "validity, values/32");
  EXPECT_EQ(kinds(decimal32(9, 0)), "validity, values/4");
  EXPECT_EQ(kinds(fixed_size_binary(7)), "validity, values/7");
  EXPECT_EQ(kinds(month_day_nano_interval()), "validity, values/16");
  EXPECT_EQ(kinds(utf8()), "validity, offsets/4, data");
  EXPECT_EQ(kinds(large_binary()), "validity, offsets/8, data");
  EXPECT_EQ(kinds(utf8_view()), "validity, views/16");
  EXPECT_EQ(kinds(list(int8())), "validity, offsets/4");
  EXPECT_EQ(kinds(map(utf8(), int8())), "validity, offsets/4");
  EXPECT_EQ(kinds(large_list(int8())), "validity, offsets/8");
  EXPECT_EQ(kinds(list_view(int8())), "validity, offsets/4, sizes/4");
  EXPECT_EQ(kinds(large_list_view(int8())), "validity, offsets/8, sizes/8");
  EXPECT_EQ(kinds(fixed_size_list(int8(), 2)), "validity");
  EXPECT_EQ(kinds(struct_({field("a", int8())})), "validity");
  EXPECT_EQ(kinds(sparse_union({field("a", int8())})), "validity(null), type ids/1");
  EXPECT_EQ(kinds(dense_union({field("a", int8())})),
            "validity(null), type ids/1, offsets/4");
  EXPECT_EQ(kinds(dictionary(int16(), utf8())), "validity, indices/2");
  EXPECT_EQ(kinds(run_end_encoded(int32(), utf8())), "validity(null)");

  EXPECT_TRUE(LayoutOf(*binary_view()).variadic);
  EXPECT_FALSE(LayoutOf(*binary()).variadic);
  EXPECT_EQ(LayoutOf(*boolean()).buffers[1].kind, BufferKind::kBitmap);
  EXPECT_EQ(LayoutOf(*utf8()).buffers[1].kind, BufferKind::kOffsets);
  EXPECT_EQ(LayoutOf(*utf8()).buffers[2].kind, BufferKind::kData);
  EXPECT_EQ(LayoutOf(*dense_union({field("a", int8())})).buffers[2].kind,
            BufferKind::kFixedWidth);  // one per slot, not length + 1
}

TEST(LayoutTest, ByteOrderOfElements) {
  auto order = [](const TypePtr& t, int slot) {
    const BufferLayout b = LayoutOf(*t).buffers[static_cast<size_t>(slot)];
    return std::make_pair(b.byte_order, b.integer_width);
  };
  using P = std::pair<ByteOrder, int>;
  EXPECT_EQ(order(int64(), 1), P(ByteOrder::kIntegers, 8));
  EXPECT_EQ(order(decimal128(5, 2), 1), P(ByteOrder::kIntegers, 16));
  EXPECT_EQ(order(day_time_interval(), 1), P(ByteOrder::kIntegers, 4));
  EXPECT_EQ(order(month_interval(), 1), P(ByteOrder::kIntegers, 4));
  EXPECT_EQ(order(month_day_nano_interval(), 1), P(ByteOrder::kMonthDayNano, 0));
  EXPECT_EQ(order(fixed_size_binary(4), 1), P(ByteOrder::kNone, 0));
  EXPECT_EQ(order(boolean(), 1), P(ByteOrder::kNone, 0));
  EXPECT_EQ(order(utf8_view(), 1), P(ByteOrder::kView, 0));
  EXPECT_EQ(order(large_utf8(), 1), P(ByteOrder::kIntegers, 8));
  EXPECT_EQ(order(large_utf8(), 2), P(ByteOrder::kNone, 0));
  EXPECT_EQ(order(dense_union({field("a", int8())}), 1), P(ByteOrder::kIntegers, 1));
  EXPECT_EQ(order(dense_union({field("a", int8())}), 2), P(ByteOrder::kIntegers, 4));
  EXPECT_EQ(order(dictionary(uint32(), utf8()), 1), P(ByteOrder::kIntegers, 4));
  EXPECT_EQ(order(int32(), 0), P(ByteOrder::kNone, 0));  // validity
}

TEST(LayoutTest, SizesForOffsetAndLength) {
  const DataTypeLayout i32 = LayoutOf(*int32());
  EXPECT_EQ(Min(i32.buffers[0], 3, 5), 1);  // 8 bits
  EXPECT_EQ(Min(i32.buffers[0], 3, 6), 2);  // 9 bits
  EXPECT_EQ(Min(i32.buffers[1], 3, 5), 32);
  EXPECT_EQ(Min(LayoutOf(*boolean()).buffers[1], 0, 17), 3);
  EXPECT_EQ(Min(LayoutOf(*fixed_size_binary(0)).buffers[1], 4, 4), 0);
  EXPECT_EQ(Min(LayoutOf(*utf8_view()).buffers[1], 1, 2), 48);
  EXPECT_EQ(Min(LayoutOf(*dictionary(int16(), utf8())).buffers[1], 2, 3), 10);

  // Offsets: offset + length + 1 of them, none at all for an empty array.
  const BufferLayout offsets = LayoutOf(*large_list(int8())).buffers[1];
  EXPECT_EQ(Min(offsets, 3, 5), 72);
  EXPECT_EQ(Min(offsets, 3, 0), 0);
  int64_t n = 0;
  ASSERT_TRUE(offsets.Elements(3, 0, &n));
  EXPECT_EQ(n, 4);
  ASSERT_TRUE(offsets.Elements(3, 5, &n));
  EXPECT_EQ(n, 9);

  // A dense union's offsets and a list view's are one per slot.
  EXPECT_EQ(Min(LayoutOf(*dense_union({field("a", int8())})).buffers[2], 3, 5), 32);
  EXPECT_EQ(Min(LayoutOf(*list_view(int8())).buffers[2], 3, 0), 12);

  // Data and always-null slots need nothing the layout can know.
  EXPECT_EQ(Min(LayoutOf(*utf8()).buffers[2], 3, 5), 0);
  EXPECT_EQ(Min(LayoutOf(*run_end_encoded(int16(), int8())).buffers[0], 3, 5), 0);
}

TEST(LayoutTest, OverflowIsReported) {
  int64_t out = 0;
  EXPECT_FALSE(LayoutOf(*int64()).buffers[1].MinimumBytes(kMax / 8, 1, &out));
  EXPECT_FALSE(LayoutOf(*int64()).buffers[1].MinimumBytes(kMax, 1, &out));
  EXPECT_FALSE(LayoutOf(*utf8()).buffers[1].MinimumBytes(kMax - 1, 1, &out));
  EXPECT_FALSE(LayoutOf(*utf8()).buffers[1].Elements(kMax - 1, 1, &out));
  EXPECT_FALSE(LayoutOf(*decimal256(76, 0)).buffers[1].BytesFor(kMax / 16, &out));
  ASSERT_TRUE(LayoutOf(*int8()).buffers[0].MinimumBytes(kMax - 1, 1, &out));
  EXPECT_EQ(out, kMax / 8 + 1);
}

TEST(LayoutTest, WireBuffersSkipTheAlwaysNullSlots) {
  const DataTypeLayout dense = LayoutOf(*dense_union({field("a", int8())}));
  EXPECT_EQ(dense.num_wire_buffers(), 2);
  EXPECT_EQ(dense.WireToSlot(0), 1);
  EXPECT_EQ(dense.WireToSlot(1), 2);
  EXPECT_EQ(LayoutOf(*null()).num_wire_buffers(), 0);
  EXPECT_EQ(LayoutOf(*run_end_encoded(int64(), utf8())).num_wire_buffers(), 0);
  const DataTypeLayout views = LayoutOf(*binary_view());
  EXPECT_EQ(views.num_wire_buffers(), 2);
  EXPECT_EQ(views.WireToSlot(1), 1);
  EXPECT_EQ(views.WireToSlot(3), 3);  // the second variadic data buffer
}

TEST(LayoutTest, ViewsWithVariadicBuffersMatch) {
  BinaryViewBuilder b(utf8_view(), nullptr, /*block_size=*/32);
  ASSERT_TRUE(b.Append("short").ok());
  ASSERT_TRUE(b.Append(std::string(40, 'x')).ok());
  ASSERT_TRUE(b.AppendNulls(1).ok());
  ASSERT_TRUE(b.Append(std::string(20, 'y')).ok());
  ArrayPtr a = b.Finish().ValueOrDie();
  const DataTypeLayout layout = LayoutOf(*a->type());
  EXPECT_GT(a->data()->buffers.size(), layout.buffers.size());
  ExpectMatchesLayout(*a->data());
  ExpectMatchesLayout(*a->Slice(1, 2)->data());
}

}  // namespace
}  // namespace quiver
