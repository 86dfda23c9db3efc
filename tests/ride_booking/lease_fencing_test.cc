// Lost lease and fencing with real processes. A service (A) is stopped with
// SIGSTOP while it is inside the gateway call of a ride; its lease runs out
// (really, or because the database clock jumps by the lease length); a
// second service (B) gets the client's retry, takes the key over and
// finishes it; then A gets SIGCONT. A must commit nothing (its fenced writes
// match no row), the gateway must have made one charge (B's call carried
// the same provider key and got A's charge replayed), there is one ride, and
// the stored response is the one B sent.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

#include "support/dedicated_postgres.h"
#include "support/ride_world.h"
#include "support/tcp_probe.h"
#include "support/test_database.h"
#include "support/wait.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::ChildProcess;
using testing::HttpResult;
using testing::RideWorld;
using testing::RideWorldOptions;
using testing::WaitUntil;

constexpr int kLeaseSeconds = 4;
constexpr int kChargeTimeoutMs = 2500;  // the lease must outlast it by the 1 s margin
constexpr int kGatewayLatencyMs = 1500;
const std::string kKey = "fencing-ride-0001";
constexpr char kLibFaketime[] = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

// Everything the services could have written, as text.
std::vector<std::string> Snapshot(const RideWorld& w) {
  std::vector<std::string> rows;
  for (const char* sql :
       {"SELECT k::text FROM phasekey.idempotency_keys k ORDER BY id", "SELECT r::text FROM rides r ORDER BY id",
        "SELECT a::text FROM audit_records a ORDER BY id", "SELECT j::text FROM phasekey.staged_jobs j ORDER BY id",
        "SELECT r::text FROM receipts r ORDER BY job_id"}) {
    for (auto& r : w.Rows(sql)) rows.push_back(std::move(r));
  }
  return rows;
}

// libfaketime shares clock state between the processes it runs in through a
// POSIX semaphore and shared memory object, created by the first process
// with owner-only access: here that is setpriv, running as root, so the
// server's user could not open them. They are created beforehand instead,
// open to all, and named in FAKETIME_SHARED.
class FaketimeSharedState {
 public:
  FaketimeSharedState()
      : sem_("/pk_faketime_sem_" + std::to_string(::getpid())), shm_("/pk_faketime_shm_" + std::to_string(::getpid())) {
    Unlink();
    sem_t* sem = ::sem_open(sem_.c_str(), O_CREAT | O_EXCL, 0666, 1);
    const int shm = ::shm_open(shm_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0666);
    ok_ = sem != SEM_FAILED && shm >= 0 && ::fchmod(shm, 0666) == 0 && ::ftruncate(shm, 4096) == 0 &&
          ::chmod(("/dev/shm/sem." + sem_.substr(1)).c_str(), 0666) == 0;
    if (sem != SEM_FAILED) ::sem_close(sem);
    if (shm >= 0) ::close(shm);
  }
  ~FaketimeSharedState() { Unlink(); }
  bool ok() const { return ok_; }
  std::string env() const { return "FAKETIME_SHARED=" + sem_ + " " + shm_; }

 private:
  void Unlink() {
    ::sem_unlink(sem_.c_str());
    ::shm_unlink(shm_.c_str());
  }
  std::string sem_, shm_;
  bool ok_ = false;
};

// How the lease of the stopped holder comes to an end.
enum class LeaseEnd { kRealTime, kDatabaseClockJump };

