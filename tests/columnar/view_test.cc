// binary_view and string_view: the builder (inline values, data blocks),
// accessors, validation of every field of a view, equality across layouts,
// printing, concatenation, and the C Data and IPC forms with several
// variadic data buffers (AllTypes covers the rest of the round trips).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "quiver/columnar/array.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/c_data.h"
#include "quiver/columnar/concatenate.h"
#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc.h"
#include "quiver/columnar/pretty_print.h"

namespace quiver {
namespace {

std::vector<std::string> Values(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    // Lengths 0..40: inline (<= 12) and out of line, some multi-byte UTF-8.
    std::string v = "v" + std::to_string(i) + "é";
    while (static_cast<int>(v.size()) < i % 41) v += static_cast<char>('a' + i % 26);
    out.push_back(v);
  }
  return out;
}

// Views of `values` (every 7th null) in data blocks of `block` bytes.
ArrayPtr Build(const TypePtr& type, const std::vector<std::string>& values,
               int64_t block) {
  BinaryViewBuilder b(type, nullptr, block);
  for (size_t i = 0; i < values.size(); ++i) {
    if (i % 7 == 3) {
      EXPECT_TRUE(b.AppendNull().ok());
    } else {
      EXPECT_TRUE(b.Append(values[i]).ok());
    }
  }
  return b.Finish().ValueOrDie();
}

void ExpectValues(const Array& array, const std::vector<std::string>& values,
                  int64_t from = 0) {
  const auto& views = static_cast<const BinaryViewArray&>(array);
  for (int64_t i = 0; i < array.length(); ++i) {
    const size_t k = static_cast<size_t>(from + i);
    ASSERT_EQ(array.IsNull(i), k % 7 == 3) << i;
    if (!array.IsNull(i)) {
      ASSERT_EQ(views.GetView(i), values[k]) << i;
    }
  }
}

TEST(Views, TypesAndTheBuilder) {
  EXPECT_EQ(utf8_view()->ToString(), "string_view");
  EXPECT_EQ(binary_view()->ToString(), "binary_view");
  EXPECT_FALSE(utf8_view()->Equals(*utf8()));
  const auto values = Values(300);
  auto array = Build(utf8_view(), values, 256);
  ASSERT_OK(array->ValidateFull());
  const auto& views = static_cast<const BinaryViewArray&>(*array);
  EXPECT_GT(views.num_data_buffers(), 3);  // blocks of 256 bytes
  ExpectValues(*array, values);
  // A slice reads the same values.
  auto slice = array->Slice(101, 77);
  ASSERT_OK(slice->ValidateFull());
  ExpectValues(*slice, values, 101);
  // Short values live in the view itself.
  EXPECT_EQ(views.value_length(0), static_cast<int32_t>(values[0].size()));
  EXPECT_EQ(std::memcmp(views.raw_view(0) + 4, values[0].data(), values[0].size()), 0);
}

// Every field of a view is checked, and the message names what is wrong.
TEST(Views, ValidateFullChecksEveryView) {
  auto good = Build(binary_view(), {"short", "a value of more than twelve bytes"}, 1024);
  ASSERT_OK(good->ValidateFull());
  auto corrupt = [&](int view, int at, int32_t value) {
    auto data = std::make_shared<ArrayData>(*good->data());
    auto copy = AllocateBuffer(data->buffers[1]->size()).ValueOrDie();
    std::memcpy(copy->mutable_data(), data->buffers[1]->data(), data->buffers[1]->size());
    std::memcpy(copy->mutable_data() + view * 16 + at, &value, 4);
    data->buffers[1] = std::shared_ptr<Buffer>(std::move(copy));
    return MakeArray(data)->ValidateFull();
  };
  auto expect = [](const Status& st, const std::string& what) {
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find(what), std::string::npos) << st.ToString();
  };
  expect(corrupt(1, 8, 5), "names data buffer 5 of 1");
  expect(corrupt(1, 12, 20), "is outside data buffer 0");
  expect(corrupt(1, 4, 0x41414141), "prefix");
  expect(corrupt(0, 0, -3), "negative length");
  expect(corrupt(0, 12, 7), "not padded with zeros");
  // A string_view of bytes that are not UTF-8.
  BinaryViewBuilder bad(utf8_view());
  ASSERT_OK(bad.Append(std::string("ok \xff\xfe not utf-8 at all", 23)));
  ASSERT_OK_AND_ASSIGN(auto bad_array, bad.Finish());
  expect(bad_array->ValidateFull(), "invalid UTF-8");
  // Fewer than two buffers is a structural error.
  auto data = std::make_shared<ArrayData>(*good->data());
  data->buffers.resize(1);
  expect(MakeArray(data)->Validate(), "expected at least 2 buffers");
}

