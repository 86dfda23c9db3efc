// The console's batch actions (console_impl.h): the keys page's filter,
// counted and confirmed on GET /keys/batch, acted on by POST /keys/batch
// with the count the operator saw, through the CLI's functions
// (admin/key_batch.h), so `keys retry/release --all-matching` and the
// console follow the same rules and write the same audit rows.
#include <charconv>

#include "admin/key_batch.h"
#include "console/console_impl.h"
#include "console/key_filter_form.h"
#include "console/web.h"

namespace phasekey::console {
namespace {

std::string Field(const std::map<std::string, std::string>& m, const std::string& name) {
  auto it = m.find(name);
  return it == m.end() ? "" : it->second;
}

// The batch `action` names; false for none of retry, retry_verified, release.
bool ActionOf(const std::string& action, admin::BatchAction* out) {
  if (action == "retry") {
    *out = admin::BatchAction::kRetry;
  } else if (action == "retry_verified") {
    *out = admin::BatchAction::kRetryVerified;
  } else if (action == "release") {
    *out = admin::BatchAction::kRelease;  // expired leases only: the console names no holder
  } else {
    return false;
  }
  return true;
}

Response Refused(const PageContext& ctx) {
  return Respond(403, MessagePage(ctx, "Refused", "This console is read-only."));
}

}  // namespace

Response ConsoleServer::Impl::BatchConfirm(const PageContext& ctx, const std::map<std::string, std::string>& query) {
  if (ctx.read_only) return Refused(ctx);
  admin::Batch batch;
  if (!ActionOf(Field(query, "action"), &batch.action)) {
    return Respond(400, MessagePage(ctx, "Bad request", "No such action."));
  }
  if (std::string why = FilterFromForm(query, &batch.filter); !why.empty()) return BadFilter(why);
  auto count = admin::AdminBatchCount(options.database_url, options.buckets, batch);
  if (!count) return Respond(500, MessagePage(ctx, "Failed", count.error().ToString()));
  return Respond(200, BatchConfirmPage(ctx, Field(query, "action"), batch.filter, *count));
}

Response ConsoleServer::Impl::BatchRun(const PageContext& ctx, const std::map<std::string, std::string>& form) {
  if (ctx.read_only) return Refused(ctx);
  const std::string action = Field(form, "action");
  admin::Batch batch;
  if (!ActionOf(action, &batch.action)) return Respond(400, MessagePage(ctx, "Bad request", "No such action."));
  if (std::string why = FilterFromForm(form, &batch.filter); !why.empty()) return BadFilter(why);
  const std::string confirmed_text = Field(form, "confirm_count");
  long long confirmed = -1;
  auto parsed = std::from_chars(confirmed_text.data(), confirmed_text.data() + confirmed_text.size(), confirmed);
  if (parsed.ec != std::errc{} || parsed.ptr != confirmed_text.data() + confirmed_text.size() || confirmed < 0) {
    return Respond(400, MessagePage(ctx, "Bad request", "The confirmed count is missing or malformed."));
  }
  if (batch.action == admin::BatchAction::kRetryVerified && Field(form, "verified") != "yes") {
    return Respond(400, MessagePage(ctx, "Refused", "Not confirmed as verified at the provider."));
  }
  // One transaction for the keys and the one audit row; refused, with
  // nothing changed, when the keys that match are no longer as many.
  auto done = admin::AdminBatchRun(options.database_url, options.buckets, batch, confirmed,
                                   admin::Actor{ctx.session->operator_name});
  const std::string filters = FilterQuery(batch.filter);
  if (!done && done.error().code() == StatusCode::kFailedPrecondition) {
    return Respond(409, MessagePage(ctx, "Not done",
                                    done.error().message() + " Count again: /keys/batch?action=" + action + filters));
  }
  if (!done && done.error().code() == StatusCode::kInvalidArgument) {
    return Respond(400, MessagePage(ctx, "Not done", done.error().message()));
  }
  if (!done) return Respond(500, MessagePage(ctx, "Not done", done.error().ToString()));
  return Redirect("/keys?batch=" + action + "&batch_done=" + std::to_string(*done) + filters);
}

}  // namespace phasekey::console
