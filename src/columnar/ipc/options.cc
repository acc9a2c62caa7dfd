#include "quiver/columnar/ipc/options.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace quiver::ipc {

const char* CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kUncompressed:
      return "uncompressed";
    case Compression::kLz4Frame:
      return "lz4_frame";
    case Compression::kZstd:
      return "zstd";
  }
  return "unknown";
}

Result<Compression> CompressionFromName(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "uncompressed" || lower == "none") return Compression::kUncompressed;
  if (lower == "lz4_frame" || lower == "lz4") return Compression::kLz4Frame;
  if (lower == "zstd") return Compression::kZstd;
  return Status::Invalid("unknown compression '", name, "' (expected none, lz4 or zstd)");
}

const char* IpcFormatName(IpcFormat format) {
  return format == IpcFormat::kFile ? "file" : "stream";
}

}  // namespace quiver::ipc
