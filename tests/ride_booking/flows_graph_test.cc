// `ride_booking flows graph`: the operator's view of the flow this binary knows.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace phasekey {
namespace {

std::pair<int, std::string> RunRideBooking(const std::string& args) {
  FILE* p = ::popen((std::string(RIDE_BOOKING_PATH) + " " + args + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(FlowsGraphTest, PrintsTheRideFlowAsDot) {
  auto [code, out] = RunRideBooking("flows graph create_ride");
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"started\" -> \"ride_created\";"), std::string::npos) << out;
  EXPECT_NE(out.find("\"charge_created\" -> \"finished\";"), std::string::npos) << out;
}

TEST(FlowsGraphTest, RendersSvgThroughGraphviz) {
  auto [code, out] = RunRideBooking("flows graph create_ride --format svg");
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("<svg"), std::string::npos);
  EXPECT_NE(out.find("ride_created"), std::string::npos);
}

TEST(FlowsGraphTest, RefusesAnUnknownFlow) {
  auto [code, out] = RunRideBooking("flows graph nope");
  EXPECT_EQ(code, 1);
  const auto known = out.find("known: ");
  ASSERT_NE(known, std::string::npos) << out;
  EXPECT_NE(out.find("create_ride", known), std::string::npos) << out;
  EXPECT_NE(out.find("book_ride", known), std::string::npos) << out;
}

}  // namespace
}  // namespace phasekey
