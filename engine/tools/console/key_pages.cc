// The keys table, one key's page and the confirmations of actions
// (pages.h).
#include <utility>

#include "console/key_filter_form.h"
#include "console/pages.h"
#include "console/web.h"

namespace phasekey::console {
namespace {

std::string Str(const nlohmann::json& v) {
  if (v.is_null()) return "";
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// The body as stored, pretty-printed when it is JSON.
std::string Pretty(const std::string& text) {
  auto parsed = nlohmann::json::parse(text, nullptr, false);
  return parsed.is_discarded() ? text : parsed.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Row(const std::string& name, const std::string& value) {
  return "<dt>" + Html(name) + "</dt><dd>" + Html(value) + "</dd>";
}

std::string ConfirmLink(const std::string& action, const nlohmann::json& row, const std::string& label) {
  return "<a class=\"action\" id=\"action-" + action + "\" href=\"" +
         Html("/key/confirm?action=" + action + "&account=" + UrlEncode(Str(row["account"])) +
              "&key=" + UrlEncode(Str(row["idempotency_key"]))) +
         "\">" + Html(label) + "</a>";
}

// A stored body's summary (AdminKeyShow): how it is stored and its size.
std::string BodySummary(const nlohmann::json& summary) {
  const std::string stored = Str(summary["stored"]);
  if (stored == "sealed" || stored == "plain") return stored + ", " + Str(summary["bytes"]) + " bytes";
  if (stored == "dropped") return "dropped (the key finished)";
  if (stored == "erased") return "erased (the account was erased)";
  return stored;
}

// The CSRF token and the key, for a form that acts on it.
std::string HiddenKeyFields(const PageContext& ctx, const nlohmann::json& r) {
  return "<input type=\"hidden\" name=\"csrf\" value=\"" + Html(ctx.session->csrf) + "\">" +
         "<input type=\"hidden\" name=\"account\" value=\"" + Html(Str(r["account"])) + "\">" +
         "<input type=\"hidden\" name=\"key\" value=\"" + Html(Str(r["idempotency_key"])) + "\">";
}

}  // namespace

std::string KeysPage(const PageContext& ctx, const KeysQuery& q, const nlohmann::json& rows,
                     const std::string& next_cursor, const std::string& notice) {
  std::string body;
  if (!notice.empty()) body += "<div class=\"notice\" id=\"batch-done\">" + Html(notice) + "</div>";
  body += FilterFormHtml(q.filter);
  const std::string filters = FilterQuery(q.filter);
  if (!ctx.read_only) {
    // Each leads to a confirmation that counts the keys it would change.
    body += "<div class=\"actions\" id=\"batch\">";
    for (const auto& [action, label] : {std::pair<std::string, std::string>{"retry", "Retry the matching dead keys"},
                                        {"retry_verified", "Retry the matching parked keys (verified)"},
                                        {"release", "Release the matching expired leases"}}) {
      body += "<a class=\"action\" id=\"batch-" + action + "\" href=\"" +
              Html("/keys/batch?action=" + action + filters) + "\">" + Html(label) + "</a>";
    }
    body += "</div>";
  }
  body +=
      "<table id=\"keys\"><tr><th>key</th><th>account</th><th>flow</th><th>state</th><th>recovery point</th>"
      "<th>attempts</th><th>age</th><th>error class</th><th>last error</th></tr>";
  for (const auto& r : rows) {
    const std::string account = Str(r["account"]), key = Str(r["key"]);
    body += "<tr><td><a class=\"key\" href=\"" + KeyHref(account, key) + "\">" + Html(key) + "</a></td><td>" +
            Html(account) + "</td><td>" + Html(Str(r["flow"])) + "</td><td>" + StateBadge(Str(r["state"])) +
            "</td><td>" + Html(Str(r["recovery_point"])) + "</td><td>" + Html(Str(r["attempts"])) + "</td><td>" +
            Html(Age(r["age_s"].get<long long>())) + "</td><td>" + Html(Str(r["error_class"])) +
            "</td><td class=\"err\">" + Html(Str(r["last_error"])) + "</td></tr>";
  }
  if (rows.empty()) body += "<tr><td colspan=\"9\">no keys</td></tr>";
  body += "</table><p>";
  if (q.after.bucket >= 0)
    body +=
        "<a href=\"" + Html("/keys?" + filters.substr(std::min<std::size_t>(1, filters.size()))) + "\">First page</a> ";
  if (!next_cursor.empty()) {
    body += "<a id=\"next\" href=\"" + Html("/keys?after=" + UrlEncode(next_cursor) + filters) + "\">Next page</a>";
  }
  return Layout(ctx, "Keys", body + "</p>");
}

std::string KeyPage(const PageContext& ctx, const KeyView& v) {
  const nlohmann::json& r = v.row;
  const std::string state = Str(r["state"]);
  std::string body;
  if (v.done)
    body +=
        "<div class=\"notice\" id=\"done\">Action recorded: its outcome is at the top of the audit trail below.</div>";
  body += "<p>" + StateBadge(state) + " at recovery point <strong id=\"point\">" + Html(Str(r["recovery_point"])) +
          "</strong></p>";
  if (!ctx.read_only) {
    body += "<div class=\"actions\">";
    if (state == "dead") body += ConfirmLink("retry", r, "Retry");
    if (state == "needs_operator") body += ConfirmLink("retry_verified", r, "Retry (verified at the provider)");
    if (state == "active" && !r["owner_token"].is_null()) body += ConfirmLink("release", r, "Release lease");
    body += "</div>";
  }
  body += "<h2>Where it is in its flow</h2>";
  body += v.svg.empty() ? "<p>" + Html(v.graph_note) + "</p>" : "<div class=\"graph\">" + v.svg + "</div>";
  body += "<h2>Audit trail</h2><table id=\"audit\"><tr><th>at</th><th>who</th><th>action</th><th>outcome</th></tr>";
  for (const auto& a : v.audit) {
    body += "<tr><td>" + Html(Str(a["at"])) + "</td><td>" + Html(Str(a["actor"])) + "</td><td>" +
            Html(Str(a["action"])) + "</td><td>" + (a["succeeded"].get<bool>() ? "done: " : "refused: ") +
            Html(Str(a["outcome"])) + "</td></tr>";
  }
  if (v.audit.empty()) body += "<tr><td colspan=\"4\">no operator actions</td></tr>";
  body += "</table>";
  body += "<h2>Fields</h2><dl id=\"fields\">";
  for (const char* name : {"account",
                           "idempotency_key",
                           "flow",
                           "stable_id",
                           "request_method",
                           "request_path",
                           "request_fingerprint",
                           "owner_token",
                           "locked_at",
                           "lease_expires_at",
                           "attempts",
                           "failures",
                           "error_class",
                           "next_attempt_at",
                           "point_reached_at",
                           "rearmed_at",
                           "created_at",
                           "updated_at",
                           "finished_at",
                           "response_status",
                           "trace_id",
                           "trace_parent"}) {
    body += Row(name, Str(r[name]));
  }
  body += "</dl><h2>Last error</h2><pre id=\"last-error\">" + Html(Str(r["last_error"])) + "</pre>";
  // The bodies are summarized; only a reveal (audited) shows them.
  body += "<h2>Stored bodies</h2><dl id=\"bodies\">" + Row("request body", BodySummary(r["request_body"])) +
          Row("response body", BodySummary(r["response_body"]));
  for (const auto& [point, summary] : r["outcomes"].items()) body += Row("outcome at " + point, BodySummary(summary));
  body += "</dl>";
  if (!ctx.read_only) {
    body += "<form method=\"post\" action=\"/key/reveal\">" + HiddenKeyFields(ctx, r) +
            "<p>Bodies hold personal and card data: a reveal shows this key's, with the flow's masked fields as "
            "***, and is written to the audit trail.</p><div class=\"actions\"><button type=\"submit\" "
            "id=\"reveal\">Reveal bodies (audited)</button></div></form>";
  }
  if (r.contains("provider_keys") && !r["provider_keys"].empty()) {
    body += "<h2>Provider keys</h2><pre>" + Html(r["provider_keys"].dump(2)) + "</pre>";
  }
  body += "<h2>Stored response</h2>";
  if (r["response_status"].is_null()) {
    body += "<p>none yet</p>";
  } else {
    body += "<pre id=\"response\">" + Html(Str(r["response_status"]) + "\n" + r["response_headers"].dump(2)) + "</pre>";
  }
  return Layout(ctx, "Key " + Str(r["idempotency_key"]), body);
}

std::string RevealPage(const PageContext& ctx, const nlohmann::json& r) {
  const std::string key = Str(r["idempotency_key"]), account = Str(r["account"]);
  std::string body =
      "<div class=\"notice\" id=\"revealed\">Revealed to you and written to the audit trail. Masked "
      "fields (" +
      Html(r["masked"].empty() ? std::string("none") : r["masked"].dump()) + ") show as ***.</div>";
  body += "<h2>Request body (canonical form, as stored)</h2><pre id=\"request-body\">" +
          Html(r["request_body"].is_null() ? "not stored (dropped once the key finished)"
                                           : Pretty(Str(r["request_body"]))) +
          "</pre>";
  body += "<h2>Outcomes of foreign phases</h2><pre id=\"outcomes\">" + Html(r["outcomes"].dump(2)) + "</pre>";
  body += "<h2>Stored response</h2><pre id=\"response\">";
  if (r["response_status"].is_null()) {
    body += "none yet";
  } else {
    body += Html(Str(r["response_status"]) + "\n" + r["response_headers"].dump(2) + "\n\n" +
                 Pretty(Str(r["response_body"])));
  }
  body += "</pre><p><a href=\"" + KeyHref(account, key) + "\">Back to the key</a></p>";
  return Layout(ctx, "Bodies of key " + key, body);
}

std::string ConfirmPage(const PageContext& ctx, const std::string& action, const nlohmann::json& r) {
  const std::string key = Str(r["idempotency_key"]), account = Str(r["account"]);
  std::string what;
  if (action == "retry") {
    what = "Put dead-lettered key \"" + key + "\" of account \"" + account + "\" back to re-drive at recovery point " +
           Str(r["recovery_point"]) +
           ". Its failures are reset and its give-up time counts from now; the re-drive "
           "worker then resumes it. A provider that may have forgotten the key is looked up first, or the key is "
           "parked again.";
  } else if (action == "retry_verified") {
    what = "Key \"" + key + "\" of account \"" + account +
           "\" is parked for an operator: an earlier attempt of a "
           "foreign phase may have taken effect at the provider. Continue only if you checked at the provider that "
           "it did not: the phase is then sent again as a first attempt, in a new provider window.";
  } else {
    what = "Release the lease of key \"" + key + "\" of account \"" + account + "\", held by " + Str(r["owner_token"]) +
           " until " + Str(r["lease_expires_at"]) +
           ". A live holder would be fenced out; the key becomes due for re-drive at once.";
  }
  std::string body = "<p id=\"what\">" + Html(what) + "</p><form method=\"post\" action=\"/key/action\">" +
                     "<input type=\"hidden\" name=\"csrf\" value=\"" + Html(ctx.session->csrf) + "\">" +
                     "<input type=\"hidden\" name=\"action\" value=\"" + Html(action) + "\">" +
                     "<input type=\"hidden\" name=\"account\" value=\"" + Html(account) + "\">" +
                     "<input type=\"hidden\" name=\"key\" value=\"" + Html(key) + "\">";
  if (action == "release") {
    body += "<input type=\"hidden\" name=\"owner_token\" value=\"" + Html(Str(r["owner_token"])) + "\">";
  }
  if (action == "retry_verified") {
    body +=
        "<p><label><input type=\"checkbox\" name=\"verified\" value=\"yes\" required> I checked at the provider: "
        "nothing took effect</label></p>";
  }
  body += "<div class=\"actions\"><button class=\"danger\" type=\"submit\" id=\"confirm\">Confirm</button> <a href=\"" +
          KeyHref(account, key) + "\">Cancel</a></div></form>";
  return Layout(ctx, "Confirm: " + action + " " + key, body);
}

}  // namespace phasekey::console
