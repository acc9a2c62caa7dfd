// Streams and files written by another Arrow implementation (Arrow JS, see
// tests/ipc/data/README.md) read with the values their producer wrote.

#include <gtest/gtest.h>

#include <cmath>

#include "ipc_test_util.h"

namespace quiver::ipc::test {
namespace {

const std::string kDataDir = std::string(QUIVER_SOURCE_DIR) + "/tests/ipc/data/";

void CheckJsTable(const Table& t) {
  ASSERT_EQ(t.num_rows(), 4);
  ASSERT_EQ(t.num_columns(), 4);
  ASSERT_OK(t.ValidateFull());
  EXPECT_TRUE(t.schema()->field(0)->type()->Equals(*int32()));
  EXPECT_FALSE(t.schema()->field(0)->nullable());
  EXPECT_TRUE(t.schema()->field(1)->type()->Equals(*float64()));
  // Arrow JS dictionary-encodes strings of tableFromArrays.
  EXPECT_EQ(t.schema()->field(2)->type()->id(), TypeId::kDictionary);
  EXPECT_TRUE(t.schema()->field(3)->type()->Equals(*dictionary(int32(), utf8())));

  auto i = std::static_pointer_cast<Int32Array>(t.column(0)->chunk(0));
  EXPECT_EQ(i->Value(0), 1);
  EXPECT_EQ(i->Value(3), 4);
  auto f = std::static_pointer_cast<DoubleArray>(t.column(1)->chunk(0));
  EXPECT_EQ(f->Value(1), 2.5);
  EXPECT_TRUE(std::isnan(f->Value(2)));
  auto word = [](const ArrayPtr& a, int64_t row) {
    auto d = std::static_pointer_cast<DictionaryArray>(a);
    auto values = std::static_pointer_cast<StringArray>(d->dictionary());
    return values->GetString(d->GetValueIndex(row));
  };
  const ArrayPtr s = t.column(2)->chunk(0);
  EXPECT_EQ(word(s, 1), "bb");
  EXPECT_TRUE(s->IsNull(2));
  EXPECT_EQ(word(s, 3), "dddd");
  const ArrayPtr d = t.column(3)->chunk(0);
  EXPECT_EQ(word(d, 0), "x");
  EXPECT_EQ(word(d, 1), "y");
  EXPECT_EQ(word(d, 2), "x");
  EXPECT_TRUE(d->IsNull(3));
}

TEST(Foreign, ArrowJsStreamAndFile) {
  for (const char* name : {"js_stream.arrows", "js_file.arrow"}) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(auto data, io::MemoryMapFile(kDataDir + name));
    ASSERT_OK_AND_ASSIGN(auto table, ReadTableFromBuffer(data));
    CheckJsTable(*table);
    // The sniffing batch reader sees the same batches.
    ASSERT_OK_AND_ASSIGN(auto reader, OpenBatchReader(data));
    ASSERT_OK_AND_ASSIGN(auto batches, reader->ReadAll());
    ASSERT_EQ(batches.size(), 1u);
    EXPECT_TRUE(reader->schema()->Equals(*table->schema()));
  }
}

TEST(Foreign, RewrittenByQuiverStaysEqual) {
  ASSERT_OK_AND_ASSIGN(auto data, io::MemoryMapFile(kDataDir + "js_file.arrow"));
  ASSERT_OK_AND_ASSIGN(auto table, ReadTableFromBuffer(data));
  for (IpcFormat format : {IpcFormat::kStream, IpcFormat::kFile}) {
    ASSERT_OK_AND_ASSIGN(auto ours, SerializeTable(*table, format));
    ASSERT_OK_AND_ASSIGN(auto again, ReadTableFromBuffer(ours));
    EXPECT_TRUE(again->schema()->Equals(*table->schema(), /*check_metadata=*/true));
    CheckJsTable(*again);
    // Column f holds a NaN, which never equals itself; compare the others.
    for (int c : {0, 2, 3}) EXPECT_TRUE(again->column(c)->Equals(*table->column(c))) << c;
  }
}

}  // namespace
}  // namespace quiver::ipc::test
