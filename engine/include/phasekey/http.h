// The transport-independent HTTP layer: Idempotency-Key parsing, RFC 9457
// problem details, and HttpHandler, which maps an HTTP request onto
// Runner::Execute and the runner's Reply back onto an HTTP response.
//
// Nothing here does I/O. A transport (phasekey/tools/http_server.h, or a test)
// turns bytes into an HttpRequest, decides the account (authentication is the
// application's business), calls HttpHandler::Handle and writes the
// Response back.
//
// The published contract for clients (draft-ietf-httpapi-idempotency-key-
// header section 2.7, Stripe's semantics), with each problem's slug (its
// "type" is docs_url + "#" + slug, so the docs page needs these anchors):
//   400 key-missing       Idempotency-Key absent (when required)
//   400 key-invalid       malformed, too long, or sent more than once
//   400 invalid-request   the runner refused the body (not acceptable JSON)
//   401 unauthenticated   no account (the transport's authentication)
//   404 not-found         no idempotent operation at this path
//   405 method-not-allowed  wrong method for the path (with Allow)
//   409 key-in-progress   a request with this key is still being processed
//                         (Retry-After); retry with the same key
//   413 body-too-large    body larger than HttpHandlerOptions::max_body_bytes
//   415 unsupported-media-type  a Content-Type that is not JSON
//                         (application/json or application/*+json); a
//                         request without Content-Type is taken as JSON
//   422 key-reused        the key was already used with a different request
//   503 retry-later       transient failure; retry with the same key after
//                         Retry-After
//   500 internal-error    nothing was stored; safe to retry with the same key
//   500 abandoned         the operation was given up; do not retry, contact
//                         support
// A finished key's stored response is returned byte for byte (status,
// stored headers, body), with `Idempotent-Replayed: true` added on every
// response after the first.
#ifndef PHASEKEY_HTTP_H_
#define PHASEKEY_HTTP_H_

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "phasekey/fingerprint.h"
#include "phasekey/runner.h"
#include "phasekey/status.h"

namespace phasekey {

// An HTTP request as a transport received it, framing removed (tests build
// one by hand).
struct HttpRequest {
  std::string method;   // case-sensitive, as received: "POST"
  std::string target;   // origin-form request target: "/rides?x=1"
  HttpHeaders headers;  // as received
  std::string body;     // exact bytes
  // The client's IP address as the transport saw it ("127.0.0.1", "::1"):
  // the peer of the TCP connection, not a header a proxy may set. Empty
  // when the request did not come over a socket (tests calling handlers).
  std::string peer_address = {};

  // `body` canonicalized and hashed (CanonicalBody::Of(body)): made on the
  // first call and kept, an InvalidArgument included, so that whoever reads
  // the body of one request shares one parse: a plain route that validates
  // it, and HttpHandler::Handle, which hands it on to the runner
  // (Request::canonical_body). Not thread-safe, like the rest of the
  // request: call it from the thread handling the request. `body` must not
  // change after the first call.
  const Result<std::shared_ptr<const CanonicalBody>>& ParsedBody() const;
  // ParsedBody()'s memo: empty until its first call. Nothing else reads or
  // writes it.
  mutable std::optional<Result<std::shared_ptr<const CanonicalBody>>> parsed_body_memo = std::nullopt;
};

// The longest accepted idempotency key, in characters (Stripe's limit; the
// key store's column allows the same).
inline constexpr std::size_t kMaxIdempotencyKeyLength = 255;

// Parses the value of an Idempotency-Key header into the key. Accepted:
//   - an RFC 8941 sf-string, the draft's form: "8e03978e-40d5-..." in double
//     quotes, with printable ASCII (0x20-0x7E) inside and `\"` and `\\` as the
//     only escapes; the key is the unescaped content, so spaces are allowed.
//     RFC 8941 parameters after the string (`"k";v=1`) are checked for shape
//     and ignored: the draft defines none, and ignoring unknown parameters is
//     what RFC 8941 section 2 asks of a recipient.
//   - a bare key as Stripe clients send it: a value not starting with `"` is
//     the key, whole, and must be visible ASCII (0x21-0x7E). `;` has no
//     special meaning in this form, so `a;b=1` is the key "a;b=1".
// Spaces and tabs around the value are ignored. The key must have 1 to 255
// characters. Anything else is InvalidArgument with a one-line message fit to
// show the client (it never echoes the raw bytes). Thread-safe.
Result<std::string> ParseIdempotencyKey(std::string_view header_value);

// An RFC 9457 problem: the members of the application/problem+json body.
struct Problem {
  int status = 500;    // the HTTP status, also the response's
  std::string slug;    // short name appended to the docs URL to form "type"
  std::string title;   // fixed per slug: the same text for every occurrence
  std::string detail;  // this occurrence's explanation, for the client
};

// A response with status `problem.status`, Content-Type
// application/problem+json, the body
//   {"type":"<docs_url>#<slug>","title":...,"status":...,"detail":...}
// and `Link: <docs_url>; rel="describedby"` (the draft's section 2.7 pointer
// to documentation). Invalid UTF-8 in the strings is replaced by U+FFFD.
// Thread-safe.
Response ProblemResponse(const Problem& problem, std::string_view docs_url);

// How an HttpHandler answers; every default is explained below.
struct HttpHandlerOptions {
  // The largest request body accepted; larger bodies get 413 before the
  // runner sees them. Payment API requests are a few KiB of JSON; the body
  // is stored on the key row and canonicalized in memory, so 1 MiB bounds
  // memory per concurrent request and row size with a wide margin. A
  // transport should also enforce it while reading (see max_body_bytes()).
  std::size_t max_body_bytes = 1024 * 1024;

