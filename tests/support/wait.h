// Waiting for an event instead of sleeping for a guess of how long it takes.
#ifndef PHASEKEY_TESTS_SUPPORT_WAIT_H_
#define PHASEKEY_TESTS_SUPPORT_WAIT_H_

#include <chrono>
#include <thread>

namespace phasekey::testing {

// Calls `condition` (a callable returning bool) every `every` until it
// returns true (then returns true) or `timeout` has passed (then false).
template <class Condition>
bool WaitUntil(Condition&& condition, std::chrono::milliseconds timeout,
               std::chrono::milliseconds every = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(every);
  }
  return true;
}

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_WAIT_H_
