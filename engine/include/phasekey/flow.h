// Flows: a request as a graph of phases between named recovery points.
//
// A flow starts at kStarted and ends at kFinished. Every other node is a
// recovery point that owns exactly one phase. A phase either moves the key to
// another recovery point (GoTo), finishes it with a response (Respond), or
// fails (Retry, OutcomeUnknown, Terminal). Two kinds of phase:
//
//   atomic   gets a READ COMMITTED transaction and does only local database
//            work; the engine commits that work together with the key's move
//            to the next recovery point, in the same transaction.
//   foreign  calls something outside the database (a payment gateway) with no
//            transaction open; its outcome (GoTo's `outcome`) is recorded in
//            the next transaction, and later phases read it with Outcome().
//
// Example, Leach's ride flow:
//
//   constexpr phasekey::RecoveryPoint kRideCreated{"ride_created"};
//   constexpr phasekey::RecoveryPoint kChargeCreated{"charge_created"};
//   auto flow = phasekey::Flow::Builder("create_ride")
//       .Atomic(phasekey::kStarted, "create_ride", CreateRide, {kRideCreated})
//       .Foreign(kRideCreated, "charge", Charge, {kChargeCreated}, 10s)
//       .Atomic(kChargeCreated, "send_receipt", SendReceipt, {phasekey::kFinished})
//       .Build();
//
// Phases may run more than once (a crash, a lost lease, a retry): atomic work
// is rolled back unless committed with the move, and a foreign phase must pass
// ctx.ProviderKey() to the provider so a repeat is recognised there. A phase
// must not change anything outside its transaction or its provider call.
#ifndef PHASEKEY_FLOW_H_
#define PHASEKEY_FLOW_H_

#include <chrono>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>
#include <pqxx/strconv>
#include <pqxx/transaction>

#include "phasekey/status.h"

namespace phasekey {

// A recovery point: a typed name, checked when the flow is built (lowercase
// [a-z][a-z0-9_]*, at most 63 characters). Declare them as constexpr
// constants; the only strings are in those declarations.
class RecoveryPoint {
 public:
  // Refers to `name`, which must outlive the point (a string literal does).
  // Not checked here: Flow::Builder::Build() refuses an invalid name.
  constexpr explicit RecoveryPoint(std::string_view name) : name_(name) {}
  // The name as declared; the key row records it as the key's position.
  constexpr std::string_view name() const { return name_; }
  // Same name.
  constexpr bool operator==(const RecoveryPoint& o) const { return name_ == o.name_; }
  // By name, for ordered containers.
  constexpr bool operator<(const RecoveryPoint& o) const { return name_ < o.name_; }

 private:
  std::string_view name_;
};

// Where every key starts: each flow declares its entry phase at kStarted.
inline constexpr RecoveryPoint kStarted{"started"};
// Where a key ends, its response stored. Only a target: no phase is declared
// at it, and a phase reaches it by returning Respond (or Terminal), never by
// GoTo.
inline constexpr RecoveryPoint kFinished{"finished"};

// Where a request's key comes from. By default from the client's
// Idempotency-Key header. A flow whose requests already carry a unique
// identifier chosen before the first attempt (an order number, a booking
// reference, a merchant reference) can take its key from the request
// instead, and then clients send no header (docs/natural-keys.md):
//   Header()              the Idempotency-Key header (the default);
//   BodyField("/ref")     an RFC 6901 JSON pointer into the request body; the
//                         member must be a non-empty string or an integer;
//   PathParameter("ref")  a `{ref}` segment of the route's path template
//                         (HttpHandler::Route), taken as sent.
// The key row stores "<flow>:<value>", so two flows may use the same
// values; the value can have at most 254 characters minus the flow name's
// length, and no control characters. Everything else (claim, replay, 409,
// 422, recovery points, re-drive) is the same as with a header key.
class KeySource {
 public:
  // Which of the three sources above.
  enum class Kind { kHeader, kBodyField, kPathParameter };
  // The Idempotency-Key header (the default).
  static KeySource Header() { return KeySource(Kind::kHeader, ""); }
  // The body member at `json_pointer` (RFC 6901, such as "/ref"). Not checked
  // here: Flow::Builder::Build() refuses an invalid pointer.
  static KeySource BodyField(std::string json_pointer) { return KeySource(Kind::kBodyField, std::move(json_pointer)); }
  // The route's `{name}` path segment. Not checked here: Build() refuses a
  // name outside [a-z_][a-z0-9_]*.
  static KeySource PathParameter(std::string name) { return KeySource(Kind::kPathParameter, std::move(name)); }

