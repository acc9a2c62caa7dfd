// Arrow's Dissociated IPC protocol (quiver/columnar/ipc/dissociated.h): the
// byte forms of its messages, streams of every type through both body types
// in any arrival order, dictionary deltas, zero-copy address lists, and
// what a lying peer gets.

#include "quiver/columnar/ipc/dissociated.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "ipc_test_util.h"

namespace quiver::ipc::dissociated {
namespace {

using ipc::test::BatchesEqual;

TEST(DissociatedTest, MetadataMessagesHaveTheFiveBytePrefix) {
  const std::string m = EncodeMetadataMessage(0x01020304, "flat");
  ASSERT_EQ(m.size(), 9u);
  EXPECT_EQ(m[0], 1);
  EXPECT_EQ(m.substr(1, 4), std::string("\x04\x03\x02\x01", 4));  // little-endian
  auto d = DecodeMetadataMessage(m);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->kind, MetadataKind::kMetadata);
  EXPECT_EQ(d->sequence, 0x01020304u);
  EXPECT_EQ(d->flatbuffer, "flat");

  const std::string end = EncodeEndOfStream(7);
  EXPECT_EQ(end, std::string("\0\x07\0\0\0", 5));
  auto e = DecodeMetadataMessage(end);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kind, MetadataKind::kEndOfStream);
  EXPECT_EQ(e->sequence, 7u);

  auto refused = [](std::string_view bytes, const std::string& needle) {
    auto r = DecodeMetadataMessage(bytes);
    ASSERT_TRUE(r.status().IsInvalid()) << r.status().ToString();
    EXPECT_NE(r.status().message().find(needle), std::string::npos)
        << r.status().message();
  };
  refused(std::string("\x01\0\0", 3), "shorter than its 5-byte prefix");
  refused(end + "x", "it must be exactly 5");
  refused(std::string("\x02\0\0\0\0x", 6), "unknown kind 2");
  refused(std::string("\x01\0\0\0\0", 5), "carries no flatbuffer");
}

TEST(DissociatedTest, TagsCarryTheSequenceLowAndTheBodyTypeHigh) {
  const uint64_t tag = MakeTag(0xDEADBEEF, BodyType::kAddresses);
  EXPECT_EQ(tag, 0x01000000DEADBEEFULL);
  EXPECT_EQ(tag & kSequenceMask, 0xDEADBEEFULL);
  auto t = DecodeTag(tag);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->sequence, 0xDEADBEEFu);
  EXPECT_EQ(t->type, BodyType::kAddresses);
  EXPECT_EQ(MakeTag(5, BodyType::kPacked), 5u);
  auto reserved = DecodeTag(tag | (uint64_t{1} << 40));
  ASSERT_TRUE(reserved.status().IsInvalid());
  EXPECT_NE(reserved.status().message().find("reserved bits 32-55"), std::string::npos);
  auto unknown = DecodeTag(uint64_t{2} << 56);
  ASSERT_TRUE(unknown.status().IsInvalid());
  EXPECT_NE(unknown.status().message().find("unknown body type 2"), std::string::npos);
}

TEST(DissociatedTest, AddressListsAndFreeDataAreCheckedWhole) {
  const std::vector<AddressRange> ranges = {{0x1000, 64}, {0, 0}, {0x2000, 8}};
  const std::string list = EncodeAddressList(ranges);
  ASSERT_EQ(list.size(), 16u * 4);
  auto back = DecodeAddressList(list);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[2].address, 0x2000u);
  EXPECT_EQ((*back)[2].length, 8u);

  std::string wrong_total = list;
  wrong_total[0] = 99;
  EXPECT_NE(DecodeAddressList(wrong_total).status().message().find("add up to 72"),
            std::string::npos);
  EXPECT_NE(DecodeAddressList(list.substr(0, 40)).status().message().find("not 64"),
            std::string::npos);
  EXPECT_NE(DecodeAddressList(list, 2).status().message().find("limit of 2"),
            std::string::npos);
  const std::string wraps = EncodeAddressList({{UINT64_MAX - 3, 8}});
  EXPECT_NE(DecodeAddressList(wraps).status().message().find("past the end"),
            std::string::npos);
  EXPECT_TRUE(DecodeAddressList("short").status().IsInvalid());

  auto freed = DecodeFreeData(EncodeFreeData({0x1000, 0x2000}));
  ASSERT_TRUE(freed.ok());
  EXPECT_EQ(*freed, (std::vector<uint64_t>{0x1000, 0x2000}));
  EXPECT_TRUE(DecodeFreeData("").status().IsInvalid());
  EXPECT_TRUE(DecodeFreeData("1234567").status().IsInvalid());
}

