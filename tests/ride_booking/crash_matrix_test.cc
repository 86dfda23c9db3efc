// The crash matrix: for every crash point on a ride's path, the service (or
// the worker) really dies by SIGKILL there; then the ride is recovered two
// ways, by a client retry and by the re-drive worker alone, and the
// invariants are checked against the database and the gateway's ledger.
// Needs the crash points compiled in (./run.sh test builds them).
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <thread>

#include "phasekey/crash_point.h"
#include "support/child_process.h"
#include "support/http_client.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::ChildProcess;
using testing::HttpCall;
using testing::HttpResult;
using testing::TestDatabase;

const std::string kRide = R"({"origin_lat": 1, "origin_lon": 2, "target_lat": 3, "target_lon": 4})";
const std::string kKey = "crash-matrix-ride-0001";

enum class Recovery { kClientRetry, kWorker };

struct Case {
  std::string point;
  bool in_worker = false;  // the worker dies there (else the service)
};

const std::vector<Case> kCases = {
    {"claim.before_commit"},          {"claim.after_commit"},
    {"foreign.charge.before_call"},   {"foreign.sent"},
    {"foreign.charge.after_call"},    {"phase.send_receipt.before_commit"},
    {"phase.send_receipt.after_commit"}, {"response.before_commit"},
    {"response.after_commit"},        {"redrive.claimed", true},
    {"enqueuer.delivered", true},
};

// One isolated world: a database, a gateway, and the ride processes.
class World {
 public:
  World() : gw_dir_(std::filesystem::temp_directory_path() / ("pk-crash-" + db_.name())) {
    gateway_ = std::make_unique<ChildProcess>(std::vector<std::string>{
        FAKE_GATEWAY_PATH, "--listen", "127.0.0.1:0", "--data-dir", gw_dir_.string()});
    gw_port_ = gateway_->WaitForListeningPort();
  }
  ~World() {
    gateway_.reset();
    std::filesystem::remove_all(gw_dir_);
  }

