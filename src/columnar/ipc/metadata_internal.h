// Conversions between Quiver's schema objects and the Arrow flatbuffer
// metadata (internal to the IPC implementation).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "arrow_fbs/File_generated.h"
#include "quiver/columnar/ipc/message.h"

namespace quiver::ipc::internal {

namespace fb = ::quiver::flatbuf;
using FlatBufferBuilder = ::flatbuffers::FlatBufferBuilder;
using KeyValueVector = ::flatbuffers::Vector<::flatbuffers::Offset<fb::KeyValue>>;
using KeyValueVectorOffset = ::flatbuffers::Offset<KeyValueVector>;

// The Schema table of `schema` with dictionary ids from `dictionaries`.
Result<::flatbuffers::Offset<fb::Schema>> SchemaToFlatbuffer(
    FlatBufferBuilder& fbb, const Schema& schema, const DictionaryFieldMap& dictionaries,
    int max_depth = 64);

// Decodes a verified Schema table.
Result<DecodedSchema> SchemaFromFlatbuffer(const fb::Schema* schema,
                                           const IpcReadOptions& options);

// Custom metadata in both directions; a null or empty vector means none.
KeyValueVectorOffset MetadataToFlatbuffer(FlatBufferBuilder& fbb,
                                          const KeyValueMetadata* metadata);
MetadataPtr MetadataFromFlatbuffer(const KeyValueVector* pairs);

// The finished flatbuffer copied into a buffer from `pool`.
Result<std::shared_ptr<Buffer>> FinishToBuffer(FlatBufferBuilder& fbb, MemoryPool* pool);

// Checks a metadata version read from the wire (V4 and V5 are readable).
Result<MetadataVersion> CheckMetadataVersion(fb::MetadataVersion version);

// Verifies a flatbuffer of root type T with the limits of `options`; `what`
// names it in the error ("message metadata", "file footer").
template <typename T>
Status VerifyFlatbuffer(const Buffer& data, const IpcReadOptions& options,
                        const char* what) {
  if (data.size() < 8) {
    return Status::Invalid(what, " of ", data.size(),
                           " bytes is too small for a flatbuffer");
  }
  if (data.size() >= static_cast<int64_t>(FLATBUFFERS_MAX_BUFFER_SIZE)) {
    return Status::Invalid(what, " of ", data.size(), " bytes is too large");
  }
  ::flatbuffers::Verifier::Options opts;
  opts.max_depth =
      static_cast<::flatbuffers::uoffset_t>(std::max(options.max_flatbuffer_depth, 1));
  opts.max_tables =
      static_cast<::flatbuffers::uoffset_t>(std::max(options.max_flatbuffer_tables, 1));
  opts.check_alignment = true;
  ::flatbuffers::Verifier verifier(data.data(), static_cast<size_t>(data.size()), opts);
  if (!verifier.VerifyBuffer<T>(nullptr)) {
    return Status::Invalid(what, " (", data.size(),
                           " bytes) is not a valid flatbuffer: verification failed");
  }
  return Status::OK();
}

// Element i of a vector of structs, copied out. The verifier checks the
// alignment of a vector's length field only, so the 8-byte structs of a
// hostile flatbuffer may sit at 4-byte boundaries: never call their accessors
// in place.
template <typename T>
T LoadStruct(const ::flatbuffers::Vector<const T*>* vector, ::flatbuffers::uoffset_t i) {
  static_assert(std::is_trivially_copyable_v<T>);
  T out;
  std::memcpy(static_cast<void*>(&out),
              vector->Data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return out;
}

// Element i of a vector of scalars, wherever the (untrusted) buffer put it:
// the verifier checks the vector's bounds, not its elements' alignment.
template <typename T>
T LoadScalar(const ::flatbuffers::Vector<T>* vector, ::flatbuffers::uoffset_t i) {
  static_assert(std::is_arithmetic_v<T>);
  T out;
  std::memcpy(&out, vector->Data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return ::flatbuffers::EndianScalar(out);
}

// `data` itself if its address is 8-byte aligned, else an aligned copy from
// `pool` (flatbuffer and typed buffer access need natural alignment).
Result<std::shared_ptr<Buffer>> EnsureAligned(const std::shared_ptr<Buffer>& data,
                                              MemoryPool* pool);

}  // namespace quiver::ipc::internal
