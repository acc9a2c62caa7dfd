// The three interval types: type system, builders, accessors, printing,
// equality, validation; their IPC and C Data forms are in the round trips
// of every type (tests/common/all_types.h).
#include <gtest/gtest.h>

#include "common/status_macros.h"
#include "quiver/columnar/array.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/c_data.h"
#include "quiver/columnar/ipc.h"
#include "quiver/columnar/pretty_print.h"

namespace quiver {
namespace {

TEST(Interval, TypesAreNamedAndSizedAsArrowSays) {
  EXPECT_EQ(month_interval()->ToString(), "month_interval");
  EXPECT_EQ(day_time_interval()->ToString(), "day_time_interval");
  EXPECT_EQ(month_day_nano_interval()->ToString(), "month_day_nano_interval");
  EXPECT_EQ(month_interval()->bit_width(), 32);
  EXPECT_EQ(day_time_interval()->bit_width(), 64);
  EXPECT_EQ(month_day_nano_interval()->bit_width(), 128);
  EXPECT_TRUE(interval(IntervalUnit::kDayTime)->Equals(day_time_interval()));
  EXPECT_FALSE(month_interval()->Equals(day_time_interval()));
  EXPECT_EQ(LayoutBufferCount(TypeId::kInterval), 2);
}

TEST(Interval, BuildersAccessorsAndPrinting) {
  IntervalBuilder months(month_interval());
  ASSERT_OK(months.AppendMonths(13));
  ASSERT_OK(months.AppendNull());
  ASSERT_OK(months.AppendMonths(-2));
  EXPECT_TRUE(months.Append(DayTimeInterval{1, 2}).IsTypeError());
  ASSERT_OK_AND_ASSIGN(auto m, months.Finish());
  ASSERT_OK(m->ValidateFull());
  const auto& ma = static_cast<const IntervalArray&>(*m);
  EXPECT_EQ(ma.GetMonths(0), 13);
  EXPECT_EQ(ma.GetMonths(2), -2);
  EXPECT_EQ(FormatValue(*m, 0), "13M");

  IntervalBuilder dt(day_time_interval());
  ASSERT_OK(dt.Append(DayTimeInterval{2, 3}));
  ASSERT_OK(dt.Append(DayTimeInterval{-1, 86399999}));
  ASSERT_OK_AND_ASSIGN(auto d, dt.Finish());
  EXPECT_EQ(static_cast<const IntervalArray&>(*d).GetDayTime(1),
            (DayTimeInterval{-1, 86399999}));
  EXPECT_EQ(FormatValue(*d, 0), "2d3ms");

  IntervalBuilder mdn(month_day_nano_interval());
  ASSERT_OK(mdn.Append(MonthDayNanoInterval{1, 2, 3}));
  ASSERT_OK(mdn.Append(MonthDayNanoInterval{-4, 5, -6000000000LL}));
  ASSERT_OK_AND_ASSIGN(auto n, mdn.Finish());
  EXPECT_EQ(static_cast<const IntervalArray&>(*n).GetMonthDayNano(1),
            (MonthDayNanoInterval{-4, 5, -6000000000LL}));
  EXPECT_EQ(FormatValue(*n, 0), "1M2d3ns");
  EXPECT_FALSE(n->Equals(d));
  EXPECT_TRUE(n->Slice(1, 1)->RangeEquals(0, 1, 1, *n));
}

TEST(Interval, IpcAndCDataKeepTheUnit) {
  for (const TypePtr& type :
       {month_interval(), day_time_interval(), month_day_nano_interval()}) {
    SCOPED_TRACE(type->ToString());
    IntervalBuilder b(type);
    uint8_t bytes[16];
    for (int i = 0; i < 16; ++i) bytes[i] = static_cast<uint8_t>(i * 17 + 1);
    ASSERT_OK(b.Append(bytes));
    ASSERT_OK(b.AppendNull());
    ASSERT_OK_AND_ASSIGN(auto array, b.Finish());
    ASSERT_OK_AND_ASSIGN(auto batch, RecordBatch::FromArrays({"i"}, {array}));
    ASSERT_OK_AND_ASSIGN(
        auto stream, ipc::SerializeTable(*Table::FromRecordBatches({batch}).ValueOrDie(),
                                         ipc::IpcFormat::kStream));
    ASSERT_OK_AND_ASSIGN(auto back, ipc::ReadTableFromBuffer(stream));
    EXPECT_TRUE(back->schema()->field(0)->type()->Equals(type));
    EXPECT_TRUE(back->Equals(*Table::FromRecordBatches({batch}).ValueOrDie()));

    ArrowSchema schema;
    ASSERT_OK(ExportType(*type, &schema));
    const std::string format = schema.format;
    EXPECT_EQ(format, type->interval_unit() == IntervalUnit::kYearMonth ? "tiM"
                      : type->interval_unit() == IntervalUnit::kDayTime ? "tiD"
                                                                        : "tin");
    ASSERT_OK_AND_ASSIGN(auto imported, ImportType(&schema));
    EXPECT_TRUE(imported->Equals(type));
  }
}

}  // namespace
}  // namespace quiver
