#include "transport/ucx.h"

#include <poll.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "transport/ucx_files.h"

namespace quiver::transport {

Status UcxError(ucs_status_t status, std::string_view what) {
  return Status::IOError("UCX ", what, ": ", ucs_status_string(status));
}

namespace {

constexpr uint64_t kFeatures = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
// Transports between processes of one host: nothing reaches them from a
// network. (sysv is left out too: its segments are open to the group.)
const std::set<std::string>& LocalOnes() {
  static const std::set<std::string> local = {"self", "posix", "cma", "knem", "xpmem"};
  return local;
}

std::vector<std::string> Split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// UCX_TLS's aliases, as far as they name transports of one host.
std::set<std::string> Expand(const std::string& name) {
  if (name == "all") return LocalOnes();
  if (name == "sm" || name == "shm") return {"posix", "sysv", "cma", "knem", "xpmem"};
  if (name == "mm") return {"posix", "sysv", "xpmem"};
  return {name};
}

// The transports UCX has on this host (whatever UCX_TLS says), once.
const std::set<std::string>& Available() {
  static const std::set<std::string> available = [] {
    std::set<std::string> out;
    ucp_config_t* config = nullptr;
    if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) return out;
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_AM;
    ucp_context_h context = nullptr;
    const bool ok = ucp_config_modify(config, "TLS", "all") == UCS_OK &&
                    ucp_init(&params, config, &context) == UCS_OK;
    ucp_config_release(config);
    if (!ok) return out;
    char* text = nullptr;
    size_t size = 0;
    if (FILE* f = open_memstream(&text, &size)) {
      ucp_context_print_info(context, f);
      std::fclose(f);
      // "#      resource 4  :  md 3  dev 3  flags -- posix/memory"
      std::stringstream lines(std::string(text, size));
      std::string line;
      while (std::getline(lines, line)) {
        const size_t at = line.find("flags -- ");
        if (line.find("resource") == std::string::npos || at == std::string::npos) {
          continue;
        }
        const std::string tl = line.substr(at + 9);
        out.insert(tl.substr(0, tl.find('/')));
      }
    }
    std::free(text);
    ucp_cleanup(context);
    return out;
  }();
  return available;
}

}  // namespace

std::string LocalTransports(const std::string& requested) {
  std::string request = requested;
  if (request.empty()) {
    const char* env = std::getenv("UCX_TLS");
    request = env != nullptr && *env != '\0' ? env : "all";
  }
  std::set<std::string> chosen;
  if (request[0] == '^') {
    chosen = LocalOnes();
    for (const auto& name : Split(request.substr(1))) {
      for (const auto& n : Expand(name)) chosen.erase(n);
    }
  } else {
    for (const auto& name : Split(request)) {
      for (const auto& n : Expand(name)) {
        if (LocalOnes().count(n)) chosen.insert(n);
      }
    }
  }
  std::string out;
  for (const auto& n : chosen) {
    if (Available().count(n) == 0) continue;
    out += (out.empty() ? "" : ",") + n;
  }
  return out;
}

Result<std::shared_ptr<UcxContext>> UcxContext::ForPeers(const std::string& transports,
                                                         bool rma) {
  const std::string local = LocalTransports(transports);
  // Without one that carries messages, UCX could not connect anyone.
  if (local.find("posix") == std::string::npos &&
      local.find("xpmem") == std::string::npos) {
    return std::shared_ptr<UcxContext>();
  }
  return Init(local, kFeatures | (rma ? UCP_FEATURE_RMA : 0));
}

Result<std::shared_ptr<UcxContext>> UcxContext::Make(const std::string& transports) {
  return Init(transports, kFeatures | UCP_FEATURE_RMA);
}

