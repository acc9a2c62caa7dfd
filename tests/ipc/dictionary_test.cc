// Dictionary-encoded fields: new dictionaries, deltas, replacements, nesting,
// and the file format's ban on replacement.

#include <gtest/gtest.h>

#include "ipc_test_util.h"

namespace quiver::ipc::test {
namespace {

// Builds arrays sharing one growing dictionary, one per group of words.
std::vector<ArrayPtr> GrowingDictionaryArrays(
    const TypePtr& type, const std::vector<std::vector<std::string>>& groups) {
  DictionaryBuilder b(type);
  std::vector<ArrayPtr> out;
  for (const auto& words : groups) {
    for (const auto& w : words) {
      Status st = w == "<null>" ? b.AppendNull() : b.Append(std::string_view(w));
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
    out.push_back(b.FinishKeepDictionary().ValueOrDie());
  }
  return out;
}

ArrayPtr DictionaryOf(const TypePtr& type, const std::vector<std::string>& words) {
  return GrowingDictionaryArrays(type, {words})[0];
}

std::vector<RecordBatchPtr> OneColumnBatches(const std::vector<ArrayPtr>& arrays) {
  std::vector<RecordBatchPtr> out;
  auto s = schema({field("d", arrays[0]->type())});
  for (const auto& a : arrays) out.push_back(RecordBatch::Make(s, a->length(), {a}));
  return out;
}

// `data` with the dictionary of every dictionary-encoded array replaced by
// `dict`: what a file reader returns, since it applies every delta of the file
// before the first batch.
ArrayDataPtr WithDictionary(const ArrayDataPtr& data, const ArrayDataPtr& dict) {
  auto copy = std::make_shared<ArrayData>(*data);
  if (copy->type->id() == TypeId::kDictionary) copy->dictionary = dict;
  for (auto& child : copy->child_data) child = WithDictionary(child, dict);
  return copy;
}

std::vector<RecordBatchPtr> WithFinalDictionary(
    const std::vector<RecordBatchPtr>& batches, const ArrayDataPtr& dict) {
  std::vector<RecordBatchPtr> out;
  for (const auto& b : batches) {
    std::vector<ArrayDataPtr> columns;
    for (const auto& c : b->column_data()) columns.push_back(WithDictionary(c, dict));
    out.push_back(RecordBatch::Make(b->schema(), b->num_rows(), columns));
  }
  return out;
}

void ExpectSameBatches(const std::vector<RecordBatchPtr>& expected,
                       const std::vector<RecordBatchPtr>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_OK(actual[i]->ValidateFull());
    EXPECT_TRUE(BatchesEqual(*expected[i], *actual[i])) << "batch " << i;
  }
}

TEST(Dictionary, DeltasInStreamAndFile) {
  auto type = dictionary(int16(), utf8());
  auto batches = OneColumnBatches(GrowingDictionaryArrays(
      type, {{"a", "b", "a"}, {"b", "c", "<null>"}, {"a"}, {"d", "e", "c"}}));
  for (IpcFormat format : {IpcFormat::kStream, IpcFormat::kFile}) {
    SCOPED_TRACE(IpcFormatName(format));
    ASSERT_OK_AND_ASSIGN(auto sink, io::BufferOutputStream::Create());
    ASSERT_OK_AND_ASSIGN(auto writer,
                         MakeWriter(format, sink.get(), batches[0]->schema()));
    for (const auto& b : batches) ASSERT_OK(writer->WriteRecordBatch(*b));
    ASSERT_OK(writer->Close());
    // One full dictionary, then deltas for the two batches that added values.
    EXPECT_EQ(writer->stats().num_dictionary_batches, 3);
    EXPECT_EQ(writer->stats().num_dictionary_deltas, 2);
    EXPECT_EQ(writer->stats().num_replaced_dictionaries, 0);
    ASSERT_OK_AND_ASSIGN(auto data, sink->Finish());
    ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(data));
    if (format == IpcFormat::kStream) {
      ExpectSameBatches(batches, read);
    } else {
      ExpectSameBatches(
          WithFinalDictionary(batches, batches.back()->column_data(0)->dictionary), read);
    }
  }
}

TEST(Dictionary, StreamReaderCountsDeltas) {
  auto batches = OneColumnBatches(
      GrowingDictionaryArrays(dictionary(int8(), utf8()), {{"x"}, {"y"}, {"z", "x"}}));
  ASSERT_OK_AND_ASSIGN(auto data, WriteBatches(batches, IpcFormat::kStream));
  ASSERT_OK_AND_ASSIGN(auto reader, RecordBatchStreamReader::Open(data));
  ASSERT_OK_AND_ASSIGN(auto all, reader->ReadAll());
  ExpectSameBatches(batches, all);
  EXPECT_EQ(reader->stats().num_dictionary_batches, 3);
  EXPECT_EQ(reader->stats().num_dictionary_deltas, 2);
  ASSERT_OK_AND_ASSIGN(auto current, reader->dictionaries().GetDictionary(0));
  EXPECT_EQ(current->length, 3);
}

TEST(Dictionary, DeltasDisabledMeansReplacement) {
  auto batches = OneColumnBatches(
      GrowingDictionaryArrays(dictionary(int32(), utf8()), {{"a"}, {"b"}}));
  IpcWriteOptions o;
  o.emit_dictionary_deltas = false;
  ASSERT_OK_AND_ASSIGN(auto sink, io::BufferOutputStream::Create());
  ASSERT_OK_AND_ASSIGN(auto writer,
                       MakeStreamWriter(sink.get(), batches[0]->schema(), o));
  for (const auto& b : batches) ASSERT_OK(writer->WriteRecordBatch(*b));
  ASSERT_OK(writer->Close());
  EXPECT_EQ(writer->stats().num_dictionary_deltas, 0);
  EXPECT_EQ(writer->stats().num_replaced_dictionaries, 1);
  ASSERT_OK_AND_ASSIGN(auto data, sink->Finish());
  ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(data));
  ExpectSameBatches(batches, read);
  // The file format cannot express the same thing.
  auto file = WriteBatches(batches, IpcFormat::kFile, o);
  EXPECT_TRUE(file.status().IsInvalid()) << file.status().ToString();
}

