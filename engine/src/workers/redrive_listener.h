// RedriveListener: LISTENs on the "phasekey_redrive" channel on a connection
// of its own and calls back for every key released for re-drive, with the
// key's bucket and how long until it is due. Runs on its own thread; the
// callback runs on that thread. Reconnects after a lost connection.
#ifndef PHASEKEY_SRC_WORKERS_REDRIVE_LISTENER_H_
#define PHASEKEY_SRC_WORKERS_REDRIVE_LISTENER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "phasekey/database_options.h"

namespace phasekey::workers {

class RedriveListener {
 public:
  using Callback = std::function<void(int bucket, std::chrono::milliseconds due_in)>;
  static std::unique_ptr<RedriveListener> Start(const DatabaseOptions& database, Callback callback);
  ~RedriveListener();
  void Stop();

 private:
  RedriveListener(DatabaseOptions database, Callback callback);
  void Loop();
  const DatabaseOptions database_;
  const Callback callback_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace phasekey::workers

#endif  // PHASEKEY_SRC_WORKERS_REDRIVE_LISTENER_H_
