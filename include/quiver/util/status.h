// Status: the outcome of every fallible call in Quiver.
//
// A Status is either OK (cheap: a null pointer) or an error with a code and a
// message. Foreign errors (errno, flatbuffers, lz4, zstd, ...) are converted
// at one boundary each, keeping the original code and text in the message.
// Status is a value type; copies are independent. Not thread-safe to mutate
// one object from several threads, like any value.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace quiver {

enum class StatusCode : char {
  kOk = 0,
  kOutOfMemory = 1,
  kKeyError = 2,
  kTypeError = 3,
  kInvalid = 4,
  kIOError = 5,
  kCapacityError = 6,
  kIndexError = 7,
  kCancelled = 8,
  kUnknownError = 9,
  kNotImplemented = 10,
  kSerializationError = 11,
  kAlreadyExists = 12,
  kNotFound = 13,
  kPermissionDenied = 14,
  kUnavailable = 15,
  kFailedPrecondition = 16,  // the object is in a state that forbids the call
  kDeadlineExceeded = 17,
  kUnauthenticated = 18,
  kObjectLost = 19,  // the object's home node is down (its message names the node)
};

// Human-readable name of a code ("Invalid", "IOError", ...).
const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  Status(StatusCode code, std::string msg);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  static Status OK() { return Status(); }

  template <typename... Args>
  static Status FromArgs(StatusCode code, Args&&... args) {
    return Status(code, Concat(std::forward<Args>(args)...));
  }
  template <typename... Args>
  static Status Invalid(Args&&... args) {
    return FromArgs(StatusCode::kInvalid, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status OutOfMemory(Args&&... args) {
    return FromArgs(StatusCode::kOutOfMemory, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status KeyError(Args&&... args) {
    return FromArgs(StatusCode::kKeyError, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status TypeError(Args&&... args) {
    return FromArgs(StatusCode::kTypeError, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status IOError(Args&&... args) {
    return FromArgs(StatusCode::kIOError, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status CapacityError(Args&&... args) {
    return FromArgs(StatusCode::kCapacityError, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status IndexError(Args&&... args) {
    return FromArgs(StatusCode::kIndexError, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status Cancelled(Args&&... args) {
    return FromArgs(StatusCode::kCancelled, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status UnknownError(Args&&... args) {
    return FromArgs(StatusCode::kUnknownError, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status NotImplemented(Args&&... args) {
    return FromArgs(StatusCode::kNotImplemented, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status SerializationError(Args&&... args) {
    return FromArgs(StatusCode::kSerializationError, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status AlreadyExists(Args&&... args) {
    return FromArgs(StatusCode::kAlreadyExists, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status NotFound(Args&&... args) {
    return FromArgs(StatusCode::kNotFound, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status PermissionDenied(Args&&... args) {
    return FromArgs(StatusCode::kPermissionDenied, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status Unavailable(Args&&... args) {
    return FromArgs(StatusCode::kUnavailable, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status FailedPrecondition(Args&&... args) {
    return FromArgs(StatusCode::kFailedPrecondition, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status DeadlineExceeded(Args&&... args) {
    return FromArgs(StatusCode::kDeadlineExceeded, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status Unauthenticated(Args&&... args) {
    return FromArgs(StatusCode::kUnauthenticated, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status ObjectLost(Args&&... args) {
    return FromArgs(StatusCode::kObjectLost, std::forward<Args>(args)...);
  }
  // An IOError carrying errno's text: "<context>: <strerror> (errno N)".
  static Status FromErrno(int errnum, std::string_view context);

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  const std::string& message() const;
  bool IsInvalid() const { return code() == StatusCode::kInvalid; }
  bool IsIOError() const { return code() == StatusCode::kIOError; }
  bool IsOutOfMemory() const { return code() == StatusCode::kOutOfMemory; }
  bool IsNotFound() const { return code() == StatusCode::kNotFound; }
  bool IsNotImplemented() const { return code() == StatusCode::kNotImplemented; }
  bool IsIndexError() const { return code() == StatusCode::kIndexError; }
  bool IsTypeError() const { return code() == StatusCode::kTypeError; }
  bool IsCapacityError() const { return code() == StatusCode::kCapacityError; }
  bool IsSerializationError() const { return code() == StatusCode::kSerializationError; }
  bool IsAlreadyExists() const { return code() == StatusCode::kAlreadyExists; }
  bool IsPermissionDenied() const { return code() == StatusCode::kPermissionDenied; }
  bool IsUnavailable() const { return code() == StatusCode::kUnavailable; }
  bool IsFailedPrecondition() const { return code() == StatusCode::kFailedPrecondition; }
  bool IsDeadlineExceeded() const { return code() == StatusCode::kDeadlineExceeded; }
  bool IsUnauthenticated() const { return code() == StatusCode::kUnauthenticated; }
  bool IsObjectLost() const { return code() == StatusCode::kObjectLost; }

  // "OK" or "<CodeName>: <message>".
  std::string ToString() const;

  // A copy whose message is prefixed with `context` and ": ".
  Status WithContext(std::string_view context) const;

  // Aborts the process with the message if not OK. For tools and tests only.
  void Abort(std::string_view where = {}) const;

 private:
  struct State {
    StatusCode code;
    std::string msg;
  };
  template <typename... Args>
  static std::string Concat(Args&&... args);

  std::unique_ptr<State> state_;
};

}  // namespace quiver

#include "quiver/util/string_builder.h"

namespace quiver {
template <typename... Args>
std::string Status::Concat(Args&&... args) {
  return util::StringBuilder(std::forward<Args>(args)...);
}
}  // namespace quiver

#define QUIVER_CONCAT_IMPL(x, y) x##y
#define QUIVER_CONCAT(x, y) QUIVER_CONCAT_IMPL(x, y)

// Returns from the enclosing function if `expr` yields a non-OK Status.
#define QUIVER_RETURN_NOT_OK(expr)           \
  do {                                       \
    ::quiver::Status _quiver_st = (expr);    \
    if (!_quiver_st.ok()) return _quiver_st; \
  } while (false)

#define QUIVER_RETURN_IF(cond, status) \
  do {                                 \
    if (cond) return (status);         \
  } while (false)

#define QUIVER_PREDICT_FALSE(x) (__builtin_expect(!!(x), 0))
#define QUIVER_PREDICT_TRUE(x) (__builtin_expect(!!(x), 1))
