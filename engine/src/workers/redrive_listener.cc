#include "workers/redrive_listener.h"

#include <pqxx/connection>
#include <pqxx/notification>

#include <cstdio>
#include <sstream>

#include "pg/conninfo.h"

namespace phasekey::workers {
namespace {

constexpr const char* kChannel = "phasekey_redrive";

class Receiver final : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& conn, const RedriveListener::Callback& cb)
      : pqxx::notification_receiver(conn, kChannel), cb_(cb) {}
  void operator()(const std::string& payload, int) override {
    std::istringstream in(payload);
    int bucket = 0;
    long long due_ms = 0;
    if (in >> bucket >> due_ms) cb_(bucket, std::chrono::milliseconds(due_ms));
  }

 private:
  const RedriveListener::Callback& cb_;
};

}  // namespace

std::unique_ptr<RedriveListener> RedriveListener::Start(const DatabaseOptions& database, Callback callback) {
  std::unique_ptr<RedriveListener> l(new RedriveListener(database, std::move(callback)));
  l->thread_ = std::thread([p = l.get()] { p->Loop(); });
  return l;
}

RedriveListener::RedriveListener(DatabaseOptions database, Callback callback)
    : database_(std::move(database)), callback_(std::move(callback)) {}

RedriveListener::~RedriveListener() { Stop(); }

void RedriveListener::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void RedriveListener::Loop() {
  while (!stop_) {
    try {
      const std::string& url = database_.session_url.empty() ? database_.url : database_.session_url;
      pqxx::connection conn(pg::HardenConnInfo(url, database_));
      Receiver receiver(conn, callback_);
      // Short waits so Stop() is noticed quickly; keepalives watch the link.
      while (!stop_) conn.await_notification(0, 200000);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "phasekey redrive: notification listener: %s (reconnecting)\n", e.what());
      for (int i = 0; i < 10 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

}  // namespace phasekey::workers