TEST(Dictionary, ReplacementInStreamIsErrorInFile) {
  auto type = dictionary(int8(), utf8());
  auto batches =
      OneColumnBatches({DictionaryOf(type, {"x", "y", "x"}),
                        DictionaryOf(type, {"z", "z"}), DictionaryOf(type, {"x", "y"})});
  ASSERT_OK_AND_ASSIGN(auto sink, io::BufferOutputStream::Create());
  ASSERT_OK_AND_ASSIGN(auto writer, MakeStreamWriter(sink.get(), batches[0]->schema()));
  for (const auto& b : batches) ASSERT_OK(writer->WriteRecordBatch(*b));
  ASSERT_OK(writer->Close());
  EXPECT_EQ(writer->stats().num_replaced_dictionaries, 2);
  ASSERT_OK_AND_ASSIGN(auto data, sink->Finish());
  ASSERT_OK_AND_ASSIGN(auto reader, RecordBatchStreamReader::Open(data));
  ASSERT_OK_AND_ASSIGN(auto read, reader->ReadAll());
  ExpectSameBatches(batches, read);
  EXPECT_EQ(reader->stats().num_replaced_dictionaries, 2);

  auto file = WriteBatches(batches, IpcFormat::kFile);
  ASSERT_FALSE(file.ok());
  EXPECT_TRUE(file.status().IsInvalid());
  EXPECT_NE(file.status().message().find("cannot replace a dictionary"),
            std::string::npos)
      << file.status().ToString();
}

