// The ride booking example as real processes, for reliability tests: the
// fake gateway, `ride_booking serve` and `ride_booking worker` as child
// processes on one database; a load of careful clients; and the invariants
// every fault test checks afterwards against the database and the gateway's
// ledger (nothing acknowledged lost, nothing charged twice, every key
// finished and unlocked).
#ifndef PHASEKEY_TESTS_SUPPORT_RIDE_WORLD_H_
#define PHASEKEY_TESTS_SUPPORT_RIDE_WORLD_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.h"
#include "support/http_client.h"

namespace phasekey::testing {

// A valid ride request body.
inline const std::string kRideBody = R"({"origin_lat": 1, "origin_lon": 2, "target_lat": 3, "target_lon": 4})";

// How to set up a RideWorld. The processes are this build tree's
// ride_booking and fake_gateway binaries. Every member has an initializer,
// so a designated initializer names only what it sets:
//   RideWorld world({.database_url = db.url(), .lease_seconds = 15});
struct RideWorldOptions {
  std::string database_url{};  // required: libpq URL the processes use
  // Passed to every service and worker (0: not passed, the service's
  // default). The lease must outlast the charge timeout plus one second
  // (the service's lease margin).
  int lease_seconds = 3;
  int charge_timeout_ms = 1000;
  // The payment provider (fake_gateway --dialect, ride_booking --provider).
  std::string provider = "stripe";
  // The provider's API credential: the gateway requires it
  // (FAKE_GATEWAY_SECRET), the service and the worker send it
  // (RIDE_BOOKING_PROVIDER_SECRET). Empty: none.
  std::string provider_secret{};
  // Where the processes' stderr goes: "<log_dir>/<name>.log"; empty means
  // inherited. Created if missing.
  std::string log_dir{};
  // More fake_gateway flags (e.g. {"--seed", "7"}, webhook delivery) and
  // environment (e.g. FAKE_GATEWAY_WEBHOOK_SECRET=...).
  std::vector<std::string> gateway_args{};
  std::vector<std::string> gateway_env{};
  // The gateway's port on 127.0.0.1; 0: any free one (gateway_port()).
  std::uint16_t gateway_port = 0;
  // Passed to every service and worker as --lookup-window-ms: how long the
  // provider's lookup may lag behind a charge. The fake gateway's lookups
  // do not lag unless gateway_args add --lookup-lag-ms, so 0 is the truth
  // for it (the adapters' own defaults assume real providers, up to an hour
  // for HyperPay); with a lag, at least that lag. -1: not passed.
  int lookup_window_ms = 0;
  // The services reach the gateway over https (--gateway-url https://...):
  // gateway_args must then give it --tls-cert and --tls-key, and the
  // services' args --provider-ca-file. The world's own gateway helpers
  // (SetGatewayFaults, Ledger) speak plain HTTP and do not work then.
  bool gateway_tls = false;
};

// How to start one `ride_booking serve` or `ride_booking worker`. Every
// member has an initializer, so a designated initializer names only what it
// sets (GCC's -Wmissing-field-initializers).
struct RideProcessOptions {
  // Names its stderr file (RideWorldOptions::log_dir); empty: "service" or
  // "worker".
  std::string name{};
  // Where its stderr goes instead, when not empty.
  std::string log_path{};
  // Its environment after the provider credential (so it may set another).
  std::vector<std::string> env{};
  // More flags, e.g. {"--metrics-listen", "127.0.0.1:0"}.
  std::vector<std::string> args{};
  // serve: the port to listen on, 127.0.0.1; 0: any free one.
  std::uint16_t port = 0;
  // Override the world's lease and charge timeout when not 0.
  int lease_seconds = 0;
  int charge_timeout_ms = 0;
};

// One isolated world: a gateway with its own ledger directory, and whatever
// services and workers the test starts. Not thread-safe, except the const
// query helpers (each opens its own connection) and the HTTP helpers.
class RideWorld {
 public:
  // Starts the gateway. Throws std::runtime_error when it does not start.
  explicit RideWorld(RideWorldOptions options);
  ~RideWorld();
  RideWorld(const RideWorld&) = delete;
  RideWorld& operator=(const RideWorld&) = delete;

  // Starts `ride_booking serve`; stores its port in *port (0 when it did not
  // print "listening on" within 30 s).
  std::unique_ptr<ChildProcess> StartService(std::uint16_t* port, const RideProcessOptions& process = {});
  // Starts `ride_booking worker` (re-drive, reaper, enqueuer), polling every
  // 100 ms.
  std::unique_ptr<ChildProcess> StartWorker(const RideProcessOptions& process = {});

  // Stops the gateway with SIGTERM and returns its exit status; its ledger
  // (in the world's data directory) stays for StartGateway.
  int StopGateway();
  // Starts the gateway again, on the same port and data directory. Throws
  // std::runtime_error when it does not start there.
  void StartGateway();

