// EraseAccount and RotateKeyEncryptionKey (phasekey/data_protection.h):
// operator actions on one connection each, audited in their own
// transactions.
#include "phasekey/data_protection.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <pqxx/pqxx>

#include "pg/operator_support.h"
#include "pg/statements.h"
#include "pg/with_connection.h"
#include "phasekey/runner.h"
#include "seal/sealer.h"
#include "sql/sql_catalog.h"
#include "util/hex.h"

namespace phasekey {
namespace {

// Data keys re-wrapped per transaction.
constexpr int kRotationBatch = 500;

void Audit(pqxx::transaction_base& tx, const std::string& actor, const std::string& action, const std::string& account,
           const std::string& outcome) {
  pg::Exec0(tx, sql::q::AdminAuditInsert, actor, action, account, "*", true, outcome);
}

}  // namespace

Result<ErasureReport> EraseAccount(const DatabaseOptions& database, const std::string& account,
                                   const std::string& actor) {
  if (account.empty()) return Status::InvalidArgument("erase: the account is empty");
  if (std::string why = pg::ActorProblem(actor); !why.empty()) return Status::InvalidArgument(why);
  ErasureReport report;
  Status s = pg::WithConnection(database.url, [&](pqxx::connection& c) {
    pqxx::work tx(c);
    Status bad;
    const int bucket = pg::BucketOf(tx, 0, account, &bad);  // 0: the deployment's count, never refused
    report.keys_stopped = pg::Exec(tx, sql::q::EraseParkUnfinished, bucket, account).size();
    report.keys_erased = pg::Exec(tx, sql::q::EraseKeyBodies, bucket, account).size();
    report.data_keys_destroyed = pg::Exec(tx, sql::q::EraseDataKeys, bucket, account).size();
    Audit(tx, actor, "erase", account,
          fmt::format("data keys destroyed {}, keys erased {}, unfinished keys parked {}", report.data_keys_destroyed,
                      report.keys_erased, report.keys_stopped));
    tx.commit();
  });
  if (!s.ok()) return s;
  return report;
}

Result<RotationReport> RotateKeyEncryptionKey(const DatabaseOptions& database, const EncryptionOptions& encryption,
                                              const std::string& actor) {
  if (!encryption.enabled()) return Status::InvalidArgument("rotate-kek: no key-encryption keys given");
  if (std::string why = pg::ActorProblem(actor); !why.empty()) return Status::InvalidArgument(why);
  auto ring = seal::LoadKeyring(encryption);
  if (!ring) return ring.error();
  seal::Sealer sealer(*ring, encryption.data_key_cache);
  const seal::Key& current = *ring->Find(ring->current);
  RotationReport report;
  report.current_kek = ring->current;
  Status problem;
  Status s = pg::WithConnection(database.url, [&](pqxx::connection& c) {
    const pg::ScopedStatementMode unprepared(pg::StatementMode::kUnprepared);  // the sealer's queries
    {
      pqxx::work tx(c);
      if (problem = sealer.Verify(tx); !problem.ok()) return;
      tx.commit();
    }
    for (bool more = true; more;) {
      pqxx::work tx(c);
      pqxx::result batch = pg::Exec(tx, sql::q::RotateNextDataKeys, ring->current, kRotationBatch);
      for (const auto& row : batch) {
        const int bucket = row[0].as<int>();
        const std::string account = row[2].as<std::string>(), kek_id = row[3].as<std::string>();
        const seal::Key* old = ring->Find(kek_id);
        auto key = old ? sealer.Unwrap(*old, bucket, account, util::HexDecode(row[4].as<std::string>())) : std::nullopt;
        if (!key) {
          problem = Status::FailedPrecondition(
              fmt::format("data key {} of bucket {} is wrapped by key-encryption key '{}', which the given keys {}",
                          row[1].c_str(), bucket, kek_id, old ? "do not open it with" : "do not include"));
          return;  // this batch is rolled back; earlier ones stay re-wrapped
        }
        pg::Exec0(tx, sql::q::RotateRewrap, bucket, row[1].as<std::int64_t>(), ring->current,
                  util::HexEncode(sealer.Wrap(current, bucket, account, *key)));
      }
      report.rewrapped += batch.size();
      more = batch.size() == static_cast<std::size_t>(kRotationBatch);
      tx.commit();
    }
    pqxx::work tx(c);
    for (const auto& row : pg::Exec(tx, sql::q::RotateForgetKeks, ring->current)) {
      report.retired_keks.push_back(row[0].as<std::string>());
    }
    Audit(tx, actor, "rotate_kek", "*",
          fmt::format("current {}, data keys re-wrapped {}, retired [{}]", report.current_kek, report.rewrapped,
                      fmt::join(report.retired_keks, ", ")));
    tx.commit();
  });
  if (!s.ok()) return s;
  if (!problem.ok()) return problem;
  return report;
}

}  // namespace phasekey