  // Where clients read the idempotency contract (the draft's section 2.5
  // "Resources MUST publish a idempotency related specification"). Every
  // problem's "type" is this URL plus "#<slug>", and every problem carries
  // `Link: <docs_url>; rel="describedby"`.
  std::string docs_url = "https://phasekey.dev/docs/idempotency";

  // Whether requests on idempotent routes must carry Idempotency-Key. When
  // false, a request without one runs once under a fresh random key
  // ("auto-" plus 32 hex digits) that the client never sees: it is executed
  // like any other, but a retry of it is a new request. True by default, as
  // the draft's section 2.7 400 assumes ("a documented idempotent operation
  // requiring this header").
  bool require_key = true;
};

// Maps HTTP requests on registered routes to Runner::Execute.
//
// Route() calls must all happen before the first Handle(); after that,
// Handle() is thread-safe (it only reads the route table and calls the
// runner, whose Execute is thread-safe). Handle() blocks for as long as
// Runner::Execute does.
class HttpHandler {
 public:
  // What the handler needs of a runner: Runner::Execute's contract
  // (thread-safe, blocking, never throws).
  using Execute = std::function<Reply(const std::string& flow, const Request& request)>;

  // Executes through `runner`, which must outlive the handler.
  HttpHandler(HttpHandlerOptions options, Runner& runner);
  // Executes through `execute` (a fake in tests, or a decorator around a
  // runner: metrics, tracing). `flows` tells the handler where each flow
  // takes its key from (Flow::key_source()); a routed flow not among them
  // takes it from the Idempotency-Key header.
  HttpHandler(HttpHandlerOptions options, Execute execute, std::vector<std::shared_ptr<const Flow>> flows = {});

  HttpHandler(const HttpHandler&) = delete;
  HttpHandler& operator=(const HttpHandler&) = delete;

  // Sends `method` requests whose path (the target without its query)
  // matches `path` to the flow named `flow`. The path is literal, or a
  // template whose whole segments may be parameters: "/bookings/{ref}"
  // matches "/bookings/BK-1" with ref = "BK-1" (any non-empty segment, taken
  // as sent, not percent-decoded). A literal path wins over a template;
  // between templates the first routed wins. InvalidArgument if the pair is
  // already routed, the path does not start with '/', a parameter name is
  // not [a-z_][a-z0-9_]* or repeats, a field is empty, or the flow takes its
  // key from a path parameter the template lacks.
  Status Route(std::string method, std::string path, std::string flow);

  // Answers `req` on behalf of `account` (non-empty; an empty account gets
  // 401). Order of checks: route (404/405), account (401), Idempotency-Key
  // (400; for a flow with a natural key the header must be absent), body
  // size (413), Content-Type (415); then Runner::Execute with
  // Request{account, key, method, target, body, path parameters} and the
  // Reply mapped as the file comment says. When `req.ParsedBody()` was
  // already called (by a plain route that read the body) and succeeded, the
  // Request carries it as canonical_body, so the runner does not parse the
  // body again; Handle itself never parses it.
  // The runner is given the whole target, query included, so that it can
  // tell a key reused with a different query string. Problem details carry
  // the runner's `detail` only for 400 and 422 (conditions the client caused
  // and can fix); for 5xx they never do, as it may name internals.
  Response Handle(const HttpRequest& req, const std::string& account) const;

  // A problem response using this handler's docs URL (for transports that
  // answer before Handle, e.g. 401 or a malformed request).
  Response MakeProblem(int status, std::string slug, std::string title, std::string detail) const;

  // HttpHandlerOptions::max_body_bytes, for a transport that stops reading
  // a body past it.
  std::size_t max_body_bytes() const { return options_.max_body_bytes; }
  // The options given at construction.
  const HttpHandlerOptions& options() const { return options_; }

 private:
  // Takes the reply's response (moved, not copied) for a completed or
  // replayed request.
  Response MapReply(Reply reply) const;
  // The request's key into *key (empty for a natural key, which the runner
  // takes), or the 400 that refuses it.
  std::optional<Response> KeyOf(const HttpRequest& req, const KeySource& source, std::string* key) const;

  struct Target {
    std::string flow;
    KeySource key_source = KeySource::Header();
  };
  // The routes of one path (literal or template), by method.
  struct PathRoutes {
    std::vector<std::string> segments;  // of the template; "{name}" for a parameter
    std::map<std::string, Target> methods;
  };
  // The routes matching `path`, and the template's parameter values; null if
  // none matches.
  const PathRoutes* Match(std::string_view path, std::map<std::string, std::string, std::less<>>* params) const;

  HttpHandlerOptions options_;
  Execute execute_;
  std::map<std::string, KeySource, std::less<>> key_sources_;  // by flow name
  // By path as routed (the template's text for templates).
  std::map<std::string, PathRoutes, std::less<>> routes_;
  std::vector<const PathRoutes*> templates_;  // in routing order
};

}  // namespace phasekey

#endif  // PHASEKEY_HTTP_H_
