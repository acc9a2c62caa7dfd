// The record a home keeps in its region for each sealed object, so that a
// daemon restarted on the region finds its objects again (docs/store.md,
// "Across the cluster"; docs/region-format.md has the chunk records beside
// which these live).
//
//   u64 magic "QVSTORE1" | u32 version (1) | u32 0 | 20-byte id |
//   u64 address | u64 data_size | u64 metadata_size | u64 FNV-1a of the above
//
// little-endian, 68 bytes. The decoder checks everything and never reads
// outside its input: a region's bytes are not trusted after a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "quiver/store/object_id.h"
#include "quiver/util/result.h"

namespace quiver::store {

struct StoreRecord {
  ObjectId id;
  uint64_t address = 0;  // 0: spilled (the object is in the spill directory)
  uint64_t data_size = 0, metadata_size = 0;
};

constexpr size_t kStoreRecordSize = 68;

std::string EncodeStoreRecord(const StoreRecord& record);
// Whether `bytes` start with the store record's magic.
bool IsStoreRecord(std::string_view bytes);
// Invalid, naming what is wrong, unless `bytes` are exactly one record.
Result<StoreRecord> DecodeStoreRecord(std::string_view bytes);

}  // namespace quiver::store
