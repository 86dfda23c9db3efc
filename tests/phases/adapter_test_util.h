// Helpers for the adapter tests: canned answers and readers for request
// bodies. Header-only; included by tests/phases/*_test.cc.
#ifndef PHASEKEY_TESTS_PHASES_ADAPTER_TEST_UTIL_H_
#define PHASEKEY_TESTS_PHASES_ADAPTER_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "phasekey/flow.h"
#include "phasekey/phases/provider_adapter.h"

namespace phasekey::phases::testing {

// The provider key phasekey would pass: "<stable uuid>:<phase>".
inline constexpr char kProviderKey[] = "0b6f4c8e-3d2a-4f7b-9c1e-5a8d2e6f1b3c:charge";
// Another key row, same phase.
inline constexpr char kOtherProviderKey[] = "7e1d9a2b-6c4f-4e8a-b3d5-2f9c1a7e4b60:charge";

inline ProviderAnswer Answer(int status, const std::string& body,
                             std::vector<std::pair<std::string, std::string>> headers = {}) {
  ProviderAnswer a;
  a.transport = ProviderAnswer::Transport::kAnswered;
  a.status = status;
  a.body = body;
  a.headers = std::move(headers);
  return a;
}

inline ProviderAnswer Answer(int status, const char* body,
                             std::vector<std::pair<std::string, std::string>> headers = {}) {
  return Answer(status, std::string(body), std::move(headers));
}

inline ProviderAnswer Answer(int status, const nlohmann::json& body,
                             std::vector<std::pair<std::string, std::string>> headers = {}) {
  return Answer(status, body.dump(), std::move(headers));
}

inline ProviderAnswer NotSent() {
  ProviderAnswer a;
  a.transport = ProviderAnswer::Transport::kNotSent;
  a.error = "connect: connection refused";
  return a;
}

inline ProviderAnswer SentNoAnswer() {
  ProviderAnswer a;
  a.transport = ProviderAnswer::Transport::kSentNoAnswer;
  a.error = "read: timed out";
  return a;
}

// Decodes an application/x-www-form-urlencoded body.
inline std::map<std::string, std::string> Form(const std::string& body) {
  auto decode = [](const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size()) {
        out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
        i += 2;
      } else {
        out.push_back(s[i] == '+' ? ' ' : s[i]);
      }
    }
    return out;
  };
  std::map<std::string, std::string> fields;
  std::size_t start = 0;
  while (start <= body.size()) {
    std::size_t end = body.find('&', start);
    if (end == std::string::npos) end = body.size();
    const std::string pair = body.substr(start, end - start);
    const std::size_t eq = pair.find('=');
    if (!pair.empty()) fields[decode(pair.substr(0, eq))] = eq == std::string::npos ? "" : decode(pair.substr(eq + 1));
    start = end + 1;
  }
  return fields;
}

inline nlohmann::json Json(const ProviderRequest& r) { return nlohmann::json::parse(r.body); }

// The header's value, or "<absent>".
inline std::string Header(const ProviderRequest& r, const std::string& name) {
  const std::string* v = r.FindHeader(name);
  return v == nullptr ? "<absent>" : *v;
}

inline std::string KindName(Classification::Kind kind) {
  switch (kind) {
    case Classification::Kind::kSucceeded: return "succeeded";
    case Classification::Kind::kTerminal: return "terminal";
    case Classification::Kind::kRetryable: return "retryable";
    case Classification::Kind::kOutcomeUnknown: return "outcome-unknown";
  }
  return "?";
}

// EXPECT_EQ on the kind with readable names, plus the code/message.
#define EXPECT_KIND(classification, expected)                                                          \
  EXPECT_EQ(::phasekey::phases::testing::KindName((classification).kind),                              \
            ::phasekey::phases::testing::KindName(::phasekey::phases::Classification::Kind::expected)) \
      << "code=" << (classification).code << " message=" << (classification).message

// A PhaseContext with the fields the charge and refund phases read; its
// ProviderKey is kProviderKey.
class FakeContext : public PhaseContext {
 public:
  // first_attempt_age() starts as `key_age`: as if the phase was first
  // attempted when the key was made.
  FakeContext(int attempts, std::chrono::seconds key_age)
      : attempts_(attempts), key_age_(key_age), first_attempt_age_(key_age) {}
  const std::string& account() const override { return account_; }
  const std::string& idempotency_key() const override { return key_; }
  const nlohmann::json& request() const override { return request_; }
  const std::string& phase() const override { return phase_; }
  std::string ProviderKey() const override { return kProviderKey; }
  const nlohmann::json& Outcome(RecoveryPoint) const override { return outcome_; }
  int attempts() const override { return attempts_; }
  std::chrono::seconds key_age() const override { return key_age_; }
  SendPolicy send_policy() const override { return policy_; }
  std::chrono::seconds first_attempt_age() const override { return first_attempt_age_; }

  // What the engine allows this run to send (kSend by default).
  void set_policy(SendPolicy policy) { policy_ = policy; }
  // How long ago the phase may first have been attempted.
  void set_first_attempt_age(std::chrono::seconds age) { first_attempt_age_ = age; }
  // What Outcome() returns for every recovery point (null by default).
  void set_outcome(nlohmann::json outcome) { outcome_ = std::move(outcome); }

 private:
  int attempts_;
  std::chrono::seconds key_age_;
  std::chrono::seconds first_attempt_age_;
  SendPolicy policy_ = SendPolicy::kSend;
  std::string account_ = "user_1", key_ = "client-key-1", phase_ = "charge";
  nlohmann::json request_ = nlohmann::json::object(), outcome_;
};

}  // namespace phasekey::phases::testing

#endif  // PHASEKEY_TESTS_PHASES_ADAPTER_TEST_UTIL_H_
