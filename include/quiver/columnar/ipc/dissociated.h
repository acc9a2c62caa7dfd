// Arrow's Dissociated IPC protocol (apache/arrow
// docs/source/format/DissociatedIPC.rst): the IPC metadata of a stream and
// the bodies of its batches travel apart, so that a body can stay where it
// is (shared memory, memory a network card reads) and only its addresses
// travel. Namespace quiver::ipc::dissociated.
//
// Two kinds of message, both untrusted when read:
//
//   metadata stream   untagged; a 5-byte prefix (kind, then the sequence
//                     number, u32 little-endian) and a Message flatbuffer.
//                     Sequence 0 is the Schema; each message adds 1; the
//                     end of stream is exactly the 5-byte prefix of kind 0.
//   data stream       one tagged message per body (record and dictionary
//                     batches). The tag is a u64: the sequence number in
//                     bits 0-31, the body type in bits 56-63, bits 32-55
//                     zero. Body type 0 is the packed IPC body; type 1 is
//                     (total bytes, buffer count) followed by one (address,
//                     length) pair per buffer entry of the header, u64
//                     little-endian each.
//
// A consumer releases type-1 bodies with `free_data` messages: one or more
// u64 addresses. `want_data` (the opening request) carries an opaque
// identifier; its tag, like free_data's, is agreed out of band.
//
// StreamWriter turns record batches into these messages (dictionaries and
// dictionary deltas first, as the IPC stream format orders them);
// StreamReader takes them back in any arrival order and gives the batches
// in sequence order, zero-copy over the bodies it is handed or resolves.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quiver/columnar/ipc/message.h"
#include "quiver/columnar/ipc/options.h"
#include "quiver/columnar/record_batch.h"

namespace quiver::ipc::dissociated {

constexpr size_t kPrefixSize = 5;

enum class MetadataKind : uint8_t { kEndOfStream = 0, kMetadata = 1 };
enum class BodyType : uint8_t { kPacked = 0, kAddresses = 1 };

// The mask a consumer matches body tags with (the sequence number only).
constexpr uint64_t kSequenceMask = 0xFFFFFFFFULL;

// ---------------------------------------------------------------------------
// The messages, one by one.

std::string EncodeMetadataMessage(uint32_t sequence, std::string_view flatbuffer);
std::string EncodeEndOfStream(uint32_t sequence);

struct MetadataMessage {
  MetadataKind kind = MetadataKind::kEndOfStream;
  uint32_t sequence = 0;
  std::string_view flatbuffer;  // into the decoded bytes; empty at the end
};
// Invalid, naming what is wrong, for fewer than 5 bytes, an unknown kind,
// an end of stream that is not exactly 5 bytes or metadata with no bytes.
Result<MetadataMessage> DecodeMetadataMessage(std::string_view bytes);

uint64_t MakeTag(uint32_t sequence, BodyType type);
struct Tag {
  uint32_t sequence = 0;
  BodyType type = BodyType::kPacked;
};
// Invalid for reserved bits set or an unknown body type.
Result<Tag> DecodeTag(uint64_t tag);

// One buffer of a type-1 body: where it is and how long.
struct AddressRange {
  uint64_t address = 0;
  uint64_t length = 0;
};
std::string EncodeAddressList(const std::vector<AddressRange>& buffers);
// Invalid unless the size is exactly 16 + 16 x count, count is at most
// `max_buffers`, and the total is the sum of the lengths (no overflow).
Result<std::vector<AddressRange>> DecodeAddressList(std::string_view bytes,
                                                    uint64_t max_buffers = 1 << 20);

std::string EncodeFreeData(const std::vector<uint64_t>& addresses);
// Invalid unless one or more whole u64.
Result<std::vector<uint64_t>> DecodeFreeData(std::string_view bytes);

// ---------------------------------------------------------------------------
// Streams of batches.

// One message to send. `metadata` always; a body when `tagged`, with the
// buffers it refers to (type 1) or was packed from (type 0), which the
// sender keeps alive until the consumer frees them.
struct Outgoing {
  std::string metadata;
  bool tagged = false;
  uint64_t tag = 0;
  std::string body;
  // A type-0 body sent in place (BodyChoice::block): these bytes of memory
  // the sender keeps, instead of `body`.
  std::string_view in_place;
  std::vector<std::shared_ptr<Buffer>> buffers;

