// The server noticing the client mistakes of docs/clients.md, against a real
// PostgreSQL, with the runner and the reaper in this process:
//   - key regeneration: the same account, flow and request under a new key
//     within the flow's window is counted by the reaper's audit
//     (phasekey_suspected_key_regeneration_total), once; a retry under the
//     same key is not;
//   - 409 treated as final: a key answered 409 and then never sent again is
//     counted by the runner (phasekey_suspected_abandoned_after_409_total);
//     a client that retries the key is not.
#include <gtest/gtest.h>

#include <future>
#include <pqxx/pqxx>
#include <thread>

#include "admin/key_admin.h"
#include "phasekey/metrics.h"
#include "phasekey/runner.h"
#include "phasekey/workers.h"
#include "support/exposition.h"
#include "support/ride_flow.h"
#include "support/stderr_capture.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Kind = Reply::Kind;

const std::string kBody = R"({"origin_lat": 1.5, "origin_lon": 2, "target_lat": 3, "target_lon": 4})";
const std::string kOtherBody = R"({"origin_lat": 7, "origin_lon": 2, "target_lat": 3, "target_lon": 4})";
const std::string kTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string kOtherTrace = "0af7651916cd43dd8448eb211c80319c";
std::string TraceParent(const std::string& trace_id) { return "00-" + trace_id + "-00f067aa0ba902b7-01"; }

// The value of `family`{flow="create_ride"} in `exposition`; 0 when absent.
double CounterOf(const std::string& exposition, const std::string& family) {
  return testing::SampleOf(exposition, family + R"({flow="create_ride"})");
}

class ClientMistakesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::CreateRideTables(db_.url());
    OpenRunner(RunnerOptions{});
  }

  void OpenRunner(RunnerOptions o) {
    o.database.url = db_.url();
    o.database.pool_size = 8;
    o.lease = milliseconds(10000);
    o.metrics = metrics_;
    auto r = Runner::Open(o, {testing::MakeRideFlow(&gateway_, milliseconds(2000))});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    runner_ = std::move(*r);
  }

  std::unique_ptr<Reaper> OpenReaper(RegenerationAuditOptions audit = {}) {
    DatabaseOptions db;
    db.url = db_.url();
    ReaperOptions o;
    o.metrics = metrics_;
    o.regeneration_audit = audit;
    auto reaper = Reaper::Open(db, o);
    if (!reaper) throw std::runtime_error(reaper.error().ToString());
    return std::move(*reaper);
  }

  // The suspects a reaper sweep counted.
  std::size_t Sweep(Reaper& reaper) {
    auto report = reaper.RunOnce();
    if (!report) throw std::runtime_error(report.error().ToString());
    return report->suspected_regenerations;
  }

  Reply Post(const std::string& key, const std::string& body = kBody, const std::string& account = "acct_1",
             const std::string& traceparent = "") {
    Request request{account, key, "POST", "/rides", body};
    request.traceparent = traceparent;
    return runner_->Execute("create_ride", request);
  }

  long long CountedKeys() {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    return tx.exec1("SELECT count(*) FROM phasekey.key_audit_counted")[0].as<long long>();
  }

  double Regenerations() { return CounterOf(metrics_->Exposition(), "phasekey_suspected_key_regeneration_total"); }
  double Abandoned409() { return CounterOf(metrics_->Exposition(), "phasekey_suspected_abandoned_after_409_total"); }

  testing::TestDatabase db_;
  testing::TestGateway gateway_;
  std::shared_ptr<Metrics> metrics_ = Metrics::Create();
  std::unique_ptr<Runner> runner_;
};

