// The schemas of the random cases Quiver writes for Arrow JS
// (js_cases_util.cc): every Quiver type, several ways nested.
#include "js_schemas_util.h"

namespace quiver::interop::js {

FieldPtr F(std::string name, TypePtr type, bool nullable,
           std::vector<std::pair<std::string, std::string>> metadata) {
  return field(std::move(name), std::move(type), nullable,
               metadata.empty() ? nullptr : key_value_metadata(std::move(metadata)));
}

SchemaPtr PrimitivesSchema() {
  using TU = TimeUnit;
  return schema(
      {F("null", null()),
       F("bool", boolean()),
       F("int8", int8()),
       F("int16", int16()),
       F("int32", int32()),
       F("int64", int64()),
       F("uint8", uint8()),
       F("uint16", uint16()),
       F("uint32", uint32()),
       F("uint64", uint64()),
       F("float16", float16()),
       F("float32", float32()),
       F("float64", float64()),
       F("date32", date32()),
       F("date64", date64()),
       F("time32_s", time32(TU::kSecond)),
       F("time32_ms", time32(TU::kMilli)),
       F("time64_us", time64(TU::kMicro)),
       F("time64_ns", time64(TU::kNano)),
       F("ts_s", timestamp(TU::kSecond)),
       F("ts_ms", timestamp(TU::kMilli)),
       F("ts_us", timestamp(TU::kMicro)),
       F("ts_ns", timestamp(TU::kNano)),
       F("ts_s_utc", timestamp(TU::kSecond, "UTC")),
       F("ts_ms_berlin", timestamp(TU::kMilli, "Europe/Berlin")),
       F("ts_us_offset", timestamp(TU::kMicro, "+05:30")),
       F("ts_ns_ny", timestamp(TU::kNano, "America/New_York")),
       F("dur_s", duration(TU::kSecond)),
       F("dur_ms", duration(TU::kMilli)),
       F("dur_us", duration(TU::kMicro)),
       F("dur_ns", duration(TU::kNano)),
       F("iv_ym", month_interval()),
       F("iv_dt", day_time_interval()),
       F("iv_mdn", month_day_nano_interval()),
       F("int32_required", int32(), false, {{"note", "never null"}}),
       F("float64_required", float64(), false)},
      key_value_metadata(
          {{"producer", "quiver"}, {"case", "primitives"}, {"ünïcode", "värde"}}));
}

SchemaPtr BinaryDecimalSchema() {
  return schema({F("utf8", utf8()),
                 F("large_utf8", large_utf8()),
                 F("binary", binary()),
                 F("large_binary", large_binary()),
                 F("fsb1", fixed_size_binary(1)),
                 F("fsb3", fixed_size_binary(3)),
                 F("fsb16", fixed_size_binary(16)),
                 F("utf8_required", utf8(), false),
                 F("dec_1_0", decimal128(1, 0)),
                 F("dec_5_2", decimal128(5, 2)),
                 F("dec_18_4", decimal128(18, 4)),
                 F("dec_38_0", decimal128(38, 0)),
                 F("dec_38_10", decimal128(38, 10)),
                 F("dec_38_38", decimal128(38, 38)),
                 F("dec_12_neg3", decimal128(12, -3)),
                 F("dec32_9_2", decimal32(9, 2)),
                 F("dec32_4_neg1", decimal32(4, -1)),
                 F("dec64_18_4", decimal64(18, 4)),
                 F("dec256_76_0", decimal256(76, 0)),
                 F("dec256_76_30", decimal256(76, 30)),
                 F("dec256_50_10", decimal256(50, 10)),
                 F("utf8_view", utf8_view()),
                 F("binary_view", binary_view())});
}

SchemaPtr NestedSchema() {
  TypePtr point = struct_({F("x", int64()), F("y", fixed_size_binary(2), false)});
  return schema({
      F("list_int32", list(int32())),
      F("list_required_items", list(F("item", int16(), false))),
      F("list_element_name", list(F("element", utf8()))),
      F("large_list_utf8", large_list(utf8())),
      F("fsl_float64_3", fixed_size_list(float64(), 3)),
      F("fsl_required_2", fixed_size_list(F("item", uint8(), false), 2)),
      F("struct",
        struct_({F("a", int32()), F("b", utf8(), false), F("c", list(boolean()))})),
      F("struct_of_list", struct_({F("xs", large_list(float32()))})),
      F("list_of_struct", list(point)),
      F("list_of_list", list(list(int8()))),
      F("fsl_of_struct", fixed_size_list(struct_({F("s", utf8())}), 2)),
      F("map_utf8_list", map(utf8(), list(int32()))),
      F("map_sorted", map(int32(), float64(), /*keys_sorted=*/true)),
      F("map_of_struct", map(utf8(), point)),
      F("list_of_map", list(map(int64(), binary()))),
      F("struct_field_meta", struct_({F("m", int8(), true, {{"unit", "kg"}})})),
      F("list_of_dict", list(dictionary(int16(), utf8()))),
      F("struct_of_dict", struct_({F("d", dictionary(int8(), utf8()))})),
  });
}

SchemaPtr DictionariesSchema() {
  return schema({
      F("dict_utf8_i8", dictionary(int8(), utf8())),
      F("dict_utf8_i16_ordered", dictionary(int16(), utf8(), /*ordered=*/true)),
      F("dict_utf8_i32", dictionary(int32(), utf8())),
      F("dict_utf8_i64", dictionary(int64(), utf8())),
      F("dict_utf8_u8", dictionary(uint8(), utf8())),
      F("dict_utf8_u16", dictionary(uint16(), utf8())),
      F("dict_utf8_u32", dictionary(uint32(), utf8(), /*ordered=*/true)),
      F("dict_utf8_u64", dictionary(uint64(), utf8())),
      F("dict_int64_i32", dictionary(int32(), int64())),
      F("dict_int16_u8", dictionary(uint8(), int16())),
      F("dict_binary_i8", dictionary(int8(), binary())),
      F("dict_large_utf8", dictionary(int32(), large_utf8())),
      F("dict_large_binary", dictionary(int16(), large_binary())),
      F("dict_fsb", dictionary(int16(), fixed_size_binary(4))),
      F("dict_float64", dictionary(int32(), float64())),
      F("dict_decimal", dictionary(int32(), decimal128(9, 2))),
      F("dict_date32", dictionary(int32(), date32())),
      F("dict_timestamp", dictionary(int32(), timestamp(TimeUnit::kMilli, "UTC"))),
      F("dict_required", dictionary(int32(), utf8()), false),
  });
}

SchemaPtr UnionsSchema() {
  TypePtr point = struct_({F("x", int64()), F("y", utf8(), false)});
  return schema({
      F("sparse", sparse_union({F("i", int32()), F("s", utf8())})),
      F("dense", dense_union({F("i", int32()), F("s", utf8())})),
      F("sparse_codes",
        sparse_union({F("b", boolean()), F("d", float64()), F("p", point)}, {5, 2, 9})),
      F("dense_codes",
        dense_union({F("l", list(int16())), F("n", int8(), false), F("p", point)},
                    {127, 0, 3})),
      F("list_of_dense", list(dense_union({F("a", int64()), F("b", binary())}))),
      F("struct_of_sparse",
        struct_({F("u", sparse_union({F("t", timestamp(TimeUnit::kMilli)),
                                      F("d", decimal128(9, 2))})),
                 F("k", int8())})),
      F("sparse_with_dict",
        sparse_union({F("d", dictionary(int16(), utf8())), F("i", int32())})),
  });
}

}  // namespace quiver::interop::js
