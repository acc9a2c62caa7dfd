#include "quiver/coherence/flush.h"

#include <unistd.h>

#include "quiver/memory/incoherent.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace quiver::coherence {

namespace {

struct CpuFlush {
  FlushMethod method;
  uint64_t line;
};

CpuFlush Detect() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  uint64_t line = 64;
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    uint64_t l = ((b >> 8) & 0xFF) * 8;  // CLFLUSH line size, in 8-byte units
    if (l != 0) line = l;
  }
  bool opt = false;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) opt = (b >> 23) & 1;
  return {opt ? FlushMethod::kClflushopt : FlushMethod::kClflush, line};
#elif defined(__aarch64__)
  uint64_t ctr;
  asm volatile("mrs %0, ctr_el0" : "=r"(ctr));
  return {FlushMethod::kDcCivac, uint64_t{4} << ((ctr >> 16) & 0xF)};  // DminLine
#elif defined(__powerpc64__)
  long l = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
  return {FlushMethod::kDcbf, l > 0 ? static_cast<uint64_t>(l) : 128};
#else
#error "Quiver needs a cache flush instruction for this architecture"
#endif
}

const CpuFlush& Cpu() {
  static const CpuFlush cpu = Detect();
  return cpu;
}

#if defined(__x86_64__)
void FlushLoop(const uint8_t* p, const uint8_t* end, uint64_t line, FlushMethod m) {
  asm volatile("sfence" ::: "memory");
  if (m == FlushMethod::kClflushopt) {
    for (; p < end; p += line)
      asm volatile("clflushopt %0" : "+m"(*const_cast<uint8_t*>(p)));
  } else {
    for (; p < end; p += line)
      asm volatile("clflush %0" : "+m"(*const_cast<uint8_t*>(p)));
  }
  asm volatile("sfence" ::: "memory");
}
#elif defined(__aarch64__)
void FlushLoop(const uint8_t* p, const uint8_t* end, uint64_t line, FlushMethod) {
  asm volatile("dsb ish" ::: "memory");
  for (; p < end; p += line) asm volatile("dc civac, %0" ::"r"(p) : "memory");
  asm volatile("dsb ish" ::: "memory");
}
#elif defined(__powerpc64__)
void FlushLoop(const uint8_t* p, const uint8_t* end, uint64_t line, FlushMethod) {
  asm volatile("sync" ::: "memory");
  for (; p < end; p += line) asm volatile("dcbf 0,%0" ::"r"(p) : "memory");
  asm volatile("sync" ::: "memory");  // hwsync
}
#endif

}  // namespace

FlushMethod ActiveFlushMethod() { return Cpu().method; }

const char* FlushMethodName(FlushMethod method) {
  switch (method) {
    case FlushMethod::kClflushopt:
      return "clflushopt+sfence";
    case FlushMethod::kClflush:
      return "clflush";
    case FlushMethod::kDcCivac:
      return "dc civac+dsb ish";
    case FlushMethod::kDcbf:
      return "dcbf+hwsync";
  }
  return "?";
}

uint64_t FlushLineSize() { return Cpu().line; }

void FlushRangeHardware(const void* addr, uint64_t len) {
  if (len == 0) return;
  const CpuFlush& cpu = Cpu();
  auto start = reinterpret_cast<uintptr_t>(addr) & ~(cpu.line - 1);
  auto end = reinterpret_cast<uintptr_t>(addr) + len;
  FlushLoop(reinterpret_cast<const uint8_t*>(start),
            reinterpret_cast<const uint8_t*>(end), cpu.line, cpu.method);
}

Status FlushRange(const void* addr, uint64_t len) {
  Status st;
  if (memory::FlushIfEmulated(addr, len, &st)) return st;
  FlushRangeHardware(addr, len);
  return Status::OK();
}

Status FlushForProtocol(const memory::ClusterConfig& config, const void* addr,
                        uint64_t len) {
  if (len == 0 || config.Coherent(reinterpret_cast<uint64_t>(addr), len)) {
    return Status::OK();
  }
  return FlushRange(addr, len);
}

void FullBarrier() {
#if defined(__x86_64__)
  asm volatile("mfence" ::: "memory");
#elif defined(__aarch64__)
  asm volatile("dsb ish" ::: "memory");
#elif defined(__powerpc64__)
  asm volatile("sync" ::: "memory");
#endif
}

}  // namespace quiver::coherence
