#include "phasekey/status.h"

namespace phasekey {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kFailedPrecondition: return "failed precondition";
    case StatusCode::kDeadlineExceeded: return "deadline exceeded";
    case StatusCode::kRetryable: return "retryable";
    case StatusCode::kOutcomeUnknown: return "outcome unknown";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kTerminal: return "terminal";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

}  // namespace phasekey