// Equal values are equal arrays, however they are laid out; printing shows
// the values.
TEST(Views, EqualityPrintingAndConcatenation) {
  const auto values = Values(200);
  auto one_block = Build(utf8_view(), values, 1 << 20);
  auto small_blocks = Build(utf8_view(), values, 64);
  EXPECT_TRUE(one_block->Equals(*small_blocks));
  auto other = Values(200);
  other[50] += "!";
  EXPECT_FALSE(one_block->Equals(*Build(utf8_view(), other, 64)));
  EXPECT_EQ(FormatValue(*one_block, 0), "\"v0é\"");
  EXPECT_EQ(FormatValue(*one_block, 3), "null");
  EXPECT_EQ(FormatValue(*Build(binary_view(), {"AB"}, 64), 0), "4142");
  // Concatenation gathers the long values into one data buffer.
  auto first = small_blocks->Slice(0, 90), second = small_blocks->Slice(90, 110);
  ASSERT_OK_AND_ASSIGN(auto joined_data,
                       Concatenate({first->data().get(), second->data().get()}));
  auto joined = MakeArray(joined_data);
  ASSERT_OK(joined->ValidateFull());
  EXPECT_LE(static_cast<const BinaryViewArray&>(*joined).num_data_buffers(), 1);
  EXPECT_TRUE(joined->Equals(*one_block));
  EXPECT_LE(ConcatenateBound(*first->data()) + ConcatenateBound(*second->data()),
            int64_t{4} << 20);
}

// The C Data Interface: n_buffers = 2 + data buffers + 1, the last holding
// the data buffers' sizes; imported zero-copy and equal.
TEST(Views, CDataRoundTripWithManyDataBuffers) {
  const auto values = Values(250);
  auto array = Build(binary_view(), values, 128)->Slice(3, 240);
  const int64_t data_buffers = static_cast<int64_t>(array->data()->buffers.size()) - 2;
  ASSERT_GT(data_buffers, 3);
  ArrowArray c_array;
  ArrowSchema c_schema;
  ASSERT_OK(ExportArray(*array, &c_array, &c_schema));
  EXPECT_EQ(std::string(c_schema.format), "vz");
  ASSERT_EQ(c_array.n_buffers, 2 + data_buffers + 1);
  const auto* sizes = static_cast<const int64_t*>(c_array.buffers[c_array.n_buffers - 1]);
  for (int64_t k = 0; k < data_buffers; ++k) {
    EXPECT_EQ(sizes[k], array->data()->buffers[static_cast<size_t>(2 + k)]->size());
  }
  ASSERT_OK_AND_ASSIGN(auto back, ImportArray(&c_array, &c_schema));
  ASSERT_OK(back->ValidateFull());
  EXPECT_TRUE(back->Equals(*array));
  EXPECT_EQ(back->data()->buffers[2]->data(), array->data()->buffers[2]->data());
}

// IPC stream and file: variadic buffer counts per view field, several data
// buffers each, a slice, a view nested in a list.
TEST(Views, IpcRoundTripWithManyDataBuffers) {
  const auto values = Values(300);
  auto s = Build(utf8_view(), values, 200);
  auto b = Build(binary_view(), values, 1000)->Slice(0, 300);
  auto batch = RecordBatch::FromArrays({"s", "b"}, {s, b}).ValueOrDie();
  for (auto format : {ipc::IpcFormat::kStream, ipc::IpcFormat::kFile}) {
    ASSERT_OK_AND_ASSIGN(auto table,
                         Table::FromRecordBatches({batch, batch->Slice(17, 200)}));
    ASSERT_OK_AND_ASSIGN(auto bytes, ipc::SerializeTable(*table, format));
    ASSERT_OK_AND_ASSIGN(auto back, ipc::ReadTableFromBuffer(bytes));
    ASSERT_OK(back->ValidateFull());
    EXPECT_TRUE(back->Equals(*table));
  }
}

}  // namespace
}  // namespace quiver