// Every message of a stream, split into what travels on each stream.
struct Wire {
  std::vector<std::string> metadata;
  std::vector<std::pair<uint64_t, std::string>> bodies;
  std::vector<std::shared_ptr<Buffer>> keep;  // type-1 buffers, alive until freed
};

Wire WriteAll(const std::vector<RecordBatchPtr>& batches, BodyType type) {
  Wire w;
  auto writer = StreamWriter::Make(batches[0]->schema(), type).ValueOrDie();
  auto add = [&](Outgoing o) {
    w.metadata.push_back(std::move(o.metadata));
    if (o.tagged) w.bodies.emplace_back(o.tag, std::move(o.body));
    w.keep.insert(w.keep.end(), o.buffers.begin(), o.buffers.end());
  };
  add(writer->Begin().ValueOrDie());
  for (const auto& b : batches) {
    for (auto& o : writer->Write(*b).ValueOrDie()) add(std::move(o));
  }
  add(writer->End().ValueOrDie());
  return w;
}

// Hands everything to `reader` in a shuffled order, draining batches as
// they become ready.
std::vector<RecordBatchPtr> ReadAll(const Wire& w, StreamReader* reader, uint32_t seed) {
  std::vector<std::pair<bool, size_t>> order;
  for (size_t i = 0; i < w.metadata.size(); ++i) order.emplace_back(false, i);
  for (size_t i = 0; i < w.bodies.size(); ++i) order.emplace_back(true, i);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  // The end of stream last: the reader refuses anything after it.
  std::stable_partition(order.begin(), order.end(), [&](const auto& p) {
    return p.first || p.second + 1 != w.metadata.size();
  });
  std::vector<RecordBatchPtr> out;
  for (const auto& [is_body, i] : order) {
    Status st = is_body ? reader->OnBody(w.bodies[i].first,
                                         Buffer::FromString(w.bodies[i].second))
                        : reader->OnMetadata(w.metadata[i]);
    EXPECT_TRUE(st.ok()) << st.ToString();
    for (;;) {
      auto next = reader->Next();
      EXPECT_TRUE(next.ok()) << next.status().ToString();
      if (!next.ok() || !next->has_value()) break;
      out.push_back(**next);
    }
  }
  EXPECT_TRUE(reader->finished());
  return out;
}

TEST(DissociatedTest, EveryTypeRoundTripsInAnyArrivalOrderWithPackedBodies) {
  std::vector<RecordBatchPtr> batches;
  for (int64_t rows : {100, 0, 37}) {
    batches.push_back(
        ipc::test::RandomBatch(ipc::test::AllTypes(), rows, static_cast<uint32_t>(rows))
            .ValueOrDie());
  }
  const Wire w = WriteAll(batches, BodyType::kPacked);
  // Schema, dictionaries and batches, end: every message but the first and
  // the last has a body.
  ASSERT_GT(w.metadata.size(), batches.size() + 2);
  ASSERT_EQ(w.bodies.size() + 2, w.metadata.size());
  for (uint32_t seed : {1u, 2u, 3u}) {
    StreamReader reader;
    auto got = ReadAll(w, &reader, seed);
    ASSERT_EQ(got.size(), batches.size()) << "seed " << seed;  // the empty one too
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(BatchesEqual(*batches[i], *got[i]))
          << "batch " << i << " seed " << seed;
    }
    EXPECT_TRUE(reader.TakeAddressesToFree().empty());
  }
}

