#include "chaos/history.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <pqxx/pqxx>

#include "chaos/client.h"

namespace ride_booking {
namespace {

namespace fs = std::filesystem;
using phasekey::Result;
using phasekey::Status;

std::string Hex(const unsigned char* data, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[data[i] >> 4]);
    out.push_back(kDigits[data[i] & 0xf]);
  }
  return out;
}

// Writes one JSON line per row of `rows` to `path`, by `to_json`.
template <typename F>
Status WriteRows(const std::string& path, const pqxx::result& rows, F to_json) {
  std::ofstream out(path, std::ios::trunc);
  for (const auto& row : rows) out << to_json(row).dump() << '\n';
  out.close();
  if (!out) return Status::FailedPrecondition("cannot write " + path);
  return Status::OK();
}

nlohmann::json NullOr(const pqxx::field& f) {
  if (f.is_null()) return nullptr;
  return f.as<std::string>();
}

}  // namespace

double ChaosHistoryNowMs() {
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch());
  return static_cast<double>(us.count()) / 1000.0;
}

std::string ChaosSha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &n, EVP_sha256(), nullptr) != 1) return "";
  return Hex(digest, n);
}

std::string ChaosPlantedBug() {
  const char* bug = std::getenv("PHASEKEY_PLANTED_BUG");
  return bug != nullptr ? bug : "";
}

Result<std::unique_ptr<ChaosHistory>> ChaosHistory::Open(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::FailedPrecondition("cannot create the history folder " + dir + ": " + ec.message());
  // The history holds keys, request fingerprints and the final key rows:
  // the folder is the owner's alone (0700), the history 0600.
  fs::permissions(dir, fs::perms::owner_all, ec);
  if (ec) return Status::FailedPrecondition("cannot make " + dir + " private: " + ec.message());
  const int fd = ::open((fs::path(dir) / "history.jsonl").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  std::FILE* file = fd < 0 ? nullptr : ::fdopen(fd, "w");
  if (file == nullptr && fd >= 0) ::close(fd);
  if (file == nullptr) return Status::FailedPrecondition("cannot write " + dir + "/history.jsonl");
  return std::unique_ptr<ChaosHistory>(new ChaosHistory(dir, file));
}

ChaosHistory::~ChaosHistory() { std::fclose(file_); }

void ChaosHistory::Write(const nlohmann::json& event) {
  const std::string line = event.dump() + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

void ChaosHistory::Fault(const std::string& kind, const std::string& process, const std::string& detail) {
  Write({{"type", "fault"}, {"kind", kind}, {"process", process}, {"at_ms", ChaosHistoryNowMs()}, {"detail", detail}});
}

Status ChaosHistory::DumpRows(const std::string& db_url, const std::string& first_key, bool sealed) const {
  const ChaosRunKeyBounds b = ChaosBoundsOf(first_key);
  try {
    pqxx::connection conn(db_url);
    pqxx::work tx(conn);
    const pqxx::result keys = tx.exec_params(
        std::string("SELECT idempotency_key, account, stable_id::text, state::text, recovery_point, attempts, "
                    "response_status, response_body, encode(request_fingerprint, 'hex') "
                    "FROM phasekey.idempotency_keys WHERE ") +
            kChaosRunKeys + " ORDER BY id",
        b.from, b.to, b.booking_from, b.booking_to);
    Status s = WriteRows(dir_ + "/keys.jsonl", keys, [sealed](const pqxx::row& r) {
      nlohmann::json body = nullptr;
      if (!r[7].is_null() && !sealed) {
        const pqxx::binarystring bytes(r[7]);
        body = ChaosSha256Hex(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
      }
      return nlohmann::json{
          {"key", r[0].as<std::string>()},
          {"account", r[1].as<std::string>()},
          {"stable_id", r[2].as<std::string>()},
          {"state", r[3].as<std::string>()},
          {"recovery_point", r[4].as<std::string>()},
          {"attempts", r[5].as<long long>()},
          {"response_status", r[6].is_null() ? nlohmann::json(nullptr) : nlohmann::json(r[6].as<int>())},
          {"response_sha256", body},
          {"fingerprint", NullOr(r[8])}};
    });
    if (!s.ok()) return s;
    const pqxx::result rides =
        tx.exec_params(std::string("SELECT idempotency_key, user_id, charge_id, id FROM rides WHERE ") + kChaosRunKeys +
                           " ORDER BY id",
                       b.from, b.to, b.booking_from, b.booking_to);
    s = WriteRows(dir_ + "/rides.jsonl", rides, [](const pqxx::row& r) {
      return nlohmann::json{{"key", r[0].as<std::string>()},
                            {"user_id", r[1].as<long long>()},
                            {"charge_id", NullOr(r[2])},
                            {"ride_id", r[3].as<long long>()}};
    });
    if (!s.ok()) return s;
    // The receipts sent so far (an email to the rider: an external effect
    // too), for the run's rides.
    const pqxx::result receipts = tx.exec_params(
        std::string("SELECT rc.job_id, rc.ride_id, rc.charge_id FROM receipts rc JOIN rides ON rides.id = rc.ride_id "
                    "WHERE ") +
            kChaosRunKeys + " ORDER BY rc.job_id",
        b.from, b.to, b.booking_from, b.booking_to);
    return WriteRows(dir_ + "/receipts.jsonl", receipts, [](const pqxx::row& r) {
      return nlohmann::json{
          {"job_id", r[0].as<long long>()}, {"ride_id", r[1].as<long long>()}, {"charge_id", r[2].as<std::string>()}};
    });
  } catch (const std::exception& e) {
    return Status::FailedPrecondition(std::string("dumping the run's rows: ") + e.what());
  }
}

Status ChaosHistory::Finish(const std::string& db_url, const std::string& first_key, bool sealed,
                            const std::string& ledger, const std::string& gateway_dir) {
  Write({{"type", "end"}, {"at_ms", ChaosHistoryNowMs()}});
  if (Status s = DumpRows(db_url, first_key, sealed); !s.ok()) return s;
  if (Status s = WriteFile("ledger.json", ledger); !s.ok()) return s;
  if (Status s = CopyGatewayFiles(gateway_dir); !s.ok()) return s;
  std::fprintf(stderr, "chaos: history in %s\n", dir_.c_str());
  return Status::OK();
}

Status ChaosHistory::WriteFile(const std::string& name, const std::string& text) const {
  std::ofstream out(dir_ + "/" + name, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Status::FailedPrecondition("cannot write " + dir_ + "/" + name);
  return Status::OK();
}

Status ChaosHistory::CopyGatewayFiles(const std::string& gateway_dir) const {
  for (const auto& [from, to] :
       {std::pair{"ledger.jsonl", "gateway-ledger.jsonl"}, std::pair{"operations.jsonl", "gateway-operations.jsonl"}}) {
    std::error_code ec;
    fs::copy_file(fs::path(gateway_dir) / from, fs::path(dir_) / to, fs::copy_options::overwrite_existing, ec);
    if (ec) return Status::FailedPrecondition(std::string("copying the gateway's ") + from + ": " + ec.message());
  }
  return Status::OK();
}

}  // namespace ride_booking
