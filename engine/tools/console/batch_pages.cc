// The confirmation of a batch action on the keys a filter matches
// (pages.h).
#include "admin/key_batch.h"
#include "console/key_filter_form.h"
#include "console/pages.h"
#include "console/web.h"

namespace phasekey::console {
namespace {

// "1 key", "3 keys": `noun` in the singular, with its count.
std::string Counted(long long n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}
std::string Match(long long n) { return n == 1 ? " matches" : " match"; }

}  // namespace

std::string BatchConfirmPage(const PageContext& ctx, const std::string& action, const admin::KeyFilter& filter,
                             long long count) {
  const std::string n = std::to_string(count);
  std::string what, button;
  if (action == "retry") {
    what = Counted(count, "dead-lettered key") + Match(count) +
           " the filter. Each goes back to re-drive at its recovery point, failures reset and give-up time "
           "counted from now, as a single retry does.";
    button = "Retry " + Counted(count, "matching key");
  } else if (action == "retry_verified") {
    what = Counted(count, "dead or parked key") + Match(count) +
           " the filter. A parked key's foreign phase may have taken effect at the provider: continue only if you "
           "checked at the provider, for every one of them, that nothing did.";
    button = "Retry " + Counted(count, "matching key") + " (verified)";
  } else {
    what = Counted(count, "key") + Match(count) +
           " the filter with a lease that has expired. Their leases are freed and they are due for re-drive at "
           "once; a live lease is never freed here.";
    button = "Release " + Counted(count, "matching lease");
  }
  nlohmann::json shown = admin::FilterJson(filter);
  std::string body = "<p id=\"what\">" + Html(what) + "</p><p>Filter: <code id=\"filter\">" +
                     Html(shown.empty() ? std::string("none: every key") : shown.dump()) + "</code></p>";
  body += "<p>Confirming acts only if exactly " + Counted(count, "key") + " still" + Match(count) +
          " when it runs; otherwise nothing is done and you are shown the new count. One entry in the "
          "audit trail records the filter and the count.</p>";
  body += "<form method=\"post\" action=\"/keys/batch\"><input type=\"hidden\" name=\"csrf\" value=\"" +
          Html(ctx.session->csrf) + "\"><input type=\"hidden\" name=\"action\" value=\"" + Html(action) +
          "\"><input type=\"hidden\" name=\"confirm_count\" value=\"" + n + "\">" + FilterHiddenFields(filter);
  if (action == "retry_verified") {
    body +=
        "<p><label><input type=\"checkbox\" name=\"verified\" value=\"yes\" required> I checked at the provider: "
        "nothing took effect for any of them</label></p>";
  }
  const std::string back = "/keys?" + FilterQuery(filter).substr(std::min<std::size_t>(1, FilterQuery(filter).size()));
  const bool too_many = count > admin::kMaxBatchKeys;
  if (too_many) body += "<p id=\"too-many\">" + Html(admin::TooManyKeys(count)) + ".</p>";
  body += "<div class=\"actions\"><button class=\"danger\" type=\"submit\" id=\"confirm\"" +
          std::string(count == 0 || too_many ? " disabled" : "") + ">" + Html(button) + "</button> <a href=\"" +
          Html(back) + "\">Cancel</a></div></form>";
  return Layout(ctx, "Confirm: " + action + " " + Counted(count, "key"), body);
}

}  // namespace phasekey::console
