#include "phasekey/client/client.h"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <thread>

#include "http_exchange.h"
#include "net/http_exchange.h"
#include "phasekey/client/uuid7.h"

namespace phasekey::client {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

const std::string* FindHeader(const Headers& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return &v;
  }
  return nullptr;
}

// The "type" of an application/problem+json answer (any case, parameters
// ignored); empty for any other answer or a body that is not a JSON object
// with a string "type".
std::string ProblemType(const Headers& headers, const std::string& body) {
  const std::string* type = FindHeader(headers, "Content-Type");
  if (type == nullptr) return "";
  std::string media = type->substr(0, type->find(';'));
  for (char& c : media) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (media.find("application/problem+json") == std::string::npos) return "";
  const nlohmann::json problem = nlohmann::json::parse(body, nullptr, false);
  if (!problem.is_object() || !problem.contains("type") || !problem["type"].is_string()) return "";
  return problem["type"].get<std::string>();
}

// Names of the headers a journal never sees, beyond the caller's own.
constexpr const char* kCredentialHeaders[] = {"Authorization", "Cookie", "Proxy-Authorization"};

bool IsSecret(std::string_view name, const std::vector<std::string>& extra) {
  for (const char* n : kCredentialHeaders) {
    if (EqualsIgnoreCase(name, n)) return true;
  }
  for (const std::string& n : extra) {
    if (EqualsIgnoreCase(name, n)) return true;
  }
  return false;
}

// `headers` without the secret ones (and, for an answer's, Set-Cookie).
Headers WithoutSecrets(const Headers& headers, const std::vector<std::string>& extra, bool answer = false) {
  Headers out;
  for (const auto& [name, value] : headers) {
    if (IsSecret(name, extra) || (answer && EqualsIgnoreCase(name, "Set-Cookie"))) continue;
    out.emplace_back(name, value);
  }
  return out;
}

// `base` with the headers named in `over` replaced by those of `over`.
Headers Overridden(Headers base, const Headers& over) {
  if (over.empty()) return base;
  std::erase_if(base, [&](const auto& h) { return FindHeader(over, h.first) != nullptr; });
  base.insert(base.end(), over.begin(), over.end());
  return base;
}

