// Descriptors against the Dissociated IPC protocol, both ways:
//   - what Quiver writes parses with the independent reader of
//     descriptor_spec_util.h, message by message, and the values it finds at
//     the addresses are the batch's;
//   - messages built by hand (the metadata flatbuffers from Quiver's IPC
//     encoder, which the interop tests hold to Arrow JS, DuckDB and Polars;
//     prefixes, tags, bodies and framing by hand) decode in Quiver, and
//     breaking any of them is an error naming what is wrong;
//   - streams of many batches with dictionary deltas, and packed (type 0)
//     bodies.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "common/strings.h"
#include "ipc/descriptor_spec_util.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/ipc/descriptor.h"
#include "quiver/columnar/ipc/message.h"

namespace quiver::ipc {
namespace {

using ::quiver::testing::Contains;

Status AcceptAll(uint64_t, uint64_t) { return Status::OK(); }

std::string Bytes(const Buffer& b) {
  return std::string(reinterpret_cast<const char*>(b.data()),
                     static_cast<size_t>(b.size()));
}

// Batches of (id int64, name utf8, colour dictionary<int8, utf8>) whose
// dictionary grows: batch k uses colours 0..k+1, so every batch after the
// first extends the dictionary (a delta).
std::vector<RecordBatchPtr> GrowingBatches(int count, int64_t rows) {
  static const char* const kColours[] = {"red",     "green",  "blue", "cyan",
                                         "magenta", "yellow", "black"};
  DictionaryBuilder colours(dictionary(int8(), utf8()));
  std::vector<RecordBatchPtr> out;
  for (int k = 0; k < count; ++k) {
    Int64Builder ids;
    StringBuilder names;
    for (int64_t i = 0; i < rows; ++i) {
      EXPECT_TRUE((ids.Append(k * 1000 + i * 7)).ok());
      EXPECT_TRUE((names.Append("row " + std::to_string(k * 1000 + i))).ok());
      EXPECT_TRUE((colours.Append(std::string_view(kColours[(i + k) % (k + 2)]))).ok());
    }
    out.push_back(
        RecordBatch::FromArrays({"id", "name", "colour"},
                                {ids.Finish().ValueOrDie(), names.Finish().ValueOrDie(),
                                 colours.FinishKeepDictionary().ValueOrDie()})
            .ValueOrDie());
  }
  return out;
}

void ExpectSame(const std::vector<RecordBatchPtr>& expected,
                const std::vector<RecordBatchPtr>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_OK(actual[i]->ValidateFull());
    EXPECT_TRUE(expected[i]->Equals(*actual[i], true))
        << "batch " << i << "\nexpected:\n"
        << expected[i]->ToString() << "\nactual:\n"
        << actual[i]->ToString();
  }
}

// ---------------------------------------------------------------------------
// Quiver's descriptors, read by the independent parser

TEST(DescriptorSpec, QuiverStreamParsesWithTheSpecAlone) {
  auto batches = GrowingBatches(3, 5);
  std::vector<BufferRange> ranges;
  // Held: a delta's re-based offsets are new buffers the descriptor
  // references (without scratch_out they would belong to it, never freed).
  std::vector<std::shared_ptr<Buffer>> scratch;
  ASSERT_OK_AND_ASSIGN(std::string bytes,
                       EncodeDescriptor(batches[0]->schema(), batches,
                                        DescriptorWriteOptions(), &ranges, &scratch));
  std::string error;
  std::vector<spec::Message> messages = spec::Parse(bytes, &error);
  ASSERT_TRUE(error.empty()) << error;
  // Schema; dictionary, batch; delta, batch; delta, batch.
  ASSERT_EQ(messages.size(), 7u);
  EXPECT_EQ(messages[0].header, spec::kSchema);
  EXPECT_EQ(messages[0].body_type, 0xFF);  // no body
  std::vector<uint64_t> seen_ranges;
  int record_batch = 0;
  for (size_t m = 1; m < messages.size(); ++m) {
    const spec::Message& msg = messages[m];
    SCOPED_TRACE("message " + std::to_string(m));
    EXPECT_EQ(msg.sequence, m);
    ASSERT_EQ(msg.body_type, 1);
    ASSERT_EQ(msg.pairs.size(), msg.buffers.size());
    for (size_t b = 0; b < msg.pairs.size(); ++b) {
      EXPECT_EQ(msg.pairs[b].second, static_cast<uint64_t>(msg.buffers[b].second));
      if (msg.pairs[b].second != 0) seen_ranges.push_back(msg.pairs[b].first);
    }
    if (m % 2 == 1) {
      EXPECT_EQ(msg.header, spec::kDictionaryBatch);
      EXPECT_EQ(msg.is_delta, m > 1);
      // The first dictionary has 2 words, each delta one more.
      EXPECT_EQ(msg.length, m == 1 ? 2 : 1);
      continue;
    }
    ASSERT_EQ(msg.header, spec::kRecordBatch);
    const RecordBatch& batch = *batches[record_batch++];
    EXPECT_EQ(msg.length, batch.num_rows());
    // Nodes: id, name, colour. Buffers: validity and values of id;
    // validity, offsets and data of name; validity and indices of colour.
    ASSERT_EQ(msg.nodes.size(), 3u);
    ASSERT_EQ(msg.buffers.size(), 7u);
    // The values, read straight from the addresses the body gives.
    const auto* ids = reinterpret_cast<const int64_t*>(msg.pairs[1].first);
    const auto& expected_ids = *batch.column_data(0);
    for (int64_t i = 0; i < batch.num_rows(); ++i) {
      EXPECT_EQ(ids[i], expected_ids.GetValues<int64_t>(1)[i]);
    }
    const auto* offsets = reinterpret_cast<const int32_t*>(msg.pairs[3].first);
    const auto* chars = reinterpret_cast<const char*>(msg.pairs[4].first);
    const StringArray names(batch.column_data(1));
    for (int64_t i = 0; i < batch.num_rows(); ++i) {
      EXPECT_EQ(std::string(chars + offsets[i], offsets[i + 1] - offsets[i]),
                names.GetView(i));
    }
  }
  std::vector<uint64_t> addresses;
  for (const BufferRange& r : ranges) addresses.push_back(r.address);
  EXPECT_EQ(seen_ranges, addresses);

  // And Quiver reads its own stream back, deltas applied.
  ASSERT_OK_AND_ASSIGN(auto back, DecodeDescriptorBatches(bytes, AcceptAll, nullptr));
  ExpectSame(batches, back);
  ASSERT_OK_AND_ASSIGN(DescriptorInfo info, InspectDescriptor(bytes, AcceptAll));
  EXPECT_EQ(info.batch_rows, (std::vector<int64_t>{5, 5, 5}));
  EXPECT_EQ(info.num_rows, 15);
  auto one = DecodeDescriptor(bytes, AcceptAll, nullptr);
  ASSERT_FALSE(one.ok());
  EXPECT_TRUE(Contains(one.status().message(), "holds 3 record batches"))
      << one.status().ToString();
}

TEST(DescriptorSpec, WithoutDeltasDictionariesAreReplaced) {
  auto batches = GrowingBatches(3, 4);
  DescriptorWriteOptions options;
  options.emit_dictionary_deltas = false;
  std::vector<std::shared_ptr<Buffer>> scratch;
  ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeDescriptor(batches[0]->schema(), batches,
                                                           options, nullptr, &scratch));
  std::string error;
  auto messages = spec::Parse(bytes, &error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(messages.size(), 7u);
  for (size_t m = 1; m < messages.size(); m += 2) {
    EXPECT_EQ(messages[m].header, spec::kDictionaryBatch);
    EXPECT_FALSE(messages[m].is_delta);
    EXPECT_EQ(messages[m].length, static_cast<int64_t>(m / 2 + 2));
  }
  ASSERT_OK_AND_ASSIGN(auto back, DecodeDescriptorBatches(bytes, AcceptAll, nullptr));
  ExpectSame(batches, back);
}

TEST(DescriptorSpec, PackedBodiesTravelInline) {
  auto batches = GrowingBatches(2, 6);
  DescriptorWriteOptions options;
  options.body_type = dissociated::BodyType::kPacked;
  std::vector<BufferRange> ranges;
  ASSERT_OK_AND_ASSIGN(std::string bytes,
                       EncodeDescriptor(batches[0]->schema(), batches, options, &ranges));
  EXPECT_TRUE(ranges.empty());  // nothing referenced
  std::string error;
  auto messages = spec::Parse(bytes, &error);
  ASSERT_TRUE(error.empty()) << error;
  for (size_t m = 1; m < messages.size(); ++m) {
    EXPECT_EQ(messages[m].body_type, 0);
    EXPECT_EQ(messages[m].packed.size(), static_cast<size_t>(messages[m].body_length));
    for (const auto& [offset, length] : messages[m].buffers) {
      EXPECT_LE(static_cast<uint64_t>(offset + length), messages[m].packed.size());
    }
  }
  // The validator is never consulted: nothing is referenced.
  RangeValidator refuse = [](uint64_t, uint64_t) { return Status::Invalid("no"); };
  ASSERT_OK_AND_ASSIGN(auto back, DecodeDescriptorBatches(bytes, refuse, nullptr));
  ExpectSame(batches, back);
  bytes.clear();  // the batches own copies
  ASSERT_OK(back[1]->ValidateFull());
}

// ---------------------------------------------------------------------------
// Messages built by hand, decoded by Quiver

struct HandBuilt {
  RecordBatchPtr batch;
  std::string schema_fb;
  BatchPayload payload;  // offsets into a packed body
};

HandBuilt Prepare(const RecordBatch& batch) {
  HandBuilt h;
  h.batch = RecordBatch::Make(batch.schema(), batch.num_rows(), batch.column_data());
  auto fields = DictionaryFieldMap::Make(*batch.schema()).ValueOrDie();
  h.schema_fb = Bytes(*EncodeSchema(*batch.schema(), fields).ValueOrDie());
  IpcWriteOptions options;
  options.alignment = 8;
  h.payload = AssembleRecordBatch(batch, options).ValueOrDie();
  return h;
}

// The (address, length) pairs of a payload's buffers.
std::vector<std::pair<uint64_t, uint64_t>> PairsOf(const BatchPayload& payload) {
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  for (const auto& b : payload.buffers) {
    if (b == nullptr || b->size() == 0) {
      pairs.emplace_back(0, 0);
    } else {
      pairs.emplace_back(reinterpret_cast<uintptr_t>(b->data()), b->size());
    }
  }
  return pairs;
}

std::string PackedBody(const BatchPayload& payload) {
  std::string body(static_cast<size_t>(payload.metadata.body_length), '\0');
  for (size_t i = 0; i < payload.buffers.size(); ++i) {
    const auto& b = payload.buffers[i];
    if (b == nullptr || b->size() == 0) continue;
    std::memcpy(body.data() + payload.metadata.buffers[i].offset, b->data(),
                static_cast<size_t>(b->size()));
  }
  return body;
}

RecordBatchPtr Ints(int64_t rows) {
  Int64Builder a;
  StringBuilder s;
  for (int64_t i = 0; i < rows; ++i) {
    EXPECT_TRUE((i % 4 == 3 ? a.AppendNull() : a.Append(i * i)).ok());
    EXPECT_TRUE((s.Append(std::string(static_cast<size_t>(i % 5), 'q'))).ok());
  }
  return RecordBatch::FromArrays({"ints", "text"},
                                 {a.Finish().ValueOrDie(), s.Finish().ValueOrDie()})
      .ValueOrDie();
}

TEST(DescriptorSpec, HandBuiltMessagesOfBothBodyTypesDecode) {
  auto batch = Ints(11);
  HandBuilt h = Prepare(*batch);
  const std::string header = Bytes(*EncodeRecordBatch(h.payload.metadata).ValueOrDie());
  spec::FrameWriter w;
  w.Metadata(0, h.schema_fb);
  w.Metadata(1, header);
  w.Body(spec::Tag(1, 1), spec::AddressList(PairsOf(h.payload)));
  w.Metadata(2, header);
  w.Body(spec::Tag(2, 0), PackedBody(h.payload));
  w.End(3);
  const std::string bytes = w.Finish();
  ASSERT_OK_AND_ASSIGN(auto back, DecodeDescriptorBatches(bytes, AcceptAll, nullptr));
  ExpectSame({batch, batch}, back);
  // The type-1 batch is the original memory; the type-0 one a copy.
  EXPECT_EQ(back[0]->column_data(0)->buffers[1]->data(),
            batch->column_data(0)->buffers[1]->data());
  EXPECT_NE(back[1]->column_data(0)->buffers[1]->data(),
            batch->column_data(0)->buffers[1]->data());
}

// Each case breaks one thing of a hand-built one-batch descriptor; Quiver
// must refuse it and say what.
TEST(DescriptorSpec, HandBuiltViolationsAreNamed) {
  auto batch = Ints(9);
  HandBuilt h = Prepare(*batch);
  const std::string header = Bytes(*EncodeRecordBatch(h.payload.metadata).ValueOrDie());
  const auto pairs = PairsOf(h.payload);
  struct Case {
    const char* name;
    std::function<void(spec::FrameWriter*)> build;
    const char* says;
  };
  std::vector<Case> cases = {
      {"body tagged with another sequence",
       [&](spec::FrameWriter* w) {
         w->Metadata(0, h.schema_fb);
         w->Metadata(1, header);
         w->Body(spec::Tag(7, 1), spec::AddressList(pairs));
         w->End(2);
       },
       "tagged with sequence number 7"},
      {"reserved tag bits",
       [&](spec::FrameWriter* w) {
         w->Metadata(0, h.schema_fb);
         w->Metadata(1, header);
         w->Body(spec::Tag(1, 1) | (uint64_t{1} << 40), spec::AddressList(pairs));
         w->End(2);
       },
       "reserved bits"},
      {"unknown body type",
       [&](spec::FrameWriter* w) {
         w->Metadata(0, h.schema_fb);
         w->Metadata(1, header);
         w->Body(spec::Tag(1, 2), spec::AddressList(pairs));
         w->End(2);
       },
       "unknown body type 2"},
      {"sequence skipped",
       [&](spec::FrameWriter* w) {
         w->Metadata(0, h.schema_fb);
         w->Metadata(2, header);
         w->Body(spec::Tag(2, 1), spec::AddressList(pairs));
         w->End(3);
       },
       "sequence number 2, expected 1"},
      {"end of stream of 6 bytes",
       [&](spec::FrameWriter* w) {
         w->Metadata(0, h.schema_fb);
         w->Metadata(1, header);
         w->Body(spec::Tag(1, 1), spec::AddressList(pairs));
         w->Raw(0, 0, std::string("\0\x02\0\0\0\0", 6));
       },
       "exactly 5"},
      {"batch before the schema",
       [&](spec::FrameWriter* w) {
         w->Metadata(0, header);
         w->Body(spec::Tag(0, 1), spec::AddressList(pairs));
         w->End(1);
       },
       "not Schema"},
      {"body missing",
       [&](spec::FrameWriter* w) {
         w->Metadata(0, h.schema_fb);
         w->Metadata(1, header);
         w->End(2);
       },
       "expected the body of message 1"},
      {"address list one pair short",
       [&](spec::FrameWriter* w) {
         auto fewer = pairs;
         fewer.pop_back();
         w->Metadata(0, h.schema_fb);
         w->Metadata(1, header);
         w->Body(spec::Tag(1, 1), spec::AddressList(fewer));
         w->End(2);
       },
       "buffers, its header"},
      {"packed body shorter than the header says",
       [&](spec::FrameWriter* w) {
         std::string body = PackedBody(h.payload);
         body.resize(body.size() - 8);
         w->Metadata(0, h.schema_fb);
         w->Metadata(1, header);
         w->Body(spec::Tag(1, 0), body);
         w->End(2);
       },
       "shorter than"},
      {"no end of stream",
       [&](spec::FrameWriter* w) {
         w->Metadata(0, h.schema_fb);
         w->Metadata(1, header);
         w->Body(spec::Tag(1, 1), spec::AddressList(pairs));
       },
       "no end of stream"},
      {"metadata frame with a tag",
       [&](spec::FrameWriter* w) {
         w->Metadata(0, h.schema_fb);
         std::string m("\x01\x01\0\0\0", 5);
         w->Raw(0, 5, m + header);
         w->Body(spec::Tag(1, 1), spec::AddressList(pairs));
         w->End(2);
       },
       "carries a tag"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    spec::FrameWriter w;
    c.build(&w);
    const std::string bytes = w.Finish();
    auto st = InspectDescriptor(bytes, AcceptAll).status();
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(Contains(st.message(), c.says)) << st.ToString();
    EXPECT_FALSE(DecodeDescriptorBatches(bytes, AcceptAll, nullptr).ok());
  }
}

// A buffer shorter than its type and length need is refused naming the
// column, the buffer's role and what it needs, whether the header or the
// address list is the one that is short.
TEST(DescriptorSpec, TooSmallBufferIsRejectedNamingTheColumn) {
  Int64Builder ints;
  ASSERT_OK(ints.AppendValues({1, 2, 3}, {true, false, true}));
  ASSERT_OK_AND_ASSIGN(auto list_builder, MakeBuilder(list(int16())));
  auto& lists = *static_cast<ListBuilder*>(list_builder.get());
  ASSERT_OK(lists.Append(true));
  ASSERT_OK(static_cast<Int16Builder*>(lists.child(0))->Append(1));
  ASSERT_OK(lists.Append(true));
  ASSERT_OK(lists.Append(true));
  ASSERT_OK_AND_ASSIGN(auto batch, RecordBatch::FromArrays(
                                       {"ints", "lists"}, {ints.Finish().ValueOrDie(),
                                                           lists.Finish().ValueOrDie()}));
  HandBuilt h = Prepare(*batch);
  // ints: validity (1 byte), values (24); lists: validity (none), offsets
  // (16); item: validity (none), values (2).
  struct Case {
    size_t entry;
    const char* column;
    const char* role;
    const char* needs;
  };
  for (const Case& c : {Case{0, "'ints' (int64)", "(validity)", "needs 1"},
                        Case{1, "'ints' (int64)", "(values)", "needs 24"},
                        Case{3, "'lists' (list<item: int16>)", "(offsets)", "needs 16"},
                        Case{5, "'lists.item' (int16)", "(values)", "needs 2"}}) {
    SCOPED_TRACE(c.column);
    BatchMetadata md = h.payload.metadata;
    ASSERT_GT(md.buffers[c.entry].length, 0);
    md.buffers[c.entry].length -= 1;
    auto pairs = PairsOf(h.payload);
    pairs[c.entry].second -= 1;
    spec::FrameWriter w;
    w.Metadata(0, h.schema_fb);
    w.Metadata(1, Bytes(*EncodeRecordBatch(md).ValueOrDie()));
    w.Body(spec::Tag(1, 1), spec::AddressList(pairs));
    w.End(2);
    auto st = InspectDescriptor(w.Finish(), AcceptAll).status();
    ASSERT_FALSE(st.ok());
    const std::string& m = st.message();
    EXPECT_TRUE(Contains(m, std::string("column ") + c.column)) << m;
    EXPECT_TRUE(Contains(m, c.role)) << m;
    EXPECT_TRUE(Contains(m, c.needs)) << m;
  }
}

TEST(DescriptorSpec, DeltaBeforeItsDictionaryIsRefused) {
  auto batches = GrowingBatches(2, 3);
  std::vector<std::shared_ptr<Buffer>> scratch;
  ASSERT_OK_AND_ASSIGN(std::string bytes,
                       EncodeDescriptor(batches[0]->schema(), batches,
                                        DescriptorWriteOptions(), nullptr, &scratch));
  std::string error;
  auto messages = spec::Parse(bytes, &error);
  ASSERT_TRUE(error.empty()) << error;
  // Re-frame without the first dictionary and batch: the delta comes first.
  // (Every frame is re-made from what the spec parser found.)
  auto fields = DictionaryFieldMap::Make(*batches[0]->schema()).ValueOrDie();
  spec::FrameWriter w;
  w.Metadata(0, Bytes(*EncodeSchema(*batches[0]->schema(), fields).ValueOrDie()));
  BatchMetadata md;
  md.length = messages[3].length;
  for (const auto& [len, nulls] : messages[3].nodes) md.nodes.push_back({len, nulls});
  for (const auto& [off, len] : messages[3].buffers) md.buffers.push_back({off, len});
  md.body_length = messages[3].body_length;
  w.Metadata(
      1, Bytes(*EncodeDictionaryBatch(messages[3].dictionary_id, true, md).ValueOrDie()));
  w.Body(spec::Tag(1, 1), spec::AddressList(messages[3].pairs));
  w.End(2);
  auto st = InspectDescriptor(w.Finish(), AcceptAll).status();
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(Contains(st.message(), "is a delta, but no dictionary came before it"))
      << st.ToString();
}

}  // namespace
}  // namespace quiver::ipc
