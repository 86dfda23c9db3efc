// Stored bodies sealed at rest, kept no longer than needed, erasable per
// account (issue 30; phasekey/data_protection.h), against a real
// PostgreSQL: the key table's files hold no request value with encryption
// on (and do with it off); a finished key keeps no request body yet still
// answers 422 to another body; a wrong or lost key-encryption key stops
// Open() before any key is touched; rotating the key-encryption key under
// load changes no replay; erasing an account answers 410 for its keys,
// charges nothing again and leaves other accounts alone.
//
// The flow: an order paid at a provider, its response echoing a field of
// the request (as a payment API's answer does).
//
//   started -(atomic place)-> placed -(foreign pay)-> paid -(atomic confirm)-> finished
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "phasekey/data_protection.h"
#include "phasekey/runner.h"
#include "phasekey/workers.h"
#include "support/memory_provider.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::MemoryProvider;
using testing::TestDatabase;

constexpr RecoveryPoint kPlaced{"placed"};
constexpr RecoveryPoint kPaid{"paid"};
// Values no statement of the engine contains: found in the table's files
// only if a body was stored in clear.
constexpr char kCard[] = "4929123456781234";
constexpr char kNote[] = "zebra-crossing-7731";

std::string Body(int amount) {
  return std::string(R"({"amount": )") + std::to_string(amount) + R"(, "card": {"number": ")" + kCard +
         R"("}, "note": ")" + kNote + R"("})";
}

// A KEK file of its own for each test: lines "<id> <hex>" (the current
// first), mode 0600 unless told.
class KekFiles {
 public:
  KekFiles() {
    char tmpl[] = "/tmp/phasekey-kek-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~KekFiles() { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::vector<std::pair<std::string, char>>& keys,
                    mode_t mode = 0600) {
    const std::string path = dir_ + "/" + name;
    std::ofstream out(path);
    for (const auto& [id, fill] : keys) out << id << " " << std::string(64, fill) << "\n";
    out.close();
    ::chmod(path.c_str(), mode);
    return path;
  }

 private:
  std::string dir_;
};

class DataProtectionTest : public ::testing::Test {
 protected:
  void SetUp() override { db_.Exec("CREATE TABLE orders (key text PRIMARY KEY, payment_id text)"); }

  std::shared_ptr<const Flow> OrderFlow() {
    auto place = [](AtomicContext& ctx) -> PhaseResult {
      ctx.tx().exec_params0("INSERT INTO orders (key) VALUES ($1 || '/' || $2)", ctx.account(), ctx.idempotency_key());
      return GoTo{kPlaced};
    };
    auto pay = [this](const PhaseContext& ctx) -> PhaseResult {
      if (pay_fails) return Retry("the provider is down");
      {
        std::unique_lock lock(gate_mu);
        gate_cv.wait(lock, [&] { return !hold_pay; });
      }
      return GoTo{kPaid, {{"payment_id", provider.Charge(ctx.ProviderKey())}}};
    };
    auto confirm = [](AtomicContext& ctx) -> PhaseResult {
      const std::string id = ctx.Outcome(kPaid)["payment_id"].get<std::string>();
      ctx.tx().exec_params0("UPDATE orders SET payment_id = $3 WHERE key = $1 || '/' || $2", ctx.account(),
                            ctx.idempotency_key(), id);
      return Respond{JsonResponse(201, {{"payment_id", id}, {"note", ctx.request()["note"]}})};
    };
    auto flow = Flow::Builder("order")
                    .Atomic(kStarted, "place_order", place, {kPlaced})
                    .Foreign(kPlaced, "pay", pay, {kPaid}, milliseconds(2000))
                    .Atomic(kPaid, "confirm", confirm, {kFinished})
                    .Masked({"/card/number"})
                    .Build();
    EXPECT_TRUE(flow.has_value()) << flow.error().ToString();
    return *flow;
  }

