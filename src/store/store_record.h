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
//
// Also the packed forms a batched Get travels in (proto/quiver/store.proto):
// the ids asked back to back, 20 bytes each; each object found as its id
// and u64 address, data_size, metadata_size, little-endian, 44 bytes. A
// thousand ids cost one string, not a thousand.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

constexpr size_t kFoundRecordSize = ObjectId::kSize + 3 * sizeof(uint64_t);

std::string EncodePackedIds(const std::vector<ObjectId>& ids);
// Invalid, naming what is wrong (a length not a multiple of 20, the nil id
// at position k), unless `bytes` are ids back to back.
Result<std::vector<ObjectId>> DecodePackedIds(std::string_view bytes);
void AppendFoundRecord(std::string* out, const StoreRecord& record);
// Invalid unless `bytes` are whole found records with non-nil ids and sizes
// that do not overflow.
Result<std::vector<StoreRecord>> DecodeFoundRecords(std::string_view bytes);

}  // namespace quiver::store
