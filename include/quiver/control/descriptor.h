// The control plane's names for descriptors (quiver/columnar/ipc/descriptor.h):
// a descriptor is pure Arrow (Dissociated IPC messages framed in one byte
// string), so it lives in the columnar layer; the control plane publishes,
// pins and retires the buffers it references.
#pragma once

#include "quiver/columnar/ipc/descriptor.h"

namespace quiver::control {

using ipc::BufferRange;
using ipc::DecodeDescriptor;
using ipc::DecodeDescriptorBatches;
using ipc::DescriptorInfo;
using ipc::DescriptorWriteOptions;
using ipc::EncodeDescriptor;
using ipc::InspectDescriptor;
using ipc::kMaxDescriptorBuffers;
using ipc::kMaxDescriptorNesting;
using ipc::kMaxDescriptorRecords;
using ipc::kMaxDescriptorSize;
using ipc::RangeValidator;

}  // namespace quiver::control