  // Which source this is.
  Kind kind() const { return kind_; }
  // The JSON pointer (kBodyField) or the parameter's name (kPathParameter).
  const std::string& name() const { return name_; }
  // True for a key taken from the request itself (kBodyField,
  // kPathParameter), which clients send without a header.
  bool natural() const { return kind_ != Kind::kHeader; }
  // For messages: "the Idempotency-Key header", "the body's /ref",
  // "the path's {ref}".
  std::string Describe() const;

 private:
  KeySource(Kind kind, std::string name) : kind_(kind), name_(std::move(name)) {}
  Kind kind_;
  std::string name_;
};

// Header fields in order (as received, or as added). Names keep their
// spelling; lookups compare names ASCII case-insensitively (RFC 9110 section
// 5.1). Repeated fields are kept as separate entries. Thread-compatible.
class HttpHeaders {
 public:
  // One field: name (as spelled) and value.
  using Field = std::pair<std::string, std::string>;

  HttpHeaders() = default;
  // The given fields, in order (as if Add()ed one by one).
  HttpHeaders(std::initializer_list<Field> fields) : fields_(fields) {}

  // Appends a field; never replaces an existing one.
  void Add(std::string name, std::string value);
  // Makes room for `fields` fields in all, so that a transport adding a
  // request's fields one by one allocates the list once.
  void Reserve(std::size_t fields) { fields_.reserve(fields); }
  // The value of the first field named `name`, or nullptr. The pointer is
  // valid until the next Add().
  const std::string* Find(std::string_view name) const;
  // How many fields are named `name`.
  std::size_t Count(std::string_view name) const;

  // Every field, in arrival order, repeats included.
  const std::vector<Field>& fields() const { return fields_; }
  // Iteration over fields(), so a range-for sees each Field.
  std::vector<Field>::const_iterator begin() const { return fields_.begin(); }
  // The end of the iteration over fields().
  std::vector<Field>::const_iterator end() const { return fields_.end(); }
  // The number of fields, repeats counted.
  std::size_t size() const { return fields_.size(); }
  // True when there is no field.
  bool empty() const { return fields_.empty(); }

  // The same fields in the same order, names spelled alike.
  friend bool operator==(const HttpHeaders&, const HttpHeaders&) = default;