TEST(DissociatedTest, AddressListsAreReadZeroCopyAndGivenBackToFree) {
  auto batch = ipc::test::RandomBatch(ipc::test::AllTypes(), 50, 9).ValueOrDie();
  const Wire w = WriteAll({batch}, BodyType::kAddresses);
  // The resolver knows exactly the writer's buffers, as a mapped region
  // would know its bounds; anything else is refused.
  std::map<uint64_t, std::shared_ptr<Buffer>> known;
  for (const auto& b : w.keep) {
    if (b && b->size() > 0) known[reinterpret_cast<uint64_t>(b->data())] = b;
  }
  int resolved = 0;
  StreamReader reader(
      [&](uint64_t address, uint64_t length) -> Result<std::shared_ptr<Buffer>> {
        auto it = known.upper_bound(address);
        if (it == known.begin()) return Status::Invalid("unknown address");
        --it;
        const uint64_t start = reinterpret_cast<uint64_t>(it->second->data());
        if (address + length > start + static_cast<uint64_t>(it->second->size())) {
          return Status::Invalid("range outside a known buffer");
        }
        ++resolved;
        return Buffer::Wrap(reinterpret_cast<const uint8_t*>(address),
                            static_cast<int64_t>(length), it->second);
      });
  auto got = ReadAll(w, &reader, 4);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(BatchesEqual(*batch, *got[0]));
  EXPECT_GT(resolved, 0);
  // Zero-copy: the int64 column's values are the writer's memory.
  for (int c = 0; c < batch->num_columns(); ++c) {
    if (batch->column(c)->type()->id() != TypeId::kInt64) continue;
    EXPECT_EQ(got[0]->column(c)->data()->buffers[1]->data(),
              batch->column(c)->data()->buffers[1]->data());
  }
  auto to_free = reader.TakeAddressesToFree();
  EXPECT_EQ(to_free.size(), static_cast<size_t>(resolved));
  for (uint64_t a : to_free) EXPECT_EQ(known.count(a), 1u) << a;
  EXPECT_TRUE(reader.TakeAddressesToFree().empty());
}

TEST(DissociatedTest, DictionaryDeltasTravelAsTheirOwnMessages) {
  DictionaryBuilder b(dictionary(int16(), utf8()));
  std::vector<RecordBatchPtr> batches;
  auto s = schema({field("d", dictionary(int16(), utf8()))});
  for (const auto& words : std::vector<std::vector<std::string>>{
           {"a", "b"}, {"b", "c", "d"}, {"a"}, {"e", "a"}}) {
    for (const auto& word : words) ASSERT_TRUE(b.Append(std::string_view(word)).ok());
    auto a = b.FinishKeepDictionary().ValueOrDie();
    batches.push_back(RecordBatch::Make(s, a->length(), {a}));
  }
  const Wire w = WriteAll(batches, BodyType::kPacked);
  // Schema, the first dictionary, then a delta before the batches that grew
  // it (the second and the fourth), and the end.
  EXPECT_EQ(w.metadata.size(), 1u + 1 + 2 + batches.size() + 1);
  StreamReader reader;
  auto got = ReadAll(w, &reader, 5);
  ASSERT_EQ(got.size(), batches.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i]->column(0)->ToString(), batches[i]->column(0)->ToString()) << i;
  }
}

