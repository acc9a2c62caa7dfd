// Descriptors: Dissociated IPC messages framed in one byte string;
// encoding, inspection and zero-copy decoding. docs/descriptor.md specifies
// the bytes; in short:
//
//   header   "QVDESC", u16 version 2, u32 frame count, u32 total size
//   frame    u8 stream (0 metadata, 1 data), 3 zero bytes, u32 message size,
//            u64 tag (the data message's tag; 0 for metadata), the message
//            exactly as the protocol sends it, zero padding to 8 bytes
//
// The messages are the protocol's own (dissociated.h encodes and decodes
// them): metadata with its 5-byte prefix, bodies of type 0 (packed) or 1
// (address list), the 5-byte end of stream. All integers are little-endian.
// Nothing here reads the memory a descriptor references, except the batch
// decoders at the very end of DecodeDescriptorBatches, after every check.

#include "quiver/columnar/ipc/descriptor.h"

#include <bit>
#include <cstring>
#include <map>
#include <utility>

#include "columnar/ipc/descriptor_layout.h"
#include "quiver/columnar/buffer.h"
#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc/message.h"
#include "quiver/columnar/ipc/message_io.h"
#include "quiver/util/little_endian.h"
#include "quiver/util/string_builder.h"

namespace quiver::ipc {

static_assert(std::endian::native == std::endian::little,
              "descriptors are little-endian; add byte swapping for this host");

namespace {

using namespace descriptor_layout;  // NOLINT: this file's own internals
using dissociated::AddressRange;
using dissociated::BodyType;
using dissociated::MetadataKind;
using util::AppendLE;
using util::Hex;
using util::LoadLE;

constexpr char kMagic[6] = {'Q', 'V', 'D', 'E', 'S', 'C'};
constexpr uint16_t kVersion = 2;
constexpr size_t kHeaderSize = 16;
constexpr size_t kFrameHeaderSize = 16;

// Which of the protocol's two channels a frame's message belongs to.
enum Stream : uint8_t { kMetadataStream = 0, kDataStream = 1 };

size_t PadTo8(size_t n) { return (n + 7) & ~size_t{7}; }

std::string_view View(const Buffer& b) {
  return {reinterpret_cast<const char*>(b.data()), static_cast<size_t>(b.size())};
}

// ---------------------------------------------------------------------------
// Parsing

// One batch message (dictionary or record batch) and its body.
struct ParsedBatch {
  std::shared_ptr<Message> message;
  BatchMetadata md;
  Layout layout;
  BodyType body_type = BodyType::kAddresses;
  std::vector<AddressRange> pairs;  // type 1
  std::string_view packed;          // type 0: into the descriptor's bytes
};

struct Parsed {
  DecodedSchema schema;
  std::vector<ParsedBatch> batches;  // in sequence order
  DescriptorInfo info;
};

IpcReadOptions ReadOptions() {
  IpcReadOptions o;
  o.max_metadata_size = kMaxDescriptorSize;
  o.max_nesting_depth = kMaxDescriptorNesting;
  return o;
}

// Checks a data-stream message against the batch message it belongs to and
// runs the validator on every non-empty referenced range.
Status CheckBody(std::string_view message, BodyType type, ParsedBatch* batch,
                 const RangeValidator& validator, std::vector<BufferRange>* ranges) {
  batch->body_type = type;
  const auto& entries = batch->md.buffers;
  if (type == BodyType::kPacked) {
    // The packed body's bounds are checked entry by entry when it is
    // resolved; here only that it holds what the header says it has.
    if (batch->md.body_length < 0 ||
        static_cast<uint64_t>(batch->md.body_length) > message.size()) {
      return Status::Invalid("packed body of ", message.size(),
                             " bytes is shorter than the ", batch->md.body_length,
                             " its header states");
    }
    batch->packed = message;
    return Status::OK();
  }
  if (batch->md.compression != Compression::kUncompressed) {
    return Status::Invalid("address-list body of a compressed message (",
                           CompressionName(batch->md.compression),
                           "): referenced buffers are used as they are in memory");
  }
  QUIVER_ASSIGN_OR_RAISE(batch->pairs,
                         dissociated::DecodeAddressList(message, kMaxDescriptorBuffers));
  if (batch->pairs.size() != entries.size()) {
    return Status::Invalid("address list has ", batch->pairs.size(),
                           " buffers, its header ", entries.size(), " buffer entries");
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const AddressRange& p = batch->pairs[i];
    if (p.length != static_cast<uint64_t>(entries[i].length)) {
      return Status::Invalid("address list pair ", i, " (", Hex(p.address), ", ",
                             p.length, ") differs in length from the header's buffer ",
                             "entry (", entries[i].length, " bytes)");
    }
    QUIVER_RETURN_NOT_OK(CheckAddress(batch->layout, i, p.address, p.length));
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const AddressRange& p = batch->pairs[i];
    if (p.length == 0) continue;
    if (validator) {
      Status st = validator(p.address, p.length);
      if (!st.ok()) {
        const LayoutBuffer& slot = batch->layout.buffers[i];
        return st.WithContext(batch->layout.Describe(slot.node) + ": buffer " +
                              std::to_string(i) + " (" + slot.buffer.name + ") at " +
                              Hex(p.address) + ", length " + std::to_string(p.length));
      }
    }
    ranges->push_back(BufferRange{p.address, p.length});
  }
  return Status::OK();
}

// A metadata-stream message that is not the Schema: a dictionary or record
// batch, checked against the schema and the dictionaries seen so far.
Status ParseBatchMessage(std::shared_ptr<Message> message, Parsed* out,
                         int64_t* buffers_seen, std::map<int64_t, bool>* dictionaries) {
  const Schema& schema = *out->schema.schema;
  QUIVER_ASSIGN_OR_RAISE(BatchMetadata md, message->batch_metadata());
  *buffers_seen += static_cast<int64_t>(md.buffers.size());
  if (*buffers_seen > kMaxDescriptorBuffers) {
    return Status::Invalid("descriptor has more than ", kMaxDescriptorBuffers,
                           " buffer entries");
  }
  ParsedBatch batch;
  if (message->type() == MessageType::kDictionaryBatch) {
    const int64_t id = message->dictionary_id();
    const DictionaryField* field = out->schema.dictionaries.FindById(id);
    if (field == nullptr) {
      return Status::Invalid("dictionary batch for id ", id,
                             ", which no field of the schema uses");
    }
    if (message->is_delta() && dictionaries->count(id) == 0) {
      return Status::Invalid("dictionary batch for id ", id,
                             " is a delta, but no dictionary came before it");
    }
    (*dictionaries)[id] = true;
    QUIVER_ASSIGN_OR_RAISE(batch.layout, DictionaryLayout(schema, *field, md));
  } else if (message->type() == MessageType::kRecordBatch) {
    for (const DictionaryField& f : out->schema.dictionaries.fields()) {
      if (dictionaries->count(f.id) == 0) {
        return Status::Invalid("no dictionary batch for id ", f.id, " (field '",
                               DictionaryFieldName(schema, f.path),
                               "') before the RecordBatch message");
      }
    }
    QUIVER_ASSIGN_OR_RAISE(batch.layout, BatchLayout(schema, md));
    out->info.batch_rows.push_back(md.length);
    out->info.num_rows += md.length;
  } else {
    return Status::Invalid("second Schema message");
  }
  QUIVER_RETURN_NOT_OK(CheckBatch(batch.layout, md, MessageTypeName(message->type())));
  batch.message = std::move(message);
  batch.md = std::move(md);
  out->batches.push_back(std::move(batch));
  return Status::OK();
}

Status ParseFrames(std::string_view bytes, const RangeValidator& validator, Parsed* out) {
  if (bytes.size() > static_cast<size_t>(kMaxDescriptorSize)) {
    return Status::Invalid("descriptor of ", bytes.size(), " bytes exceeds the limit of ",
                           kMaxDescriptorSize);
  }
  if (bytes.size() < kHeaderSize) {
    return Status::Invalid("descriptor of ", bytes.size(),
                           " bytes is shorter than its 16-byte header");
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return Status::Invalid("not a descriptor: the magic bytes are not \"QVDESC\"");
  }
  const uint16_t version = LoadLE<uint16_t>(bytes, 6);
  if (version != kVersion) {
    return Status::NotImplemented("descriptor version ", version, " (this reader knows ",
                                  kVersion, ")");
  }
  const uint32_t count = LoadLE<uint32_t>(bytes, 8);
  const uint32_t total = LoadLE<uint32_t>(bytes, 12);
  if (total != bytes.size()) {
    return Status::Invalid("descriptor states ", total, " bytes but has ", bytes.size(),
                           total > bytes.size() ? " (truncated)" : " (trailing bytes)");
  }
  if (count < 2 || count > kMaxDescriptorRecords) {
    return Status::Invalid("descriptor states ", count, " frames; between 2 and ",
                           kMaxDescriptorRecords, " are allowed");
  }

  const IpcReadOptions options = ReadOptions();
  size_t pos = kHeaderSize;
  uint32_t next_seq = 0;
  bool awaiting_body = false, ended = false;
  int64_t buffers_seen = 0;
  std::map<int64_t, bool> dictionaries;

  for (uint32_t f = 0; f < count; ++f) {
    const size_t start = pos;
    auto fail = [&](const Status& st) {
      return st.WithContext("frame " + std::to_string(f) + " at byte " +
                            std::to_string(start));
    };
    if (ended) return fail(Status::Invalid("frame after the end of stream"));
    if (bytes.size() - pos < kFrameHeaderSize) {
      return fail(Status::Invalid("frame header runs past the end of the descriptor"));
    }
    const uint8_t stream = LoadLE<uint8_t>(bytes, pos);
    const uint32_t size = LoadLE<uint32_t>(bytes, pos + 4);
    const uint64_t tag = LoadLE<uint64_t>(bytes, pos + 8);
    if (bytes[pos + 1] != 0 || bytes[pos + 2] != 0 || bytes[pos + 3] != 0) {
      return fail(Status::Invalid("reserved bytes of the frame header are not zero"));
    }
    const size_t avail = bytes.size() - pos - kFrameHeaderSize;
    if (size > avail || PadTo8(size) > avail) {
      return fail(Status::Invalid("message of ", size, " bytes runs past the end (",
                                  avail, " left)"));
    }
    const std::string_view message = bytes.substr(pos + kFrameHeaderSize, size);
    for (size_t i = size; i < PadTo8(size); ++i) {
      if (bytes[pos + kFrameHeaderSize + i] != 0) {
        return fail(Status::Invalid("padding after the message is not zero"));
      }
    }
    pos += kFrameHeaderSize + PadTo8(size);

    if (stream == kDataStream) {
      if (!awaiting_body) {
        return fail(Status::Invalid("data-stream message (tag ", Hex(tag),
                                    ") without a batch message before it"));
      }
      auto decoded_tag = dissociated::DecodeTag(tag);
      if (!decoded_tag.ok()) return fail(decoded_tag.status());
      if (decoded_tag->sequence != next_seq - 1) {
        return fail(Status::Invalid("body tagged with sequence number ",
                                    decoded_tag->sequence, ", its message has ",
                                    next_seq - 1));
      }
      Status st = CheckBody(message, decoded_tag->type, &out->batches.back(), validator,
                            &out->info.ranges);
      if (!st.ok()) return fail(st);
      awaiting_body = false;
      continue;
    }
    if (stream != kMetadataStream) {
      return fail(Status::Invalid("unknown stream ", static_cast<int>(stream),
                                  " (0 metadata, 1 data)"));
    }
    if (tag != 0) return fail(Status::Invalid("metadata-stream frame carries a tag"));
    if (awaiting_body) {
      return fail(Status::Invalid("expected the body of message ", next_seq - 1,
                                  ", got a metadata-stream message"));
    }
    auto m = dissociated::DecodeMetadataMessage(message);
    if (!m.ok()) return fail(m.status());
    if (m->sequence != next_seq) {
      return fail(Status::Invalid(
          m->kind == MetadataKind::kEndOfStream ? "end of stream" : "message",
          " has sequence number ", m->sequence, ", expected ", next_seq));
    }
    if (m->kind == MetadataKind::kEndOfStream) {
      if (next_seq == 0) {
        return fail(Status::Invalid("the stream ends before its Schema message"));
      }
      ended = true;
      continue;
    }
    ++next_seq;
    auto opened =
        Message::Open(Buffer::Wrap(reinterpret_cast<const uint8_t*>(m->flatbuffer.data()),
                                   static_cast<int64_t>(m->flatbuffer.size())),
                      nullptr, options);
    if (!opened.ok()) return fail(opened.status());
    if (next_seq == 1) {
      if ((*opened)->type() != MessageType::kSchema) {
        return fail(Status::Invalid("the first message is ",
                                    MessageTypeName((*opened)->type()), ", not Schema"));
      }
      auto decoded = DecodeSchema(**opened, options);
      if (!decoded.ok()) return fail(decoded.status());
      if (decoded->wire_endianness != Endianness::kLittle) {
        return fail(Status::NotImplemented(
            "big-endian schema: descriptors are published little-endian only"));
      }
      out->schema = std::move(*decoded);
      out->info.schema = out->schema.schema;
      continue;
    }
    Status st = ParseBatchMessage(std::move(*opened), out, &buffers_seen, &dictionaries);
    if (!st.ok()) return fail(st);
    awaiting_body = true;
  }
  if (!ended) {
    return Status::Invalid("descriptor has no end of stream after ", count, " frames");
  }
  if (pos != bytes.size()) {
    return Status::Invalid(bytes.size() - pos, " bytes after the end of stream");
  }
  return Status::OK();
}

Status Parse(std::string_view bytes, const RangeValidator& validator, Parsed* out) {
  Status st = ParseFrames(bytes, validator, out);
  if (!st.ok()) return st.WithContext("descriptor");
  return st;
}

// ---------------------------------------------------------------------------
// Encoding

// Forwards allocations and never frees: buffers the descriptor references
// must outlive the call when the caller did not ask to hold them.
class NoFreePool final : public MemoryPool {
 public:
  using MemoryPool::Allocate;
  using MemoryPool::Free;
  using MemoryPool::Reallocate;
  explicit NoFreePool(MemoryPool* base) : base_(base) {}
  Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override {
    return base_->Allocate(size, alignment, out);
  }
  Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                    uint8_t** ptr) override {
    return base_->Reallocate(old_size, new_size, alignment, ptr);
  }
  void Free(uint8_t*, int64_t, int64_t) override {}
  int64_t bytes_allocated() const override { return base_->bytes_allocated(); }
  int64_t max_memory() const override { return base_->max_memory(); }
  int64_t total_bytes_allocated() const override {
    return base_->total_bytes_allocated();
  }
  int64_t num_allocations() const override { return base_->num_allocations(); }
  std::string backend_name() const override { return base_->backend_name(); }

