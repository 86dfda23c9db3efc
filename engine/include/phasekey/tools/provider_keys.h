// The provider keys a database knows it may have sent since a time: the
// database's half of `phasekey keys reconcile` (docs/operations.md, "Backup
// and restore").
//
// After a restore to an older point, a provider may hold operations made
// under keys the restored database no longer has; a client retrying such a
// key makes a new key row, a new provider key, and a second operation. The
// command lists the provider's operations created at or after a time T and
// reports those whose merchant reference matches no provider key of the
// database. Which keys can have called a provider at or after T: every key
// not finished (active, dead, parked for an operator: a foreign phase may
// have run at any time before it stopped) and every key finished at or after
// T (its calls all came before it finished). A key finished earlier made all
// its calls before T. `since` below is T minus a margin for the clocks of the
// database and of the provider, which stamp the two sides.
//
// A key's provider keys are "<stable id>:<phase>" for each foreign phase of
// its flow (PhaseContext::ProviderKey, flow.h); the flows come as
// descriptions (Flow::Describe, with "foreign_phases"), so a binary without
// flows of its own can check another's (`<binary> flows describe`).
//
// Finished keys the reaper deleted are not there: a T older than the reaper's
// retention may report operations of reaped keys (never fewer operations).
#ifndef PHASEKEY_TOOLS_PROVIDER_KEYS_H_
#define PHASEKEY_TOOLS_PROVIDER_KEYS_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "phasekey/status.h"

namespace phasekey {

// One key row and the provider keys its flow's foreign phases send.
struct KeyProviderKeys {
  std::string account;                     // the key's tenant
  std::string idempotency_key;             // the client's key, as stored
  std::string flow;                        // the flow's name the key was claimed for
  std::string stable_id;                   // the row's stable id (a UUID), from which provider keys derive
  std::vector<std::string> provider_keys;  // "<stable id>:<phase>"; empty for a flow without foreign phases
};

// What ProviderKeysSince found.
struct ProviderKeyInventory {
  std::vector<KeyProviderKeys> keys;  // of the described flows, oldest first
  // Keys of flows the descriptions do not name, by flow: their provider
  // keys are unknown, so an operation of theirs would be reported as
  // unmatched. Empty when every key's flow is described.
  std::map<std::string, std::int64_t> undescribed;
};

// The keys that may have called a provider at or after `since` (see the
// file comment), with their provider keys, for the flows `described` (each
// as Flow::Describe writes it: an object with "name" and "foreign_phases").
// InvalidArgument for a malformed or duplicated description (one written
// before descriptions named their foreign phases included); the database's
// error otherwise. Reads every bucket; an operator's check, not for a
// request's path.
Result<ProviderKeyInventory> ProviderKeysSince(const std::string& database_url,
                                               std::chrono::system_clock::time_point since,
                                               const std::vector<nlohmann::json>& described);

}  // namespace phasekey

#endif  // PHASEKEY_TOOLS_PROVIDER_KEYS_H_