TEST(Dictionary, UnchangedDictionaryIsSentOnce) {
  auto type = dictionary(int8(), utf8());
  ArrayPtr a = DictionaryOf(type, {"p", "q", "p", "r"});
  // Same dictionary object, and an equal dictionary in another object.
  ArrayPtr b = a->Slice(1, 2);
  ArrayPtr c = DictionaryOf(type, {"p", "q", "r"});
  auto batches = OneColumnBatches({a, b, c});
  for (IpcFormat format : {IpcFormat::kStream, IpcFormat::kFile}) {
    ASSERT_OK_AND_ASSIGN(auto sink, io::BufferOutputStream::Create());
    ASSERT_OK_AND_ASSIGN(auto writer,
                         MakeWriter(format, sink.get(), batches[0]->schema()));
    for (const auto& batch : batches) ASSERT_OK(writer->WriteRecordBatch(*batch));
    ASSERT_OK(writer->Close());
    EXPECT_EQ(writer->stats().num_dictionary_batches, 1);
    ASSERT_OK_AND_ASSIGN(auto data, sink->Finish());
    ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(data));
    ExpectSameBatches(batches, read);
  }
}

TEST(Dictionary, NestedInListsAndStructsWithDeltas) {
  auto dtype = dictionary(int16(), utf8());
  auto groups =
      GrowingDictionaryArrays(dtype, {{"a", "b", "c", "a"}, {"d", "a", "e", "f"}});
  std::vector<RecordBatchPtr> batches;
  SchemaPtr s;
  for (const auto& g : groups) {
    // list<dictionary>: lists [0,2) and [2,4) of the dictionary array.
    auto offsets = Buffer::FromString(std::string("\0\0\0\0\2\0\0\0\4\0\0\0", 12));
    auto list_data = ArrayData::Make(list(dtype), 2, {nullptr, offsets}, {g->data()}, 0);
    auto st = StructArray::Make({g}, {"inner"});
    ASSERT_OK(st.status());
    if (s == nullptr) {
      s = schema({field("l", list_data->type), field("s", (*st)->type())});
    }
    batches.push_back(RecordBatch::Make(s, 2, {list_data, (*st)->Slice(0, 2)->data()}));
  }
  ASSERT_OK_AND_ASSIGN(auto stream, WriteBatches(batches, IpcFormat::kStream));
  ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(stream));
  ExpectSameBatches(batches, read);
  ASSERT_OK_AND_ASSIGN(auto file, WriteBatches(batches, IpcFormat::kFile));
  ASSERT_OK_AND_ASSIGN(read, ReadBatches(file));
  ExpectSameBatches(WithFinalDictionary(batches, groups.back()->data()->dictionary),
                    read);
}

TEST(Dictionary, DictionaryWhoseValuesContainADictionary) {
  // The inner dictionary must be sent before the outer one, whose values
  // refer to it.
  ASSERT_OK_AND_ASSIGN(auto batch, NestedDictionaryBatch());
  const auto& s = batch->schema();
  ASSERT_OK_AND_ASSIGN(auto map, DictionaryFieldMap::Make(*s));
  ASSERT_EQ(map.size(), 2);
  // Ids in pre-order, sending order inner first.
  EXPECT_EQ(map.fields()[0].id, 1);
  EXPECT_EQ(map.fields()[0].path, (std::vector<int>{0, 0}));
  EXPECT_EQ(map.fields()[1].id, 0);

  for (IpcFormat format : {IpcFormat::kStream, IpcFormat::kFile}) {
    ASSERT_OK_AND_ASSIGN(auto data, WriteBatches({batch, batch->Slice(1, 2)}, format));
    ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(data));
    ExpectSameBatches({batch, batch->Slice(1, 2)}, read);
  }
}

TEST(Dictionary, DictionaryOfDictionaryIsRejected) {
  auto type = dictionary(int8(), dictionary(int8(), utf8()));
  auto map = DictionaryFieldMap::Make(*schema({field("x", type)}));
  EXPECT_TRUE(map.status().IsNotImplemented()) << map.status().ToString();
}

