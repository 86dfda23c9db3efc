// The set-up the tests of clients against the real ride booking service
// share (tests/client: request_service_test, client_crash_test,
// key_regeneration_test): a database of the test's own, a scratch directory
// named after the test, fake_gateway and one `ride_booking serve` (their
// stderr in <dir>/logs), and what those tests read back.
#ifndef PHASEKEY_TESTS_SUPPORT_RIDE_SERVICE_FIXTURE_H_
#define PHASEKEY_TESTS_SUPPORT_RIDE_SERVICE_FIXTURE_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "support/child_process.h"
#include "support/ride_world.h"
#include "support/test_database.h"

namespace phasekey::testing {

// The whole file at `path`; "" when it cannot be read.
std::string ReadFile(const std::filesystem::path& path);

class RideServiceTest : public ::testing::Test {
 protected:
  // Makes an empty dir_, starts the gateway and the service; fails the test
  // (fatally) when the service prints no port.
  void SetUp() override;
  // Stops the service, then the gateway. dir_ stays, for the logs.
  void TearDown() override;

  // "http://127.0.0.1:<port_>/rides".
  std::string RidesUrl() const;

  TestDatabase db_;
  std::filesystem::path dir_;
  std::unique_ptr<RideWorld> world_;
  std::unique_ptr<ChildProcess> service_;
  std::uint16_t port_ = 0;
};

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_RIDE_SERVICE_FIXTURE_H_
