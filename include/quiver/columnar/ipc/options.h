// Options of the Arrow IPC writer and reader (namespace quiver::ipc).
//
// Plain value structs; copy them freely. Start from Defaults() and change the
// fields you need.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "quiver/columnar/memory_pool.h"
#include "quiver/util/result.h"

namespace quiver::ipc {

// Buffer compression of message bodies (Arrow's BodyCompression).
enum class Compression : int8_t {
  kUncompressed,
  kLz4Frame,  // one LZ4 frame per buffer
  kZstd,      // one Zstandard frame per buffer
};

// "uncompressed", "lz4_frame", "zstd".
const char* CompressionName(Compression compression);
// Accepts the names above and "none", "lz4", "zstd" (any case).
Result<Compression> CompressionFromName(std::string_view name);

// The two Arrow IPC containers.
enum class IpcFormat : int8_t {
  kStream,  // a sequence of messages ending with an end-of-stream marker
  kFile,    // "ARROW1", a stream, a footer indexing its batches, "ARROW1"
};
const char* IpcFormatName(IpcFormat format);  // "stream", "file"

// The metadata version of a message. Quiver writes V5 and reads V4 and V5.
enum class MetadataVersion : int16_t { kV4 = 3, kV5 = 4 };

// Sentinel: let the codec pick its default level.
constexpr int kDefaultCompressionLevel = std::numeric_limits<int>::min();

struct IpcWriteOptions {
  // Memory for the few copies the writer makes (re-based offsets, re-aligned
  // bitmaps of sliced arrays, compressed buffers). Null means the default pool.
  MemoryPool* pool = nullptr;
  Compression compression = Compression::kUncompressed;
  // Codec level (LZ4: acceleration is not exposed, level = compression level
  // of LZ4 HC when >= 3; ZSTD: 1..22, negative for fast modes).
  int compression_level = kDefaultCompressionLevel;
  // When a batch's dictionary extends the previously written one (same values
  // first), write only the new values as a delta batch. When false, a changed
  // dictionary is always sent in full (a replacement, which the file format
  // forbids).
  bool emit_dictionary_deltas = true;
  // Deepest nesting of types accepted (a guard against runaway recursion).
  int max_nesting_depth = 64;
  // Each body buffer starts at a multiple of this many bytes from the start
  // of the stream, and metadata is padded so that bodies start aligned too.
  // Must be a power of two and at least 8 (the format's minimum); 64 matches
  // the buffer alignment of Quiver's pools and of SIMD loads.
  int32_t alignment = 64;
  // Writes the pre-1.0 framing (4-byte length, no continuation marker, a
  // 4-byte end-of-stream marker). Only for talking to very old readers.
  bool write_legacy_format = false;

  static IpcWriteOptions Defaults() { return IpcWriteOptions(); }
};

struct IpcReadOptions {
  // Memory for the copies the reader must make: decompressed buffers,
  // concatenated dictionary deltas, buffers whose address is not 8-byte
  // aligned in the input. Null means the default pool.
  MemoryPool* pool = nullptr;
  // Also run ValidateFull() (O(n): offsets, dictionary indices, UTF-8) on
  // every batch and dictionary; Validate() (O(1) per buffer) always runs.
  bool validate_full = false;
  // Deepest nesting of types accepted.
  int max_nesting_depth = 64;
  // Largest flatbuffer metadata of one message accepted, in bytes.
  int64_t max_metadata_size = int64_t{256} << 20;
  // Largest total uncompressed size the compressed buffers of one message may
  // claim, in bytes. A claim above it is rejected before any allocation, so a
  // few bytes of input cannot make the reader allocate gigabytes.
  int64_t max_decompressed_size = int64_t{16} << 30;
  // Limits handed to the flatbuffers verifier: nesting of tables/vectors and
  // number of tables in one metadata flatbuffer.
  int32_t max_flatbuffer_depth = 128;
  int32_t max_flatbuffer_tables = 1000000;
  // Data whose Schema message says `endianness: Big`: when true, every
  // buffer with a byte order (integers, floats, decimals, offsets, sizes,
  // views, dictionary indices, ...) is byte-swapped into new memory from
  // `pool` and the schema read says little-endian, so the batches are like
  // any others. When false, the buffers keep the big-endian bytes (zero-copy)
  // and the schema says Endianness::kBig: such batches are for passing
  // through (a writer writes them back out as big-endian); validation,
  // equality and printing do not interpret their values. The reader checks
  // them either way, on a byte-swapped copy. Little-endian data is never
  // touched.
  bool ensure_native_endian = true;

  static IpcReadOptions Defaults() { return IpcReadOptions(); }
};

}  // namespace quiver::ipc