  RunnerOptions Options(const std::string& kek_file) {
    RunnerOptions o;
    o.database.url = db_.url();
    o.database.pool_size = 4;
    o.lease = milliseconds(10000);
    o.backoff_base = milliseconds(1);
    o.backoff_cap = milliseconds(2);
    o.redrive_delay = milliseconds(1);
    o.redrive_delay_cap = milliseconds(2);
    o.encryption.kek_file = kek_file;
    return o;
  }

  std::unique_ptr<Runner> Open(const std::string& kek_file) {
    auto r = Runner::Open(Options(kek_file), {OrderFlow()});
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? std::move(*r) : nullptr;
  }

  static Reply Order(Runner* runner, const std::string& account, const std::string& key, int amount = 1200) {
    return runner->Execute("order", Request{account, key, "POST", "/orders", Body(amount)});
  }

  // Whether `needle` is anywhere in the files of the key table and its
  // TOAST table, after a checkpoint wrote every page out. Each live and
  // dead row version is in them until a vacuum.
  bool OnDisk(const std::string& needle) {
    db_.Exec("CHECKPOINT");
    const std::string sql =
        "SELECT bool_or(position(convert_to('" + needle +
        "', 'UTF8') IN pg_read_binary_file(f)) > 0) FROM ("
        " SELECT pg_relation_filepath(c.oid) AS f FROM pg_class c"
        " WHERE c.oid = 'phasekey.idempotency_keys'::regclass"
        "    OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = 'phasekey.idempotency_keys'::regclass)) s";
    return db_.Value(sql) == "t";
  }

  // The rows' columns any write would change.
  std::string Untouched() {
    return db_.Value(
        "SELECT string_agg(concat_ws(',', idempotency_key, xmin, state, recovery_point, attempts), ';' "
        "ORDER BY id) FROM phasekey.idempotency_keys");
  }

  // A finished key, a key waiting at `placed` (its payment failed
  // retryably) and a key given up, under `account`.
  void ThreeStates(Runner* runner, const std::string& account) {
    ASSERT_EQ(Order(runner, account, "done").kind, Reply::Kind::kCompleted);
    pay_fails = true;
    ASSERT_EQ(Order(runner, account, "waiting").kind, Reply::Kind::kRetryLater);
    ASSERT_EQ(Order(runner, account, "given-up").kind, Reply::Kind::kRetryLater);
    pay_fails = false;
    db_.Exec(
        "UPDATE phasekey.idempotency_keys SET state = 'dead', last_error = 'given up' "
        "WHERE idempotency_key = 'given-up' AND account = '" +
        account + "'");
  }

  TestDatabase db_;
  MemoryProvider provider;
  KekFiles keks;
  std::atomic<bool> pay_fails{false};
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool hold_pay = false;
};

TEST_F(DataProtectionTest, WithEncryptionTheKeyTableOnDiskHoldsNoRequestValue) {
  auto runner = Open(keks.Write("kek", {{"k1", 'a'}}));
  ThreeStates(runner.get(), "acct");
  ASSERT_EQ(Order(runner.get(), "acct", "done").kind, Reply::Kind::kReplayed);
  ASSERT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE data_key_id IS NOT NULL"), "3");
  EXPECT_FALSE(OnDisk(kCard));
  EXPECT_FALSE(OnDisk(kNote)) << "the response echoes it: sealed too";
  EXPECT_FALSE(OnDisk("pay_1")) << "the foreign outcome is sealed";
}

TEST_F(DataProtectionTest, WithoutEncryptionTheSameRunLeavesTheValuesOnDisk) {
  auto runner = Open("");
  ThreeStates(runner.get(), "acct");
  ASSERT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE data_key_id IS NULL"), "3");
  EXPECT_TRUE(OnDisk(kCard)) << "the check can find what is stored in clear";
  EXPECT_TRUE(OnDisk(kNote));
  EXPECT_TRUE(OnDisk("pay_1"));
}

