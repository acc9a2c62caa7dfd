// Chunks: one published record batch, as every node's directory holds it,
// and its record: the bytes a node keeps in its own region for each chunk
// that is homed there or uses its memory, so that a restarted daemon knows
// what was published (docs/region-format.md, "Chunk records").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "quiver/util/result.h"

namespace quiver::control {

struct ChunkMeta {
  uint64_t id = 0;         // unique, chosen by its home
  uint32_t home = 0;       // the node keeping it authoritatively (lowest owner)
  uint32_t publisher = 0;  // node of the client that published it
  int32_t publisher_pid = 0;
  uint64_t first_row = 0;
  uint64_t num_rows = 0;
  bool explicit_rows = false;  // a HugeTable chunk, placed by first_row
  bool local_only = false;     // registered on its home only
  std::string name;
  std::string descriptor;        // Arrow Dissociated IPC, absolute addresses
  std::vector<uint32_t> owners;  // nodes whose regions hold its buffers, ascending
  // The publish it came from: one random id shared by every chunk of one
  // Publish call, whatever their homes, and how many chunks that call made.
  // A name whose group has fewer chunks registered is incomplete (a home is
  // down, or a publish or unpublish is under way or failed half-way) and is
  // never read. 0: unknown (a record of version 1), counted as complete.
  uint64_t group = 0;
  uint32_t group_chunks = 0;

  uint64_t end_row() const { return first_row + num_rows; }
};

// Why the chunks of one name do not make whole publishes ("" when they do):
// some group has fewer chunks than its publish made, e.g. "2 of 3 chunks of
// the publish by node 1 at row 0". The one rule readers and listings use.
std::string IncompleteGroups(const std::vector<ChunkMeta>& chunks);

// Largest table name, in bytes; names are UTF-8 without control characters.
constexpr size_t kMaxTableName = 256;
// Invalid, naming what is wrong, unless `name` is a usable table name.
Status CheckTableName(std::string_view name);

// The record of a chunk: magic "QVCHUNK1", version, the fields above, a
// 64-bit checksum (layout in docs/region-format.md).
std::string EncodeChunkRecord(const ChunkMeta& chunk);
// Checks magic, version, every length against the bytes, the name, and the
// checksum; never reads outside `bytes`.
Result<ChunkMeta> DecodeChunkRecord(std::string_view bytes);
// The checksum region records end with (64-bit FNV-1a of what precedes it).
uint64_t Fnv1a(std::string_view bytes);
// Whether `bytes` start with the chunk record's magic (a record with
// another magic belongs to someone else).
bool IsChunkRecord(std::string_view bytes);

}  // namespace quiver::control