 private:
  std::vector<Field> fields_;
};

// An HTTP response, the one type for every answer: a phase's final response
// (stored on the key and replayed byte for byte), and what HttpHandler,
// WebhookEndpoint and the tools' server hand a transport to write.
struct Response {
  // The HTTP status; a phase's response must have one in 100..599 (the
  // engine refuses anything else as a bug in the phase).
  int status = 200;
  HttpHeaders headers;  // those worth replaying; framing (Content-Length) is the transport's job
  std::string body;     // exact bytes
};

// A JSON response with Content-Type: application/json.
Response JsonResponse(int status, const nlohmann::json& body);

// An RFC 9457 problem: status `status`, Content-Type
// application/problem+json and the body
//   {"type":<type>,"title":<title>,"status":<status>,<the members of extra>}
// in that order (extra's members in its own order; members named type,
// title or status in it are ignored). `type` is a URI ("about:blank" when
// the status says it all); `extra` is an object, usually with "detail".
// Invalid UTF-8 in any string is replaced by U+FFFD, so a detail built from
// client input never makes it throw. The only place a problem body is made:
// ProblemResponse (http.h) and the phases' problems are built on it.
// Thread-safe.
Response ProblemJsonResponse(int status, std::string_view type, std::string_view title,
                             const nlohmann::json& extra = nlohmann::json::object());

// How a phase failed. The closed set of kinds:
//   kRetryable       nothing happened that matters; try again later (the
//                    engine retries a few times inside the request, then
//                    answers 503 with Retry-After and leaves the key at its
//                    recovery point for a client retry or the re-drive worker);
//   kOutcomeUnknown  the call may have taken effect (a timeout after the
//                    request was sent); handled like kRetryable, and the phase
//                    is re-run with the same provider key;
//   kTerminal        final: `response` is stored and the key finishes (a
//                    declined card is a Terminal 402, not an error);
//   kNeedsOperator   a foreign phase cannot tell whether an earlier call took
//                    effect and must not call again (the provider may have
//                    forgotten the key and has no lookup): the key is parked
//                    in the state needs_operator, nothing is sent, and
//                    clients get the problem type operation-unverified;
//   kNotTaken        a foreign phase under SendPolicy::kLookUpOnly looked its
//                    operation up and it never took effect: the key, past
//                    its give-up time, is given up (dead) with nothing owed.
struct Failure {
  // The kinds listed above.
  enum class Kind { kRetryable, kOutcomeUnknown, kTerminal, kNeedsOperator, kNotTaken };
  // How the phase failed; build a Failure with Retry(), OutcomeUnknown(),
  // Terminal(), NeedsOperator() or NotTaken() rather than by hand.
  Kind kind = Kind::kRetryable;
  std::string reason;  // kept on the key for the operator
  Response response;   // kTerminal only
};

// A phase's success: move the key on to `next` and run the phase there.
struct GoTo {
  // One of the targets the phase was declared with, never kFinished (finish
  // with Respond). Anything else is a bug in the phase: nothing of this run
  // is committed, and the request fails as an unclassified failure
  // (RunnerOptions::max_attempts).
  RecoveryPoint next;
  nlohmann::json outcome = nullptr;  // recorded with the move; see Outcome()
};
// A phase's last word: store `response` on the key and finish it
// (kFinished); every later request with the key gets it back byte for byte.
struct Respond {
  // The response to store and send.
  Response response;
};
// What a phase returns: GoTo, Respond, or a Failure (made by the helpers
// below).
using PhaseResult = std::variant<GoTo, Respond, Failure>;

// A Failure of kind kRetryable; `reason` is kept on the key for operators.
inline PhaseResult Retry(std::string reason) { return Failure{Failure::Kind::kRetryable, std::move(reason), {}}; }
// A Failure of kind kOutcomeUnknown: the call may have taken effect.
inline PhaseResult OutcomeUnknown(std::string reason) {
  return Failure{Failure::Kind::kOutcomeUnknown, std::move(reason), {}};
}
// A Failure of kind kTerminal: `response` is stored and the key finishes.
inline PhaseResult Terminal(Response response, std::string reason) {
  return Failure{Failure::Kind::kTerminal, std::move(reason), std::move(response)};
}
// A Failure of kind kNeedsOperator (foreign phases only): the key is parked
// until an operator settles it.
inline PhaseResult NeedsOperator(std::string reason) {
  return Failure{Failure::Kind::kNeedsOperator, std::move(reason), {}};
}
// A Failure of kind kNotTaken (foreign phases under SendPolicy::kLookUpOnly
// only): the operation never happened and the key is given up.
inline PhaseResult NotTaken(std::string reason) { return Failure{Failure::Kind::kNotTaken, std::move(reason), {}}; }

// What a foreign phase may send on this run (PhaseContext::send_policy()).
// The engine decides it from time alone, before the call, on every path (a
// client's request, a client's retry, the re-drive worker, an operator's
// retry):
//   kSend         call the provider with ProviderKey(); if an earlier run
//                 called, the provider still remembers the key and
//                 recognises the repeat;
//   kLookUpFirst  the provider may have forgotten the key (the phase was
//                 first attempted longer ago than its key retention minus
//                 RunnerOptions::provider_retention_margin): look the
//                 operation up first and send only if it is not there;
//   kLookUpOnly   the key is past RunnerOptions::give_up_after: look the
//                 operation up and never send; found, GoTo with it; not
//                 there, NotTaken(); inconclusive, Retry().
// A phase declared without a lookup (ForeignOptions::looks_up false) is
// never run under the last two: the engine parks the key for an operator.
enum class SendPolicy { kSend, kLookUpFirst, kLookUpOnly };

// What every phase sees. Valid only during the phase call.
class PhaseContext {
 public:
  virtual ~PhaseContext() = default;
  // The account the request was made for; keys are unique per account.
  virtual const std::string& account() const = 0;
  // The request's key as its source gave it (the header's value, or the
  // natural key's value), without the flow prefix the key row adds.
  virtual const std::string& idempotency_key() const = 0;
  // The request body (canonical JSON, parsed).
  virtual const nlohmann::json& request() const = 0;
  // The name of the running phase.
  virtual const std::string& phase() const = 0;
  // A key for the provider, stable across retries, re-drives and takeovers of
  // this request and unique across databases: the key row's random stable id
  // plus the phase name. Never derived from a sequence.
  virtual std::string ProviderKey() const = 0;
  // The outcome recorded with the move to `reached` (null if none).
  virtual const nlohmann::json& Outcome(RecoveryPoint reached) const = 0;
  // How many times the key has been claimed, this holder included (1 on a
  // first request). More than 1 means an earlier holder may have run this
  // phase already.
  virtual int attempts() const = 0;
  // The key's age when this holder claimed it (database clock). A foreign
  // phase compares it with its provider's key retention: past it, the
  // provider may have forgotten the key, so reconcile before charging again.
  virtual std::chrono::seconds key_age() const = 0;
  // Foreign phases: what this run may send (see SendPolicy).
  virtual SendPolicy send_policy() const { return SendPolicy::kSend; }
  // How long ago this phase may first have been attempted: since the key
  // reached the phase's recovery point (database clock, never less than the
  // truth). 0 when the key reached it in this holder's own transaction.
  virtual std::chrono::seconds first_attempt_age() const { return std::chrono::seconds(0); }
  // The key's bucket (AccountBucket): rows an atomic phase writes for this
  // key (StageJob) carry it, so they live on the key's shard.
  virtual int bucket() const { return 0; }
  // The W3C Trace Context `traceparent` stored with the key (its first
  // request's, in version-00 form: Request::traceparent), "" when it has
  // none. The same on every run of the key, re-drives included; a foreign
  // phase may send it to its provider.
  virtual std::string traceparent() const { return ""; }
};

namespace internal {
// A parameter of AtomicContext::ExecAtCommit as text (libpqxx's conversion);
// an empty optional or nullptr is NULL.
inline std::optional<std::string> SqlParam(std::nullptr_t) { return std::nullopt; }
inline std::optional<std::string> SqlParam(std::string_view v) { return std::string(v); }
inline std::optional<std::string> SqlParam(const std::string& v) { return v; }
inline std::optional<std::string> SqlParam(const char* v) { return std::string(v); }
template <class T>
std::optional<std::string> SqlParam(const std::optional<T>& v) {
  return v ? SqlParam(*v) : std::nullopt;
}
template <class T>
std::optional<std::string> SqlParam(const T& v) {
  return pqxx::to_string(v);
}
}  // namespace internal

// What an atomic phase sees: the context plus the open transaction. Do not
// commit or abort it; the engine does, together with the key's move.
class AtomicContext : public PhaseContext {
 public:
  // The open READ COMMITTED transaction; valid during the phase call only.
  // A database error it throws fails the phase and rolls its work back.
  // The first call sends BEGIN (one round trip) when nothing has yet.
  virtual pqxx::transaction_base& tx() = 0;

