// SIGINT and SIGTERM as a request to stop, taken synchronously: block them
// before the process starts its threads (which inherit the mask), then wait
// for one in a single place. Header-only, so a program that does not link
// phasekey (the example's fake gateway) can use it too.
#ifndef PHASEKEY_TOOLS_STOP_SIGNALS_H_
#define PHASEKEY_TOOLS_STOP_SIGNALS_H_

#include <pthread.h>
#include <signal.h>

namespace phasekey {

// Blocks SIGINT and SIGTERM in the calling thread, and so in every thread it
// creates afterwards; returns that set, for WaitForStopSignal or
// sigtimedwait. When `previous` is not null it receives the mask in force
// before, to restore with pthread_sigmask(SIG_SETMASK, previous, nullptr).
inline sigset_t BlockStopSignals(sigset_t* previous = nullptr) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, previous);
  return stop;
}

// Waits until one of `blocked` (from BlockStopSignals) is pending and takes
// it; returns its number.
inline int WaitForStopSignal(const sigset_t& blocked) {
  int signal_number = 0;
  sigwait(&blocked, &signal_number);
  return signal_number;
}

}  // namespace phasekey

#endif  // PHASEKEY_TOOLS_STOP_SIGNALS_H_