TEST_F(ClientMistakesTest, AClientThatRegeneratesItsKeyIsCountedOnce) {
  auto reaper = OpenReaper();
  ASSERT_EQ(Sweep(*reaper), 0u);
  // The mistake: the same ride sent again under a new key. The server does
  // what it was asked (two rides, two charges): it only counts.
  ASSERT_EQ(Post("key-a").kind, Kind::kCompleted);
  ASSERT_EQ(Post("key-b").kind, Kind::kCompleted);
  EXPECT_EQ(gateway_.charges(), 2);
  // Not the mistake: another ride, and the same ride of another account.
  ASSERT_EQ(Post("key-c", kOtherBody).kind, Kind::kCompleted);
  ASSERT_EQ(Post("key-d", kBody, "acct_2").kind, Kind::kCompleted);
  EXPECT_EQ(Sweep(*reaper), 1u);
  EXPECT_EQ(Regenerations(), 1);
  EXPECT_EQ(Sweep(*reaper), 0u) << "a key is counted once, however many sweeps see it";
  // A third key for the same ride is a second suspect.
  ASSERT_EQ(Post("key-e").kind, Kind::kCompleted);
  EXPECT_EQ(Sweep(*reaper), 1u);
  EXPECT_EQ(Regenerations(), 2);
}

TEST_F(ClientMistakesTest, ARegeneratedKeysLineCarriesTheTraceIdsOfBothKeys) {
  auto reaper = OpenReaper();
  ASSERT_EQ(Post("key-a", kBody, "acct_1", TraceParent(kTrace)).kind, Kind::kCompleted);
  ASSERT_EQ(Post("key-b", kBody, "acct_1", TraceParent(kOtherTrace)).kind, Kind::kCompleted);
  testing::StderrCapture log;
  ASSERT_EQ(Sweep(*reaper), 1u);
  const auto lines = log.lines("suspected key regeneration: the same request under a new key");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].value("idempotency_key", ""), "key-b");
  EXPECT_EQ(lines[0].value("trace_id", ""), kOtherTrace) << lines[0].dump();
  EXPECT_EQ(lines[0].value("earlier_trace_id", ""), kTrace) << lines[0].dump();
}

TEST_F(ClientMistakesTest, ARetryUnderTheSameKeyIsNotCounted) {
  auto reaper = OpenReaper();
  ASSERT_EQ(Sweep(*reaper), 0u);
  ASSERT_EQ(Post("key-same").kind, Kind::kCompleted);
  ASSERT_EQ(Post("key-same").kind, Kind::kReplayed);
  ASSERT_EQ(Post("key-same").kind, Kind::kReplayed);
  EXPECT_EQ(Sweep(*reaper), 0u);
  EXPECT_EQ(Regenerations(), 0);
  EXPECT_EQ(gateway_.charges(), 1);
}

TEST_F(ClientMistakesTest, KeysFartherApartThanTheFlowsWindowAreNotCounted) {
  RegenerationAuditOptions narrow;
  narrow.window_by_flow["create_ride"] = seconds(10);
  auto narrow_reaper = OpenReaper(narrow);
  auto default_reaper = OpenReaper();  // 10 min
  ASSERT_EQ(Sweep(*narrow_reaper), 0u);
  ASSERT_EQ(Sweep(*default_reaper), 0u);
  ASSERT_EQ(Post("key-early").kind, Kind::kCompleted);
  db_.Exec(
      "UPDATE phasekey.idempotency_keys SET created_at = now() - interval '30 seconds' "
      "WHERE idempotency_key = 'key-early'");
  ASSERT_EQ(Post("key-late").kind, Kind::kCompleted);
  EXPECT_EQ(Sweep(*narrow_reaper), 0u) << "30 s apart: outside the flow's 10 s window";
  EXPECT_EQ(Sweep(*default_reaper), 1u) << "30 s apart: inside the default 10 min window";
}

