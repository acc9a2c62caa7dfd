// Descriptors: a record batch as its Arrow IPC metadata plus the (address,
// length) of every buffer, in Arrow's Dissociated IPC form
// (namespace quiver::control).
//
// Every node's region is mapped at the same address in every process of a
// cluster, so a batch whose buffers live in cluster memory travels between
// nodes as a descriptor of a few hundred bytes: the Schema message, the
// DictionaryBatch messages its dictionary-encoded fields need, the
// RecordBatch message, and for each batch message a body of type 1 (the
// list of (address, length) pairs of the Dissociated IPC protocol) instead
// of packed body bytes. docs/descriptor.md specifies the bytes.
//
// EncodeDescriptor never copies data except where the IPC layout demands new
// buffers (bitmaps and offsets of sliced arrays, buffers that do not start on
// an 8-byte boundary); those come from `scratch_pool`. InspectDescriptor
// checks a descriptor without touching the memory it references;
// DecodeDescriptor rebuilds the batch zero-copy. Both treat the bytes as
// untrusted: malformed input is an error naming what is wrong, never a crash
// and never a read outside `bytes`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "quiver/columnar/memory_pool.h"
#include "quiver/columnar/record_batch.h"
#include "quiver/util/result.h"

namespace quiver::control {

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

// The descriptor of `batch`: magic, version, then the Schema message, one
// DictionaryBatch message per dictionary-encoded field (nested ones
// included, inner dictionaries first), the RecordBatch message, each batch
// message followed by its address-list body, and an end-of-stream record.
// Buffer entries carry absolute addresses; no compression is ever applied.
//
// Buffers the IPC layout requires anew (re-packed bitmaps and re-based
// offsets of sliced arrays, copies of buffers not 8-byte aligned) are
// allocated from `scratch_pool` (null: the default pool), so with a cluster
// memory pool they too live in cluster memory. They are handed to
// `scratch_out` when it is given, and the caller keeps them alive as long as
// the descriptor is in use. When `scratch_out` is null they are deliberately
// never freed: they belong to the descriptor, and whoever retires it frees
// them by address (they are among `ranges_out`).
//
// `ranges_out` (if given) receives every non-empty range the descriptor
// references, in the order of its buffer entries: the caller seals and
// flushes them before publishing.
Result<std::string> EncodeDescriptor(
    const RecordBatch& batch, MemoryPool* scratch_pool,
    std::vector<BufferRange>* ranges_out = nullptr,
    std::vector<std::shared_ptr<Buffer>>* scratch_out = nullptr);

// Decides whether a range may be referenced (for the daemon: inside a mapped
// region and inside one live sealed allocation). Called once per non-empty
// buffer entry; its error is returned with the buffer named.
using RangeValidator = std::function<Status(uint64_t address, uint64_t length)>;

struct DescriptorInfo {
  SchemaPtr schema;
  int64_t num_rows = 0;
  std::vector<BufferRange> ranges;  // every non-empty range, in entry order
};

// Parses and checks a descriptor without reading any memory it references:
// framing, record order and sequence numbers, flatbuffers (verified), the
// schema, node and buffer counts against the schema, each body list against
// its header, every buffer's length against what its type and the field
// node's length require, alignment (8 bytes) and overflow of every range;
// then `validator` on every non-empty range. Errors name the field path,
// the buffer and its address in hex.
Result<DescriptorInfo> InspectDescriptor(std::string_view bytes,
                                         const RangeValidator& validator);

// InspectDescriptor, then the batch itself: every buffer (dictionaries
// included) is Buffer::Wrap(address, length, keepalive), so data() of each
// decoded buffer is the address in the descriptor. Runs Validate() (O(1) per
// buffer), not ValidateFull(): the caller decides whether to pay for that.
Result<RecordBatchPtr> DecodeDescriptor(std::string_view bytes,
                                        const RangeValidator& validator,
                                        std::shared_ptr<const void> keepalive);

}  // namespace quiver::control
