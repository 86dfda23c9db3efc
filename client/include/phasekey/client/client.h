// phasekey's client: sends an operation to an API that takes idempotency
// keys, so that it happens once however often the network, the server or
// this process fails.
//
//   auto client = phasekey::client::Client(options);      // once
//   Intent intent = client.IntentNamed("ride-42", request); // journaled, keyed
//   Answer answer = client.Send(intent);                   // retried for you
//
// It prevents the three client mistakes by construction:
//   1. A new key on every retry: the key is made once, when the intent is
//      created, and written to the journal before the first send; every
//      attempt and every later Send of the intent (in this process or after
//      a restart) carries that key.
//   2. 409 treated as final: 409 is retried (with backoff, honouring
//      Retry-After), like the other retryable answers of retry_policy.h.
//   3. One key for two operations: keys come only with new intents; there is
//      no way to give an intent a key, and an intent's operation (method,
//      URL, body, key placement: SameOperation) cannot change.
// Headers are not part of the operation: resuming an intent sends the
// caller's current headers (a rotated token), under the same key.
// Credential headers (Authorization, Cookie, Proxy-Authorization and
// ClientOptions::secret_headers) are never written to the journal: they
// live in the Intent in memory, or come with SendOptions::headers.
//
// Thread-safe: one Client serves any number of threads. Errors: storage
// failures of the journal throw JournalError; a malformed request throws
// std::invalid_argument; what the server or the network did is in Answer.
#ifndef PHASEKEY_CLIENT_CLIENT_H_
#define PHASEKEY_CLIENT_CLIENT_H_

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "phasekey/client/journal.h"
#include "phasekey/client/retry_policy.h"

namespace phasekey::client {

// One operation with its key. Copyable; made only by Client.
class Intent {
 public:
  // Its name in the journal: the caller's (IntentNamed) or the key
  // (NewIntent).
  const std::string& name() const { return record_.name; }
  // The Idempotency-Key every attempt carries (UUIDv7 text), fixed when the
  // intent was created.
  const std::string& key() const { return record_.key; }
  // The request every attempt sends: its operation fixed when the intent
  // was created; its headers the caller's latest (IntentNamed/NewIntent),
  // or for an intent read back from the journal (Unfinished) the journaled
  // ones, which lack the credential headers.
  const Request& request() const { return record_.request; }
  // True when the journal holds its final answer (Send returns that answer
  // without sending anything).
  bool done() const { return record_.answer.has_value(); }

 private:
  friend class Client;
  explicit Intent(IntentRecord record) : record_(std::move(record)) {}
  IntentRecord record_;
};

// How a Send ended.
enum class Outcome {
  kSucceeded,  // a 2xx; the intent is done
  kFailed,     // a final non-2xx (retry_policy.h); the intent is done
  kGaveUp,     // the deadline passed before a final answer; the intent is
               // still unfinished and the next Send resumes it (same key)
  kCancelled,  // SendOptions::stop was requested before a final answer; the
               // intent is still unfinished, as with kGaveUp
};

// What Send() returns: how it ended and the last answer read.
struct Answer {
  Outcome outcome = Outcome::kGaveUp;  // how the Send ended
  std::string key;                     // the Idempotency-Key sent
  int status = 0;                      // the last HTTP status; 0 when none was read
  Headers headers;                     // of the last answer read
  std::string body;                    // of the last answer read
  bool replayed = false;               // the server answered from its store
                                       // (Idempotent-Replayed: true)
  bool from_journal = false;           // the intent was already done: this is the
                                       // journal's answer; nothing was sent
  int attempts = 0;                    // attempts made by this Send (the stored count
                                       // when from_journal)
  // Unless kSucceeded: what went wrong. kFailed: the answer's body (an RFC
  // 9457 problem body from a phasekey server). kGaveUp, kCancelled: the
  // last transport error or status and the retry reason.
  std::string problem;

