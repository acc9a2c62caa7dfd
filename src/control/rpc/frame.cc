#include "control/rpc/frame.h"

#include <cstring>

namespace quiver::control::rpc {

namespace {

void PutU32(uint32_t v, char* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void PutU64(uint64_t v, char* p) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint32_t GetU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

void AppendFrameHeader(FrameKind kind, uint8_t method, uint64_t call_id,
                       size_t payload_size, std::string* out) {
  char h[kFrameHeaderBytes];
  PutU32(static_cast<uint32_t>(kFrameHeaderBytes - 4 + payload_size), h);
  h[4] = static_cast<char>(kind);
  h[5] = static_cast<char>(method);
  h[6] = h[7] = 0;
  PutU64(call_id, h + 8);
  out->append(h, sizeof(h));
}

void AppendFrame(FrameKind kind, uint8_t method, uint64_t call_id,
                 std::string_view payload, std::string* out) {
  AppendFrameHeader(kind, method, call_id, payload.size(), out);
  out->append(payload.data(), payload.size());
}

std::string EncodeError(const Status& status) {
  std::string out(1, static_cast<char>(status.code()));
  out += status.message();
  return out;
}

Status DecodeError(std::string_view payload) {
  if (payload.empty()) return Status::IOError("the peer sent an empty error frame");
  const auto code = static_cast<uint8_t>(payload[0]);
  if (code == 0 || code > static_cast<uint8_t>(StatusCode::kObjectLost)) {
    return Status::IOError("the peer sent an error frame with unknown code ",
                           static_cast<int>(code));
  }
  return Status(static_cast<StatusCode>(code), std::string(payload.substr(1)));
}

uint8_t* FrameDecoder::WritePointer(size_t min_room) {
  if (begin_ == end_) begin_ = end_ = 0;
  if (buf_.size() - end_ < min_room) {
    // Move what is buffered to the front before growing.
    if (begin_ > 0) {
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (buf_.size() - end_ < min_room) buf_.resize(end_ + min_room);
  }
  return reinterpret_cast<uint8_t*>(buf_.data()) + end_;
}

void FrameDecoder::Trim() {
  constexpr size_t kKeep = 256u << 10;
  if (begin_ != end_ || buf_.size() <= kKeep) return;
  std::string().swap(buf_);
  begin_ = end_ = 0;
}

void FrameDecoder::Append(std::string_view bytes) {
  std::memcpy(WritePointer(bytes.size()), bytes.data(), bytes.size());
  Commit(bytes.size());
}

Result<bool> FrameDecoder::Next(FrameHeader* header, std::string_view* payload) {
  const size_t have = end_ - begin_;
  if (have < kFrameHeaderBytes) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(buf_.data()) + begin_;
  const uint32_t length = GetU32(p);
  if (length < kFrameHeaderBytes - 4) {
    return Status::IOError("malformed frame: length ", length, " is below the header's ",
                           kFrameHeaderBytes - 4, " bytes");
  }
  const size_t payload_size = length - (kFrameHeaderBytes - 4);
  if (payload_size > max_payload_) {
    return Status::IOError("malformed frame: payload of ", payload_size,
                           " bytes exceeds the limit of ", max_payload_);
  }
  const uint8_t kind = p[4];
  if (kind < 1 || kind > 3) {
    return Status::IOError("malformed frame: unknown kind ", static_cast<int>(kind));
  }
  if (p[6] != 0 || p[7] != 0) {
    return Status::IOError("malformed frame: reserved flags are set");
  }
  if (have < kFrameHeaderBytes + payload_size) return false;
  header->kind = static_cast<FrameKind>(kind);
  header->method = p[5];
  header->call_id = GetU64(p + 8);
  header->payload_size = static_cast<uint32_t>(payload_size);
  *payload = std::string_view(buf_.data() + begin_ + kFrameHeaderBytes, payload_size);
  begin_ += kFrameHeaderBytes + payload_size;
  return true;
}

}  // namespace quiver::control::rpc
