// Descriptors in Arrow's Dissociated IPC form: encoding, inspection and
// zero-copy decoding. docs/descriptor.md specifies the bytes; in short:
//
//   header   "QVDESC", u16 version, u32 record count, u32 total size (16 bytes)
//   record   u8 kind, 3 zero bytes, u32 sequence number, u32 payload size,
//            4 zero bytes, payload, zero padding to a multiple of 8
//   kinds    0 end of stream, 1 IPC metadata (a Message flatbuffer),
//            2 body of type 1 (tag, total size, count, (address, length)...)
//
// All integers are little-endian. Nothing here reads the memory a
// descriptor references, except DecodeRecordBatch/DecodeDictionaryBatch at
// the very end of DecodeDescriptor, after every check has passed.

#include "quiver/control/descriptor.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>
#include <utility>

#include "control/descriptor/layout.h"
#include "quiver/columnar/buffer.h"
#include "quiver/columnar/ipc/message.h"

namespace quiver::control {

static_assert(std::endian::native == std::endian::little,
              "descriptors are little-endian; add byte swapping for this host");

namespace {

using namespace descriptor_layout;  // NOLINT: this file's own internals
using ipc::BatchMetadata;
using ipc::BufferSpec;
using ipc::DictionaryFieldMap;
using ipc::Message;
using ipc::MessageType;

constexpr char kMagic[6] = {'Q', 'V', 'D', 'E', 'S', 'C'};
constexpr uint16_t kVersion = 1;
constexpr size_t kHeaderSize = 16;
constexpr size_t kRecordHeaderSize = 16;

// Record kinds. 0 and 1 are the type byte of the Dissociated IPC metadata
// stream; 2 marks a tagged data-stream message.
enum RecordKind : uint8_t { kEndOfStream = 0, kMetadata = 1, kBody = 2 };

// Body type 1 of the Dissociated IPC protocol: (address, length) pairs. It
// sits in the most significant byte of a body's tag.
constexpr uint64_t kAddressListBody = 1;
constexpr size_t kBodyPrefixSize = 24;  // tag, total size, buffer count

uint64_t Tag(uint32_t seq) { return (kAddressListBody << 56) | seq; }

size_t PadTo8(size_t n) { return (n + 7) & ~size_t{7}; }

template <typename T>
void Put(std::string* out, size_t pos, T v) {
  std::memcpy(out->data() + pos, &v, sizeof(T));
}
template <typename T>
T Get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// ---------------------------------------------------------------------------
// Parsing

struct ParsedBatch {
  std::shared_ptr<Message> message;
  BatchMetadata md;
  Layout layout;
};

struct Parsed {
  ipc::DecodedSchema schema;
  std::vector<ParsedBatch> dictionaries;
  ParsedBatch batch;
  std::vector<BufferRange> ranges;
};

ipc::IpcReadOptions ReadOptions() {
  ipc::IpcReadOptions o;
  o.max_metadata_size = kMaxDescriptorSize;
  o.max_nesting_depth = kMaxDescriptorNesting;
  return o;
}

// Checks a body record against the batch message it belongs to and runs the
// validator on every non-empty range.
Status CheckBody(std::string_view payload, uint32_t seq, const ParsedBatch& batch,
                 const RangeValidator& validator, std::vector<BufferRange>* ranges) {
  if (payload.size() < kBodyPrefixSize) {
    return Status::Invalid("body of ", payload.size(), " bytes is shorter than its ",
                           kBodyPrefixSize, "-byte prefix");
  }
  const uint64_t tag = Get<uint64_t>(payload.data());
  const uint64_t total = Get<uint64_t>(payload.data() + 8);
  const uint64_t count = Get<uint64_t>(payload.data() + 16);
  if (tag != Tag(seq)) {
    return Status::Invalid("body tag ", Hex(tag), " is not ", Hex(Tag(seq)),
                           " (body type 1, sequence number ", seq, ")");
  }
  const auto& entries = batch.md.buffers;
  if (count != entries.size()) {
    return Status::Invalid("body lists ", count, " buffers, its header has ",
                           entries.size());
  }
  if (payload.size() != kBodyPrefixSize + 16 * entries.size()) {
    return Status::Invalid("body of ", payload.size(), " bytes does not hold ", count,
                           " (address, length) pairs");
  }
  uint64_t sum = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const char* p = payload.data() + kBodyPrefixSize + 16 * i;
    const uint64_t address = Get<uint64_t>(p);
    const uint64_t length = Get<uint64_t>(p + 8);
    if (address != static_cast<uint64_t>(entries[i].offset) ||
        length != static_cast<uint64_t>(entries[i].length)) {
      return Status::Invalid("body pair ", i, " (", Hex(address), ", ", length,
                             ") differs from the header's buffer entry (",
                             Hex(static_cast<uint64_t>(entries[i].offset)), ", ",
                             entries[i].length, ")");
    }
    if (__builtin_add_overflow(sum, length, &sum)) {
      return Status::Invalid("body buffer lengths overflow 64 bits");
    }
  }
  if (sum != total) {
    return Status::Invalid("body states a total of ", total,
                           " bytes, its buffers sum to ", sum);
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].length == 0) continue;
    const BufferRange range{static_cast<uint64_t>(entries[i].offset),
                            static_cast<uint64_t>(entries[i].length)};
    if (validator) {
      Status st = validator(range.address, range.length);
      if (!st.ok()) {
        const LayoutBuffer& slot = batch.layout.buffers[i];
        return st.WithContext(batch.layout.Describe(slot.node) + ": buffer " +
                              std::to_string(i) + " (" + RoleName(slot.role) + ") at " +
                              Hex(range.address) + ", length " +
                              std::to_string(range.length));
      }
    }
    ranges->push_back(range);
  }
  return Status::OK();
}

