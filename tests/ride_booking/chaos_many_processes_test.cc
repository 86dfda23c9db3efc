// `ride_booking chaos --services 3 --workers 2` as a real process: three
// services behind the demo's round-robin balancer and two workers on one
// database, each of the five SIGKILLed once during the run. Asserted first:
// every process was killed and every service answered requests; then every
// invariant holds, and keys were started on one process and finished on
// another. The gateway fails 40% of its first charge attempts, so services
// release keys (503 to the client) that another process then finishes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chaos_output.h"
#include "support/child_process.h"
#include "support/test_database.h"

namespace ride_booking {
namespace {

using phasekey::testing::RunToEnd;
using phasekey::testing::TestDatabase;

TEST(ChaosManyProcessesTest, ThreeServicesAndTwoWorkersWithEachKilledPassEveryInvariant) {
  TestDatabase db(TestDatabase::Schema::kMigrated);
  const auto o = RunToEnd({RIDE_BOOKING_PATH, "chaos", "--database-url", db.url(), "--services", "3", "--workers", "2",
                           "--clients", "4", "--requests", "60", "--kills", "5", "--fail-rate", "0.4", "--seed", "5",
                           "--no-progress"});
  const std::vector<testing::ProcessRow> rows = testing::ProcessRows(o.out);
  ASSERT_EQ(rows.size(), 5u) << o.out;
  const std::vector<std::string> names = {"service-1", "service-2", "service-3", "worker-1", "worker-2"};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].name, names[i]) << o.out;
    EXPECT_EQ(rows[i].kills, 1) << rows[i].name << " was not killed: the run tested less than it says\n" << o.out;
    if (i < 3) {
      EXPECT_GT(rows[i].answered, 0) << rows[i].name << " answered nothing\n" << o.out;
    }
  }
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("chaos: PASS"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("restarts                 5"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("replays                240  (identical 240)"), std::string::npos) << o.out;
  EXPECT_GT(testing::HandedOver(o.out), 0) << "no key was started on one process and finished on another\n" << o.out;
}

}  // namespace
}  // namespace ride_booking
