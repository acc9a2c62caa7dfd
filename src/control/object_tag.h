// The control plane's use of the allocator's per-allocation tag
// (RegionAllocator::SetTag/UpdateTag), shared by the daemon and the client
// library of the owner node, which updates it under the allocator's lock:
//   bits  0-15  allocating node + 1 (0: untagged)
//   bits 16-31  publish references (descriptors naming the object)
//   bits 32-47  pins (readers holding the object through Get)
//   bit  63     sealed: immutable from now on
#pragma once

#include <cstdint>

#include "quiver/memory/region_allocator.h"
#include "quiver/util/string_builder.h"

namespace quiver::control::tag {

constexpr uint64_t kNodeMask = 0xFFFFULL;
constexpr int kPublishShift = 16;
constexpr int kPinShift = 32;
constexpr uint64_t kCountMax = 0xFFFFULL;
constexpr uint64_t kSealed = 1ULL << 63;

inline uint64_t Make(uint32_t node) {
  return (static_cast<uint64_t>(node) + 1) & kNodeMask;
}
inline bool HasNode(uint64_t t) { return (t & kNodeMask) != 0; }
inline uint32_t Node(uint64_t t) { return static_cast<uint32_t>((t & kNodeMask) - 1); }
inline uint64_t Publishes(uint64_t t) { return (t >> kPublishShift) & kCountMax; }
inline uint64_t Pins(uint64_t t) { return (t >> kPinShift) & kCountMax; }
inline bool Sealed(uint64_t t) { return (t & kSealed) != 0; }

inline uint64_t WithPublishes(uint64_t t, uint64_t n) {
  return (t & ~(kCountMax << kPublishShift)) | (n << kPublishShift);
}
inline uint64_t WithPins(uint64_t t, uint64_t n) {
  return (t & ~(kCountMax << kPinShift)) | (n << kPinShift);
}

// The check every free goes through: only the allocating node frees, and
// never an object that is pinned by a reader or named by a published
// descriptor.
inline Status CheckFree(const memory::AllocationInfo& info, uint32_t caller_node) {
  if (HasNode(info.tag) && Node(info.tag) != caller_node) {
    return Status::PermissionDenied("allocation ", util::Hex(info.address),
                                    " was made by node ", Node(info.tag), "; node ",
                                    caller_node, " may not free it");
  }
  if (Pins(info.tag) != 0) {
    return Status::FailedPrecondition("allocation ", util::Hex(info.address),
                                      " is pinned by ", Pins(info.tag),
                                      " reader(s); release them first");
  }
  if (Publishes(info.tag) != 0) {
    return Status::FailedPrecondition("allocation ", util::Hex(info.address),
                                      " is named by ", Publishes(info.tag),
                                      " published descriptor(s); unpublish first");
  }
  return Status::OK();
}

}  // namespace quiver::control::tag