Status ParseRecords(std::string_view bytes, const RangeValidator& validator,
                    Parsed* out) {
  if (bytes.size() > static_cast<size_t>(kMaxDescriptorSize)) {
    return Status::Invalid("descriptor of ", bytes.size(), " bytes exceeds the limit of ",
                           kMaxDescriptorSize);
  }
  if (bytes.size() < kHeaderSize) {
    return Status::Invalid("descriptor of ", bytes.size(),
                           " bytes is shorter than its 16-byte header");
  }
  const char* base = bytes.data();
  if (std::memcmp(base, kMagic, sizeof(kMagic)) != 0) {
    return Status::Invalid("not a descriptor: the magic bytes are not \"QVDESC\"");
  }
  const uint16_t version = Get<uint16_t>(base + 6);
  if (version != kVersion) {
    return Status::NotImplemented("descriptor version ", version, " (this reader knows ",
                                  kVersion, ")");
  }
  const uint32_t count = Get<uint32_t>(base + 8);
  const uint32_t total = Get<uint32_t>(base + 12);
  if (total != bytes.size()) {
    return Status::Invalid("descriptor states ", total, " bytes but has ", bytes.size(),
                           total > bytes.size() ? " (truncated)" : " (trailing bytes)");
  }
  if (count < 4 || count > kMaxDescriptorRecords) {
    return Status::Invalid("descriptor states ", count, " records; between 4 and ",
                           kMaxDescriptorRecords, " are allowed");
  }

  const ipc::IpcReadOptions options = ReadOptions();
  size_t pos = kHeaderSize;
  uint32_t next_seq = 0;
  ParsedBatch* pending = nullptr;  // a batch message waiting for its body
  uint32_t pending_seq = 0;
  bool have_schema = false, have_batch = false, ended = false;
  int64_t buffers_seen = 0;
  std::set<int64_t> dictionaries_seen;

  for (uint32_t r = 0; r < count; ++r) {
    const size_t start = pos;
    auto fail = [&](const Status& st) {
      return st.WithContext("record " + std::to_string(r) + " at byte " +
                            std::to_string(start));
    };
    if (ended) return fail(Status::Invalid("record after the end-of-stream record"));
    if (bytes.size() - pos < kRecordHeaderSize) {
      return fail(Status::Invalid("record header runs past the end of the descriptor"));
    }
    const char* rec = base + pos;
    const uint8_t kind = static_cast<uint8_t>(rec[0]);
    const uint32_t seq = Get<uint32_t>(rec + 4);
    const uint32_t size = Get<uint32_t>(rec + 8);
    if (rec[1] != 0 || rec[2] != 0 || rec[3] != 0 || Get<uint32_t>(rec + 12) != 0) {
      return fail(Status::Invalid("reserved bytes of the record header are not zero"));
    }
    const size_t avail = bytes.size() - pos - kRecordHeaderSize;
    if (size > avail || PadTo8(size) > avail) {
      return fail(Status::Invalid("payload of ", size, " bytes runs past the end (",
                                  avail, " left)"));
    }
    std::string_view payload(rec + kRecordHeaderSize, size);
    for (size_t i = size; i < PadTo8(size); ++i) {
      if (rec[kRecordHeaderSize + i] != 0) {
        return fail(Status::Invalid("padding after the payload is not zero"));
      }
    }
    pos += kRecordHeaderSize + PadTo8(size);

    if (pending != nullptr) {
      if (kind != kBody) {
        return fail(Status::Invalid("expected the body of message ", pending_seq,
                                    ", got a record of kind ", static_cast<int>(kind)));
      }
      if (seq != pending_seq) {
        return fail(Status::Invalid("body has sequence number ", seq, ", its message ",
                                    pending_seq));
      }
      Status st = CheckBody(payload, seq, *pending, validator, &out->ranges);
      if (!st.ok()) return fail(st);
      pending = nullptr;
      continue;
    }
    if (kind == kBody) {
      return fail(Status::Invalid("body record without a batch message before it"));
    }
    if (kind == kEndOfStream) {
      if (seq != next_seq) {
        return fail(Status::Invalid("end of stream has sequence number ", seq,
                                    ", expected ", next_seq));
      }
      if (size != 0) return fail(Status::Invalid("end-of-stream record has a payload"));
      if (!have_batch) {
        return fail(Status::Invalid("descriptor ends without a RecordBatch message"));
      }
      ended = true;
      continue;
    }
    if (kind != kMetadata) {
      return fail(Status::Invalid("unknown record kind ", static_cast<int>(kind)));
    }
    if (seq != next_seq) {
      return fail(
          Status::Invalid("message has sequence number ", seq, ", expected ", next_seq));
    }
    ++next_seq;
    auto opened =
        Message::Open(Buffer::Wrap(reinterpret_cast<const uint8_t*>(payload.data()),
                                   static_cast<int64_t>(payload.size())),
                      nullptr, options);
    if (!opened.ok()) return fail(opened.status());
    std::shared_ptr<Message> message = std::move(*opened);

    if (!have_schema) {
      if (message->type() != MessageType::kSchema) {
        return fail(Status::Invalid("the first message is ",
                                    ipc::MessageTypeName(message->type()),
                                    ", not Schema"));
      }
      auto decoded = ipc::DecodeSchema(*message, options);
      if (!decoded.ok()) return fail(decoded.status());
      if (decoded->wire_endianness != Endianness::kLittle) {
        return fail(Status::NotImplemented(
            "big-endian schema: descriptors are published little-endian only"));
      }
      out->schema = std::move(*decoded);
      have_schema = true;
      continue;
    }
    if (have_batch) {
      return fail(Status::Invalid(ipc::MessageTypeName(message->type()),
                                  " message after the RecordBatch message"));
    }
    auto md = message->batch_metadata();
    if (!md.ok()) return fail(md.status());
    buffers_seen += static_cast<int64_t>(md->buffers.size());
    if (buffers_seen > kMaxDescriptorBuffers) {
      return fail(Status::Invalid("descriptor has more than ", kMaxDescriptorBuffers,
                                  " buffer entries"));
    }
    const Schema& schema = *out->schema.schema;
    ParsedBatch* target = nullptr;
    if (message->type() == MessageType::kDictionaryBatch) {
      const int64_t id = message->dictionary_id();
      const ipc::DictionaryField* field = out->schema.dictionaries.FindById(id);
      if (field == nullptr) {
        return fail(Status::Invalid("dictionary batch for id ", id,
                                    ", which no field of the schema uses"));
      }
      if (!dictionaries_seen.insert(id).second) {
        return fail(Status::Invalid("second dictionary batch for id ", id));
      }
      if (message->is_delta()) {
        return fail(
            Status::Invalid("dictionary batch for id ", id,
                            " is a delta; a descriptor carries whole dictionaries"));
      }
      out->dictionaries.push_back(ParsedBatch{});
      target = &out->dictionaries.back();
      auto layout = DictionaryLayout(schema, *field);
      if (!layout.ok()) return fail(layout.status());
      target->layout = std::move(*layout);
    } else if (message->type() == MessageType::kRecordBatch) {
      for (const ipc::DictionaryField& f : out->schema.dictionaries.fields()) {
        if (dictionaries_seen.count(f.id) == 0) {
          return fail(Status::Invalid("no dictionary batch for id ", f.id, " (field '",
                                      DictionaryFieldName(schema, f.path),
                                      "') before the RecordBatch message"));
        }
      }
      target = &out->batch;
      auto layout = BatchLayout(schema);
      if (!layout.ok()) return fail(layout.status());
      target->layout = std::move(*layout);
      have_batch = true;
    } else {
      return fail(Status::Invalid("second Schema message"));
    }
    target->message = std::move(message);
    target->md = std::move(*md);
    Status st = CheckBatch(target->layout, target->md,
                           ipc::MessageTypeName(target->message->type()));
    if (!st.ok()) return fail(st);
    pending = target;
    pending_seq = seq;
  }
  if (!ended) {
    return Status::Invalid("descriptor has no end-of-stream record after ", count,
                           " records");
  }
  if (pos != bytes.size()) {
    return Status::Invalid(bytes.size() - pos, " bytes after the end-of-stream record");
  }
  return Status::OK();
}

