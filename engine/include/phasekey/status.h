// Status and Result<T>: how every fallible phasekey call reports failure.
//
// The public API never lets an exception escape unclassified: calls return a
// Status (or a Result<T> holding either a value or a non-OK Status). An OK
// Status carries no allocation. Status is cheap to copy and thread-compatible
// (distinct objects may be used from distinct threads).
#ifndef PHASEKEY_STATUS_H_
#define PHASEKEY_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace phasekey {

// The closed set of failure codes. Each says what the caller should do.
enum class StatusCode {
  kOk = 0,
  // The caller passed something malformed (bad URL, bad option, bad input).
  // Retrying the same call cannot succeed.
  kInvalidArgument,
  // The system is not in a state that allows the call (for example the
  // database schema is newer than this binary). Needs an operator.
  kFailedPrecondition,
  // The call could not finish before its deadline. Whether the work happened
  // is decided by IsOutcomeUnknown(): a deadline while committing is unknown.
  kDeadlineExceeded,
  // A transient failure (serialization failure, deadlock, lost connection
  // before COMMIT was sent, server restarting, pool exhausted). The whole
  // unit of work may be retried.
  kRetryable,
  // The outcome is not known: the connection was lost while committing, or
  // the server reported 40003/08007. Never retry blindly; re-read state.
  kOutcomeUnknown,
  // Something was not found.
  kNotFound,
  // A terminal failure: retrying will not help.
  kTerminal,
};

// Returns the lowercase name of `code`, e.g. "retryable".
std::string_view StatusCodeName(StatusCode code);

// The outcome of a call that returns no value: OK, or a StatusCode that
// says what the caller should do plus a message for people. [[nodiscard]]: a
// Status that is dropped is a failure that is ignored. A value type, cheap
// to copy; compare codes, never messages (their wording may change).
class [[nodiscard]] Status {
 public:
  Status() = default;  // OK

  // An OK Status, the same as Status(). The factories below take `msg`, the
  // detail for logs and operators: what failed, and with which input.
  static Status OK() { return Status(); }
  // The caller's input is wrong: a retry of the same call fails again.
  static Status InvalidArgument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  // The system's state forbids the call; an operator must act.
  static Status FailedPrecondition(std::string msg) { return {StatusCode::kFailedPrecondition, std::move(msg)}; }
  // A deadline passed before the call finished (see kDeadlineExceeded).
  static Status DeadlineExceeded(std::string msg) { return {StatusCode::kDeadlineExceeded, std::move(msg)}; }
  // A transient failure: the whole unit of work may be retried.
  static Status Retryable(std::string msg) { return {StatusCode::kRetryable, std::move(msg)}; }
  // The work may or may not have happened: re-read state before retrying.
  static Status OutcomeUnknown(std::string msg) { return {StatusCode::kOutcomeUnknown, std::move(msg)}; }
  // The thing asked for does not exist.
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  // A final failure: no retry will help.
  static Status Terminal(std::string msg) { return {StatusCode::kTerminal, std::move(msg)}; }

  // True when the call succeeded (code() is kOk).
  bool ok() const { return code_ == StatusCode::kOk; }
  // The failure's code; kOk for OK.
  StatusCode code() const { return code_; }
  // The human-readable detail; empty for OK.
  const std::string& message() const { return message_; }

  // code() is kRetryable.
  bool IsRetryable() const { return code_ == StatusCode::kRetryable; }
  // code() is kOutcomeUnknown.
  bool IsOutcomeUnknown() const { return code_ == StatusCode::kOutcomeUnknown; }
  // code() is kDeadlineExceeded.
  bool IsDeadlineExceeded() const { return code_ == StatusCode::kDeadlineExceeded; }
  // code() is kTerminal.
  bool IsTerminal() const { return code_ == StatusCode::kTerminal; }

  // "<code name>: <message>", or "ok".
  std::string ToString() const;

 private:
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a T or a non-OK Status. Member names follow std::expected so that
// moving to C++23 is a type alias.
template <class T>
class [[nodiscard]] Result {
 public:
  // Holds `value`. Implicit, so a function returning Result<T> can
  // `return value;`.
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  // Holds `error`, which must not be OK (asserted in debug builds; a Result
  // holding an OK Status would have neither value nor error). Implicit, so a
  // function returning Result<T> can `return Status::NotFound(...);`.
  Result(Status error) : v_(std::move(error)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result needs a non-OK Status");
  }

  // True when it holds a value, false when it holds an error.
  bool has_value() const { return v_.index() == 0; }
  // has_value().
  explicit operator bool() const { return has_value(); }
  // The value. Only when has_value(): otherwise it throws
  // std::bad_variant_access (check first; that exception is a bug).
  T& value() & { return std::get<T>(v_); }
  // The value; only when has_value() (see above).
  const T& value() const& { return std::get<T>(v_); }
  // The value, moved out; only when has_value(). This Result is left
  // holding a moved-from T.
  T&& value() && { return std::get<T>(std::move(v_)); }
  // The non-OK Status. Only when !has_value(): otherwise it throws
  // std::bad_variant_access.
  const Status& error() const { return std::get<Status>(v_); }
  // value().
  T& operator*() & { return value(); }
  // std::move(*this).value().
  T&& operator*() && { return std::move(*this).value(); }
  // value().
  const T& operator*() const& { return value(); }
  // &value(): a member of the value; only when has_value().
  T* operator->() { return &value(); }
  // &value(): a member of the value; only when has_value().
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace phasekey

#endif  // PHASEKEY_STATUS_H_
