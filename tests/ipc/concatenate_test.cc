// Concatenate / ConcatenateBatches: every type, sliced inputs, dictionaries.
#include "quiver/columnar/concatenate.h"

#include <gtest/gtest.h>

#include "ipc/ipc_test_util.h"
#include "quiver/columnar/array.h"
#include "quiver/columnar/memory_pool.h"

namespace quiver {
namespace {

using ipc::test::AllTypes;
using ipc::test::RandomBatch;

// Bytes of every buffer of `d` and its children, each rounded up to 64.
int64_t PaddedBytes(const ArrayData& d) {
  int64_t n = 0;
  for (const auto& b : d.buffers) {
    if (b != nullptr) n += (b->size() + 63) / 64 * 64 + 64;
  }
  for (const auto& c : d.child_data) n += PaddedBytes(*c);
  if (d.dictionary != nullptr) n += PaddedBytes(*d.dictionary);
  return n;
}

bool HasDictionary(const DataType& t) {
  if (t.id() == TypeId::kDictionary) return true;
  for (const auto& f : t.fields()) {
    if (HasDictionary(*f->type())) return true;
  }
  return false;
}

// Every type without dictionaries: random ones differ from batch to batch,
// which Concatenate refuses (DictionariesMustGrowFromOneAnother).
std::vector<TypePtr> TypesWithoutDictionaries() {
  std::vector<TypePtr> types;
  for (const TypePtr& t : AllTypes()) {
    if (!HasDictionary(*t)) types.push_back(t);
  }
  return types;
}

TEST(Concatenate, EveryTypeSlicedAndWholeKeepsEveryValueInOrder) {
  // Pieces of three random batches, some sliced at odd offsets, one empty.
  std::vector<RecordBatchPtr> pieces;
  for (uint32_t seed : {1u, 2u, 3u}) {
    ASSERT_OK_AND_ASSIGN(auto b,
                         RandomBatch(TypesWithoutDictionaries(), 37 + seed * 11, seed));
    pieces.push_back(seed == 2 ? b->Slice(5, 17) : b);
  }
  pieces.push_back(pieces[0]->Slice(3, 0));
  SystemMemoryPool pool;
  ASSERT_OK_AND_ASSIGN(auto whole, ConcatenateBatches(pieces, &pool));
  int64_t rows = 0;
  for (const auto& p : pieces) rows += p->num_rows();
  ASSERT_EQ(whole->num_rows(), rows);
  ASSERT_OK(whole->ValidateFull());
  for (int c = 0; c < whole->num_columns(); ++c) {
    int64_t at = 0;
    for (const auto& p : pieces) {
      EXPECT_TRUE(whole->column(c)->RangeEquals(at, at + p->num_rows(), 0, *p->column(c)))
          << whole->schema()->field(c)->ToString();
      at += p->num_rows();
    }
  }
}

TEST(Concatenate, NeedsNoMoreThanTheInputsPaddedBuffers) {
  // What the transport relies on to size one arena for a whole batch.
  for (const TypePtr& type : TypesWithoutDictionaries()) {
    std::vector<ArrayDataPtr> parts;
    std::vector<const ArrayData*> in;
    int64_t bound = 0, exact_bound = 0;
    for (uint32_t seed = 0; seed < 4; ++seed) {
      ASSERT_OK_AND_ASSIGN(auto a, ipc::test::RandomArray(type, 50 + seed * 31, seed));
      parts.push_back(a->data()->Slice(seed, 40 + seed));
      in.push_back(parts.back().get());
      bound += PaddedBytes(*parts.back());
      exact_bound += ConcatenateBound(*parts.back());
    }
    SystemMemoryPool pool;
    ASSERT_OK_AND_ASSIGN(auto out, Concatenate(in, &pool));
    EXPECT_LE(pool.max_memory(), bound) << type->ToString();
    // The bound from the slices alone holds too, and is far below the
    // buffers' full size for small slices of big arrays.
    EXPECT_LE(pool.max_memory(), exact_bound) << type->ToString();
    EXPECT_TRUE(MakeArray(out)->ValidateFull().ok()) << type->ToString();
  }
}

TEST(Concatenate, DictionariesMustGrowFromOneAnother) {
  auto dict_type = dictionary(int8(), utf8());
  ASSERT_OK_AND_ASSIGN(auto a, ipc::test::RandomArray(dict_type, 20, 1));
  ASSERT_OK_AND_ASSIGN(auto b, ipc::test::RandomArray(dict_type, 20, 2));
  ASSERT_FALSE(a->data()->dictionary->length == 0);
  // The same dictionary: fine, and the result uses it.
  auto b_same = a->data()->Slice(4, 9);
  ASSERT_OK_AND_ASSIGN(auto ok, Concatenate({a->data().get(), b_same.get()}));
  EXPECT_EQ(ok->dictionary, a->data()->dictionary);
  ASSERT_OK(MakeArray(ok)->ValidateFull());
  // Different dictionaries that do not extend one another: refused.
  if (!MakeArray(a->data()->dictionary)->Equals(*MakeArray(b->data()->dictionary))) {
    auto st = Concatenate({a->data().get(), b->data().get()}).status();
    EXPECT_TRUE(st.IsInvalid()) << st.ToString();
    EXPECT_NE(st.message().find("dictionaries differ"), std::string::npos);
  }
  EXPECT_TRUE(Concatenate({}).status().IsInvalid());
  ASSERT_OK_AND_ASSIGN(auto c, ipc::test::RandomArray(int32(), 3, 3));
  EXPECT_TRUE(Concatenate({a->data().get(), c->data().get()}).status().IsTypeError());
}

}  // namespace
}  // namespace quiver
