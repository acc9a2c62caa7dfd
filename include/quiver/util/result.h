// Result<T>: either a value of type T or a non-OK Status.
//
// Accessing the value of an errored Result aborts (a programming error, as in
// Arrow C++). Use QUIVER_ASSIGN_OR_RAISE to propagate errors.
#pragma once

#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>
#include <variant>

#include "quiver/util/status.h"

namespace quiver {

namespace internal {
[[noreturn]] void DieWithStatus(const Status& st, const char* what);
}  // namespace internal

template <typename T>
class [[nodiscard]] Result {
 public:
  using ValueType = T;

  // An errored Result; `status` must not be OK.
  Result(Status status) : v_(std::move(status)) {  // NOLINT(runtime/explicit)
    if (std::get<Status>(v_).ok()) {
      v_ = Status::UnknownError("Result constructed from an OK Status without a value");
    }
  }
  Result(T value) : v_(std::move(value)) {}  // NOLINT(runtime/explicit)
  template <typename U,
            typename = std::enable_if_t<std::is_convertible_v<U&&, T> &&
                                        !std::is_same_v<std::decay_t<U>, T> &&
                                        !std::is_same_v<std::decay_t<U>, Status>>>
  Result(U&& value) : v_(T(std::forward<U>(value))) {}  // NOLINT(runtime/explicit)

  bool ok() const { return v_.index() == 1; }
  // The error, or OK. A reference: valid as long as this Result.
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }

  const T& ValueOrDie() const& {
    if (!ok()) internal::DieWithStatus(std::get<Status>(v_), "ValueOrDie");
    return std::get<T>(v_);
  }
  T& ValueOrDie() & {
    if (!ok()) internal::DieWithStatus(std::get<Status>(v_), "ValueOrDie");
    return std::get<T>(v_);
  }
  T ValueOrDie() && {
    if (!ok()) internal::DieWithStatus(std::get<Status>(v_), "ValueOrDie");
    return std::move(std::get<T>(v_));
  }
  // Unchecked move-out; only after ok() was checked.
  T MoveValueUnsafe() { return std::move(std::get<T>(v_)); }

  const T& operator*() const& { return ValueOrDie(); }
  T& operator*() & { return ValueOrDie(); }
  const T* operator->() const { return &ValueOrDie(); }
  T* operator->() { return &ValueOrDie(); }

  T ValueOr(T alternative) && {
    return ok() ? std::move(std::get<T>(v_)) : std::move(alternative);
  }

 private:
  std::variant<Status, T> v_;
};

}  // namespace quiver

#define QUIVER_ASSIGN_OR_RAISE_IMPL(result_name, lhs, rexpr) \
  auto&& result_name = (rexpr);                              \
  if (!result_name.ok()) return result_name.status();        \
  lhs = std::move(result_name).MoveValueUnsafe();

// `lhs` = value of the Result `rexpr`, or return its error Status.
#define QUIVER_ASSIGN_OR_RAISE(lhs, rexpr) \
  QUIVER_ASSIGN_OR_RAISE_IMPL(QUIVER_CONCAT(_quiver_res_, __COUNTER__), lhs, rexpr)
