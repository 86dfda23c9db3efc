// fake_gateway over TLS (--tls-cert, --tls-key) with certificates the test
// makes: the Stripe adapter charges through it on the phases' Beast client
// that trusts the test's CA, on one kept-alive connection; a client that
// does not trust the CA fails before any byte of the charge is sent; a
// certificate without its key is refused at start. Then `ride_booking
// serve` charging through it: with --provider-ca-file it books rides, without
// it every charge fails before anything reaches the gateway.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "phasekey/phases/adapters.h"
#include "phasekey/phases/http_client.h"
#include "support/child_process.h"
#include "support/ride_world.h"
#include "support/test_certificates.h"
#include "support/test_database.h"

namespace {

using phasekey::phases::Classification;
using phasekey::phases::Lookup;
using phasekey::phases::ProviderAnswer;
using std::chrono::milliseconds;

constexpr char kProviderKey[] = "3c1f0a7e-52d4-4b8e-a9c6-1d7e2f3a4b5c:charge";

class FakeGatewayTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "fake_gateway_tls_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    phasekey::testing::MakeTestCertificates(dir_.string());
  }
  void TearDown() override {
    gateway_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Starts the gateway on https with the test CA's certificate for 127.0.0.1.
  void StartGateway() {
    gateway_ = std::make_unique<phasekey::testing::ChildProcess>(std::vector<std::string>{
        FAKE_GATEWAY_PATH, "--listen", "127.0.0.1:0", "--data-dir", (dir_ / "ledger").string(), "--seed", "5",
        "--tls-cert", (dir_ / "good.pem").string(), "--tls-key", (dir_ / "good.key").string()});
    const std::uint16_t port = gateway_->WaitForListeningPort();
    ASSERT_GT(port, 0);
    base_url_ = "https://127.0.0.1:" + std::to_string(port);
  }

  std::unique_ptr<phasekey::phases::HttpClient> TrustingTheTestCa() const {
    phasekey::phases::BeastHttpClientOptions options;
    options.ca_file = (dir_ / "ca.pem").string();
    return phasekey::phases::NewBeastHttpClient(options);
  }

  std::filesystem::path dir_;
  std::unique_ptr<phasekey::testing::ChildProcess> gateway_;
  std::string base_url_;
};

