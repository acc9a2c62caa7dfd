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

}  // namespace quiver::control
