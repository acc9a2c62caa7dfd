// Cache flush and barrier primitives, chosen at run time from what the CPU
// supports.
//
// Caches are coherent only inside a node, so an object written into or
// read from another node's memory is made visible by flushing (DESIGN.md
// §4). FlushRange writes back and invalidates every cache line of a range:
//   x86-64:  sfence; clflushopt per line (clflush if unavailable); sfence
//   AArch64: dc civac per line; dsb ish
//   POWER:   dcbf per line; hwsync
// In a region mapped through the non-coherent emulator it performs the
// emulator's flush instead (write back changed lines, drop the copy).
// All functions are thread-safe and flush only the calling CPU's view.
#pragma once

#include <cstdint>

#include "quiver/memory/cluster_config.h"
#include "quiver/util/status.h"

namespace quiver::coherence {

enum class FlushMethod : uint8_t {
  kClflushopt,  // x86-64, weakly ordered, needs sfence
  kClflush,     // x86-64, strongly ordered, slower
  kDcCivac,     // AArch64
  kDcbf,        // POWER
};

// The method this CPU uses (detected once).
FlushMethod ActiveFlushMethod();
const char* FlushMethodName(FlushMethod method);
// The data cache line size the flush loop steps by.
uint64_t FlushLineSize();

// Flushes [addr, addr + len): emulated ranges through the emulator, the rest
// with the CPU's flush instruction. Never fails for hardware ranges.
Status FlushRange(const void* addr, uint64_t len);
// Protocol steps 2 and 4 (DESIGN.md §4) for [addr, addr + len): nothing
// where `config` says the range's region is coherent (one host's shared
// memory: every cache that may hold it is kept coherent by hardware),
// FlushRange everywhere else. The one place that rule is applied.
Status FlushForProtocol(const memory::ClusterConfig& config, const void* addr,
                        uint64_t len);
// The hardware flush loop only (no emulator dispatch), barriers included.
void FlushRangeHardware(const void* addr, uint64_t len);
// A full memory barrier (mfence / dsb ish / hwsync).
void FullBarrier();

}  // namespace quiver::coherence
