// Request fingerprints as stored on key rows, and CanonicalBody, the one
// parse of a body that every reader of a request shares.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "phasekey/fingerprint.h"

namespace phasekey {
namespace {

// Bodies as the ride example's clients send them, with the canonical form
// and fingerprint every key row made of them holds. A change to either
// would answer every retry of a key stored before it 422 key-reused.
struct StoredBody {
  const char* body;
  const char* canonical;
  const char* sha256_hex;
};
const StoredBody kStoredBodies[] = {
    {R"({"origin_lat": 52.52, "origin_lon": 13.40, "target_lat": 48.85, "target_lon": 2.35})",
     R"({"origin_lat":52.52,"origin_lon":13.4,"target_lat":48.85,"target_lon":2.35})",
     "2ac394722b793237423f5830de594e9b9817b307a93d05e628eaee4230e8b12f"},
    {R"({"booking_reference": "BK-2026-0001", "origin_lat": 52.52, "origin_lon": 13.4, )"
     R"("target_lat": 48.85, "target_lon": 2.35})",
     R"({"booking_reference":"BK-2026-0001","origin_lat":52.52,"origin_lon":13.4,)"
     R"("target_lat":48.85,"target_lon":2.35})",
     "f1f109d05b9f1dff881e4173d51d472ec5afa5579e2443f3224ee48cbfe3cf3b"},
    {R"({"ride_id":"42"})", R"({"ride_id":"42"})", "17d2d7be3715121dd7b5b23f33471db72b2334ff99a4bccc9a8ef3c1b698a1b9"},
    {R"({"ride_id":"7","reason":"requested"})", R"({"reason":"requested","ride_id":"7"})",
     "e07a1d6236d450f902ed11d577c32054c28ae2f15dab5976fd7582e6e8a53b09"},
};

TEST(FingerprintTest, KeepsTheFingerprintsOfBodiesStoredOnKeyRows) {
  for (const StoredBody& stored : kStoredBodies) {
    Result<Fingerprint> f = FingerprintJson(stored.body);
    ASSERT_TRUE(f.has_value()) << stored.body << ": " << f.error().ToString();
    EXPECT_EQ(f->canonical, stored.canonical);
    EXPECT_EQ(f->sha256_hex, stored.sha256_hex) << stored.body;
  }
}

TEST(CanonicalBodyTest, HoldsTheSameCanonicalFormAndFingerprintAsFingerprintJson) {
  for (const StoredBody& stored : kStoredBodies) {
    auto body = CanonicalBody::Of(stored.body);
    ASSERT_TRUE(body.has_value()) << body.error().ToString();
    EXPECT_EQ((*body)->fingerprint().canonical, stored.canonical);
    EXPECT_EQ((*body)->fingerprint().sha256_hex, stored.sha256_hex);
  }
}

TEST(CanonicalBodyTest, ItsDocumentIsTheCanonicalFormParsedNotTheBytesAsSent) {
  auto body = CanonicalBody::Of(R"({"b": 1.0, "a": "\u0041", "c": [1e2, 0.5]})");
  ASSERT_TRUE(body.has_value());
  const nlohmann::json& doc = (*body)->document();
  EXPECT_EQ(doc, nlohmann::json::parse(R"({"a":"A","b":1,"c":[100,0.5]})"));
  EXPECT_TRUE(doc["b"].is_number_integer());  // as the canonical "1" reads, not as the 1.0 sent
  EXPECT_EQ(doc.dump(), nlohmann::json::parse((*body)->fingerprint().canonical).dump());
}

TEST(CanonicalBodyTest, RefusesWhatFingerprintJsonRefusesWithTheSameMessage) {
  for (const char* bad : {R"({"a":1,"a":2})", "", "[1,", R"("\ud800")", "1e400"}) {
    auto body = CanonicalBody::Of(bad);
    Result<Fingerprint> f = FingerprintJson(bad);
    ASSERT_FALSE(body.has_value()) << bad;
    ASSERT_FALSE(f.has_value()) << bad;
    EXPECT_EQ(body.error().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(body.error().message(), f.error().message());
  }
  CanonicalizeOptions shallow;
  shallow.max_nesting_depth = 1;
  EXPECT_FALSE(CanonicalBody::Of("[[1]]", shallow).has_value());
}

TEST(CanonicalBodyTest, ParsesItsDocumentOnceForConcurrentReaders) {
  auto body = CanonicalBody::Of(R"({"items":[1,2,3],"note":"x"})");
  ASSERT_TRUE(body.has_value());
  std::vector<const nlohmann::json*> seen(8, nullptr);
  std::vector<std::thread> readers;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    readers.emplace_back([&, i] { seen[i] = &(*body)->document(); });
  }
  for (std::thread& t : readers) t.join();
  for (const nlohmann::json* doc : seen) {
    EXPECT_EQ(doc, &(*body)->document());
    EXPECT_EQ((*doc)["note"], "x");
  }
}

}  // namespace
}  // namespace phasekey
