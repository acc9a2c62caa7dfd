// The buffer layout of a descriptor's batches, and the checks on a batch
// message that need no memory (internal to control/descriptor).
//
// A layout lists a type tree's field nodes and buffers in the IPC order
// (depth-first pre-order of field nodes, each node's buffers before its
// children's), with names for error messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quiver/columnar/ipc/message.h"
#include "quiver/columnar/type.h"
#include "quiver/util/result.h"

namespace quiver::control::descriptor_layout {

// The buffer layout of a type tree, in the IPC order (depth-first pre-order
// of field nodes, each node's buffers before its children's).

// kTypeIds: a union's int8 type ids; kUnionOffsets: a dense union's int32
// offsets (one per slot, not length + 1). kViewOffsets / kViewSizes: a list
// view's offsets and sizes (int32 or int64, one per slot).
enum class Role : uint8_t {
  kValidity,
  kValues,
  kOffsets,
  kData,
  kTypeIds,
  kUnionOffsets,
  kViewOffsets,
  kViewSizes
};

const char* RoleName(Role r);

struct LayoutNode {
  const DataType* type;
  const std::string* name;
  int parent;  // -1 for a root
};

struct LayoutBuffer {
  int node;
  Role role;
};

struct Layout {
  std::string prefix;  // "column" or "dictionary 3 of field"
  std::vector<LayoutNode> nodes;
  std::vector<LayoutBuffer> buffers;

  // "a.b.item" for node `i`.
  std::string Path(int i) const {
    std::string path;
    for (; i >= 0; i = nodes[i].parent) {
      path.insert(0, path.empty() ? *nodes[i].name : *nodes[i].name + ".");
    }
    return path;
  }
  std::string Describe(int node) const {
    return prefix + " '" + Path(node) + "' (" + nodes[node].type->ToString() + ")";
  }
};

// Every column of `schema`.
Result<Layout> BatchLayout(const Schema& schema);
// The names along a dictionary field's path ("c3.item").
std::string DictionaryFieldName(const Schema& schema, const std::vector<int>& path);
// The values of one dictionary (a one-column batch of the value type).
Result<Layout> DictionaryLayout(const Schema& schema, const ipc::DictionaryField& field);
// Counts, node lengths against their parents and the batch, buffer lengths,
// alignment, overflow: what can be checked without reading memory.
Status CheckBatch(const Layout& layout, const ipc::BatchMetadata& md, const char* what);

// "0x..." for error messages.
std::string Hex(uint64_t v);

}  // namespace quiver::control::descriptor_layout
