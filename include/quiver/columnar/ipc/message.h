// The building blocks of Arrow IPC: metadata messages, batch payloads and
// dictionaries, separate from how bytes are framed (namespace quiver::ipc).
//
// An IPC message is a Message flatbuffer (Schema, DictionaryBatch or
// RecordBatch header) plus, for batches, a body of buffers that the header
// locates with (offset, length) entries. The stream and file formats pack the
// body right after the metadata; Quiver's cluster descriptors use Arrow's
// dissociated form instead, where each entry is an absolute address resolved
// elsewhere. Both are built from the pieces below:
//
//   writing:  DictionaryFieldMap::Make(schema) assigns dictionary ids;
//             EncodeSchema() gives the Schema message;
//             DictionaryWriteTracker says which dictionary batches to send;
//             AssembleRecordBatch()/AssembleDictionary() gather the buffers
//             of a batch (zero-copy where the format allows) and
//             EncodeRecordBatch()/EncodeDictionaryBatch() encode the header
//             for any list of (offset, length) entries.
//   reading:  Message::Open() verifies a flatbuffer; DecodeSchema() gives the
//             schema and its DictionaryFieldMap; DecodeDictionaryBatch() and
//             DecodeRecordBatch() rebuild arrays from a BodyResolver that
//             turns each buffer entry into a Buffer.
//
// Everything here is a pure function or a single-threaded object; decoded
// batches are immutable and may be shared between threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "quiver/columnar/ipc/options.h"
#include "quiver/columnar/record_batch.h"

namespace quiver::ipc {

enum class MessageType : int8_t { kSchema, kDictionaryBatch, kRecordBatch };
const char* MessageTypeName(MessageType type);  // "Schema", "DictionaryBatch", ...

// Length and null count of one array of a batch (Arrow's FieldNode).
struct FieldNode {
  int64_t length = 0;
  int64_t null_count = 0;
};

// Location of one body buffer (Arrow's Buffer struct): relative to the body in
// the packed formats, an absolute address in dissociated descriptors.
struct BufferSpec {
  int64_t offset = 0;
  int64_t length = 0;
};

// Everything in a RecordBatch header: rows, field nodes in depth-first
// pre-order, buffer entries in the same order, body compression and the
// message's body length (0 when the body is dissociated).
struct BatchMetadata {
  int64_t length = 0;
  std::vector<FieldNode> nodes;
  std::vector<BufferSpec> buffers;
  // One per binary_view / string_view field, depth-first: how many data
  // buffers follow its views buffer.
  std::vector<int64_t> variadic_buffer_counts;
  Compression compression = Compression::kUncompressed;
  int64_t body_length = 0;
  // The message's metadata version: in V4 a union has a (validity) buffer
  // entry before its type ids, in V5 none.
  MetadataVersion version = MetadataVersion::kV5;
};

// ---------------------------------------------------------------------------
// Dictionaries

// One dictionary-encoded field: its id, where it sits and its type.
// `path` is [column index, child index, ...]; below a dictionary-encoded
// field, child indices refer to the children of its value type.
struct DictionaryField {
  int64_t id = 0;
  std::vector<int> path;
  TypePtr type;  // the dictionary type (index type and value type)
};

// The dictionary-encoded fields of a schema and their ids.
class DictionaryFieldMap {
 public:
  // Assigns ids 0, 1, ... in depth-first pre-order of the schema's fields, the
  // way writers number dictionaries. Fails for a dictionary whose value type
  // is itself a dictionary (IPC cannot express it) or nesting beyond
  // `max_depth`.
  static Result<DictionaryFieldMap> Make(const Schema& schema, int max_depth = 64);

  // Records a field with an id chosen elsewhere (a decoded schema); fails if
  // the path is already present. Several fields may share an id (one
  // dictionary, as the columnar format allows) if their value types are
  // equal; FindById then gives the first of them.
  Status Add(DictionaryField field);

  int64_t size() const { return static_cast<int64_t>(fields_.size()); }
  bool empty() const { return fields_.empty(); }
  // Fields in the order their dictionaries must be sent: a dictionary used
  // inside another dictionary's values comes before that dictionary.
  const std::vector<DictionaryField>& fields() const { return fields_; }
  // Null if `id` is unknown.
  const DictionaryField* FindById(int64_t id) const;
  // The id of the dictionary-encoded field at `path`, or KeyError.
  Result<int64_t> IdForPath(const std::vector<int>& path) const;

 private:
  std::vector<DictionaryField> fields_;
  std::map<int64_t, size_t> by_id_;
  std::map<std::vector<int>, int64_t> by_path_;
};

// What a dictionary batch did to the dictionary of its id.
enum class DictionaryUpdate : int8_t { kNew, kDelta, kReplacement };
const char* DictionaryUpdateName(DictionaryUpdate update);

// The current dictionary of every id, as a reader sees them. Not thread-safe.
class DictionaryMemo {
 public:
  DictionaryMemo() = default;
  explicit DictionaryMemo(DictionaryFieldMap fields) : fields_(std::move(fields)) {}

