#include "phasekey/http.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <set>

namespace phasekey {
namespace {

constexpr std::string_view kKeyHeader = "Idempotency-Key";
constexpr std::string_view kTraceParentHeader = "traceparent";
// Client-supplied text quoted in a problem detail is cut to this length.
constexpr std::size_t kMaxQuoted = 200;

std::string_view PathOf(std::string_view target) { return target.substr(0, target.find('?')); }

std::string Quoted(std::string_view s) {
  if (s.size() <= kMaxQuoted) return std::string(s);
  return std::string(s.substr(0, kMaxQuoted)) + "...";
}

// A fresh key for a request sent without one when keys are optional: 128
// random bits, so it never collides with another request's key.
std::string RandomKey() {
  std::random_device rd;
  std::string key = "auto-";
  for (int i = 0; i < 4; ++i) {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", static_cast<std::uint32_t>(rd()));
    key += buf;
  }
  return key;
}

// Whether a Content-Type value names JSON: application/json or
// application/<subtype>+json (RFC 6839), any case, parameters ignored.
bool IsJsonMediaType(std::string_view value) {
  std::string type(value.substr(0, value.find(';')));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.pop_back();
  std::size_t start = type.find_first_not_of(" \t");
  type = start == std::string::npos ? "" : type.substr(start);
  for (char& c : type) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  constexpr std::string_view kApplication = "application/";
  if (type.rfind(kApplication, 0) != 0) return false;
  const std::string_view subtype = std::string_view(type).substr(kApplication.size());
  return subtype == "json" || (subtype.size() > 5 && subtype.ends_with("+json"));
}

// The segments of a path after its leading '/': "/a/b" -> {"a", "b"}.
std::vector<std::string> Segments(std::string_view path) {
  std::vector<std::string> out;
  std::size_t start = 1;
  while (true) {
    const std::size_t slash = path.find('/', start);
    out.emplace_back(path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) return out;
    start = slash + 1;
  }
}

// The parameter named by a template segment ("{ref}" -> "ref"), or "".
std::string_view ParameterOf(std::string_view segment) {
  if (segment.size() < 2 || segment.front() != '{' || segment.back() != '}') return "";
  return segment.substr(1, segment.size() - 2);
}

bool ValidParameterName(std::string_view name) {
  if (name.empty() || name.size() > 63 || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

// Why `segments` is not a valid template ("" when it is); its parameters
// into *names.
std::string TemplateProblem(const std::vector<std::string>& segments, std::set<std::string, std::less<>>* names) {
  for (const auto& segment : segments) {
    if (segment.find_first_of("{}") == std::string::npos) continue;
    const std::string_view name = ParameterOf(segment);
    if (!ValidParameterName(name)) return "a path parameter must be a whole segment {name}, name [a-z_][a-z0-9_]*";
    if (!names->emplace(name).second) return "path parameter {" + std::string(name) + "} is used twice";
  }
  return "";
}

std::string WithReason(std::string base, const std::string& reason) {
  if (reason.empty()) return base;
  return base + " " + reason;
}

}  // namespace

const Result<std::shared_ptr<const CanonicalBody>>& HttpRequest::ParsedBody() const {
  if (!parsed_body_memo) parsed_body_memo.emplace(CanonicalBody::Of(body));
  return *parsed_body_memo;
}

HttpHandler::HttpHandler(HttpHandlerOptions options, Runner& runner)
    : HttpHandler(
          std::move(options),
          [&runner](const std::string& flow, const Request& request) { return runner.Execute(flow, request); },
          runner.flows()) {}

HttpHandler::HttpHandler(HttpHandlerOptions options, Execute execute, std::vector<std::shared_ptr<const Flow>> flows)
    : options_(std::move(options)), execute_(std::move(execute)) {
  for (const auto& flow : flows) key_sources_.emplace(flow->name(), flow->key_source());
}

Status HttpHandler::Route(std::string method, std::string path, std::string flow) {
  if (method.empty() || flow.empty()) return Status::InvalidArgument("route needs a method and a flow");
  if (path.empty() || path.front() != '/' || path.find('?') != std::string::npos) {
    return Status::InvalidArgument("route path must start with '/' and have no query: " + path);
  }
  std::vector<std::string> segments = Segments(path);
  std::set<std::string, std::less<>> parameters;
  if (std::string why = TemplateProblem(segments, &parameters); !why.empty()) {
    return Status::InvalidArgument(path + ": " + why);
  }
  Target target{flow, KeySource::Header()};
  if (auto known = key_sources_.find(flow); known != key_sources_.end()) target.key_source = known->second;
  if (target.key_source.kind() == KeySource::Kind::kPathParameter && !parameters.count(target.key_source.name())) {
    return Status::InvalidArgument("flow " + flow + " is keyed by " + target.key_source.Describe() + ", which " + path +
                                   " lacks");
  }
  auto [routes, added] = routes_.try_emplace(path);
  if (added) {
    routes->second.segments = std::move(segments);
    if (!parameters.empty()) templates_.push_back(&routes->second);
  }
  auto [it, inserted] = routes->second.methods.emplace(method, target);
  if (!inserted) {
    return Status::InvalidArgument(method + " " + path + " is already routed to flow " + it->second.flow);
  }
  return Status::OK();
}

const HttpHandler::PathRoutes* HttpHandler::Match(std::string_view path,
                                                  std::map<std::string, std::string, std::less<>>* params) const {
  // A literal route's text has no brace (Route refuses a brace outside a
  // whole {name} segment), so a template is never taken for one.
  if (auto exact = routes_.find(path); exact != routes_.end() && exact->first.find('{') == std::string::npos) {
    return &exact->second;
  }
  if (templates_.empty() || path.empty() || path.front() != '/') return nullptr;
  const std::vector<std::string> segments = Segments(path);
  for (const PathRoutes* routes : templates_) {
    if (routes->segments.size() != segments.size()) continue;
    std::map<std::string, std::string, std::less<>> values;
    bool match = true;
    for (std::size_t i = 0; match && i < segments.size(); ++i) {
      const std::string_view name = ParameterOf(routes->segments[i]);
      if (name.empty()) {
        match = routes->segments[i] == segments[i];
      } else {
        match = !segments[i].empty();
        values.emplace(name, segments[i]);
      }
    }
    if (match) {
      *params = std::move(values);
      return routes;
    }
  }
  return nullptr;
}

Response HttpHandler::MakeProblem(int status, std::string slug, std::string title, std::string detail) const {
  return ProblemResponse(phasekey::Problem{status, std::move(slug), std::move(title), std::move(detail)},
                         options_.docs_url);
}

std::optional<Response> HttpHandler::KeyOf(const HttpRequest& req, const KeySource& source, std::string* key) const {
  const std::size_t key_fields = req.headers.Count(kKeyHeader);
  if (source.natural()) {
    if (key_fields == 0) return std::nullopt;  // the runner takes the key from the request
    return MakeProblem(400, "key-invalid", "Idempotency-Key is invalid",
                       "This operation takes its key from " + source.Describe() + "; send no Idempotency-Key header.");
  }
  if (key_fields > 1) {
    return MakeProblem(400, "key-invalid", "Idempotency-Key is invalid",
                       "Idempotency-Key was sent " + std::to_string(key_fields) + " times; send it once.");
  }
  if (key_fields == 1) {
    Result<std::string> parsed = ParseIdempotencyKey(*req.headers.Find(kKeyHeader));
    if (!parsed) return MakeProblem(400, "key-invalid", "Idempotency-Key is invalid", parsed.error().message() + ".");
    *key = std::move(*parsed);
  } else if (options_.require_key) {
    return MakeProblem(400, "key-missing", "Idempotency-Key is missing",
                       "This operation requires an Idempotency-Key header: a unique value per request (a UUID "
                       "is recommended), sent again only to retry the same request.");
  } else {
    *key = RandomKey();
  }
  return std::nullopt;
}

Response HttpHandler::Handle(const HttpRequest& req, const std::string& account) const {
  std::string_view path = PathOf(req.target);
  std::map<std::string, std::string, std::less<>> parameters;
  const PathRoutes* route = Match(path, &parameters);
  if (route == nullptr) {
    return MakeProblem(404, "not-found", "No such operation", "No operation is served at " + Quoted(path) + ".");
  }
  auto flow = route->methods.find(req.method);
  if (flow == route->methods.end()) {
    std::string allow;
    for (const auto& [method, unused] : route->methods) allow += (allow.empty() ? "" : ", ") + method;
    Response res = MakeProblem(405, "method-not-allowed", "Method not allowed",
                               Quoted(req.method) + " is not allowed on " + Quoted(path) + "; use " + allow + ".");
    res.headers.Add("Allow", allow);
    return res;
  }
  if (account.empty()) {
    return MakeProblem(401, "unauthenticated", "Authentication required", "The request did not identify an account.");
  }

  std::string key;
  if (std::optional<Response> refused = KeyOf(req, flow->second.key_source, &key)) return *refused;

  if (req.body.size() > options_.max_body_bytes) {
    return MakeProblem(413, "body-too-large", "Request body is too large",
                       "The body has " + std::to_string(req.body.size()) + " bytes; at most " +
                           std::to_string(options_.max_body_bytes) + " are accepted.");
  }

  if (const std::string* type = req.headers.Find("Content-Type"); type != nullptr && !IsJsonMediaType(*type)) {
    return MakeProblem(415, "unsupported-media-type", "Unsupported media type",
                       "The body must be JSON, sent as Content-Type: application/json.");
  }

  Request request{account, std::move(key), req.method, req.target, req.body, std::move(parameters)};
  if (req.parsed_body_memo && req.parsed_body_memo->has_value()) request.canonical_body = req.parsed_body_memo->value();
  // Trace Context: a value sent twice is invalid (the runner ignores an
  // invalid one; a request is never refused for it).
  if (req.headers.Count(kTraceParentHeader) == 1) request.traceparent = *req.headers.Find(kTraceParentHeader);
  return MapReply(execute_(flow->second.flow, request));
}

Response HttpHandler::MapReply(Reply reply) const {
  switch (reply.kind) {
    case Reply::Kind::kCompleted: return std::move(reply.response);
    case Reply::Kind::kReplayed: {
      Response res = std::move(reply.response);
      res.headers.Add("Idempotent-Replayed", "true");
      return res;
    }
    case Reply::Kind::kInProgress: {
      Response res = MakeProblem(
          409, "key-in-progress", "A request is outstanding for this Idempotency-Key",
          "A request with the same Idempotency-Key for the same operation is being processed. Retry after the "
          "Retry-After delay with the same key and request.");
      res.headers.Add("Retry-After", std::to_string(reply.retry_after_s > 0 ? reply.retry_after_s : 1));
      return res;
    }
    case Reply::Kind::kMismatch:
      return MakeProblem(422, "key-reused", "Idempotency-Key is already used",
                         WithReason("This Idempotency-Key was already used with a different request; a key must "
                                    "not be reused across different payloads of this operation. Send a new key "
                                    "for a new request.",
                                    reply.detail));
    case Reply::Kind::kRetryLater: {
      Response res =
          MakeProblem(503, "retry-later", "The request could not be completed now",
                      "A temporary failure stopped the request. Retry after the Retry-After delay with the same "
                      "Idempotency-Key and request; work already done will not be done twice.");
      res.headers.Add("Retry-After", std::to_string(reply.retry_after_s > 0 ? reply.retry_after_s : 1));
      return res;
    }
    case Reply::Kind::kInvalidRequest:
      return MakeProblem(400, "invalid-request", "The request body is not acceptable",
                         WithReason("The body was refused before any work started; correct it and send the "
                                    "request again.",
                                    reply.detail));
    case Reply::Kind::kDeadLettered:
      return MakeProblem(500, "abandoned", "The operation was abandoned",
                         "Processing of this request stopped after repeated failures and will not be resumed. "
                         "Do not retry it; contact support and quote the Idempotency-Key.");
    case Reply::Kind::kNeedsOperator:
      return MakeProblem(500, "operation-unverified", "The operation is held for an operator",
                         "An earlier attempt of this request may have taken effect at the payment provider, which "
                         "no longer recognises the retry and cannot be asked; nothing will be sent again. An "
                         "operator reconciles it. Do not retry with a new Idempotency-Key: that could charge "
                         "twice. Contact support and quote the Idempotency-Key.");
    case Reply::Kind::kErased:
      return MakeProblem(410, "erased", "The stored result was erased",
                         "The data stored for this request was erased at the account holder's request (or under "
                         "the service's retention rules), so its result cannot be given again. Do not retry it "
                         "with a new Idempotency-Key: the operation may have taken effect. Contact support and "
                         "quote the Idempotency-Key.");
    case Reply::Kind::kInternalError: break;
  }
  return MakeProblem(500, "internal-error", "Internal server error",
                     "The request failed because of an internal error before anything was stored; it is safe "
                     "to retry with the same Idempotency-Key.");
}

}  // namespace phasekey
