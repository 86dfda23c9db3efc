// The SQLite journal (journal.h). One table, one row per intent:
//
//   intents(name PRIMARY KEY, key UNIQUE, method, url, headers JSON, body,
//           created_ms, done_ms NULL until done, status, response_headers,
//           response_body, replayed, attempts, key_in_body)
//
// key_in_body came later: a journal file made before it gets the column
// (empty: the key in the header, which is what its intents did) when opened.
// Durability: WAL mode with synchronous=FULL, so every commit (each
// statement here runs in its own implicit transaction) fsyncs the WAL before
// it returns. Secrecy: the file is made 0600 before SQLite opens it (SQLite
// gives -wal and -shm the mode of the database file), secure_delete zeroes
// deleted rows, and finished intents are deleted after the retention
// (SqliteJournalOptions). CreateOrGet is INSERT ... ON CONFLICT(name) DO NOTHING, then a
// read of the row: two processes racing on one name both get the winner's.
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "phasekey/client/journal.h"

namespace phasekey::client {
namespace {

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS intents (
  name             TEXT PRIMARY KEY,
  key              TEXT NOT NULL UNIQUE,
  method           TEXT NOT NULL,
  url              TEXT NOT NULL,
  headers          TEXT NOT NULL,
  body             BLOB NOT NULL,
  created_ms       INTEGER NOT NULL,
  done_ms          INTEGER,
  status           INTEGER,
  response_headers TEXT,
  response_body    BLOB,
  replayed         INTEGER,
  attempts         INTEGER,
  key_in_body      TEXT NOT NULL DEFAULT '',
  CHECK ((done_ms IS NULL) = (status IS NULL))
))sql";

constexpr char kColumns[] =
    "name, key, method, url, headers, body, created_ms, done_ms, status, response_headers, response_body, "
    "replayed, attempts, key_in_body";

std::string HeadersToJson(const Headers& headers) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [name, value] : headers) a.push_back({name, value});
  return a.dump();
}

Headers HeadersFromJson(const std::string& text) {
  Headers out;
  const auto a = nlohmann::json::parse(text, nullptr, false);
  if (!a.is_array()) throw JournalError("journal: malformed headers column");
  for (const auto& pair : a) out.emplace_back(pair.at(0).get<std::string>(), pair.at(1).get<std::string>());
  return out;
}