  // POST /rides as user `user` (token tok_user_<user>) with `key`.
  HttpResult PostRide(std::uint16_t port, int user, const std::string& key, const std::string& body = kRideBody,
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(30000)) const;
  // Merges `faults` into the gateway's faults (POST /_faults); true on 200.
  bool SetGatewayFaults(const nlohmann::json& faults) const;
  // GET /_ledger: every charge made, oldest first.
  nlohmann::json Ledger() const;

  // The first column of the first row of `sql`, as text ("<null>" for
  // NULL). Throws on a database error.
  std::string Value(const std::string& sql) const;
  // Every row of `sql`, each row's columns joined by '|'.
  std::vector<std::string> Rows(const std::string& sql) const;

  std::uint16_t gateway_port() const { return gateway_port_; }
  const RideWorldOptions& options() const { return options_; }
  // "<log_dir>/<name>.log", or "" without a log_dir.
  std::string LogPath(const std::string& name) const;

 private:
  std::vector<std::string> Args(const std::string& command, const RideProcessOptions& process) const;
  // Where `process`'s stderr goes ("" : inherited).
  std::string LogPath(const RideProcessOptions& process, const std::string& default_name) const;
  // The service's and the worker's environment: the provider credential,
  // then the process's own.
  std::vector<std::string> Environment(const RideProcessOptions& process) const;

  RideWorldOptions options_;
  std::string gateway_dir_;
  std::unique_ptr<ChildProcess> gateway_;
  std::uint16_t gateway_port_ = 0;
};

// A 201 a client received.
struct Booking {
  int user = 0;
  std::string key;
  long long ride_id = 0;
  std::string charge_id;
};

// Clients booking rides against one service, each thread with keys of its
// own, one after the other. Each key is retried like a careful client: the
// same request again after 100 ms on 409, 503, or a transport failure,
// until a final answer (anything else). Start() returns at once; Stop()
// lets every client finish the key it is on (retrying it until `converge`
// has passed), then joins.
class RideLoad {
 public:
  RideLoad(const RideWorld* world, std::uint16_t port, int clients, std::string key_prefix);
  ~RideLoad();  // Stop()s
  RideLoad(const RideLoad&) = delete;
  RideLoad& operator=(const RideLoad&) = delete;

  void Start();
  void Stop(std::chrono::milliseconds converge = std::chrono::milliseconds(60000));

  // After Stop(): every 201 received, every key sent, and a description of
  // each answer that was neither 201 nor a retryable 409/503 (empty when all
  // were fine).
  const std::vector<Booking>& bookings() const { return bookings_; }
  const std::vector<std::string>& keys() const { return keys_; }
  const std::vector<std::string>& unexpected() const { return unexpected_; }
  // Answers by status (0: transport failure), over the whole run.
  std::map<int, int> statuses() const;
  // Keys a client gave up on because `converge` ran out (not finished).
  const std::vector<std::string>& abandoned() const { return abandoned_; }
  // The longest any single request took to answer (or to fail).
  std::chrono::milliseconds longest_answer() const;

 private:
  void Client(int index);

  const RideWorld* world_;
  std::uint16_t port_;
  int clients_;
  std::string prefix_;
  std::atomic<bool> stopping_{false};
  std::chrono::steady_clock::time_point give_up_at_;
  std::atomic<bool> give_up_armed_{false};
  std::vector<std::thread> threads_;
  mutable std::mutex mu_;
  std::vector<Booking> bookings_;         // GUARDED_BY(mu_) until joined
  std::vector<std::string> keys_;         // GUARDED_BY(mu_) until joined
  std::vector<std::string> unexpected_;   // GUARDED_BY(mu_) until joined
  std::vector<std::string> abandoned_;    // GUARDED_BY(mu_) until joined
  std::map<int, int> statuses_;           // GUARDED_BY(mu_)
  std::chrono::milliseconds longest_{0};  // GUARDED_BY(mu_)
};

// Checks, after a fault has cleared and the load has stopped, that
//   - every acknowledged booking has its ride (same id, user and charge) and
//     its charge in the ledger;
//   - the ledger has exactly one charge per ride, none without a ride, and
//     no provider key twice;
//   - every key sent is finished, none is left locked, and there is exactly
//     one ride per key.
// Returns "" when all hold, else one line per violation.
std::string CheckNothingLostNothingTwice(const RideWorld& world, const RideLoad& load);

// Waits up to `timeout` until every idempotency key is finished (polling
// every 100 ms); true if they all are.
bool WaitUntilAllKeysFinished(const RideWorld& world, std::chrono::milliseconds timeout);

// A free TCP port on 127.0.0.1 (bound and released; may be taken again by
// the time it is used, which callers tolerate by failing clearly).
std::uint16_t FreeLoopbackPort();

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_RIDE_WORLD_H_