TEST(DissociatedTest, ALyingPeerGetsAnErrorNamingWhatIsWrong) {
  auto batch = ipc::test::RandomBatch({int64(), utf8()}, 10, 1).ValueOrDie();
  const Wire packed = WriteAll({batch}, BodyType::kPacked);
  const Wire listed = WriteAll({batch}, BodyType::kAddresses);
  auto expect = [](const Status& st, const std::string& needle) {
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.ToString();
  };
  {  // the same sequence twice, on either stream
    StreamReader r;
    ASSERT_TRUE(r.OnMetadata(packed.metadata[1]).ok());
    expect(r.OnMetadata(packed.metadata[1]), "sequence 1 received twice");
    ASSERT_TRUE(r.OnBody(packed.bodies[0].first, Buffer::FromString("x")).ok());
    expect(r.OnBody(packed.bodies[0].first, Buffer::FromString("x")),
           "body for sequence 1 received twice");
  }
  {  // a stream that does not start with its schema
    StreamReader r;
    ASSERT_TRUE(
        r.OnMetadata(EncodeMetadataMessage(0, packed.metadata[1].substr(5))).ok());
    expect(r.Next().status(), "sequence 0 must be the Schema");
  }
  {  // anything after the end; an end before what was sent
    StreamReader r;
    ASSERT_TRUE(r.OnMetadata(packed.metadata[0]).ok());
    ASSERT_TRUE(r.OnMetadata(EncodeEndOfStream(1)).ok());
    expect(r.OnMetadata(packed.metadata[1]), "after the end of stream");
    expect(r.OnBody(MakeTag(1, BodyType::kPacked), Buffer::FromString("x")),
           "at or after the end of stream");
    StreamReader early;
    ASSERT_TRUE(early.OnMetadata(packed.metadata[1]).ok());
    expect(early.OnMetadata(EncodeEndOfStream(1)), "before messages already received");
  }
  {  // a body too short for its header
    StreamReader r;
    ASSERT_TRUE(r.OnMetadata(packed.metadata[0]).ok());
    ASSERT_TRUE(r.OnMetadata(packed.metadata[1]).ok());
    ASSERT_TRUE(r.OnBody(packed.bodies[0].first,
                         Buffer::FromString(packed.bodies[0].second.substr(0, 8)))
                    .ok());
    EXPECT_FALSE(r.Next().ok());
  }
  {  // address lists: none resolvable, or lengths that disagree with the header
    StreamReader none;
    ASSERT_TRUE(none.OnMetadata(listed.metadata[0]).ok());
    ASSERT_TRUE(none.OnMetadata(listed.metadata[1]).ok());
    ASSERT_TRUE(
        none.OnBody(listed.bodies[0].first, Buffer::FromString(listed.bodies[0].second))
            .ok());
    expect(none.Next().status(), "this reader resolves none");

    auto ranges = DecodeAddressList(listed.bodies[0].second).ValueOrDie();
    size_t k = 0;
    while (ranges[k].length == 0) ++k;
    ranges[k].length += 8;
    StreamReader lied([](uint64_t, uint64_t) -> Result<std::shared_ptr<Buffer>> {
      return Status::Invalid("must not be reached");
    });
    ASSERT_TRUE(lied.OnMetadata(listed.metadata[0]).ok());
    ASSERT_TRUE(lied.OnMetadata(listed.metadata[1]).ok());
    ASSERT_TRUE(
        lied.OnBody(listed.bodies[0].first, Buffer::FromString(EncodeAddressList(ranges)))
            .ok());
    expect(lied.Next().status(), "in the header");
    ranges.pop_back();
    StreamReader fewer([](uint64_t, uint64_t) -> Result<std::shared_ptr<Buffer>> {
      return Status::Invalid("must not be reached");
    });
    ASSERT_TRUE(fewer.OnMetadata(listed.metadata[0]).ok());
    ASSERT_TRUE(fewer.OnMetadata(listed.metadata[1]).ok());
    ASSERT_TRUE(
        fewer
            .OnBody(listed.bodies[0].first, Buffer::FromString(EncodeAddressList(ranges)))
            .ok());
    expect(fewer.Next().status(), "buffer entries");
  }
  {  // a flood of messages that never come due
    StreamReader::Limits limits;
    limits.max_pending = 8;
    StreamReader r(nullptr, IpcReadOptions::Defaults(), limits);
    Status st;
    for (uint32_t seq = 1; seq < 100 && st.ok(); ++seq) {
      st = r.OnBody(MakeTag(seq, BodyType::kPacked), Buffer::FromString("x"));
    }
    EXPECT_TRUE(st.IsCapacityError()) << st.ToString();
  }
  // The writer refuses out-of-order use and foreign batches.
  auto writer = StreamWriter::Make(batch->schema(), BodyType::kPacked).ValueOrDie();
  expect(writer->Write(*batch).status(), "before Begin()");
  ASSERT_TRUE(writer->Begin().ok());
  auto other = ipc::test::RandomBatch({int32()}, 3, 1).ValueOrDie();
  expect(writer->Write(*other).status(), "is not the stream's");
  ASSERT_TRUE(writer->End().ok());
  expect(writer->Write(*batch).status(), "after the end of stream");
}

}  // namespace
}  // namespace quiver::ipc::dissociated