Status Parse(std::string_view bytes, const RangeValidator& validator, Parsed* out) {
  Status st = ParseRecords(bytes, validator, out);
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

class Writer {
 public:
  Writer() {
    out_.reserve(1024);
    out_.resize(kHeaderSize);
    std::memcpy(out_.data(), kMagic, sizeof(kMagic));
    Put<uint16_t>(&out_, 6, kVersion);
  }

  void Metadata(const Buffer& flatbuffer) {
    const size_t at = Record(kMetadata, next_seq_++, flatbuffer.size());
    std::memcpy(out_.data() + at, flatbuffer.data(), flatbuffer.size());
  }

  void Body(const std::vector<BufferSpec>& entries) {
    const size_t at = Record(kBody, next_seq_ - 1, kBodyPrefixSize + 16 * entries.size());
    uint64_t total = 0;
    for (const BufferSpec& e : entries) total += static_cast<uint64_t>(e.length);
    Put<uint64_t>(&out_, at, Tag(next_seq_ - 1));
    Put<uint64_t>(&out_, at + 8, total);
    Put<uint64_t>(&out_, at + 16, entries.size());
    size_t p = at + kBodyPrefixSize;
    for (const BufferSpec& e : entries) {
      Put<uint64_t>(&out_, p, static_cast<uint64_t>(e.offset));
      Put<uint64_t>(&out_, p + 8, static_cast<uint64_t>(e.length));
      p += 16;
    }
  }

  Result<std::string> Finish() {
    Record(kEndOfStream, next_seq_, 0);
    if (out_.size() > static_cast<size_t>(kMaxDescriptorSize)) {
      return Status::Invalid("descriptor would be ", out_.size(),
                             " bytes, more than the limit of ", kMaxDescriptorSize);
    }
    if (records_ > kMaxDescriptorRecords) {
      return Status::Invalid("descriptor would have ", records_,
                             " records, more than the limit of ", kMaxDescriptorRecords);
    }
    Put<uint32_t>(&out_, 8, static_cast<uint32_t>(records_));
    Put<uint32_t>(&out_, 12, static_cast<uint32_t>(out_.size()));
    return std::move(out_);
  }

 private:
  // Appends a record header and room for `size` payload bytes (zero padded);
  // returns where the payload goes.
  size_t Record(uint8_t kind, uint32_t seq, size_t size) {
    const size_t at = out_.size();
    out_.resize(at + kRecordHeaderSize + PadTo8(size), '\0');
    out_[at] = static_cast<char>(kind);
    Put<uint32_t>(&out_, at + 4, seq);
    // Oversized payloads are caught in Finish() through the total size.
    Put<uint32_t>(&out_, at + 8,
                  static_cast<uint32_t>(std::min<size_t>(size, UINT32_MAX)));
    ++records_;
    return at + kRecordHeaderSize;
  }

  std::string out_;
  uint32_t next_seq_ = 0;
  int64_t records_ = 0;
};

// Replaces the payload's body offsets by addresses: empty entries and every
// buffer of an empty node become (0, 0) (nothing is referenced; the reader
// supplies empty offsets itself), unaligned buffers are copied to `pool`.
Status Dissociate(const Layout& layout, ipc::BatchPayload* payload, MemoryPool* pool,
                  std::vector<BufferRange>* ranges,
                  std::vector<std::shared_ptr<Buffer>>* keep) {
  BatchMetadata& md = payload->metadata;
  if (md.buffers.size() != layout.buffers.size() ||
      md.nodes.size() != layout.nodes.size() ||
      payload->buffers.size() != md.buffers.size()) {
    return Status::Invalid("batch layout does not match its schema (", md.nodes.size(),
                           " nodes and ", md.buffers.size(), " buffers, expected ",
                           layout.nodes.size(), " and ", layout.buffers.size(), ")");
  }
  for (size_t i = 0; i < md.buffers.size(); ++i) {
    std::shared_ptr<Buffer>& buf = payload->buffers[i];
    if (buf == nullptr || buf->size() == 0 ||
        md.nodes[layout.buffers[i].node].length == 0) {
      md.buffers[i] = BufferSpec{0, 0};
      continue;
    }
    if (reinterpret_cast<uintptr_t>(buf->data()) % 8 != 0) {
      QUIVER_ASSIGN_OR_RAISE(buf, CopyBuffer(buf->data(), buf->size(), pool));
    }
    const auto address = reinterpret_cast<uintptr_t>(buf->data());
    md.buffers[i] = BufferSpec{static_cast<int64_t>(address), buf->size()};
    if (ranges) {
      ranges->push_back(BufferRange{address, static_cast<uint64_t>(buf->size())});
    }
    if (keep) keep->push_back(buf);
  }
  md.body_length = 0;
  return Status::OK();
}

}  // namespace

