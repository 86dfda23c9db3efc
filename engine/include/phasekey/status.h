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

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  static Status FailedPrecondition(std::string msg) { return {StatusCode::kFailedPrecondition, std::move(msg)}; }
  static Status DeadlineExceeded(std::string msg) { return {StatusCode::kDeadlineExceeded, std::move(msg)}; }
  static Status Retryable(std::string msg) { return {StatusCode::kRetryable, std::move(msg)}; }
  static Status OutcomeUnknown(std::string msg) { return {StatusCode::kOutcomeUnknown, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status Terminal(std::string msg) { return {StatusCode::kTerminal, std::move(msg)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  // The human-readable detail; empty for OK.
  const std::string& message() const { return message_; }

  bool IsRetryable() const { return code_ == StatusCode::kRetryable; }
  bool IsOutcomeUnknown() const { return code_ == StatusCode::kOutcomeUnknown; }
  bool IsDeadlineExceeded() const { return code_ == StatusCode::kDeadlineExceeded; }
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
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status error) : v_(std::move(error)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result needs a non-OK Status");
  }

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const Status& error() const { return std::get<Status>(v_); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace phasekey

#endif  // PHASEKEY_STATUS_H_
