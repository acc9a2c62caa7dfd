// Factories of sparse_union, dense_union and run_end_encoded types (type.h).
#include <vector>

#include "quiver/columnar/type.h"

namespace quiver {

namespace {
Result<TypePtr> MakeUnion(TypeId id, FieldVector fields, std::vector<int8_t> codes) {
  const char* what = id == TypeId::kSparseUnion ? "sparse_union" : "dense_union";
  if (fields.size() > static_cast<size_t>(kMaxUnionTypeCode) + 1) {
    return Status::Invalid(what, " of ", fields.size(), " children: at most ",
                           kMaxUnionTypeCode + 1);
  }
  if (codes.empty()) {
    for (size_t k = 0; k < fields.size(); ++k) codes.push_back(static_cast<int8_t>(k));
  }
  if (codes.size() != fields.size()) {
    return Status::Invalid(what, " of ", fields.size(), " children has ", codes.size(),
                           " type codes");
  }
  std::vector<bool> seen(kMaxUnionTypeCode + 1, false);
  for (size_t k = 0; k < codes.size(); ++k) {
    if (fields[k] == nullptr) return Status::Invalid(what, " child ", k, " is null");
    if (codes[k] < 0) {
      return Status::Invalid(what, " type code ", static_cast<int>(codes[k]),
                             " is negative");
    }
    if (seen[static_cast<size_t>(codes[k])]) {
      return Status::Invalid(what, " type code ", static_cast<int>(codes[k]),
                             " appears twice");
    }
    seen[static_cast<size_t>(codes[k])] = true;
  }
  DataType::Params p;
  p.id = id;
  p.children = std::move(fields);
  p.type_codes = std::move(codes);
  return std::make_shared<DataType>(std::move(p));
}
}  // namespace

Result<TypePtr> MakeSparseUnion(FieldVector fields, std::vector<int8_t> type_codes) {
  return MakeUnion(TypeId::kSparseUnion, std::move(fields), std::move(type_codes));
}
Result<TypePtr> MakeDenseUnion(FieldVector fields, std::vector<int8_t> type_codes) {
  return MakeUnion(TypeId::kDenseUnion, std::move(fields), std::move(type_codes));
}
TypePtr sparse_union(FieldVector fields, std::vector<int8_t> type_codes) {
  return MakeSparseUnion(std::move(fields), std::move(type_codes)).ValueOrDie();
}
TypePtr dense_union(FieldVector fields, std::vector<int8_t> type_codes) {
  return MakeDenseUnion(std::move(fields), std::move(type_codes)).ValueOrDie();
}

Result<TypePtr> MakeRunEndEncoded(TypePtr run_end_type, TypePtr value_type) {
  if (run_end_type == nullptr || value_type == nullptr) {
    return Status::Invalid("run_end_encoded: missing run end or value type");
  }
  if (!IsRunEndType(run_end_type->id())) {
    return Status::Invalid(
        "run_end_encoded: run ends must be int16, int32 or int64, not ",
        run_end_type->ToString());
  }
  DataType::Params p;
  p.id = TypeId::kRunEndEncoded;
  p.children = {field("run_ends", std::move(run_end_type), /*nullable=*/false),
                field("values", std::move(value_type))};
  return std::make_shared<DataType>(std::move(p));
}
TypePtr run_end_encoded(TypePtr run_end_type, TypePtr value_type) {
  return MakeRunEndEncoded(std::move(run_end_type), std::move(value_type)).ValueOrDie();
}

}  // namespace quiver
