// The client's durable local journal: every intent (one operation and its
// idempotency key) is written here before its first attempt is sent, and its
// final answer when one arrives. A process killed at any moment finds its
// unfinished intents here when it starts again, each with the key it was
// created with, and sends them again under that key.
//
// Journal is an interface so that an application can keep its intents in
// its own database (in the transaction that records why it wants the
// operation, ideally). Two implementations come with the library: SQLite
// (durable; the default of `phasekey request --journal`) and memory (for
// intents that need not outlive the process).
#ifndef PHASEKEY_CLIENT_JOURNAL_H_
#define PHASEKEY_CLIENT_JOURNAL_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace phasekey::client {

// Header fields in order; names compared case-insensitively where it matters.
using Headers = std::vector<std::pair<std::string, std::string>>;

// One HTTP request: what an intent sends on every attempt, unchanged.
struct Request {
  std::string method;  // e.g. "POST"
  std::string url;     // "http[s]://host[:port][/path][?query]"
  Headers headers;     // sent as given; Idempotency-Key is added, never given
  std::string body;    // sent as given (no Content-Type is added)
  // Where the key travels. Empty (the default): in the Idempotency-Key
  // header. Otherwise an RFC 6901 JSON pointer ("/booking_reference") into
  // the body, for APIs that take their key from the body (phasekey's
  // KeySource::BodyField): every attempt sends the body with the key set at
  // that pointer, and no Idempotency-Key header. The body must then be a
  // JSON object with nothing at the pointer (the client, not the caller,
  // chooses the key); `body` itself stays as given.
  std::string key_in_body{};

  // Every member equal, headers in the same order. Not what makes two
  // requests one operation: see SameOperation.
  friend bool operator==(const Request&, const Request&) = default;
};

// The identity of an operation: method, URL, body and key_in_body. Headers
// are not part of it: a rotated bearer token, a new trace id or a changed
// User-Agent leave an intent the same operation (the client sends the
// caller's current headers when it resumes one).
inline bool SameOperation(const Request& a, const Request& b) {
  return a.method == b.method && a.url == b.url && a.body == b.body && a.key_in_body == b.key_in_body;
}

// The final answer of an intent, as the journal keeps it.
struct StoredAnswer {
  int status = 0;         // the HTTP status of the final answer
  Headers headers;        // as received
  std::string body;       // exact bytes
  bool replayed = false;  // the server said Idempotent-Replayed: true
  int attempts = 0;       // attempts of the Send that got it
};

// An intent as a journal stores it. Only the client makes these (with a key
// from NewUuidV7Text()); a journal stores and returns them unchanged.
struct IntentRecord {
  std::string name;                    // unique in the journal: the caller's name, or the key
  std::string key;                     // UUIDv7 text, the Idempotency-Key of every attempt
  Request request;                     // what every attempt sends; from the client, without
                                       // its credential headers (client.h), which it never
                                       // gives a journal
  std::int64_t created_unix_ms = 0;    // when the client made it: Unix time in ms
  std::optional<StoredAnswer> answer;  // set once the intent is done
};

// A journal could not read or write its storage. The journal's state is
// what it was before the failed call (implementations write atomically).
class JournalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Implementations must be thread-safe, and durable on return: a record a
// call has returned survives a crash of the process (and, for the SQLite
// journal, of the machine) right after. Every method throws JournalError
// when the storage fails.
class Journal {
 public:
  virtual ~Journal() = default;
  // Stores `record` unless an intent named record.name exists; returns the
  // stored intent: `record` itself, or the existing one unchanged (its key,
  // request and answer), never a mix.
  virtual IntentRecord CreateOrGet(const IntentRecord& record) = 0;
  // The intent named `name`, if any.
  virtual std::optional<IntentRecord> Find(const std::string& name) = 0;
  // Records the final answer of intent `name`. The first answer stays: a
  // second call for a done intent changes nothing. Throws JournalError for
  // an unknown name.
  virtual void MarkDone(const std::string& name, const StoredAnswer& answer) = 0;
  // The intents without an answer, oldest first.
  virtual std::vector<IntentRecord> ListUnfinished() = 0;
};

// How the SQLite journal keeps its intents.
struct SqliteJournalOptions {
  // How long a finished intent (and its answer's body) stays in the file
  // after its final answer: it is deleted when the journal is opened and
  // after each MarkDone once done longer ago than this. Within it,
  // IntentNamed of the same name returns the stored answer; after it, the
  // name is forgotten and makes a new intent with a new key, so keep it
  // longer than anyone may run the same named intent again. 7 days.
  std::chrono::milliseconds retention = std::chrono::hours(24 * 7);
};

// The SQLite journal at `path` (created if missing, with its table).
// WAL mode, synchronous=FULL: every returning write has been fsynced, the
// WAL file included. Files: `path`, `path-wal` and `path-shm` (keep the
// three together; SQLite folds the WAL back into `path` on checkpoints).
// The file is created mode 0600 (an existing one is set to 0600), and
// SQLite gives the -wal and -shm files the database file's mode. Deleted
// rows are overwritten with zeros (secure_delete). A file written before
// the client kept credentials out may hold Authorization, Cookie,
// Proxy-Authorization or Set-Cookie headers: opening it removes them from
// its rows and truncates the WAL. Several processes may
// open the same file; writers wait up to 10 s for each other
// (busy_timeout).
std::shared_ptr<Journal> OpenSqliteJournal(const std::string& path, const SqliteJournalOptions& options = {});

// A journal in memory: intents last as long as the process.
std::shared_ptr<Journal> NewMemoryJournal();

}  // namespace phasekey::client

#endif  // PHASEKEY_CLIENT_JOURNAL_H_
