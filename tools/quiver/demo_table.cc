#include "demo_table.h"

#include "quiver/columnar/builder.h"

namespace quiver::cli {

namespace {

constexpr const char* kCategories[] = {"books", "games", "music", "tools", "garden"};

SchemaPtr DemoSchema() {
  return schema(
      {field("id", int64(), false), field("category", dictionary(int8(), utf8())),
       field("amount", decimal128(12, 2)),
       field("ts", timestamp(TimeUnit::kMicro, "UTC")), field("name", utf8()),
       field("tags", list(utf8())), field("flag", boolean()), field("score", float64())},
      key_value_metadata({{"generator", "quiver demo"}}));
}

// A cheap deterministic mix, so every run builds the same table.
uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

Result<RecordBatchPtr> MakeBatch(const SchemaPtr& s, int64_t first, int64_t n,
                                 DemoExpect* e) {
  Int64Builder id;
  // The same dictionary in every batch (all categories, fixed order), so
  // the IPC file format needs no replacement dictionaries.
  DictionaryBuilder category(s->field(1)->type());
  StringBuilder all_categories;
  for (const char* c : kCategories) QUIVER_RETURN_NOT_OK(all_categories.Append(c));
  QUIVER_ASSIGN_OR_RAISE(auto memo, all_categories.Finish());
  QUIVER_RETURN_NOT_OK(category.InsertMemoValues(*memo));
  Decimal128Builder amount(s->field(2)->type());
  TimestampBuilder ts(s->field(3)->type(), nullptr);
  StringBuilder name;
  auto tag_values = std::make_shared<StringBuilder>();
  ListBuilder tags(nullptr, tag_values);
  BooleanBuilder flag;
  DoubleBuilder score;
  QUIVER_RETURN_NOT_OK(id.Reserve(n));
  QUIVER_RETURN_NOT_OK(amount.Reserve(n));
  QUIVER_RETURN_NOT_OK(ts.Reserve(n));
  QUIVER_RETURN_NOT_OK(score.Reserve(n));
  for (int64_t i = first; i < first + n; ++i) {
    const uint64_t h = Mix(static_cast<uint64_t>(i));
    const std::string cat = kCategories[h % 5];
    const int64_t cents = static_cast<int64_t>(h % 1000000) - 200000;
    QUIVER_RETURN_NOT_OK(id.Append(i));
    QUIVER_RETURN_NOT_OK(category.Append(std::string_view(cat)));
    QUIVER_RETURN_NOT_OK(amount.Append(Decimal128(cents)));
    QUIVER_RETURN_NOT_OK(ts.Append(1700000000000000 + i * 1000));
    QUIVER_RETURN_NOT_OK(name.Append("item-" + std::to_string(i)));
    QUIVER_RETURN_NOT_OK(tags.Append());
    for (uint64_t t = 0; t < h % 3; ++t) {
      QUIVER_RETURN_NOT_OK(tag_values->Append(kCategories[(h >> (8 + t)) % 5]));
    }
    QUIVER_RETURN_NOT_OK(flag.Append((h & 1) != 0));
    if (i % 7 == 0) {
      QUIVER_RETURN_NOT_OK(score.AppendNull());
      ++e->null_scores;
    } else {
      QUIVER_RETURN_NOT_OK(score.Append(static_cast<double>(h % 10000) / 100.0));
    }
    e->amount_cents += cents;
    auto& g = e->by_category[cat];
    ++g.count;
    g.amount_cents += cents;
    g.max_id = std::max(g.max_id, i);
  }
  e->rows += n;
  std::vector<ArrayPtr> cols(8);
  QUIVER_ASSIGN_OR_RAISE(cols[0], id.Finish());
  QUIVER_ASSIGN_OR_RAISE(cols[1], category.Finish());
  QUIVER_ASSIGN_OR_RAISE(cols[2], amount.Finish());
  QUIVER_ASSIGN_OR_RAISE(cols[3], ts.Finish());
  QUIVER_ASSIGN_OR_RAISE(cols[4], name.Finish());
  QUIVER_ASSIGN_OR_RAISE(cols[5], tags.Finish());
  QUIVER_ASSIGN_OR_RAISE(cols[6], flag.Finish());
  QUIVER_ASSIGN_OR_RAISE(cols[7], score.Finish());
  return RecordBatch::Make(s, n, cols);
}

}  // namespace

Result<TablePtr> MakeDemoTable(int64_t rows, int64_t batch_rows, DemoExpect* expect) {
  if (rows < 0 || batch_rows <= 0) return Status::Invalid("rows must be >= 0");
  SchemaPtr s = DemoSchema();
  std::vector<RecordBatchPtr> batches;
  for (int64_t first = 0; first < rows; first += batch_rows) {
    QUIVER_ASSIGN_OR_RAISE(
        auto b, MakeBatch(s, first, std::min(batch_rows, rows - first), expect));
    batches.push_back(std::move(b));
  }
  return Table::FromRecordBatches(batches, s);
}

}  // namespace quiver::cli
