// Small helpers for tests that build arrays by hand (validation, equality,
// printing): exact-size buffers, so that AddressSanitizer reports any read
// past a buffer's end, and one-line builders from std::optional vectors.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quiver/columnar/builder.h"
#include "quiver/columnar/ipc.h"
#include "quiver/columnar/table.h"

namespace quiver::test {

// A buffer owning exactly bytes.size() bytes in their own heap block (not
// the 64-byte padded blocks of the pools): reading one byte too far is an
// ASan error.
inline std::shared_ptr<Buffer> ExactBuffer(std::string_view bytes) {
  if (bytes.empty()) return Buffer::Wrap(nullptr, 0);
  std::shared_ptr<uint8_t[]> block(new uint8_t[bytes.size()]);
  std::memcpy(block.get(), bytes.data(), bytes.size());
  const uint8_t* p = block.get();
  return Buffer::Wrap(p, static_cast<int64_t>(bytes.size()),
                      std::shared_ptr<const void>(block, p));
}

template <typename T>
std::shared_ptr<Buffer> BufferOf(const std::vector<T>& values) {
  return ExactBuffer(std::string_view(reinterpret_cast<const char*>(values.data()),
                                      values.size() * sizeof(T)));
}

// A validity (or boolean) bitmap of exactly BytesForBits(bits.size()) bytes.
inline std::shared_ptr<Buffer> BitmapOf(const std::vector<bool>& bits) {
  std::string bytes(static_cast<size_t>(bit_util::BytesForBits(bits.size())), '\0');
  for (size_t i = 0; i < bits.size(); ++i) {
    if (bits[i]) bytes[i / 8] = static_cast<char>(bytes[i / 8] | (1 << (i % 8)));
  }
  return ExactBuffer(bytes);
}

template <typename Tag>
ArrayPtr ArrayOf(const std::vector<std::optional<typename Tag::c_type>>& values,
                 TypePtr type = nullptr) {
  NumericBuilder<Tag> b =
      type ? NumericBuilder<Tag>(type, nullptr) : NumericBuilder<Tag>();
  for (const auto& v : values) {
    Status st = v ? b.Append(*v) : b.AppendNull();
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  return b.Finish().ValueOrDie();
}

inline ArrayPtr Int64s(const std::vector<std::optional<int64_t>>& values) {
  return ArrayOf<Int64Type>(values);
}
inline ArrayPtr Int32s(const std::vector<std::optional<int32_t>>& values) {
  return ArrayOf<Int32Type>(values);
}

template <typename Builder = StringBuilder>
ArrayPtr Strings(const std::vector<std::optional<std::string>>& values) {
  Builder b;
  for (const auto& v : values) {
    Status st = v ? b.Append(*v) : b.AppendNull();
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  return b.Finish().ValueOrDie();
}

inline ArrayPtr Bools(const std::vector<std::optional<bool>>& values) {
  BooleanBuilder b;
  for (const auto& v : values) {
    Status st = v ? b.Append(*v) : b.AppendNull();
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  return b.Finish().ValueOrDie();
}

using OptInts = std::vector<std::optional<int64_t>>;

// list<int64> (or large_list<int64> with large = true) from optional lists.
inline ArrayPtr ListOfInt64(const std::vector<std::optional<OptInts>>& lists,
                            bool large = false) {
  auto values = std::make_shared<Int64Builder>();
  std::unique_ptr<ArrayBuilder> b;
  if (large) {
    b = std::make_unique<LargeListBuilder>(nullptr, values);
  } else {
    b = std::make_unique<ListBuilder>(nullptr, values);
  }
  for (const auto& l : lists) {
    if (!l) {
      EXPECT_TRUE(b->AppendNull().ok());
      continue;
    }
    Status st = large ? static_cast<LargeListBuilder*>(b.get())->Append()
                      : static_cast<ListBuilder*>(b.get())->Append();
    EXPECT_TRUE(st.ok()) << st.ToString();
    for (const auto& v : *l) {
      EXPECT_TRUE((v ? values->Append(*v) : values->AppendNull()).ok());
    }
  }
  return b->Finish().ValueOrDie();
}

// The error of `st`, which must be Invalid and mention `what`.
inline ::testing::AssertionResult IsInvalidWith(const Status& st, std::string_view what) {
  if (st.ok())
    return ::testing::AssertionFailure()
           << "expected an error about '" << what << "', got OK";
  if (!st.IsInvalid()) {
    return ::testing::AssertionFailure() << "expected Invalid, got " << st.ToString();
  }
  if (st.message().find(what) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message '" << st.message() << "' does not mention '" << what << "'";
  }
  return ::testing::AssertionSuccess();
}

// `batches` as one table through an IPC stream and an IPC file: read back
// fully valid, with the same schema and values.
inline void ExpectIpcRoundTrips(const std::vector<RecordBatchPtr>& batches) {
  for (auto format : {ipc::IpcFormat::kStream, ipc::IpcFormat::kFile}) {
    SCOPED_TRACE(format == ipc::IpcFormat::kStream ? "stream" : "file");
    auto table = Table::FromRecordBatches(batches);
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    auto bytes = ipc::SerializeTable(**table, format);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    auto back = ipc::ReadTableFromBuffer(*bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    Status valid = (*back)->ValidateFull();
    EXPECT_TRUE(valid.ok()) << valid.ToString();
    EXPECT_TRUE((*back)->schema()->Equals(*(*table)->schema()));
    EXPECT_TRUE((*back)->Equals(**table));
  }
}

}  // namespace quiver::test