TEST_F(FakeGatewayTlsTest, TheStripeAdapterChargesOverTlsWithTheTestsCaAndTheReplayComesOnTheSameConnection) {
  StartGateway();
  const auto http = TrustingTheTestCa();
  phasekey::phases::StripeOptions stripe;
  stripe.base_url = base_url_;
  auto adapter = phasekey::phases::NewStripeV1Adapter(stripe);
  auto charge = adapter->BuildCharge({2000, "usd", "7", "", "ride", "", ""}, kProviderKey);
  ASSERT_TRUE(charge.has_value());
  const ProviderAnswer first = http->Send(adapter->base_url(), *charge, milliseconds(10'000));
  const Classification c = adapter->Classify(first);
  ASSERT_EQ(c.kind, Classification::Kind::kSucceeded) << first.error << first.body;
  const ProviderAnswer again = http->Send(adapter->base_url(), *charge, milliseconds(10'000));
  EXPECT_EQ(adapter->Classify(again).payment_id, c.payment_id) << again.error << again.body;
}

TEST_F(FakeGatewayTlsTest, AClientThatDoesNotTrustTheGatewaysCaFailsBeforeTheChargeIsSent) {
  StartGateway();
  phasekey::phases::StripeOptions stripe;
  stripe.base_url = base_url_;
  auto adapter = phasekey::phases::NewStripeV1Adapter(stripe);
  auto charge = adapter->BuildCharge({2000, "usd", "7", "", "ride", "", ""}, kProviderKey);
  ASSERT_TRUE(charge.has_value());
  // The system's store only: the test's CA is not in it.
  const ProviderAnswer refused =
      phasekey::phases::NewBeastHttpClient()->Send(adapter->base_url(), *charge, milliseconds(10'000));
  EXPECT_EQ(refused.transport, ProviderAnswer::Transport::kNotSent);
  EXPECT_NE(refused.error.find("TLS handshake"), std::string::npos) << refused.error;
  // And the gateway made no charge for the key.
  auto lookup = adapter->BuildLookup(adapter->ReferenceFor(kProviderKey));
  ASSERT_TRUE(lookup.has_value());
  const Lookup found =
      adapter->ParseLookup(TrustingTheTestCa()->Send(adapter->base_url(), *lookup, milliseconds(10'000)));
  EXPECT_EQ(found.kind, Lookup::Kind::kNotFound) << found.message;
}

TEST_F(FakeGatewayTlsTest, ACertificateWithoutItsKeyIsRefusedAtStart) {
  const std::string err = (dir_ / "stderr.txt").string();
  phasekey::testing::ChildProcess gateway({FAKE_GATEWAY_PATH, "--listen", "127.0.0.1:0", "--data-dir",
                                           (dir_ / "ledger").string(), "--tls-cert", (dir_ / "good.pem").string()},
                                          {}, err);
  EXPECT_NE(gateway.Wait(), 0);
  std::ifstream in(err);
  const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(said.find("--tls-key"), std::string::npos) << said;
}

// The ride service against the gateway over TLS.
class RideServiceOverTlsTest : public FakeGatewayTlsTest {
 protected:
  void SetUp() override {
    FakeGatewayTlsTest::SetUp();
    world_ = std::make_unique<phasekey::testing::RideWorld>(
        phasekey::testing::RideWorldOptions{.database_url = db_.url(),
                                            .lease_seconds = 15,
                                            .charge_timeout_ms = 3000,
                                            .gateway_args = {"--seed", "7", "--tls-cert", (dir_ / "good.pem").string(),
                                                             "--tls-key", (dir_ / "good.key").string()},
                                            .gateway_tls = true});
  }
  void TearDown() override {
    world_.reset();
    FakeGatewayTlsTest::TearDown();
  }

  // The gateway's ledger, read over https with the test's CA.
  std::string Ledger() const {
    phasekey::phases::ProviderRequest get;
    get.method = "GET";
    get.path = "/_ledger";
    const ProviderAnswer a = TrustingTheTestCa()->Send("https://127.0.0.1:" + std::to_string(world_->gateway_port()),
                                                       get, milliseconds(10'000));
    return a.transport == ProviderAnswer::Transport::kAnswered ? a.body : "no answer: " + a.error;
  }

  phasekey::testing::TestDatabase db_;
  std::unique_ptr<phasekey::testing::RideWorld> world_;
};

constexpr char kRide[] = R"({"origin_lat": 52.52, "origin_lon": 13.40, "target_lat": 48.85, "target_lon": 2.35})";

TEST_F(RideServiceOverTlsTest, TheServiceBooksARideThroughTheGatewayItTrustsWithProviderCaFile) {
  std::uint16_t port = 0;
  auto service = world_->StartService(&port, {.args = {"--provider-ca-file", (dir_ / "ca.pem").string()}});
  ASSERT_NE(port, 0);
  for (const char* key : {"ride-tls-0001", "ride-tls-0002"}) {
    const auto r = world_->PostRide(port, 1, key, kRide);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.status, 201) << r.body;
  }
  const std::string ledger = Ledger();
  const nlohmann::json charges = nlohmann::json::parse(ledger, nullptr, false);
  ASSERT_TRUE(charges.is_array()) << ledger;
  EXPECT_EQ(charges.size(), 2u) << ledger;
}

TEST_F(RideServiceOverTlsTest, WithoutTheCaEveryChargeFailsBeforeAnythingReachesTheGateway) {
  std::uint16_t port = 0;
  auto service = world_->StartService(&port);  // the system's CA store only
  ASSERT_NE(port, 0);
  const auto r = world_->PostRide(port, 1, "ride-tls-0003", kRide);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NE(r.status, 201) << r.body;
  EXPECT_EQ(Ledger(), "[]");
}

}  // namespace
