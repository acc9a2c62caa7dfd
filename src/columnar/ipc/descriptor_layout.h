// The buffer layout of a descriptor's batch messages, and the checks on a
// batch message that need no memory (internal to columnar/ipc/descriptor).
//
// A layout lists a type tree's field nodes and buffers in the IPC order
// (depth-first pre-order of field nodes, each node's buffers before its
// children's), with names for error messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quiver/columnar/ipc/message.h"
#include "quiver/columnar/layout.h"
#include "quiver/columnar/type.h"
#include "quiver/util/result.h"

namespace quiver::ipc::descriptor_layout {

// The buffer layout of a type tree, in the IPC order (depth-first pre-order
// of field nodes, each node's buffers before its children's).

struct LayoutNode {
  const DataType* type;
  const std::string* name;
  int parent;  // -1 for a root
};

// One buffer entry: the node it belongs to and what it holds (LayoutOf the
// node's type; a V4 union's validity entry; a view's variadic data buffers,
// named "variadic data").
struct LayoutBuffer {
  int node;
  BufferLayout buffer;
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

// Every column of `schema`, as message `md` lays it out: its metadata
// version (a V4 union has a validity entry) and its variadic buffer counts
// (how many data buffers each view field has in this message).
Result<Layout> BatchLayout(const Schema& schema, const BatchMetadata& md);
// The names along a dictionary field's path ("c3.item").
std::string DictionaryFieldName(const Schema& schema, const std::vector<int>& path);
// The values of one dictionary (a one-column batch of the value type).
Result<Layout> DictionaryLayout(const Schema& schema, const DictionaryField& field,
                                const BatchMetadata& md);
// Counts, node lengths against their parents and the batch, and (unless the
// body is compressed, when only decompression tells) every buffer entry's
// length against what its type and node length need: what can be checked
// without any body.
Status CheckBatch(const Layout& layout, const BatchMetadata& md, const char* what);
// A referenced buffer (type-1 body) of entry `b`: not at address 0, 8-byte
// aligned, not wrapping around the address space.
Status CheckAddress(const Layout& layout, size_t b, uint64_t address, uint64_t length);

}  // namespace quiver::ipc::descriptor_layout