 private:
  MemoryPool* base_;
};

// Appends frames; the header is filled in by Finish().
class Framer {
 public:
  Framer() {
    out_.reserve(1024);
    out_.resize(kHeaderSize);
    std::memcpy(out_.data(), kMagic, sizeof(kMagic));
  }

  void Frame(Stream stream, uint64_t tag, std::string_view message) {
    AppendLE<uint8_t>(&out_, stream);
    out_.append(3, '\0');
    // Oversized messages are caught in Finish() through the total size.
    AppendLE<uint32_t>(
        &out_, static_cast<uint32_t>(std::min<size_t>(message.size(), UINT32_MAX)));
    AppendLE<uint64_t>(&out_, tag);
    out_.append(message);
    out_.append(PadTo8(message.size()) - message.size(), '\0');
    ++frames_;
  }

  Result<std::string> Finish() {
    if (out_.size() > static_cast<size_t>(kMaxDescriptorSize)) {
      return Status::Invalid("descriptor would be ", out_.size(),
                             " bytes, more than the limit of ", kMaxDescriptorSize);
    }
    if (frames_ > kMaxDescriptorRecords) {
      return Status::Invalid("descriptor would have ", frames_,
                             " frames, more than the limit of ", kMaxDescriptorRecords);
    }
    std::string header;
    AppendLE<uint16_t>(&header, kVersion);
    AppendLE<uint32_t>(&header, static_cast<uint32_t>(frames_));
    AppendLE<uint32_t>(&header, static_cast<uint32_t>(out_.size()));
    std::memcpy(out_.data() + sizeof(kMagic), header.data(), header.size());
    return std::move(out_);
  }

