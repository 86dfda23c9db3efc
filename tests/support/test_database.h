// Test databases on a real PostgreSQL server.
//
// The server is $DATABASE_URL when set (run.sh test starts one embedded
// server for the whole run and sets it), otherwise an embedded server that
// this test process starts once, in a directory of its own under the build
// directory, and stops at exit. Each TestDatabase is a fresh database on that
// server, dropped on destruction, so tests can run in parallel.
#ifndef PHASEKEY_TESTS_SUPPORT_TEST_DATABASE_H_
#define PHASEKEY_TESTS_SUPPORT_TEST_DATABASE_H_

#include <chrono>
#include <string>
#include <string_view>

namespace phasekey::testing {

// URL of the server all tests of this process use (see above). Aborts the
// test process with a message when no server can be had.
const std::string& ServerUrl();

class TestDatabase {
 public:
  enum class Schema { kEmpty, kMigrated };
  // Creates the database; with kMigrated, applies the engine migrations.
  // Throws std::runtime_error on failure (a test then fails with its text).
  explicit TestDatabase(Schema schema = Schema::kMigrated);
  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }

  // The first column of the first row of `sql` as text ("<null>" for NULL),
  // on a connection of its own. Throws on a database error.
  std::string Value(const std::string& sql) const;
  // Runs `sql` (one or more statements, each committing by itself) on a
  // connection of its own. Throws on a database error.
  void Exec(const std::string& sql) const;
  // Polls Value(sql) every 10 ms until it is `want`; true if it was within
  // `timeout`. For waiting until the database shows an event (a row reached
  // a state, a session is listening) instead of sleeping. Throws on a
  // database error.
  bool WaitForValue(const std::string& sql, const std::string& want,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) const;

 private:
  std::string name_;
  std::string url_;
};

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_TEST_DATABASE_H_
