#include "control/descriptor/layout.h"

#include <cinttypes>
#include <cstdio>
#include <limits>

#include "quiver/columnar/bit_util.h"
#include "quiver/control/descriptor.h"

namespace quiver::control::descriptor_layout {

using ipc::BatchMetadata;
using ipc::BufferSpec;

namespace {

Status AddToLayout(const DataType& type, const std::string* name, int parent, int depth,
                   Layout* out) {
  if (depth > kMaxDescriptorNesting) {
    return Status::Invalid("type nested deeper than ", kMaxDescriptorNesting, " levels");
  }
  const int node = static_cast<int>(out->nodes.size());
  out->nodes.push_back(LayoutNode{&type, name, parent});
  const TypeId id = type.id();
  if (id == TypeId::kNull) return Status::OK();
  if (IsBinaryView(id)) {
    // Their data buffers vary per batch (variadic counts): the descriptor's
    // fixed layout cannot describe them yet.
    return Status::NotImplemented("descriptors do not carry ", type.ToString(),
                                  " columns yet (", name != nullptr ? *name : "", ")");
  }
  if (IsUnion(id)) {  // no validity buffer (IPC V5)
    out->buffers.push_back(LayoutBuffer{node, Role::kTypeIds});
    if (id == TypeId::kDenseUnion) {
      out->buffers.push_back(LayoutBuffer{node, Role::kUnionOffsets});
    }
    for (const FieldPtr& child : type.fields()) {
      QUIVER_RETURN_NOT_OK(
          AddToLayout(*child->type(), &child->name(), node, depth + 1, out));
    }
    return Status::OK();
  }
  if (id == TypeId::kRunEndEncoded) {  // no buffers: run ends, values
    for (const FieldPtr& child : type.fields()) {
      QUIVER_RETURN_NOT_OK(
          AddToLayout(*child->type(), &child->name(), node, depth + 1, out));
    }
    return Status::OK();
  }
  out->buffers.push_back(LayoutBuffer{node, Role::kValidity});
  if (IsBaseBinary(id)) {
    out->buffers.push_back(LayoutBuffer{node, Role::kOffsets});
    out->buffers.push_back(LayoutBuffer{node, Role::kData});
    return Status::OK();
  }
  switch (id) {
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kMap:
      out->buffers.push_back(LayoutBuffer{node, Role::kOffsets});
      break;
    case TypeId::kListView:
    case TypeId::kLargeListView:
      out->buffers.push_back(LayoutBuffer{node, Role::kViewOffsets});
      out->buffers.push_back(LayoutBuffer{node, Role::kViewSizes});
      break;
    case TypeId::kFixedSizeList:
    case TypeId::kStruct:
      break;
    default:  // bool, fixed width, dictionary indices
      out->buffers.push_back(LayoutBuffer{node, Role::kValues});
      return Status::OK();
  }
  for (const FieldPtr& child : type.fields()) {
    QUIVER_RETURN_NOT_OK(
        AddToLayout(*child->type(), &child->name(), node, depth + 1, out));
  }
  return Status::OK();
}

bool MulOk(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// The fewest bytes buffer `b` must have, or -1 if it cannot be known without
// reading memory (the data of binary arrays, which its offsets bound).
Result<int64_t> NeededBytes(const Layout& layout, const BatchMetadata& md, size_t b) {
  const LayoutBuffer& slot = layout.buffers[b];
  const ipc::FieldNode& node = md.nodes[slot.node];
  const DataType& type = *layout.nodes[slot.node].type;
  const int64_t n = node.length;
  int64_t needed = 0;
  switch (slot.role) {
    case Role::kValidity:
      return node.null_count == 0 ? 0 : bit_util::BytesForBits(n);
    case Role::kData:
      return -1;
    case Role::kTypeIds:
      return n;
    case Role::kUnionOffsets:
      if (!MulOk(n, 4, &needed)) {
        return Status::Invalid(layout.Describe(slot.node), ": length ", n,
                               " overflows the offsets size");
      }
      return needed;
    case Role::kViewOffsets:
    case Role::kViewSizes: {
      const int64_t width = type.id() == TypeId::kLargeListView ? 8 : 4;
      if (!MulOk(n, width, &needed)) {
        return Status::Invalid(layout.Describe(slot.node), ": length ", n,
                               " overflows the ", RoleName(slot.role), " size");
      }
      return needed;
    }
    case Role::kOffsets: {
      if (n == 0) return 0;
      const int64_t width =
          (type.id() == TypeId::kLargeString || type.id() == TypeId::kLargeBinary ||
           type.id() == TypeId::kLargeList)
              ? 8
              : 4;
      if (n == std::numeric_limits<int64_t>::max() || !MulOk(n + 1, width, &needed)) {
        return Status::Invalid(layout.Describe(slot.node), ": length ", n,
                               " overflows the offsets size");
      }
      return needed;
    }
    case Role::kValues: {
      if (type.id() == TypeId::kBool) return bit_util::BytesForBits(n);
      int64_t width = type.id() == TypeId::kDictionary ? type.index_type()->byte_width()
                                                       : type.byte_width();
      if (width <= 0 && type.id() != TypeId::kFixedSizeBinary) {
        return Status::NotImplemented(layout.Describe(slot.node),
                                      ": no fixed width for the values buffer");
      }
      if (!MulOk(n, width, &needed)) {
        return Status::Invalid(layout.Describe(slot.node), ": length ", n, " x ", width,
                               " bytes overflows");
      }
      return needed;
    }
  }
  return 0;
}

}  // namespace

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

const char* RoleName(Role r) {
  switch (r) {
    case Role::kValidity:
      return "validity";
    case Role::kValues:
      return "values";
    case Role::kOffsets:
      return "offsets";
    case Role::kData:
      return "data";
    case Role::kTypeIds:
      return "type ids";
    case Role::kUnionOffsets:
      return "union offsets";
    case Role::kViewOffsets:
      return "view offsets";
    case Role::kViewSizes:
      return "view sizes";
  }
  return "?";
}

Result<Layout> BatchLayout(const Schema& schema) {
  Layout layout;
  layout.prefix = "column";
  for (const FieldPtr& f : schema.fields()) {
    QUIVER_RETURN_NOT_OK(AddToLayout(*f->type(), &f->name(), -1, 0, &layout));
  }
  return layout;
}

// The names along a dictionary field's path ("c3.item"); below a
// dictionary-encoded field, indices refer to its value type's children.
std::string DictionaryFieldName(const Schema& schema, const std::vector<int>& path) {
  std::string name;
  const DataType* cur = nullptr;
  for (size_t k = 0; k < path.size(); ++k) {
    const Field* f = nullptr;
    if (k == 0) {
      if (path[0] < 0 || path[0] >= schema.num_fields()) break;
      f = schema.field(path[0]).get();
    } else {
      if (cur->id() == TypeId::kDictionary) cur = cur->value_type().get();
      if (path[k] < 0 || path[k] >= cur->num_fields()) break;
      f = cur->field(path[k]).get();
    }
    name += (k == 0 ? "" : ".") + f->name();
    cur = f->type().get();
  }
  return name;
}

// The layout of a dictionary's values (a one-column batch of the value type).
Result<Layout> DictionaryLayout(const Schema& schema, const ipc::DictionaryField& field) {
  static const std::string kValuesName = "<values>";
  Layout layout;
  layout.prefix = "dictionary " + std::to_string(field.id) + " of '" +
                  DictionaryFieldName(schema, field.path) + "',";
  QUIVER_RETURN_NOT_OK(
      AddToLayout(*field.type->value_type(), &kValuesName, -1, 0, &layout));
  return layout;
}

// The checks on a batch message that need no memory: counts, node lengths
// against their parents and the batch, buffer lengths, alignment, overflow.
Status CheckBatch(const Layout& layout, const BatchMetadata& md, const char* what) {
  if (md.compression != ipc::Compression::kUncompressed) {
    return Status::Invalid(what, " message has a compressed body (",
                           ipc::CompressionName(md.compression),
                           "); descriptors reference buffers as they are in memory");
  }
  if (md.body_length != 0) {
    return Status::Invalid(what, " message states a body of ", md.body_length,
                           " bytes; a descriptor's body is dissociated (0)");
  }
  if (md.nodes.size() != layout.nodes.size()) {
    return Status::Invalid(what, " message has ", md.nodes.size(),
                           " field nodes, the schema needs ", layout.nodes.size());
  }
  if (md.buffers.size() != layout.buffers.size()) {
    return Status::Invalid(what, " message has ", md.buffers.size(),
                           " buffer entries, the schema needs ", layout.buffers.size());
  }
  for (size_t i = 0; i < layout.nodes.size(); ++i) {
    const LayoutNode& ln = layout.nodes[i];
    const int64_t len = md.nodes[i].length;
    if (ln.parent < 0) {
      if (len != md.length) {
        return Status::Invalid(layout.Describe(static_cast<int>(i)), " has ", len,
                               " rows, the ", what, " message states ", md.length);
      }
      continue;
    }
    const DataType& parent = *layout.nodes[ln.parent].type;
    const int64_t parent_len = md.nodes[ln.parent].length;
    int64_t needed = 0;
    if (parent.id() == TypeId::kStruct || parent.id() == TypeId::kSparseUnion) {
      needed = parent_len;
    } else if (parent.id() == TypeId::kFixedSizeList) {
      if (!MulOk(parent_len, parent.list_size(), &needed)) {
        return Status::Invalid(layout.Describe(ln.parent), ": length ", parent_len,
                               " x list size ", parent.list_size(), " overflows");
      }
    }
    if (len < needed) {
      return Status::Invalid(layout.Describe(static_cast<int>(i)), " has ", len,
                             " values, its parent needs ", needed);
    }
  }
  for (size_t b = 0; b < md.buffers.size(); ++b) {
    const BufferSpec& spec = md.buffers[b];
    const LayoutBuffer& slot = layout.buffers[b];
    QUIVER_ASSIGN_OR_RAISE(int64_t needed, NeededBytes(layout, md, b));
    const uint64_t address = static_cast<uint64_t>(spec.offset);
    if (spec.length < needed) {
      return Status::Invalid(layout.Describe(slot.node), ": buffer ", b, " (",
                             RoleName(slot.role), ") at ", Hex(address), " has ",
                             spec.length, " bytes, needs ", needed, " for length ",
                             md.nodes[slot.node].length);
    }
    if (spec.length == 0) continue;
    if (address == 0 || address % 8 != 0 ||
        static_cast<uint64_t>(spec.length) >
            std::numeric_limits<uint64_t>::max() - address) {
      return Status::Invalid(layout.Describe(slot.node), ": buffer ", b, " (",
                             RoleName(slot.role), ") at ", Hex(address), ", length ",
                             spec.length,
                             address == 0       ? " is at address 0"
                             : address % 8 != 0 ? " is not 8-byte aligned"
                                                : " wraps around the address space");
    }
  }
  return Status::OK();
}

}  // namespace quiver::control::descriptor_layout
