// flow/flow_masks.h against a migrated database: the masked fields of flows,
// recorded for the operator's tools and loaded by them.
#include "flow/flow_masks.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "pg/statements.h"
#include "support/test_database.h"

namespace phasekey::flow {
namespace {

using testing::TestDatabase;

PhaseResult Done(AtomicContext&) { return Respond{Response{}}; }

std::shared_ptr<const Flow> FlowMasking(const std::string& name, std::vector<std::string> pointers) {
  Flow::Builder b(name);
  b.Atomic(kStarted, "respond", Done, {kFinished}).Masked(std::move(pointers));
  auto flow = b.Build();
  if (!flow) throw std::logic_error(flow.error().ToString());
  return *flow;
}

// Records `flows` in a transaction of its own; the Status.
Status Record(const TestDatabase& db, const std::vector<std::shared_ptr<const Flow>>& flows) {
  const pg::ScopedStatementMode unprepared(pg::StatementMode::kUnprepared);  // nothing is prepared on `conn`
  pqxx::connection conn(db.url());
  pqxx::work tx(conn);
  Status s = RecordFlowMasks(tx, flows);
  tx.commit();
  return s;
}

std::map<std::string, std::vector<std::string>> Load(const TestDatabase& db) {
  const pg::ScopedStatementMode unprepared(pg::StatementMode::kUnprepared);
  pqxx::connection conn(db.url());
  pqxx::read_transaction tx(conn);
  return LoadFlowMasks(tx);
}

using Masks = std::map<std::string, std::vector<std::string>>;

TEST(FlowMasksTest, RecordsEachFlowsPointersInOrderAndAnEmptyListForAFlowWithout) {
  TestDatabase db;
  ASSERT_TRUE(Record(db, {FlowMasking("pay", {"/card/number", "/card/cvc", "/iban"}), FlowMasking("refund", {})}).ok());
  EXPECT_EQ(Load(db), (Masks{{"pay", {"/card/number", "/card/cvc", "/iban"}}, {"refund", {}}}));
}

TEST(FlowMasksTest, AStartWithTheSameFlowsWritesNothing) {
  TestDatabase db;
  const std::vector<std::shared_ptr<const Flow>> flows = {FlowMasking("pay", {"/card/number"}),
                                                          FlowMasking("refund", {})};
  ASSERT_TRUE(Record(db, flows).ok());
  const std::string written = db.Value("SELECT string_agg(xmin::text, ',' ORDER BY flow) FROM phasekey.flow_masks");
  ASSERT_TRUE(Record(db, flows).ok());
  EXPECT_EQ(db.Value("SELECT string_agg(xmin::text, ',' ORDER BY flow) FROM phasekey.flow_masks"), written)
      << "no row version was written";
}

TEST(FlowMasksTest, AChangedDeclarationReplacesTheRecordedOneAndOtherFlowsAreKept) {
  TestDatabase db;
  ASSERT_TRUE(Record(db, {FlowMasking("pay", {"/card/number", "/iban"}), FlowMasking("legacy", {"/pan"})}).ok());
  db.Exec("UPDATE phasekey.flow_masks SET updated_at = now() - interval '1 day'");
  ASSERT_TRUE(Record(db, {FlowMasking("pay", {"/iban", "/card/number"})}).ok());
  EXPECT_EQ(Load(db), (Masks{{"legacy", {"/pan"}}, {"pay", {"/iban", "/card/number"}}}))
      << "the new order is the declaration; a flow this binary lacks keeps its row";
  EXPECT_EQ(db.Value("SELECT flow FROM phasekey.flow_masks WHERE updated_at > now() - interval '1 hour'"), "pay");
  ASSERT_TRUE(Record(db, {FlowMasking("pay", {})}).ok());
  EXPECT_EQ(Load(db).at("pay"), std::vector<std::string>{}) << "a flow that stops masking is recorded so";
}

TEST(FlowMasksTest, RefusesTwoFlowsOfOneNameAndWritesNothing) {
  TestDatabase db;
  const Status s = Record(db, {FlowMasking("pay", {"/card/number"}), FlowMasking("pay", {})});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("flow 'pay' is given twice"), std::string::npos) << s.ToString();
  EXPECT_TRUE(Load(db).empty());
}

TEST(FlowMasksTest, KeepsPointersWithEscapesAndQuotesAsDeclared) {
  TestDatabase db;
  ASSERT_TRUE(Record(db, {FlowMasking("odd", {"/a~1b", "/m~0n", "/\"q\",{x}", "/items/0"})}).ok());
  EXPECT_EQ(Load(db).at("odd"), (std::vector<std::string>{"/a~1b", "/m~0n", "/\"q\",{x}", "/items/0"}));
}

}  // namespace
}  // namespace phasekey::flow