// `phasekey stats` and the counter apply one rule (phasekey.key_regeneration_pairs,
// phasekey.key_regeneration_pairs), each flow with its window: a pair
// outside the flow's window is in neither, a pair inside it is in both.
TEST_F(ClientMistakesTest, StatsListWhatTheCounterCountsWithEachFlowsWindow) {
  RegenerationAuditOptions narrow;
  narrow.window_by_flow["create_ride"] = seconds(10);
  auto reaper = OpenReaper(narrow);
  ASSERT_EQ(Sweep(*reaper), 0u);
  ASSERT_EQ(Post("key-early").kind, Kind::kCompleted);
  db_.Exec(
      "UPDATE phasekey.idempotency_keys SET created_at = now() - interval '30 seconds' "
      "WHERE idempotency_key = 'key-early'");
  ASSERT_EQ(Post("key-late").kind, Kind::kCompleted);  // 30 s after key-early: outside 10 s
  ASSERT_EQ(Post("key-x", kOtherBody).kind, Kind::kCompleted);
  ASSERT_EQ(Post("key-y", kOtherBody).kind, Kind::kCompleted);  // right after key-x: inside
  EXPECT_EQ(Sweep(*reaper), 1u);

  auto stats = admin::AdminStats(db_.url(), narrow.window, 20, narrow.window_by_flow);
  ASSERT_TRUE(stats.has_value()) << stats.error().ToString();
  const nlohmann::json listed = (*stats)["suspected_key_regeneration"];
  ASSERT_EQ(listed["recent"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["recent"][0]["earlier_key"], "key-x");
  EXPECT_EQ(listed["recent"][0]["later_key"], "key-y");
  EXPECT_EQ(listed["by_flow"]["create_ride"], 1);
  EXPECT_EQ(listed["window_s_by_flow"]["create_ride"], 10);

  // The fault the shared rule removes: one window for every flow (stats'
  // old behaviour) lists the 30 s pair the counter did not count.
  auto one_window = admin::AdminStats(db_.url(), narrow.window, 20);
  ASSERT_TRUE(one_window.has_value()) << one_window.error().ToString();
  EXPECT_EQ((*one_window)["suspected_key_regeneration"]["recent"].size(), 2u)
      << (*one_window)["suspected_key_regeneration"].dump();
}

TEST_F(ClientMistakesTest, ARestartedReaperCountsThePairsMadeWhileNoneRan) {
  ASSERT_EQ(Post("key-a").kind, Kind::kCompleted);
  ASSERT_EQ(Post("key-b").kind, Kind::kCompleted);  // made while no reaper ran
  auto restarted = OpenReaper();
  EXPECT_EQ(Sweep(*restarted), 1u) << "its first sweep counts what no audit has counted";
  EXPECT_EQ(Sweep(*restarted), 0u);
  auto another_restart = OpenReaper();
  EXPECT_EQ(Sweep(*another_restart), 0u) << "counted before it started: not again";
  ASSERT_EQ(Post("key-c").kind, Kind::kCompleted);
  EXPECT_EQ(Sweep(*another_restart), 1u);
  EXPECT_EQ(Regenerations(), 2);
}

TEST_F(ClientMistakesTest, SeveralReapersCountEachSuspectOnce) {
  std::vector<std::unique_ptr<Reaper>> reapers;
  for (int i = 0; i < 3; ++i) reapers.push_back(OpenReaper());
  ASSERT_EQ(Post("key-a").kind, Kind::kCompleted);
  ASSERT_EQ(Post("key-b").kind, Kind::kCompleted);
  ASSERT_EQ(Post("key-c").kind, Kind::kCompleted);
  std::vector<std::future<std::size_t>> sweeps;
  for (auto& r : reapers) sweeps.push_back(std::async(std::launch::async, [&] { return Sweep(*r); }));
  std::size_t counted = 0;
  for (auto& f : sweeps) counted += f.get();
  EXPECT_EQ(counted, 2u) << "key-b and key-c, once each, whichever reaper found them";
  EXPECT_EQ(Regenerations(), 2);
}

TEST_F(ClientMistakesTest, CountedKeysAreForgottenOnceOutOfEveryWindow) {
  auto reaper = OpenReaper();  // 10 min
  ASSERT_EQ(Post("key-a").kind, Kind::kCompleted);
  ASSERT_EQ(Post("key-b").kind, Kind::kCompleted);
  EXPECT_EQ(Sweep(*reaper), 1u);
  EXPECT_EQ(CountedKeys(), 1);
  db_.Exec("UPDATE phasekey.key_audit_counted SET counted_at = now() - interval '11 minutes'");
  db_.Exec("UPDATE phasekey.idempotency_keys SET created_at = created_at - interval '11 minutes'");
  EXPECT_EQ(Sweep(*reaper), 0u) << "out of the window: no pair, and not counted again";
  EXPECT_EQ(CountedKeys(), 0);
}

// A 409 for `key`: the first request holds the key inside the gateway call
// while `during` runs (each call there gets a 409); then it completes.
void WhileHeld(testing::TestGateway* gateway, const std::function<Reply()>& first,
               const std::function<void()>& during) {
  std::promise<void> in_call, release;
  auto released = release.get_future().share();
  gateway->set_before_call([&, released] {
    in_call.set_value();
    released.wait();
  });
  auto holder = std::async(std::launch::async, first);
  in_call.get_future().wait();
  gateway->set_before_call(nullptr);
  during();
  release.set_value();
  EXPECT_EQ(holder.get().kind, Kind::kCompleted);
}

TEST_F(ClientMistakesTest, A409ThenSilenceIsCounted) {
  RunnerOptions o;
  o.silence_after_409 = milliseconds(1500);
  OpenRunner(o);
  std::chrono::steady_clock::time_point answered_409;
  WhileHeld(
      &gateway_, [&] { return Post("key-busy"); },
      [&] {
        // The fault: a second request gets the 409, and its client gives up.
        ASSERT_EQ(Post("key-busy").kind, Kind::kInProgress);
        answered_409 = std::chrono::steady_clock::now();
      });
  // (On a machine so loaded that the held request ended after the silence,
  // its own answer finds the suspect: nothing to check here then.)
  if (std::chrono::steady_clock::now() - answered_409 < milliseconds(1400)) {
    EXPECT_EQ(Abandoned409(), 0) << "the silence has not passed yet";
  }
  std::this_thread::sleep_for(milliseconds(1600));
  // Suspects are found when the process answers its next request.
  ASSERT_EQ(Post("key-unrelated", kOtherBody).kind, Kind::kCompleted);
  EXPECT_EQ(Abandoned409(), 1);
  ASSERT_EQ(Post("key-unrelated-2", kOtherBody).kind, Kind::kCompleted);
  EXPECT_EQ(Abandoned409(), 1) << "counted once";
}

TEST_F(ClientMistakesTest, A409ThenARetryOfTheSameKeyIsNotCounted) {
  RunnerOptions o;
  o.silence_after_409 = milliseconds(1500);
  OpenRunner(o);
  WhileHeld(
      &gateway_, [&] { return Post("key-busy"); }, [&] { ASSERT_EQ(Post("key-busy").kind, Kind::kInProgress); });
  // The client retries the same key after its backoff: the stored answer.
  ASSERT_EQ(Post("key-busy").kind, Kind::kReplayed);
  std::this_thread::sleep_for(milliseconds(1600));
  ASSERT_EQ(Post("key-unrelated", kOtherBody).kind, Kind::kCompleted);
  EXPECT_EQ(Abandoned409(), 0);
  EXPECT_EQ(gateway_.charges(), 2);  // key-busy's and key-unrelated's
}

TEST_F(ClientMistakesTest, A409SuspectsLineCarriesTheTraceIdStoredWithTheKey) {
  RunnerOptions o;
  o.silence_after_409 = milliseconds(1500);
  OpenRunner(o);
  // Captured from the 409 on: on a loaded machine the held request may end
  // after the silence has passed, and its own answer then finds the suspect.
  testing::StderrCapture log;
  WhileHeld(
      &gateway_, [&] { return Post("key-busy", kBody, "acct_1", TraceParent(kTrace)); },
      [&] { ASSERT_EQ(Post("key-busy", kBody, "acct_1", TraceParent(kOtherTrace)).kind, Kind::kInProgress); });
  std::this_thread::sleep_for(milliseconds(1600));
  ASSERT_EQ(Post("key-unrelated", kOtherBody).kind, Kind::kCompleted);
  const auto lines = log.lines("suspected abandoned after 409: the client never sent this key again");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].value("trace_id", ""), kTrace) << "the key's, its first request's: " << lines[0].dump();
}

}  // namespace
}  // namespace phasekey
