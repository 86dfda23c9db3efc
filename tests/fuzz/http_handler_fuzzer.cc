// Fuzzes phasekey::HttpHandler::Handle (phasekey/http.h) with arbitrary
// requests (method, target, header fields, body, account) and a fake
// execute function whose Reply is also drawn from the input. Checks, for
// every request:
//   - the answer's status is a valid HTTP status;
//   - when the runner was not called, the answer is a 4xx problem
//     (application/problem+json, a JSON body whose status matches): a
//     request the handler refuses never gets a 5xx;
//   - when the runner was called, it was given a non-empty account, a body
//     within max_body_bytes, and a key of 1 to 255 printable characters, or,
//     for a flow keyed by the request itself, no key (and, for a path
//     parameter, a non-empty segment without '/');
//   - every problem body the handler writes is valid JSON, whatever bytes
//     the request or the Reply carried.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "phasekey/http.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

bool Printable(const std::string& s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7E) return false;
  }
  return true;
}

std::string Method(FuzzedDataProvider& in) {
  static const char* const kMethods[] = {"POST", "GET", "PUT", "DELETE", "HEAD", "post", ""};
  if (in.ConsumeBool()) return in.ConsumeRandomLengthString(16);
  return kMethods[in.ConsumeIntegralInRange<std::size_t>(0, std::size(kMethods) - 1)];
}

std::string Target(FuzzedDataProvider& in) {
  static const char* const kTargets[] = {
      "/rides",         "/rides?x=1",    "/rides/",        "/", "/other", "rides", "", "/bookings", "/bookings/",
      "/bookings/BK-1", "/bookings/a/b", "/bookings/{ref}"};
  if (in.ConsumeBool()) return in.ConsumeRandomLengthString(64);
  return kTargets[in.ConsumeIntegralInRange<std::size_t>(0, std::size(kTargets) - 1)];
}

std::string HeaderName(FuzzedDataProvider& in) {
  static const char* const kNames[] = {"Idempotency-Key", "idempotency-key", "Content-Type",
                                       "content-type",    "Authorization",   "X-Other"};
  if (in.ConsumeIntegralInRange(0, 3) == 0) return in.ConsumeRandomLengthString(32);
  return kNames[in.ConsumeIntegralInRange<std::size_t>(0, std::size(kNames) - 1)];
}

phasekey::Reply MakeReply(FuzzedDataProvider& in) {
  phasekey::Reply r;
  r.kind = static_cast<phasekey::Reply::Kind>(in.ConsumeIntegralInRange(0, 7));
  r.retry_after_s = in.ConsumeIntegralInRange(-5, 100);
  r.detail = in.ConsumeRandomLengthString(64);
  r.response.status = in.ConsumeIntegralInRange(100, 599);
  for (int n = in.ConsumeIntegralInRange(0, 3); n > 0; --n) {
    r.response.headers.Add(in.ConsumeRandomLengthString(16), in.ConsumeRandomLengthString(32));
  }
  r.response.body = in.ConsumeRandomLengthString(128);
  return r;
}

// A flow with one phase that answers at once, keyed by `source`.
std::shared_ptr<const phasekey::Flow> FlowKeyedBy(const std::string& name, phasekey::KeySource source) {
  auto flow = phasekey::Flow::Builder(name)
                  .KeyFrom(std::move(source))
                  .Atomic(phasekey::kStarted, "only",
                          [](phasekey::AtomicContext&) -> phasekey::PhaseResult {
                            return phasekey::Respond{phasekey::Response{}};
                          },
                          {phasekey::kFinished})
                  .Build();
  Check(flow.has_value());
  return *flow;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  phasekey::HttpHandlerOptions options;
  options.require_key = in.ConsumeIntegralInRange(0, 3) != 0;
  options.max_body_bytes = in.ConsumeIntegralInRange<std::size_t>(0, 256);
  const phasekey::Reply reply = MakeReply(in);
  bool called = false;
  std::string flow;
  phasekey::Request seen;
  static const std::vector<std::shared_ptr<const phasekey::Flow>> kFlows = {
      FlowKeyedBy("book", phasekey::KeySource::BodyField("/booking_reference")),
      FlowKeyedBy("book_at", phasekey::KeySource::PathParameter("ref"))};
  phasekey::HttpHandler handler(
      options,
      [&](const std::string& name, const phasekey::Request& request) {
        called = true;
        flow = name;
        seen = request;
        return reply;
      },
      kFlows);
  Check(handler.Route("POST", "/rides", "create_ride").ok());
  Check(handler.Route("POST", "/bookings", "book").ok());
  Check(handler.Route("PUT", "/bookings/{ref}", "book_at").ok());

  phasekey::HttpRequest req;
  req.method = Method(in);
  req.target = Target(in);
  for (int n = in.ConsumeIntegralInRange(0, 6); n > 0; --n) {
    req.headers.Add(HeaderName(in), in.ConsumeRandomLengthString(300));
  }
  const std::string account = in.ConsumeBool() ? "acct_1" : in.ConsumeRandomLengthString(16);
  req.body = in.ConsumeRemainingBytesAsString();

  const phasekey::Response res = handler.Handle(req, account);
  Check(res.status >= 100 && res.status <= 599);
  const bool problem = res.headers.Find("Content-Type") != nullptr &&
                       *res.headers.Find("Content-Type") == "application/problem+json" &&
                       (!called || reply.kind != phasekey::Reply::Kind::kCompleted) &&
                       (!called || reply.kind != phasekey::Reply::Kind::kReplayed);
  if (problem) {
    const auto body = nlohmann::json::parse(res.body, nullptr, false);
    Check(body.is_object() && body.value("status", 0) == res.status);
  }
  if (!called) {
    Check(problem && res.status >= 400 && res.status < 500);
    return 0;
  }
  Check(!seen.account.empty());
  if (flow == "book" || flow == "book_at") {
    Check(seen.idempotency_key.empty());
    if (flow == "book_at") {
      const auto ref = seen.path_parameters.find("ref");
      Check(ref != seen.path_parameters.end() && !ref->second.empty() && ref->second.find('/') == std::string::npos);
    }
  } else {
    Check(!seen.idempotency_key.empty() && seen.idempotency_key.size() <= phasekey::kMaxIdempotencyKeyLength &&
          Printable(seen.idempotency_key));
  }
  Check(seen.body.size() <= options.max_body_bytes);
  return 0;
}
