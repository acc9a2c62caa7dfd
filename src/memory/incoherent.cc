#include "quiver/memory/incoherent.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace quiver::memory {

// The private cache is a memfd mapped twice: at the region's base (PROT_NONE
// until a page is fetched) and at an alias that is always writable. A fault
// fills the page through the alias and only then opens the page at base, so
// another thread never sees a half-filled page.

namespace {

constexpr int kMaxViews = 64;
std::atomic<IncoherentView*> g_views[kMaxViews];
// One past the highest slot ever used: a process with no emulated region
// (the usual case) looks at none.
std::atomic<int> g_views_end{0};
struct sigaction g_previous_action;
std::once_flag g_handler_once;

}  // namespace

struct EmulatorAccess {
  static bool HandleFault(IncoherentView* v, uint8_t* addr);
  static void Fill(IncoherentView* v, uint64_t page_index);
  static void WriteBackAndDrop(IncoherentView* v, uint64_t page_index);
};

namespace {

IncoherentView* FindView(const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  const int end = g_views_end.load(std::memory_order_acquire);
  for (int s = 0; s < end; ++s) {
    IncoherentView* v = g_views[s].load(std::memory_order_acquire);
    if (v == nullptr) continue;
    auto b = reinterpret_cast<uintptr_t>(v->base());
    if (a >= b && a - b < v->size()) return v;
  }
  return nullptr;
}

void ForwardToPrevious(int sig, siginfo_t* info, void* ctx) {
  if (g_previous_action.sa_flags & SA_SIGINFO) {
    if (g_previous_action.sa_sigaction != nullptr) {
      g_previous_action.sa_sigaction(sig, info, ctx);
      return;
    }
  } else if (g_previous_action.sa_handler != SIG_DFL &&
             g_previous_action.sa_handler != SIG_IGN) {
    g_previous_action.sa_handler(sig);
    return;
  }
  // Default action: restore it; returning re-executes the fault and dies.
  signal(sig, SIG_DFL);
}

void OnSegv(int sig, siginfo_t* info, void* ctx) {
  IncoherentView* v = FindView(info->si_addr);
  if (v == nullptr ||
      !EmulatorAccess::HandleFault(v, static_cast<uint8_t*>(info->si_addr))) {
    ForwardToPrevious(sig, info, ctx);
  }
}

void InstallHandler() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = OnSegv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &g_previous_action);
}

std::atomic_ref<uint8_t> State(uint8_t* states, uint64_t i) {
  return std::atomic_ref<uint8_t>(states[i]);
}

}  // namespace

void EmulatorAccess::Fill(IncoherentView* v, uint64_t i) {
  const uint64_t off = i * v->page_;
  std::memcpy(v->alias_ + off, v->backing_ + off, v->page_);
  std::memcpy(v->snapshot_ + off, v->alias_ + off, v->page_);
  mprotect(v->base_ + off, v->page_, PROT_READ | PROT_WRITE);
}

bool EmulatorAccess::HandleFault(IncoherentView* v, uint8_t* addr) {
  const uint64_t i = static_cast<uint64_t>(addr - v->base_) / v->page_;
  auto state = State(v->states_, i);
  uint8_t expected = 0;
  if (state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    Fill(v, i);
    state.store(2, std::memory_order_release);
    return true;
  }
  // Another thread is filling the page (1) or flushing it (2, about to turn
  // 0): wait for that to finish, then retry the access, which refaults if
  // the page is still closed.
  while (state.load(std::memory_order_acquire) == 1) {
  }
  return true;
}

void EmulatorAccess::WriteBackAndDrop(IncoherentView* v, uint64_t i) {
  auto state = State(v->states_, i);
  if (state.load(std::memory_order_acquire) != 2) return;
  const uint64_t off = i * v->page_;
  // Close the page first: accesses from now on fault and refetch.
  mprotect(v->base_ + off, v->page_, PROT_NONE);
  for (uint64_t l = 0; l < v->page_; l += v->line_) {
    const uint8_t* mine = v->alias_ + off + l;
    if (std::memcmp(mine, v->snapshot_ + off + l, v->line_) != 0) {
      std::memcpy(v->backing_ + off + l, mine, v->line_);  // the whole line
    }
  }
  // Give the cached bytes back to the system.
  madvise(v->alias_ + off, v->page_, MADV_REMOVE);
  madvise(v->snapshot_ + off, v->page_, MADV_DONTNEED);
  state.store(0, std::memory_order_release);
}

