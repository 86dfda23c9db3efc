#include "support/claim_strategies.h"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "support/raw_ride.h"

namespace phasekey::bench {
namespace {

class PhasekeyStrategy final : public Strategy {
 public:
  explicit PhasekeyStrategy(Runner* runner) : runner_(runner) {}
  ClaimAnswer Handle(const std::string& account, const std::string& key, const std::string& body) override {
    Reply r = runner_->Execute("charge_only", Request{account, key, "POST", "/charges", body});
    switch (r.kind) {
      case Reply::Kind::kCompleted: return ClaimAnswer::kExecuted;
      case Reply::Kind::kReplayed: return ClaimAnswer::kReplayed;
      case Reply::Kind::kInProgress: return ClaimAnswer::kConflict;
      default: return ClaimAnswer::kError;
    }
  }

 private:
  Runner* runner_;
};

// The shared shape of the three SQL baselines: claim in one transaction,
// call the gateway outside it, store the response in a second one.
class SqlStrategy : public Strategy {
 public:
  SqlStrategy(const std::string& url, TestGateway* gateway, std::string table)
      : conn_(url), gateway_(gateway), table_(std::move(table)) {}

  ClaimAnswer Handle(const std::string& account, const std::string& key, const std::string& body) override {
    long long id = 0;
    try {
      ClaimAnswer a = Claim(account, key, body, &id);
      if (a != ClaimAnswer::kExecuted) return a;
      const std::string charge = gateway_->Charge(table_ + "-" + std::to_string(id));
      pqxx::work tx(conn_);
      tx.exec_params0("UPDATE " + table_ +
                          " SET locked_at = NULL, recovery_point = 'finished', response_code = 201, "
                          "response_body = $2::jsonb WHERE id = $1",
                      id, nlohmann::json{{"charge_id", charge}}.dump());
      tx.commit();
      return ClaimAnswer::kExecuted;
    } catch (const pqxx::serialization_failure&) {
      return ClaimAnswer::kSerialization;
    } catch (const pqxx::deadlock_detected&) {
      return ClaimAnswer::kSerialization;
    } catch (const std::exception&) {
      return ClaimAnswer::kError;
    }
  }

 protected:
  // Claims the key inside `tx`: the answer for an existing key, or kExecuted
  // with *id set after inserting a locked one.
  template <class Tx>
  ClaimAnswer SelectOrInsert(Tx& tx, const std::string& account, const std::string& key, const std::string& body,
                             long long* id) {
    pqxx::result found = tx.exec_params(
        "SELECT recovery_point FROM " + table_ + " WHERE account = $1 AND idempotency_key = $2 LIMIT 1", account, key);
    if (!found.empty()) {
      tx.commit();
      return found[0][0].as<std::string>() == "finished" ? ClaimAnswer::kReplayed : ClaimAnswer::kConflict;
    }
    const pqxx::row row =
        tx.exec_params1("INSERT INTO " + table_ +
                            " (idempotency_key, locked_at, recovery_point, request_method, request_params, "
                            "request_path, account) VALUES ($1, now(), 'started', 'POST', $2::jsonb, '/charges', "
                            "$3) RETURNING id",
                        key, body, account);
    *id = row[0].as<long long>();
    tx.commit();
    return ClaimAnswer::kExecuted;
  }
  virtual ClaimAnswer Claim(const std::string& account, const std::string& key, const std::string& body,
                            long long* id) = 0;

  pqxx::connection conn_;

 private:
  TestGateway* gateway_;
  const std::string table_;
};

class LeachStrategy final : public SqlStrategy {
 public:
  LeachStrategy(const std::string& url, TestGateway* gateway) : SqlStrategy(url, gateway, "leach_keys") {}
  ClaimAnswer Claim(const std::string& account, const std::string& key, const std::string& body,
                    long long* id) override {
    pqxx::transaction<pqxx::serializable> tx(conn_);
    return SelectOrInsert(tx, account, key, body, id);
  }
};

class AdvisoryStrategy final : public SqlStrategy {
 public:
  AdvisoryStrategy(const std::string& url, TestGateway* gateway) : SqlStrategy(url, gateway, "advisory_keys") {}
  ClaimAnswer Claim(const std::string& account, const std::string& key, const std::string& body,
                    long long* id) override {
    pqxx::work tx(conn_);
    tx.exec_params("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", account + "/" + key);
    return SelectOrInsert(tx, account, key, body, id);
  }
};

class NaiveStrategy final : public SqlStrategy {
 public:
  NaiveStrategy(const std::string& url, TestGateway* gateway) : SqlStrategy(url, gateway, "naive_keys") {}
  ClaimAnswer Claim(const std::string& account, const std::string& key, const std::string& body,
                    long long* id) override {
    pqxx::work tx(conn_);
    return SelectOrInsert(tx, account, key, body, id);
  }
};

}  // namespace

std::string_view StrategyName(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::kPhasekey: return "phasekey";
    case StrategyKind::kLeach: return "leach_serializable";
    case StrategyKind::kAdvisory: return "advisory_lock";
    case StrategyKind::kNaive: return "naive";
  }
  return "?";
}

void CreateClaimTables(const std::string& url) {
  CreateLeachTables(url);
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  for (const char* table : {"advisory_keys", "naive_keys"}) {
    // Leach's columns, but no unique index: an ordinary index for the lookup.
    tx.exec0(std::string("CREATE TABLE IF NOT EXISTS ") + table +
             " (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), "
             "idempotency_key text NOT NULL, last_run_at timestamptz NOT NULL DEFAULT now(), locked_at timestamptz, "
             "request_method text NOT NULL, request_params jsonb NOT NULL, request_path text NOT NULL, "
             "response_code integer, response_body jsonb, recovery_point text NOT NULL, account text NOT NULL)");
    tx.exec0(std::string("CREATE INDEX IF NOT EXISTS ") + table + "_lookup ON " + table +
             " (account, idempotency_key)");
  }
  tx.commit();
}

std::unique_ptr<Strategy> MakeStrategy(StrategyKind kind, const std::string& url, Runner* runner,
                                       TestGateway* gateway) {
  switch (kind) {
    case StrategyKind::kPhasekey: return std::make_unique<PhasekeyStrategy>(runner);
    case StrategyKind::kLeach: return std::make_unique<LeachStrategy>(url, gateway);
    case StrategyKind::kAdvisory: return std::make_unique<AdvisoryStrategy>(url, gateway);
    case StrategyKind::kNaive: return std::make_unique<NaiveStrategy>(url, gateway);
  }
  return nullptr;
}

}  // namespace phasekey::bench
