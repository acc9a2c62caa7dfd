// Message flatbuffers: encoding schema/batch headers and opening (verifying)
// received ones.

#include <string>
#include <vector>

#include "columnar/ipc/metadata_internal.h"

namespace quiver::ipc {

using internal::fb::CompressionType;
namespace fb = internal::fb;

const char* MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kSchema:
      return "Schema";
    case MessageType::kDictionaryBatch:
      return "DictionaryBatch";
    case MessageType::kRecordBatch:
      return "RecordBatch";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------
// Encoding

namespace {

Result<::flatbuffers::Offset<fb::RecordBatch>> RecordBatchToFlatbuffer(
    internal::FlatBufferBuilder& fbb, const BatchMetadata& md) {
  std::vector<fb::FieldNode> nodes;
  nodes.reserve(md.nodes.size());
  for (const FieldNode& n : md.nodes) nodes.emplace_back(n.length, n.null_count);
  std::vector<fb::Buffer> buffers;
  buffers.reserve(md.buffers.size());
  for (const BufferSpec& b : md.buffers) buffers.emplace_back(b.offset, b.length);
  auto nodes_vec = fbb.CreateVectorOfStructs(nodes);
  auto buffers_vec = fbb.CreateVectorOfStructs(buffers);
  ::flatbuffers::Offset<::flatbuffers::Vector<int64_t>> variadic;
  if (!md.variadic_buffer_counts.empty()) {
    variadic = fbb.CreateVector(md.variadic_buffer_counts);
  }
  ::flatbuffers::Offset<fb::BodyCompression> compression;
  switch (md.compression) {
    case Compression::kUncompressed:
      break;
    case Compression::kLz4Frame:
      compression = fb::CreateBodyCompression(fbb, CompressionType::LZ4_FRAME);
      break;
    case Compression::kZstd:
      compression = fb::CreateBodyCompression(fbb, CompressionType::ZSTD);
      break;
  }
  return fb::CreateRecordBatch(fbb, md.length, nodes_vec, buffers_vec, compression,
                               variadic);
}

Status CheckBatchMetadata(const BatchMetadata& md) {
  if (md.length < 0) return Status::Invalid("batch length ", md.length, " is negative");
  if (md.body_length < 0) {
    return Status::Invalid("body length ", md.body_length, " is negative");
  }
  return Status::OK();
}

}  // namespace

Result<std::shared_ptr<Buffer>> EncodeSchema(const Schema& schema,
                                             const DictionaryFieldMap& dictionaries,
                                             MemoryPool* pool) {
  internal::FlatBufferBuilder fbb(1024);
  QUIVER_ASSIGN_OR_RAISE(auto s, internal::SchemaToFlatbuffer(fbb, schema, dictionaries));
  fbb.Finish(fb::CreateMessage(fbb, fb::MetadataVersion::V5, fb::MessageHeader::Schema,
                               s.Union(), 0));
  return internal::FinishToBuffer(fbb, pool);
}

Result<std::shared_ptr<Buffer>> EncodeRecordBatch(const BatchMetadata& metadata,
                                                  MemoryPool* pool) {
  QUIVER_RETURN_NOT_OK(CheckBatchMetadata(metadata));
  internal::FlatBufferBuilder fbb(256 + 32 * metadata.buffers.size());
  QUIVER_ASSIGN_OR_RAISE(auto rb, RecordBatchToFlatbuffer(fbb, metadata));
  fbb.Finish(fb::CreateMessage(fbb, fb::MetadataVersion::V5,
                               fb::MessageHeader::RecordBatch, rb.Union(),
                               metadata.body_length));
  return internal::FinishToBuffer(fbb, pool);
}

Result<std::shared_ptr<Buffer>> EncodeDictionaryBatch(int64_t id, bool is_delta,
                                                      const BatchMetadata& metadata,
                                                      MemoryPool* pool) {
  QUIVER_RETURN_NOT_OK(CheckBatchMetadata(metadata));
  internal::FlatBufferBuilder fbb(256 + 32 * metadata.buffers.size());
  QUIVER_ASSIGN_OR_RAISE(auto rb, RecordBatchToFlatbuffer(fbb, metadata));
  auto dict = fb::CreateDictionaryBatch(fbb, id, rb, is_delta);
  fbb.Finish(fb::CreateMessage(fbb, fb::MetadataVersion::V5,
                               fb::MessageHeader::DictionaryBatch, dict.Union(),
                               metadata.body_length));
  return internal::FinishToBuffer(fbb, pool);
}

// ---------------------------------------------------------------------------
// Message

namespace {

const fb::Message* Flatbuffer(const Message& m) {
  return static_cast<const fb::Message*>(m.flatbuffer());
}

const fb::RecordBatch* BatchHeader(const fb::Message* m) {
  if (m->header_type() == fb::MessageHeader::RecordBatch)
    return m->header_as_RecordBatch();
  if (m->header_type() == fb::MessageHeader::DictionaryBatch) {
    return m->header_as_DictionaryBatch()->data();
  }
  return nullptr;
}

Result<Compression> CompressionFromFlatbuffer(const fb::BodyCompression* c) {
  if (c == nullptr) return Compression::kUncompressed;
  if (c->method() != fb::BodyCompressionMethod::BUFFER) {
    return Status::NotImplemented("body compression method ",
                                  static_cast<int>(c->method()), " is not supported");
  }
  switch (c->codec()) {
    case CompressionType::LZ4_FRAME:
      return Compression::kLz4Frame;
    case CompressionType::ZSTD:
      return Compression::kZstd;
  }
  return Status::NotImplemented("compression codec ", static_cast<int>(c->codec()),
                                " is not supported");
}

}  // namespace

Result<std::shared_ptr<Message>> Message::Open(std::shared_ptr<Buffer> metadata,
                                               std::shared_ptr<Buffer> body,
                                               const IpcReadOptions& options) {
  if (metadata == nullptr) return Status::Invalid("message without metadata");
  if (metadata->size() > options.max_metadata_size) {
    return Status::Invalid("message metadata of ", metadata->size(),
                           " bytes exceeds the limit of ", options.max_metadata_size,
                           " (IpcReadOptions::max_metadata_size)");
  }
  std::shared_ptr<Message> m(new Message());
  QUIVER_ASSIGN_OR_RAISE(m->metadata_, internal::EnsureAligned(metadata, options.pool));
  QUIVER_RETURN_NOT_OK(internal::VerifyFlatbuffer<fb::Message>(*m->metadata_, options,
                                                               "message metadata"));
  const fb::Message* fbm = fb::GetMessage(m->metadata_->data());
  m->flatbuffer_ = fbm;
  QUIVER_ASSIGN_OR_RAISE(m->version_, internal::CheckMetadataVersion(fbm->version()));
  m->body_length_ = fbm->body_length();
  if (m->body_length_ < 0) {
    return Status::Invalid("message states a negative body length ", m->body_length_);
  }
  switch (fbm->header_type()) {
    case fb::MessageHeader::Schema:
      m->type_ = MessageType::kSchema;
      break;
    case fb::MessageHeader::RecordBatch:
      m->type_ = MessageType::kRecordBatch;
      break;
    case fb::MessageHeader::DictionaryBatch: {
      m->type_ = MessageType::kDictionaryBatch;
      const fb::DictionaryBatch* d = fbm->header_as_DictionaryBatch();
      if (d != nullptr) {
        m->dictionary_id_ = d->id();
        m->is_delta_ = d->is_delta();
        if (d->data() == nullptr) return Status::Invalid("DictionaryBatch without data");
      }
      break;
    }
    case fb::MessageHeader::Tensor:
    case fb::MessageHeader::SparseTensor:
      return Status::NotImplemented("tensor messages are not supported");
    case fb::MessageHeader::NONE:
      return Status::Invalid("message without a header");
    default:
      return Status::NotImplemented("unknown message header type ",
                                    static_cast<int>(fbm->header_type()));
  }
  if (fbm->header() == nullptr) {
    return Status::Invalid(MessageTypeName(m->type_),
                           " message without its header table");
  }
  if (body != nullptr) QUIVER_RETURN_NOT_OK(m->SetBody(std::move(body)));
  return m;
}

Status Message::SetBody(std::shared_ptr<Buffer> body) {
  if (body != nullptr && body->size() < body_length_) {
    return Status::Invalid("message body of ", body->size(),
                           " bytes is shorter than the ", body_length_,
                           " bytes the header states");
  }
  body_ = std::move(body);
  return Status::OK();
}

MetadataPtr Message::custom_metadata() const {
  return internal::MetadataFromFlatbuffer(Flatbuffer(*this)->custom_metadata());
}

Result<BatchMetadata> Message::batch_metadata() const {
  const fb::RecordBatch* rb = BatchHeader(Flatbuffer(*this));
  if (rb == nullptr) {
    return Status::Invalid(MessageTypeName(type_), " message has no batch metadata");
  }
  BatchMetadata md;
  md.length = rb->length();
  md.body_length = body_length_;
  md.version = version_;
  if (md.length < 0) return Status::Invalid("batch length ", md.length, " is negative");
  QUIVER_ASSIGN_OR_RAISE(md.compression, CompressionFromFlatbuffer(rb->compression()));
  if (const auto* counts = rb->variadic_buffer_counts()) {
    for (flatbuffers::uoffset_t i = 0; i < counts->size(); ++i) {
      const int64_t n = internal::LoadScalar(counts, i);
      if (n < 0) {
        return Status::Invalid("variadic buffer count ", i, " is negative (", n, ")");
      }
      md.variadic_buffer_counts.push_back(n);
    }
  }
  if (rb->nodes() != nullptr) {
    md.nodes.reserve(rb->nodes()->size());
    for (flatbuffers::uoffset_t i = 0; i < rb->nodes()->size(); ++i) {
      const fb::FieldNode n = internal::LoadStruct(rb->nodes(), i);
      // -1 means "unknown" (Arrow JS writes it for sliced null columns); the
      // count is then taken from the validity bitmap.
      if (n.length() < 0 || n.null_count() < -1 || n.null_count() > n.length()) {
        return Status::Invalid("field node ", i, " has length ", n.length(),
                               " and null count ", n.null_count());
      }
      md.nodes.push_back(FieldNode{n.length(), n.null_count()});
    }
  }
  if (rb->buffers() != nullptr) {
    md.buffers.reserve(rb->buffers()->size());
    for (flatbuffers::uoffset_t i = 0; i < rb->buffers()->size(); ++i) {
      const fb::Buffer b = internal::LoadStruct(rb->buffers(), i);
      if (b.offset() < 0 || b.length() < 0) {
        return Status::Invalid("buffer ", i, " has offset ", b.offset(), " and length ",
                               b.length());
      }
      md.buffers.push_back(BufferSpec{b.offset(), b.length()});
    }
  }
  return md;
}

Result<DecodedSchema> DecodeSchema(const Message& message,
                                   const IpcReadOptions& options) {
  if (message.type() != MessageType::kSchema) {
    return Status::Invalid("expected a Schema message, got ",
                           MessageTypeName(message.type()));
  }
  return internal::SchemaFromFlatbuffer(Flatbuffer(message)->header_as_Schema(), options);
}

}  // namespace quiver::ipc