Result<std::unique_ptr<IncoherentView>> IncoherentView::Map(uint8_t* base, uint64_t size,
                                                            int backing_fd,
                                                            uint64_t line) {
  std::unique_ptr<IncoherentView> v(new IncoherentView());
  v->page_ = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  v->line_ = line;
  if (line == 0 || v->page_ % line != 0) {
    return Status::Invalid("emulator line ", line, " must divide the page size ",
                           v->page_);
  }
  if (size % v->page_ != 0) return Status::Invalid("emulated size is not page-aligned");
  v->size_ = size;
  int slot = -1;
  for (int s = 0; s < kMaxViews; ++s) {
    if (g_views[s].load() == nullptr) {
      slot = s;
      break;
    }
  }
  if (slot < 0) return Status::CapacityError("too many emulated regions in one process");
  v->cache_fd_ = memfd_create("quiver-incoherent-cache", MFD_CLOEXEC);
  if (v->cache_fd_ < 0) return Status::FromErrno(errno, "memfd_create");
  if (ftruncate(v->cache_fd_, static_cast<off_t>(size)) != 0) {
    return Status::FromErrno(errno, "ftruncate of the emulator cache");
  }
  void* p = mmap(base, size, PROT_NONE, MAP_SHARED | MAP_FIXED_NOREPLACE | MAP_NORESERVE,
                 v->cache_fd_, 0);
  if (p == MAP_FAILED) {
    return Status::FromErrno(errno, "mapping the emulated region at its base");
  }
  if (p != base) {
    munmap(p, size);
    return Status::IOError("kernel ignored MAP_FIXED_NOREPLACE for the emulated region");
  }
  v->base_ = base;
  auto map = [&](int fd, int flags, uint8_t** out) -> Status {
    void* q = mmap(nullptr, size, PROT_READ | PROT_WRITE, flags | MAP_NORESERVE, fd, 0);
    if (q == MAP_FAILED) return Status::FromErrno(errno, "emulator mapping");
    *out = static_cast<uint8_t*>(q);
    return Status::OK();
  };
  QUIVER_RETURN_NOT_OK(map(v->cache_fd_, MAP_SHARED, &v->alias_));
  QUIVER_RETURN_NOT_OK(map(backing_fd, MAP_SHARED, &v->backing_));
  QUIVER_RETURN_NOT_OK(map(-1, MAP_PRIVATE | MAP_ANONYMOUS, &v->snapshot_));
  void* st = mmap(nullptr, size / v->page_, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (st == MAP_FAILED) return Status::FromErrno(errno, "emulator page states");
  v->states_ = static_cast<uint8_t*>(st);
  std::call_once(g_handler_once, InstallHandler);
  v->slot_ = slot;
  g_views[slot].store(v.get(), std::memory_order_release);
  int end = g_views_end.load();
  while (end < slot + 1 && !g_views_end.compare_exchange_weak(end, slot + 1)) {
  }
  return v;
}

IncoherentView::~IncoherentView() {
  if (slot_ >= 0) g_views[slot_].store(nullptr, std::memory_order_release);
  if (base_ != nullptr) munmap(base_, size_);
  if (alias_ != nullptr) munmap(alias_, size_);
  if (backing_ != nullptr) munmap(backing_, size_);
  if (snapshot_ != nullptr) munmap(snapshot_, size_);
  if (states_ != nullptr) munmap(states_, size_ / page_);
  if (cache_fd_ >= 0) close(cache_fd_);
}

Status IncoherentView::Flush(const void* addr, uint64_t len) {
  auto a = static_cast<const uint8_t*>(addr);
  if (a < base_ || len > size_ || static_cast<uint64_t>(a - base_) > size_ - len) {
    return Status::Invalid("flush range is outside the emulated region");
  }
  if (len == 0) return Status::OK();
  const uint64_t first = static_cast<uint64_t>(a - base_) / page_;
  const uint64_t last = (static_cast<uint64_t>(a - base_) + len - 1) / page_;
  for (uint64_t i = first; i <= last; ++i) EmulatorAccess::WriteBackAndDrop(this, i);
  return Status::OK();
}

Status IncoherentView::Prefetch(const void* addr, uint64_t len) {
  auto a = static_cast<const uint8_t*>(addr);
  if (a < base_ || len > size_ || static_cast<uint64_t>(a - base_) > size_ - len) {
    return Status::Invalid("prefetch range is outside the emulated region");
  }
  for (uint64_t off = 0; off < len; off += page_) {
    volatile uint8_t touch = a[off];
    (void)touch;
  }
  if (len > 0) {
    volatile uint8_t touch = a[len - 1];
    (void)touch;
  }
  return Status::OK();
}

uint64_t IncoherentView::cached_pages() const {
  uint64_t n = 0;
  for (uint64_t i = 0; i < size_ / page_; ++i) n += states_[i] == 2 ? 1 : 0;
  return n;
}

bool FlushIfEmulated(const void* addr, uint64_t len, Status* status) {
  IncoherentView* v = FindView(addr);
  if (v == nullptr) return false;
  *status = v->Flush(addr, len);
  return true;
}

bool IsEmulatedAddress(const void* addr) { return FindView(addr) != nullptr; }

}  // namespace quiver::memory
