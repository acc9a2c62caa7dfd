// Frames: the unit of Quiver's control protocol (docs/protocol.md).
//
// Every message on a control connection, in both directions, is one frame:
//
//   offset  size  field
//   0       4     length   bytes after this field (12 + payload), little-endian
//   4       1     kind     1 request, 2 reply, 3 error
//   5       1     method   the called method (echoed in the reply)
//   6       2     flags    0 (reserved; a receiver refuses anything else)
//   8       8     call_id  chosen by the caller, echoed in the reply
//   16      ...   payload  request/reply: a protobuf message of
//   proto/quiver/control.proto;
//                          error: one byte StatusCode, then the message text
//
// A connection carries many calls at once: replies may come in any order and
// are matched to their calls by call_id. FrameDecoder is the one decoder of
// untrusted frame bytes (fuzzed by fuzz/control_fuzz.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "quiver/util/result.h"

namespace quiver::control::rpc {

constexpr size_t kFrameHeaderBytes = 16;
// Largest payload a frame may carry: a descriptor (16 MiB at most) with room
// for the request around it; bulk data travels in 1 MiB pieces.
constexpr size_t kMaxFramePayload = (16u << 20) + (1u << 20);

// How much room a connection's reader asks its FrameDecoder for at a time:
// one read() of that much takes most frames whole.
constexpr size_t kFrameReadChunk = 256u << 10;

enum class FrameKind : uint8_t { kRequest = 1, kReply = 2, kError = 3 };

struct FrameHeader {
  FrameKind kind = FrameKind::kRequest;
  uint8_t method = 0;
  uint64_t call_id = 0;
  uint32_t payload_size = 0;
};

// Appends the header of a frame whose payload has `payload_size` bytes.
void AppendFrameHeader(FrameKind kind, uint8_t method, uint64_t call_id,
                       size_t payload_size, std::string* out);
// Appends one whole frame (header and payload) to `out`.
void AppendFrame(FrameKind kind, uint8_t method, uint64_t call_id,
                 std::string_view payload, std::string* out);

// The payload of an error frame for `status` (not OK).
std::string EncodeError(const Status& status);
// The Status an error frame's payload stands for; a malformed payload is
// itself reported as an error of the peer, never trusted.
Status DecodeError(std::string_view payload);

// Splits a byte stream into frames. Feed it what the socket gave; Next()
// returns complete frames one at a time. A malformed header (length below 12
// or above the limit, unknown kind, non-zero flags) is an error after which
// the connection must be closed: the stream can no longer be trusted.
class FrameDecoder {
 public:
  explicit FrameDecoder(size_t max_payload = kMaxFramePayload)
      : max_payload_(max_payload) {}

  // Where to read into and how much room there is (grows the buffer).
  uint8_t* WritePointer(size_t min_room);
  size_t WriteRoom() const { return buf_.size() - end_; }
  void Commit(size_t n) { end_ += n; }
  // Copies `bytes` in (tests and the fuzzer).
  void Append(std::string_view bytes);

  // True and fills *header/*payload when a whole frame is buffered; the
  // payload view stays valid until the next call to any method. False when
  // more bytes are needed. An error for a malformed frame.
  Result<bool> Next(FrameHeader* header, std::string_view* payload);

  size_t buffered() const { return end_ - begin_; }
  // Frames whose payload exceeds this are malformed from now on.
  void set_max_payload(size_t max_payload) { max_payload_ = max_payload; }
  // Releases the buffer if nothing is buffered and it grew past 256 KiB (a
  // big frame's memory is not kept for the connection's life). Invalidates
  // the payload view of the last Next().
  void Trim();

 private:
  size_t max_payload_;
  std::string buf_;
  size_t begin_ = 0, end_ = 0;
};

}  // namespace quiver::control::rpc
