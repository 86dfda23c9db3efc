// `phasekey keys reconcile`: after a restore to an older point, the
// operations a provider made that the restored database does not know
// (docs/operations.md, "Backup and restore").
//
// The database's half (phasekey/tools/provider_keys.h) gives the provider
// keys of every key that may have called at or after T; the adapter
// (phasekey/phases/provider_adapter.h, BuildList/ParseList) lists the
// provider's operations created at or after T, page by page; an operation
// whose merchant reference is the reference of none of those provider keys
// (ProviderAdapter::ReferenceFor) is reported. Operations without a phasekey
// reference were not made by phasekey (a dashboard charge) and are only
// counted. An adapter without a list is reported as unable to check, never
// as clean.
//
// Exit status: 0 nothing unmatched; 5 unmatched operations listed; 6 the
// provider's adapter cannot list (nothing checked); 1 the database or the
// provider failed; 2 refused input (time, flows file, secret file, URL).
#include <sys/stat.h>
#include <time.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "admin/table.h"
#include "commands.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/http_client.h"
#include "phasekey/tools/provider_keys.h"

namespace phasekey::cli {
namespace {

using Clock = std::chrono::system_clock;
using phases::ProviderAdapter;
using phases::ProviderOperation;

constexpr char kCommand[] = "keys reconcile";
constexpr char kSecretEnv[] = "PHASEKEY_PROVIDER_SECRET";
constexpr int kUnmatched = 5;
constexpr int kCannotList = 6;
constexpr std::chrono::seconds kPageTimeout{30};
constexpr int kMaxPages = 100000;  // 10 million operations at 100 a page

struct ReconcileFlags {
  std::string database_url;
  std::string created_after;
  std::string flows_file;
  std::string provider;
  std::string base_url;
  std::string secret_file;
  std::string stripe_api = "charges";
  int clock_margin_s = 600;
  bool json = false;
};

// T from "2026-12-03T07:00:00Z", "...+01:00" (RFC 3339 without fractions)
// or Unix seconds.
Clock::time_point ParseTime(const std::string& text) {
  if (!text.empty() && text.size() <= 12 && text.find_first_not_of("0123456789") == std::string::npos) {
    return Clock::time_point(std::chrono::seconds(std::stoll(text)));
  }
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S%z", &tm);
  if (end == nullptr || *end != '\0') {
    Fail(kCommand, "--created-after '" + text + "' is not a time like 2026-12-03T07:00:00Z, +01:00, or Unix seconds",
         2);
  }
  const long offset = tm.tm_gmtoff;
  return Clock::from_time_t(::timegm(&tm) - offset);
}

std::string Rfc3339(Clock::time_point at) {
  const std::time_t t = Clock::to_time_t(at);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// The provider's credential: the first line of --secret-file (which only
// its owner may read), else $PHASEKEY_PROVIDER_SECRET, else none. Never
// printed.
std::string Secret(const ReconcileFlags& f) {
  if (f.secret_file.empty()) {
    const char* env = std::getenv(kSecretEnv);
    return env == nullptr ? "" : env;
  }
  struct stat st {};
  if (::stat(f.secret_file.c_str(), &st) != 0) Fail(kCommand, "cannot read --secret-file " + f.secret_file, 2);
  if ((st.st_mode & 077) != 0) {
    Fail(kCommand, "--secret-file " + f.secret_file + " is open to group or others: chmod 600 it", 2);
  }
  std::ifstream in(f.secret_file);
  std::string secret;
  if (!in || !std::getline(in, secret) || secret.empty()) {
    Fail(kCommand, "--secret-file " + f.secret_file + " holds no secret on its first line", 2);
  }
  return secret;
}

// The adapter named --provider: Stripe v1 with the options given; any other
// only for its facts (none of them lists).
std::unique_ptr<ProviderAdapter> MakeAdapter(const ReconcileFlags& f) {
  if (!f.base_url.empty()) {
    if (auto url = phases::ParseBaseUrl(f.base_url); !url) Fail(kCommand, "--base-url: " + url.error().message(), 2);
  }
  if (f.provider == "stripe_v1") {
    phases::StripeOptions o;
    o.base_url = f.base_url;
    o.secret = Secret(f);
    o.api = f.stripe_api == "payment_intents" ? phases::StripeV1Api::kPaymentIntents : phases::StripeV1Api::kCharges;
    return phases::NewStripeV1Adapter(std::move(o));
  }
  for (auto& adapter : phases::NewDefaultAdapters()) {
    if (adapter->name() != f.provider) continue;
    if (adapter->info().has_list) Fail(kCommand, f.provider + " lists, but this command cannot configure it yet", 2);
    return std::move(adapter);
  }
  std::string known;
  for (const auto& adapter : phases::NewDefaultAdapters()) known += (known.empty() ? "" : ", ") + adapter->name();
  Fail(kCommand, "no provider named '" + f.provider + "' (known: " + known + ")", 2);
}

std::vector<nlohmann::json> ReadFlows(const std::string& path) {
  std::ifstream in(path);
  if (!in) Fail(kCommand, "cannot read --flows " + path, 2);
  nlohmann::json parsed = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_array() || parsed.empty()) {
    Fail(kCommand, "--flows " + path + " is not a JSON array of flow descriptions (as `flows describe` writes)", 2);
  }
  return parsed.get<std::vector<nlohmann::json>>();
}

// Every operation the provider lists from `since` on, page by page.
std::vector<ProviderOperation> ListAll(const ProviderAdapter& adapter, Clock::time_point since) {
  const auto client = phases::NewBeastHttpClient();
  std::vector<ProviderOperation> all;
  std::set<std::string> cursors;
  std::string cursor;
  for (int page = 0; page < kMaxPages; ++page) {
    auto request = adapter.BuildList(since, cursor);
    if (!request) Fail(kCommand, request.error().message(), 2);
    auto listed = adapter.ParseList(client->Send(adapter.base_url(), *request, kPageTimeout));
    if (!listed) Fail(kCommand, adapter.name() + ": " + listed.error().message());
    all.insert(all.end(), listed->operations.begin(), listed->operations.end());
    if (listed->next_cursor.empty()) return all;
    if (!cursors.insert(listed->next_cursor).second) {
      Fail(kCommand, adapter.name() + ": the list came back to " + listed->next_cursor + ": not trusted");
    }
    cursor = listed->next_cursor;
  }
  Fail(kCommand, adapter.name() + ": more than " + std::to_string(kMaxPages) + " pages: pick a later --created-after");
}

struct Report {
  nlohmann::json unmatched = nlohmann::json::array();
  std::int64_t listed = 0;
  std::int64_t without_reference = 0;
};

Report Match(const ProviderAdapter& adapter, const ProviderKeyInventory& known,
             const std::vector<ProviderOperation>& operations, Clock::time_point since) {
  std::set<std::string> references;
  for (const KeyProviderKeys& key : known.keys) {
    for (const std::string& provider_key : key.provider_keys) references.insert(adapter.ReferenceFor(provider_key));
  }
  const auto since_s = std::chrono::duration_cast<std::chrono::seconds>(since.time_since_epoch()).count();
  Report r;
  for (const ProviderOperation& op : operations) {
    if (op.created < since_s) continue;  // a list's bound is the provider's; ours is exact
    ++r.listed;
    if (op.reference.empty()) {
      ++r.without_reference;
      continue;
    }
    if (references.contains(op.reference)) continue;
    r.unmatched.push_back({{"provider_id", op.id},
                           {"amount", op.amount},
                           {"currency", op.currency},
                           {"status", op.status},
                           {"created", Rfc3339(Clock::from_time_t(op.created))},
                           {"reference", op.reference},
                           {"order_reference", op.order_reference}});
  }
  return r;
}

void PrintText(const std::string& provider, const ReconcileFlags& f, Clock::time_point since, std::size_t keys,
               const ProviderKeyInventory& known, const Report& r) {
  std::cout << provider << ": " << r.listed << " operations created at or after " << Rfc3339(since)
            << "; matched against the provider keys of " << keys << " key rows (unfinished, or finished at or after "
            << Rfc3339(since - std::chrono::seconds(f.clock_margin_s)) << ")\n";
  if (r.without_reference > 0) {
    std::cout << "not made by phasekey (no phasekey reference): " << r.without_reference << "\n";
  }
  for (const auto& [flow, count] : known.undescribed) {
    std::cout << "warning: " << count << " key rows of flow '" << flow
              << "', which --flows does not describe: their operations are reported as unmatched\n";
  }
  std::cout << "unmatched (operations at the provider that no key row of this database made): "
            << (r.unmatched.empty() ? "none" : std::to_string(r.unmatched.size())) << "\n";
  if (!r.unmatched.empty()) {
    std::cout << admin::FormatTable(
        r.unmatched, {"provider_id", "amount", "currency", "status", "created", "reference", "order_reference"});
  }
}

void CannotList(const ProviderAdapter& adapter, bool json) {
  const std::string why = adapter.name() + " cannot list its operations by time (no list API in this adapter): " +
                          "nothing was checked; reconcile by hand at the provider (docs/operations.md)";
  if (json) {
    std::cout << nlohmann::json({{"provider", adapter.name()}, {"can_list", false}, {"message", why}}).dump(2) << "\n";
  } else {
    std::cout << why << "\n";
  }
  std::cout.flush();
  throw CLI::RuntimeError(kCannotList);
}

void RunReconcile(const ReconcileFlags& f) {
  const Clock::time_point created_after = ParseTime(f.created_after);
  const std::unique_ptr<ProviderAdapter> adapter = MakeAdapter(f);
  if (!adapter->info().has_list) CannotList(*adapter, f.json);
  std::string url = f.database_url;
  if (url.empty() && std::getenv("DATABASE_URL") != nullptr) url = std::getenv("DATABASE_URL");
  if (url.empty()) Fail(kCommand, "no database: pass --database-url or set DATABASE_URL");
  const Clock::time_point keys_since = created_after - std::chrono::seconds(f.clock_margin_s);
  auto known = ProviderKeysSince(url, keys_since, ReadFlows(f.flows_file));
  if (!known) {
    Fail(kCommand, known.error().ToString(), known.error().code() == StatusCode::kInvalidArgument ? 2 : 1);
  }
  const Report r = Match(*adapter, *known, ListAll(*adapter, created_after), created_after);
  if (f.json) {
    std::cout << nlohmann::json({{"provider", adapter->name()},
                                 {"can_list", true},
                                 {"created_after", Rfc3339(created_after)},
                                 {"keys_since", Rfc3339(keys_since)},
                                 {"key_rows", known->keys.size()},
                                 {"operations", r.listed},
                                 {"without_reference", r.without_reference},
                                 {"undescribed_flows", known->undescribed},
                                 {"unmatched", r.unmatched}})
                     .dump(2)
              << "\n";
  } else {
    PrintText(adapter->name(), f, created_after, known->keys.size(), *known, r);
  }
  std::cout.flush();
  if (!r.unmatched.empty()) throw CLI::RuntimeError(kUnmatched);
}

}  // namespace

void RegisterReconcileCommand(CLI::App& keys) {
  auto f = std::make_shared<ReconcileFlags>();
  CLI::App* cmd = keys.add_subcommand(
      "reconcile",
      "after a restore: list the provider's operations since T that no key row of this database made (exit 5 if any)");
  cmd->add_option("--database-url", f->database_url, "PostgreSQL URL (default: $DATABASE_URL)");
  cmd->add_option("--created-after", f->created_after,
                  "T: the restore point or earlier, as 2026-12-03T07:00:00Z (or +01:00) or Unix seconds")
      ->required();
  cmd->add_option("--flows", f->flows_file,
                  "the flows whose keys to match, as `<binary> flows describe` writes them (their foreign phases name "
                  "the provider keys)")
      ->required();
  cmd->add_option("--provider", f->provider, "the adapter to ask (`phasekey providers`; stripe_v1 can list)")
      ->required();
  cmd->add_option("--base-url", f->base_url, "the provider's base URL (default: its production URL)");
  cmd->add_option("--secret-file", f->secret_file,
                  "file (mode 0600) whose first line is the provider's API secret (default: $PHASEKEY_PROVIDER_SECRET; "
                  "never on the command line)");
  cmd->add_option("--stripe-api", f->stripe_api, "stripe_v1 only: list charges or payment_intents")
      ->capture_default_str()
      ->check(CLI::IsMember({"charges", "payment_intents"}));
  cmd->add_option("--clock-margin-s", f->clock_margin_s,
                  "how far the database's and the provider's clocks may disagree: keys finished up to this long "
                  "before T are matched too")
      ->capture_default_str()
      ->check(CLI::Range(0, 7 * 24 * 3600));
  cmd->add_flag("--json", f->json, "JSON instead of a table");
  cmd->footer(
      "Exit status: 0 nothing unmatched; 5 unmatched operations (listed); 6 the adapter cannot list, nothing "
      "checked; 1 the database or the provider failed; 2 refused input. docs/operations.md, \"Backup and restore\".");
  cmd->callback([f] { RunReconcile(*f); });
}

}  // namespace phasekey::cli
