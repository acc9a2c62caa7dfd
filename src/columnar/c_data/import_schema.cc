// Import of types, fields and schemas from the C Data Interface.
//
// The importer moves the caller's base structure into a guard that releases
// it on return, then reads the tree without trusting it: every pointer it
// follows is checked for NULL, every count for sign, released children are
// refused, and the depth is bounded. Strings are copied, so nothing of the
// producer's is referenced after the import.
#include <cstring>
#include <string>

#include "columnar/c_data/c_data_internal.h"
#include "columnar/c_data/import_internal.h"
#include "quiver/columnar/c_data.h"

namespace quiver {

namespace internal {

namespace {

Status CheckSchemaNode(const ArrowSchema* s, const std::string& what) {
  if (s == nullptr) return Status::Invalid(what, " is a NULL pointer");
  if (s->release == nullptr) return Status::Invalid(what, " is released");
  if (s->format == nullptr) return Status::Invalid(what, " has no format string");
  if (s->n_children < 0) {
    return Status::Invalid(what, " has a negative child count ", s->n_children);
  }
  if (s->n_children > 0 && s->children == nullptr) {
    return Status::Invalid(what, " has ", s->n_children,
                           " children but no children array");
  }
  return Status::OK();
}

std::string ChildWhat(const std::string& what, int64_t i) {
  return what + " child " + std::to_string(i);
}

// The number of children a nested format requires (-1: any number).
int64_t ExpectedChildren(TypeId id) {
  switch (id) {
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kListView:
    case TypeId::kLargeListView:
    case TypeId::kFixedSizeList:
    case TypeId::kMap:
      return 1;
    case TypeId::kRunEndEncoded:
      return 2;
    case TypeId::kStruct:
    case TypeId::kSparseUnion:  // as many as type codes: checked by the type
    case TypeId::kDenseUnion:
      return -1;
    default:
      return 0;
  }
}

// A map's entries as the Quiver type requires them: the format forbids
// nulls in the entries and the keys, yet some producers mark those fields
// nullable, which costs nothing to tolerate.
Result<TypePtr> MapType(const FieldPtr& entries, bool keys_sorted) {
  const TypePtr& st = entries->type();
  if (st->id() != TypeId::kStruct || st->num_fields() != 2) {
    return Status::Invalid("map entries must be a struct of 2 fields, got ",
                           st->ToString());
  }
  FieldVector kv = st->fields();
  kv[0] = kv[0]->WithNullable(false);
  auto fixed = entries->WithType(struct_(std::move(kv)))->WithNullable(false);
  auto type = MapFromEntries(std::move(fixed), keys_sorted);
  if (!type.ok()) return Status::Invalid(type.status().message());
  return type;
}

Result<TypePtr> NestedType(const FormatSpec& spec, const ArrowSchema* s,
                           const FieldVector& children) {
  switch (spec.id) {
    case TypeId::kList:
      return list(children[0]);
    case TypeId::kLargeList:
      return large_list(children[0]);
    case TypeId::kListView:
      return list_view(children[0]);
    case TypeId::kLargeListView:
      return large_list_view(children[0]);
    case TypeId::kRunEndEncoded: {  // children "run_ends" and "values"
      auto type = MakeRunEndEncoded(children[0]->type(), children[1]->type());
      if (!type.ok()) return Status::Invalid(type.status().message());
      return type;
    }
    case TypeId::kFixedSizeList:
      return MakeFixedSizeList(children[0], spec.size);
    case TypeId::kStruct:
      return struct_(children);
    case TypeId::kMap:
      return MapType(children[0], (s->flags & ARROW_FLAG_MAP_KEYS_SORTED) != 0);
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {
      if (spec.type_codes.size() != children.size()) {
        return Status::Invalid("union format ", QuoteForMessage(s->format), " lists ",
                               spec.type_codes.size(), " type codes for ",
                               children.size(), " children");
      }
      return spec.id == TypeId::kDenseUnion ? MakeDenseUnion(children, spec.type_codes)
                                            : MakeSparseUnion(children, spec.type_codes);
    }
    default:
      return LeafTypeFromSpec(spec);
  }
}

Result<TypePtr> ImportTypeNode(const ArrowSchema* s, const std::string& what, int depth);

Result<FieldPtr> ImportFieldNode(const ArrowSchema* s, const std::string& what,
                                 int depth) {
  QUIVER_ASSIGN_OR_RAISE(TypePtr type, ImportTypeNode(s, what, depth));
  MetadataPtr metadata;
  if (s->metadata != nullptr) {
    auto decoded = DecodeMetadata(s->metadata);
    if (!decoded.ok()) return decoded.status().WithContext(what);
    metadata = decoded.MoveValueUnsafe();
  }
  return field(s->name != nullptr ? s->name : "", std::move(type),
               (s->flags & ARROW_FLAG_NULLABLE) != 0, std::move(metadata));
}

Result<TypePtr> ImportDictionary(const ArrowSchema* s, TypePtr index_type,
                                 const std::string& what, int depth) {
  if (!IsInteger(index_type->id())) {
    return Status::Invalid(what, " is dictionary-encoded but its index format ",
                           QuoteForMessage(s->format), " is not an integer type");
  }
  const std::string dict_what = what + " dictionary";
  QUIVER_RETURN_NOT_OK(CheckSchemaNode(s->dictionary, dict_what));
  QUIVER_ASSIGN_OR_RAISE(TypePtr value_type,
                         ImportTypeNode(s->dictionary, dict_what, depth + 1));
  return MakeDictionary(std::move(index_type), std::move(value_type),
                        (s->flags & ARROW_FLAG_DICTIONARY_ORDERED) != 0);
}

Result<TypePtr> ImportTypeNode(const ArrowSchema* s, const std::string& what, int depth) {
  if (depth > kMaxCDataNesting) {
    return Status::Invalid(what, ": types nested deeper than ", kMaxCDataNesting,
                           " levels");
  }
  QUIVER_RETURN_NOT_OK(CheckSchemaNode(s, what));
  auto spec = ParseFormat(s->format);
  if (!spec.ok()) return spec.status().WithContext(what);
  const int64_t expected = ExpectedChildren(spec->id);
  if (expected >= 0 && s->n_children != expected) {
    return Status::Invalid(what, ": format ", QuoteForMessage(s->format), " takes ",
                           expected, " children, got ", s->n_children);
  }
  FieldVector children;
  for (int64_t i = 0; i < s->n_children; ++i) {
    const std::string child_what = ChildWhat(what, i);
    QUIVER_RETURN_NOT_OK(CheckSchemaNode(s->children[i], child_what));
    QUIVER_ASSIGN_OR_RAISE(FieldPtr child,
                           ImportFieldNode(s->children[i], child_what, depth + 1));
    children.push_back(std::move(child));
  }
  auto type = NestedType(*spec, s, children);
  if (!type.ok()) return type.status().WithContext(what);
  if (s->dictionary != nullptr) {
    return ImportDictionary(s, type.MoveValueUnsafe(), what, depth);
  }
  return type;
}

}  // namespace

SchemaGuard::SchemaGuard(ArrowSchema* source) {
  if (source != nullptr) {
    std::memcpy(&schema_, source, sizeof(schema_));
    source->release = nullptr;
  } else {
    std::memset(&schema_, 0, sizeof(schema_));
  }
}

SchemaGuard::~SchemaGuard() {
  if (schema_.release != nullptr) schema_.release(&schema_);
}

Status SchemaGuard::CheckLive(const char* what) const {
  if (schema_.release == nullptr) {
    return Status::Invalid("the ", what, " is NULL or already released");
  }
  return Status::OK();
}

Result<TypePtr> ImportTypeFrom(const ArrowSchema& schema) {
  return ImportTypeNode(&schema, "schema", 0);
}

Result<FieldPtr> ImportFieldFrom(const ArrowSchema& schema) {
  return ImportFieldNode(&schema, "schema", 0);
}

Result<SchemaPtr> ImportSchemaFrom(const ArrowSchema& schema) {
  QUIVER_RETURN_NOT_OK(CheckSchemaNode(&schema, "schema"));
  if (std::strcmp(schema.format, "+s") != 0) {
    return Status::Invalid("a schema must have the struct format '+s', got ",
                           QuoteForMessage(schema.format));
  }
  QUIVER_ASSIGN_OR_RAISE(FieldPtr root, ImportFieldNode(&schema, "schema", 0));
  return quiver::schema(root->type()->fields(), root->metadata());
}

}  // namespace internal

Result<TypePtr> ImportType(ArrowSchema* schema) {
  internal::SchemaGuard guard(schema);
  QUIVER_RETURN_NOT_OK(guard.CheckLive("ArrowSchema"));
  return internal::ImportTypeFrom(guard.get());
}

Result<FieldPtr> ImportField(ArrowSchema* schema) {
  internal::SchemaGuard guard(schema);
  QUIVER_RETURN_NOT_OK(guard.CheckLive("ArrowSchema"));
  return internal::ImportFieldFrom(guard.get());
}

Result<SchemaPtr> ImportSchema(ArrowSchema* schema) {
  internal::SchemaGuard guard(schema);
  QUIVER_RETURN_NOT_OK(guard.CheckLive("ArrowSchema"));
  return internal::ImportSchemaFrom(guard.get());
}

}  // namespace quiver
