// `keys`: find, inspect, retry and release keys, one at a time or as a
// batch by filter; erase an account; rotate the key-encryption key
// (phasekey/tools/operator_commands.h).
#include "commands/key_commands.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "admin/key_admin.h"
#include "admin/key_batch.h"
#include "admin/table.h"
#include "commands/command_support.h"
#include "pg/statements.h"
#include "phasekey/data_protection.h"
#include "seal/sealer.h"

namespace phasekey::commands {
namespace {

void AddErase(CLI::App* keys) {
  auto c = std::make_shared<Common>();
  auto account = std::make_shared<std::string>();
  auto yes = std::make_shared<bool>(false);
  auto actor = std::make_shared<std::string>();
  CLI::App* erase = keys->add_subcommand(
      "erase", "erase an account: destroy its data keys and drop every body stored on its keys (audited)");
  AddCommon(erase, c.get(), false);
  erase->add_option("--account", *account, "the account to erase")->required();
  erase->add_flag("--yes", *yes, "do not ask for confirmation");
  AddActor(erase, actor.get());
  erase->callback([c, account, yes, actor] {
    const std::string url = Url(*c, "keys erase");
    if (!*yes) {
      std::cerr << "erase account '" << *account
                << "'? Its data keys are destroyed and every stored body of its keys dropped, for good; its "
                   "unfinished keys are parked for an operator, and a retry of any of its keys is answered 410. "
                   "[y/N] ";
      std::string answer;
      if (!std::getline(std::cin, answer) || (answer != "y" && answer != "yes")) Fail("keys erase", "not confirmed", 4);
    }
    DatabaseOptions database;
    database.url = url;
    const ErasureReport r = Must(EraseAccount(database, *account, ActorOf(*actor).name), "keys erase");
    Print({{"account", *account},
           {"data_keys_destroyed", r.data_keys_destroyed},
           {"keys_erased", r.keys_erased},
           {"keys_stopped", r.keys_stopped}},
          c->json, {});
  });
}

void AddRotateKek(CLI::App* keys) {
  auto c = std::make_shared<Common>();
  auto kek = std::make_shared<EncryptionOptions>();
  auto actor = std::make_shared<std::string>();
  CLI::App* rotate = keys->add_subcommand(
      "rotate-kek", "wrap every data key with the current key-encryption key (the first of the keys given; audited)");
  AddCommon(rotate, c.get(), false);
  AddKek(rotate, kek.get(), true);
  AddActor(rotate, actor.get());
  rotate->callback([c, kek, actor] {
    DatabaseOptions database;
    database.url = Url(*c, "keys rotate-kek");
    // The sealer's named queries run on the rotation's own connection, which
    // prepares nothing.
    pg::ScopedStatementMode unprepared(pg::StatementMode::kUnprepared);
    const RotationReport r = Must(RotateKeyEncryptionKey(database, *kek, ActorOf(*actor).name), "keys rotate-kek");
    Print({{"current_kek", r.current_kek}, {"rewrapped", r.rewrapped}, {"retired_keks", r.retired_keks}}, c->json, {});
  });
}

// The filter flags of `keys list` and of the batch actions, as given.
struct FilterFlags {
  admin::KeyFilter filter;
  std::string state, error_class;
  long long older_than = 0, newer_than = -1;  // -1: not given
};

// Adds the filter flags to `cmd`; with `needs`, each only with that flag.
void AddFilterFlags(CLI::App* cmd, FilterFlags* f, CLI::Option* needs = nullptr) {
  std::vector<CLI::Option*> added = {
      cmd->add_option("--account", f->filter.account, "only this account"),
      cmd->add_option("--flow", f->filter.flow, "only this flow"),
      cmd->add_option("--state", f->state,
                      "only keys in this state: active (in progress), finished, dead (given up) or needs_operator "
                      "(parked: a provider may hold an effect nobody could verify)"),
      cmd->add_option("--recovery-point", f->filter.recovery_point, "only keys at this recovery point"),
      cmd->add_option("--error-class", f->error_class,
                      "only keys whose last error is of this class: retryable, outcome_unknown, terminal, "
                      "needs_operator, not_taken, unclassified, lookup_required, given_up, stranded, retired_point, "
                      "erased (docs/operations.md)"),
      cmd->add_flag("--stuck", f->filter.stuck, "only active keys with an expired lease or attempts piling up"),
      cmd->add_option("--older-than", f->older_than, "only keys created at least this many seconds ago")
          ->check(CLI::NonNegativeNumber),
      cmd->add_option("--newer-than", f->newer_than, "only keys created less than this many seconds ago")
          ->check(CLI::NonNegativeNumber)};
  if (needs != nullptr) {
    for (CLI::Option* o : added) o->needs(needs);
  }
}

// The filter the flags give; fails the command in one line (exit 2) for an
// unknown state or error class, or ages no key can have.
admin::KeyFilter FilterOf(const FilterFlags& f, const std::string& command) {
  admin::KeyFilter out = f.filter;
  if (!f.state.empty()) out.state = f.state;
  if (!f.error_class.empty()) out.error_class = f.error_class;
  out.older_than = std::chrono::seconds(f.older_than);
  if (f.newer_than >= 0) out.newer_than = std::chrono::seconds(f.newer_than);
  if (std::string why = admin::FilterProblem(out); !why.empty()) Fail(command, why, 2);
  return out;
}

void AddList(CLI::App* keys) {
  auto c = std::make_shared<Common>();
  auto flags = std::make_shared<FilterFlags>();
  CLI::App* list = keys->add_subcommand("list",
                                        "keys, oldest first, by flow, state, recovery point, error class, "
                                        "age and account");
  AddCommon(list, c.get(), false);
  AddFilterFlags(list, flags.get());
  list->add_option("--limit", flags->filter.limit, "at most this many")->check(CLI::Range(1, 100000));
  list->callback([c, flags] {
    const admin::KeyFilter filter = FilterOf(*flags, "keys list");
    Print(Must(admin::AdminKeysList(Url(*c, "keys list"), filter), "keys list"), c->json,
          {"account", "key", "flow", "state", "recovery_point", "attempts", "leased", "lease_expired", "age_s",
           "error_class", "last_error"});
  });
}

// What `--all-matching` adds to keys retry and keys release.
struct BatchFlags {
  bool all_matching = false, dry_run = false;
  long long confirm_count = -1;  // -1: not given, a dry run
  FilterFlags filter;
};

// Adds --all-matching, the filters, --dry-run and --confirm-count.
CLI::Option* AddBatchFlags(CLI::App* cmd, BatchFlags* b, const std::string& what) {
  CLI::Option* all = cmd->add_flag("--all-matching", b->all_matching,
                                   "instead of ACCOUNT KEY: every key the filters match that " + what +
                                       "; prints how many first (a dry run) unless --confirm-count");
  AddFilterFlags(cmd, &b->filter, all);
  CLI::Option* dry =
      cmd->add_flag("--dry-run", b->dry_run, "only count the keys (the default without --confirm-count)");
  dry->needs(all);
  cmd->add_option("--confirm-count", b->confirm_count,
                  "act, if exactly this many keys match when it runs (the count the dry run printed); otherwise "
                  "nothing is done (exit 4)")
      ->check(CLI::NonNegativeNumber)
      ->needs(all)
      ->excludes(dry);
  return all;
}

// The batch of keys retry/release --all-matching: a dry run, or the action
// confirmed with its count. `done` says what was done to N keys.
void RunBatch(const std::string& command, const Common& c, const BatchFlags& flags, admin::Batch batch,
              const std::string& actor, const std::string& done) {
  batch.filter = FilterOf(flags.filter, command);
  if (std::string why = admin::BatchProblem(batch); !why.empty()) Fail(command, why, 2);
  const std::string url = Url(c, command);
  nlohmann::json out = {{"action", admin::BatchActionName(batch.action)}, {"filter", admin::FilterJson(batch.filter)}};
  if (flags.confirm_count < 0) {
    const long long n = Must(admin::AdminBatchCount(url, c.buckets, batch), command);
    out["dry_run"] = true;
    out["matching"] = n;
    out["max_batch"] = admin::kMaxBatchKeys;
    if (c.json) {
      std::cout << out.dump(2) << "\n";
    } else if (n == 0) {
      std::cout << "0 keys match; nothing to do\n";
    } else if (n > admin::kMaxBatchKeys) {
      std::cout << n << " keys match; nothing done. " << admin::TooManyKeys(n) << "\n";
    } else {
      std::cout << n << " keys match; nothing done. To act on them: the same command with --confirm-count " << n
                << "\n";
    }
    return;
  }
  Result<long long> n = admin::AdminBatchRun(url, c.buckets, batch, flags.confirm_count, ActorOf(actor));
  if (!n && n.error().code() == StatusCode::kFailedPrecondition) Fail(command, n.error().ToString(), 4);
  if (!n && n.error().code() == StatusCode::kInvalidArgument) Fail(command, n.error().message(), 2);
  out["dry_run"] = false;
  out["done"] = Must(std::move(n), command);
  if (c.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << out["done"].get<long long>() << " keys " << done << "\n";
  }
}

// ACCOUNT KEY, or --all-matching without them: fails the command otherwise.
void OneOrAll(const std::string& command, const BatchFlags& b, const std::string& account, const std::string& key) {
  if (b.all_matching && !(account.empty() && key.empty())) {
    Fail(command, "--all-matching selects keys by the filters: give no ACCOUNT KEY", 2);
  }
  if (!b.all_matching && (account.empty() || key.empty())) {
    Fail(command, "give ACCOUNT KEY, or --all-matching with filters", 2);
  }
}

void AddShow(CLI::App* keys, const std::vector<std::shared_ptr<const Flow>>& flows) {
  auto sc = std::make_shared<Common>();
  auto account = std::make_shared<std::string>(), key = std::make_shared<std::string>();
  auto reveal = std::make_shared<bool>(false);
  auto skek = std::make_shared<EncryptionOptions>();
  auto sactor = std::make_shared<std::string>();
  CLI::App* show = keys->add_subcommand(
      "show", "every field of one key, its bodies summarized (--reveal opens them, masked and audited)");
  AddCommon(show, sc.get(), true);
  show->add_option("account", *account)->required();
  show->add_option("key", *key)->required();
  CLI::Option* reveal_flag = show->add_flag(
      "--reveal", *reveal,
      "show the stored request, response and outcomes, with the flow's masked fields as ***; written to the audit "
      "trail");
  AddKek(show, skek.get(), false, reveal_flag);
  AddActor(show, sactor.get());
  show->callback([sc, account, key, flows, reveal, skek, sactor] {
    nlohmann::json row;
    if (*reveal) {
      const std::unique_ptr<seal::Sealer> sealer = MustSealer("keys show", *skek);
      row = Must(admin::AdminKeyReveal(Url(*sc, "keys show"), sc->buckets, *account, *key, *sealer, ActorOf(*sactor)),
                 "keys show");
    } else {
      row = Must(admin::AdminKeyShow(Url(*sc, "keys show"), sc->buckets, *account, *key), "keys show");
    }
    nlohmann::json provider_keys = nlohmann::json::object();
    for (const auto& f : flows) {
      if (f->name() != row["flow"].get<std::string>()) continue;
      // Provider keys are "<stable_id>:<phase>" for the flow's foreign phases.
      for (const std::string& p : admin::ForeignPhases(*f))
        provider_keys[p] = row["stable_id"].get<std::string>() + ":" + p;
    }
    row["provider_keys"] = provider_keys;
    if (sc->json) {
      std::cout << row.dump(2) << "\n";
    } else {
      std::cout << admin::FormatRecord(row);
    }
  });
}

void AddRetry(CLI::App* keys) {
  auto c = std::make_shared<Common>();
  auto account = std::make_shared<std::string>(), key = std::make_shared<std::string>();
  auto verified = std::make_shared<bool>(false);
  auto actor = std::make_shared<std::string>();
  auto batch = std::make_shared<BatchFlags>();
  CLI::App* retry = keys->add_subcommand(
      "retry",
      "put a dead-lettered key (or, verified, one parked for an operator) back to re-drive; or every key "
      "a filter matches (--all-matching)");
  AddCommon(retry, c.get(), true);
  retry->add_option("account", *account);
  retry->add_option("key", *key);
  retry->add_flag("--verified-not-charged", *verified,
                  "for a key in needs_operator: you checked at the provider that the earlier attempt took no "
                  "effect, so sending it again is a first charge (with --all-matching: for every parked key "
                  "that matches)");
  AddBatchFlags(retry, batch.get(), "is dead (with --verified-not-charged, or parked)");
  AddActor(retry, actor.get());
  retry->callback([c, account, key, verified, actor, batch] {
    OneOrAll("keys retry", *batch, *account, *key);
    if (batch->all_matching) {
      admin::Batch b;
      b.action = *verified ? admin::BatchAction::kRetryVerified : admin::BatchAction::kRetry;
      RunBatch("keys retry", *c, *batch, std::move(b), *actor,
               "back to re-drive (failures reset, give-up time counted from now)");
      return;
    }
    const std::string url = Url(*c, "keys retry");
    const std::string point =
        Must(admin::AdminKeyRetry(url, c->buckets, *account, *key, *verified, ActorOf(*actor)), "keys retry");
    std::cout << "key back to re-drive at recovery point " << point
              << " (failures reset, give-up time counted from now; a provider that may have forgotten the key "
                 "is still looked up first, or the key is parked again)\n";
  });
}

void AddRelease(CLI::App* keys) {
  auto c = std::make_shared<Common>();
  auto account = std::make_shared<std::string>(), key = std::make_shared<std::string>();
  auto yes = std::make_shared<bool>(false);
  auto actor = std::make_shared<std::string>();
  auto batch = std::make_shared<BatchFlags>();
  auto owners = std::make_shared<std::vector<std::string>>();
  CLI::App* release =
      keys->add_subcommand("release",
                           "free a key's lease by hand (fenced on its owner); or the expired leases a filter matches "
                           "(--all-matching)");
  AddCommon(release, c.get(), true);
  release->add_option("account", *account);
  release->add_option("key", *key);
  release->add_flag("--yes", *yes, "do not ask for confirmation");
  CLI::Option* all = AddBatchFlags(release, batch.get(), "holds an expired lease (or one of --owner-token's)");
  release
      ->add_option("--owner-token", *owners,
                   "with --all-matching: also free the live leases of this holder (an owner token as `keys list "
                   "--json` shows it; repeatable). No other live lease is freed")
      ->needs(all);
  AddActor(release, actor.get());
  release->callback([c, account, key, yes, actor, batch, owners] {
    OneOrAll("keys release", *batch, *account, *key);
    if (batch->all_matching) {
      admin::Batch b;
      b.action = admin::BatchAction::kRelease;
      b.owner_tokens = *owners;
      RunBatch("keys release", *c, *batch, std::move(b), *actor, "released (due for re-drive at once)");
      return;
    }
    const std::string url = Url(*c, "keys release");
    nlohmann::json row = Must(admin::AdminKeyShow(url, c->buckets, *account, *key), "keys release");
    if (row["owner_token"].is_null()) Fail("keys release", "the key holds no lease", 3);
    const std::string token = row["owner_token"].get<std::string>();
    if (!*yes) {
      std::cerr << "release the lease of " << token << " (expires " << row["lease_expires_at"].get<std::string>()
                << ")? A live holder would be fenced out. [y/N] ";
      std::string answer;
      if (!std::getline(std::cin, answer) || (answer != "y" && answer != "yes"))
        Fail("keys release", "not confirmed", 4);
    }
    Must(admin::AdminKeyRelease(url, c->buckets, *account, *key, token, ActorOf(*actor)), "keys release");
    std::cout << "lease " << token << " released\n";
  });
}

}  // namespace

void AddKeys(CLI::App& app, const std::vector<std::shared_ptr<const Flow>>& flows) {
  CLI::App* keys = app.add_subcommand("keys", "find, inspect, retry and release idempotency keys");
  keys->require_subcommand(1);
  AddList(keys);
  AddShow(keys, flows);
  AddRetry(keys);
  AddRelease(keys);
  AddErase(keys);
  AddRotateKek(keys);
}

}  // namespace phasekey::commands