TEST(Dictionary, ArrayWithoutDictionaryIsAnError) {
  auto type = dictionary(int8(), utf8());
  ASSERT_OK_AND_ASSIGN(auto indices, ArrayFromVector<Int8Type>({0, 0}));
  auto data = ArrayData::Make(type, 2, indices->data()->buffers, 0);
  auto batch = RecordBatch::Make(schema({field("d", type)}), 2, {data});
  auto r = WriteBatches({batch}, IpcFormat::kStream);
  EXPECT_TRUE(r.status().IsInvalid()) << r.status().ToString();
}

// One dictionary for two fields (the columnar format allows it; writers of
// other implementations do it): a stream whose schema gives both fields id 0,
// one dictionary batch, and batches whose two columns index it.
TEST(Dictionary, OneIdSharedByTwoFields) {
  auto values = DictionaryOf(dictionary(int8(), utf8()), {"x", "y", "z"});
  const auto& dict = values->data()->dictionary;
  auto s = schema(
      {field("a", dictionary(int8(), utf8())), field("b", dictionary(int32(), utf8()))});
  DictionaryFieldMap shared;
  ASSERT_OK(shared.Add({0, {0}, s->field(0)->type()}));
  ASSERT_OK(shared.Add({0, {1}, s->field(1)->type()}));
  // Two columns over the one dictionary, with different index types.
  Int8Builder i8;
  Int32Builder i32;
  for (int8_t v : {2, 0, 1}) ASSERT_OK(i8.Append(v));
  for (int32_t v : {1, 1, 2}) ASSERT_OK(i32.Append(v));
  auto a = std::make_shared<ArrayData>(*i8.Finish().ValueOrDie()->data());
  auto b = std::make_shared<ArrayData>(*i32.Finish().ValueOrDie()->data());
  a->type = s->field(0)->type();
  b->type = s->field(1)->type();
  a->dictionary = b->dictionary = dict;
  auto batch = RecordBatch::Make(s, 3, {MakeArray(a), MakeArray(b)});
  ASSERT_OK(batch->ValidateFull());

  ASSERT_OK_AND_ASSIGN(auto sink, io::BufferOutputStream::Create());
  const auto options = IpcWriteOptions::Defaults();
  ASSERT_OK_AND_ASSIGN(auto schema_fb, EncodeSchema(*s, shared));
  ASSERT_OK(WriteMessageMetadata(*schema_fb, sink.get(), options).status());
  ASSERT_OK_AND_ASSIGN(EncodedBatch d,
                       EncodeDictionaryMessage({0, dict, false, false}, options));
  ASSERT_OK(WriteMessageMetadata(*d.metadata, sink.get(), options).status());
  ASSERT_OK(WriteBody(d.payload, sink.get()));
  ASSERT_OK_AND_ASSIGN(EncodedBatch rb, EncodeRecordBatchMessage(*batch, options));
  ASSERT_OK(WriteMessageMetadata(*rb.metadata, sink.get(), options).status());
  ASSERT_OK(WriteBody(rb.payload, sink.get()));
  ASSERT_OK(WriteEndOfStream(sink.get(), options));
  ASSERT_OK_AND_ASSIGN(auto data, sink->Finish());

  ASSERT_OK_AND_ASSIGN(auto read, ReadBatches(data));
  ASSERT_EQ(read.size(), 1u);
  EXPECT_TRUE(BatchesEqual(*batch, *read[0]));
  EXPECT_EQ(read[0]->column(0)->ToString(), batch->column(0)->ToString());
  EXPECT_EQ(read[0]->column(1)->data()->dictionary.get(),
            read[0]->column(0)->data()->dictionary.get())
      << "the two fields share one decoded dictionary";

  // Values of different types cannot share a dictionary.
  DictionaryFieldMap mixed;
  ASSERT_OK(mixed.Add({0, {0}, dictionary(int8(), utf8())}));
  Status st = mixed.Add({0, {1}, dictionary(int8(), int64())});
  EXPECT_TRUE(st.IsInvalid());
  EXPECT_NE(st.message().find("values differ in type"), std::string::npos)
      << st.ToString();
}

}  // namespace
}  // namespace quiver::ipc::test
