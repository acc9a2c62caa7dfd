// The reusable pieces of message.h: dissociated bodies (buffers located by
// address instead of inside a packed body), schema encode/decode, the
// dictionary memo and tracker, and a reader whose cost does not depend on
// the body's size.

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <map>

#include "ipc_test_util.h"

namespace quiver::ipc::test {
namespace {

TEST(Message, SchemaEncodeDecode) {
  auto s = schema({field("a", int64(), false, key_value_metadata({{"k", "v"}})),
                   field("d", dictionary(int16(), utf8(), true)),
                   field("l", list(dictionary(int8(), large_binary()))),
                   field("m", map(utf8(), float32(), true))},
                  key_value_metadata({{"schema", "meta"}}));
  ASSERT_OK_AND_ASSIGN(auto map, DictionaryFieldMap::Make(*s));
  ASSERT_EQ(map.size(), 2);
  ASSERT_OK_AND_ASSIGN(auto fb, EncodeSchema(*s, map));
  ASSERT_OK_AND_ASSIGN(auto message, Message::Open(fb, nullptr));
  EXPECT_EQ(message->type(), MessageType::kSchema);
  EXPECT_EQ(message->version(), MetadataVersion::kV5);
  EXPECT_EQ(message->body_length(), 0);
  EXPECT_FALSE(message->batch_metadata().ok());
  ASSERT_OK_AND_ASSIGN(auto decoded, DecodeSchema(*message));
  EXPECT_TRUE(decoded.schema->Equals(*s, /*check_metadata=*/true))
      << decoded.schema->ToString();
  ASSERT_OK_AND_ASSIGN(int64_t d_id, decoded.dictionaries.IdForPath({1}));
  ASSERT_OK_AND_ASSIGN(int64_t l_id, decoded.dictionaries.IdForPath({2, 0}));
  EXPECT_EQ(d_id, 0);
  EXPECT_EQ(l_id, 1);
  EXPECT_EQ(decoded.dictionaries.IdForPath({0}).status().code(), StatusCode::kKeyError);
  ASSERT_NE(decoded.dictionaries.FindById(1), nullptr);
  EXPECT_TRUE(decoded.dictionaries.FindById(1)->type->Equals(
      *dictionary(int8(), large_binary())));
}

TEST(Message, MetadataAtOddAddressIsCopied) {
  ASSERT_OK_AND_ASSIGN(auto map, DictionaryFieldMap::Make(*schema({field("x", int8())})));
  ASSERT_OK_AND_ASSIGN(auto fb, EncodeSchema(*schema({field("x", int8())}), map));
  std::string shifted = "-" + fb->ToString();
  auto holder = Buffer::FromString(shifted);
  ASSERT_OK_AND_ASSIGN(auto odd, Buffer::SliceSafe(holder, 1, fb->size()));
  ASSERT_OK_AND_ASSIGN(auto message, Message::Open(odd, nullptr));
  ASSERT_OK_AND_ASSIGN(auto decoded, DecodeSchema(*message));
  EXPECT_EQ(decoded.schema->field(0)->name(), "x");
}

// A descriptor-style round trip: the writer's payload buffers stay where they
// are, the header records their addresses, and the reader resolves those
// addresses back to the same memory.
TEST(Message, DissociatedBodyRoundTrip) {
  ASSERT_OK_AND_ASSIGN(auto batch,
                       RandomBatch({int64(), utf8(), list(struct_({field("a", int8())})),
                                    boolean(), fixed_size_binary(3)},
                                   200, 17));
  IpcWriteOptions wo;
  ASSERT_OK_AND_ASSIGN(BatchPayload payload, AssembleRecordBatch(*batch, wo));
  // Zero-copy: unsliced buffers are the arrays' own memory.
  EXPECT_EQ(payload.buffers[1]->data(), batch->column_data(0)->buffers[1]->data());

  BatchMetadata md = payload.metadata;
  std::map<int64_t, std::shared_ptr<Buffer>> by_address;
  for (size_t i = 0; i < md.buffers.size(); ++i) {
    const auto& b = payload.buffers[i];
    md.buffers[i].offset = b ? reinterpret_cast<int64_t>(b->data()) : 0;
    if (b) by_address[md.buffers[i].offset] = b;
  }
  md.body_length = 0;
  ASSERT_OK_AND_ASSIGN(auto fb, EncodeRecordBatch(md));
  ASSERT_OK_AND_ASSIGN(auto message, Message::Open(fb, nullptr));
  ASSERT_OK_AND_ASSIGN(auto seen, message->batch_metadata());
  EXPECT_EQ(seen.nodes.size(), md.nodes.size());
  EXPECT_EQ(seen.buffers[1].offset, md.buffers[1].offset);

  int64_t resolved = 0;
  BodyResolver resolver = [&](int64_t, int64_t address,
                              int64_t length) -> Result<std::shared_ptr<Buffer>> {
    ++resolved;
    if (length == 0) return Buffer::Wrap(ZeroSizeArea(), 0);
    auto it = by_address.find(address);
    if (it == by_address.end() || it->second->size() < length) {
      return Status::Invalid("address ", address, " is not a published buffer");
    }
    return Buffer::Wrap(it->second->data(), length, it->second);
  };
  DictionaryMemo memo;
  ASSERT_OK_AND_ASSIGN(auto decoded,
                       DecodeRecordBatch(*message, batch->schema(), memo, resolver));
  EXPECT_EQ(resolved, static_cast<int64_t>(md.buffers.size()));
  EXPECT_TRUE(BatchesEqual(*batch, *decoded));
  EXPECT_EQ(decoded->column_data(0)->buffers[1]->data(),
            batch->column_data(0)->buffers[1]->data());

  // A resolver that refuses an address makes decoding fail with its reason.
  BodyResolver refuse = [](int64_t index, int64_t,
                           int64_t) -> Result<std::shared_ptr<Buffer>> {
    return Status::Invalid("buffer ", index, " is outside every region");
  };
  auto bad = DecodeRecordBatch(*message, batch->schema(), memo, refuse);
  EXPECT_NE(bad.status().message().find("outside every region"), std::string::npos);
}

TEST(Message, DictionaryMemoAndTracker) {
  auto type = dictionary(int8(), utf8());
  auto s = schema({field("d", type)});
  ASSERT_OK_AND_ASSIGN(auto map, DictionaryFieldMap::Make(*s));
  DictionaryBuilder b(type);
  ASSERT_OK(b.Append(std::string_view("a")));
  ASSERT_OK_AND_ASSIGN(auto first, b.FinishKeepDictionary());
  ASSERT_OK(b.Append(std::string_view("b")));
  ASSERT_OK_AND_ASSIGN(auto second, b.FinishKeepDictionary());

  DictionaryWriteTracker tracker(map, /*emit_deltas=*/true, /*allow_replacement=*/false);
  ASSERT_OK_AND_ASSIGN(auto sends, tracker.Collect(*RecordBatch::Make(s, 1, {first})));
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_FALSE(sends[0].is_delta);
  ASSERT_OK_AND_ASSIGN(sends, tracker.Collect(*RecordBatch::Make(s, 1, {first})));
  EXPECT_TRUE(sends.empty());
  ASSERT_OK_AND_ASSIGN(sends, tracker.Collect(*RecordBatch::Make(s, 1, {second})));
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_TRUE(sends[0].is_delta);
  EXPECT_EQ(sends[0].values->length, 1);
  // Going back to the shorter dictionary is a replacement: refused here.
  EXPECT_TRUE(tracker.Collect(*RecordBatch::Make(s, 1, {first})).status().IsInvalid());

  DictionaryMemo memo(map);
  EXPECT_FALSE(memo.GetDictionary(0).ok());
  EXPECT_FALSE(memo.Apply(0, /*is_delta=*/true, first->data()->dictionary, nullptr).ok());
  ASSERT_OK_AND_ASSIGN(auto u1, memo.Apply(0, false, first->data()->dictionary, nullptr));
  EXPECT_EQ(u1, DictionaryUpdate::kNew);
  ASSERT_OK_AND_ASSIGN(auto u2, memo.Apply(0, true, sends[0].values, nullptr));
  EXPECT_EQ(u2, DictionaryUpdate::kDelta);
  ASSERT_OK_AND_ASSIGN(auto now, memo.GetDictionary(0));
  EXPECT_TRUE(MakeArray(now)->Equals(*MakeArray(second->data()->dictionary)));
  ASSERT_OK_AND_ASSIGN(auto u3, memo.Apply(0, false, first->data()->dictionary, nullptr));
  EXPECT_EQ(u3, DictionaryUpdate::kReplacement);
  EXPECT_STREQ(DictionaryUpdateName(u3), "replacement");
}

// A stream whose single buffer is 1 GiB, built in a mapping whose pages are
// never touched: reading it must neither copy nor scan the body, so the
// column's buffer is the mapping itself.
TEST(Message, GigabyteBodyIsNotTouched) {
  constexpr int64_t kRows = int64_t{1} << 30;  // uint8 values: 1 GiB
  auto s = schema({field("v", uint8(), false)});
  ASSERT_OK_AND_ASSIGN(auto map, DictionaryFieldMap::Make(*s));
  ASSERT_OK_AND_ASSIGN(auto schema_fb, EncodeSchema(*s, map));
  BatchMetadata md;
  md.length = kRows;
  md.nodes = {FieldNode{kRows, 0}};
  md.buffers = {BufferSpec{0, 0}, BufferSpec{0, kRows}};
  md.body_length = kRows;
  ASSERT_OK_AND_ASSIGN(auto batch_fb, EncodeRecordBatch(md));

  ASSERT_OK_AND_ASSIGN(auto head, io::BufferOutputStream::Create());
  ASSERT_OK(WriteMessageMetadata(*schema_fb, head.get(), {}).status());
  ASSERT_OK(WriteMessageMetadata(*batch_fb, head.get(), {}).status());
  ASSERT_OK_AND_ASSIGN(auto header, head->Finish());
  const int64_t total = header->size() + kRows;
  void* addr = ::mmap(nullptr, static_cast<size_t>(total), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(addr, MAP_FAILED);
  std::shared_ptr<void> unmap(
      addr, [total](void* p) { ::munmap(p, static_cast<size_t>(total)); });
  std::memcpy(addr, header->data(), static_cast<size_t>(header->size()));
  auto input = Buffer::Wrap(static_cast<const uint8_t*>(addr), total, unmap);

  ASSERT_OK_AND_ASSIGN(auto reader, RecordBatchStreamReader::Open(input));
  ASSERT_OK_AND_ASSIGN(auto batch, reader->Next());
  ASSERT_NE(batch, nullptr);
  EXPECT_EQ(batch->num_rows(), kRows);
  const auto& values = batch->column_data(0)->buffers[1];
  EXPECT_EQ(values->data(), static_cast<const uint8_t*>(addr) + header->size());
  EXPECT_EQ(values->size(), kRows);
  EXPECT_TRUE(AllBuffersInside(*batch->column_data(0), *input));
  ASSERT_OK_AND_ASSIGN(auto end, reader->Next());
  EXPECT_EQ(end, nullptr);
}

}  // namespace
}  // namespace quiver::ipc::test