  const DictionaryFieldMap& fields() const { return fields_; }
  bool HasDictionary(int64_t id) const { return values_.count(id) != 0; }
  // The current values of dictionary `id`; KeyError if none arrived yet.
  Result<ArrayDataPtr> GetDictionary(int64_t id) const;
  // Applies one dictionary batch: a delta is appended (a copy into `pool`,
  // null meaning the default pool), anything else replaces. A delta for an
  // id that has no dictionary yet is an error. `endianness` is the byte
  // order of `values` and of the dictionary held (big-endian ones are
  // appended through little-endian copies).
  Result<DictionaryUpdate> Apply(int64_t id, bool is_delta, ArrayDataPtr values,
                                 MemoryPool* pool,
                                 Endianness endianness = Endianness::kLittle);

 private:
  DictionaryFieldMap fields_;
  std::map<int64_t, ArrayDataPtr> values_;
};

// Decides, batch after batch, which dictionary batches a writer sends.
// Not thread-safe.
class DictionaryWriteTracker {
 public:
  struct Send {
    int64_t id = 0;
    ArrayDataPtr values;  // all values, or only the new ones of a delta
    bool is_delta = false;
    bool is_replacement = false;
    Endianness endianness = Endianness::kLittle;  // the batch schema's
  };

  // `allow_replacement` false (the file format) makes a changed dictionary
  // an error; `emit_deltas` false sends grown dictionaries in full.
  DictionaryWriteTracker(DictionaryFieldMap fields, bool emit_deltas,
                         bool allow_replacement)
      : fields_(std::move(fields)),
        emit_deltas_(emit_deltas),
        allow_replacement_(allow_replacement) {}

  const DictionaryFieldMap& fields() const { return fields_; }
  // The dictionary batches to send before `batch`, in sending order; empty
  // when every dictionary equals the one sent last. Comparison is by
  // identity first, then by value (of little-endian copies for a batch whose
  // schema is big-endian).
  Result<std::vector<Send>> Collect(const RecordBatch& batch);

 private:
  DictionaryFieldMap fields_;
  bool emit_deltas_;
  bool allow_replacement_;
  std::map<int64_t, ArrayDataPtr> sent_;
};

// The dictionary values of the dictionary-encoded array at `path` in `batch`
// (see DictionaryField::path); Invalid if the path does not lead to one.
Result<ArrayDataPtr> FindDictionary(const RecordBatch& batch,
                                    const std::vector<int>& path);

// ---------------------------------------------------------------------------
// Encoding

// A Message flatbuffer (no framing) with a Schema header. `dictionaries`
// gives the id of every dictionary-encoded field (DictionaryFieldMap::Make).
Result<std::shared_ptr<Buffer>> EncodeSchema(const Schema& schema,
                                             const DictionaryFieldMap& dictionaries,
                                             MemoryPool* pool = nullptr);
// A Message flatbuffer with a RecordBatch header.
Result<std::shared_ptr<Buffer>> EncodeRecordBatch(const BatchMetadata& metadata,
                                                  MemoryPool* pool = nullptr);
// A Message flatbuffer with a DictionaryBatch header.
Result<std::shared_ptr<Buffer>> EncodeDictionaryBatch(int64_t id, bool is_delta,
                                                      const BatchMetadata& metadata,
                                                      MemoryPool* pool = nullptr);

// The body of one batch ready to write: metadata whose buffer entries are
// offsets into a packed body (each aligned to options.alignment), and the
// buffers themselves (null for an empty entry). Uncompressed buffers of
// unsliced arrays are the arrays' own memory (zero-copy slices); only sliced
// bitmaps, re-based offsets and compressed buffers are new, from
// options.pool. A dissociated writer keeps `buffers` and replaces the offsets
// with their addresses.
struct BatchPayload {
  BatchMetadata metadata;
  std::vector<std::shared_ptr<Buffer>> buffers;
};

Result<BatchPayload> AssembleRecordBatch(const RecordBatch& batch,
                                         const IpcWriteOptions& options);
// The one-column batch of a dictionary batch message; `endianness` is the
// byte order of `values` (that of the schema it belongs to).
Result<BatchPayload> AssembleDictionary(const ArrayDataPtr& values,
                                        const IpcWriteOptions& options,
                                        Endianness endianness = Endianness::kLittle);

// A batch message ready to frame or send: its Message flatbuffer (offsets
// into a packed body) and its payload.
struct EncodedBatch {
  std::shared_ptr<Buffer> metadata;
  BatchPayload payload;
};
// Assemble and encode in one step: a record batch, or one dictionary batch a
// DictionaryWriteTracker chose to send.
Result<EncodedBatch> EncodeRecordBatchMessage(const RecordBatch& batch,
                                              const IpcWriteOptions& options);
Result<EncodedBatch> EncodeDictionaryMessage(const DictionaryWriteTracker::Send& send,
                                             const IpcWriteOptions& options);

// ---------------------------------------------------------------------------
// Decoding

// A verified Message flatbuffer and the body that goes with it.
class Message {
 public:
  // Verifies `metadata` (flatbuffer bytes without framing; copied to aligned
  // memory first if its address is not 8-byte aligned) with the flatbuffers
  // Verifier and the limits of `options`, and checks the version and header
  // type. `body` may be null (dissociated bodies, schema messages).
  static Result<std::shared_ptr<Message>> Open(std::shared_ptr<Buffer> metadata,
                                               std::shared_ptr<Buffer> body,
                                               const IpcReadOptions& options = {});

