#include "phasekey/inbox.h"
#include "pg/statements.h"

#include <pqxx/pqxx>

#include <atomic>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include "inbox/inbox_handler_call.h"
#include "pg/deployment.h"
#include "pg/pool.h"
#include "phasekey/runner.h"
#include "sql/sql_catalog.h"
#include "util/hex.h"

namespace phasekey {
namespace {

Status CheckField(std::string_view name, const std::string& value, std::size_t max) {
  if (value.empty() || value.size() > max) {
    return Status::InvalidArgument("inbox event: " + std::string(name) + " must have 1 to " + std::to_string(max) +
                                   " characters");
  }
  return Status::OK();
}

Status CheckEvent(const InboxEvent& e) {
  for (Status s : {CheckField("provider", e.provider, 100), CheckField("event_id", e.event_id, 255),
                   CheckField("object_id", e.object_id, 255), CheckField("type", e.type, 255)}) {
    if (!s.ok()) return s;
  }
  return Status::OK();
}

// The reason kept on a parked row (the schema wants one).
std::string ReasonOf(const InboxResult& r) { return r.reason().empty() ? "no reason given" : r.reason(); }

struct ParkedRow {
  long long id;
  InboxEvent event;
};

std::vector<ParkedRow> LoadParked(pqxx::transaction_base& tx, int bucket, const std::string& provider,
                                  const std::string& object) {
  std::vector<ParkedRow> rows;
  for (const auto& r : pg::Exec(tx, sql::q::InboxParkedOfObject, provider, object, bucket)) {
    rows.push_back(
        {r[0].as<long long>(),
         {provider, r[1].as<std::string>(), object, r[2].as<std::string>(), util::HexDecode(r[3].as<std::string>())}});
  }
  return rows;
}

}  // namespace

class Inbox::Impl {
 public:
  Impl(std::unique_ptr<pg::Pool> pool, InboxHandler handler, InboxOptions options, int buckets)
      : pool_(std::move(pool)), handler_(std::move(handler)), options_(options), buckets_(buckets) {}

  Result<InboxReceipt> Receive(const InboxEvent& event);
  Result<InboxSweepReport> RetryParked();

 private:
  // The bucket of an object's events: AccountBucket("<provider>:<object>").
  int BucketOf(const std::string& provider, const std::string& object) const;
  // Receive() without the metrics.
  Result<InboxReceipt> ReceiveOnce(const InboxEvent& event);
  // Inside `tx`, holding the object's lock: retries the object's parked
  // events in arrival order, again while any was applied. Returns how many
  // were applied; *still_parked (if not null) gets how many stay parked.
  std::size_t RetryParkedOf(pqxx::transaction_base& tx, const std::string& provider, const std::string& object,
                            std::size_t* still_parked);