Result<std::string> EncodeDescriptor(const RecordBatch& batch, MemoryPool* scratch_pool,
                                     std::vector<BufferRange>* ranges_out,
                                     std::vector<std::shared_ptr<Buffer>>* scratch_out) {
  MemoryPool* pool = scratch_pool ? scratch_pool : default_memory_pool();
  NoFreePool no_free(pool);
  // Without scratch_out, new buffers die with this call but their memory
  // stays allocated (see the header).
  MemoryPool* alloc_pool = scratch_out ? pool : &no_free;
  ipc::IpcWriteOptions options;
  options.pool = alloc_pool;
  options.compression = ipc::Compression::kUncompressed;
  options.alignment = 8;
  options.max_nesting_depth = kMaxDescriptorNesting;

  const Schema& schema = *batch.schema();
  if (!schema.is_native_endian()) {
    return Status::NotImplemented(
        "a big-endian batch (read with ensure_native_endian = false) cannot be "
        "published: descriptors are little-endian");
  }
  QUIVER_ASSIGN_OR_RAISE(auto fields,
                         DictionaryFieldMap::Make(schema, kMaxDescriptorNesting));
  std::vector<BufferRange> ranges;
  std::vector<std::shared_ptr<Buffer>> keep;
  auto* keep_ptr = scratch_out ? &keep : nullptr;

  Writer writer;
  QUIVER_ASSIGN_OR_RAISE(auto schema_fb, ipc::EncodeSchema(schema, fields));
  writer.Metadata(*schema_fb);
  for (const ipc::DictionaryField& f : fields.fields()) {
    QUIVER_ASSIGN_OR_RAISE(ArrayDataPtr values, ipc::FindDictionary(batch, f.path));
    QUIVER_ASSIGN_OR_RAISE(auto payload, ipc::AssembleDictionary(values, options));
    QUIVER_ASSIGN_OR_RAISE(Layout layout, DictionaryLayout(schema, f));
    QUIVER_RETURN_NOT_OK(Dissociate(layout, &payload, alloc_pool, &ranges, keep_ptr));
    QUIVER_ASSIGN_OR_RAISE(
        auto fb, ipc::EncodeDictionaryBatch(f.id, /*is_delta=*/false, payload.metadata));
    writer.Metadata(*fb);
    writer.Body(payload.metadata.buffers);
  }
  QUIVER_ASSIGN_OR_RAISE(auto payload, ipc::AssembleRecordBatch(batch, options));
  QUIVER_ASSIGN_OR_RAISE(Layout layout, BatchLayout(schema));
  QUIVER_RETURN_NOT_OK(Dissociate(layout, &payload, alloc_pool, &ranges, keep_ptr));
  QUIVER_ASSIGN_OR_RAISE(auto fb, ipc::EncodeRecordBatch(payload.metadata));
  writer.Metadata(*fb);
  writer.Body(payload.metadata.buffers);
  QUIVER_ASSIGN_OR_RAISE(std::string out, writer.Finish());

  if (ranges_out) {
    ranges_out->insert(ranges_out->end(), ranges.begin(), ranges.end());
  }
  if (scratch_out) {
    scratch_out->insert(scratch_out->end(), keep.begin(), keep.end());
  }
  return out;
}

