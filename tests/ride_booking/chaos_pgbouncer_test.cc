// The chaos demo through Debian's PgBouncer (1.18) in transaction pooling
// mode (label `pgbouncer`): two services and two workers connect through it
// with prepared statements off, the workers' re-drive listeners directly
// (--session-url, for LISTEN), each of the four is SIGKILLed once, and
// PgBouncer itself is restarted mid-run (SIGTERM: every connection through
// it dropped). Asserted first: PgBouncer started (with CI set, a failure to
// start fails the test instead of skipping it), the processes logged in
// through it, every process was killed and the restart ran; then every
// invariant holds, and the run's history passes the independent checker
// (tests/history/check_history.py).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "chaos_output.h"
#include "support/child_process.h"
#include "support/pgbouncer.h"
#include "support/prerequisites.h"
#include "support/test_database.h"

namespace ride_booking {
namespace {

using phasekey::testing::RunToEnd;
using phasekey::testing::TestDatabase;

// Client logins PgBouncer logged ("... login attempt: db=... user=...").
int Logins(const std::string& log) {
  int n = 0;
  for (auto at = log.find("login attempt"); at != std::string::npos; at = log.find("login attempt", at + 1)) ++n;
  return n;
}

TEST(ChaosPgBouncerTest, ServicesAndWorkersThroughTransactionPoolingWithKillsPassEveryInvariant) {
  TestDatabase db(TestDatabase::Schema::kMigrated);
  phasekey::testing::PgBouncerOptions options;
  options.pool_size = 10;  // server connections shared by every process's pool
  auto bouncer = phasekey::testing::PgBouncer::Start(db.url(), options);
  if (!bouncer) PHASEKEY_SKIP_OR_FAIL_IN_CI() << "PgBouncer: " << bouncer.error().message();
  const int logins_before = Logins((*bouncer)->Log());
  const std::string history =
      std::filesystem::temp_directory_path() / ("phasekey-pgbouncer-history-" + std::to_string(::getpid()));

  const auto o = RunToEnd({RIDE_BOOKING_PATH,
                           "chaos",
                           "--database-url",
                           (*bouncer)->url(),
                           "--no-prepared-statements",
                           "--session-url",
                           db.url(),
                           "--services",
                           "2",
                           "--workers",
                           "2",
                           "--clients",
                           "4",
                           "--requests",
                           "60",
                           "--kills",
                           "4",
                           "--seed",
                           "21",
                           "--event",
                           "0.4:" + (*bouncer)->RestartCommand(),
                           "--history",
                           history,
                           "--no-progress"});
  const std::string log = (*bouncer)->Log();
  ASSERT_GT(Logins(log) - logins_before, 4) << "the processes did not connect through PgBouncer\n" << log;
  const std::vector<testing::ProcessRow> rows = testing::ProcessRows(o.out);
  ASSERT_EQ(rows.size(), 4u) << o.out;
  for (const testing::ProcessRow& r : rows) {
    EXPECT_EQ(r.kills, 1) << r.name << " was not killed: the run tested less than it says\n" << o.out;
  }
  EXPECT_EQ(o.exit_code, 0) << o.out << "\nPgBouncer's log:\n" << log;
  EXPECT_NE(o.out.find("chaos: PASS"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("replays                240  (identical 240)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("chaos: events: every event ran"), std::string::npos) << "PgBouncer was not restarted\n"
                                                                             << o.out;
  const auto check = RunToEnd(
      {"/usr/bin/env", "python3", std::string(PHASEKEY_SOURCE_DIR) + "/tests/history/check_history.py", history});
  EXPECT_EQ(check.exit_code, 0) << check.out;
  EXPECT_NE(check.out.find("event 1, event-end 1"), std::string::npos) << check.out;
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(history);
}

}  // namespace
}  // namespace ride_booking
