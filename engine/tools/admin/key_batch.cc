#include "admin/key_batch.h"

#include <optional>
#include <regex>

#include <pqxx/pqxx>

#include "admin/key_filter_sql.h"
#include "sql/sql_catalog.h"

namespace phasekey::admin {
namespace {

bool IsUuid(const std::string& text) {
  static const std::regex kUuid("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
  return std::regex_match(text, kUuid);
}

// The owner tokens as a PostgreSQL array literal ("{}" for none); each is
// a UUID (BatchProblem), so nothing needs quoting.
std::string UuidArray(const std::vector<std::string>& tokens) {
  std::string out = "{";
  for (std::size_t i = 0; i < tokens.size(); ++i) out += (i == 0 ? "" : ",") + tokens[i];
  return out + "}";
}

// The audit row's outcome: the filter, what was named, and the counts.
std::string Outcome(const Batch& b, long long confirmed, std::optional<long long> matched, const std::string& refusal) {
  nlohmann::json out = {{"filter", FilterJson(b.filter)}, {"confirmed_count", confirmed}};
  if (b.action == BatchAction::kRelease) out["owner_tokens"] = b.owner_tokens;
  if (matched) out["matched"] = *matched;
  if (!refusal.empty()) out["refused"] = refusal;
  return out.dump();
}

// The action on every key that matches, in `tx`; how many it changed.
long long Act(pqxx::transaction_base& tx, const Batch& b, std::optional<int> bucket) {
  if (b.action == BatchAction::kRelease) {
    return ExecFiltered(tx, sql::q::AdminBatchRelease, b.filter, bucket, UuidArray(b.owner_tokens))[0][0]
        .as<long long>();
  }
  return ExecFiltered(tx, sql::q::AdminBatchRetry, b.filter, bucket, b.action == BatchAction::kRetryVerified)[0][0]
      .as<long long>();
}

}  // namespace

const char* BatchActionName(BatchAction action) {
  switch (action) {
    case BatchAction::kRetry: return "batch_retry";
    case BatchAction::kRetryVerified: return "batch_retry_verified";
    case BatchAction::kRelease: return "batch_release";
  }
  return "batch_retry";
}

std::string BatchProblem(const Batch& b) {
  if (std::string why = FilterProblem(b.filter); !why.empty()) return why;
  if (b.action != BatchAction::kRelease && !b.owner_tokens.empty()) return "owner tokens name leases to release";
  for (const std::string& t : b.owner_tokens) {
    if (!IsUuid(t)) return "owner token '" + t + "' is not a UUID";
  }
  return "";
}

std::string TooManyKeys(long long count) {
  return std::to_string(count) + " keys are more than one batch acts on (" + std::to_string(kMaxBatchKeys) +
         "): narrow the filters (an account, a flow, an age) and act in several batches";
}

Result<long long> AdminBatchCount(const std::string& url, int buckets, const Batch& b) {
  if (std::string why = BatchProblem(b); !why.empty()) return Status::InvalidArgument(why);
  long long count = 0;
  Status bad;
  Status s = WithConnection(url, [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    const std::optional<int> bucket = FilterBucket(tx, b.filter, &bad, buckets);
    if (!bad.ok()) return;
    count = ExecFiltered(tx, sql::q::AdminBatchCount, b.filter, bucket,
                         std::string(b.action == BatchAction::kRelease ? "release" : "retry"),
                         b.action == BatchAction::kRetryVerified, UuidArray(b.owner_tokens))[0][0]
                .as<long long>();
  });
  if (!s.ok()) return s;
  if (!bad.ok()) return bad;
  return count;
}

Result<long long> AdminBatchRun(const std::string& url, int buckets, const Batch& b, long long confirmed,
                                const Actor& actor) {
  if (std::string why = ActorProblem(actor.name); !why.empty()) return Status::InvalidArgument(why);
  if (std::string why = BatchProblem(b); !why.empty()) return Status::InvalidArgument(why);
  if (confirmed > kMaxBatchKeys) return Status::InvalidArgument(TooManyKeys(confirmed));
  const std::string account = b.filter.account.value_or("*");
  std::optional<long long> matched;
  Status refused;
  Status s = WithConnection(url, [&](pqxx::connection& c) {
    matched.reset();
    refused = Status::OK();
    {
      pqxx::work tx(c);
      const std::optional<int> bucket = FilterBucket(tx, b.filter, &refused, buckets);
      if (refused.ok()) {
        matched = Act(tx, b, bucket);
        if (*matched == confirmed) {
          pg::Exec0(tx, sql::q::AdminAuditInsert, actor.name, BatchActionName(b.action), account, "*", true,
                    Outcome(b, confirmed, matched, ""));
          tx.commit();
          return;
        }
        refused = Status::FailedPrecondition(
            std::to_string(*matched) + (*matched == 1 ? " key matches" : " keys match") + " now, not the " +
            std::to_string(confirmed) + " confirmed: nothing was done (the keys moved; count them again)");
      }
    }  // rolled back: nothing of the action is kept
    pqxx::work tx(c);
    pg::Exec0(tx, sql::q::AdminAuditInsert, actor.name, BatchActionName(b.action), account, "*", false,
              Outcome(b, confirmed, matched, refused.ToString()));
    tx.commit();
  });
  if (!s.ok()) return s;  // the audit row was not written: nothing of the action was kept
  if (!refused.ok()) return refused;
  return *matched;
}

}  // namespace phasekey::admin