TEST_F(DataProtectionTest, SealedBodiesStillResumeReplayAndReDrive) {
  auto runner = Open(keks.Write("kek", {{"k1", 'a'}}));
  const Reply first = Order(runner.get(), "acct", "k");
  ASSERT_EQ(first.kind, Reply::Kind::kCompleted) << first.detail;
  const Reply again = Order(runner.get(), "acct", "k");
  ASSERT_EQ(again.kind, Reply::Kind::kReplayed);
  EXPECT_EQ(again.response.body, first.response.body);
  EXPECT_NE(first.response.body.find(kNote), std::string::npos);
  // Abandoned at `placed`, then finished by the re-drive worker from the
  // sealed request alone.
  pay_fails = true;
  ASSERT_EQ(Order(runner.get(), "acct", "abandoned").kind, Reply::Kind::kRetryLater);
  pay_fails = false;
  db_.Exec("UPDATE phasekey.idempotency_keys SET next_attempt_at = now()");
  auto worker = RedriveWorker::Open(runner.get(), RedriveOptions{});
  ASSERT_TRUE(worker.has_value()) << worker.error().ToString();
  ASSERT_EQ((*worker)->RunOnce()->finished, 1u);
  const Reply redriven = Order(runner.get(), "acct", "abandoned");
  ASSERT_EQ(redriven.kind, Reply::Kind::kReplayed);
  EXPECT_NE(redriven.response.body.find(kNote), std::string::npos) << "the worker resumed with the stored body";
}

TEST_F(DataProtectionTest, AFinishedSealedKeyKeepsNoRequestBodyYetAnotherBodyWithItsKeyGets422) {
  auto runner = Open(keks.Write("kek", {{"k1", 'a'}}));
  ASSERT_EQ(Order(runner.get(), "acct", "k").kind, Reply::Kind::kCompleted);
  EXPECT_EQ(db_.Value("SELECT request_body IS NULL FROM phasekey.idempotency_keys"), "t");
  const Reply reused = Order(runner.get(), "acct", "k", /*amount=*/9999);
  EXPECT_EQ(reused.kind, Reply::Kind::kMismatch) << reused.detail;
  EXPECT_EQ(Order(runner.get(), "acct", "k").kind, Reply::Kind::kReplayed);
}

TEST_F(DataProtectionTest, AFinishedPlainKeyKeepsNoRequestBodyYetAnotherBodyWithItsKeyGets422) {
  auto runner = Open("");
  ASSERT_EQ(Order(runner.get(), "acct", "k").kind, Reply::Kind::kCompleted);
  EXPECT_EQ(db_.Value("SELECT request_body IS NULL FROM phasekey.idempotency_keys"), "t");
  const Reply reused = Order(runner.get(), "acct", "k", /*amount=*/9999);
  EXPECT_EQ(reused.kind, Reply::Kind::kMismatch) << reused.detail;
  EXPECT_EQ(Order(runner.get(), "acct", "k").kind, Reply::Kind::kReplayed);
}

TEST_F(DataProtectionTest, AWrongKeyEncryptionKeyStopsOpenWithOneLineAndTouchesNoKey) {
  auto runner = Open(keks.Write("kek", {{"k1", 'a'}}));
  ThreeStates(runner.get(), "acct");
  runner.reset();
  const std::string before = Untouched();
  auto wrong = Runner::Open(Options(keks.Write("wrong", {{"k1", 'b'}})), {OrderFlow()});
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(wrong.error().message().find("'k1'"), std::string::npos) << wrong.error().message();
  EXPECT_NE(wrong.error().message().find("wrong key"), std::string::npos) << wrong.error().message();
  EXPECT_EQ(wrong.error().message().find('\n'), std::string::npos);
  EXPECT_EQ(Untouched(), before);
}

