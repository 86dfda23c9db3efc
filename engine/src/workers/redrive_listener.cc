#include "workers/redrive_listener.h"

#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>

#include "pg/conninfo.h"
#include "sql/sql_catalog.h"

// libpq itself, not libpqxx: libpqxx 6.4 delivers notifications only to a
// subclass of pqxx::notification_receiver, and the engine subclasses no
// libpqxx class (issue 31).
namespace phasekey::workers {
namespace {

constexpr const char* kChannel = "phasekey_redrive";
constexpr int kWaitMs = 200;  // short waits, so that Stop() is noticed quickly

struct PqFinish {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using Connection = std::unique_ptr<PGconn, PqFinish>;

struct PqClear {
  void operator()(PGresult* r) const { PQclear(r); }
};

std::string Error(PGconn* c) {
  std::string e = c != nullptr ? PQerrorMessage(c) : "out of memory";
  while (!e.empty() && e.back() == '\n') e.pop_back();
  return e;
}

// Runs LISTEN on a new connection; empty error on success.
Connection Listen(const std::string& conninfo, std::string* error) {
  Connection conn(PQconnectdb(conninfo.c_str()));
  if (conn == nullptr || PQstatus(conn.get()) != CONNECTION_OK) {
    *error = "cannot connect: " + Error(conn.get());
    return nullptr;
  }
  std::unique_ptr<PGresult, PqClear> r(PQexec(conn.get(), sql::Query(sql::q::RedriveListen).c_str()));
  if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
    *error = "cannot subscribe to the channel: " + Error(conn.get());
    return nullptr;
  }
  return conn;
}

// Calls back for every notification libpq has read.
void Deliver(PGconn* conn, const RedriveListener::Callback& callback) {
  while (PGnotify* n = PQnotifies(conn)) {
    std::unique_ptr<PGnotify, decltype(&PQfreemem)> owned(n, &PQfreemem);
    if (std::strcmp(n->relname, kChannel) != 0) continue;
    std::istringstream in(n->extra);
    int bucket = 0;
    long long due_ms = 0;
    if (!(in >> bucket >> due_ms)) continue;
    try {
      callback(bucket, std::chrono::milliseconds(due_ms));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "phasekey redrive: notification callback threw: %s\n", e.what());
    }
  }
}

// Waits up to kWaitMs for input and reads it; false with *error when the
// connection failed.
bool Receive(PGconn* conn, std::string* error) {
  if (PQstatus(conn) != CONNECTION_OK) {
    *error = "connection lost: " + Error(conn);
    return false;
  }
  pollfd p{PQsocket(conn), POLLIN, 0};
  const int n = poll(&p, 1, kWaitMs);
  if (n < 0 && errno != EINTR) {
    *error = std::string("poll: ") + std::strerror(errno);
    return false;
  }
  if (n > 0 && PQconsumeInput(conn) != 1) {
    *error = Error(conn);
    return false;
  }
  return true;
}

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
  const std::string& url = database_.session_url.empty() ? database_.url : database_.session_url;
  const std::string conninfo = pg::HardenConnInfo(url, database_);
  while (!stop_) {
    std::string error;
    if (Connection conn = Listen(conninfo, &error)) {
      // Keepalives (HardenConnInfo) make a dead link fail the socket.
      do {
        Deliver(conn.get(), callback_);
      } while (!stop_ && Receive(conn.get(), &error));
    }
    if (stop_) break;
    std::fprintf(stderr, "phasekey redrive: notification listener: %s (reconnecting)\n", error.c_str());
    for (int i = 0; i < 10 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace phasekey::workers
