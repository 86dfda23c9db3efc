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

}  // namespace phasekey::runner