Result<DescriptorInfo> InspectDescriptor(std::string_view bytes,
                                         const RangeValidator& validator) {
  Parsed parsed;
  QUIVER_RETURN_NOT_OK(Parse(bytes, validator, &parsed));
  DescriptorInfo info;
  info.schema = parsed.schema.schema;
  info.num_rows = parsed.batch.md.length;
  info.ranges = std::move(parsed.ranges);
  return info;
}

Result<RecordBatchPtr> DecodeDescriptor(std::string_view bytes,
                                        const RangeValidator& validator,
                                        std::shared_ptr<const void> keepalive) {
  Parsed parsed;
  QUIVER_RETURN_NOT_OK(Parse(bytes, validator, &parsed));
  const ipc::IpcReadOptions options = ReadOptions();
  // Every entry passed CheckBatch: non-empty ones are 8-byte aligned, so the
  // decoders use these wrappers as they are (no copy).
  ipc::BodyResolver resolver = [&keepalive](
                                   int64_t, int64_t address,
                                   int64_t length) -> Result<std::shared_ptr<Buffer>> {
    if (length == 0) return Buffer::Wrap(ZeroSizeArea(), 0);
    return Buffer::Wrap(reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(address)),
                        length, keepalive);
  };
  ipc::DictionaryMemo memo(parsed.schema.dictionaries);
  for (const ParsedBatch& d : parsed.dictionaries) {
    auto applied = ipc::DecodeDictionaryBatch(*d.message, &memo, resolver, options);
    if (!applied.ok()) return applied.status().WithContext("descriptor");
  }
  auto batch = ipc::DecodeRecordBatch(*parsed.batch.message, parsed.schema.schema, memo,
                                      resolver, options);
  if (!batch.ok()) return batch.status().WithContext("descriptor");
  return batch;
}

}  // namespace quiver::control
