#include "phasekey/inbox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <pqxx/pqxx>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::TestDatabase;

InboxEvent Event(const std::string& id, const std::string& type, const std::string& charge) {
  return {"stripe", id, charge, type, R"({"id":")" + id + R"(","type":")" + type + R"("})"};
}

// The example's handler in miniature: payment states per charge, plus an
// effects log with one row per handler run that committed.
InboxResult PaymentHandler(pqxx::transaction_base& tx, const InboxEvent& e) {
  tx.exec_params0("INSERT INTO effects (event_id) VALUES ($1)", e.event_id);
  if (e.type == "charge.succeeded") {
    tx.exec_params0("INSERT INTO payments VALUES ($1, 'succeeded') ON CONFLICT (charge_id) DO NOTHING", e.object_id);
    return InboxResult::Applied();
  }
  if (tx.exec_params("UPDATE payments SET state = 'refunded' WHERE charge_id = $1", e.object_id).affected_rows() == 0) {
    return InboxResult::Park("charge " + e.object_id + " has not succeeded yet");
  }
  return InboxResult::Applied();
}

class InboxTest : public ::testing::Test {
 protected:
  InboxTest() {
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    tx.exec0("CREATE TABLE payments (charge_id text PRIMARY KEY, state text NOT NULL)");
    tx.exec0("CREATE TABLE effects (n bigint GENERATED ALWAYS AS IDENTITY, event_id text NOT NULL)");
    tx.commit();
  }
  std::unique_ptr<Inbox> Open(InboxHandler handler, std::size_t pool_size = 4, std::size_t sweep_objects = 100,
                              std::shared_ptr<Metrics> metrics = nullptr) {
    DatabaseOptions db;
    db.url = db_.url();
    db.checkout_timeout = std::chrono::milliseconds(30000);
    InboxOptions o;
    o.pool_size = pool_size;
    o.sweep_objects = sweep_objects;
    o.metrics = std::move(metrics);
    auto inbox = Inbox::Open(db, std::move(handler), o);
    EXPECT_TRUE(inbox.has_value()) << inbox.error().ToString();
    return inbox ? std::move(*inbox) : nullptr;
  }
  std::string Value(const std::string& sql) {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec(sql);
    if (r.empty() || r[0][0].is_null()) return "<none>";
    return r[0][0].as<std::string>();
  }
  TestDatabase db_;
};

TEST_F(InboxTest, TheSameEventDeliveredAThousandTimesConcurrentlyIsAppliedOnce) {
  auto inbox = Open(PaymentHandler, 8);
  ASSERT_NE(inbox, nullptr);
  const InboxEvent event = Event("evt_1", "charge.succeeded", "ch_1");
  constexpr int kThreads = 16, kDeliveries = 1000;
  std::atomic<int> next{0};
  std::mutex mu;
  std::map<std::string, int> outcomes;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      while (next.fetch_add(1) < kDeliveries) {
        auto r = inbox->Receive(event);
        std::lock_guard lock(mu);
        ++outcomes[r ? std::string(InboxDeliveryName(r->delivery)) : r.error().ToString()];
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(outcomes["applied"], 1);
  EXPECT_EQ(outcomes["duplicate"], kDeliveries - 1);
  EXPECT_EQ(outcomes.size(), 2u) << "every delivery is acknowledged";
  EXPECT_EQ(Value("SELECT count(*) FROM effects"), "1");
  EXPECT_EQ(Value("SELECT state FROM payments WHERE charge_id = 'ch_1'"), "succeeded");
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.inbox_events"), "1");
}

TEST_F(InboxTest, ARefundBeforeItsChargeIsParkedAndAppliedWhenTheChargeArrives) {
  auto inbox = Open(PaymentHandler);
  ASSERT_NE(inbox, nullptr);
  auto refunded = inbox->Receive(Event("evt_r", "charge.refunded", "ch_1"));
  ASSERT_TRUE(refunded.has_value()) << refunded.error().ToString();
  EXPECT_EQ(refunded->delivery, InboxDelivery::kParked);
  EXPECT_EQ(refunded->park_reason, "charge ch_1 has not succeeded yet");
  EXPECT_EQ(Value("SELECT count(*) FROM effects"), "0") << "a parked handler's writes are rolled back";
  EXPECT_EQ(Value("SELECT state FROM phasekey.inbox_events WHERE event_id = 'evt_r'"), "parked");

  auto again = inbox->Receive(Event("evt_r", "charge.refunded", "ch_1"));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->delivery, InboxDelivery::kDuplicate) << "a parked event is recorded: acknowledged";

  auto succeeded = inbox->Receive(Event("evt_s", "charge.succeeded", "ch_1"));
  ASSERT_TRUE(succeeded.has_value()) << succeeded.error().ToString();
  EXPECT_EQ(succeeded->delivery, InboxDelivery::kApplied);
  EXPECT_EQ(succeeded->unparked, 1u);
  EXPECT_EQ(Value("SELECT state FROM payments WHERE charge_id = 'ch_1'"), "refunded");
  EXPECT_EQ(Value("SELECT string_agg(event_id, ',' ORDER BY n) FROM effects"), "evt_s,evt_r");
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.inbox_events WHERE state = 'applied'"), "2");
  EXPECT_EQ(Value("SELECT attempts FROM phasekey.inbox_events WHERE event_id = 'evt_r'"), "2");
}

