// Framing: writing encapsulated messages and reading them back from memory
// or from an input stream.

#include "quiver/columnar/ipc/message_io.h"

#include <cstring>
#include <limits>
#include <string>

namespace quiver::ipc {

namespace {

alignas(64) const uint8_t kZeros[64] = {};

Status WritePadding(io::OutputStream* sink, int64_t n) {
  while (n > 0) {
    int64_t chunk = std::min<int64_t>(n, sizeof(kZeros));
    QUIVER_RETURN_NOT_OK(sink->Write(kZeros, chunk));
    n -= chunk;
  }
  return Status::OK();
}

uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

std::string Where(int64_t index, int64_t offset) {
  return "message " + std::to_string(index) + " at offset " + std::to_string(offset);
}

// The decoded prefix of an encapsulated message.
struct Prefix {
  int64_t size = 0;             // 4 (legacy) or 8 bytes
  int64_t metadata_length = 0;  // 0 means end of stream
};

// Decodes a prefix from the first bytes available (`avail` of them).
Result<Prefix> DecodePrefix(const uint8_t* p, int64_t avail) {
  if (avail < 4) {
    return Status::Invalid("truncated message prefix: ", avail, " of 4 bytes");
  }
  Prefix out;
  uint32_t first = LoadU32(p);
  if (first == kContinuationMarker) {
    if (avail < 8) {
      return Status::Invalid("truncated message prefix: ", avail, " of 8 bytes");
    }
    out.size = 8;
    out.metadata_length = static_cast<int32_t>(LoadU32(p + 4));
  } else {
    out.size = 4;  // pre-1.0 framing without the marker
    out.metadata_length = static_cast<int32_t>(first);
  }
  if (out.metadata_length < 0) {
    return Status::Invalid("negative metadata length ", out.metadata_length);
  }
  return out;
}

class BufferMessageReader final : public MessageReader {
 public:
  BufferMessageReader(std::shared_ptr<Buffer> data, const IpcReadOptions& options,
                      int64_t start)
      : data_(std::move(data)), options_(options) {
    position_ = start;
  }

  Result<std::shared_ptr<Message>> Next() override {
    if (saw_eos_ || position_ >= data_->size()) return std::shared_ptr<Message>();
    auto m = ReadOne();
    if (!m.ok()) return m.status().WithContext(Where(messages_read_, position_));
    return m;
  }

 private:
  Result<std::shared_ptr<Message>> ReadOne() {
    const int64_t avail = data_->size() - position_;
    QUIVER_ASSIGN_OR_RAISE(Prefix prefix, DecodePrefix(data_->data() + position_, avail));
    if (prefix.metadata_length == 0) {
      saw_eos_ = true;
      position_ += prefix.size;
      return std::shared_ptr<Message>();
    }
    if (prefix.metadata_length > avail - prefix.size) {
      return Status::Invalid("metadata of ", prefix.metadata_length,
                             " bytes is truncated: only ", avail - prefix.size,
                             " bytes left");
    }
    QUIVER_ASSIGN_OR_RAISE(
        auto metadata,
        Buffer::SliceSafe(data_, position_ + prefix.size, prefix.metadata_length));
    QUIVER_ASSIGN_OR_RAISE(auto message,
                           Message::Open(std::move(metadata), nullptr, options_));
    const int64_t body_start = position_ + prefix.size + prefix.metadata_length;
    if (message->body_length() > data_->size() - body_start) {
      return Status::Invalid(MessageTypeName(message->type()), " body of ",
                             message->body_length(), " bytes is truncated: only ",
                             data_->size() - body_start, " bytes left");
    }
    QUIVER_ASSIGN_OR_RAISE(auto body,
                           Buffer::SliceSafe(data_, body_start, message->body_length()));
    QUIVER_RETURN_NOT_OK(message->SetBody(std::move(body)));
    position_ = body_start + message->body_length();
    ++messages_read_;
    return message;
  }