TEST_F(DataProtectionTest, ALostKeyEncryptionKeyStopsOpenWithOneLineAndTouchesNoKey) {
  auto runner = Open(keks.Write("kek", {{"k1", 'a'}}));
  ThreeStates(runner.get(), "acct");
  runner.reset();
  const std::string before = Untouched();
  for (const std::string& file : {keks.Write("other", {{"k2", 'c'}}), std::string()}) {
    SCOPED_TRACE(file.empty() ? "no key at all" : "another key");
    auto lost = Runner::Open(Options(file), {OrderFlow()});
    ASSERT_FALSE(lost.has_value());
    EXPECT_EQ(lost.error().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(lost.error().message().find("'k1'"), std::string::npos) << lost.error().message();
    EXPECT_EQ(lost.error().message().find('\n'), std::string::npos);
  }
  auto missing = Runner::Open(Options("/nonexistent/kek"), {OrderFlow()});
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("/nonexistent/kek"), std::string::npos);
  EXPECT_EQ(Untouched(), before);
  EXPECT_EQ(db_.Value("SELECT string_agg(kek_id, ',') FROM phasekey.key_encryption_keys"), "k1")
      << "a refused key is not recorded";
}

TEST_F(DataProtectionTest, AKeyFileOthersCanReadIsRefused) {
  auto open = Runner::Open(Options(keks.Write("loose", {{"k1", 'a'}}, 0644)), {OrderFlow()});
  ASSERT_FALSE(open.has_value());
  EXPECT_NE(open.error().message().find("chmod 600"), std::string::npos) << open.error().message();
}

TEST_F(DataProtectionTest, RotatingTheKeyEncryptionKeyUnderLoadChangesNoReplayAndFailsNoKey) {
  // Before: every process has k1 alone.
  std::map<std::string, std::string> answers;  // account/key -> first response body
  std::map<std::string, int> amounts;          // account/key -> the request's amount
  {
    auto runner = Open(keks.Write("k1", {{"k1", 'a'}}));
    for (int i = 0; i < 40; ++i) {
      const std::string account = "acct-" + std::to_string(i % 8), key = "before-" + std::to_string(i);
      const Reply r = Order(runner.get(), account, key, i);
      ASSERT_EQ(r.kind, Reply::Kind::kCompleted) << r.detail;
      answers[account + "/" + key] = r.response.body;
      amounts[account + "/" + key] = i;
    }
  }
  // Steps 1-2 of the procedure: k2 current, k1 still accepted.
  const std::string both = keks.Write("both", {{"k2", 'b'}, {"k1", 'a'}});
  auto runner = Open(both);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0}, requests{0};
  std::mutex mu;
  std::vector<std::thread> load;
  for (int t = 0; t < 3; ++t) {
    load.emplace_back([&, t] {
      for (int n = 0; !stop; ++n) {
        // Even: a replay of a key from before; odd: a new key.
        const int i = (n / 2 + 13 * t) % 40;
        const bool replay = n % 2 == 0;
        const std::string account = "acct-" + std::to_string(replay ? i % 8 : n % 8);
        const std::string key =
            replay ? "before-" + std::to_string(i) : "during-" + std::to_string(t) + "-" + std::to_string(n);
        const int amount = replay ? i : n;
        const Reply r = Order(runner.get(), account, key, amount);
        ++requests;
        std::lock_guard lock(mu);
        const std::string slot = account + "/" + key;
        const bool want = replay ? r.kind == Reply::Kind::kReplayed && r.response.body == answers[slot]
                                 : r.kind == Reply::Kind::kCompleted;
        if (!want) ++failures;
        if (!replay) {
          answers[slot] = r.response.body;
          amounts[slot] = amount;
        }
      }
    });
  }
  while (requests < 30) std::this_thread::sleep_for(milliseconds(5));
  EncryptionOptions keys;
  keys.kek_file = both;
  auto rotated = RotateKeyEncryptionKey(Options("").database, keys, "test-operator");
  const int during = requests;
  while (requests < during + 30) std::this_thread::sleep_for(milliseconds(5));
  stop = true;
  for (auto& t : load) t.join();
  ASSERT_TRUE(rotated.has_value()) << rotated.error().ToString();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GE(rotated->rewrapped, 8u) << "the data keys of the 8 accounts were wrapped by k1";
  EXPECT_EQ(rotated->retired_keks, std::vector<std::string>{"k1"});
  EXPECT_EQ(db_.Value("SELECT string_agg(DISTINCT kek_id, ',') FROM phasekey.data_keys"), "k2");
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.operator_audit WHERE action = 'rotate_kek'"), "1");
  // Step 4: k1 removed. Every key answers as it first did.
  runner.reset();
  auto after = Open(keks.Write("k2", {{"k2", 'b'}}));
  for (const auto& [slot, body] : answers) {
    const std::string account = slot.substr(0, slot.find('/')), key = slot.substr(slot.find('/') + 1);
    const Reply r = Order(after.get(), account, key, amounts[slot]);
    ASSERT_EQ(r.kind, Reply::Kind::kReplayed) << slot << ": " << r.detail;
    EXPECT_EQ(r.response.body, body) << slot;
  }
}