// Without the per-object lock a refund could park while its charge's event
// commits beside it, unseen by both: stuck parked. With it, every object
// ends refunded however the deliveries interleave.
TEST_F(InboxTest, ConcurrentShuffledDuplicatedEventsOfManyChargesAllEndRefunded) {
  auto inbox = Open(PaymentHandler, 8);
  ASSERT_NE(inbox, nullptr);
  constexpr int kCharges = 150;
  std::vector<InboxEvent> deliveries;
  for (int i = 0; i < kCharges; ++i) {
    const std::string ch = "ch_" + std::to_string(i);
    for (int copy = 0; copy < 2; ++copy) {
      deliveries.push_back(Event("evt_s_" + ch, "charge.succeeded", ch));
      deliveries.push_back(Event("evt_r_" + ch, "charge.refunded", ch));
    }
  }
  std::shuffle(deliveries.begin(), deliveries.end(), std::mt19937(7));
  std::atomic<std::size_t> next{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (std::size_t i; (i = next.fetch_add(1)) < deliveries.size();) {
        if (!inbox->Receive(deliveries[i]).has_value()) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Value("SELECT count(*) FROM payments WHERE state = 'refunded'"), std::to_string(kCharges));
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.inbox_events WHERE state = 'parked'"), "0");
  EXPECT_EQ(Value("SELECT count(*) FROM effects"), std::to_string(2 * kCharges)) << "each event applied once";
}

TEST_F(InboxTest, ParkedEventsOfAnObjectAreRetriedInArrivalOrder) {
  // Each event needs the one before it: e2 needs e1, e3 needs e2.
  auto chain = [](pqxx::transaction_base& tx, const InboxEvent& e) {
    const int n = e.type.back() - '0';
    if (n > 1 && tx.exec_params("SELECT 1 FROM effects WHERE event_id = $1", "e" + std::to_string(n - 1)).empty()) {
      return InboxResult::Park("waiting for e" + std::to_string(n - 1));
    }
    tx.exec_params0("INSERT INTO effects (event_id) VALUES ($1)", e.event_id);
    return InboxResult::Applied();
  };
  auto inbox = Open(chain);
  ASSERT_NE(inbox, nullptr);
  for (const char* id : {"e3", "e2"}) {
    auto r = inbox->Receive({"p", id, "obj", std::string("step") + id[1], "{}"});
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->delivery, InboxDelivery::kParked);
  }
  auto first = inbox->Receive({"p", "e1", "obj", "step1", "{}"});
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_EQ(first->unparked, 2u);
  EXPECT_EQ(Value("SELECT string_agg(event_id, ',' ORDER BY n) FROM effects"), "e1,e2,e3");
}

