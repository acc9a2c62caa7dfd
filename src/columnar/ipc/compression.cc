#include "columnar/ipc/compression.h"

#include <lz4frame.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>

namespace quiver::ipc::internal {

namespace {

constexpr int64_t kPrefixSize = 8;
// Arrow C++ and most peers use ZSTD level 1 by default: fast, still useful.
constexpr int kDefaultZstdLevel = 1;

// Compresses into dst (capacity `cap`); returns the compressed size.
Result<int64_t> CompressLz4(int level, const uint8_t* src, int64_t size, uint8_t* dst,
                            int64_t cap) {
  LZ4F_preferences_t prefs;
  std::memset(&prefs, 0, sizeof(prefs));
  prefs.frameInfo.contentSize = static_cast<unsigned long long>(size);
  prefs.compressionLevel = level == kDefaultCompressionLevel ? 0 : level;
  size_t n = LZ4F_compressFrame(dst, static_cast<size_t>(cap), src,
                                static_cast<size_t>(size), &prefs);
  if (LZ4F_isError(n)) {
    return Status::IOError("LZ4 frame compression failed: ", LZ4F_getErrorName(n));
  }
  return static_cast<int64_t>(n);
}

Result<int64_t> CompressZstd(int level, const uint8_t* src, int64_t size, uint8_t* dst,
                             int64_t cap) {
  int lvl = level == kDefaultCompressionLevel ? kDefaultZstdLevel : level;
  size_t n =
      ZSTD_compress(dst, static_cast<size_t>(cap), src, static_cast<size_t>(size), lvl);
  if (ZSTD_isError(n)) {
    return Status::IOError("ZSTD compression failed: ", ZSTD_getErrorName(n));
  }
  return static_cast<int64_t>(n);
}

int64_t MaxCompressedSize(Compression codec, int64_t size) {
  if (codec == Compression::kLz4Frame) {
    LZ4F_preferences_t prefs;
    std::memset(&prefs, 0, sizeof(prefs));
    prefs.frameInfo.contentSize = static_cast<unsigned long long>(size);
    return static_cast<int64_t>(
        LZ4F_compressFrameBound(static_cast<size_t>(size), &prefs));
  }
  return static_cast<int64_t>(ZSTD_compressBound(static_cast<size_t>(size)));
}

Status DecompressLz4(const uint8_t* src, int64_t src_size, uint8_t* dst,
                     int64_t dst_size) {
  LZ4F_dctx* ctx = nullptr;
  size_t rc = LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION);
  if (LZ4F_isError(rc)) {
    return Status::OutOfMemory("LZ4 decompression context: ", LZ4F_getErrorName(rc));
  }
  std::unique_ptr<LZ4F_dctx, decltype(&LZ4F_freeDecompressionContext)> guard(
      ctx, &LZ4F_freeDecompressionContext);
  int64_t in = 0;
  int64_t out = 0;
  while (true) {
    size_t in_n = static_cast<size_t>(src_size - in);
    size_t out_n = static_cast<size_t>(dst_size - out);
    size_t hint = LZ4F_decompress(ctx, dst + out, &out_n, src + in, &in_n, nullptr);
    if (LZ4F_isError(hint)) {
      return Status::Invalid("corrupt LZ4 frame: ", LZ4F_getErrorName(hint));
    }
    in += static_cast<int64_t>(in_n);
    out += static_cast<int64_t>(out_n);
    if (hint == 0) break;  // frame complete
    if (in == src_size) {
      return Status::Invalid("LZ4 frame is truncated after ", out, " of ", dst_size,
                             " bytes");
    }
    if (in_n == 0 && out_n == 0) {
      // No progress: the frame wants to write past the stated length.
      return Status::Invalid("LZ4 frame holds more than the stated ", dst_size, " bytes");
    }
  }
  if (out != dst_size) {
    return Status::Invalid("LZ4 frame holds ", out, " bytes, the buffer states ",
                           dst_size);
  }
  if (in != src_size) {
    return Status::Invalid(src_size - in, " trailing bytes after the LZ4 frame");
  }
  return Status::OK();
}

Status DecompressZstd(const uint8_t* src, int64_t src_size, uint8_t* dst,
                      int64_t dst_size) {
  size_t n = ZSTD_decompress(dst, static_cast<size_t>(dst_size), src,
                             static_cast<size_t>(src_size));
  if (ZSTD_isError(n)) {
    return Status::Invalid("corrupt ZSTD frame: ", ZSTD_getErrorName(n));
  }
  if (static_cast<int64_t>(n) != dst_size) {
    return Status::Invalid("ZSTD frame holds ", n, " bytes, the buffer states ",
                           dst_size);
  }
  return Status::OK();
}

}  // namespace