  std::string_view body_bytes() const { return in_place.data() ? in_place : body; }
};

// How one body goes out, chosen message by message (the protocol allows
// either type for any body).
struct BodyChoice {
  BodyType type = BodyType::kPacked;
  // Type 0 only: a block of memory holding every buffer of the body (as when
  // the batch was built in it). The block itself is then the body, with
  // offsets from its start: no packing copy. Null: pack as usual.
  const uint8_t* block = nullptr;
  uint64_t block_size = 0;
};
using BodyChooser = std::function<BodyChoice(const BatchPayload& payload)>;

class StreamWriter {
 public:
  // Type-1 bodies give each buffer's address in this process; the memory
  // must be readable where the consumer resolves it (shared memory, memory
  // registered with the transport).
  static Result<std::unique_ptr<StreamWriter>> Make(
      SchemaPtr schema, BodyType type,
      const IpcWriteOptions& options = IpcWriteOptions::Defaults());

  // The Schema message (sequence 0). Call once, first.
  Result<Outgoing> Begin();
  // The dictionary batches `batch` needs (deltas where a dictionary grew),
  // then the batch itself. Zero-row batches are messages too.
  Result<std::vector<Outgoing>> Write(const RecordBatch& batch);
  // The end of stream. Nothing may be written after it.
  Result<Outgoing> End();

  uint32_t next_sequence() const { return next_; }
  // Chooses each later body's type (and in-place block) instead of the
  // type given to Make.
  void set_body_chooser(BodyChooser chooser) { chooser_ = std::move(chooser); }

 private:
  StreamWriter(SchemaPtr schema, BodyType type, IpcWriteOptions options,
               DictionaryWriteTracker tracker)
      : schema_(std::move(schema)),
        type_(type),
        options_(options),
        tracker_(std::move(tracker)) {}
  // `reencode` encodes the header again for offsets changed in place.
  Result<Outgoing> Batch(
      const Buffer& flatbuffer, BatchPayload payload,
      const std::function<Result<std::shared_ptr<Buffer>>(const BatchMetadata&)>&
          reencode);

  SchemaPtr schema_;
  BodyType type_;
  IpcWriteOptions options_;
  DictionaryWriteTracker tracker_;
  BodyChooser chooser_;
  uint32_t next_ = 0;
  bool begun_ = false, ended_ = false;
};

class StreamReader {
 public:
  // Turns a type-1 buffer into bytes readable here (a mapped region, a
  // buffer the transport read into); must check the range. Without one,
  // type-1 bodies are refused.
  using AddressResolver =
      std::function<Result<std::shared_ptr<Buffer>>(uint64_t address, uint64_t length)>;

  struct Limits {
    // Messages and bodies held waiting for their turn: more is an error
    // (a peer cannot make the reader hold unbounded memory).
    size_t max_pending = 4096;
    uint64_t max_buffers = 1 << 20;  // per type-1 body
  };

  explicit StreamReader(AddressResolver resolver = nullptr,
                        const IpcReadOptions& options = IpcReadOptions::Defaults())
      : StreamReader(std::move(resolver), options, Limits()) {}
  StreamReader(AddressResolver resolver, const IpcReadOptions& options, Limits limits)
      : resolver_(std::move(resolver)), options_(options), limits_(limits) {}

  // Either stream, in any order; a sequence number seen twice, a body whose
  // message is not a batch, or anything after the end is an error.
  Status OnMetadata(std::string_view message);
  Status OnBody(uint64_t tag, std::shared_ptr<Buffer> body);

  // The next record batch in sequence order once its metadata and body are
  // here (dictionary messages before it are applied on the way); nullopt
  // when the next one has not arrived yet.
  Result<std::optional<RecordBatchPtr>> Next();
  // The schema, once sequence 0 arrived and was read by Next().
  const SchemaPtr& schema() const { return schema_; }
  // End of stream seen and every message before it consumed.
  bool finished() const;
  // The type-1 addresses of every body consumed so far, for free_data once
  // the batches are no longer needed; taking them empties the list.
  std::vector<uint64_t> TakeAddressesToFree();

 private:
  Status Pending() const;

  AddressResolver resolver_;
  IpcReadOptions options_;
  Limits limits_;
  // By sequence, not yet consumed: each flatbuffer copied once, aligned.
  std::map<uint32_t, std::shared_ptr<Buffer>> metadata_;
  std::map<uint32_t, std::pair<BodyType, std::shared_ptr<Buffer>>> bodies_;
  std::optional<uint32_t> end_;
  uint32_t next_ = 0;
  SchemaPtr schema_;
  Endianness wire_endianness_ = Endianness::kLittle;  // of the bodies
  std::unique_ptr<DictionaryMemo> memo_;
  std::vector<uint64_t> to_free_;
};

}  // namespace quiver::ipc::dissociated