  std::vector<std::string> Args(const std::string& command) const {
    return {RIDE_BOOKING_PATH, command, "--database-url", db_.url(), "--gateway-url",
            "http://127.0.0.1:" + std::to_string(gw_port_), "--lease-seconds", "2", "--charge-timeout-ms", "800"};
  }
  // Starts `ride_booking serve`. One that prints no port within 30 s (it
  // ended, or hangs) is reported on stderr and started once more: the
  // matrix tests recovery from a crash point, not start-up under a loaded
  // machine; a second failure leaves port_ 0 and the case fails.
  std::unique_ptr<ChildProcess> Service(const std::string& crash_at = "") {
    auto args = Args("serve");
    args.insert(args.end(), {"--listen", "127.0.0.1:0"});
    std::vector<std::string> env;
    if (!crash_at.empty()) env.push_back("PHASEKEY_CRASH_AT=" + crash_at);
    for (int start = 1;; ++start) {
      auto p = std::make_unique<ChildProcess>(args, env);
      port_ = p->WaitForListeningPort();
      if (port_ != 0 || start == 2) return p;
      const std::optional<int> ended = p->TryWait();
      std::fprintf(stderr, "crash_matrix: ride_booking serve (pid %d) printed no port within 30 s: %s; starting it again\n",
                   static_cast<int>(p->pid()),
                   ended ? ("it ended with status " + std::to_string(*ended)).c_str() : "it is still running");
    }
  }
  // For a failure message: whether the last service still runs.
  static std::string Liveness(ChildProcess* service) {
    const std::optional<int> ended = service->TryWait();
    return ended ? "the service had ended with status " + std::to_string(*ended) : "the service was running";
  }
  std::unique_ptr<ChildProcess> Worker(const std::string& crash_at = "") {
    auto args = Args("worker");
    args.insert(args.end(), {"--poll-ms", "100"});
    std::vector<std::string> env;
    if (!crash_at.empty()) env.push_back("PHASEKEY_CRASH_AT=" + crash_at);
    worker_log_ = (gw_dir_ / ("worker-" + std::to_string(++workers_) + ".log")).string();
    return std::make_unique<ChildProcess>(args, env, worker_log_);
  }
  // Waits until the last worker started has logged that it runs (its stop
  // signals are blocked and handled from then on: a SIGTERM sent earlier
  // would kill it instead of stopping it).
  bool WaitForWorkerRunning() {
    for (int i = 0; i < 200; ++i) {
      std::ifstream log(worker_log_);
      for (std::string line; std::getline(log, line);) {
        if (line.find("worker running") != std::string::npos) return true;
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
    return false;
  }
  HttpResult Post() {
    return HttpCall(port_, "POST", "/rides",
                    {{"Authorization", "Bearer tok_user_1"}, {"Idempotency-Key", kKey}}, kRide, milliseconds(10000));
  }
  // Retries like a careful client until a final answer (not 409/503).
  HttpResult PostUntilFinal() {
    HttpResult r;
    for (int i = 0; i < 60; ++i) {
      r = Post();
      if (r.ok && r.status != 409 && r.status != 503) return r;
      std::this_thread::sleep_for(milliseconds(200));
    }
    return r;
  }
  std::string Value(const std::string& sql) {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    auto f = tx.exec1(sql)[0];
    return f.is_null() ? "<null>" : f.as<std::string>();
  }
  bool KeyFinished() {
    return Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'finished'") == "1";
  }
  nlohmann::json Ledger() { return nlohmann::json::parse(HttpCall(gw_port_, "GET", "/_ledger", {}, "").body); }

 private:
  TestDatabase db_;
  std::filesystem::path gw_dir_;
  std::string worker_log_;
  int workers_ = 0;
  std::unique_ptr<ChildProcess> gateway_;
  std::uint16_t gw_port_ = 0;
  std::uint16_t port_ = 0;
};

// Returns "" when every invariant holds, else what failed.
std::string CheckInvariants(World& w, const HttpResult& final_answer) {
  if (!final_answer.ok || final_answer.status != 201) {
    return "final answer " + std::to_string(final_answer.status) + " " + final_answer.error;
  }
  auto ledger = w.Ledger();
  if (ledger.size() != 1) return std::to_string(ledger.size()) + " charges in the ledger";
  if (w.Value("SELECT count(*) FROM rides") != "1") return w.Value("SELECT count(*) FROM rides") + " rides";
  const auto body = nlohmann::json::parse(final_answer.body);
  if (body["charge_id"] != ledger[0]["id"]) return "the answer names another charge than the ledger's";
  if (w.Value("SELECT charge_id FROM rides") != ledger[0]["id"].get<std::string>()) return "ride without its charge";
  HttpResult replay = w.Post();
  if (replay.status != final_answer.status || replay.body != final_answer.body) return "a retry got another answer";
  if (w.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE owner_token IS NOT NULL") != "0") {
    return "a key left locked";
  }
  const int staged = std::stoi(w.Value("SELECT count(*) FROM phasekey.staged_jobs"));
  const int receipts = std::stoi(w.Value("SELECT count(*) FROM receipts"));
  if (receipts > 1) return "a receipt sent twice";
  if (staged + receipts < 1) return "the staged receipt job was lost";
  return "";
}

// Makes the armed process die at `c.point`; leaves the ride to recover.
std::string Crash(World& w, const Case& c) {
  if (!c.in_worker) {
    auto service = w.Service(c.point);
    HttpResult r = w.Post();
    if (r.ok) return "the request answered " + std::to_string(r.status) + ": the point was not reached";
    if (service->Wait() != 128 + SIGKILL) return "the service did not die by SIGKILL";
    return "";
  }
  if (c.point == "redrive.claimed") {
    auto service = w.Service("foreign.sent");  // leave a key for the worker
    w.Post();
    if (service->Wait() != 128 + SIGKILL) return "the service did not die at foreign.sent";
  } else {  // enqueuer.delivered: a finished ride with its staged receipt
    auto service = w.Service();
    if (w.Post().status != 201) return "the ride was not booked";
  }
  auto worker = w.Worker(c.point);
  if (worker->Wait() != 128 + SIGKILL) return "the worker did not die by SIGKILL";
  return "";
}

std::string Recover(World& w, Recovery how) {
  if (how == Recovery::kWorker) {
    auto worker = w.Worker();
    if (!w.WaitForWorkerRunning()) return "the worker did not start";
    for (int i = 0; i < 100 && !w.KeyFinished(); ++i) std::this_thread::sleep_for(milliseconds(100));
    const bool no_key = w.Value("SELECT count(*) FROM phasekey.idempotency_keys") == "0";
    worker->Signal(SIGTERM);
    if (worker->Wait() != 0) return "the worker did not stop cleanly";
    if (!no_key && !w.KeyFinished()) return "the worker did not finish the key";
  }
  auto service = w.Service();
  std::string broken = CheckInvariants(w, w.PostUntilFinal());
  if (!broken.empty()) broken += " (" + World::Liveness(service.get()) + ")";
  return broken;
}

TEST(CrashMatrixTest, EveryCrashPointRecoversByClientRetryAndByTheWorker) {
  if (!CrashPointsCompiledIn()) {
    GTEST_SKIP() << "crash points are not compiled in: configure with -DPHASEKEY_CRASH_POINTS=ON "
                    "(./run.sh test does)";
  }
  std::mutex mu;
  std::map<std::string, std::pair<std::string, std::string>> matrix;
  std::vector<std::future<void>> running;
  std::atomic<std::size_t> next{0};
  for (int t = 0; t < 3; ++t) {
    running.push_back(std::async(std::launch::async, [&] {
      for (std::size_t i; (i = next++) < kCases.size() * 2;) {
        const Case& c = kCases[i / 2];
        const Recovery how = i % 2 == 0 ? Recovery::kClientRetry : Recovery::kWorker;
        World w;
        std::string result = Crash(w, c);
        if (result.empty()) result = Recover(w, how);
        std::lock_guard lock(mu);
        (how == Recovery::kClientRetry ? matrix[c.point].first : matrix[c.point].second) =
            result.empty() ? "ok" : "FAIL: " + result;
      }
    }));
  }
  for (auto& r : running) r.get();
  std::printf("\n| crash point | client retry | re-drive worker |\n|---|---|---|\n");
  for (const auto& c : kCases) {
    const auto& [retry, worker] = matrix[c.point];
    std::printf("| %s%s | %s | %s |\n", c.point.c_str(), c.in_worker ? " (worker)" : "", retry.c_str(),
                worker.c_str());
    EXPECT_EQ(retry, "ok") << c.point << " recovered by client retry";
    EXPECT_EQ(worker, "ok") << c.point << " recovered by the worker";
  }
}

}  // namespace
}  // namespace phasekey