  std::shared_ptr<Buffer> data_;
  IpcReadOptions options_;
};

class StreamMessageReader final : public MessageReader {
 public:
  StreamMessageReader(io::InputStream* stream, const IpcReadOptions& options)
      : stream_(stream), options_(options) {}

  Result<std::shared_ptr<Message>> Next() override {
    if (saw_eos_ || done_) return std::shared_ptr<Message>();
    const int64_t start = position_;
    auto m = ReadOne();
    if (!m.ok()) return m.status().WithContext(Where(messages_read_, start));
    return m;
  }

 private:
  Result<std::shared_ptr<Message>> ReadOne() {
    uint8_t head[8];
    QUIVER_ASSIGN_OR_RAISE(int64_t n, stream_->Read(4, head));
    position_ += n;
    if (n == 0) {
      done_ = true;  // the input ended between two messages
      return std::shared_ptr<Message>();
    }
    if (n == 4 && LoadU32(head) == kContinuationMarker) {
      QUIVER_ASSIGN_OR_RAISE(int64_t m, stream_->Read(4, head + 4));
      position_ += m;
      n += m;
    }
    QUIVER_ASSIGN_OR_RAISE(Prefix prefix, DecodePrefix(head, n));
    if (prefix.metadata_length == 0) {
      saw_eos_ = true;
      return std::shared_ptr<Message>();
    }
    if (prefix.metadata_length > options_.max_metadata_size) {
      return Status::Invalid("metadata of ", prefix.metadata_length,
                             " bytes exceeds the limit of ", options_.max_metadata_size);
    }
    QUIVER_ASSIGN_OR_RAISE(auto metadata,
                           ReadExactly(prefix.metadata_length, "metadata"));
    QUIVER_ASSIGN_OR_RAISE(auto message,
                           Message::Open(std::move(metadata), nullptr, options_));
    QUIVER_ASSIGN_OR_RAISE(auto body, ReadExactly(message->body_length(), "body"));
    QUIVER_RETURN_NOT_OK(message->SetBody(std::move(body)));
    ++messages_read_;
    return message;
  }

  Result<std::shared_ptr<Buffer>> ReadExactly(int64_t n, const char* what) {
    QUIVER_ASSIGN_OR_RAISE(auto buffer, stream_->Read(n));
    position_ += buffer->size();
    if (buffer->size() != n) {
      return Status::Invalid(what, " of ", n,
                             " bytes is truncated: the input ended after ",
                             buffer->size(), " bytes");
    }
    return buffer;
  }

