// The ride flow without phasekey, on raw libpqxx: the baselines of the
// durability family. Both issue the business statements of
// tests/support/ride_flow.cc's flow, on one connection of their own.
//
//   RawRide    two transactions, as phasekey commits: INSERT the ride;
//              charge; UPDATE the ride and INSERT the staged job. No key
//              table at all: what the business work costs by itself.
//   LeachRide  Brandur Leach's design (rocket-rides-atomic): a key row in
//              its own table and four SERIALIZABLE transactions: upsert and
//              lock the key; INSERT the ride and move to ride_created;
//              charge inside the transaction, UPDATE the ride and move to
//              charge_created; INSERT the staged job and store the response.
//              A serialization failure is answered 409, as Leach does.
//
// Thread-safety: one object per client thread.
#ifndef PHASEKEY_BENCH_SUPPORT_RAW_RIDE_H_
#define PHASEKEY_BENCH_SUPPORT_RAW_RIDE_H_

#include <memory>
#include <pqxx/connection>
#include <string>

#include "support/bench_flows.h"

namespace phasekey::bench {

// Creates Leach's key table (leach_keys) in the database at `url`.
void CreateLeachTables(const std::string& url);

class RawRide {
 public:
  RawRide(const std::string& url, TestGateway* gateway);
  // Runs one ride request; returns the 201 body. Throws pqxx exceptions.
  std::string Run(const std::string& account, const std::string& key, const std::string& body);
  // Durable commits so far.
  long commits() const { return commits_; }

 private:
  pqxx::connection conn_;
  TestGateway* gateway_;
  long commits_ = 0;
};

class LeachRide {
 public:
  enum class Outcome { kCreated, kConflict, kReplayed, kError };
  LeachRide(const std::string& url, TestGateway* gateway);
  // Runs one ride request through Leach's four phases.
  Outcome Run(const std::string& account, const std::string& key, const std::string& body);
  long commits() const { return commits_; }

 private:
  pqxx::connection conn_;
  TestGateway* gateway_;
  long commits_ = 0;
};

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_RAW_RIDE_H_
