// The context handed to phases: the request, the key's identity, recorded
// outcomes, and (atomic phases) the open transaction, reached through the
// key store's transaction so BEGIN is sent only when a statement needs it.
#ifndef PHASEKEY_SRC_RUNNER_PHASE_CONTEXT_H_
#define PHASEKEY_SRC_RUNNER_PHASE_CONTEXT_H_

#include <stdexcept>
#include <string>
#include <utility>

#include "phasekey/flow.h"
#include "runner/key_store.h"
#include "util/planted_bug.h"

namespace phasekey::runner {

class PhaseContextImpl final : public AtomicContext {
 public:
  PhaseContextImpl(const std::string& account, const std::string& key, const nlohmann::json& request,
                   const std::string& phase, const std::string& stable_id, const nlohmann::json& outcomes, int attempts,
                   std::chrono::seconds key_age, int bucket, KeyTx* keys, SendPolicy policy = SendPolicy::kSend,
                   std::chrono::seconds first_attempt_age = std::chrono::seconds(0))
      : account_(account),
        key_(key),
        request_(request),
        phase_(phase),
        stable_id_(stable_id),
        outcomes_(outcomes),
        attempts_(attempts),
        key_age_(key_age),
        bucket_(bucket),
        keys_(keys),
        policy_(policy),
        first_attempt_age_(first_attempt_age) {}

  const std::string& account() const override { return account_; }
  const std::string& idempotency_key() const override { return key_; }
  const nlohmann::json& request() const override { return request_; }
  const std::string& phase() const override { return phase_; }
  std::string ProviderKey() const override {
    // The planted bug new_provider_key (util/planted_bug.h): a retry is a new operation to the provider.
    if (PlantedBug("new_provider_key")) {
      const int again = PlantedBugRepeats(stable_id_ + ":" + phase_);
      if (attempts_ > 1 || again > 0) return stable_id_ + ":" + phase_ + "-" + std::to_string(attempts_ + again);
    }
    return stable_id_ + ":" + phase_;
  }
  const nlohmann::json& Outcome(RecoveryPoint reached) const override {
    static const nlohmann::json kNull;
    auto it = outcomes_.find(std::string(reached.name()));
    return it == outcomes_.end() ? kNull : *it;
  }
  int attempts() const override { return attempts_; }
  std::chrono::seconds key_age() const override { return key_age_; }
  SendPolicy send_policy() const override { return policy_; }
  std::chrono::seconds first_attempt_age() const override { return first_attempt_age_; }
  int bucket() const override { return bucket_; }
  std::string traceparent() const override { return traceparent_; }
  void set_traceparent(std::string traceparent) { traceparent_ = std::move(traceparent); }
  // Throws std::logic_error without a transaction (a foreign phase, or a
  // key store without a database); a phase's throw is an unclassified failure.
  pqxx::transaction_base& tx() override {
    pqxx::transaction_base* tx = keys_ == nullptr ? nullptr : keys_->phase_tx();
    if (tx == nullptr) throw std::logic_error("phase '" + phase_ + "' has no database transaction");
    return *tx;
  }

 protected:
  void QueueAtCommit(std::string_view sql, std::vector<std::optional<std::string>> params) override {
    if (keys_ == nullptr) throw std::logic_error("phase '" + phase_ + "' has no database transaction");
    keys_->QueuePhaseStatement(sql, params);
  }

 private:
  const std::string& account_;
  const std::string& key_;
  const nlohmann::json& request_;
  const std::string& phase_;
  const std::string& stable_id_;
  const nlohmann::json& outcomes_;
  const int attempts_;
  const std::chrono::seconds key_age_;
  const int bucket_;
  KeyTx* keys_;  // nullptr: a foreign phase
  const SendPolicy policy_;
  const std::chrono::seconds first_attempt_age_;
  std::string traceparent_;
};

}  // namespace phasekey::runner

#endif  // PHASEKEY_SRC_RUNNER_PHASE_CONTEXT_H_