Result<std::shared_ptr<Buffer>> CompressBuffer(Compression codec, int level,
                                               const uint8_t* data, int64_t size,
                                               MemoryPool* pool) {
  if (size == 0) return AllocateBuffer(0, pool);
  int64_t bound = MaxCompressedSize(codec, size);
  QUIVER_ASSIGN_OR_RAISE(auto out, AllocateResizableBuffer(kPrefixSize + bound, pool));
  uint8_t* dst = out->mutable_data();
  Result<int64_t> n = codec == Compression::kLz4Frame
                          ? CompressLz4(level, data, size, dst + kPrefixSize, bound)
                          : CompressZstd(level, data, size, dst + kPrefixSize, bound);
  QUIVER_RETURN_NOT_OK(n.status());
  int64_t prefix = size;
  int64_t total = kPrefixSize + *n;
  if (*n >= size) {
    // Not worth it: store the bytes as they are.
    prefix = -1;
    std::memcpy(dst + kPrefixSize, data, static_cast<size_t>(size));
    total = kPrefixSize + size;
  }
  std::memcpy(dst, &prefix, sizeof(prefix));
  QUIVER_RETURN_NOT_OK(out->Resize(total, /*shrink_to_fit=*/false));
  out->ZeroPadding();
  return std::shared_ptr<Buffer>(std::move(out));
}

Result<std::shared_ptr<Buffer>> DecompressBuffer(Compression codec,
                                                 const std::shared_ptr<Buffer>& framed,
                                                 int64_t max_size, MemoryPool* pool,
                                                 int64_t* allocated) {
  *allocated = 0;
  if (framed->size() == 0) return framed;
  if (framed->size() < kPrefixSize) {
    return Status::Invalid("compressed buffer of ", framed->size(),
                           " bytes is shorter than its 8-byte length prefix");
  }
  int64_t length;
  std::memcpy(&length, framed->data(), sizeof(length));
  if (length == -1)
    return Buffer::SliceSafe(framed, kPrefixSize, framed->size() - kPrefixSize);
  if (length < 0) {
    return Status::Invalid("compressed buffer states a negative length ", length);
  }
  if (length > max_size) {
    return Status::Invalid("compressed buffer states ", length,
                           " uncompressed bytes, above the ",
                           std::max<int64_t>(max_size, 0),
                           " bytes left of the limit per message "
                           "(IpcReadOptions::max_decompressed_size)");
  }
  QUIVER_ASSIGN_OR_RAISE(auto out, AllocateResizableBuffer(length, pool));
  *allocated = length;
  const uint8_t* src = framed->data() + kPrefixSize;
  int64_t src_size = framed->size() - kPrefixSize;
  if (length > 0 || src_size > 0) {
    QUIVER_RETURN_NOT_OK(
        codec == Compression::kLz4Frame
            ? DecompressLz4(src, src_size, out->mutable_data(), length)
            : DecompressZstd(src, src_size, out->mutable_data(), length));
  }
  out->ZeroPadding();
  return std::shared_ptr<Buffer>(std::move(out));
}

}  // namespace quiver::ipc::internal
