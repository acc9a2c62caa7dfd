// Descriptors: record batches as the messages of Arrow's Dissociated IPC
// protocol (apache/arrow docs/source/format/DissociatedIPC.rst), framed in
// one byte string (namespace quiver::ipc).
//
// Every node's region is mapped at the same address in every process of a
// Quiver cluster, so a batch whose buffers live in cluster memory travels
// between nodes as a descriptor of a few hundred bytes: the metadata stream
// (Schema, DictionaryBatch and RecordBatch messages with their 5-byte
// prefixes, then the 5-byte end of stream) with each batch message's tagged
// body right after it. Bodies are of type 1 (the (address, length) list of
// every buffer) when the data stays where it is, or of type 0 (the packed
// IPC body, inline) when the writer asks. docs/descriptor.md specifies the
// framing and relates it to the protocol section by section.
//
// EncodeDescriptor never copies data except where the IPC layout demands new
// buffers (bitmaps and offsets of sliced arrays, buffers that do not start on
// an 8-byte boundary); those come from the scratch pool. InspectDescriptor
// checks a descriptor without touching the memory it references;
// DecodeDescriptor rebuilds the batches zero-copy. Both treat the bytes as
// untrusted: malformed input is an error naming what is wrong, never a crash
// and never a read outside `bytes`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "quiver/columnar/ipc/dissociated.h"
#include "quiver/columnar/memory_pool.h"
#include "quiver/columnar/record_batch.h"
#include "quiver/util/result.h"

namespace quiver::ipc {

// One buffer a descriptor references: `length` bytes at absolute `address`.
struct BufferRange {
  uint64_t address = 0;
  uint64_t length = 0;

  bool operator==(const BufferRange&) const = default;
};

// Sanity limits a descriptor must respect (checked on both sides).
inline constexpr int64_t kMaxDescriptorSize = int64_t{16} << 20;  // bytes
inline constexpr int64_t kMaxDescriptorRecords = 4096;     // messages + bodies + end
inline constexpr int64_t kMaxDescriptorBuffers = 1 << 20;  // over all messages
inline constexpr int kMaxDescriptorNesting = 64;           // type nesting depth

struct DescriptorWriteOptions {
  // Buffers the IPC layout requires anew (re-packed bitmaps and re-based
  // offsets of sliced arrays, copies of buffers not 8-byte aligned) come
  // from here (null: the default pool); with a cluster memory pool they too
  // live in cluster memory.
  MemoryPool* scratch_pool = nullptr;
  // kAddresses: type-1 bodies referencing the buffers where they are.
  // kPacked: type-0 bodies, the packed IPC body bytes inside the descriptor
  // (a copy; nothing is referenced, so no ranges are reported).
  dissociated::BodyType body_type = dissociated::BodyType::kAddresses;
  // A dictionary that grew between batches of a stream is sent as a delta
  // (only the new values); otherwise in full again.
  bool emit_dictionary_deltas = true;
};

// The descriptor of a stream of batches of `schema`: the Schema message,
// then per batch the dictionaries it needs that were not sent yet (nested
// ones included, inner dictionaries first; deltas where one grew), then the
// RecordBatch message, each batch message followed by its body; then the end
// of stream. No compression is ever applied.
//
// Scratch buffers are handed to `scratch_out` when it is given, and the
// caller keeps them alive as long as the descriptor is in use. When
// `scratch_out` is null they are deliberately never freed: they belong to
// the descriptor, and whoever retires it frees them by address (they are
// among `ranges_out`).
//
// `ranges_out` (if given) receives every non-empty range the type-1 bodies
// reference, in the order of their buffer entries: the caller seals and
// flushes them before publishing.
Result<std::string> EncodeDescriptor(
    const SchemaPtr& schema, const std::vector<RecordBatchPtr>& batches,
    const DescriptorWriteOptions& options, std::vector<BufferRange>* ranges_out = nullptr,
    std::vector<std::shared_ptr<Buffer>>* scratch_out = nullptr);

// One batch, type-1 bodies, scratch from `scratch_pool`.
Result<std::string> EncodeDescriptor(
    const RecordBatch& batch, MemoryPool* scratch_pool,
    std::vector<BufferRange>* ranges_out = nullptr,
    std::vector<std::shared_ptr<Buffer>>* scratch_out = nullptr);

// Decides whether a range may be referenced (for the daemon: inside a mapped
// region and inside one live sealed allocation). Called once per non-empty
// buffer of a type-1 body; its error is returned with the buffer named.
using RangeValidator = std::function<Status(uint64_t address, uint64_t length)>;

struct DescriptorInfo {
  SchemaPtr schema;
  int64_t num_rows = 0;             // over all record batches
  std::vector<int64_t> batch_rows;  // per record batch, in order
  std::vector<BufferRange> ranges;  // every non-empty referenced range, in entry order
};

// Parses and checks a descriptor without reading any memory it references:
// framing, message order and sequence numbers, tags, flatbuffers
// (verified), the schema, node and buffer counts against the schema, each
// body against its header, every buffer's length against what its type and
// the field node's length require, alignment (8 bytes) and overflow of
// every range; then `validator` on every non-empty referenced range. Errors
// name the field path, the buffer and its address in hex.
Result<DescriptorInfo> InspectDescriptor(std::string_view bytes,
                                         const RangeValidator& validator);

// InspectDescriptor, then the batches themselves: every referenced buffer
// (dictionaries included) is Buffer::Wrap(address, length, keepalive), so
// data() of each decoded buffer is the address in the descriptor. Type-0
// bodies are copied out of `bytes` (which need not outlive the call), and a
// dictionary delta is concatenated with what it extends, as every IPC
// reader does. Runs Validate() (O(1) per buffer), not ValidateFull(): the
// caller decides whether to pay for that.
Result<std::vector<RecordBatchPtr>> DecodeDescriptorBatches(
    std::string_view bytes, const RangeValidator& validator,
    std::shared_ptr<const void> keepalive);

// The same for a descriptor of exactly one record batch (an error naming the
// count otherwise).
Result<RecordBatchPtr> DecodeDescriptor(std::string_view bytes,
                                        const RangeValidator& validator,
                                        std::shared_ptr<const void> keepalive);

}  // namespace quiver::ipc