TEST_F(InboxTest, AHandlerThatThrowsLeavesTheEventForRedelivery) {
  std::atomic<int> calls{0};
  auto inbox = Open([&](pqxx::transaction_base& tx, const InboxEvent& e) {
    if (calls.fetch_add(1) == 0) {
      tx.exec_params0("INSERT INTO effects (event_id) VALUES ($1)", e.event_id);
      throw std::runtime_error("the ledger service is down");
    }
    return PaymentHandler(tx, e);
  });
  ASSERT_NE(inbox, nullptr);
  const InboxEvent event = Event("evt_1", "charge.succeeded", "ch_1");
  auto failed = inbox->Receive(event);
  ASSERT_FALSE(failed.has_value());
  EXPECT_TRUE(failed.error().IsRetryable()) << failed.error().ToString();
  EXPECT_NE(failed.error().message().find("the ledger service is down"), std::string::npos);
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.inbox_events"), "0") << "nothing recorded";
  EXPECT_EQ(Value("SELECT count(*) FROM effects"), "0") << "the handler's writes rolled back";

  auto redelivered = inbox->Receive(event);
  ASSERT_TRUE(redelivered.has_value()) << redelivered.error().ToString();
  EXPECT_EQ(redelivered->delivery, InboxDelivery::kApplied);
  EXPECT_EQ(Value("SELECT state FROM payments"), "succeeded");
}

TEST_F(InboxTest, AHandlerAskingForARetryRecordsNothing) {
  auto inbox = Open([](pqxx::transaction_base&, const InboxEvent&) { return InboxResult::Retry("not now"); });
  ASSERT_NE(inbox, nullptr);
  auto r = inbox->Receive(Event("evt_1", "charge.succeeded", "ch_1"));
  ASSERT_FALSE(r.has_value());
  EXPECT_TRUE(r.error().IsRetryable());
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.inbox_events"), "0");
}

TEST_F(InboxTest, AHandlerDatabaseErrorIsClassifiedAndRecordsNothing) {
  auto inbox = Open([](pqxx::transaction_base& tx, const InboxEvent&) {
    tx.exec0("INSERT INTO no_such_table VALUES (1)");
    return InboxResult::Applied();
  });
  ASSERT_NE(inbox, nullptr);
  auto r = inbox->Receive(Event("evt_1", "charge.succeeded", "ch_1"));
  ASSERT_FALSE(r.has_value());
  EXPECT_TRUE(r.error().IsTerminal()) << r.error().ToString();
  EXPECT_NE(r.error().message().find("42P01"), std::string::npos) << r.error().ToString();
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.inbox_events"), "0");
}

TEST_F(InboxTest, TheSweepAppliesParkedEventsOnceTheirPrerequisiteExists) {
  auto inbox = Open(PaymentHandler);
  ASSERT_NE(inbox, nullptr);
  ASSERT_EQ(inbox->Receive(Event("evt_r1", "charge.refunded", "ch_1"))->delivery, InboxDelivery::kParked);
  ASSERT_EQ(inbox->Receive(Event("evt_r2", "charge.refunded", "ch_2"))->delivery, InboxDelivery::kParked);
  auto none = inbox->RetryParked();
  ASSERT_TRUE(none.has_value()) << none.error().ToString();
  EXPECT_EQ(none->objects, 2u);
  EXPECT_EQ(none->applied, 0u);
  EXPECT_EQ(none->still_parked, 2u);
  {  // ch_1's charge is recorded by another path (a reconciliation, say)
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    tx.exec0("INSERT INTO payments VALUES ('ch_1', 'succeeded')");
    tx.commit();
  }
  auto swept = inbox->RetryParked();
  ASSERT_TRUE(swept.has_value()) << swept.error().ToString();
  EXPECT_EQ(swept->applied, 1u);
  EXPECT_EQ(swept->still_parked, 1u);
  EXPECT_EQ(Value("SELECT state FROM payments WHERE charge_id = 'ch_1'"), "refunded");
  EXPECT_EQ(Value("SELECT state FROM phasekey.inbox_events WHERE event_id = 'evt_r2'"), "parked");
}

TEST_F(InboxTest, ObjectsParkedForGoodTakeTurnsWithTheOthersInTheSweep) {
  auto inbox = Open(PaymentHandler, 4, /*sweep_objects=*/1);
  ASSERT_NE(inbox, nullptr);
  ASSERT_EQ(inbox->Receive(Event("evt_r1", "charge.refunded", "ch_stuck"))->delivery, InboxDelivery::kParked);
  ASSERT_EQ(inbox->Receive(Event("evt_r2", "charge.refunded", "ch_2"))->delivery, InboxDelivery::kParked);
  {
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    tx.exec0("INSERT INTO payments VALUES ('ch_2', 'succeeded')");
    tx.commit();
  }
  // One object per sweep; the sweep visits the buckets in turn, and within
  // a bucket the least retried first: whichever comes first, ch_stuck
  // (parked for good) cannot keep ch_2 from its turn.
  std::size_t applied = 0;
  for (int sweep = 0; sweep < 2; ++sweep) {
    auto swept = inbox->RetryParked();
    ASSERT_TRUE(swept.has_value()) << swept.error().ToString();
    EXPECT_EQ(swept->objects, 1u);
    applied += swept->applied;
  }
  EXPECT_EQ(applied, 1u);
  EXPECT_EQ(Value("SELECT state FROM payments WHERE charge_id = 'ch_2'"), "refunded");
  EXPECT_EQ(Value("SELECT state FROM phasekey.inbox_events WHERE event_id = 'evt_r1'"), "parked");
}

