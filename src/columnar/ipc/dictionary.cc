// Dictionary bookkeeping: field ids, the reader's memo, the writer's tracker.

#include <string>
#include <utility>
#include <vector>

#include "columnar/ipc/endian_swap.h"
#include "quiver/columnar/concatenate.h"
#include "quiver/columnar/ipc/message.h"

namespace quiver::ipc {

namespace {

std::string PathToString(const std::vector<int>& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (i > 0) out += '.';
    out += std::to_string(path[i]);
  }
  return out;
}

class IdAssigner {
 public:
  IdAssigner(DictionaryFieldMap* map, int max_depth) : map_(map), max_depth_(max_depth) {}

  // Ids in pre-order (the writers' numbering), entries added in post-order
  // (inner dictionaries must be sent first).
  Status Walk(const Field& field, std::vector<int>* path, int depth) {
    if (depth > max_depth_) {
      return Status::Invalid("field '", field.name(), "' is nested deeper than ",
                             max_depth_, " levels");
    }
    const TypePtr& type = field.type();
    const DataType* walk = type.get();
    int64_t id = -1;
    if (type->id() == TypeId::kDictionary) {
      id = next_id_++;
      walk = type->value_type().get();
      if (walk->id() == TypeId::kDictionary) {
        return Status::NotImplemented("field '", field.name(),
                                      "' is a dictionary of dictionaries, which IPC "
                                      "cannot express");
      }
    }
    for (size_t i = 0; i < walk->fields().size(); ++i) {
      path->push_back(static_cast<int>(i));
      Status st = Walk(*walk->fields()[i], path, depth + 1);
      path->pop_back();
      QUIVER_RETURN_NOT_OK(st);
    }
    if (id >= 0) QUIVER_RETURN_NOT_OK(map_->Add(DictionaryField{id, *path, type}));
    return Status::OK();
  }

 private:
  DictionaryFieldMap* map_;
  int max_depth_;
  int64_t next_id_ = 0;
};

bool SameValues(const ArrayDataPtr& a, const ArrayDataPtr& b) {
  if (a == b) return true;
  if (a->length != b->length) return false;
  return MakeArray(a)->Equals(*MakeArray(b));
}

bool IsPrefixOf(const ArrayDataPtr& prefix, const ArrayDataPtr& values) {
  if (prefix->length > values->length) return false;
  if (prefix->length == 0) return true;
  return MakeArray(values)->RangeEquals(0, prefix->length, 0, *MakeArray(prefix));
}

}  // namespace

