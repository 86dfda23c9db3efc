// Family 5: request fingerprints. RFC 8785 canonical form plus SHA-256
// (FingerprintJson) of request bodies of about 200 B, 1 KiB and 64 KiB,
// beside plain nlohmann::json parse + dump of the same bytes as the
// baseline, and canonicalization alone. No database. Time per body and
// bytes per second (Google Benchmark's bytes_per_second).
#include <nlohmann/json.hpp>
#include <string>

#include "phasekey/fingerprint.h"
#include "support/bench_main.h"

namespace phasekey::bench {
namespace {

// A body of at least `size` bytes: a ride request with a list of line items
// (members out of order, escapes, non-ASCII, numbers in several spellings),
// grown until it is long enough.
std::string Body(std::size_t size) {
  std::string items;
  std::string body;
  for (int i = 0;; ++i) {
    if (i > 0) items += ",";
    items += "{\"sku\":\"item-" + std::to_string(i) + "\",\"qty\":" + std::to_string(i % 7 + 1) +
             ",\"price\":" + std::to_string(i * 1.25 + 0.5) + ",\"note\":\"caf\\u00e9 \xc3\xa9t\xc3\xa9 \\\"" +
             std::to_string(i) + "\\\"\",\"tax\":1.0e1}";
    body =
        "{\"target_lon\":-122.27,\"origin_lat\":37.7749,\"currency\":\"usd\",\"amount\":2000,"
        "\"origin_lon\":-122.4194,\"target_lat\":37.8044,\"items\":[" +
        items + "]}";
    if (body.size() >= size) return body;
  }
}

template <class Fn>
void Register(const std::string& variant, std::size_t size, Fn fn) {
  const std::string body = Body(size);
  benchmark::RegisterBenchmark(
      ("fingerprint/" + variant + "/bytes:" + std::to_string(size)).c_str(),
      [body, fn](benchmark::State& state) {
        for (auto _ : state) fn(body);
        state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(body.size()));
        state.counters["body_bytes"] = static_cast<double>(body.size());
      })
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace

const char* FamilyName() { return "fingerprint"; }

void RegisterFamily(const BenchConfig&) {
  for (std::size_t size : {std::size_t{200}, std::size_t{1024}, std::size_t{65536}}) {
    Register("nlohmann_parse_dump", size,
             [](const std::string& b) { benchmark::DoNotOptimize(nlohmann::json::parse(b).dump()); });
    Register("phasekey_canonicalize", size, [](const std::string& b) {
      auto r = CanonicalizeJson(b);
      if (!r) throw std::runtime_error(r.error().ToString());
      benchmark::DoNotOptimize(r->size());
    });
    Register("phasekey_fingerprint", size, [](const std::string& b) {
      auto r = FingerprintJson(b);
      if (!r) throw std::runtime_error(r.error().ToString());
      benchmark::DoNotOptimize(r->sha256_hex.size());
    });
  }
}

}  // namespace phasekey::bench