 private:
  std::string out_;
  int64_t frames_ = 0;
};

// Prepares a payload for a type-1 body: empty entries and every buffer of
// an empty node become (0, 0) (nothing is referenced; the reader supplies
// empty buffers itself), unaligned buffers are copied to `pool`, and the
// header's entries become the offsets a packed body of these buffers would
// have (8-byte aligned), as any IPC header states them.
Status Dissociate(const Layout& layout, BatchPayload* payload, MemoryPool* pool,
                  std::vector<AddressRange>* pairs) {
  BatchMetadata& md = payload->metadata;
  if (md.buffers.size() != layout.buffers.size() ||
      md.nodes.size() != layout.nodes.size() ||
      payload->buffers.size() != md.buffers.size()) {
    return Status::Invalid("batch layout does not match its schema (", md.nodes.size(),
                           " nodes and ", md.buffers.size(), " buffers, expected ",
                           layout.nodes.size(), " and ", layout.buffers.size(), ")");
  }
  int64_t offset = 0;
  for (size_t i = 0; i < md.buffers.size(); ++i) {
    std::shared_ptr<Buffer>& buf = payload->buffers[i];
    if (buf == nullptr || buf->size() == 0 ||
        md.nodes[layout.buffers[i].node].length == 0) {
      buf = nullptr;
      md.buffers[i] = BufferSpec{offset, 0};
      pairs->push_back(AddressRange{0, 0});
      continue;
    }
    if (reinterpret_cast<uintptr_t>(buf->data()) % 8 != 0) {
      QUIVER_ASSIGN_OR_RAISE(buf, CopyBuffer(buf->data(), buf->size(), pool));
    }
    md.buffers[i] = BufferSpec{offset, buf->size()};
    offset += static_cast<int64_t>(PadTo8(static_cast<size_t>(buf->size())));
    pairs->push_back(AddressRange{reinterpret_cast<uintptr_t>(buf->data()),
                                  static_cast<uint64_t>(buf->size())});
  }
  md.body_length = offset;
  return Status::OK();
}

class Encoder {
 public:
  Encoder(const Schema& schema, const DescriptorWriteOptions& options,
          MemoryPool* alloc_pool, std::vector<BufferRange>* ranges,
          std::vector<std::shared_ptr<Buffer>>* keep)
      : schema_(schema),
        type_(options.body_type),
        alloc_pool_(alloc_pool),
        ranges_(ranges),
        keep_(keep) {
    write_.pool = alloc_pool;
    write_.compression = Compression::kUncompressed;
    write_.alignment = 8;
    write_.max_nesting_depth = kMaxDescriptorNesting;
  }