  const std::unique_ptr<pg::Pool> pool_;
  const InboxHandler handler_;
  const InboxOptions options_;
  const int buckets_;                    // the deployment's (phasekey.deployment)
  std::atomic<unsigned> sweep_from_{0};  // where the next sweep starts
};

std::string_view InboxDeliveryName(InboxDelivery delivery) {
  switch (delivery) {
    case InboxDelivery::kApplied: return "applied";
    case InboxDelivery::kDuplicate: return "duplicate";
    case InboxDelivery::kParked: return "parked";
  }
  return "applied";
}

Result<std::unique_ptr<Inbox>> Inbox::Open(const DatabaseOptions& database, InboxHandler handler,
                                           InboxOptions options) {
  if (!handler) return Status::InvalidArgument("inbox: a handler is required");
  if (options.pool_size == 0 || options.sweep_objects == 0) {
    return Status::InvalidArgument("inbox: pool_size and sweep_objects must be at least 1");
  }
  DatabaseOptions db = database;
  db.pool_size = options.pool_size;
  auto pool = pg::Pool::Open(db);
  if (!pool) return pool.error();
  auto buckets = pg::ResolveBuckets(**pool, 0, "inbox");
  if (!buckets) return buckets.error();
  return std::unique_ptr<Inbox>(
      new Inbox(std::make_unique<Impl>(std::move(*pool), std::move(handler), options, *buckets)));
}

Inbox::Inbox(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Inbox::~Inbox() = default;
Result<InboxReceipt> Inbox::Receive(const InboxEvent& event) { return impl_->Receive(event); }
Result<InboxSweepReport> Inbox::RetryParked() { return impl_->RetryParked(); }

int Inbox::Impl::BucketOf(const std::string& provider, const std::string& object) const {
  return AccountBucket(provider + ":" + object, buckets_);
}

Result<InboxReceipt> Inbox::Impl::Receive(const InboxEvent& event) {
  Result<InboxReceipt> receipt = ReceiveOnce(event);
  if (Metrics* m = options_.metrics.get()) {
    if (!receipt) {
      m->InboxDelivery(event.provider, receipt.error().code() == StatusCode::kInvalidArgument ? "invalid" : "retry");
    } else {
      m->InboxDelivery(event.provider, InboxDeliveryName(receipt->delivery));
      if (receipt->unparked > 0) m->InboxUnparked(event.provider, static_cast<double>(receipt->unparked));
    }
  }
  return receipt;
}

Result<InboxReceipt> Inbox::Impl::ReceiveOnce(const InboxEvent& event) {
  if (Status s = CheckEvent(event); !s.ok()) return s;
  InboxReceipt receipt;
  const int bucket = BucketOf(event.provider, event.object_id);
  Status s = pool_->Transact([&](pqxx::transaction_base& tx) {
    receipt = InboxReceipt{};
    pg::Exec(tx, sql::q::InboxObjectLock, event.provider, event.object_id);
    pqxx::result inserted = pg::Exec(tx, sql::q::InboxEventInsert, event.provider, event.event_id, event.object_id,
                                     event.type, util::HexEncode(event.payload), bucket);
    if (inserted.empty()) {
      receipt.delivery = InboxDelivery::kDuplicate;
      return;
    }
    const long long id = inserted[0][0].as<long long>();
    pg::Exec(tx, sql::q::InboxHandlerSavepoint);
    InboxResult r = inbox::CallHandler(handler_, tx, event, inbox::HandlerFailure::kPropagateDatabase);
    switch (r.kind()) {
      case InboxResult::Kind::kRetry:
        // Nothing of the event is recorded: roll it all back.
        throw pg::Rollback{Status::Retryable("inbox handler: " + r.reason())};
      case InboxResult::Kind::kPark:
        pg::Exec(tx, sql::q::InboxHandlerRollback);
        receipt.delivery = InboxDelivery::kParked;
        receipt.park_reason = ReasonOf(r);
        pg::Exec0(tx, sql::q::InboxEventPark, id, receipt.park_reason, bucket);
        return;
      case InboxResult::Kind::kApplied:
        pg::Exec(tx, sql::q::InboxHandlerRelease);
        receipt.unparked = RetryParkedOf(tx, event.provider, event.object_id, nullptr);
        return;
    }
  });
  if (!s.ok()) return s;
  return receipt;
}

std::size_t Inbox::Impl::RetryParkedOf(pqxx::transaction_base& tx, const std::string& provider,
                                       const std::string& object, std::size_t* still_parked) {
  std::size_t applied = 0;
  bool progress = true;
  while (progress) {  // an applied event may be the prerequisite of a parked one before it
    progress = false;
    std::size_t parked = 0;
    const int bucket = BucketOf(provider, object);
    for (const ParkedRow& row : LoadParked(tx, bucket, provider, object)) {
      pg::Exec(tx, sql::q::InboxHandlerSavepoint);
      InboxResult r = inbox::CallHandler(handler_, tx, row.event, inbox::HandlerFailure::kAsRetry);
      if (r.kind() == InboxResult::Kind::kApplied) {
        pg::Exec(tx, sql::q::InboxHandlerRelease);
        pg::Exec0(tx, sql::q::InboxEventUnpark, row.id, bucket);
        ++applied;
        progress = true;
      } else {
        pg::Exec(tx, sql::q::InboxHandlerRollback);
        pg::Exec0(tx, sql::q::InboxEventStillParked, row.id, ReasonOf(r), bucket);
        ++parked;
      }
    }
    if (still_parked != nullptr) *still_parked = parked;
  }
  return applied;
}

Result<InboxSweepReport> Inbox::Impl::RetryParked() {
  std::vector<std::pair<std::string, std::string>> objects;
  // Each sweep starts after the last bucket the previous one read, so a
  // bucket of objects parked for good cannot keep the others from a turn.
  const int first = static_cast<int>(sweep_from_.load() % static_cast<unsigned>(buckets_));
  int bucket = first;
  for (int i = 0; i < buckets_ && objects.size() < options_.sweep_objects; ++i) {
    bucket = (first + i) % buckets_;
    const auto room = static_cast<long long>(options_.sweep_objects - objects.size());
    std::vector<std::pair<std::string, std::string>> found;
    Status s = pool_->Transact([&](pqxx::transaction_base& tx) {
      found.clear();
      for (const auto& r : pg::Exec(tx, sql::q::InboxParkedObjects, room, bucket)) {
        found.emplace_back(r[0].as<std::string>(), r[1].as<std::string>());
      }
    });
    if (!s.ok()) return s;
    objects.insert(objects.end(), found.begin(), found.end());
  }
  sweep_from_.store(static_cast<unsigned>(bucket + 1));
  Status s;
  InboxSweepReport report;
  for (const auto& [provider, object] : objects) {
    std::size_t applied = 0, parked = 0;
    s = pool_->Transact([&](pqxx::transaction_base& tx) {
      pg::Exec(tx, sql::q::InboxObjectLock, provider, object);
      applied = RetryParkedOf(tx, provider, object, &parked);
    });
    if (!s.ok()) return s;
    ++report.objects;
    report.applied += applied;
    if (options_.metrics && applied > 0) options_.metrics->InboxUnparked(provider, static_cast<double>(applied));
    report.still_parked += parked;
  }
  return report;
}

}  // namespace phasekey
