#include "phasekey/http.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "phasekey/runner.h"

namespace phasekey {
namespace {

// Stands in for Runner::Execute: records its calls and answers with a preset
// Reply.
class FakeRunner {
 public:
  struct Call {
    std::string flow;
    Request request;
  };

  Reply Execute(const std::string& flow, const Request& request) {
    calls.push_back({flow, request});
    return reply;
  }
  // The handler's view of this runner.
  HttpHandler::Execute AsExecute() {
    return [this](const std::string& flow, const Request& request) { return Execute(flow, request); };
  }

  Reply reply;
  std::vector<Call> calls;
};

// ---------------------------------------------------------------------------
// HttpHeaders and ProblemResponse

TEST(HttpHeadersTest, FindsNamesCaseInsensitivelyAndCountsRepeats) {
  HttpHeaders h{{"Idempotency-Key", "a"}, {"X-Other", "b"}};
  h.Add("idempotency-key", "c");
  ASSERT_NE(h.Find("IDEMPOTENCY-KEY"), nullptr);
  EXPECT_EQ(*h.Find("IDEMPOTENCY-KEY"), "a");
  EXPECT_EQ(h.Count("Idempotency-key"), 2u);
  EXPECT_EQ(h.Find("Missing"), nullptr);
}

TEST(ProblemResponseTest, HasTheFourMembersTheContentTypeAndADescribedbyLink) {
  Response res = ProblemResponse(Problem{409, "key-in-progress", "T", "D"}, "https://example.test/docs");
  EXPECT_EQ(res.status, 409);
  ASSERT_NE(res.headers.Find("Content-Type"), nullptr);
  EXPECT_EQ(*res.headers.Find("Content-Type"), "application/problem+json");
  ASSERT_NE(res.headers.Find("Link"), nullptr);
  EXPECT_EQ(*res.headers.Find("Link"), "<https://example.test/docs>; rel=\"describedby\"");
  nlohmann::json body = nlohmann::json::parse(res.body);
  EXPECT_EQ(
      body,
      (nlohmann::json{
          {"type", "https://example.test/docs#key-in-progress"}, {"title", "T"}, {"status", 409}, {"detail", "D"}}));
}

TEST(ProblemResponseTest, SurvivesInvalidUtf8InTheDetail) {
  Response res = ProblemResponse(Problem{400, "x", "T", "bad \xFF byte"}, "https://d");
  nlohmann::json body = nlohmann::json::parse(res.body, nullptr, false);
  EXPECT_FALSE(body.is_discarded()) << res.body;
}

// ---------------------------------------------------------------------------
// HttpHandler

class HttpHandlerTest : public ::testing::Test {
 protected:
  HttpHandlerTest() { Build(HttpHandlerOptions{}); }

  void Build(HttpHandlerOptions options) {
    handler_ = std::make_unique<HttpHandler>(std::move(options), runner_.AsExecute());
    ASSERT_TRUE(handler_->Route("POST", "/rides", "create_ride").ok());
  }

  static HttpRequest Post(std::string key_header, std::string body = R"({"x":1})") {
    HttpRequest req{"POST", "/rides", {{"Content-Type", "application/json"}}, std::move(body)};
    req.headers.Add("Idempotency-Key", std::move(key_header));
    return req;
  }

  Response Send(const HttpRequest& req) { return handler_->Handle(req, "acct_1"); }

  static nlohmann::json Body(const Response& res) { return nlohmann::json::parse(res.body); }

  static std::string Header(const Response& res, std::string_view name) {
    const std::string* v = res.headers.Find(name);
    return v ? *v : "<absent>";
  }

  // Checks the problem shape shared by every error answer.
  static void ExpectProblem(const Response& res, int status, std::string_view slug) {
    EXPECT_EQ(res.status, status);
    EXPECT_EQ(Header(res, "Content-Type"), "application/problem+json");
    EXPECT_EQ(Header(res, "Link"), "<https://phasekey.dev/docs/idempotency>; rel=\"describedby\"");
    nlohmann::json body = Body(res);
    EXPECT_EQ(body["type"], "https://phasekey.dev/docs/idempotency#" + std::string(slug));
    EXPECT_EQ(body["status"], status);
    EXPECT_TRUE(body["title"].is_string());
    EXPECT_TRUE(body["detail"].is_string());
  }

