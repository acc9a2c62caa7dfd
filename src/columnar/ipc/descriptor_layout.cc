#include "columnar/ipc/descriptor_layout.h"

#include <limits>

#include "quiver/columnar/ipc/descriptor.h"
#include "quiver/util/string_builder.h"

namespace quiver::ipc::descriptor_layout {

using util::Hex;

namespace {

// What a message contributes to the layout beyond the schema.
struct MessageShape {
  const BatchMetadata* md;
  size_t views = 0;  // view fields met so far (index into variadic counts)
};

Status AddToLayout(const DataType& type, const std::string* name, int parent, int depth,
                   MessageShape* shape, Layout* out) {
  if (depth > kMaxDescriptorNesting) {
    return Status::Invalid("type nested deeper than ", kMaxDescriptorNesting, " levels");
  }
  const int node = static_cast<int>(out->nodes.size());
  out->nodes.push_back(LayoutNode{&type, name, parent});
  // IPC V5 has no validity buffer for unions; V4 writes an empty one.
  if (IsUnion(type.id()) && shape->md->version < MetadataVersion::kV5) {
    out->buffers.push_back(LayoutBuffer{node, BufferLayout{BufferKind::kValidity}});
  }
  const DataTypeLayout own = LayoutOf(type);
  for (const BufferLayout& b : own.buffers) {
    if (b.kind != BufferKind::kAlwaysNull) out->buffers.push_back(LayoutBuffer{node, b});
  }
  if (own.variadic) {
    const auto& counts = shape->md->variadic_buffer_counts;
    if (shape->views >= counts.size()) {
      return Status::Invalid("message has ", counts.size(),
                             " variadic buffer counts, the schema has more view fields");
    }
    const int64_t n = counts[shape->views++];
    if (n < 0 || n > kMaxDescriptorBuffers) {
      return Status::Invalid("variadic buffer count ", n, " of view field '",
                             name != nullptr ? *name : "", "' is not in 0..",
                             kMaxDescriptorBuffers);
    }
    for (int64_t k = 0; k < n; ++k) {
      out->buffers.push_back(
          LayoutBuffer{node, BufferLayout{BufferKind::kData, "variadic data"}});
    }
  }
  for (const FieldPtr& child : type.fields()) {
    QUIVER_RETURN_NOT_OK(
        AddToLayout(*child->type(), &child->name(), node, depth + 1, shape, out));
  }
  return Status::OK();
}

// Every view field of the message's type tree took one variadic count.
Status AllCountsUsed(const MessageShape& shape) {
  if (shape.views != shape.md->variadic_buffer_counts.size()) {
    return Status::Invalid("message has ", shape.md->variadic_buffer_counts.size(),
                           " variadic buffer counts, the schema has ", shape.views,
                           " view fields");
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
  const int64_t n = node.length;
  if (slot.buffer.kind == BufferKind::kValidity && node.null_count == 0) return 0;
  if (slot.buffer.kind == BufferKind::kData) return -1;
  int64_t needed;
  if (!slot.buffer.MinimumBytes(0, n, &needed)) {
    return Status::Invalid(layout.Describe(slot.node), ": length ", n, " overflows the ",
                           slot.buffer.name, " size");
  }
  return needed;
}

}  // namespace

Result<Layout> BatchLayout(const Schema& schema, const BatchMetadata& md) {
  Layout layout;
  layout.prefix = "column";
  MessageShape shape{&md};
  for (const FieldPtr& f : schema.fields()) {
    QUIVER_RETURN_NOT_OK(AddToLayout(*f->type(), &f->name(), -1, 0, &shape, &layout));
  }
  QUIVER_RETURN_NOT_OK(AllCountsUsed(shape));
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
Result<Layout> DictionaryLayout(const Schema& schema, const DictionaryField& field,
                                const BatchMetadata& md) {
  static const std::string kValuesName = "<values>";
  Layout layout;
  layout.prefix = "dictionary " + std::to_string(field.id) + " of '" +
                  DictionaryFieldName(schema, field.path) + "',";
  MessageShape shape{&md};
  QUIVER_RETURN_NOT_OK(
      AddToLayout(*field.type->value_type(), &kValuesName, -1, 0, &shape, &layout));
  QUIVER_RETURN_NOT_OK(AllCountsUsed(shape));
  return layout;
}

// The checks on a batch message that need no body: counts, node lengths
// against their parents and the batch, buffer entry lengths.
Status CheckBatch(const Layout& layout, const BatchMetadata& md, const char* what) {
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
  // Compressed entries are shorter than what they hold; the decoder checks
  // the decompressed sizes.
  if (md.compression != Compression::kUncompressed) return Status::OK();
  for (size_t b = 0; b < md.buffers.size(); ++b) {
    const BufferSpec& spec = md.buffers[b];
    const LayoutBuffer& slot = layout.buffers[b];
    QUIVER_ASSIGN_OR_RAISE(int64_t needed, NeededBytes(layout, md, b));
    if (spec.length < needed) {
      return Status::Invalid(layout.Describe(slot.node), ": buffer ", b, " (",
                             slot.buffer.name, ") has ", spec.length, " bytes, needs ",
                             needed, " for length ", md.nodes[slot.node].length);
    }
  }
  return Status::OK();
}

Status CheckAddress(const Layout& layout, size_t b, uint64_t address, uint64_t length) {
  if (length == 0) return Status::OK();
  if (address != 0 && address % 8 == 0 &&
      length <= std::numeric_limits<uint64_t>::max() - address) {
    return Status::OK();
  }
  const LayoutBuffer& slot = layout.buffers[b];
  return Status::Invalid(layout.Describe(slot.node), ": buffer ", b, " (",
                         slot.buffer.name, ") at ", Hex(address), ", length ", length,
                         address == 0       ? " is at address 0"
                         : address % 8 != 0 ? " is not 8-byte aligned"
                                            : " wraps around the address space");
}

}  // namespace quiver::ipc::descriptor_layout
