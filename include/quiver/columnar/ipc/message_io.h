// Framing of IPC messages in streams and files (namespace quiver::ipc).
//
// An encapsulated message is: the continuation marker 0xFFFFFFFF, an int32
// metadata length, the Message flatbuffer padded with zeros so that the body
// starts aligned, then the body (Message.bodyLength bytes). The end of a
// stream is the marker followed by a zero length. Before Arrow 1.0 the marker
// was absent (legacy framing: int32 length, flatbuffer, body; end = 4 zero
// bytes); readers accept both. All integers are little-endian.
#pragma once

#include <cstdint>
#include <memory>

#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc/message.h"

namespace quiver::ipc {

constexpr uint32_t kContinuationMarker = 0xFFFFFFFFu;

// Writes the framed metadata `flatbuffer` (from Encode*) to `sink`, padded so
// that the stream position afterwards is a multiple of options.alignment.
// Returns the bytes written: prefix, flatbuffer and padding (the value a file
// footer records as the block's metadata length).
Result<int64_t> WriteMessageMetadata(const Buffer& flatbuffer, io::OutputStream* sink,
                                     const IpcWriteOptions& options);

// Writes a batch body: each payload buffer at its offset, zero padding between
// and after, straight from the buffers' memory (no staging copy).
Status WriteBody(const BatchPayload& payload, io::OutputStream* sink);

// Writes the end-of-stream marker.
Status WriteEndOfStream(io::OutputStream* sink, const IpcWriteOptions& options);

// Reads framed messages one after another. Not thread-safe.
class MessageReader {
 public:
  virtual ~MessageReader() = default;

  // Zero-copy reader over a whole stream held in `data`, starting at byte
  // `start`: metadata and bodies are slices of `data`.
  static std::unique_ptr<MessageReader> FromBuffer(std::shared_ptr<Buffer> data,
                                                   const IpcReadOptions& options = {},
                                                   int64_t start = 0);
  // Reader pulling from `stream` (which must outlive it); bodies are copies.
  static std::unique_ptr<MessageReader> FromStream(io::InputStream* stream,
                                                   const IpcReadOptions& options = {});

  // The next message, or null at the end-of-stream marker or when the input
  // ends exactly between two messages. Truncation, bad lengths and invalid
  // flatbuffers are errors naming the message number and its offset.
  virtual Result<std::shared_ptr<Message>> Next() = 0;
  // Messages returned so far.
  int64_t messages_read() const { return messages_read_; }
  // Input bytes consumed so far.
  int64_t position() const { return position_; }
  // True once the end-of-stream marker was seen.
  bool saw_end_of_stream() const { return saw_eos_; }

 protected:
  int64_t messages_read_ = 0;
  int64_t position_ = 0;
  bool saw_eos_ = false;
};

// Reads the message of a file block: framing at `offset` of `file`, which
// must fit inside `metadata_length` bytes, then a body of `body_length` bytes.
// Zero-copy (slices of `file`).
Result<std::shared_ptr<Message>> ReadMessageAt(const std::shared_ptr<Buffer>& file,
                                               int64_t offset, int64_t metadata_length,
                                               int64_t body_length,
                                               const IpcReadOptions& options = {});

}  // namespace quiver::ipc
