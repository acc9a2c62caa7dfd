// The big-endian twin of a little-endian IPC stream or file, for the tests of
// big-endian reading and the fuzz seeds.
//
// The twin is made at the byte level, independently of the reader's own
// byte swapping: the Schema message (and a file's footer schema) says
// `endianness: Big`, and every body buffer is byte-swapped element by element
// as the schema's type lays it out, walking the flatbuffer's Buffer entries.
// Batch metadata of uncompressed bodies is copied unchanged (swapping keeps
// every size).
#pragma once

#include <memory>

#include "quiver/columnar/ipc.h"

namespace quiver::ipc::test {

// `little`: a V5 stream or file as Quiver writes it. Compressed bodies are
// decompressed, swapped and compressed again (new buffer entries).
// The twin is framed with `alignment` (8 is what the writer's minimum gives).
Result<std::shared_ptr<Buffer>> BigEndianTwin(const std::shared_ptr<Buffer>& little,
                                              IpcFormat format, int32_t alignment = 8);

}  // namespace quiver::ipc::test
