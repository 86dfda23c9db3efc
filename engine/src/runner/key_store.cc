#include "runner/key_store.h"

namespace phasekey::runner {

const char* KeyStateName(KeyState s) {
  switch (s) {
    case KeyState::kActive: return "active";
    case KeyState::kFinished: return "finished";
    case KeyState::kDead: return "dead";
    case KeyState::kNeedsOperator: return "needs_operator";
  }
  return "active";
}

const char* ErrorClassName(ErrorClass c) {
  switch (c) {
    case ErrorClass::kRetryable: return "retryable";
    case ErrorClass::kOutcomeUnknown: return "outcome_unknown";
    case ErrorClass::kTerminal: return "terminal";
    case ErrorClass::kNeedsOperator: return "needs_operator";
    case ErrorClass::kNotTaken: return "not_taken";
    case ErrorClass::kUnclassified: return "unclassified";
    case ErrorClass::kLookupRequired: return "lookup_required";
    case ErrorClass::kGivenUp: return "given_up";
    case ErrorClass::kStranded: return "stranded";
    case ErrorClass::kRetiredPoint: return "retired_point";
    case ErrorClass::kErased: return "erased";
  }
  return "unclassified";
}

}  // namespace phasekey::runner