TEST_F(InboxTest, AParkedEventWhoseRetryThrowsStaysParked) {
  std::atomic<bool> fail_refunds{false};
  auto inbox = Open([&](pqxx::transaction_base& tx, const InboxEvent& e) {
    if (fail_refunds && e.type == "charge.refunded") throw std::runtime_error("boom");
    return PaymentHandler(tx, e);
  });
  ASSERT_NE(inbox, nullptr);
  ASSERT_EQ(inbox->Receive(Event("evt_r", "charge.refunded", "ch_1"))->delivery, InboxDelivery::kParked);
  fail_refunds = true;
  auto succeeded = inbox->Receive(Event("evt_s", "charge.succeeded", "ch_1"));
  ASSERT_TRUE(succeeded.has_value()) << succeeded.error().ToString();
  EXPECT_EQ(succeeded->unparked, 0u);
  EXPECT_EQ(Value("SELECT park_reason FROM phasekey.inbox_events WHERE event_id = 'evt_r'"), "handler threw: boom");
  fail_refunds = false;
  auto swept = inbox->RetryParked();
  ASSERT_TRUE(swept.has_value());
  EXPECT_EQ(swept->applied, 1u);
  EXPECT_EQ(Value("SELECT state FROM payments"), "refunded");
}

TEST_F(InboxTest, EventsWithMissingFieldsAreRefusedBeforeAnythingIsRecorded) {
  auto inbox = Open(PaymentHandler);
  ASSERT_NE(inbox, nullptr);
  InboxEvent no_object = Event("evt_1", "charge.succeeded", "");
  auto r = inbox->Receive(no_object);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.inbox_events"), "0");
  DatabaseOptions db;
  db.url = db_.url();
  EXPECT_FALSE(Inbox::Open(db, nullptr).has_value());
}

TEST_F(InboxTest, DeliveriesAndUnparkedEventsAreCounted) {
  auto metrics = Metrics::Create();
  int calls = 0;
  auto inbox = Open(
      [&calls](pqxx::transaction_base& tx, const InboxEvent& e) {
        if (e.event_id == "evt_fail" && calls++ == 0) return InboxResult::Retry("not yet");
        return PaymentHandler(tx, e);
      },
      4, 100, metrics);
  ASSERT_NE(inbox, nullptr);
  ASSERT_TRUE(inbox->Receive(Event("evt_r", "charge.refunded", "ch_1")).has_value());
  ASSERT_TRUE(inbox->Receive(Event("evt_s", "charge.succeeded", "ch_1")).has_value());
  ASSERT_TRUE(inbox->Receive(Event("evt_s", "charge.succeeded", "ch_1")).has_value());
  EXPECT_FALSE(inbox->Receive(Event("evt_fail", "charge.succeeded", "ch_2")).has_value());
  EXPECT_FALSE(inbox->Receive(Event("", "charge.succeeded", "ch_2")).has_value());
  const std::string text = metrics->Exposition();
  for (const char* line : {R"(phasekey_inbox_deliveries_total{delivery="parked",provider="stripe"} 1)",
                           R"(phasekey_inbox_deliveries_total{delivery="applied",provider="stripe"} 1)",
                           R"(phasekey_inbox_deliveries_total{delivery="duplicate",provider="stripe"} 1)",
                           R"(phasekey_inbox_deliveries_total{delivery="retry",provider="stripe"} 1)",
                           R"(phasekey_inbox_deliveries_total{delivery="invalid",provider="stripe"} 1)",
                           R"(phasekey_inbox_unparked_total{provider="stripe"} 1)"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
}

}  // namespace
}  // namespace phasekey
