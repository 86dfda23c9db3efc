// Clang's thread-safety annotations (-Wthread-safety) and a mutex they
// understand. Private to the engine.
//
// Under clang each macro expands to its attribute, so the compiler checks
// that a member marked GUARDED_BY(mu_) is only touched with mu_ held, and
// that a function marked REQUIRES(mu_) is only called with it held. Under
// any other compiler they expand to nothing. The fuzz tree
// (tests/fuzz/CMakeLists.txt) and any clang build of the project compile
// with -Wthread-safety.
//
// libstdc++'s std::mutex carries no annotation, so code that wants the
// check uses Mutex and MutexLock below instead of std::mutex and
// std::lock_guard / std::unique_lock.
//
//   Mutex mu_;
//   bool stop_ GUARDED_BY(mu_) = false;
//   std::condition_variable wake_;
//   ...
//   MutexLock lock(&mu_);
//   wake_.wait_for(lock.native(), interval, [this]() REQUIRES(mu_) { return stop_; });
#ifndef PHASEKEY_SRC_UTIL_THREAD_ANNOTATIONS_H_
#define PHASEKEY_SRC_UTIL_THREAD_ANNOTATIONS_H_

#include <mutex>

#if defined(__clang__)
#define PHASEKEY_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define PHASEKEY_THREAD_ANNOTATION(x)
#endif

// A type that is a lock ("mutex").
#define CAPABILITY(x) PHASEKEY_THREAD_ANNOTATION(capability(x))
// An RAII type that holds a capability for its lifetime.
#define SCOPED_CAPABILITY PHASEKEY_THREAD_ANNOTATION(scoped_lockable)
// A member read or written only with the given capability held.
#define GUARDED_BY(x) PHASEKEY_THREAD_ANNOTATION(guarded_by(x))
// A pointer member whose pointee is accessed only with the capability held.
#define PT_GUARDED_BY(x) PHASEKEY_THREAD_ANNOTATION(pt_guarded_by(x))
// A function called only with the capabilities held (and returning with them).
#define REQUIRES(...) PHASEKEY_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// A function called only without the capabilities held (it takes them).
#define EXCLUDES(...) PHASEKEY_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// A function that takes the capabilities (none named: `this`).
#define ACQUIRE(...) PHASEKEY_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
// A function that gives the capabilities up (none named: `this`).
#define RELEASE(...) PHASEKEY_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// A function the analysis skips (document why at each use).
#define NO_THREAD_SAFETY_ANALYSIS PHASEKEY_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace phasekey {

// std::mutex as a capability. BasicLockable (lock/unlock), so it also works
// with std::condition_variable_any; with std::condition_variable, wait on
// MutexLock::native().
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex from construction until Unlock() or destruction, like
// std::unique_lock.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : lock_(mu->mu_) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Releases the mutex before the end of the scope; the lock may not be used
  // afterwards.
  void Unlock() RELEASE() { lock_.unlock(); }

  // The underlying lock, for std::condition_variable's waits: they release
  // the mutex while blocked and hold it again when they return, so the
  // analysis rightly treats it as held throughout. Do not unlock it.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace phasekey

#endif  // PHASEKEY_SRC_UTIL_THREAD_ANNOTATIONS_H_
