#include "quiver/columnar/ipc/dissociated.h"

#include <cstdio>
#include <cstring>
#include <utility>

#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc/message_io.h"
#include "quiver/util/little_endian.h"

namespace quiver::ipc::dissociated {

namespace {

constexpr uint64_t kReservedTagBits = 0x00FFFFFF00000000ULL;

using util::AppendLE;
using util::LoadLE;

std::string Prefix(MetadataKind kind, uint32_t sequence) {
  std::string out;
  out.reserve(kPrefixSize);
  AppendLE<uint8_t>(&out, static_cast<uint8_t>(kind));
  AppendLE<uint32_t>(&out, sequence);
  return out;
}

std::string_view View(const Buffer& b) {
  return {reinterpret_cast<const char*>(b.data()), static_cast<size_t>(b.size())};
}

}  // namespace

// ---------------------------------------------------------------------------
// Messages

std::string EncodeMetadataMessage(uint32_t sequence, std::string_view flatbuffer) {
  std::string out = Prefix(MetadataKind::kMetadata, sequence);
  out.append(flatbuffer);
  return out;
}

std::string EncodeEndOfStream(uint32_t sequence) {
  return Prefix(MetadataKind::kEndOfStream, sequence);
}

Result<MetadataMessage> DecodeMetadataMessage(std::string_view bytes) {
  if (bytes.size() < kPrefixSize) {
    return Status::Invalid("dissociated IPC metadata message of ", bytes.size(),
                           " bytes: shorter than its 5-byte prefix");
  }
  MetadataMessage m;
  const uint8_t kind = LoadLE<uint8_t>(bytes, 0);
  m.sequence = LoadLE<uint32_t>(bytes, 1);
  if (kind == static_cast<uint8_t>(MetadataKind::kEndOfStream)) {
    if (bytes.size() != kPrefixSize) {
      return Status::Invalid("dissociated IPC end of stream (sequence ", m.sequence,
                             ") of ", bytes.size(), " bytes: it must be exactly 5");
    }
    m.kind = MetadataKind::kEndOfStream;
    return m;
  }
  if (kind != static_cast<uint8_t>(MetadataKind::kMetadata)) {
    return Status::Invalid("dissociated IPC metadata message (sequence ", m.sequence,
                           ") of unknown kind ", static_cast<int>(kind),
                           " (0 end of stream, 1 metadata)");
  }
  if (bytes.size() == kPrefixSize) {
    return Status::Invalid("dissociated IPC metadata message (sequence ", m.sequence,
                           ") carries no flatbuffer");
  }
  m.kind = MetadataKind::kMetadata;
  m.flatbuffer = bytes.substr(kPrefixSize);
  return m;
}

uint64_t MakeTag(uint32_t sequence, BodyType type) {
  return (static_cast<uint64_t>(type) << 56) | sequence;
}

Result<Tag> DecodeTag(uint64_t tag) {
  if ((tag & kReservedTagBits) != 0) {
    char hex[19];
    std::snprintf(hex, sizeof(hex), "0x%016llx", static_cast<unsigned long long>(tag));
    return Status::Invalid("dissociated IPC body tag ", hex, " sets reserved bits 32-55");
  }
  const uint64_t type = tag >> 56;
  if (type > static_cast<uint64_t>(BodyType::kAddresses)) {
    return Status::Invalid("dissociated IPC body tag of unknown body type ", type,
                           " (0 packed body, 1 address list)");
  }
  return Tag{static_cast<uint32_t>(tag & kSequenceMask), static_cast<BodyType>(type)};
}

std::string EncodeAddressList(const std::vector<AddressRange>& buffers) {
  uint64_t total = 0;
  for (const auto& b : buffers) total += b.length;
  std::string out;
  out.reserve(16 * (buffers.size() + 1));
  AppendLE<uint64_t>(&out, total);
  AppendLE<uint64_t>(&out, buffers.size());
  for (const auto& b : buffers) {
    AppendLE<uint64_t>(&out, b.address);
    AppendLE<uint64_t>(&out, b.length);
  }
  return out;
}

Result<std::vector<AddressRange>> DecodeAddressList(std::string_view bytes,
                                                    uint64_t max_buffers) {
  if (bytes.size() < 16) {
    return Status::Invalid("dissociated IPC address list of ", bytes.size(),
                           " bytes: shorter than its 16-byte head");
  }
  const uint64_t total = LoadLE<uint64_t>(bytes, 0), count = LoadLE<uint64_t>(bytes, 8);
  if (count > max_buffers) {
    return Status::Invalid("dissociated IPC address list of ", count,
                           " buffers: more than the limit of ", max_buffers);
  }
  if (bytes.size() != 16 * (count + 1)) {
    return Status::Invalid("dissociated IPC address list of ", count, " buffers has ",
                           bytes.size(), " bytes, not ", 16 * (count + 1));
  }
  std::vector<AddressRange> out(count);
  uint64_t sum = 0;
  for (uint64_t i = 0; i < count; ++i) {
    out[i].address = LoadLE<uint64_t>(bytes, 16 * (i + 1));
    out[i].length = LoadLE<uint64_t>(bytes, 16 * (i + 1) + 8);
    if (out[i].length > UINT64_MAX - sum) {
      return Status::Invalid("dissociated IPC address list: lengths overflow at buffer ",
                             i);
    }
    if (out[i].length > UINT64_MAX - out[i].address) {
      return Status::Invalid("dissociated IPC address list: buffer ", i,
                             " runs past the end of the address space");
    }
    sum += out[i].length;
  }
  if (sum != total) {
    return Status::Invalid("dissociated IPC address list says ", total,
                           " bytes in all but its buffers add up to ", sum);
  }
  return out;
}

std::string EncodeFreeData(const std::vector<uint64_t>& addresses) {
  std::string out;
  out.reserve(8 * addresses.size());
  for (uint64_t a : addresses) AppendLE<uint64_t>(&out, a);
  return out;
}

Result<std::vector<uint64_t>> DecodeFreeData(std::string_view bytes) {
  if (bytes.empty() || bytes.size() % 8 != 0) {
    return Status::Invalid("dissociated IPC free_data of ", bytes.size(),
                           " bytes: it must be one or more 8-byte addresses");
  }
  std::vector<uint64_t> out(bytes.size() / 8);
  for (size_t i = 0; i < out.size(); ++i) out[i] = LoadLE<uint64_t>(bytes, 8 * i);
  return out;
}

// ---------------------------------------------------------------------------
// StreamWriter

Result<std::unique_ptr<StreamWriter>> StreamWriter::Make(SchemaPtr schema, BodyType type,
                                                         const IpcWriteOptions& options) {
  if (schema == nullptr) return Status::Invalid("dissociated IPC writer of no schema");
  QUIVER_ASSIGN_OR_RAISE(auto fields,
                         DictionaryFieldMap::Make(*schema, options.max_nesting_depth));
  DictionaryWriteTracker tracker(std::move(fields), options.emit_dictionary_deltas,
                                 /*allow_replacement=*/true);
  return std::unique_ptr<StreamWriter>(
      new StreamWriter(std::move(schema), type, options, std::move(tracker)));
}

Result<Outgoing> StreamWriter::Begin() {
  if (begun_) return Status::Invalid("dissociated IPC stream already begun");
  QUIVER_ASSIGN_OR_RAISE(auto fb,
                         EncodeSchema(*schema_, tracker_.fields(), options_.pool));
  begun_ = true;
  Outgoing o;
  o.metadata = EncodeMetadataMessage(next_++, View(*fb));
  return o;
}

namespace {

// The payload's offsets made relative to `block` if every buffer lies in
// it (8-byte aligned offsets, as IPC bodies need); false otherwise.
bool RebaseInto(const uint8_t* block, uint64_t block_size, BatchPayload* payload) {
  std::vector<BufferSpec> specs = payload->metadata.buffers;
  for (size_t i = 0; i < payload->buffers.size(); ++i) {
    const auto& b = payload->buffers[i];
    if (b == nullptr || b->size() == 0) {
      specs[i] = {0, 0};
      continue;
    }
    if (b->data() < block || b->data() + b->size() > block + block_size ||
        (b->data() - block) % 8 != 0) {
      return false;
    }
    specs[i] = {b->data() - block, b->size()};
  }
  payload->metadata.buffers = std::move(specs);
  payload->metadata.body_length = static_cast<int64_t>(block_size);
  return true;
}

}  // namespace

Result<Outgoing> StreamWriter::Batch(
    const Buffer& flatbuffer, BatchPayload payload,
    const std::function<Result<std::shared_ptr<Buffer>>(const BatchMetadata&)>&
        reencode) {
  BodyChoice choice;
  choice.type = type_;
  if (chooser_) choice = chooser_(payload);
  const uint32_t sequence = next_++;
  Outgoing o;
  o.tagged = true;
  o.tag = MakeTag(sequence, choice.type);
  if (choice.type == BodyType::kPacked) {
    if (choice.block != nullptr && choice.block_size % 8 == 0 &&
        RebaseInto(choice.block, choice.block_size, &payload)) {
      QUIVER_ASSIGN_OR_RAISE(auto fb, reencode(payload.metadata));
      o.metadata = EncodeMetadataMessage(sequence, View(*fb));
      o.in_place = std::string_view(reinterpret_cast<const char*>(choice.block),
                                    choice.block_size);
      o.buffers = std::move(payload.buffers);
      return o;
    }
    o.metadata = EncodeMetadataMessage(sequence, View(flatbuffer));
    QUIVER_ASSIGN_OR_RAISE(auto sink, io::BufferOutputStream::Create(
                                          payload.metadata.body_length, options_.pool));
    QUIVER_RETURN_NOT_OK(WriteBody(payload, sink.get()));
    QUIVER_ASSIGN_OR_RAISE(auto body, sink->Finish());
    o.body.assign(View(*body));
    return o;
  }
  o.metadata = EncodeMetadataMessage(sequence, View(flatbuffer));
  std::vector<AddressRange> ranges;
  ranges.reserve(payload.buffers.size());
  for (const auto& b : payload.buffers) {
    if (b == nullptr || b->size() == 0) {
      ranges.push_back({0, 0});
    } else {
      ranges.push_back(
          {reinterpret_cast<uint64_t>(b->data()), static_cast<uint64_t>(b->size())});
    }
  }
  o.body = EncodeAddressList(ranges);
  o.buffers = std::move(payload.buffers);
  return o;
}

Result<std::vector<Outgoing>> StreamWriter::Write(const RecordBatch& batch) {
  if (!begun_ || ended_) {
    return Status::Invalid("dissociated IPC batch written ",
                           ended_ ? "after the end of stream" : "before Begin()");
  }
  if (!batch.schema()->Equals(*schema_)) {
    return Status::Invalid("batch schema ", batch.schema()->ToString(),
                           " is not the stream's ", schema_->ToString());
  }
  std::vector<Outgoing> out;
  QUIVER_ASSIGN_OR_RAISE(auto sends, tracker_.Collect(batch));
  for (const auto& send : sends) {
    QUIVER_ASSIGN_OR_RAISE(EncodedBatch dict, EncodeDictionaryMessage(send, options_));
    QUIVER_ASSIGN_OR_RAISE(
        auto o,
        Batch(*dict.metadata, std::move(dict.payload), [&](const BatchMetadata& m) {
          return EncodeDictionaryBatch(send.id, send.is_delta, m, options_.pool);
        }));
    out.push_back(std::move(o));
  }
  QUIVER_ASSIGN_OR_RAISE(EncodedBatch encoded, EncodeRecordBatchMessage(batch, options_));
  QUIVER_ASSIGN_OR_RAISE(auto o, Batch(*encoded.metadata, std::move(encoded.payload),
                                       [&](const BatchMetadata& m) {
                                         return EncodeRecordBatch(m, options_.pool);
                                       }));
  out.push_back(std::move(o));
  return out;
}

Result<Outgoing> StreamWriter::End() {
  if (!begun_ || ended_) {
    return Status::Invalid("dissociated IPC stream ended ",
                           ended_ ? "twice" : "before Begin()");
  }
  ended_ = true;
  Outgoing o;
  o.metadata = EncodeEndOfStream(next_);
  return o;
}

// ---------------------------------------------------------------------------
// StreamReader

Status StreamReader::Pending() const {
  if (metadata_.size() + bodies_.size() >= limits_.max_pending) {
    return Status::CapacityError(
        "dissociated IPC reader already holds ", metadata_.size() + bodies_.size(),
        " messages waiting for sequence ", next_, " (limit ", limits_.max_pending, ")");
  }
  return Status::OK();
}

Status StreamReader::OnMetadata(std::string_view bytes) {
  QUIVER_ASSIGN_OR_RAISE(MetadataMessage m, DecodeMetadataMessage(bytes));
  if (end_) {
    return Status::Invalid("dissociated IPC metadata message (sequence ", m.sequence,
                           ") after the end of stream at ", *end_);
  }
  if (m.kind == MetadataKind::kEndOfStream) {
    if (m.sequence < next_ ||
        (!metadata_.empty() && metadata_.rbegin()->first >= m.sequence) ||
        (!bodies_.empty() && bodies_.rbegin()->first >= m.sequence)) {
      return Status::Invalid("dissociated IPC end of stream at sequence ", m.sequence,
                             ", before messages already received");
    }
    end_ = m.sequence;
    return Status::OK();
  }
  if (m.sequence < next_ || metadata_.count(m.sequence) != 0) {
    return Status::Invalid("dissociated IPC metadata sequence ", m.sequence,
                           " received twice");
  }
  QUIVER_RETURN_NOT_OK(Pending());
  QUIVER_ASSIGN_OR_RAISE(
      auto copy,
      AllocateBuffer(static_cast<int64_t>(m.flatbuffer.size()), options_.pool));
  std::memcpy(copy->mutable_data(), m.flatbuffer.data(), m.flatbuffer.size());
  metadata_.emplace(m.sequence, std::move(copy));
  return Status::OK();
}

Status StreamReader::OnBody(uint64_t tag, std::shared_ptr<Buffer> body) {
  QUIVER_ASSIGN_OR_RAISE(Tag t, DecodeTag(tag));
  if (body == nullptr) return Status::Invalid("dissociated IPC body of no bytes");
  if (end_ && t.sequence >= *end_) {
    return Status::Invalid("dissociated IPC body for sequence ", t.sequence,
                           ", at or after the end of stream at ", *end_);
  }
  if (t.sequence < next_ || bodies_.count(t.sequence) != 0) {
    return Status::Invalid("dissociated IPC body for sequence ", t.sequence,
                           " received twice");
  }
  QUIVER_RETURN_NOT_OK(Pending());
  bodies_.emplace(t.sequence, std::make_pair(t.type, std::move(body)));
  return Status::OK();
}

bool StreamReader::finished() const { return end_ && next_ == *end_; }

std::vector<uint64_t> StreamReader::TakeAddressesToFree() {
  return std::exchange(to_free_, {});
}

Result<std::optional<RecordBatchPtr>> StreamReader::Next() {
  for (;;) {
    if (finished()) return std::optional<RecordBatchPtr>();
    auto md = metadata_.find(next_);
    if (md == metadata_.end()) return std::optional<RecordBatchPtr>();
    const uint32_t seq = next_;
    QUIVER_ASSIGN_OR_RAISE(auto message, Message::Open(md->second, nullptr, options_));
    if (seq == 0) {
      if (message->type() != MessageType::kSchema) {
        return Status::Invalid("dissociated IPC stream starts with a ",
                               MessageTypeName(message->type()),
                               " message: sequence 0 must be the Schema");
      }
      if (bodies_.count(0) != 0) {
        return Status::Invalid("dissociated IPC Schema message (sequence 0) has a body");
      }
      QUIVER_ASSIGN_OR_RAISE(DecodedSchema decoded, DecodeSchema(*message, options_));
      schema_ = decoded.schema;
      wire_endianness_ = decoded.wire_endianness;
      memo_ = std::make_unique<DictionaryMemo>(std::move(decoded.dictionaries));
      metadata_.erase(md);
      ++next_;
      continue;
    }
    if (message->type() == MessageType::kSchema) {
      return Status::Invalid("dissociated IPC stream has a second Schema message at ",
                             "sequence ", seq);
    }
    auto b = bodies_.find(seq);
    if (b == bodies_.end()) return std::optional<RecordBatchPtr>();
    const auto [type, body] = b->second;
    BodyResolver resolver;
    std::vector<uint64_t> used;
    if (type == BodyType::kPacked) {
      resolver = PackedBodyResolver(body);
    } else {
      if (!resolver_) {
        return Status::Invalid("dissociated IPC body of sequence ", seq,
                               " is an address list, and this reader resolves none");
      }
      QUIVER_ASSIGN_OR_RAISE(auto ranges,
                             DecodeAddressList(View(*body), limits_.max_buffers));
      QUIVER_ASSIGN_OR_RAISE(BatchMetadata meta, message->batch_metadata());
      if (ranges.size() != meta.buffers.size()) {
        return Status::Invalid("dissociated IPC address list of sequence ", seq, " has ",
                               ranges.size(), " buffers for ", meta.buffers.size(),
                               " buffer entries");
      }
      for (const auto& r : ranges) {
        if (r.length > 0) used.push_back(r.address);
      }
      resolver = [this, ranges = std::move(ranges), seq](
                     int64_t index, int64_t,
                     int64_t length) -> Result<std::shared_ptr<Buffer>> {
        const AddressRange& r = ranges[static_cast<size_t>(index)];
        if (length < 0 || r.length != static_cast<uint64_t>(length)) {
          return Status::Invalid("dissociated IPC buffer ", index, " of sequence ", seq,
                                 " is ", r.length, " bytes at its address but ", length,
                                 " in the header");
        }
        if (length == 0) return Buffer::FromString(std::string());
        return resolver_(r.address, r.length);
      };
    }
    std::optional<RecordBatchPtr> out;
    if (message->type() == MessageType::kDictionaryBatch) {
      QUIVER_RETURN_NOT_OK(DecodeDictionaryBatch(*message, memo_.get(), resolver,
                                                 options_, wire_endianness_)
                               .status());
    } else {
      QUIVER_ASSIGN_OR_RAISE(
          auto batch, DecodeRecordBatch(*message, schema_, *memo_, resolver, options_,
                                        wire_endianness_));
      out = std::move(batch);
    }
    to_free_.insert(to_free_.end(), used.begin(), used.end());
    bodies_.erase(b);
    metadata_.erase(md);
    ++next_;
    if (out) return out;
  }
}

}  // namespace quiver::ipc::dissociated
