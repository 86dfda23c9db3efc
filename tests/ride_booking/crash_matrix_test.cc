// The crash matrix: for every crash point on a ride's path, the service (or
// the worker) really dies by SIGKILL there; then the ride is recovered two
// ways, by a client retry and by the re-drive worker alone (the client only
// reads the stored answer afterwards), and the invariants are checked
// against the database, the gateway's ledger and the receipt sink's record
// of every delivery (receipt_deliveries, which can hold a receipt sent
// twice). The matrix is written to the build tree's results/, and with
// `./run.sh record` to docs/results/crash_matrix.json and rendered into
// docs/reliability.md (tests/doc_results/doc_results.h, RecordResult).
// Needs the crash points compiled in (./run.sh test builds them).
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "doc_results/doc_results.h"
#include "phasekey/crash_point.h"
#include "support/child_process.h"
#include "support/http_client.h"
#include "support/prerequisites.h"
#include "support/ride_world.h"
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
// Where a service dies to leave a key for the worker: the charge was sent,
// its answer never read, the key leased at ride_created.
const std::string kLeaveKeyAt = "foreign.sent";

enum class Recovery { kClientRetry, kWorker };

struct Case {
  std::string point;
  bool in_worker = false;  // the worker dies there on both paths (else the service)
  // On the re-drive path the worker, not the service, dies there, while
  // re-driving a key the service left at kLeaveKeyAt: a service dying there
  // leaves nothing for a worker to re-drive.
  bool worker_dies_on_redrive = false;
};

const std::vector<Case> kCases = {
    {"claim.before_commit", false, true},
    {"claim.after_commit"},
    {"foreign.charge.before_call"},
    {"foreign.sent"},
    {"foreign.charge.after_call"},
    {"phase.send_receipt.before_commit"},
    {"phase.send_receipt.after_commit"},
    {"response.before_commit"},
    {"response.after_commit"},
    {"redrive.claimed", true},
    {"enqueuer.delivered", true},
};

// One recovery's outcome, as written to the result file.
struct Cell {
  std::string dies = "service";  // who died at the point
  std::string left_by;           // the point the service died at first, if any
  std::string result;            // "ok" or "FAIL: why"
  int charges = 0, receipt_deliveries = 0, receipts_sent = 0;

  nlohmann::json ToJson() const {
    nlohmann::json j = {{"dies", dies},
                        {"result", result},
                        {"charges", charges},
                        {"receipt_deliveries", receipt_deliveries},
                        {"receipts_sent", receipts_sent}};
    if (!left_by.empty()) j["left_by"] = left_by;
    return j;
  }
};

// Polls `done` every 100 ms until it holds or `timeout` passed.
bool WaitUntil(const std::function<bool()>& done, milliseconds timeout) {
  for (auto end = std::chrono::steady_clock::now() + timeout; !done();) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return true;
}

// Waits up to 30 s for `p` to end; its exit status, or -1 (then it is
// killed) when it still runs.
int WaitForEnd(ChildProcess* p) {
  std::optional<int> status;
  WaitUntil([&] { return (status = p->TryWait()).has_value(); }, milliseconds(30000));
  if (status) return *status;
  p->Signal(SIGKILL);
  p->Wait();
  return -1;
}

// One isolated world: a database, a gateway, and the ride processes (a
// RideWorld); the workers' stderr goes to files in a directory of its own.
class World {
 public:
  World() : log_dir_(std::filesystem::temp_directory_path() / ("pk-crash-" + db_.name())) {
    std::filesystem::create_directories(log_dir_);
    testing::RideWorldOptions o{.database_url = db_.url(), .lease_seconds = 2, .charge_timeout_ms = 800};
    world_ = std::make_unique<testing::RideWorld>(o);
  }
  ~World() {
    world_.reset();
    std::filesystem::remove_all(log_dir_);
  }

