// Errors as values. kfuse never throws across a library boundary on bad user
// input: functions that can fail on input return Expected<T> (a T or an Error)
// or Status (an Error or nothing), in the manner of llvm::Expected.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace kfuse {

// A failure with a human-readable message. The message carries its own
// context (file:line:col, node, op); callers may prepend more with `context`.
class Error {
 public:
  explicit Error(std::string message) : message_(std::move(message)) {}
  const std::string& message() const { return message_; }
  // Returns a copy whose message is "prefix: message".
  Error context(const std::string& prefix) const { return Error(prefix + ": " + message_); }

 private:
  std::string message_;
};

// Status is success (no value) or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::move(e)) {}  // NOLINT: implicit by design
  static Status ok() { return Status(); }
  bool isOk() const { return !error_.has_value(); }
  explicit operator bool() const { return isOk(); }
  const Error& error() const {
    assert(error_);
    return *error_;
  }
  std::string message() const { return error_ ? error_->message() : std::string(); }

 private:
  std::optional<Error> error_;
};

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::move(value)) {}    // NOLINT: implicit by design
  Expected(Error error) : storage_(std::move(error)) {}  // NOLINT: implicit by design
  Expected(Status status) : storage_(status.error()) { assert(!status.isOk()); }  // NOLINT

  bool hasValue() const { return storage_.index() == 0; }
  explicit operator bool() const { return hasValue(); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(value()); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T& value() & {
    assert(hasValue());
    return std::get<0>(storage_);
  }
  const T& value() const& {
    assert(hasValue());
    return std::get<0>(storage_);
  }
  T&& value() && {
    assert(hasValue());
    return std::move(std::get<0>(storage_));
  }
  const Error& error() const {
    assert(!hasValue());
    return std::get<1>(storage_);
  }
  Status status() const { return hasValue() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> storage_;
};

}  // namespace kfuse

// Propagates an Error out of the calling function (which must return Status or
// Expected<U>).
#define KF_RETURN_IF_ERROR(expr)                          \
  do {                                                    \
    auto kf_status_ = (expr);                             \
    if (!kf_status_) return ::kfuse::Error(kf_status_.error()); \
  } while (0)

#define KF_CONCAT_INNER(a, b) a##b
#define KF_CONCAT(a, b) KF_CONCAT_INNER(a, b)
// KF_ASSIGN_OR_RETURN(auto x, expectedExpr);
#define KF_ASSIGN_OR_RETURN(decl, expr) \
  KF_ASSIGN_OR_RETURN_IMPL(KF_CONCAT(kf_expected_, __LINE__), decl, expr)
#define KF_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr)        \
  auto tmp = (expr);                                     \
  if (!tmp) return ::kfuse::Error(tmp.error());          \
  decl = std::move(*tmp)
