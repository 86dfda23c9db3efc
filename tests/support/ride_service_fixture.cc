#include "support/ride_service_fixture.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace phasekey::testing {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void RideServiceTest::SetUp() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  dir_ = std::filesystem::temp_directory_path() /
         ("phasekey-" + std::string(test->test_suite_name()) + "-" + test->name() + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  world_ =
      std::make_unique<RideWorld>(RideWorldOptions{.database_url = db_.url(), .log_dir = (dir_ / "logs").string()});
  service_ = world_->StartService(&port_);
  ASSERT_NE(port_, 0) << "ride_booking serve did not start; see " << world_->LogPath("service");
}

void RideServiceTest::TearDown() {
  service_.reset();
  world_.reset();
}

std::string RideServiceTest::RidesUrl() const { return "http://127.0.0.1:" + std::to_string(port_) + "/rides"; }

}  // namespace phasekey::testing
