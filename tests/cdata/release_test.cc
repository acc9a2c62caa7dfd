// Release-callback semantics of the C Data Interface, both as producer
// (export) and as consumer (import).
#include <gtest/gtest.h>

#include <cstring>

#include "cdata_test_util.h"

namespace quiver {
namespace {

using cdata_test::FakeArraySpec;
using cdata_test::FakeSchemaSpec;
using cdata_test::MakeFakeArray;
using cdata_test::MakeFakeSchema;
using cdata_test::ReleaseCounter;

// A batch of an int64, a string and a list column, all from `pool`.
RecordBatchPtr MakeBatch(MemoryPool* pool) {
  Int64Builder ints(int64(), pool);
  StringBuilder strings(pool);
  ListBuilder lists(pool, std::make_shared<Int32Builder>(int32(), pool));
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE((i % 7 == 0 ? ints.AppendNull() : ints.Append(i * 3)).ok());
    EXPECT_TRUE(strings.Append("row " + std::to_string(i)).ok());
    EXPECT_TRUE(lists.Append().ok());
    for (int j = 0; j < i % 3; ++j) {
      EXPECT_TRUE(static_cast<Int32Builder*>(lists.value_builder())->Append(j).ok());
    }
  }
  auto batch = RecordBatch::FromArrays(
      {"i", "s", "l"}, {ints.Finish().ValueOrDie(), strings.Finish().ValueOrDie(),
                        lists.Finish().ValueOrDie()});
  return batch.ValueOrDie();
}

TEST(CDataReleaseTest, ExportedBuffersOutliveTheExportingObjects) {
  SystemMemoryPool pool;
  ArrowArray c_array;
  ArrowSchema c_schema;
  RecordBatchPtr copy_of_values;
  {
    RecordBatchPtr batch = MakeBatch(&pool);
    ASSERT_TRUE(ExportRecordBatch(*batch, &c_array, &c_schema).ok());
  }
  // The batch is gone; the exported structure alone keeps the buffers.
  EXPECT_GT(pool.bytes_allocated(), 0);
  const auto* values = static_cast<const int64_t*>(c_array.children[0]->buffers[1]);
  EXPECT_EQ(values[1], 3);
  EXPECT_EQ(values[99], 297);
  c_array.release(&c_array);
  EXPECT_EQ(c_array.release, nullptr) << "release must mark the structure released";
  EXPECT_EQ(pool.bytes_allocated(), 0) << "release must drop every buffer";
  c_schema.release(&c_schema);
  EXPECT_EQ(c_schema.release, nullptr);
}

TEST(CDataReleaseTest, MovedChildArrayLivesOnItsOwn) {
  SystemMemoryPool pool;
  RecordBatchPtr batch = MakeBatch(&pool);
  ArrayPtr expected_strings = batch->column(1);
  ArrowArray c_array;
  ASSERT_TRUE(ExportRecordBatch(*batch, &c_array).ok());
  batch.reset();

  // Move child 1 out as the specification describes, then release the
  // parent at once.
  ArrowArray moved;
  std::memcpy(&moved, c_array.children[1], sizeof(moved));
  c_array.children[1]->release = nullptr;
  c_array.release(&c_array);
  ASSERT_NE(moved.release, nullptr);

  auto strings = ImportArray(&moved, utf8());
  ASSERT_TRUE(strings.ok()) << strings.status().ToString();
  EXPECT_TRUE((*strings)->Equals(*expected_strings));
  expected_strings.reset();
  EXPECT_GT(pool.bytes_allocated(), 0) << "the moved child still holds its buffers";
  strings->reset();
  EXPECT_EQ(pool.bytes_allocated(), 0);
}

TEST(CDataReleaseTest, MovedChildSchemaLivesOnItsOwn) {
  auto s = schema({field("a", int32()), field("b", list(utf8()), false)});
  ArrowSchema c;
  ASSERT_TRUE(ExportSchema(*s, &c).ok());
  ArrowSchema moved;
  std::memcpy(&moved, c.children[1], sizeof(moved));
  c.children[1]->release = nullptr;
  c.release(&c);
  auto f = ImportField(&moved);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE((*f)->Equals(*s->field(1)));
}

TEST(CDataReleaseTest, MovedDictionaryLivesOnItsOwn) {
  DictionaryBuilder b(dictionary(int8(), utf8()));
  for (const char* v : {"x", "y", "x", "z"}) ASSERT_TRUE(b.Append(v).ok());
  ArrayPtr array = b.Finish().ValueOrDie();
  ArrowArray c;
  ASSERT_TRUE(ExportArray(*array, &c).ok());
  ArrowArray dict;
  std::memcpy(&dict, c.dictionary, sizeof(dict));
  c.dictionary->release = nullptr;
  c.release(&c);
  auto values = ImportArray(&dict, utf8());
  ASSERT_TRUE(values.ok()) << values.status().ToString();
  EXPECT_EQ((*values)->length(), 3);
}

TEST(CDataReleaseTest, ImportReleasesOnceAfterTheLastReference) {
  std::vector<int32_t> values = {1, 2, 3, 4, 5, 6, 7, 8};
  ReleaseCounter counter;
  ArrowArray c;
  FakeArraySpec spec;
  spec.length = 8;
  spec.buffers = {nullptr, values.data()};
  MakeFakeArray(spec, &counter, &c);

  auto imported = ImportArray(&c, int32());
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  EXPECT_EQ(c.release, nullptr) << "the caller's structure is marked released";
  ArrayPtr array = imported.MoveValueUnsafe();
  // Zero-copy: the Buffer wraps the producer's memory and owns the release.
  const auto& buffer = array->data()->buffers[1];
  EXPECT_EQ(buffer->data(), reinterpret_cast<const uint8_t*>(values.data()));
  EXPECT_EQ(buffer->size(), 32);
  EXPECT_NE(buffer->owner(), nullptr);

  ArrayPtr slice = array->Slice(2, 3);
  std::shared_ptr<Buffer> kept = array->data()->buffers[1];
  array.reset();
  EXPECT_EQ(counter.calls, 0) << "a slice still uses the producer's memory";
  slice.reset();
  EXPECT_EQ(counter.calls, 0) << "a Buffer still uses the producer's memory";
  kept.reset();
  EXPECT_EQ(counter.calls, 1) << "released once, when the last Buffer went";
}

TEST(CDataReleaseTest, NestedImportReleasesTheBaseOnly) {
  // The consumer releases the base structure; the producer's base release
  // releases the children (our fake counts every node).
  std::vector<int32_t> offsets = {0, 2, 3};
  std::vector<int8_t> items = {7, 8, 9};
  ReleaseCounter counter;
  FakeArraySpec child;
  child.length = 3;
  child.buffers = {nullptr, items.data()};
  FakeArraySpec parent;
  parent.length = 2;
  parent.buffers = {nullptr, offsets.data()};
  parent.children = {child};
  ArrowArray c;
  MakeFakeArray(parent, &counter, &c);
  {
    auto imported = ImportArray(&c, list(int8()));
    ASSERT_TRUE(imported.ok()) << imported.status().ToString();
    ASSERT_TRUE((*imported)->ValidateFull().ok());
    const auto& l = static_cast<const ListArray&>(**imported);
    EXPECT_EQ(l.value_length(0), 2);
    EXPECT_EQ(static_cast<const Int8Array&>(*l.values()).Value(2), 9);
    EXPECT_EQ(counter.calls, 0);
  }
  EXPECT_EQ(counter.calls, 2) << "the parent's release released its child";
}

TEST(CDataReleaseTest, FailedImportReleasesExactlyOnce) {
  std::vector<int32_t> values = {1, 2};
  ReleaseCounter counter;
  ArrowArray c;
  FakeArraySpec spec;
  spec.length = 2;
  spec.buffers = {nullptr, values.data(), values.data()};  // one buffer too many
  MakeFakeArray(spec, &counter, &c);
  auto imported = ImportArray(&c, int32());
  EXPECT_FALSE(imported.ok());
  EXPECT_EQ(counter.calls, 1);
  EXPECT_EQ(c.release, nullptr);
}

TEST(CDataReleaseTest, SchemaImportReleasesOnceEvenOnFailure) {
  ReleaseCounter counter;
  ArrowSchema c;
  MakeFakeSchema(
      FakeSchemaSpec{.format = "+l", .children = {{.format = "i", .name = "item"}}},
      &counter, &c);
  auto type = ImportType(&c);
  ASSERT_TRUE(type.ok()) << type.status().ToString();
  EXPECT_TRUE((*type)->Equals(list(int32())));
  EXPECT_EQ(counter.calls, 2);  // the base and its child, by the base's release

  ReleaseCounter bad;
  MakeFakeSchema(FakeSchemaSpec{.format = "+l"}, &bad, &c);  // a list without child
  EXPECT_FALSE(ImportType(&c).ok());
  EXPECT_EQ(bad.calls, 1);
  EXPECT_EQ(c.release, nullptr);
}

TEST(CDataReleaseTest, ArrayAndSchemaBothTakenOverWhenTheSchemaIsBad) {
  std::vector<int32_t> values = {1};
  ReleaseCounter array_counter, schema_counter;
  ArrowArray c_array;
  FakeArraySpec spec;
  spec.length = 1;
  spec.buffers = {nullptr, values.data()};
  MakeFakeArray(spec, &array_counter, &c_array);
  ArrowSchema c_schema;
  MakeFakeSchema(FakeSchemaSpec{.format = "?"}, &schema_counter, &c_schema);
  EXPECT_FALSE(ImportArray(&c_array, &c_schema).ok());
  EXPECT_EQ(array_counter.calls, 1);
  EXPECT_EQ(schema_counter.calls, 1);
  EXPECT_EQ(c_array.release, nullptr);
  EXPECT_EQ(c_schema.release, nullptr);
}

TEST(CDataReleaseTest, ReleasedStructuresAreRefusedWithoutCallingAnything) {
  ArrowArray released = cdata_test::ReleasedArray();
  auto a = ImportArray(&released, int32());
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("released"), std::string::npos);
  ArrowSchema released_schema = cdata_test::ReleasedSchema();
  EXPECT_FALSE(ImportType(&released_schema).ok());
  EXPECT_FALSE(ImportArray(nullptr, int32()).ok());
  EXPECT_FALSE(ImportSchema(nullptr).ok());