void Validate(const Request& request) {
  if (request.method.empty() || request.method.find_first_of(" \t\r\n") != std::string::npos) {
    throw std::invalid_argument("a request needs a method without spaces");
  }
  std::string why;
  if (!internal::ParseHttpUrl(request.url, &why)) throw std::invalid_argument(request.url + ": " + why);
  if (FindHeader(request.headers, "Idempotency-Key") != nullptr) {
    throw std::invalid_argument("the client adds Idempotency-Key itself: every intent has its own key");
  }
  if (request.key_in_body.empty()) return;
  const nlohmann::json body = nlohmann::json::parse(request.body, nullptr, false);
  if (!body.is_object()) throw std::invalid_argument("a key in the body needs a body that is a JSON object");
  try {
    const nlohmann::json::json_pointer at(request.key_in_body);
    if (at.empty()) throw std::invalid_argument("the key's JSON pointer must name a member, not the whole body");
    if (body.contains(at)) {
      throw std::invalid_argument("the body already has " + request.key_in_body +
                                  ": the client sets the key itself, every intent has its own key");
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("key_in_body '" + request.key_in_body + "' is not a JSON pointer: " + e.what());
  }
}

// The request as an attempt sends it: the body with the key in it when the
// key travels in the body (Validate accepted it). Sets *header_key to the
// Idempotency-Key header's value, empty for none.
Request OnTheWire(const Request& request, const std::string& key, std::string* header_key) {
  if (request.key_in_body.empty()) {
    *header_key = key;
    return request;
  }
  header_key->clear();
  Request wire = request;
  nlohmann::json body = nlohmann::json::parse(request.body);
  body[nlohmann::json::json_pointer(request.key_in_body)] = key;
  wire.body = body.dump();
  return wire;
}

// Waits `wait` or until `stop` is requested; true if stopped.
bool WaitUnlessStopped(std::chrono::milliseconds wait, const std::stop_token& stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  return cv.wait_for(lock, stop, wait, [] { return false; }) || stop.stop_requested();
}

std::int64_t NowUnixMillis() {
  return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string Seconds(Clock::duration d) {
  return std::to_string(std::chrono::duration_cast<milliseconds>(d).count() / 1000.0).substr(0, 5) + " s";
}

}  // namespace

struct Client::Impl {
  explicit Impl(ClientOptions o)
      : options(std::move(o)),
        pool(static_cast<std::size_t>(std::max(1, options.async_threads))),
        exchanger(internal::NewClientExchanger(options.ca_file)) {
    if (!options.journal) options.journal = NewMemoryJournal();
  }

  // Uniform in [0, 1) for the backoff's jitter (not a secret: std RNG).
  double UnitRandom() {
    std::lock_guard lock(mu);
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  }

  void Step(std::string_view step, const Intent& intent) const {
    if (options.on_step) options.on_step(step, intent);
  }

  ClientOptions options;
  boost::asio::thread_pool pool;
  // Every attempt's HTTP exchange; holds the TLS trust, loaded once.
  // Thread-safe: Sends on many threads share it.
  std::unique_ptr<net::HttpExchanger> exchanger;
  std::mutex mu;
  std::mt19937_64 rng{std::random_device{}()};  // GUARDED_BY(mu)
};

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Client::~Client() { impl_->pool.join(); }

boost::asio::any_io_executor Client::executor() { return impl_->pool.get_executor(); }

Intent Client::Create(const std::string& name, Request request, bool named) {
  Validate(request);
  IntentRecord record;
  record.key = NewUuidV7Text();
  record.name = named ? name : record.key;
  record.request = request;
  record.request.headers = WithoutSecrets(request.headers, impl_->options.secret_headers);
  record.created_unix_ms = NowUnixMillis();
  IntentRecord stored = impl_->options.journal->CreateOrGet(record);
  if (!SameOperation(stored.request, request)) {
    throw std::invalid_argument("intent '" + name + "' already exists for a different operation (" +
                                stored.request.method + " " + stored.request.url +
                                "); an intent's method, URL and body never change: use a new name for a new "
                                "operation");
  }
  // Headers are not the operation: this call's are the ones to send.
  stored.request.headers = std::move(request.headers);
  Intent intent(std::move(stored));
  impl_->Step("created", intent);
  return intent;
}

Intent Client::NewIntent(Request request) { return Create("", std::move(request), false); }

Intent Client::IntentNamed(const std::string& name, Request request) {
  if (name.empty()) throw std::invalid_argument("an intent's name must not be empty");
  return Create(name, std::move(request), true);
}

std::vector<Intent> Client::Unfinished() {
  std::vector<Intent> out;
  for (IntentRecord& r : impl_->options.journal->ListUnfinished()) {
    // A journal written before credentials were kept out may hold some.
    r.request.headers = WithoutSecrets(r.request.headers, impl_->options.secret_headers);
    out.push_back(Intent(std::move(r)));
  }
  return out;
}

Answer Client::Send(const Intent& given, const SendOptions& send) {
  Journal& journal = *impl_->options.journal;
  // The journal is the truth: the intent may have finished since `given`
  // was read (another thread, an earlier run), or come from another client.
  const std::vector<std::string>& secret = impl_->options.secret_headers;
  std::optional<IntentRecord> record = journal.Find(given.name());
  if (!record) {
    IntentRecord journaled = given.record_;
    journaled.request.headers = WithoutSecrets(journaled.request.headers, secret);
    record = journal.CreateOrGet(journaled);
  }
  // The caller's headers when `given` is the journal's operation (the
  // journal has none of its credentials), then those of this Send.
  Headers headers = SameOperation(record->request, given.request()) ? given.request().headers
                                                                    : WithoutSecrets(record->request.headers, secret);
  record->request.headers = Overridden(std::move(headers), send.headers);
  Intent intent(std::move(*record));
  Answer answer;
  answer.key = intent.key();
  if (intent.record_.answer) {
    const StoredAnswer& stored = *intent.record_.answer;
    answer.outcome = stored.status >= 200 && stored.status < 300 ? Outcome::kSucceeded : Outcome::kFailed;
    answer.status = stored.status;
    answer.headers = stored.headers;
    answer.body = stored.body;
    answer.replayed = stored.replayed;
    answer.attempts = stored.attempts;
    answer.from_journal = true;
    if (!answer.ok()) answer.problem = stored.body;
    return answer;
  }

  const RetryOptions& retry = impl_->options.retry;
  std::string why;
  const std::optional<internal::HttpUrl> url = internal::ParseHttpUrl(intent.request().url, &why);
  if (!url) throw std::invalid_argument(intent.request().url + ": " + why);
  std::string header_key;
  const Request wire = OnTheWire(intent.request(), intent.key(), &header_key);
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + retry.deadline;
  int consecutive_500 = 0;
  bool stopped = false;
  std::string last_problem = "the deadline left no time for an attempt";
  while (Clock::now() < deadline) {
    if (send.stop.stop_requested()) {
      stopped = true;
      break;
    }
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    internal::Exchange ex =
        internal::HttpExchange(*impl_->exchanger, *url, wire, header_key, std::min(retry.attempt_timeout, left),
                               [&] { impl_->Step("attempt.sent", intent); });
    // An attempt the intent's deadline cut short (it had less than
    // attempt_timeout) and that ran out of time says only that the deadline
    // came: the reason of the attempt before it (a refused certificate, say)
    // stays the one reported.
    const bool cut_short = ex.timed_out && left < retry.attempt_timeout;
    ++answer.attempts;
    AttemptResult attempt;
    attempt.transport = ex.transport;
    attempt.status = ex.status;
    if (ex.transport == AttemptResult::Transport::kAnswered) {
      const std::string* replayed = FindHeader(ex.headers, "Idempotent-Replayed");
      attempt.replayed = replayed != nullptr && EqualsIgnoreCase(*replayed, "true");
      if (const std::string* after = FindHeader(ex.headers, "Retry-After")) attempt.retry_after = *after;
      attempt.problem_type = ProblemType(ex.headers, ex.body);
      answer.status = ex.status;
      answer.headers = std::move(ex.headers);
      answer.body = std::move(ex.body);
      answer.replayed = attempt.replayed;
    }
    const RetryDecision decision = DecideRetry(attempt, consecutive_500, retry, std::chrono::system_clock::now());
    if (send.on_attempt) {
      send.on_attempt(AttemptReport{
          answer.attempts, ex.transport, attempt.status, attempt.replayed, ex.error,
          ex.transport == AttemptResult::Transport::kAnswered ? std::string_view(answer.body) : std::string_view(),
          decision.retry, decision.reason});
    }
    if (!decision.retry) {
      answer.outcome = ex.status >= 200 && ex.status < 300 ? Outcome::kSucceeded : Outcome::kFailed;
      if (!answer.ok()) answer.problem = answer.body;
      impl_->Step("answered", intent);
      journal.MarkDone(intent.name(), StoredAnswer{answer.status, WithoutSecrets(answer.headers, secret, true),
                                                   answer.body, answer.replayed, answer.attempts});
      impl_->Step("done", intent);
      return answer;
    }
    consecutive_500 =
        attempt.transport == AttemptResult::Transport::kAnswered && ex.status == 500 ? consecutive_500 + 1 : 0;
    if (!cut_short || answer.attempts == 1) {
      last_problem =
          (ex.transport == AttemptResult::Transport::kAnswered ? "HTTP " + std::to_string(ex.status) : ex.error) +
          " (" + std::string(decision.reason) + ")";
    }
    if (send.stop.stop_requested()) {
      stopped = true;
      break;
    }
    const milliseconds wait = BackoffDelay(answer.attempts - 1, retry, impl_->UnitRandom(), decision.at_least);
    if (Clock::now() + wait >= deadline) break;
    if (WaitUnlessStopped(wait, send.stop)) {
      stopped = true;
      break;
    }
  }
  answer.outcome = stopped ? Outcome::kCancelled : Outcome::kGaveUp;
  answer.problem = std::string(stopped ? "stopped" : "gave up") + " after " + std::to_string(answer.attempts) +
                   " attempt(s) in " + Seconds(Clock::now() - start) +
                   "; the intent is unfinished and keeps its key; last: " + last_problem;
  return answer;
}

void Client::StartSend(const Intent& intent, SendOptions send, std::function<void(std::exception_ptr, Answer)> done) {
  boost::asio::post(impl_->pool, [this, intent, send = std::move(send), done = std::move(done)] {
    Answer answer;
    std::exception_ptr error;
    try {
      answer = Send(intent, send);
    } catch (...) {
      error = std::current_exception();
    }
    done(error, std::move(answer));
  });
}

}  // namespace phasekey::client