  // Starts `ride_booking serve`. One that prints no port within 30 s (it
  // ended, or hangs) is reported on stderr and started once more: the
  // matrix tests recovery from a crash point, not start-up under a loaded
  // machine; a second failure leaves port_ 0 and the case fails.
  std::unique_ptr<ChildProcess> Service(const std::string& crash_at = "") {
    for (int start = 1;; ++start) {
      auto p = world_->StartService(&port_, {.env = CrashAt(crash_at)});
      if (port_ != 0 || start == 2) return p;
      const std::optional<int> ended = p->TryWait();
      std::fprintf(stderr,
                   "crash_matrix: ride_booking serve (pid %d) printed no port within 30 s: %s; starting it again\n",
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
    worker_log_ = (log_dir_ / ("worker-" + std::to_string(++workers_) + ".log")).string();
    return world_->StartWorker({.log_path = worker_log_, .env = CrashAt(crash_at)});
  }
  // Waits until the last worker started has logged that it runs (its stop
  // signals are blocked and handled from then on: a SIGTERM sent earlier
  // would kill it instead of stopping it).
  bool WaitForWorkerRunning() {
    return WaitUntil(
        [&] {
          std::ifstream log(worker_log_);
          for (std::string line; std::getline(log, line);) {
            if (line.find("worker running") != std::string::npos) return true;
          }
          return false;
        },
        milliseconds(10000));
  }
  HttpResult Post() {
    return HttpCall(port_, "POST", "/rides", {{"Authorization", "Bearer tok_user_1"}, {"Idempotency-Key", kKey}}, kRide,
                    milliseconds(10000));
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
  std::string Value(const std::string& sql) { return world_->Value(sql); }
  int Count(const std::string& sql) { return std::stoi(Value(sql)); }
  bool KeyFinished() { return Count("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'finished'") == 1; }
  int StagedJobs() { return Count("SELECT count(*) FROM phasekey.staged_jobs"); }
  nlohmann::json Ledger() { return world_->Ledger(); }

 private:
  static std::vector<std::string> CrashAt(const std::string& point) {
    if (point.empty()) return {};
    return {"PHASEKEY_CRASH_AT=" + point};
  }

  TestDatabase db_;
  std::filesystem::path log_dir_;
  std::unique_ptr<testing::RideWorld> world_;
  std::string worker_log_;
  int workers_ = 0;
  std::uint16_t port_ = 0;
};

// Starts a worker, waits until `done` holds (at most 15 s), and stops it
// with SIGTERM. Returns "" or what failed.
std::string RunWorkerUntil(World& w, const std::function<bool()>& done, const std::string& what) {
  auto worker = w.Worker();
  if (!w.WaitForWorkerRunning()) return "the worker did not start";
  const bool reached = WaitUntil(done, milliseconds(15000));
  worker->Signal(SIGTERM);
  if (WaitForEnd(worker.get()) != 0) return "the worker did not stop cleanly";
  return reached ? "" : "the worker did not " + what;
}

// The receipt: every staged job delivered, exactly one receipt sent (a
// receipt_deliveries row with sent), for the ride's charge.
std::string CheckReceipt(World& w, Cell* cell) {
  cell->receipt_deliveries = w.Count("SELECT count(*) FROM receipt_deliveries");
  cell->receipts_sent = w.Count("SELECT count(*) FROM receipt_deliveries WHERE sent");
  if (cell->receipts_sent > 1) return "a receipt sent " + std::to_string(cell->receipts_sent) + " times";
  if (w.StagedJobs() != 0) return std::to_string(w.StagedJobs()) + " receipt jobs left undelivered";
  if (cell->receipts_sent == 0) return "the staged receipt job was lost";
  if (w.Value("SELECT charge_id FROM receipts") != w.Value("SELECT charge_id FROM rides")) {
    return "the receipt names another charge than the ride's";
  }
  return "";
}

// Returns "" when every invariant holds, else what failed.
std::string CheckInvariants(World& w, const HttpResult& final_answer, Cell* cell) {
  if (!final_answer.ok || final_answer.status != 201) {
    return "final answer " + std::to_string(final_answer.status) + " " + final_answer.error;
  }
  auto ledger = w.Ledger();
  cell->charges = static_cast<int>(ledger.size());
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
  return CheckReceipt(w, cell);
}

// After a crash at enqueuer.delivered: the job the sink took before the
// crash was delivered again, and that delivery sent nothing.
std::string CheckRedeliveryDeduplicated(World& w) {
  if (w.Count("SELECT count(DISTINCT job_id) FROM receipt_deliveries") != 1) return "more than one receipt job";
  if (w.Count("SELECT count(*) FROM receipt_deliveries") < 2) return "the job was not delivered again";
  if (w.Count("SELECT count(*) FROM receipt_deliveries WHERE NOT sent") < 1) {
    return "the redelivery was not deduplicated";
  }
  return "";
}

// The service dies at kLeaveKeyAt while booking: a key for the worker.
std::string LeaveKeyForTheWorker(World& w) {
  auto service = w.Service(kLeaveKeyAt);
  w.Post();
  if (WaitForEnd(service.get()) != 128 + SIGKILL) return "the service did not die at " + kLeaveKeyAt;
  if (w.KeyFinished()) return "the key was finished before the worker";
  return "";
}

// Makes the armed worker die at `point`. A worker dying at
// enqueuer.delivered must have had its batch taken by the sink (a delivery
// recorded) without the batch's delete committed (the job still staged).
std::string CrashWorker(World& w, const std::string& point) {
  auto worker = w.Worker(point);
  if (WaitForEnd(worker.get()) != 128 + SIGKILL) return "the worker did not die at " + point;
  if (point == "enqueuer.delivered" &&
      (w.Count("SELECT count(*) FROM receipt_deliveries") != 1 || w.StagedJobs() != 1)) {
    return "the worker did not die between the sink's delivery and the job's delete";
  }
  return "";
}

// Makes the armed process die at `c.point`; leaves the ride to recover.
std::string Crash(World& w, const Case& c, Recovery how, Cell* cell) {
  if (!c.in_worker && !(c.worker_dies_on_redrive && how == Recovery::kWorker)) {
    auto service = w.Service(c.point);
    HttpResult r = w.Post();
    if (r.ok) return "the request answered " + std::to_string(r.status) + ": the point was not reached";
    if (WaitForEnd(service.get()) != 128 + SIGKILL) return "the service did not die by SIGKILL";
    return "";
  }
  cell->dies = "worker";
  if (c.point == "enqueuer.delivered") {  // a finished ride with its staged receipt
    auto service = w.Service();
    if (w.Post().status != 201) return "the ride was not booked";
  } else {
    cell->left_by = kLeaveKeyAt;
    if (std::string left = LeaveKeyForTheWorker(w); !left.empty()) return left;
  }
  return CrashWorker(w, c.point);
}

// Recovery by a client retrying until a final answer; then a worker only
// delivers the staged receipt job.
std::string RecoverByClientRetry(World& w, Cell* cell) {
  auto service = w.Service();
  const HttpResult final_answer = w.PostUntilFinal();
  if (!final_answer.ok || final_answer.status != 201) {
    return "final answer " + std::to_string(final_answer.status) + " " + final_answer.error + " (" +
           World::Liveness(service.get()) + ")";
  }
  if (std::string drained = RunWorkerUntil(
          w, [&] { return w.StagedJobs() == 0; }, "deliver the receipt job");
      !drained.empty()) {
    return drained;
  }
  std::string broken = CheckInvariants(w, final_answer, cell);
  if (!broken.empty()) broken += " (" + World::Liveness(service.get()) + ")";
  return broken;
}

// Recovery by the worker alone: it must finish the key and deliver the
// receipt; the client then sends its request once and must get the stored
// answer (Idempotent-Replayed), so the ride was not finished by the client.
std::string RecoverByWorker(World& w, Cell* cell) {
  if (std::string ran = RunWorkerUntil(
          w, [&] { return w.KeyFinished() && w.StagedJobs() == 0; }, "finish the key and deliver its receipt");
      !ran.empty()) {
    return ran;
  }
  auto service = w.Service();
  const HttpResult answer = w.Post();
  if (answer.ok && answer.Header("idempotent-replayed") != "true") {
    return "the client's request was not answered from the stored response";
  }
  std::string broken = CheckInvariants(w, answer, cell);
  if (!broken.empty()) broken += " (" + World::Liveness(service.get()) + ")";
  return broken;
}

Cell RunCase(const Case& c, Recovery how) {
  World w;
  Cell cell;
  std::string result = Crash(w, c, how, &cell);
  if (result.empty()) {
    result = how == Recovery::kClientRetry ? RecoverByClientRetry(w, &cell) : RecoverByWorker(w, &cell);
  }
  if (result.empty() && c.point == "enqueuer.delivered") result = CheckRedeliveryDeduplicated(w);
  cell.result = result.empty() ? "ok" : "FAIL: " + result;
  return cell;
}

TEST(CrashMatrixTest, EveryCrashPointRecoversByClientRetryAndByTheWorker) {
  if (!CrashPointsCompiledIn()) {
    PHASEKEY_SKIP_OR_FAIL_IN_CI() << "crash points are not compiled in: configure with -DPHASEKEY_CRASH_POINTS=ON "
                                     "(./run.sh test does)";
  }
  std::mutex mu;
  std::map<std::string, std::pair<Cell, Cell>> matrix;
  std::vector<std::future<void>> running;
  std::atomic<std::size_t> next{0};
  for (int t = 0; t < 3; ++t) {
    running.push_back(std::async(std::launch::async, [&] {
      for (std::size_t i; (i = next++) < kCases.size() * 2;) {
        const Case& c = kCases[i / 2];
        const Recovery how = i % 2 == 0 ? Recovery::kClientRetry : Recovery::kWorker;
        Cell cell = RunCase(c, how);
        std::lock_guard lock(mu);
        (how == Recovery::kClientRetry ? matrix[c.point].first : matrix[c.point].second) = std::move(cell);
      }
    }));
  }
  for (auto& r : running) r.get();
  nlohmann::json cases = nlohmann::json::array();
  std::printf("\n| crash point | client retry | re-drive worker |\n|---|---|---|\n");
  for (const auto& c : kCases) {
    const auto& [retry, worker] = matrix[c.point];
    std::printf("| %s%s | %s | %s |\n", c.point.c_str(), c.in_worker ? " (worker)" : "", retry.result.c_str(),
                worker.result.c_str());
    cases.push_back({{"point", c.point}, {"client_retry", retry.ToJson()}, {"redrive", worker.ToJson()}});
    EXPECT_EQ(retry.result, "ok") << c.point << " recovered by client retry";
    EXPECT_EQ(worker.result, "ok") << c.point << " recovered by the worker";
  }
  const nlohmann::json result = {
      {"test",
       "tests/ride_booking/crash_matrix_test.cc (CrashMatrixTest.EveryCrashPointRecoversByClientRetryAndByTheWorker)"},
      {"cases", cases}};
  try {
    doc_results::RecordResult(PHASEKEY_SOURCE_DIR, PHASEKEY_TEST_BINARY_DIR, "crash_matrix.json", result);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the matrix was not written to the docs: " << e.what();
  }
}

}  // namespace
}  // namespace phasekey