class LeaseFencingTest : public ::testing::Test {
 protected:
  // Runs the scenario on `url`; `jump_clock` moves the database clock by the
  // lease length (called while A is stopped), or is null to wait for the
  // lease to run out in real time.
  void Run(const std::string& url, const std::function<void(const RideWorld&)>& jump_clock) {
    RideWorldOptions o{.database_url = url, .lease_seconds = kLeaseSeconds, .charge_timeout_ms = kChargeTimeoutMs};
    RideWorld w(o);
    std::uint16_t port_a = 0, port_b = 0;
    auto a = w.StartService(&port_a, {.name = "a"});
    auto b = w.StartService(&port_b, {.name = "b"});
    ASSERT_NE(port_a, 0);
    ASSERT_NE(port_b, 0);
    ASSERT_TRUE(w.SetGatewayFaults({{"latency_ms", kGatewayLatencyMs}}));

    // A starts the ride; stop it once its charge request is at the gateway,
    // that is, inside the charge call (the gateway sleeps before charging).
    auto first = std::async(std::launch::async, [&] { return w.PostRide(port_a, 1, kKey); });
    struct ResumeOnExit {  // a failed assertion must not leave A stopped
      ChildProcess* p;
      ~ResumeOnExit() { p->Signal(SIGCONT); }
    } resume_on_exit{a.get()};
    ASSERT_TRUE(WaitUntil([&] { return testing::DeliveredTo(a->pid(), w.gateway_port()); }, milliseconds(10000)))
        << "A's charge request never reached the gateway";
    a->Signal(SIGSTOP);
    // The gateway finishes A's charge meanwhile: proof that A was inside it.
    ASSERT_TRUE(WaitUntil([&] { return w.Ledger().size() == 1; }, milliseconds(kGatewayLatencyMs + 5000)))
        << "A's charge request did not reach the gateway before A was stopped";
    ASSERT_EQ(w.Value("SELECT recovery_point FROM phasekey.idempotency_keys"), "ride_created");

    // The lease ends, really or on the database clock.
    const double left_s =
        std::stod(w.Value("SELECT extract(epoch FROM lease_expires_at - now()) FROM phasekey.idempotency_keys"));
    const auto takeover_start = steady_clock::now();
    if (jump_clock) {
      jump_clock(w);
    } else {
      ASSERT_TRUE(
          WaitUntil([&] { return w.Value("SELECT lease_expires_at <= now() FROM phasekey.idempotency_keys") == "t"; },
                    milliseconds(kLeaseSeconds * 1000 + 5000)))
          << w.Rows("SELECT k::text FROM phasekey.idempotency_keys k")[0];
    }

    // The client retries at B: B takes the key over and finishes it.
    HttpResult second;
    for (int i = 0; i < 50; ++i) {
      second = w.PostRide(port_b, 1, kKey);
      if (second.ok && second.status != 409 && second.status != 503) break;
      std::this_thread::sleep_for(milliseconds(100));
    }
    ASSERT_TRUE(second.ok) << second.error;
    ASSERT_EQ(second.status, 201) << second.body;
    if (jump_clock) {
      // B got the key before A's lease would have run out in real time:
      // the clock jump, not the wait, ended the lease.
      const double took_s = std::chrono::duration<double>(steady_clock::now() - takeover_start).count();
      EXPECT_LT(took_s, left_s) << "the takeover did not depend on the clock jump";
    }
    EXPECT_EQ(w.Value("SELECT attempts FROM phasekey.idempotency_keys"), "2") << "B took the key over";
    const std::vector<std::string> before = Snapshot(w);

    // A resumes: its answer from the gateway (or its timeout) arrives, and
    // every write it tries is fenced off.
    a->Signal(SIGCONT);
    HttpResult resumed = first.get();
    ASSERT_TRUE(resumed.ok) << "A did not answer after SIGCONT: " << resumed.error;
    EXPECT_EQ(resumed.status, 409) << "A must report that another holder took over: " << resumed.body;
    // Nothing marks the moment A could no longer write, so this is a window
    // in which a write of A's would show, not a wait for readiness: A has
    // answered, and any late write (a fenced release, a staged job) would
    // come within it.
    std::this_thread::sleep_for(milliseconds(500));
    EXPECT_EQ(Snapshot(w), before) << "A committed something after it lost its lease";

    const nlohmann::json ledger = w.Ledger();
    ASSERT_EQ(ledger.size(), 1u) << ledger.dump();
    const auto answer = nlohmann::json::parse(second.body);
    EXPECT_EQ(answer["charge_id"], ledger[0]["id"]);
    EXPECT_EQ(w.Value("SELECT count(*) FROM rides"), "1");
    EXPECT_EQ(w.Value("SELECT charge_id FROM rides"), ledger[0]["id"].get<std::string>());
    EXPECT_EQ(w.Value("SELECT convert_from(response_body, 'UTF8') FROM phasekey.idempotency_keys"), second.body)
        << "the stored response is B's";
    EXPECT_EQ(w.Value("SELECT count(*) FROM phasekey.staged_jobs"), "1") << "one receipt job, staged by B";
    // A is alive and, like B, now replays the stored response.
    HttpResult replay = w.PostRide(port_a, 1, kKey);
    EXPECT_EQ(replay.status, 201);
    EXPECT_EQ(replay.body, second.body);
    EXPECT_EQ(replay.Header("idempotent-replayed"), "true");
  }
};

TEST_F(LeaseFencingTest, AHolderStoppedPastItsLeaseCommitsNothingAfterAnotherTookOver) {
  testing::TestDatabase db;
  Run(db.url(), nullptr);
}

