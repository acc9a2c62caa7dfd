// The offsets buffer of an empty variable-size array that has none: the
// writer sends it for such arrays, the reader supplies it when a message
// leaves it out (internal to the IPC implementation).
#pragma once

#include <cstdint>
#include <memory>

#include "quiver/columnar/buffer.h"

namespace quiver::ipc::internal {

// One zero offset (8 bytes, so either offset width can slice it).
inline const std::shared_ptr<Buffer>& ZeroOffsets() {
  alignas(8) static const uint8_t kZeros[8] = {};
  static const std::shared_ptr<Buffer> buffer = Buffer::Wrap(kZeros, 8);
  return buffer;
}

}  // namespace quiver::ipc::internal