  // outcome is kSucceeded.
  bool ok() const { return outcome == Outcome::kSucceeded; }
};

// One attempt of a Send as SendOptions::on_attempt sees it. The references
// are valid during the call only.
struct AttemptReport {
  int attempt = 0;                                                           // 1 for a Send's first attempt
  AttemptResult::Transport transport = AttemptResult::Transport::kAnswered;  // how far it got
  int status = 0;                                                            // kAnswered: the HTTP status; else 0
  bool replayed = false;   // the answer said Idempotent-Replayed: true
  std::string_view error;  // not kAnswered: what failed (connect, timeout, ...)
  std::string_view body;   // kAnswered: the answer's body
  // The retry table's verdict (retry_policy.h): true when another attempt
  // follows unless the deadline or a stop ends the Send first.
  bool retry = false;
  std::string_view reason;  // DecideRetry's reason
};

// How one Send runs, beyond ClientOptions. Every member is optional.
struct SendOptions {
  // Headers sent with every attempt of this Send, replacing the intent's
  // headers of the same names (case-insensitively): the credentials of an
  // intent from Unfinished(), whose journaled request has none, or a
  // rotated token. Never journaled. Default: none.
  Headers headers;
  // Ends the Send early: a stop requested before a final answer makes Send
  // return kCancelled at the next of these: before an attempt, during a
  // backoff wait (which it cuts short), or right after an attempt that did
  // not end the Send. An attempt in flight is not interrupted (its timeout
  // bounds it). The intent stays unfinished and keeps its key. Default: a
  // token that is never stopped.
  std::stop_token stop;
  // Called after every attempt, on the thread running the Send, before the
  // journal hears of a final answer and before any backoff wait: for
  // counters, logs and per-attempt policies of the caller's own (it may
  // request `stop`, e.g. after N attempts). It must not call into the same
  // Client for this intent. Empty: nothing is called.
  std::function<void(const AttemptReport&)> on_attempt;
};

// Where a Client keeps its intents and how it retries; every default is
// explained below.
struct ClientOptions {
  // Where intents live. Null: a memory journal (NewMemoryJournal()), so
  // intents do not survive the process; pass OpenSqliteJournal(path) for
  // intents that must.
  std::shared_ptr<Journal> journal;
  // Header names (case-insensitive) the journal never sees, on top of
  // Authorization, Cookie and Proxy-Authorization, which it never sees
  // either: an API key header, say. They are sent with the attempts of an
  // intent made in this process, or given at send time
  // (SendOptions::headers). Answers are journaled without Set-Cookie and
  // these. Default: none beyond the three.
  std::vector<std::string> secret_headers;
  // For https:// URLs: a PEM file of the CA certificates to trust instead
  // of the system's trust store (OpenSSL's default paths). Either way the
  // server's certificate must chain to one of them and name the URL's host
  // (a DNS name, or the IP address); the request is sent only after that
  // is verified. Default: empty, the system's trust store.
  std::string ca_file;
  // Backoff, deadline and per-attempt timeout; see retry_policy.h.
  RetryOptions retry;
  // Threads that run AsyncSend's work. 2: AsyncSend is for a few intents
  // in flight beside other work; a Send that waits out a backoff holds its
  // thread, so raise it for many concurrent intents.
  int async_threads = 2;
  // Called at named steps of an intent, on the thread that reaches them:
  //   "created"       the intent is in the journal (IntentNamed/NewIntent)
  //   "attempt.sent"  an attempt's request is written, its answer not read
  //   "answered"      a final answer is read, the journal not yet told
  //   "done"          the journal holds the final answer
  // For logs, metrics and crash tests (phasekey request turns each into a
  // crash point "client.<step>"). Empty: nothing is called.
  std::function<void(std::string_view step, const Intent& intent)> on_step;
};

// Sends intents until a final answer (see the file comment).
class Client {
 public:
  // Starts options.async_threads threads (at least 1) for AsyncSend; uses a
  // memory journal when options.journal is null. Does no I/O.
  explicit Client(ClientOptions options = {});
  // Waits for AsyncSends in flight to finish.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // A new intent named by its own key, journaled before this returns.
  // Throws std::invalid_argument for a request that cannot be sent (bad
  // URL, empty method, an Idempotency-Key header of its own).
  Intent NewIntent(Request request);
  // The intent named `name`: created (and journaled) with a new key when
  // the journal has none of that name, else the journal's one with its
  // original key (and `request`'s headers, which may differ from the
  // journaled ones). Throws std::invalid_argument when the journal's intent
  // of that name is another operation (SameOperation): one name, one
  // operation.
  Intent IntentNamed(const std::string& name, Request request);
  // The journal's intents without a final answer, oldest first: what a
  // restarted process sends again. Their requests have no credential
  // headers: give them at send time (SendOptions::headers), or get the
  // intent again with IntentNamed and the full request.
  std::vector<Intent> Unfinished();

  // Sends the intent until a final answer, the deadline or send.stop;
  // blocks. Records the final answer in the journal before returning it.
  Answer Send(const Intent& intent, const SendOptions& send = {});

  // Send on the client's own threads; the handler gets the Answer on its
  // associated executor (else the client's), with the exception Send threw
  // (a JournalError) or null. Works with any Asio completion token: a
  // callback void(std::exception_ptr, Answer), boost::asio::use_future
  // (whose future rethrows), ...
  template <class CompletionToken>
  auto AsyncSend(const Intent& intent, CompletionToken&& token) {
    return AsyncSend(intent, SendOptions{}, std::forward<CompletionToken>(token));
  }
  // AsyncSend with SendOptions (a stop token, an attempt callback, which is
  // called on the client's threads).
  template <class CompletionToken>
  auto AsyncSend(const Intent& intent, SendOptions send, CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(std::exception_ptr, Answer)>(
        [this](auto handler, const Intent& intent, SendOptions send) {
          using Handler = decltype(handler);
          auto work = boost::asio::make_work_guard(boost::asio::get_associated_executor(handler, executor()));
          auto state = std::make_shared<std::pair<Handler, decltype(work)>>(std::move(handler), std::move(work));
          StartSend(intent, std::move(send), [state](std::exception_ptr error, Answer answer) {
            auto ex = state->second.get_executor();
            boost::asio::dispatch(ex, [state, error, answer = std::move(answer)]() mutable {
              std::move(state->first)(error, std::move(answer));
            });
          });
        },
        token, intent, std::move(send));
  }

  // The executor of the client's threads.
  boost::asio::any_io_executor executor();

 private:
  void StartSend(const Intent& intent, SendOptions send, std::function<void(std::exception_ptr, Answer)> done);
  Intent Create(const std::string& name, Request request, bool named);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace phasekey::client

#endif  // PHASEKEY_CLIENT_CLIENT_H_