// The lease is computed on the database clock. The clock is moved for real:
// the dedicated server runs under libfaketime (Debian's faketime package),
// reading its offset from a file on every clock call, and the test writes
// the lease length into that file while A is stopped. Only the wall clock
// moves (FAKETIME_DONT_FAKE_MONOTONIC), as when NTP steps a server's clock.
// Without libfaketime the jump is modelled instead: the key's locked_at and
// lease_expires_at are moved back by the lease length with SQL, which is
// what the database sees after its clock moved forward by that much.
TEST_F(LeaseFencingTest, AHolderWhoseLeaseEndsByADatabaseClockJumpCommitsNothing) {
  const bool faketime = std::filesystem::exists(kLibFaketime);
  FaketimeSharedState shared;
  ASSERT_TRUE(!faketime || shared.ok()) << "cannot create libfaketime's shared state";
  std::unique_ptr<testing::DedicatedPostgres> server;
  std::unique_ptr<testing::TestDatabase> fallback_db;
  std::string url;
  if (faketime) {
    testing::DedicatedPostgresOptions o;
    o.name = "clock-jump";
    o.files = {{"faketime", "+0\n"}};
    o.server_env = {std::string("LD_PRELOAD=") + kLibFaketime, "FAKETIME_TIMESTAMP_FILE=@FILES_DIR@/faketime",
                    "FAKETIME_NO_CACHE=1", "FAKETIME_DONT_FAKE_MONOTONIC=1", shared.env()};
    server = std::make_unique<testing::DedicatedPostgres>(o);
    const Status started = server->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    url = server->url();
    std::printf("[ clock ] the database server runs under libfaketime; its wall clock will jump %d s\n", kLeaseSeconds);
  } else {
    fallback_db = std::make_unique<testing::TestDatabase>();
    url = fallback_db->url();
    std::printf(
        "[ clock ] %s is missing (Debian package faketime): the clock jump is modelled by moving the "
        "key's lease back by %d s with SQL\n",
        kLibFaketime, kLeaseSeconds);
  }
  Run(url, [&](const RideWorld& w) {
    const std::string before = w.Value("SELECT now()::text");
    if (faketime) {
      const std::string file = server->files_dir() + "/faketime";
      std::ofstream(file + ".new") << "+" << kLeaseSeconds << "s\n";
      std::filesystem::rename(file + ".new", file);
      const std::string after = w.Value("SELECT now()::text");
      std::printf("[ clock ] database clock: %s -> %s\n", before.c_str(), after.c_str());
    } else {
      w.Value("WITH moved AS (UPDATE phasekey.idempotency_keys SET locked_at = locked_at - interval '" +
              std::to_string(kLeaseSeconds) + " seconds', lease_expires_at = lease_expires_at - interval '" +
              std::to_string(kLeaseSeconds) + " seconds' RETURNING 1) SELECT count(*) FROM moved");
    }
    ASSERT_EQ(w.Value("SELECT lease_expires_at <= now() FROM phasekey.idempotency_keys"), "t");
  });
}

// The lease outlasts the charge timeout by a margin (Runner::Open checks it)
// only if a gateway call really ends at its timeout. The gateway here takes
// longer than the whole lease: the call must give up at the timeout, the
// request answer 503 well inside the lease, and no second holder ever call
// the gateway while the first still waits. The key then finishes on a
// retry, with the gateway's one charge.
TEST(GatewayTimeoutTest, AGatewayCallSlowerThanTheLeaseEndsAtTheChargeTimeout) {
  testing::TestDatabase db;
  RideWorldOptions o{.database_url = db.url(), .lease_seconds = 3, .charge_timeout_ms = 1000};
  RideWorld w(o);
  std::uint16_t port = 0;
  auto service = w.StartService(&port);
  ASSERT_NE(port, 0);
  // A first ride opens the service's connections (the pool's and the
  // gateway client's), so the time measured below is the gateway call's,
  // not the set-up's, which a loaded machine can stretch past the lease.
  HttpResult warm = w.PostRide(port, 2, "warm-up-2");
  ASSERT_TRUE(warm.ok && warm.status == 201) << warm.error << warm.body;
  ASSERT_TRUE(w.SetGatewayFaults({{"latency_ms", 4000}}));
  const auto start = steady_clock::now();
  HttpResult first = w.PostRide(port, 1, "slow-gateway-1");
  const auto took = std::chrono::duration_cast<milliseconds>(steady_clock::now() - start);
  ASSERT_TRUE(first.ok) << first.error;
  EXPECT_EQ(first.status, 503) << first.body;
  EXPECT_LT(took, milliseconds(o.lease_seconds * 1000)) << "the gateway call outlived the charge timeout";
  std::printf("[ timeout ] a 4 s gateway call under a 1 s charge timeout: %d after %lld ms\n", first.status,
              static_cast<long long>(took.count()));
  ASSERT_TRUE(w.SetGatewayFaults({{"latency_ms", 0}}));
  HttpResult done;
  for (int i = 0; i < 100; ++i) {
    done = w.PostRide(port, 1, "slow-gateway-1");
    if (done.ok && done.status == 201) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_EQ(done.status, 201) << done.body;
  const nlohmann::json ledger = w.Ledger();
  ASSERT_EQ(ledger.size(), 2u) << "the warm-up's charge and the slow ride's one: " << ledger.dump();
  const nlohmann::json charge = nlohmann::json::parse(done.body)["charge_id"];
  EXPECT_NE(charge, nlohmann::json::parse(warm.body)["charge_id"]);
  EXPECT_TRUE(charge == ledger[0]["id"] || charge == ledger[1]["id"]) << ledger.dump();
}

}  // namespace
}  // namespace phasekey
