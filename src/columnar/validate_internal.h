// Validation of ArrayData, for Array::Validate/ValidateFull and for the
// importers of foreign data (C Data Interface, IPC), which validate the
// ArrayData they build before handing it out.
//
// ValidateArrayData checks the structure: types well-formed, lengths,
// offsets, null counts, buffer slots and sizes, child counts, types and
// lengths, the dictionary; it reads O(1) values per array (the first and
// last offsets). ValidateArrayDataFull also checks every value that could
// make a reader go wrong or that the Arrow format forbids: all offsets,
// UTF-8, dictionary indices, map keys, decimal precision, time-of-day and
// date64 ranges, and the null count against the bitmap. Neither reads
// outside the buffers, whatever the input. Every error is Status::Invalid
// naming the type and the rule, prefixed with the path to the nested array
// ("struct field 1 'b': string: ...").
#pragma once

#include <string>

#include "quiver/columnar/array_data.h"
#include "quiver/util/status.h"

namespace quiver::internal {

Status ValidateArrayData(const ArrayData& data);
Status ValidateArrayDataFull(const ArrayData& data);

// Helpers shared by the two validation files.

// Short name of a type for messages: the full text for flat types
// ("timestamp[ms, tz=UTC]"), just the name for nested and dictionary types,
// whose full text can be long (and whose children may be malformed).
std::string TypeLabel(const DataType& type);

// How a child array of `parent` is named in messages ("list values",
// "struct field 1 'b'", "map entries").
std::string ChildLabel(const DataType& parent, int i);

template <typename... Args>
Status InvalidArray(const DataType& type, Args&&... args) {
  return Status::Invalid(TypeLabel(type), ": ", std::forward<Args>(args)...);
}

}  // namespace quiver::internal
