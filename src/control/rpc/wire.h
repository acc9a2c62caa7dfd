// Conversions between the protocol's messages (proto/quiver/control.proto)
// and the catalogue's types, and parsing of received payloads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "control/catalogue/chunk.h"
#include "quiver/control/descriptor.h"
#include "quiver/util/result.h"
#include "quiver_rpc/control.pb.h"

namespace quiver::control {

wire::Chunk ToWire(const ChunkMeta& chunk);
ChunkMeta FromWire(const wire::Chunk& chunk);
std::vector<BufferRange> FromWire(
    const google::protobuf::RepeatedPtrField<wire::Range>& ranges);
void ToWire(const std::vector<BufferRange>& ranges,
            google::protobuf::RepeatedPtrField<wire::Range>* out);

// Parses a received payload as `message`; Invalid names the message when
// the bytes are not one.
template <typename M>
Result<M> ParseMessage(std::string_view payload) {
  M m;
  if (!m.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return Status::Invalid("malformed ", m.GetTypeName(), " (", payload.size(),
                           " bytes)");
  }
  return m;
}

// An UploadPieceRequest whose data stays where it is. Head + data is the
// message's encoding (the head holds the upload and offset fields and the
// data field's tag and length), so either side may use the generated class.
std::string UploadPieceHead(uint64_t upload, uint64_t offset, size_t data_size);
struct UploadPieceView {
  uint64_t upload = 0;
  uint64_t offset = 0;
  std::string_view data;  // into the parsed payload
};
// Parses an UploadPieceRequest without copying the data. What it accepts,
// ParseMessage<wire::UploadPieceRequest> accepts with the same values; it
// refuses the spellings no sender writes (unknown fields, long tags).
Result<UploadPieceView> ParseUploadPiece(std::string_view payload);

}  // namespace quiver::control