  // Queues one statement whose result the phase does not need, to run after
  // the phase returns, in the same transaction: sent in the one message
  // that carries the key's move (or finish) and COMMIT, so it costs no
  // round trip of its own (a phase that only queues costs one in all).
  // Statements run in the order queued, after everything the phase ran
  // through tx(); the phase cannot read what it queued.
  //
  // `sql` is one statement (a second one, after a ';', is refused) that
  // names its parameters $1..$n outside quoted literals and comments; each
  // param is sent as a quoted literal (libpqxx's text form; an empty
  // optional or nullptr is NULL), so where the place does not fix the type
  // (a SELECT list, an operator), cast it ($2::jsonb, $3::bigint). A
  // parameter without a value is refused at once: the phase throws.
  //
  // It commits exactly when tx()'s statements would have: with a move or a
  // final response, not with a Retry (rolled back). A queued statement that
  // fails rolls everything back and fails the phase as a failing tx()
  // statement does (the same classification by SQLSTATE).
  template <class... Params>
  void ExecAtCommit(std::string_view sql, const Params&... params) {
    QueueAtCommit(sql, {internal::SqlParam(params)...});
  }

 protected:
  // ExecAtCommit's work, with each parameter as text (nullopt: NULL).
  virtual void QueueAtCommit(std::string_view sql, std::vector<std::optional<std::string>> params) = 0;
};

// An atomic phase. Called on a runner thread, possibly again after a crash or
// a retry; everything it writes goes through ctx.tx().
using AtomicPhase = std::function<PhaseResult(AtomicContext&)>;
// A foreign phase. Called on a runner thread with no transaction open,
// possibly again (the provider recognises a repeat by ctx.ProviderKey()); it
// must return within its declared timeout.
using ForeignPhase = std::function<PhaseResult(const PhaseContext&)>;

// What becomes of a key found at a recovery point the flow no longer has
// (Flow::Builder::Retired): it resumes at another point of the flow, or it
// stops for an operator (the state needs_operator, nothing sent).
class Retirement {
 public:
  // A key at the retired point resumes at `point`, which must be a point of
  // the flow (Build() checks).
  static Retirement ResumeAt(RecoveryPoint point) { return Retirement(std::string(point.name())); }
  // A key at the retired point is parked for an operator, with the reason.
  static Retirement StopForOperator() { return Retirement(""); }
  // The point to resume at; empty for StopForOperator().
  const std::string& resume_at() const { return resume_at_; }