const char* DictionaryUpdateName(DictionaryUpdate update) {
  switch (update) {
    case DictionaryUpdate::kNew:
      return "new";
    case DictionaryUpdate::kDelta:
      return "delta";
    case DictionaryUpdate::kReplacement:
      return "replacement";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------
// DictionaryFieldMap

Result<DictionaryFieldMap> DictionaryFieldMap::Make(const Schema& schema, int max_depth) {
  DictionaryFieldMap map;
  IdAssigner assigner(&map, max_depth);
  std::vector<int> path;
  for (int i = 0; i < schema.num_fields(); ++i) {
    path.assign(1, i);
    QUIVER_RETURN_NOT_OK(assigner.Walk(*schema.field(i), &path, 0));
  }
  return map;
}

Status DictionaryFieldMap::Add(DictionaryField field) {
  if (field.type == nullptr || field.type->id() != TypeId::kDictionary) {
    return Status::Invalid("dictionary field ", field.id, " without a dictionary type");
  }
  if (by_path_.count(field.path) != 0) {
    return Status::Invalid("two dictionary ids for field path ",
                           PathToString(field.path));
  }
  auto shared = by_id_.find(field.id);
  if (shared != by_id_.end()) {
    // One dictionary for several fields, as the columnar format allows: their
    // values must have one type (their index types may differ).
    const DictionaryField& first = fields_[shared->second];
    if (!first.type->value_type()->Equals(*field.type->value_type())) {
      return Status::Invalid("dictionary id ", field.id, " is shared by fields at ",
                             PathToString(first.path), " and ", PathToString(field.path),
                             " whose values differ in type (",
                             first.type->value_type()->ToString(), " vs ",
                             field.type->value_type()->ToString(), ")");
    }
  } else {
    by_id_[field.id] = fields_.size();
  }
  by_path_[field.path] = field.id;
  fields_.push_back(std::move(field));
  return Status::OK();
}

const DictionaryField* DictionaryFieldMap::FindById(int64_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &fields_[it->second];
}

Result<int64_t> DictionaryFieldMap::IdForPath(const std::vector<int>& path) const {
  auto it = by_path_.find(path);
  if (it == by_path_.end()) {
    return Status::KeyError("no dictionary id for the field at path ",
                            PathToString(path));
  }
  return it->second;
}

// ---------------------------------------------------------------------------
// DictionaryMemo

Result<ArrayDataPtr> DictionaryMemo::GetDictionary(int64_t id) const {
  auto it = values_.find(id);
  if (it == values_.end()) {
    return Status::Invalid("dictionary id ", id, " has no dictionary batch yet");
  }
  return it->second;
}

Result<DictionaryUpdate> DictionaryMemo::Apply(int64_t id, bool is_delta,
                                               ArrayDataPtr values, MemoryPool* pool,
                                               Endianness endianness) {
  if (values == nullptr) return Status::Invalid("null dictionary for id ", id);
  auto it = values_.find(id);
  if (is_delta) {
    if (it == values_.end()) {
      return Status::Invalid("delta dictionary batch for id ", id,
                             ", which has no dictionary yet");
    }
    if (values->length == 0) return DictionaryUpdate::kDelta;
    if (endianness == Endianness::kLittle) {
      QUIVER_ASSIGN_OR_RAISE(it->second,
                             Concatenate({it->second.get(), values.get()}, pool));
      return DictionaryUpdate::kDelta;
    }
    // Appending re-bases offsets: do it on little-endian copies (dictionaries
    // nested in the values stay shared; only their indices are appended).
    QUIVER_ASSIGN_OR_RAISE(auto held,
                           internal::SwapEndianness(*it->second, endianness,
                                                    /*swap_dictionaries=*/false, pool));
    QUIVER_ASSIGN_OR_RAISE(auto added,
                           internal::SwapEndianness(*values, endianness,
                                                    /*swap_dictionaries=*/false, pool));
    QUIVER_ASSIGN_OR_RAISE(auto joined, Concatenate({held.get(), added.get()}, pool));
    QUIVER_ASSIGN_OR_RAISE(it->second,
                           internal::SwapEndianness(*joined, Endianness::kLittle,
                                                    /*swap_dictionaries=*/false, pool));
    return DictionaryUpdate::kDelta;
  }
  if (it == values_.end()) {
    values_.emplace(id, std::move(values));
    return DictionaryUpdate::kNew;
  }
  it->second = std::move(values);
  return DictionaryUpdate::kReplacement;
}

// ---------------------------------------------------------------------------
// Writer side

Result<ArrayDataPtr> FindDictionary(const RecordBatch& batch,
                                    const std::vector<int>& path) {
  if (path.empty() || path[0] < 0 || path[0] >= batch.num_columns()) {
    return Status::Invalid("dictionary path ", PathToString(path), " has no column");
  }
  ArrayDataPtr cur = batch.column_data(path[0]);
  for (size_t k = 1; k < path.size() && cur != nullptr; ++k) {
    if (cur->type->id() == TypeId::kDictionary) cur = cur->dictionary;
    if (cur == nullptr) break;
    if (path[k] < 0 || path[k] >= static_cast<int>(cur->child_data.size())) {
      return Status::Invalid("dictionary path ", PathToString(path), ": array of ",
                             cur->type->ToString(), " has no child ", path[k]);
    }
    cur = cur->child_data[path[k]];
  }
  if (cur == nullptr || cur->type->id() != TypeId::kDictionary) {
    return Status::Invalid("dictionary path ", PathToString(path),
                           " does not lead to a dictionary-encoded array");
  }
  if (cur->dictionary == nullptr) {
    return Status::Invalid("dictionary-encoded array at path ", PathToString(path),
                           " has no dictionary");
  }
  return cur->dictionary;
}

Result<std::vector<DictionaryWriteTracker::Send>> DictionaryWriteTracker::Collect(
    const RecordBatch& batch) {
  std::vector<Send> sends;
  const Endianness endianness = batch.schema()->endianness();
  // Values are compared in little-endian order.
  auto comparable = [endianness](const ArrayDataPtr& a) -> Result<ArrayDataPtr> {
    if (endianness == Endianness::kLittle) return a;
    return internal::SwapEndianness(*a, endianness, /*swap_dictionaries=*/true, nullptr);
  };
  for (const DictionaryField& f : fields_.fields()) {
    QUIVER_ASSIGN_OR_RAISE(ArrayDataPtr values, FindDictionary(batch, f.path));
    auto it = sent_.find(f.id);
    if (it == sent_.end()) {
      sends.push_back(Send{f.id, values, false, false, endianness});
      sent_.emplace(f.id, std::move(values));
      continue;
    }
    const ArrayDataPtr& prev = it->second;
    if (prev == values) continue;
    QUIVER_ASSIGN_OR_RAISE(ArrayDataPtr prev_cmp, comparable(prev));
    QUIVER_ASSIGN_OR_RAISE(ArrayDataPtr values_cmp, comparable(values));
    if (SameValues(prev_cmp, values_cmp)) {
      it->second = std::move(values);  // later identity checks hit
      continue;
    }
    if (emit_deltas_ && IsPrefixOf(prev_cmp, values_cmp)) {
      sends.push_back(Send{f.id,
                           values->Slice(prev->length, values->length - prev->length),
                           true, false, endianness});
    } else if (!allow_replacement_) {
      return Status::Invalid(
          "dictionary ", f.id, " (field path ", PathToString(f.path),
          ") changed between batches in a way that is not an extension; the IPC file "
          "format cannot replace a dictionary (write a stream instead)");
    } else {
      sends.push_back(Send{f.id, values, false, true, endianness});
    }
    it->second = std::move(values);
  }
  return sends;
}

}  // namespace quiver::ipc