// A prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) Fail("prepare");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& Bind(int i, const std::string& text) {
    Check(sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT), "bind");
    return *this;
  }
  Statement& BindBlob(int i, const std::string& bytes) {
    Check(sqlite3_bind_blob(stmt_, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT), "bind");
    return *this;
  }
  Statement& Bind(int i, std::int64_t value) {
    Check(sqlite3_bind_int64(stmt_, i, value), "bind");
    return *this;
  }
  // True when a row is ready, false when done.
  bool Step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    Fail("step");
  }
  std::string Text(int col) const {
    const void* p = sqlite3_column_blob(stmt_, col);
    const int n = sqlite3_column_bytes(stmt_, col);
    return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), static_cast<std::size_t>(n));
  }
  std::int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

 private:
  void Check(int rc, const char* what) {
    if (rc != SQLITE_OK) Fail(what);
  }
  [[noreturn]] void Fail(const char* what) {
    throw JournalError(std::string("journal: sqlite ") + what + ": " + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

IntentRecord ReadRecord(const Statement& s) {
  IntentRecord r;
  r.name = s.Text(0);
  r.key = s.Text(1);
  r.request.method = s.Text(2);
  r.request.url = s.Text(3);
  r.request.headers = HeadersFromJson(s.Text(4));
  r.request.body = s.Text(5);
  r.request.key_in_body = s.Text(13);
  r.created_unix_ms = s.Int(6);
  if (!s.IsNull(7)) {
    StoredAnswer a;
    a.status = static_cast<int>(s.Int(8));
    a.headers = HeadersFromJson(s.Text(9));
    a.body = s.Text(10);
    a.replayed = s.Int(11) != 0;
    a.attempts = static_cast<int>(s.Int(12));
    r.answer = std::move(a);
  }
  return r;
}

std::int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Creates `path` mode 0600 unless it exists, and sets an existing one (and
// its -wal and -shm, if any) to 0600: journals made before this were 0644.
// SQLite then creates -wal and -shm with the database file's mode.
void MakePrivate(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) throw JournalError("journal: cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0 && ((st.st_mode & 0777) == 0600 || ::fchmod(fd, 0600) == 0);
  const int saved = errno;
  ::close(fd);
  if (!ok) throw JournalError("journal: cannot make " + path + " private (0600): " + std::strerror(saved));
  for (const char* suffix : {"-wal", "-shm"}) {
    const std::string side = path + suffix;
    if (::chmod(side.c_str(), 0600) != 0 && errno != ENOENT) {
      throw JournalError("journal: cannot make " + side + " private (0600): " + std::strerror(errno));
    }
  }
}

class SqliteJournal final : public Journal {
 public:
  SqliteJournal(const std::string& path, const SqliteJournalOptions& options) : options_(options) {
    MakePrivate(path);
    const int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    if (rc != SQLITE_OK) {
      const std::string why = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      throw JournalError("journal: cannot open " + path + ": " + why);
    }
    try {
      sqlite3_busy_timeout(db_, 10000);
      {
        Statement wal(db_, "PRAGMA journal_mode=WAL");
        if (!wal.Step() || wal.Text(0) != "wal") throw JournalError("journal: " + path + " refuses WAL mode");
      }
      Exec("PRAGMA synchronous=FULL");
      Exec("PRAGMA secure_delete=ON");
      Exec(kSchema);
      AddKeyInBodyColumn();
      ScrubCredentials();
      Prune();
    } catch (...) {
      sqlite3_close(db_);
      throw;
    }
  }
  ~SqliteJournal() override { sqlite3_close(db_); }

  IntentRecord CreateOrGet(const IntentRecord& record) override {
    std::lock_guard lock(mu_);
    Statement insert(db_,
                     "INSERT INTO intents (name, key, method, url, headers, body, created_ms, key_in_body) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO NOTHING");
    insert.Bind(1, record.name).Bind(2, record.key).Bind(3, record.request.method).Bind(4, record.request.url);
    insert.Bind(5, HeadersToJson(record.request.headers)).BindBlob(6, record.request.body);
    insert.Bind(7, record.created_unix_ms).Bind(8, record.request.key_in_body);
    insert.Step();
    std::optional<IntentRecord> stored = FindLocked(record.name);
    if (!stored) throw JournalError("journal: intent '" + record.name + "' vanished after its insert");
    return *stored;
  }

  std::optional<IntentRecord> Find(const std::string& name) override {
    std::lock_guard lock(mu_);
    return FindLocked(name);
  }

  void MarkDone(const std::string& name, const StoredAnswer& answer) override {
    std::lock_guard lock(mu_);
    Statement update(db_,
                     "UPDATE intents SET done_ms = ?, status = ?, response_headers = ?, response_body = ?, "
                     "replayed = ?, attempts = ? WHERE name = ? AND done_ms IS NULL");
    update.Bind(1, NowMillis()).Bind(2, std::int64_t{answer.status}).Bind(3, HeadersToJson(answer.headers));
    update.BindBlob(4, answer.body).Bind(5, std::int64_t{answer.replayed ? 1 : 0});
    update.Bind(6, std::int64_t{answer.attempts}).Bind(7, name);
    update.Step();
    if (sqlite3_changes(db_) == 0 && !FindLocked(name)) throw JournalError("journal: no intent named '" + name + "'");
    Prune();
  }

  std::vector<IntentRecord> ListUnfinished() override {
    std::lock_guard lock(mu_);
    Statement select(
        db_, std::string("SELECT ") + kColumns + " FROM intents WHERE done_ms IS NULL ORDER BY created_ms, rowid");
    std::vector<IntentRecord> out;
    while (select.Step()) out.push_back(ReadRecord(select));
    return out;
  }

 private:
  std::optional<IntentRecord> FindLocked(const std::string& name) {
    Statement select(db_, std::string("SELECT ") + kColumns + " FROM intents WHERE name = ?");
    select.Bind(1, name);
    if (!select.Step()) return std::nullopt;
    return ReadRecord(select);
  }

  // A journal written before the client kept credentials out (issue 29)
  // may hold some: they are removed from its rows when it is opened, and the
  // WAL is checkpointed and truncated so that no old page keeps them
  // (secure_delete zeroes what the rows leave behind).
  void ScrubCredentials() {
    auto secret = [](const std::string& name, bool answer) {
      std::string lower = name;
      for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      return lower == "authorization" || lower == "cookie" || lower == "proxy-authorization" ||
             (answer && lower == "set-cookie");
    };
    auto scrub = [&](const std::string& json, bool answer, bool* changed) {
      Headers kept;
      for (auto& h : HeadersFromJson(json)) {
        if (secret(h.first, answer)) {
          *changed = true;
        } else {
          kept.push_back(std::move(h));
        }
      }
      return HeadersToJson(kept);
    };
    struct Row {
      std::string name, headers, response_headers;
      bool answered;
    };
    std::vector<Row> rows;
    {
      Statement select(db_,
                       "SELECT name, headers, response_headers FROM intents WHERE headers LIKE '%authorization%' "
                       "OR headers LIKE '%cookie%' OR response_headers LIKE '%cookie%' "
                       "OR response_headers LIKE '%authorization%'");
      while (select.Step()) {
        bool changed = false;
        Row row{select.Text(0), scrub(select.Text(1), false, &changed), "", !select.IsNull(2)};
        if (row.answered) row.response_headers = scrub(select.Text(2), true, &changed);
        if (changed) rows.push_back(std::move(row));
      }
    }
    if (rows.empty()) return;
    for (const Row& row : rows) {
      Statement update(db_, "UPDATE intents SET headers = ?, response_headers = ? WHERE name = ?");
      update.Bind(1, row.headers).Bind(3, row.name);
      if (row.answered) update.Bind(2, row.response_headers);
      update.Step();
    }
    Exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }

  // Deletes the intents done longer ago than the retention.
  void Prune() {
    Statement prune(db_, "DELETE FROM intents WHERE done_ms IS NOT NULL AND done_ms < ?");
    prune.Bind(1, NowMillis() - static_cast<std::int64_t>(options_.retention.count()));
    prune.Step();
  }

  // Gives a journal file made before key_in_body existed that column. Two
  // processes opening such a file at once may both try: the loser's
  // "duplicate column" is fine as long as the column is there afterwards.
  void AddKeyInBodyColumn() {
    auto has_column = [this] {
      Statement s(db_, "SELECT count(*) FROM pragma_table_info('intents') WHERE name = 'key_in_body'");
      return s.Step() && s.Int(0) == 1;
    };
    if (has_column()) return;
    try {
      Exec("ALTER TABLE intents ADD COLUMN key_in_body TEXT NOT NULL DEFAULT ''");
    } catch (const JournalError&) {
      if (!has_column()) throw;
    }
  }

  void Exec(const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
      const std::string why = error != nullptr ? error : "unknown error";
      sqlite3_free(error);
      throw JournalError(std::string("journal: ") + why);
    }
  }

  const SqliteJournalOptions options_;
  std::mutex mu_;
  sqlite3* db_ = nullptr;  // GUARDED_BY(mu_) after construction
};

}  // namespace

std::shared_ptr<Journal> OpenSqliteJournal(const std::string& path, const SqliteJournalOptions& options) {
  return std::make_shared<SqliteJournal>(path, options);
}

}  // namespace phasekey::client