Result<std::shared_ptr<UcxContext>> UcxContext::Init(const std::string& transports,
                                                     uint64_t features) {
  // Shared-memory files in a directory of Quiver's, where those of killed
  // processes are found and removed (ucx_files.h). An explicit
  // UCX_POSIX_DIR wins.
  static std::once_flag files_once;
  std::call_once(files_once, [] {
    if (std::getenv("UCX_POSIX_DIR") != nullptr) return;
    const std::string dir = UcxFileDir();
    if (dir.empty()) return;
    setenv("UCX_POSIX_DIR", dir.c_str(), /*overwrite=*/0);
    SweepUcxFiles(dir);
  });
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return UcxError(st, "reading the configuration (UCX_* variables)");
  if (!transports.empty()) {
    st = ucp_config_modify(config, "TLS", transports.c_str());
    if (st != UCS_OK) {
      ucp_config_release(config);
      return UcxError(st, "choosing the transports '" + transports + "'");
    }
  }
  // Memory UCX allocates (the server's body pool) from POSIX shared memory
  // first: a file of mode 0600 that peers open through /proc/<pid>/fd, so
  // only processes allowed to trace this one (its user) can map it; System
  // V segments come with mode 0660, open to the group. An explicit
  // UCX_ALLOC_PRIO wins.
  if (std::getenv("UCX_ALLOC_PRIO") == nullptr) {
    st = ucp_config_modify(config, "ALLOC_PRIO", "md:posix,huge,thp,md:*,mmap,heap");
    if (st != UCS_OK) {
      ucp_config_release(config);
      return UcxError(st, "choosing where UCX allocates memory");
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = features;
  std::shared_ptr<UcxContext> context(new UcxContext());
  st = ucp_init(&params, config, &context->context_);
  ucp_config_release(config);
  if (st != UCS_OK) return UcxError(st, "initialising a context");
  return context;
}

UcxContext::~UcxContext() {
  if (context_ != nullptr) ucp_cleanup(context_);
}

Result<std::unique_ptr<UcxMemory>> UcxMemory::Map(std::shared_ptr<UcxContext> context,
                                                  void* address, size_t length) {
  return Make(std::move(context), address, length, /*allocate=*/false);
}

Result<std::unique_ptr<UcxMemory>> UcxMemory::Allocate(
    std::shared_ptr<UcxContext> context, size_t length) {
  return Make(std::move(context), nullptr, length, /*allocate=*/true);
}

Result<std::unique_ptr<UcxMemory>> UcxMemory::Make(std::shared_ptr<UcxContext> context,
                                                   void* address, size_t length,
                                                   bool allocate) {
  std::unique_ptr<UcxMemory> m(new UcxMemory());
  m->context_ = std::move(context);
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  params.address = address;
  params.length = length;
  params.flags = allocate ? UCP_MEM_MAP_ALLOCATE : 0;
  const std::string what = (allocate ? "allocating and registering " : "registering ") +
                           std::to_string(length) + " bytes";
  ucs_status_t st = ucp_mem_map(m->context_->get(), &params, &m->memh_);
  if (st != UCS_OK) return UcxError(st, what);
  // How much UCX mapped, and where it put memory it allocated.
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  st = ucp_mem_query(m->memh_, &attr);
  if (st != UCS_OK) return UcxError(st, what + ": querying the memory");
  if (attr.length < length) {
    return Status::IOError("UCX ", what, ": got ", attr.length, " bytes");
  }
  m->address_ = reinterpret_cast<uint64_t>(allocate ? attr.address : address);
  m->length_ = length;
  void* packed = nullptr;
  size_t size = 0;
  st = ucp_rkey_pack(m->context_->get(), m->memh_, &packed, &size);
  if (st != UCS_OK) return UcxError(st, "packing a remote key");
  m->rkey_.assign(static_cast<const char*>(packed), size);
  ucp_rkey_buffer_release(packed);
  return m;
}

UcxMemory::~UcxMemory() {
  if (memh_ != nullptr) ucp_mem_unmap(context_->get(), memh_);
}

Result<std::unique_ptr<UcxWorker>> UcxWorker::Make(std::shared_ptr<UcxContext> context) {
  std::unique_ptr<UcxWorker> w(new UcxWorker());
  w->context_ = std::move(context);
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucs_status_t st = ucp_worker_create(w->context_->get(), &params, &w->worker_);
  if (st != UCS_OK) return UcxError(st, "creating a worker");
  st = ucp_worker_get_efd(w->worker_, &w->efd_);
  if (st != UCS_OK) return UcxError(st, "getting the worker's event fd");
  return w;
}

Result<std::string> UcxWorker::Address() const {
  ucp_address_t* address = nullptr;
  size_t length = 0;
  ucs_status_t st = ucp_worker_get_address(worker_, &address, &length);
  if (st != UCS_OK) return UcxError(st, "getting the worker's address");
  std::string out(reinterpret_cast<const char*>(address), length);
  ucp_worker_release_address(worker_, address);
  return out;
}

Result<ucp_ep_h> UcxWorker::ConnectTo(std::string_view address) {
  if (address.empty()) return Status::Invalid("an empty worker address");
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());

  ucp_ep_h ep = nullptr;
  ucs_status_t st = ucp_ep_create(worker_, &params, &ep);
  if (st != UCS_OK) return UcxError(st, "connecting to a worker address");
  return ep;
}

UcxWorker::~UcxWorker() {
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
}

void UcxWorker::Sleep(int timeout_ms) {
  if (ucp_worker_arm(worker_) != UCS_OK) return;  // events pending (BUSY)
  pollfd p{efd_, POLLIN, 0};
  (void)poll(&p, 1, timeout_ms);
}

Status UcxWorker::ProgressUntil(const std::function<bool()>& done, int64_t timeout_ms,
                                std::string_view what) {
  using Clock = std::chrono::steady_clock;
  // Spinning this long after the last event catches the reply of a round
  // trip on shared memory without a sleep and wake-up (tens of µs each).
  constexpr auto kSpin = std::chrono::microseconds(50);
  const auto start = Clock::now();
  auto last_event = start;
  while (!done()) {
    if (Progress()) {
      last_event = Clock::now();
      continue;
    }
    const auto now = Clock::now();
    if (now - last_event < kSpin) continue;
    int wait_ms = 100;
    if (timeout_ms >= 0) {
      const int64_t left =
          timeout_ms -
          std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
      if (left <= 0) {
        return Status::DeadlineExceeded(what, " did not finish within ", timeout_ms,
                                        " ms");
      }
      wait_ms = static_cast<int>(std::min<int64_t>(left, wait_ms));
    }
    Sleep(wait_ms);
    last_event = Clock::now();
  }
  return Status::OK();
}

UcxRequest::UcxRequest(ucp_worker_h worker, ucs_status_ptr_t request, bool is_tag_recv,
                       const ucp_tag_recv_info_t& info)
    : worker_(worker), is_tag_recv_(is_tag_recv), info_(info) {
  if (request == nullptr) {
    status_ = UCS_OK;
  } else if (UCS_PTR_IS_ERR(request)) {
    status_ = UCS_PTR_STATUS(request);
  } else {
    request_ = request;
    status_ = UCS_INPROGRESS;
  }
}

UcxRequest& UcxRequest::operator=(UcxRequest&& other) noexcept {
  if (this != &other) {
    Release();
    worker_ = other.worker_;
    request_ = std::exchange(other.request_, nullptr);
    status_ = other.status_;
    is_tag_recv_ = other.is_tag_recv_;
    info_ = other.info_;
  }
  return *this;
}

UcxRequest::~UcxRequest() { Release(); }

void UcxRequest::Release() {
  if (request_ == nullptr) return;
  if (ucp_request_check_status(request_) == UCS_INPROGRESS) {
    ucp_request_cancel(worker_, request_);
  }
  ucp_request_free(request_);
  request_ = nullptr;
}

ucs_status_t UcxRequest::Check() {
  if (request_ == nullptr) return status_;
  const ucs_status_t st = is_tag_recv_ ? ucp_tag_recv_request_test(request_, &info_)
                                       : ucp_request_check_status(request_);
  if (st != UCS_INPROGRESS) {
    status_ = st;
    ucp_request_free(request_);
    request_ = nullptr;
  }
  return st;
}

UcxRequest TagRecv(ucp_worker_h worker, void* buffer, size_t length, uint64_t tag,
                   uint64_t mask) {
  ucp_tag_recv_info_t info{};
  ucp_request_param_t p{};
  // UCX 1.13 leaves recv_info unset for some receives that complete at
  // once (seen: shared-memory eager messages already waiting): always ask
  // for a request, whose test gives the tag and length.
  p.op_attr_mask = UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.recv_info.tag_info = &info;
  ucs_status_ptr_t r = ucp_tag_recv_nbx(worker, buffer, length, tag, mask, &p);
  return UcxRequest(worker, r, /*is_tag_recv=*/true, info);
}

UcxRequest TagRecvMessage(ucp_worker_h worker, void* buffer, size_t length,
                          ucp_tag_message_h message) {
  ucp_tag_recv_info_t info{};
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.recv_info.tag_info = &info;
  ucs_status_ptr_t r = ucp_tag_msg_recv_nbx(worker, buffer, length, message, &p);
  return UcxRequest(worker, r, /*is_tag_recv=*/true, info);
}

Status WaitFor(UcxWorker* worker, UcxRequest* request, int64_t timeout_ms,
               std::string_view what) {
  QUIVER_RETURN_NOT_OK(worker->ProgressUntil(
      [&] { return request->Check() != UCS_INPROGRESS; }, timeout_ms, what));
  const ucs_status_t st = request->Check();
  return st == UCS_OK ? Status::OK() : UcxError(st, what);
}

void CloseByForce(UcxWorker* worker, std::initializer_list<ucp_ep_h> endpoints,
                  int64_t timeout_ms) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_EP_CLOSE_FLAG_FORCE;
  for (ucp_ep_h ep : endpoints) {
    if (ep == nullptr) continue;
    UcxRequest close(worker->get(), ucp_ep_close_nbx(ep, &p));
    (void)WaitFor(worker, &close, timeout_ms, "closing an endpoint");
  }
}

}  // namespace quiver::transport
