#include "quiver/util/status.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "quiver/util/result.h"

namespace quiver {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kOutOfMemory:
      return "Out of memory";
    case StatusCode::kKeyError:
      return "Key error";
    case StatusCode::kTypeError:
      return "Type error";
    case StatusCode::kInvalid:
      return "Invalid";
    case StatusCode::kIOError:
      return "IOError";
    case StatusCode::kCapacityError:
      return "Capacity error";
    case StatusCode::kIndexError:
      return "Index error";
    case StatusCode::kCancelled:
      return "Cancelled";
    case StatusCode::kUnknownError:
      return "Unknown error";
    case StatusCode::kNotImplemented:
      return "NotImplemented";
    case StatusCode::kSerializationError:
      return "Serialization error";
    case StatusCode::kAlreadyExists:
      return "Already exists";
    case StatusCode::kNotFound:
      return "Not found";
    case StatusCode::kPermissionDenied:
      return "Permission denied";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case StatusCode::kDeadlineExceeded:
      return "DeadlineExceeded";
    case StatusCode::kUnauthenticated:
      return "Unauthenticated";
    case StatusCode::kObjectLost:
      return "ObjectLost";
  }
  return "Unknown status code";
}

Status::Status(StatusCode code, std::string msg) {
  if (code != StatusCode::kOk) {
    state_ = std::make_unique<State>(State{code, std::move(msg)});
  }
}

Status::Status(const Status& other)
    : state_(other.state_ ? std::make_unique<State>(*other.state_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) {
    state_ = other.state_ ? std::make_unique<State>(*other.state_) : nullptr;
  }
  return *this;
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->msg : kEmpty;
}

Status Status::FromErrno(int errnum, std::string_view context) {
  return Status::IOError(context, ": ", std::strerror(errnum), " (errno ", errnum, ")");
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out = StatusCodeName(code());
  out += ": ";
  out += state_->msg;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code(), std::string(context) + ": " + state_->msg);
}

void Status::Abort(std::string_view where) const {
  if (ok()) return;
  std::fprintf(stderr, "quiver: fatal %.*s%s%s\n", static_cast<int>(where.size()),
               where.data(), where.empty() ? "" : ": ", ToString().c_str());
  std::abort();
}

namespace internal {
void DieWithStatus(const Status& st, const char* what) {
  st.Abort(what);
  std::abort();
}
}  // namespace internal

}  // namespace quiver
