// Every type Quiver supports, with the parameter variants that matter
// (units, time zones, widths, negative scales, nested and dictionary
// combinations). One list for every suite that must cover all types.
#pragma once

#include <vector>

#include "quiver/columnar/type.h"

namespace quiver::testing {

inline std::vector<TypePtr> AllTypes() {
  auto point = struct_(
      {field("a", int32()), field("b", utf8(), false), field("c", list(boolean()))});
  return {
      null(), boolean(), int8(), int16(), int32(), int64(), uint8(), uint16(), uint32(),
      uint64(), float16(), float32(), float64(), decimal128(5, 2), decimal128(38, 10),
      decimal128(12, -3), decimal32(9, 2), decimal64(18, -4), decimal256(76, 20),
      decimal256(40, 0), utf8_view(), binary_view(), date32(), date64(),
      time32(TimeUnit::kSecond), time32(TimeUnit::kMilli), time64(TimeUnit::kMicro),
      time64(TimeUnit::kNano), timestamp(TimeUnit::kSecond),
      timestamp(TimeUnit::kMilli, "UTC"), timestamp(TimeUnit::kMicro, "Europe/Amsterdam"),
      timestamp(TimeUnit::kNano, "+05:30"), duration(TimeUnit::kSecond),
      duration(TimeUnit::kMilli), duration(TimeUnit::kMicro), duration(TimeUnit::kNano),
      month_interval(), day_time_interval(), month_day_nano_interval(), utf8(),
      large_utf8(), binary(), large_binary(), fixed_size_binary(0), fixed_size_binary(7),
      list(int32()), list(field("element", utf8(), false)), list(null()),
      large_list(float64()), large_list(utf8()), list(utf8_view()),
      struct_({field("v", binary_view()), field("n", int8())}),
      fixed_size_list(int16(), 3), fixed_size_list(utf8(), 2), fixed_size_list(utf8(), 0),
      point, struct_({}), map(utf8(), int64()),
      map(int32(), list(utf8()), /*keys_sorted=*/true), list(point),
      struct_({field("l", list(list(int8()))), field("m", map(utf8(), float32()))}),
      dictionary(int8(), utf8()), dictionary(int16(), int64(), /*ordered=*/true),
      dictionary(int32(), large_utf8()), dictionary(uint8(), float64()),
      dictionary(uint16(), binary()), dictionary(int64(), fixed_size_binary(4)),
      list(dictionary(int32(), utf8())), fixed_size_list(month_day_nano_interval(), 2),
      struct_({field("d", dictionary(int8(), binary()))}),
      // Unions: type codes that are not 0, 1, 2 ...; nested ones; a
      // dictionary and a struct inside; a non-nullable first child.
      sparse_union({field("i", int32()), field("s", utf8())}, {0, 5}),
      dense_union({field("s", utf8()), field("d", float64()), field("p", point)},
                  {3, 1, 7}),
      sparse_union({field("d", dictionary(int16(), utf8())), field("b", boolean()),
                    field("l", list(int64()))}),
      dense_union({field("n", int8(), false), field("m", map(utf8(), int32()))},
                  {127, 0}),
      list(dense_union({field("a", int16()), field("b", large_utf8())})),
      struct_({field("u",
                     sparse_union({field("x", float32()), field("y", date32())}, {2, 4})),
               field("k", int8())}),
      // List views: of a struct, of strings, in a list and a struct, of a
      // dictionary (the builders write views in order; list_view_test has
      // overlapping and unordered ones).
      list_view(int32()), large_list_view(utf8()), list_view(point),
      list(large_list_view(int8())),
      struct_({field("v", list_view(field("e", float64(), false))), field("k", int8())}),
      large_list_view(dictionary(int8(), utf8())),
      // Run-end encoded: every run end width; of strings, a dictionary, a
      // struct, a list; in a list, a struct and a union.
      run_end_encoded(int32(), utf8()), run_end_encoded(int16(), float64()),
      run_end_encoded(int64(), dictionary(int8(), utf8())),
      run_end_encoded(int32(), point), run_end_encoded(int64(), list(int16())),
      list(run_end_encoded(int16(), int64())),
      struct_({field("r", run_end_encoded(int32(), boolean())), field("k", int8())}),
      sparse_union({field("r", run_end_encoded(int32(), date32())), field("i", int8())})};
}

// Whether `type` has a binary_view or string_view anywhere in its tree.
inline bool HasViews(const DataType& type) {
  if (IsBinaryView(type.id())) return true;
  if (type.id() == TypeId::kDictionary) return HasViews(*type.value_type());
  for (const auto& f : type.fields()) {
    if (HasViews(*f->type())) return true;
  }
  return false;
}

// AllTypes but those with views, for what does not carry views yet
// (descriptors).
inline std::vector<TypePtr> AllTypesButViews() {
  std::vector<TypePtr> out;
  for (auto& t : AllTypes()) {
    if (!HasViews(*t)) out.push_back(t);
  }
  return out;
}

}  // namespace quiver::testing