  Status Begin(const DictionaryFieldMap& fields) {
    QUIVER_ASSIGN_OR_RAISE(auto fb, EncodeSchema(schema_, fields));
    Metadata(*fb);
    return Status::OK();
  }

  // One batch message: its header (re-encoded by `encode` when the
  // entries change) and its body.
  Status Batch(BatchPayload payload, const Layout& layout,
               const std::function<Result<std::shared_ptr<Buffer>>(const BatchMetadata&)>&
                   encode) {
    if (type_ == BodyType::kPacked) {
      QUIVER_ASSIGN_OR_RAISE(auto fb, encode(payload.metadata));
      QUIVER_ASSIGN_OR_RAISE(auto sink, io::BufferOutputStream::Create(
                                            payload.metadata.body_length, alloc_pool_));
      QUIVER_RETURN_NOT_OK(WriteBody(payload, sink.get()));
      QUIVER_ASSIGN_OR_RAISE(auto body, sink->Finish());
      const uint32_t seq = Metadata(*fb);
      framer_.Frame(kDataStream, dissociated::MakeTag(seq, BodyType::kPacked),
                    View(*body));
      return Status::OK();
    }
    std::vector<AddressRange> pairs;
    QUIVER_RETURN_NOT_OK(Dissociate(layout, &payload, alloc_pool_, &pairs));
    QUIVER_ASSIGN_OR_RAISE(auto fb, encode(payload.metadata));
    const uint32_t seq = Metadata(*fb);
    framer_.Frame(kDataStream, dissociated::MakeTag(seq, BodyType::kAddresses),
                  dissociated::EncodeAddressList(pairs));
    for (const AddressRange& p : pairs) {
      if (p.length != 0) ranges_->push_back(BufferRange{p.address, p.length});
    }
    if (keep_ != nullptr) {
      for (auto& b : payload.buffers) {
        if (b != nullptr) keep_->push_back(std::move(b));
      }
    }
    return Status::OK();
  }

