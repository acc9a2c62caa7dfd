// The states of an object in Quiver's object store (docs/store.md).
#pragma once

#include <cstdint>

namespace quiver::store {

// Creating: writable by its creator only, invisible to Get. Sealed:
// immutable, readable everywhere. Spilled: sealed, evicted to its home's
// spill directory; the next Get reads it back into the region.
enum class ObjectState : uint8_t { kCreating = 1, kSealed = 2, kSpilled = 3 };
const char* StateName(ObjectState state);

}  // namespace quiver::store