TEST_F(DataProtectionTest, ErasingAnAccountAnswers410ChargesNothingAgainAndLeavesOthersAlone) {
  auto runner = Open(keks.Write("kek", {{"k1", 'a'}}));
  ThreeStates(runner.get(), "erased");
  ThreeStates(runner.get(), "kept");
  const Reply kept = Order(runner.get(), "kept", "done");
  ASSERT_EQ(kept.kind, Reply::Kind::kReplayed);
  // One key of the erased account is paying while the erasure runs.
  {
    std::lock_guard lock(gate_mu);
    hold_pay = true;
  }
  Reply in_flight;
  std::thread client([&] { in_flight = Order(runner.get(), "erased", "in-flight"); });
  ASSERT_TRUE(
      db_.WaitForValue("SELECT recovery_point FROM phasekey.idempotency_keys "
                       "WHERE idempotency_key = 'in-flight'",
                       "placed"));
  auto erased = EraseAccount(Options("").database, "erased", "test-operator");
  {
    std::lock_guard lock(gate_mu);
    hold_pay = false;
  }
  gate_cv.notify_all();
  client.join();
  ASSERT_TRUE(erased.has_value()) << erased.error().ToString();
  EXPECT_EQ(erased->data_keys_destroyed, 1u);
  EXPECT_EQ(erased->keys_erased, 4u);
  EXPECT_EQ(erased->keys_stopped, 2u) << "the waiting key and the one in flight";
  EXPECT_NE(in_flight.kind, Reply::Kind::kCompleted) << "its fenced move found the key parked";
  const int posts = provider.posts();
  for (const char* key : {"done", "waiting", "given-up", "in-flight"}) {
    SCOPED_TRACE(key);
    const Reply r = Order(runner.get(), "erased", key);
    EXPECT_EQ(r.kind, Reply::Kind::kErased) << r.detail;
  }
  db_.Exec("UPDATE phasekey.idempotency_keys SET next_attempt_at = now()");
  auto worker = RedriveWorker::Open(runner.get(), RedriveOptions{});
  ASSERT_TRUE(worker.has_value());
  const auto round = (*worker)->RunOnce();
  ASSERT_TRUE(round.has_value());
  EXPECT_EQ(round->claimed, 1u) << "only the kept account's waiting key";
  EXPECT_EQ(provider.posts(), posts + 1) << "nothing of the erased account was sent again";
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE account = 'erased' AND "
                      "(request_body IS NOT NULL OR response_body IS NOT NULL OR erased_at IS NULL)"),
            "0");
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.data_keys WHERE account = 'erased' AND wrapped IS NOT NULL"), "0");
  const Reply still = Order(runner.get(), "kept", "done");
  ASSERT_EQ(still.kind, Reply::Kind::kReplayed);
  EXPECT_EQ(still.response.body, kept.response.body);
  EXPECT_EQ(db_.Value("SELECT concat_ws(',', actor, account, succeeded) FROM phasekey.operator_audit "
                      "WHERE action = 'erase'"),
            "test-operator,erased,t");
  // A new request of the erased account is a new operation, under a new
  // data key.
  const Reply fresh = Order(runner.get(), "erased", "after");
  EXPECT_EQ(fresh.kind, Reply::Kind::kCompleted) << fresh.detail;
}

}  // namespace
}  // namespace phasekey