  Result<std::string> Finish() {
    framer_.Frame(kMetadataStream, 0, dissociated::EncodeEndOfStream(next_seq_));
    return framer_.Finish();
  }

  const IpcWriteOptions& write_options() const { return write_; }

 private:
  uint32_t Metadata(const Buffer& flatbuffer) {
    const uint32_t seq = next_seq_++;
    framer_.Frame(kMetadataStream, 0,
                  dissociated::EncodeMetadataMessage(seq, View(flatbuffer)));
    return seq;
  }

  const Schema& schema_;
  BodyType type_;
  MemoryPool* alloc_pool_;
  std::vector<BufferRange>* ranges_;
  std::vector<std::shared_ptr<Buffer>>* keep_;
  IpcWriteOptions write_;
  Framer framer_;
  uint32_t next_seq_ = 0;
};

}  // namespace

namespace {

Result<std::string> Encode(const SchemaPtr& schema,
                           const std::vector<const RecordBatch*>& batches,
                           const DescriptorWriteOptions& options,
                           std::vector<BufferRange>* ranges_out,
                           std::vector<std::shared_ptr<Buffer>>* scratch_out) {
  if (schema == nullptr) return Status::Invalid("descriptor of no schema");
  if (!schema->is_native_endian()) {
    return Status::NotImplemented(
        "a big-endian batch (read with ensure_native_endian = false) cannot be "
        "published: descriptors are little-endian");
  }
  MemoryPool* pool = options.scratch_pool ? options.scratch_pool : default_memory_pool();
  NoFreePool no_free(pool);
  // Without scratch_out, new buffers a type-1 body references die with this
  // call but their memory stays allocated (see the header). Packed bodies
  // reference nothing.
  MemoryPool* alloc_pool =
      scratch_out || options.body_type == BodyType::kPacked ? pool : &no_free;
  QUIVER_ASSIGN_OR_RAISE(auto fields,
                         DictionaryFieldMap::Make(*schema, kMaxDescriptorNesting));
  std::vector<BufferRange> ranges;
  std::vector<std::shared_ptr<Buffer>> keep;
  Encoder encoder(*schema, options, alloc_pool, &ranges, scratch_out ? &keep : nullptr);
  QUIVER_RETURN_NOT_OK(encoder.Begin(fields));
  DictionaryWriteTracker tracker(fields, options.emit_dictionary_deltas,
                                 /*allow_replacement=*/true);
  for (const RecordBatch* batch : batches) {
    if (batch == nullptr) return Status::Invalid("descriptor of a null batch");
    if (!batch->schema()->Equals(*schema)) {
      return Status::Invalid("batch schema ", batch->schema()->ToString(),
                             " is not the descriptor's ", schema->ToString());
    }
    QUIVER_ASSIGN_OR_RAISE(auto sends, tracker.Collect(*batch));
    for (const auto& send : sends) {
      // Only the payload: the header is encoded once its entries are final,
      // from the default pool (it is not memory the descriptor references).
      QUIVER_ASSIGN_OR_RAISE(
          BatchPayload dict,
          AssembleDictionary(send.values, encoder.write_options(), send.endianness));
      QUIVER_ASSIGN_OR_RAISE(
          Layout layout,
          DictionaryLayout(*schema, *fields.FindById(send.id), dict.metadata));
      QUIVER_RETURN_NOT_OK(
          encoder.Batch(std::move(dict), layout, [&](const BatchMetadata& md) {
            return EncodeDictionaryBatch(send.id, send.is_delta, md);
          }));
    }
    QUIVER_ASSIGN_OR_RAISE(auto payload,
                           AssembleRecordBatch(*batch, encoder.write_options()));
    QUIVER_ASSIGN_OR_RAISE(Layout layout, BatchLayout(*schema, payload.metadata));
    QUIVER_RETURN_NOT_OK(
        encoder.Batch(std::move(payload), layout,
                      [](const BatchMetadata& md) { return EncodeRecordBatch(md); }));
  }
  QUIVER_ASSIGN_OR_RAISE(std::string out, encoder.Finish());
  if (ranges_out) ranges_out->insert(ranges_out->end(), ranges.begin(), ranges.end());
  if (scratch_out) scratch_out->insert(scratch_out->end(), keep.begin(), keep.end());
  return out;
}

}  // namespace