  FakeRunner runner_;
  std::unique_ptr<HttpHandler> handler_;
};

TEST_F(HttpHandlerTest, PassesAccountKeyMethodTargetAndBodyToTheRoutedFlow) {
  runner_.reply.kind = Reply::Kind::kCompleted;
  HttpRequest req = Post("\"k-1\"", R"({"origin":"a"})");
  req.target = "/rides?dry=1";
  Send(req);
  ASSERT_EQ(runner_.calls.size(), 1u);
  const FakeRunner::Call& call = runner_.calls[0];
  EXPECT_EQ(call.flow, "create_ride");
  EXPECT_EQ(call.request.account, "acct_1");
  EXPECT_EQ(call.request.idempotency_key, "k-1");
  EXPECT_EQ(call.request.method, "POST");
  EXPECT_EQ(call.request.path, "/rides?dry=1");
  EXPECT_EQ(call.request.body, R"({"origin":"a"})");
}

TEST_F(HttpHandlerTest, HandsTheRunnerTheBodyARouteAlreadyParsedInsteadOfParsingItAgain) {
  runner_.reply.kind = Reply::Kind::kCompleted;
  HttpRequest req = Post("\"k-1\"", R"({"b": 1.0, "a": 2})");
  const Result<std::shared_ptr<const CanonicalBody>>& parsed = req.ParsedBody();  // a plain route, say
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(req.ParsedBody()->get(), parsed->get());  // parsed once, kept
  Send(req);
  ASSERT_EQ(runner_.calls.size(), 1u);
  EXPECT_EQ(runner_.calls[0].request.canonical_body, *parsed);
  EXPECT_EQ(runner_.calls[0].request.body, R"({"b": 1.0, "a": 2})");
}

TEST_F(HttpHandlerTest, NeverParsesTheBodyItselfAndHandsOnNoFailedParse) {
  runner_.reply.kind = Reply::Kind::kCompleted;
  HttpRequest unread = Post("\"k-1\"");
  Send(unread);
  EXPECT_FALSE(unread.parsed_body_memo.has_value());
  HttpRequest bad = Post("\"k-2\"", "{not JSON");
  ASSERT_FALSE(bad.ParsedBody().has_value());
  Send(bad);
  ASSERT_EQ(runner_.calls.size(), 2u);
  EXPECT_EQ(runner_.calls[0].request.canonical_body, nullptr);
  EXPECT_EQ(runner_.calls[1].request.canonical_body, nullptr);  // the runner refuses it in its own words
}

TEST_F(HttpHandlerTest, PassesTheTraceparentHeaderToTheRunnerAsReceived) {
  runner_.reply.kind = Reply::Kind::kCompleted;
  HttpRequest req = Post("k");
  req.headers.Add("TraceParent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  Send(req);
  Send(Post("k2"));
  ASSERT_EQ(runner_.calls.size(), 2u);
  EXPECT_EQ(runner_.calls[0].request.traceparent, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  EXPECT_EQ(runner_.calls[1].request.traceparent, "");
}

TEST_F(HttpHandlerTest, ATraceparentSentTwiceIsDroppedAndNeverRefusesTheRequest) {
  runner_.reply.kind = Reply::Kind::kCompleted;
  runner_.reply.response = Response{201, {}, "{}"};
  HttpRequest req = Post("k");
  req.headers.Add("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  req.headers.Add("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  EXPECT_EQ(Send(req).status, 201);
  ASSERT_EQ(runner_.calls.size(), 1u);
  EXPECT_EQ(runner_.calls[0].request.traceparent, "") << "the spec makes a repeated header invalid";
}

TEST_F(HttpHandlerTest, ReturnsACompletedResponseAsStored) {
  runner_.reply.kind = Reply::Kind::kCompleted;
  runner_.reply.response = Response{201, {{"Content-Type", "application/json"}, {"X-Ride", "r1"}}, "{\"id\":1}"};
  Response res = Send(Post("k"));
  EXPECT_EQ(res.status, 201);
  EXPECT_EQ(res.body, "{\"id\":1}");
  EXPECT_EQ(Header(res, "X-Ride"), "r1");
  EXPECT_EQ(res.headers.Find("Idempotent-Replayed"), nullptr);
}

TEST_F(HttpHandlerTest, ReplaysTheStoredStatusAndBodyByteForByteWithTheReplayHeader) {
  runner_.reply.kind = Reply::Kind::kReplayed;
  std::string stored = "{ \"id\" : 1,\n \"note\":\"\\u00e9\" }";  // not canonical on purpose
  runner_.reply.response = Response{500, {{"Content-Type", "application/json"}}, stored};
  Response res = Send(Post("k"));
  EXPECT_EQ(res.status, 500);
  EXPECT_EQ(res.body, stored);
  EXPECT_EQ(Header(res, "Content-Type"), "application/json");
  EXPECT_EQ(Header(res, "Idempotent-Replayed"), "true");
}

TEST_F(HttpHandlerTest, AnswersInProgressWith409AndRetryAfter) {
  runner_.reply.kind = Reply::Kind::kInProgress;
  runner_.reply.retry_after_s = 7;
  Response res = Send(Post("k"));
  ExpectProblem(res, 409, "key-in-progress");
  EXPECT_EQ(Header(res, "Retry-After"), "7");
  EXPECT_EQ(Body(res)["title"], "A request is outstanding for this Idempotency-Key");
}

TEST_F(HttpHandlerTest, NeverSendsAZeroRetryAfter) {
  runner_.reply.kind = Reply::Kind::kInProgress;
  runner_.reply.retry_after_s = 0;
  EXPECT_EQ(Header(Send(Post("k")), "Retry-After"), "1");
}

TEST_F(HttpHandlerTest, AnswersAMismatchWith422AndTheRunnersReason) {
  runner_.reply.kind = Reply::Kind::kMismatch;
  runner_.reply.detail = "The body differs from the first request.";
  Response res = Send(Post("k"));
  ExpectProblem(res, 422, "key-reused");
  EXPECT_EQ(Body(res)["title"], "Idempotency-Key is already used");
  EXPECT_NE(Body(res)["detail"].get<std::string>().find("differs"), std::string::npos);
}

TEST_F(HttpHandlerTest, AnswersRetryLaterWith503AndRetryAfter) {
  runner_.reply.kind = Reply::Kind::kRetryLater;
  runner_.reply.retry_after_s = 5;
  runner_.reply.detail = "pool exhausted at host db-7";
  Response res = Send(Post("k"));
  ExpectProblem(res, 503, "retry-later");
  EXPECT_EQ(Header(res, "Retry-After"), "5");
  EXPECT_EQ(Body(res)["detail"].get<std::string>().find("db-7"), std::string::npos);
}

TEST_F(HttpHandlerTest, AnswersAnInvalidBodyWith400AndTheReason) {
  runner_.reply.kind = Reply::Kind::kInvalidRequest;
  runner_.reply.detail = "duplicate member \"a\"";
  Response res = Send(Post("k"));
  ExpectProblem(res, 400, "invalid-request");
  EXPECT_NE(Body(res)["detail"].get<std::string>().find("duplicate member"), std::string::npos);
}

TEST_F(HttpHandlerTest, AnswersADeadLetteredKeyWith500SayingNotToRetry) {
  runner_.reply.kind = Reply::Kind::kDeadLettered;
  Response res = Send(Post("k"));
  ExpectProblem(res, 500, "abandoned");
  std::string detail = Body(res)["detail"];
  EXPECT_NE(detail.find("contact support"), std::string::npos) << detail;
  EXPECT_NE(detail.find("Do not retry"), std::string::npos) << detail;
  EXPECT_EQ(res.headers.Find("Retry-After"), nullptr);
}

TEST_F(HttpHandlerTest, AnswersAKeyParkedForAnOperatorWith500SayingNotToUseANewKey) {
  runner_.reply.kind = Reply::Kind::kNeedsOperator;
  runner_.reply.detail = "phase 'charge': stripe: an earlier attempt may have charged";
  Response res = Send(Post("k"));
  ExpectProblem(res, 500, "operation-unverified");
  std::string detail = Body(res)["detail"];
  EXPECT_NE(detail.find("Do not retry with a new Idempotency-Key"), std::string::npos) << detail;
  EXPECT_EQ(detail.find("stripe"), std::string::npos) << "no internals: " << detail;
  EXPECT_EQ(res.headers.Find("Retry-After"), nullptr);
}

TEST_F(HttpHandlerTest, AnswersAnErasedKeyWith410GoneSayingNotToUseANewKey) {
  runner_.reply.kind = Reply::Kind::kErased;
  runner_.reply.detail = "the account's stored data was erased";
  Response res = Send(Post("k"));
  ExpectProblem(res, 410, "erased");
  std::string detail = Body(res)["detail"];
  EXPECT_NE(detail.find("Do not retry it with a new Idempotency-Key"), std::string::npos) << detail;
  EXPECT_EQ(res.headers.Find("Retry-After"), nullptr);
}

TEST_F(HttpHandlerTest, AnswersAnInternalErrorWith500WithoutInternals) {
  runner_.reply.kind = Reply::Kind::kInternalError;
  runner_.reply.detail = "relation idempotency_keys does not exist";
  Response res = Send(Post("k"));
  ExpectProblem(res, 500, "internal-error");
  EXPECT_EQ(Body(res)["detail"].get<std::string>().find("relation"), std::string::npos);
}

TEST_F(HttpHandlerTest, RejectsAMissingKeyWith400WithoutRunning) {
  HttpRequest req{"POST", "/rides", {}, "{}"};
  Response res = Send(req);
  ExpectProblem(res, 400, "key-missing");
  EXPECT_EQ(Body(res)["title"], "Idempotency-Key is missing");
  EXPECT_TRUE(runner_.calls.empty());
}

TEST_F(HttpHandlerTest, RejectsAMalformedKeyWith400AndSaysWhy) {
  Response res = Send(Post(std::string(256, 'k')));
  ExpectProblem(res, 400, "key-invalid");
  EXPECT_NE(Body(res)["detail"].get<std::string>().find("at most 255"), std::string::npos);
  EXPECT_TRUE(runner_.calls.empty());
}

TEST_F(HttpHandlerTest, RejectsAKeySentTwice) {
  HttpRequest req = Post("a");
  req.headers.Add("idempotency-key", "b");
  ExpectProblem(Send(req), 400, "key-invalid");
  EXPECT_TRUE(runner_.calls.empty());
}

TEST_F(HttpHandlerTest, FindsTheKeyHeaderCaseInsensitively) {
  HttpRequest req{"POST", "/rides", {{"IDEMPOTENCY-KEY", "\"abc\""}}, "{}"};
  Send(req);
  ASSERT_EQ(runner_.calls.size(), 1u);
  EXPECT_EQ(runner_.calls[0].request.idempotency_key, "abc");
}

TEST_F(HttpHandlerTest, RejectsABodyOverTheLimitWith413AndAcceptsOneAtIt) {
  HttpHandlerOptions o;
  o.max_body_bytes = 8;
  Build(o);
  ExpectProblem(Send(Post("k", std::string(9, 'x'))), 413, "body-too-large");
  EXPECT_TRUE(runner_.calls.empty());
  Send(Post("k", std::string(8, 'x')));
  EXPECT_EQ(runner_.calls.size(), 1u);
}

TEST_F(HttpHandlerTest, RejectsANonJsonContentTypeWith415WithoutRunning) {
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "application/jsonx", "json", ""}) {
    HttpRequest req{"POST", "/rides", {{"Content-Type", type}}, R"({"x":1})"};
    req.headers.Add("Idempotency-Key", "k");
    ExpectProblem(Send(req), 415, "unsupported-media-type");
  }
  EXPECT_TRUE(runner_.calls.empty());
}

TEST_F(HttpHandlerTest, AcceptsJsonMediaTypesWithParametersAndAMissingContentType) {
  for (const char* type : {"application/json", "Application/JSON; charset=utf-8", "application/merge-patch+json"}) {
    HttpRequest req{"POST", "/rides", {{"Content-Type", type}}, R"({"x":1})"};
    req.headers.Add("Idempotency-Key", "k");
    EXPECT_NE(Send(req).status, 415) << type;
  }
  HttpRequest bare{"POST", "/rides", {{"Idempotency-Key", "k"}}, R"({"x":1})"};
  EXPECT_NE(Send(bare).status, 415);
  EXPECT_EQ(runner_.calls.size(), 4u);
}

TEST_F(HttpHandlerTest, AnswersAnUnknownPathWith404) {
  HttpRequest req = Post("k");
  req.target = "/nope?x=1";
  Response res = Send(req);
  ExpectProblem(res, 404, "not-found");
  EXPECT_TRUE(runner_.calls.empty());
}

TEST_F(HttpHandlerTest, AnswersAWrongMethodWith405AndAllow) {
  HttpRequest req = Post("k");
  req.method = "PUT";
  Response res = Send(req);
  ExpectProblem(res, 405, "method-not-allowed");
  EXPECT_EQ(Header(res, "Allow"), "POST");
}

TEST_F(HttpHandlerTest, AnswersAnEmptyAccountWith401) {
  ExpectProblem(handler_->Handle(Post("k"), ""), 401, "unauthenticated");
  EXPECT_TRUE(runner_.calls.empty());
}

TEST_F(HttpHandlerTest, UsesTheConfiguredDocsUrlInTypeAndLink) {
  HttpHandlerOptions o;
  o.docs_url = "https://api.example.test/idem";
  Build(o);
  Response res = Send(HttpRequest{"POST", "/rides", {}, "{}"});
  EXPECT_EQ(Header(res, "Link"), "<https://api.example.test/idem>; rel=\"describedby\"");
  EXPECT_EQ(Body(res)["type"], "https://api.example.test/idem#key-missing");
}

TEST_F(HttpHandlerTest, RunsAKeylessRequestUnderAFreshKeyWhenKeysAreOptional) {
  HttpHandlerOptions o;
  o.require_key = false;
  Build(o);
  runner_.reply.kind = Reply::Kind::kCompleted;
  Send(HttpRequest{"POST", "/rides", {}, "{}"});
  Send(HttpRequest{"POST", "/rides", {}, "{}"});
  ASSERT_EQ(runner_.calls.size(), 2u);
  const std::string& k = runner_.calls[0].request.idempotency_key;
  EXPECT_EQ(k.size(), 5u + 32u) << k;
  EXPECT_EQ(k.rfind("auto-", 0), 0u) << k;
  EXPECT_NE(k, runner_.calls[1].request.idempotency_key);
}

TEST_F(HttpHandlerTest, RefusesDuplicateAndMalformedRoutes) {
  EXPECT_FALSE(handler_->Route("POST", "/rides", "other").ok());
  EXPECT_FALSE(handler_->Route("POST", "rides", "f").ok());
  EXPECT_FALSE(handler_->Route("POST", "/r?x", "f").ok());
  EXPECT_FALSE(handler_->Route("", "/r", "f").ok());
  EXPECT_TRUE(handler_->Route("PUT", "/rides", "update_ride").ok());
}

// ---------------------------------------------------------------------------
// Path templates and natural keys

std::shared_ptr<const Flow> FlowKeyedBy(const std::string& name, KeySource source) {
  auto flow =
      Flow::Builder(name)
          .KeyFrom(std::move(source))
          .Atomic(kStarted, "only", [](AtomicContext&) -> PhaseResult { return Respond{Response{}}; }, {kFinished})
          .Build();
  EXPECT_TRUE(flow.has_value()) << flow.error().ToString();
  return *flow;
}

class NaturalKeyRoutesTest : public ::testing::Test {
 protected:
  NaturalKeyRoutesTest()
      : handler_(HttpHandlerOptions{}, runner_.AsExecute(),
                 {FlowKeyedBy("book", KeySource::BodyField("/booking_reference")),
                  FlowKeyedBy("book_at", KeySource::PathParameter("ref")), FlowKeyedBy("plain", KeySource::Header())}) {
    runner_.reply.kind = Reply::Kind::kCompleted;
    EXPECT_TRUE(handler_.Route("POST", "/bookings", "book").ok());
    EXPECT_TRUE(handler_.Route("PUT", "/bookings/{ref}", "book_at").ok());
    EXPECT_TRUE(handler_.Route("POST", "/bookings/{ref}/items/{item}", "plain").ok());
    EXPECT_TRUE(handler_.Route("PUT", "/bookings/latest", "plain").ok());
  }

  Response Send(std::string method, std::string target, std::vector<HttpHeaders::Field> headers = {}) {
    HttpRequest req{std::move(method), std::move(target), {}, R"({"booking_reference":"BK-1"})"};
    for (auto& [name, value] : headers) req.headers.Add(name, value);
    return handler_.Handle(req, "acct_1");
  }

  FakeRunner runner_;
  HttpHandler handler_;
};

TEST_F(NaturalKeyRoutesTest, AFlowKeyedByTheBodyNeedsNoHeaderAndTheRunnerGetsNoKey) {
  EXPECT_EQ(Send("POST", "/bookings").status, 200);
  ASSERT_EQ(runner_.calls.size(), 1u);
  EXPECT_EQ(runner_.calls[0].flow, "book");
  EXPECT_EQ(runner_.calls[0].request.idempotency_key, "");
}

TEST_F(NaturalKeyRoutesTest, AnIdempotencyKeySentToANaturallyKeyedFlowIsRefusedWithoutRunning) {
  Response res = Send("POST", "/bookings", {{"Idempotency-Key", "\"k\""}});
  EXPECT_EQ(res.status, 400);
  EXPECT_NE(res.body.find("send no Idempotency-Key"), std::string::npos) << res.body;
  EXPECT_NE(res.body.find("/booking_reference"), std::string::npos) << res.body;
  EXPECT_TRUE(runner_.calls.empty());
}

TEST_F(NaturalKeyRoutesTest, ATemplateSegmentBecomesAPathParameter) {
  EXPECT_EQ(Send("PUT", "/bookings/BK-9?x=1").status, 200);
  ASSERT_EQ(runner_.calls.size(), 1u);
  EXPECT_EQ(runner_.calls[0].flow, "book_at");
  EXPECT_EQ(runner_.calls[0].request.path, "/bookings/BK-9?x=1");
  EXPECT_EQ(runner_.calls[0].request.path_parameters.at("ref"), "BK-9");
}

TEST_F(NaturalKeyRoutesTest, ALiteralRouteWinsOverATemplateAndHeaderFlowsStillNeedTheHeader) {
  EXPECT_EQ(Send("PUT", "/bookings/latest").status, 400) << "plain is keyed by the header";
  EXPECT_EQ(Send("PUT", "/bookings/latest", {{"Idempotency-Key", "k2"}}).status, 200);
  ASSERT_EQ(runner_.calls.size(), 1u);
  EXPECT_EQ(runner_.calls[0].flow, "plain");
  EXPECT_EQ(Send("POST", "/bookings/BK-1/items/7", {{"Idempotency-Key", "k3"}}).status, 200);
  EXPECT_EQ(runner_.calls[1].request.path_parameters.at("item"), "7");
}

TEST_F(NaturalKeyRoutesTest, AnEmptySegmentOrAnotherShapeIsNotAMatch) {
  EXPECT_EQ(Send("PUT", "/bookings/").status, 404);
  EXPECT_EQ(Send("PUT", "/bookings/a/b").status, 404);
  Response res = Send("GET", "/bookings/BK-1");
  EXPECT_EQ(res.status, 405);
  EXPECT_EQ(*res.headers.Find("Allow"), "PUT");
  EXPECT_TRUE(runner_.calls.empty());
}

TEST_F(NaturalKeyRoutesTest, RefusesBadTemplatesAndAPathKeyTheTemplateLacks) {
  EXPECT_FALSE(handler_.Route("PUT", "/b/{Ref}", "plain").ok());
  EXPECT_FALSE(handler_.Route("PUT", "/b/x{ref}", "plain").ok());
  EXPECT_FALSE(handler_.Route("PUT", "/b/{ref}/{ref}", "plain").ok());
  EXPECT_FALSE(handler_.Route("PUT", "/b/{id}", "book_at").ok()) << "book_at is keyed by {ref}";
  EXPECT_TRUE(handler_.Route("POST", "/b/{ref}", "book_at").ok());
}

}  // namespace
}  // namespace phasekey
