// What the catalogue keeps of an object in the region itself: the
// allocator's 64-bit per-allocation tag (RegionAllocator::UpdateTag), written
// under the allocator's lock, so it survives a daemon's crash and restart
// (docs/region-format.md, "Object tags"):
//   bits  0-15  creator node + 1 (0: made by the daemon itself)
//   bits 16-31  pins (saturating count; after a restart only "some" matters)
//   bit  62     record: a chunk record of the catalogue, not an object
//   bit  63     sealed: immutable from now on
// Sessions, publications and pin handles are not in the region: sessions
// end with their connections, and publications are rebuilt from records.
#pragma once

#include <cstdint>

namespace quiver::control::tag {

constexpr uint64_t kNodeMask = 0xFFFFULL;
constexpr int kPinShift = 16;
constexpr uint64_t kPinMax = 0xFFFFULL;
constexpr uint64_t kRecord = 1ULL << 62;
constexpr uint64_t kSealed = 1ULL << 63;
// Creator value for what the daemon makes for itself (records).
constexpr uint32_t kNoNode = 0xFFFFFFFFu;

inline uint64_t Make(uint32_t creator_node) {
  return creator_node == kNoNode ? 0
                                 : (static_cast<uint64_t>(creator_node) + 1) & kNodeMask;
}
inline uint32_t Creator(uint64_t t) {
  return (t & kNodeMask) == 0 ? kNoNode : static_cast<uint32_t>((t & kNodeMask) - 1);
}
inline uint64_t Pins(uint64_t t) { return (t >> kPinShift) & kPinMax; }
inline uint64_t WithPins(uint64_t t, uint64_t n) {
  if (n > kPinMax) n = kPinMax;
  return (t & ~(kPinMax << kPinShift)) | (n << kPinShift);
}
inline bool Sealed(uint64_t t) { return (t & kSealed) != 0; }
inline bool Record(uint64_t t) { return (t & kRecord) != 0; }

}  // namespace quiver::control::tag