Result<std::string> EncodeDescriptor(const SchemaPtr& schema,
                                     const std::vector<RecordBatchPtr>& batches,
                                     const DescriptorWriteOptions& options,
                                     std::vector<BufferRange>* ranges_out,
                                     std::vector<std::shared_ptr<Buffer>>* scratch_out) {
  std::vector<const RecordBatch*> raw;
  raw.reserve(batches.size());
  for (const RecordBatchPtr& b : batches) raw.push_back(b.get());
  return Encode(schema, raw, options, ranges_out, scratch_out);
}

Result<std::string> EncodeDescriptor(const RecordBatch& batch, MemoryPool* scratch_pool,
                                     std::vector<BufferRange>* ranges_out,
                                     std::vector<std::shared_ptr<Buffer>>* scratch_out) {
  DescriptorWriteOptions options;
  options.scratch_pool = scratch_pool;
  return Encode(batch.schema(), {&batch}, options, ranges_out, scratch_out);
}

Result<DescriptorInfo> InspectDescriptor(std::string_view bytes,
                                         const RangeValidator& validator) {
  Parsed parsed;
  QUIVER_RETURN_NOT_OK(Parse(bytes, validator, &parsed));
  return std::move(parsed.info);
}

Result<std::vector<RecordBatchPtr>> DecodeDescriptorBatches(
    std::string_view bytes, const RangeValidator& validator,
    std::shared_ptr<const void> keepalive) {
  Parsed parsed;
  QUIVER_RETURN_NOT_OK(Parse(bytes, validator, &parsed));
  const IpcReadOptions options = ReadOptions();
  DictionaryMemo memo(parsed.schema.dictionaries);
  std::vector<RecordBatchPtr> out;
  for (const ParsedBatch& b : parsed.batches) {
    BodyResolver resolver;
    if (b.body_type == BodyType::kPacked) {
      // Copied out: `bytes` need not outlive the call, and the copy is
      // aligned for every buffer.
      QUIVER_ASSIGN_OR_RAISE(auto body,
                             CopyBuffer(reinterpret_cast<const uint8_t*>(b.packed.data()),
                                        static_cast<int64_t>(b.packed.size())));
      resolver = PackedBodyResolver(std::move(body));
    } else {
      // Every pair passed CheckAddress: non-empty ones are 8-byte aligned,
      // so the decoders use these wrappers as they are (no copy).
      resolver = [&b, &keepalive](int64_t index, int64_t,
                                  int64_t) -> Result<std::shared_ptr<Buffer>> {
        const AddressRange& p = b.pairs[static_cast<size_t>(index)];
        if (p.length == 0) return Buffer::Wrap(ZeroSizeArea(), 0);
        return Buffer::Wrap(reinterpret_cast<const uint8_t*>(p.address),
                            static_cast<int64_t>(p.length), keepalive);
      };
    }
    if (b.message->type() == MessageType::kDictionaryBatch) {
      auto applied = DecodeDictionaryBatch(*b.message, &memo, resolver, options);
      if (!applied.ok()) return applied.status().WithContext("descriptor");
      continue;
    }
    auto batch =
        DecodeRecordBatch(*b.message, parsed.schema.schema, memo, resolver, options);
    if (!batch.ok()) return batch.status().WithContext("descriptor");
    out.push_back(std::move(*batch));
  }
  return out;
}

Result<RecordBatchPtr> DecodeDescriptor(std::string_view bytes,
                                        const RangeValidator& validator,
                                        std::shared_ptr<const void> keepalive) {
  QUIVER_ASSIGN_OR_RAISE(auto batches,
                         DecodeDescriptorBatches(bytes, validator, std::move(keepalive)));
  if (batches.size() != 1) {
    return Status::Invalid("descriptor holds ", batches.size(),
                           " record batches where one is expected");
  }
  return std::move(batches.front());
}

}  // namespace quiver::ipc
