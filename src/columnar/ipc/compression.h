// Per-buffer body compression of the Arrow IPC format (internal).
//
// A compressed body buffer is a little-endian int64 holding the uncompressed
// length, followed by one LZ4 frame or one Zstandard frame; the length -1
// means the bytes that follow are stored as they are. Empty buffers stay
// empty (no length prefix).
#pragma once

#include <cstdint>
#include <memory>

#include "quiver/columnar/buffer.h"
#include "quiver/columnar/ipc/options.h"

namespace quiver::ipc::internal {

// The framed form of `size` bytes at `data`, in a new buffer from `pool`. If
// compressing does not make the buffer smaller, it is stored uncompressed
// (length -1).
Result<std::shared_ptr<Buffer>> CompressBuffer(Compression codec, int level,
                                               const uint8_t* data, int64_t size,
                                               MemoryPool* pool);

// The uncompressed bytes of a framed buffer: a zero-copy slice for length -1,
// otherwise a new buffer from `pool` of exactly the stated length, which must
// not exceed `max_size`; *allocated is set to the bytes allocated (0 for a
// slice). Errors name what is wrong.
Result<std::shared_ptr<Buffer>> DecompressBuffer(Compression codec,
                                                 const std::shared_ptr<Buffer>& framed,
                                                 int64_t max_size, MemoryPool* pool,
                                                 int64_t* allocated);

}  // namespace quiver::ipc::internal