  // Importing the same structure twice: the second sees it released.
  std::vector<int32_t> values = {4};
  ReleaseCounter counter;
  ArrowArray c;
  MakeFakeArray(FakeArraySpec{.length = 1, .buffers = {nullptr, values.data()}}, &counter,
                &c);
  auto first = ImportArray(&c, int32());
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(ImportArray(&c, int32()).ok());
  first->reset();
  EXPECT_EQ(counter.calls, 1);
}

TEST(CDataReleaseTest, ReExportOfImportedDataKeepsTheProducerAlive) {
  // Quiver as a pass-through: import from a producer, export again; the
  // producer's release waits for the second consumer.
  std::vector<int64_t> values = {10, 20, 30};
  ReleaseCounter counter;
  ArrowArray c;
  MakeFakeArray(FakeArraySpec{.length = 3, .buffers = {nullptr, values.data()}}, &counter,
                &c);
  auto imported = ImportArray(&c, int64());
  ASSERT_TRUE(imported.ok());
  ArrowArray again;
  ASSERT_TRUE(ExportArray(**imported, &again).ok());
  imported->reset();
  EXPECT_EQ(counter.calls, 0);
  EXPECT_EQ(static_cast<const int64_t*>(again.buffers[1])[2], 30);
  again.release(&again);
  EXPECT_EQ(counter.calls, 1);
}

}  // namespace
}  // namespace quiver
