#include "support/raw_ride.h"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

namespace phasekey::bench {
namespace {

using Serializable = pqxx::transaction<pqxx::serializable>;

std::string ReceiptBody(long long ride_id, const std::string& charge) {
  return nlohmann::json{{"ride_id", ride_id}, {"charge_id", charge}}.dump();
}

}  // namespace

void CreateLeachTables(const std::string& url) {
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  // rocket-rides-atomic's idempotency_keys, with account for user_id.
  tx.exec0(
      "CREATE TABLE IF NOT EXISTS leach_keys (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), "
      "idempotency_key text NOT NULL, last_run_at timestamptz NOT NULL DEFAULT now(), locked_at timestamptz, "
      "request_method text NOT NULL, request_params jsonb NOT NULL, request_path text NOT NULL, "
      "response_code integer, response_body jsonb, recovery_point text NOT NULL, account text NOT NULL, "
      "UNIQUE (account, idempotency_key))");
  tx.commit();
}

RawRide::RawRide(const std::string& url, TestGateway* gateway) : conn_(url), gateway_(gateway) {}

std::string RawRide::Run(const std::string& account, const std::string& key, const std::string& body) {
  const nlohmann::json request = nlohmann::json::parse(body);
  {
    pqxx::work tx(conn_);
    tx.exec_params0("INSERT INTO rides (account, idem_key, origin_lat) VALUES ($1, $2, $3)", account, key,
                    request.value("origin_lat", 0.0));
    tx.commit();
    ++commits_;
  }
  const std::string charge = gateway_->Charge(account + "/" + key);
  pqxx::work tx(conn_);
  pqxx::row ride = tx.exec_params1("UPDATE rides SET charge_id = $3 WHERE account = $1 AND idem_key = $2 RETURNING id",
                                   account, key, charge);
  tx.exec_params0("INSERT INTO staged_jobs (job_name, job_args) VALUES ('send_ride_receipt', $1::jsonb)",
                  nlohmann::json{{"account", account}, {"charge_id", charge}}.dump());
  tx.commit();
  ++commits_;
  return ReceiptBody(ride[0].as<long long>(), charge);
}

LeachRide::LeachRide(const std::string& url, TestGateway* gateway) : conn_(url), gateway_(gateway) {}

LeachRide::Outcome LeachRide::Run(const std::string& account, const std::string& key, const std::string& body) {
  const nlohmann::json request = nlohmann::json::parse(body);
  try {
    long long id = 0;
    {  // Phase 1: upsert and lock the key.
      Serializable tx(conn_);
      pqxx::result found = tx.exec_params(
          "SELECT id, request_params::text, locked_at > now() - interval '90 seconds', recovery_point, "
          "response_code FROM leach_keys WHERE account = $1 AND idempotency_key = $2 LIMIT 1",
          account, key);
      if (!found.empty()) {
        tx.commit();
        if (!found[0][2].is_null() && found[0][2].as<bool>()) return Outcome::kConflict;
        return found[0][3].as<std::string>() == "finished" ? Outcome::kReplayed : Outcome::kConflict;
      }
      id = tx.exec_params1(
                 "INSERT INTO leach_keys (idempotency_key, locked_at, recovery_point, request_method, "
                 "request_params, request_path, account) VALUES ($1, now(), 'started', 'POST', $2::jsonb, "
                 "'/rides', $3) RETURNING id",
                 key, body, account)[0]
               .as<long long>();
      tx.commit();
      ++commits_;
    }
    {  // started -> ride_created
      Serializable tx(conn_);
      tx.exec_params0("INSERT INTO rides (account, idem_key, origin_lat) VALUES ($1, $2, $3)", account, key,
                      request.value("origin_lat", 0.0));
      tx.exec_params0("UPDATE leach_keys SET recovery_point = 'ride_created' WHERE id = $1", id);
      tx.commit();
      ++commits_;
    }
    std::string charge;
    {  // ride_created -> charge_created: the call runs inside the transaction.
      Serializable tx(conn_);
      charge = gateway_->Charge("rocket-rides-atomic-" + std::to_string(id));
      tx.exec_params1("UPDATE rides SET charge_id = $3 WHERE account = $1 AND idem_key = $2 RETURNING id", account, key,
                      charge);
      tx.exec_params0("UPDATE leach_keys SET recovery_point = 'charge_created' WHERE id = $1", id);
      tx.commit();
      ++commits_;
    }
    {  // charge_created -> finished
      Serializable tx(conn_);
      tx.exec_params0("INSERT INTO staged_jobs (job_name, job_args) VALUES ('send_ride_receipt', $1::jsonb)",
                      nlohmann::json{{"account", account}, {"charge_id", charge}}.dump());
      tx.exec_params0(
          "UPDATE leach_keys SET locked_at = NULL, recovery_point = 'finished', response_code = 201, "
          "response_body = $2::jsonb WHERE id = $1",
          id, nlohmann::json{{"charge_id", charge}}.dump());
      tx.commit();
      ++commits_;
    }
    return Outcome::kCreated;
  } catch (const pqxx::serialization_failure&) {
    return Outcome::kConflict;
  }
}

}  // namespace phasekey::bench