 private:
  explicit Retirement(std::string resume_at) : resume_at_(std::move(resume_at)) {}
  std::string resume_at_;
};

// Where a key found at a recovery point goes on in a flow (Flow::Resolve).
struct PointResolution {
  // The closed set of answers:
  //   kCurrent      a point of this flow's graph (or kFinished): run as is;
  //   kMapped       an older graph's point, renamed or retired with
  //                 Retirement::ResumeAt: resume at `resume_at`;
  //   kForOperator  retired with Retirement::StopForOperator: park the key;
  //   kUnknown      neither a point of this graph nor declared as an older
  //                 one: another version of the flow (a rolling deploy)
  //                 must finish the key; this binary leaves it alone.
  enum class Kind { kCurrent, kMapped, kForOperator, kUnknown };
  Kind kind = Kind::kUnknown;  // which of the answers above
  std::string resume_at;       // kMapped: the point of this graph to resume at
};

// A request's graph of phases (see the file comment), checked and immutable:
// made by Flow::Builder::Build(), shared (std::shared_ptr<const Flow>) by
// the runner, the re-drive worker and their threads.
class Flow {
 public:
  // Whether a phase runs in a transaction (atomic) or calls out (foreign).
  enum class PhaseKind { kAtomic, kForeign };
  // One recovery point and the phase it owns, as declared.
  struct Node {
    std::string point;                     // the recovery point owning the phase
    std::string phase;                     // the phase's name (used in provider keys)
    PhaseKind kind;                        // which of `atomic` and `foreign` is set
    AtomicPhase atomic;                    // kAtomic
    ForeignPhase foreign;                  // kForeign
    std::vector<std::string> targets;      // declared next points (kFinished = responds)
    std::chrono::milliseconds timeout{0};  // kForeign: the longest the call may take
    // kForeign: how long the provider remembers an idempotency key. Re-driving
    // a key after that would charge twice, so the re-drive horizon must stay
    // below the shortest retention of a flow.
    std::chrono::seconds key_retention{0};
    bool looks_up = false;  // kForeign: see ForeignOptions
  };