  // Attaches the body once its place is known (stream readers learn the body
  // length from the header). Fails if it is shorter than body_length(). Call
  // before the message is shared.
  Status SetBody(std::shared_ptr<Buffer> body);

  MessageType type() const { return type_; }
  MetadataVersion version() const { return version_; }
  // The body length the header declares.
  int64_t body_length() const { return body_length_; }
  const std::shared_ptr<Buffer>& metadata() const { return metadata_; }
  const std::shared_ptr<Buffer>& body() const { return body_; }
  // Message-level custom metadata (null if none).
  MetadataPtr custom_metadata() const;

  // Rows, nodes, buffer entries and compression of a RecordBatch or
  // DictionaryBatch message, checked for sign errors but not against a
  // schema. Invalid for a Schema message.
  Result<BatchMetadata> batch_metadata() const;
  // DictionaryBatch only: the id and the delta flag.
  int64_t dictionary_id() const { return dictionary_id_; }
  bool is_delta() const { return is_delta_; }

  // The verified flatbuffer (a quiver::flatbuf::Message), for the decoders.
  const void* flatbuffer() const { return flatbuffer_; }

 private:
  Message() = default;

  std::shared_ptr<Buffer> metadata_;
  std::shared_ptr<Buffer> body_;
  const void* flatbuffer_ = nullptr;
  MessageType type_ = MessageType::kSchema;
  MetadataVersion version_ = MetadataVersion::kV5;
  int64_t body_length_ = 0;
  int64_t dictionary_id_ = 0;
  bool is_delta_ = false;
};

// A decoded Schema message. `schema` says big-endian only if the message
// did and options.ensure_native_endian was false; `wire_endianness` is what
// the message said, to pass to the batch decoders.
struct DecodedSchema {
  SchemaPtr schema;
  DictionaryFieldMap dictionaries;
  Endianness wire_endianness = Endianness::kLittle;
};
Result<DecodedSchema> DecodeSchema(const Message& message,
                                   const IpcReadOptions& options = {});

// Turns buffer entry `index` of a batch message, (offset, length) as the
// header states them, into the bytes. Must check the range itself.
using BodyResolver = std::function<Result<std::shared_ptr<Buffer>>(
    int64_t index, int64_t offset, int64_t length)>;

// The resolver of packed bodies: zero-copy slices of `body`, with an error
// naming the entry when it does not fit.
BodyResolver PackedBodyResolver(std::shared_ptr<Buffer> body);

// Rebuilds a record batch of `schema`. Node and buffer counts must match the
// schema; every size is checked before use; dictionaries come from `memo`.
// Buffers are the resolver's (zero-copy) unless decompressed or misaligned.
// Runs Validate() (and ValidateFull() with options.validate_full).
// `wire_endianness` is the byte order of the body (DecodedSchema's): a
// big-endian body is byte-swapped to little-endian when
// options.ensure_native_endian (`schema` should then say little-endian), and
// otherwise kept as it is, after the same checks on a swapped copy.
Result<RecordBatchPtr> DecodeRecordBatch(
    const Message& message, const SchemaPtr& schema, const DictionaryMemo& memo,
    const BodyResolver& resolver, const IpcReadOptions& options = {},
    Endianness wire_endianness = Endianness::kLittle);

// Decodes a DictionaryBatch message and applies it to `memo` (byte order as
// for DecodeRecordBatch; `memo` holds the dictionaries in the order the
// batches will have).
Result<DictionaryUpdate> DecodeDictionaryBatch(
    const Message& message, DictionaryMemo* memo, const BodyResolver& resolver,
    const IpcReadOptions& options = {}, Endianness wire_endianness = Endianness::kLittle);

}  // namespace quiver::ipc
