#include "ride_store.h"

#include <pqxx/pqxx>

#include "phasekey/migrate.h"

namespace ride_booking {

extern const phasekey::SqlFile kRideBookingMigrations[];
extern const std::size_t kRideBookingMigrations_count;

namespace {

std::string WithConnectTimeout(const std::string& url) {
  if (url.find("connect_timeout") != std::string::npos) return url;
  if (url.rfind("postgres", 0) == 0)
    return url + (url.find('?') == std::string::npos ? "?" : "&") + "connect_timeout=5";
  return url + " connect_timeout=5";
}

}  // namespace

template <class F>
phasekey::Status RideStore::WithConnection(F&& f) {
  std::unique_ptr<pqxx::connection> conn;
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      conn = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  try {
    if (conn == nullptr) conn = std::make_unique<pqxx::connection>(WithConnectTimeout(url_));
    f(*conn);
  } catch (const std::exception& e) {
    // This connection is dropped. The idle ones too: they most likely went to
    // the same server, gone or (after a failover) read-only.
    std::vector<std::unique_ptr<pqxx::connection>> stale;
    {
      std::lock_guard lock(mu_);
      stale.swap(idle_);
    }
    return phasekey::Status::Retryable(std::string("database: ") + e.what());
  }
  std::lock_guard lock(mu_);
  if (idle_.size() < 8) idle_.push_back(std::move(conn));
  return phasekey::Status::OK();
}

phasekey::Status RideStore::Migrate() {
  auto engine = phasekey::Migrate(url_, phasekey::EngineMigrations());
  if (!engine) return engine.error();
  auto set = phasekey::MigrationSetFromFiles(
      "ride_booking", std::span<const phasekey::SqlFile>(kRideBookingMigrations, kRideBookingMigrations_count));
  if (!set) return set.error();
  auto app = phasekey::Migrate(url_, *set);
  return app ? phasekey::Status::OK() : app.error();
}

phasekey::Result<std::map<std::string, long long>> RideStore::EnsureDemoUsers() {
  std::map<std::string, long long> tokens;
  phasekey::Status s = WithConnection([&](pqxx::connection& c) {
    pqxx::work tx(c);
    tx.exec_params0(
        "INSERT INTO users (id, email, api_token, customer_id) "
        "SELECT i, 'user' || i || '@example.com', 'tok_user_' || i, i::text FROM generate_series(1, $1) AS i "
        "ON CONFLICT (id) DO NOTHING",
        kDemoUsers);
    for (const auto& row : tx.exec("SELECT api_token, id FROM users")) {
      tokens[row[0].as<std::string>()] = row[1].as<long long>();
    }
    tx.commit();
  });
  if (!s.ok()) return s;
  return tokens;
}

phasekey::Result<nlohmann::json> RideStore::ListRides(long long user_id) {
  nlohmann::json rides = nlohmann::json::array();
  phasekey::Status s = WithConnection([&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    for (const auto& r :
         tx.exec_params("SELECT id, charge_id, created_at::text, origin_lat, origin_lon, target_lat, target_lon "
                        "FROM rides WHERE user_id = $1 ORDER BY id DESC",
                        user_id)) {
      rides.push_back({{"id", r[0].as<long long>()},
                       {"charge_id", r[1].is_null() ? nlohmann::json(nullptr) : nlohmann::json(r[1].as<std::string>())},
                       {"created_at", r[2].as<std::string>()},
                       {"origin_lat", r[3].as<double>()},
                       {"origin_lon", r[4].as<double>()},
                       {"target_lat", r[5].as<double>()},
                       {"target_lon", r[6].as<double>()}});
    }
  });
  if (!s.ok()) return s;
  return rides;
}

phasekey::Status RideStore::InsertReceipts(const std::vector<nlohmann::json>& receipts) {
  return WithConnection([&](pqxx::connection& c) {
    pqxx::work tx(c);
    for (const auto& r : receipts) {
      const bool sent = !tx.exec_params(
                               "INSERT INTO receipts (job_id, user_id, ride_id, charge_id, amount, currency) "
                               "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (job_id) DO NOTHING RETURNING job_id",
                               r.at("job_id").get<long long>(), r.at("user_id").get<long long>(),
                               r.at("ride_id").get<long long>(), r.at("charge_id").get<std::string>(),
                               r.at("amount").get<long long>(), r.at("currency").get<std::string>())
                             .empty();
      tx.exec_params0("INSERT INTO receipt_deliveries (job_id, ride_id, sent) VALUES ($1, $2, $3)",
                      r.at("job_id").get<long long>(), r.at("ride_id").get<long long>(), sent);
    }
    tx.commit();
  });
}

phasekey::Status RideStore::Ping() {
  return WithConnection([](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    tx.exec1("SELECT 1");
  });
}

}  // namespace ride_booking