  // The retention assumed when a foreign phase declares none: 24 hours,
  // Stripe's documented minimum and the shortest common one.
  static constexpr std::chrono::seconds kDefaultKeyRetention{24 * 3600};

  // How a foreign phase calls its provider.
  struct ForeignOptions {
    // The longest the call may take (the phase must enforce it on its
    // client); the lease must outlast it (Runner::Open checks).
    std::chrono::milliseconds timeout{10000};
    // How long the provider keeps its idempotency keys, from their first
    // use; seconds::max() when a repeat is always recognised (or the phase
    // reconciles before every resend by itself).
    std::chrono::seconds key_retention = kDefaultKeyRetention;
    // The phase can look its operation up at the provider (by the provider
    // key or a merchant reference derived from it) and honours
    // SendPolicy::kLookUpFirst and kLookUpOnly. Without it, a key past the
    // provider's memory or its give-up time is parked for an operator.
    bool looks_up = false;
  };

  // Declares a flow's phases one by one; Build() checks the whole and makes
  // the Flow. Nothing is checked before Build().
  class Builder {
   public:
    // `name`: the flow's name (1 to 100 characters), stored on every key it
    // runs and prefixed to natural keys.
    explicit Builder(std::string name);
    // The atomic phase `phase` at recovery point `from`, run as `fn`, which
    // may GoTo only one of `targets`, none of them kFinished; a phase that
    // responds lists kFinished among its targets (Build() needs one).
    Builder& Atomic(RecoveryPoint from, std::string phase, AtomicPhase fn,
                    std::initializer_list<RecoveryPoint> targets);
    // `timeout`: the longest the call may take (the phase must enforce it on
    // its client); `key_retention`: how long the provider keeps its keys.
    Builder& Foreign(RecoveryPoint from, std::string phase, ForeignPhase fn,
                     std::initializer_list<RecoveryPoint> targets, std::chrono::milliseconds timeout,
                     std::chrono::seconds key_retention = kDefaultKeyRetention);
    // The same, with every foreign option (ForeignOptions' defaults for
    // those not set).
    Builder& Foreign(RecoveryPoint from, std::string phase, ForeignPhase fn,
                     std::initializer_list<RecoveryPoint> targets, ForeignOptions options);
    // Where the key comes from (KeySource::Header() unless called).
    Builder& KeyFrom(KeySource source);
    // A point of an older version of this flow, now called `now`: a key
    // still at `before` resumes at `now` (its outcomes recorded under
    // `before` are read as `now`'s). `before` must not be a point of this
    // graph; `now` must be one.
    Builder& Renamed(RecoveryPoint before, RecoveryPoint now);
    // A point of an older version that this one removed, and what a key
    // still there does (see Retirement). `point` must not be a point of
    // this graph.
    Builder& Retired(RecoveryPoint point, Retirement how);
    // Fields to mask wherever this flow's bodies are shown or logged (the
    // console, `phasekey keys show`, log lines): RFC 6901 JSON pointers,
    // each relative to the request body and to the response body alike
    // (both JSON), such as "/card/number" or "/items/0/iban". Exact
    // pointers, no wildcards; an array index segment names that element
    // only, as RFC 6901 says. The value found there, of any type, is shown
    // as the string "***"; a pointer a body does not have masks nothing in
    // it. Calls add up. Not part of version(): masking changes no key's
    // path. Runner::Open records them in the database (table
    // phasekey.flow_masks) for the operator's tools, which do not link the
    // flows.
    Builder& Masked(std::vector<std::string> json_pointers);
    // Checks the key source (a valid JSON pointer, a parameter name
    // [a-z_][a-z0-9_]*) and the graph: an entry phase at kStarted, no phase at kFinished, no
    // duplicate recovery point or phase name, valid names, every target a
    // known point, every point reachable from kStarted, kFinished reachable;
    // Renamed and Retired points named validly, not points of the graph,
    // declared once, and resuming at a point of the graph; each Masked
    // pointer a valid JSON pointer (starting with '/', '~' only in ~0 and
    // ~1) declared once.
    // InvalidArgument naming the problem otherwise.
    Result<std::shared_ptr<const Flow>> Build();

