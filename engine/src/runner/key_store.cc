#include "runner/key_store.h"

#include "runner/hex.h"

namespace phasekey::runner {
namespace {

nlohmann::json HeadersToJson(const Response& r) {
  nlohmann::json h = nlohmann::json::array();
  for (const auto& [name, value] : r.headers) h.push_back({name, value});
  return h;
}

Response ResponseFromRow(int status, const std::string& headers_json, const std::string& body_hex) {
  Response r;
  r.status = status;
  for (const auto& pair : nlohmann::json::parse(headers_json)) {
    r.headers.emplace_back(pair.at(0).get<std::string>(), pair.at(1).get<std::string>());
  }
  r.body = HexDecode(body_hex);
  return r;
}

bool Matched(const pqxx::result& r) { return r.size() == 1; }

}  // namespace

std::optional<ClaimedRow> KeyClaim(pqxx::work& tx, const ClaimParams& p) {
  pqxx::result r = tx.exec_prepared("KeyClaim", p.account, p.idempotency_key, p.bucket, p.flow, p.method, p.path,
                                    p.canonical_body, p.fingerprint_hex, p.owner_token,
                                    static_cast<long long>(p.lease.count()));
  if (r.empty()) return std::nullopt;
  ClaimedRow row;
  row.id = r[0][0].as<std::int64_t>();
  row.stable_id = r[0][1].as<std::string>();
  row.attempts = r[0][2].as<int>();
  row.outcomes = nlohmann::json::parse(r[0][3].as<std::string>());
  row.age_s = r[0][4].as<std::int64_t>();
  return row;
}

static std::optional<ExistingRow> ParseExisting(const pqxx::result& r) {
  if (r.empty()) return std::nullopt;
  const pqxx::row& f = r[0];
  ExistingRow row;
  row.id = f[0].as<std::int64_t>();
  row.stable_id = f[1].as<std::string>();
  row.flow = f[2].as<std::string>();
  row.method = f[3].as<std::string>();
  row.path = f[4].as<std::string>();
  row.fingerprint_hex = f[5].as<std::string>();
  row.state = f[6].as<std::string>();
  row.recovery_point = f[7].as<std::string>();
  if (!f[8].is_null()) row.owner_token = f[8].as<std::string>();
  row.leased = f[9].as<bool>();
  row.retry_after_s = f[10].is_null() ? 1 : f[10].as<int>();
  row.attempts = f[11].as<int>();
  if (!f[12].is_null()) row.response = ResponseFromRow(f[12].as<int>(), f[13].as<std::string>(), f[14].as<std::string>());
  row.outcomes = nlohmann::json::parse(f[15].as<std::string>());
  row.canonical_body = f[16].as<std::string>();
  row.age_s = f[17].as<std::int64_t>();
  return row;
}

std::optional<ExistingRow> KeyGet(pqxx::work& tx, int bucket, const std::string& account, const std::string& key) {
  return ParseExisting(tx.exec_prepared("KeyGet", account, key, bucket));
}

std::optional<ExistingRow> KeyGetForUpdate(pqxx::work& tx, int bucket, const std::string& account,
                                          const std::string& key) {
  return ParseExisting(tx.exec_prepared("KeyGetForUpdate", account, key, bucket));
}

std::optional<int> KeyTakeOver(pqxx::work& tx, int bucket, const std::string& account, std::int64_t id,
                               const std::string& owner_token, std::chrono::milliseconds lease) {
  pqxx::result r =
      tx.exec_prepared("KeyTakeOver", account, id, owner_token, static_cast<long long>(lease.count()), bucket);
  if (r.empty()) return std::nullopt;
  return r[0][0].as<int>();
}

bool KeyMove(pqxx::work& tx, const Fence& f, const std::string& next, const nlohmann::json& outcomes,
             std::chrono::milliseconds lease) {
  return Matched(tx.exec_prepared("KeyMove", f.account, f.id, f.owner_token, f.point, next, outcomes.dump(),
                                  static_cast<long long>(lease.count()), f.bucket));
}

bool KeyFinish(pqxx::work& tx, const Fence& f, const nlohmann::json& outcomes, const Response& response,
               const std::optional<std::string>& last_error) {
  return Matched(tx.exec_prepared("KeyFinish", f.account, f.id, f.owner_token, f.point, outcomes.dump(),
                                  response.status, HeadersToJson(response).dump(), HexEncode(response.body),
                                  last_error, f.bucket));
}

bool KeyRelease(pqxx::work& tx, const Fence& f, const std::string& last_error, std::chrono::milliseconds retry_in) {
  return Matched(tx.exec_prepared("KeyRelease", f.account, f.id, f.owner_token, f.point, last_error,
                                  static_cast<long long>(retry_in.count()), f.bucket));
}

bool KeyRenewLease(pqxx::work& tx, const Fence& f, std::chrono::milliseconds lease) {
  return Matched(tx.exec_prepared("KeyRenewLease", f.account, f.id, f.owner_token, f.point,
                                  static_cast<long long>(lease.count()), f.bucket));
}

}  // namespace phasekey::runner