  io::InputStream* stream_;
  IpcReadOptions options_;
  bool done_ = false;
};

}  // namespace

// ---------------------------------------------------------------------------
// Writing

Result<int64_t> WriteMessageMetadata(const Buffer& flatbuffer, io::OutputStream* sink,
                                     const IpcWriteOptions& options) {
  const int64_t align = options.alignment;
  if (align < 8 || (align & (align - 1)) != 0) {
    return Status::Invalid("IPC alignment must be a power of two >= 8, got ", align);
  }
  QUIVER_ASSIGN_OR_RAISE(int64_t start, sink->Tell());
  const int64_t prefix = options.write_legacy_format ? 4 : 8;
  const int64_t end = start + prefix + flatbuffer.size();
  const int64_t padding = (align - end % align) % align;
  const int64_t length = flatbuffer.size() + padding;
  if (flatbuffer.size() == 0 || length > std::numeric_limits<int32_t>::max()) {
    return Status::Invalid("message metadata of ", flatbuffer.size(),
                           " bytes cannot be framed");
  }
  uint8_t head[8];
  const uint32_t marker = kContinuationMarker;
  const int32_t len32 = static_cast<int32_t>(length);
  std::memcpy(head, &marker, 4);
  std::memcpy(head + 4, &len32, 4);
  QUIVER_RETURN_NOT_OK(
      sink->Write(options.write_legacy_format ? head + 4 : head, prefix));
  QUIVER_RETURN_NOT_OK(sink->Write(flatbuffer));
  QUIVER_RETURN_NOT_OK(WritePadding(sink, padding));
  return prefix + length;
}

Status WriteBody(const BatchPayload& payload, io::OutputStream* sink) {
  const BatchMetadata& md = payload.metadata;
  if (md.buffers.size() != payload.buffers.size()) {
    return Status::Invalid("payload has ", payload.buffers.size(), " buffers but ",
                           md.buffers.size(), " buffer entries");
  }
  int64_t pos = 0;
  for (size_t i = 0; i < md.buffers.size(); ++i) {
    const BufferSpec& spec = md.buffers[i];
    const std::shared_ptr<Buffer>& b = payload.buffers[i];
    const int64_t size = b ? b->size() : 0;
    if (spec.offset < pos || spec.length != size) {
      return Status::Invalid("payload buffer ", i, " of ", size,
                             " bytes does not match its entry [offset ", spec.offset,
                             ", length ", spec.length, "]");
    }
    QUIVER_RETURN_NOT_OK(WritePadding(sink, spec.offset - pos));
    if (size > 0) QUIVER_RETURN_NOT_OK(sink->Write(b->data(), size));
    pos = spec.offset + size;
  }
  if (pos > md.body_length) {
    return Status::Invalid("payload buffers end at ", pos, ", past the body length ",
                           md.body_length);
  }
  return WritePadding(sink, md.body_length - pos);
}

Status WriteEndOfStream(io::OutputStream* sink, const IpcWriteOptions& options) {
  const uint8_t eos[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0};
  if (options.write_legacy_format) return sink->Write(eos + 4, 4);
  return sink->Write(eos, 8);
}

// ---------------------------------------------------------------------------
// Reading

std::unique_ptr<MessageReader> MessageReader::FromBuffer(std::shared_ptr<Buffer> data,
                                                         const IpcReadOptions& options,
                                                         int64_t start) {
  return std::make_unique<BufferMessageReader>(std::move(data), options, start);
}

std::unique_ptr<MessageReader> MessageReader::FromStream(io::InputStream* stream,
                                                         const IpcReadOptions& options) {
  return std::make_unique<StreamMessageReader>(stream, options);
}

Result<std::shared_ptr<Message>> ReadMessageAt(const std::shared_ptr<Buffer>& file,
                                               int64_t offset, int64_t metadata_length,
                                               int64_t body_length,
                                               const IpcReadOptions& options) {
  if (offset < 0 || metadata_length <= 0 || body_length < 0 || offset > file->size() ||
      metadata_length > file->size() - offset ||
      body_length > file->size() - offset - metadata_length) {
    return Status::Invalid("block [offset ", offset, ", metadata ", metadata_length,
                           ", body ", body_length, "] lies outside the file of ",
                           file->size(), " bytes");
  }
  QUIVER_ASSIGN_OR_RAISE(Prefix prefix,
                         DecodePrefix(file->data() + offset, metadata_length));
  if (prefix.metadata_length == 0) {
    return Status::Invalid("block at offset ", offset, " holds an end-of-stream marker");
  }
  if (prefix.metadata_length > metadata_length - prefix.size) {
    return Status::Invalid("message metadata of ", prefix.metadata_length,
                           " bytes overruns the block's metadata length ",
                           metadata_length);
  }
  QUIVER_ASSIGN_OR_RAISE(auto metadata, Buffer::SliceSafe(file, offset + prefix.size,
                                                          prefix.metadata_length));
  QUIVER_ASSIGN_OR_RAISE(auto message,
                         Message::Open(std::move(metadata), nullptr, options));
  if (message->body_length() != body_length) {
    return Status::Invalid("message states a body of ", message->body_length(),
                           " bytes, its footer block ", body_length);
  }
  QUIVER_ASSIGN_OR_RAISE(auto body,
                         Buffer::SliceSafe(file, offset + metadata_length, body_length));
  QUIVER_RETURN_NOT_OK(message->SetBody(std::move(body)));
  return message;
}

}  // namespace quiver::ipc