   private:
    std::string name_;
    std::vector<Node> nodes_;
    KeySource key_source_ = KeySource::Header();
    std::vector<std::pair<std::string, Retirement>> older_;  // Renamed and Retired, in order
    std::vector<std::string> renamed_;                       // the older points Renamed declared
    std::vector<std::string> masked_;                        // Masked, in order
  };

  // The name given to the Builder.
  const std::string& name() const { return name_; }
  // Where its requests' keys come from.
  const KeySource& key_source() const { return key_source_; }
  // Every node, in the order they were added.
  const std::vector<Node>& nodes() const { return nodes_; }
  // The node owning `point`, or nullptr (kFinished and unknown points).
  const Node* Find(std::string_view point) const;
  // True when the phase at `from` was declared with the target `to`.
  bool Declares(std::string_view from, std::string_view to) const;
  // The longest declared foreign call (0 when none).
  std::chrono::milliseconds LongestForeignTimeout() const;
  // The shortest provider key retention of its foreign phases
  // (std::chrono::seconds::max() when it has none).
  std::chrono::seconds ShortestKeyRetention() const;
  // Graphviz DOT of the graph: boxes for atomic phases, ellipses for foreign.
  std::string ToDot() const;

  // The graph's version: the first 16 hex digits of the SHA-256 of its
  // shape (the flow's name and key source; each point's phase, kind and
  // targets). Functions, timeouts and the older points declared with
  // Renamed and Retired do not count: changing them changes no key's path.
  // Stored on every key the flow claims (docs/upgrading.md).
  const std::string& version() const { return version_; }
  // The JSON pointers declared with Masked, in the order declared (empty
  // when none): what to mask in its request and response bodies wherever
  // they are shown or logged.
  const std::vector<std::string>& masked() const { return masked_; }
  // Where a key found at `point` goes on in this graph (PointResolution).
  PointResolution Resolve(std::string_view point) const;
  // Every point a key of this flow may be found at and this binary can
  // handle: the graph's points, kFinished, and the older points declared
  // with Renamed and Retired. Sorted.
  std::vector<std::string> KnownPoints() const;
  // The flow as data, for the deploy gate and `keys reconcile` run from another binary (deploy_gate.h,
  // tools/provider_keys.h): {"name", "version", "points": [the graph's points and kFinished], "renamed":
  // {before: now}, "retired": {point: resume_at or null}, "masked": [masked()], "foreign_phases": [the
  // names of its foreign phases, in graph order: its keys' provider keys are "<stable id>:<phase>"]}.
  nlohmann::json Describe() const;
  // The points declared with Renamed: before -> now. A key's outcomes
  // recorded under `before` are read as `now`'s.
  const std::map<std::string, std::string, std::less<>>& renamed() const { return renamed_; }
  // True when no path from kStarted to `point` passes through a foreign
  // phase: a key there has provably made no external effect (the failure
  // cap may finish it as failed; RunnerOptions::max_attempts).
  bool BeforeAnyForeignPhase(std::string_view point) const;

 private:
  Flow() = default;
  std::string name_;
  KeySource key_source_ = KeySource::Header();
  std::vector<Node> nodes_;
  std::map<std::string, std::size_t, std::less<>> by_point_;
  // Older points: resume_at for Renamed and Retirement::ResumeAt, "" for
  // Retirement::StopForOperator; `renamed_` holds those Renamed declared.
  std::map<std::string, std::string, std::less<>> older_;
  std::map<std::string, std::string, std::less<>> renamed_;
  std::set<std::string, std::less<>> effect_free_;  // BeforeAnyForeignPhase
  std::vector<std::string> masked_;                 // masked()
  std::string version_;
};

}  // namespace phasekey

#endif  // PHASEKEY_FLOW_H_
