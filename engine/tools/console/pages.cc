// Layout, login, overview and flows (key_pages.cc: the keys table, one key,
// confirmations).
#include "console/pages.h"

#include "console/web.h"

namespace phasekey::console {
namespace {

std::string Str(const nlohmann::json& v) {
  if (v.is_null()) return "";
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string Card(const std::string& label, const nlohmann::json& value, bool bad_when_nonzero) {
  const bool bad = bad_when_nonzero && value.is_number() && value.get<long long>() > 0;
  return std::string("<div class=\"card") + (bad ? " bad" : "") + "\"><div class=\"n\">" + Html(Str(value)) +
         "</div><div>" + Html(label) + "</div></div>";
}

}  // namespace

std::string Layout(const PageContext& ctx, const std::string& title, const std::string& body) {
  std::string nav = "<header><span class=\"brand\">phasekey console</span>";
  if (ctx.session != nullptr) {
    nav += "<a href=\"/\">Overview</a><a href=\"/keys\">Keys</a><a href=\"/flows\">Flows</a>";
    if (ctx.read_only) nav += "<span>read-only</span>";
    nav += "<form method=\"post\" action=\"/logout\"><input type=\"hidden\" name=\"csrf\" value=\"" +
           Html(ctx.session->csrf) + "\"><span>" + Html(ctx.session->operator_name) +
           "</span> <button type=\"submit\">Log out</button></form>";
  }
  nav += "</header>";
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + Html(title) +
         " - phasekey console</title><link rel=\"stylesheet\" href=\"/static/console.css\">"
         "<script src=\"/static/console.js\" defer></script></head><body>" +
         nav + "<main><h1>" + Html(title) + "</h1>" + body + "</main></body></html>\n";
}

std::string LoginPage(const std::string& error) {
  std::string body = "<form class=\"login\" method=\"post\" action=\"/login\">";
  if (!error.empty()) body += "<div class=\"notice error\" id=\"login-error\">" + Html(error) + "</div>";
  body +=
      "<label for=\"name\">Your name (for the audit trail)</label>"
      "<input id=\"name\" name=\"name\" autocomplete=\"username\" maxlength=\"100\">"
      "<label for=\"token\">Console token</label>"
      "<input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"current-password\" required>"
      "<button type=\"submit\" id=\"login\">Log in</button></form>";
  return Layout(PageContext{}, "Log in", body);
}

std::string Age(long long s) {
  if (s < 0) s = 0;
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m " + std::to_string(s % 60) + "s";
  if (s < 86400) return std::to_string(s / 3600) + "h " + std::to_string(s % 3600 / 60) + "m";
  return std::to_string(s / 86400) + "d " + std::to_string(s % 86400 / 3600) + "h";
}

std::string KeyHref(const std::string& account, const std::string& key) {
  return Html("/key?account=" + UrlEncode(account) + "&key=" + UrlEncode(key));
}

std::string StateBadge(const std::string& state) {
  return "<span class=\"state-" + Html(state) + "\">" + Html(state) + "</span>";
}

std::string MessagePage(const PageContext& ctx, const std::string& title, const std::string& message) {
  return Layout(ctx, title, "<div class=\"notice error\">" + Html(message) + "</div>");
}

std::string OverviewFragment(const nlohmann::json& summary, const nlohmann::json& by_flow,
                             const nlohmann::json& attention, const nlohmann::json& stranded) {
  const nlohmann::json oldest = summary["oldest_unfinished_age_s"];
  std::string out =
      "<div class=\"cards\">" + Card("stuck", summary["stuck"], true) + Card("dead", summary["dead"], true) +
      Card("needs operator", summary["needs_operator"], true) + Card("due re-drives", summary["due_redrives"], false) +
      Card("oldest unfinished",
           oldest.is_null() ? nlohmann::json("none") : nlohmann::json(Age(oldest.get<long long>())), false) +
      "</div>";
  out += "<h2>Keys by flow and state</h2><table id=\"by-flow\"><tr><th>flow</th><th>state</th><th>keys</th></tr>";
  for (const auto& r : by_flow) {
    const std::string flow = Str(r["flow"]), state = Str(r["state"]);
    out += "<tr><td><a href=\"" + Html("/keys?flow=" + UrlEncode(flow) + "&state=" + UrlEncode(state)) + "\">" +
           Html(flow) + "</a></td><td>" + StateBadge(state) + "</td><td>" + Html(Str(r["count"])) + "</td></tr>";
  }
  if (by_flow.empty()) out += "<tr><td colspan=\"3\">no keys</td></tr>";
  out +=
      "</table><h2>Needs attention</h2><table id=\"attention\"><tr><th>key</th><th>account</th><th>flow</th>"
      "<th>why</th><th>recovery point</th><th>attempts</th><th>age</th><th>last error</th></tr>";
  for (const auto& r : attention) {
    const std::string account = Str(r["account"]), key = Str(r["key"]);
    out += "<tr><td><a class=\"key\" href=\"" + KeyHref(account, key) + "\">" + Html(key) + "</a></td><td>" +
           Html(account) + "</td><td>" + Html(Str(r["flow"])) + "</td><td>" + StateBadge(Str(r["why"])) + "</td><td>" +
           Html(Str(r["recovery_point"])) + "</td><td>" + Html(Str(r["attempts"])) + "</td><td>" +
           Html(Age(r["age_s"].get<long long>())) + "</td><td class=\"err\">" + Html(Str(r["last_error"])) +
           "</td></tr>";
  }
  if (attention.empty()) out += "<tr><td colspan=\"8\">nothing stuck, dead or parked</td></tr>";
  out += "</table>";
  if (stranded.is_null()) return out;
  out +=
      "<h2>Stranded</h2><p>Active keys at recovery points this binary's flows do not know: another version "
      "of the flow must finish them, or the flow must declare the points (Renamed, Retired).</p>"
      "<table id=\"stranded\"><tr><th>flow</th><th>recovery point</th><th>keys</th><th>longest wait</th></tr>";
  for (const auto& r : stranded) {
    out += "<tr><td>" + Html(Str(r["flow"])) + "</td><td>" + Html(Str(r["recovery_point"])) + "</td><td>" +
           Html(Str(r["keys"])) + "</td><td>" + Html(Age(r["longest_wait_s"].get<long long>())) + "</td></tr>";
  }
  if (stranded.empty()) out += "<tr><td colspan=\"4\">none: every active key is at a point these flows know</td></tr>";
  return out + "</table>";
}

std::string OverviewPage(const PageContext& ctx, const std::string& fragment) {
  return Layout(ctx, "Overview", "<div id=\"live\" data-refresh=\"/overview/live\">" + fragment + "</div>");
}

std::string FlowsPage(const PageContext& ctx, const std::vector<FlowView>& flows,
                      const nlohmann::json& unknown_counts) {
  std::string body;
  if (flows.empty()) {
    body +=
        "<div class=\"notice\">This binary knows no flows, so it cannot draw their graphs; run the console "
        "of your application's binary (for the example: <code>ride_booking console</code>). Counts of "
        "every flow in the database follow.</div>";
  }
  auto counts_table = [](const nlohmann::json& rows, bool with_flow) {
    std::string t = "<table><tr>";
    if (with_flow) t += "<th>flow</th>";
    t += "<th>recovery point</th><th>state</th><th>keys</th></tr>";
    for (const auto& r : rows) {
      t += "<tr>";
      if (with_flow) t += "<td>" + Html(Str(r["flow"])) + "</td>";
      t += "<td>" + Html(Str(r["recovery_point"])) + "</td><td>" + StateBadge(Str(r["state"])) + "</td><td>" +
           Html(Str(r["count"])) + "</td></tr>";
    }
    if (rows.empty()) t += "<tr><td colspan=\"4\">no keys</td></tr>";
    return t + "</table>";
  };
  for (const FlowView& f : flows) {
    body += "<h2>" + Html(f.name) + "</h2>";
    body += f.svg.empty() ? "<p>" + Html(f.note) + "</p>" : "<div class=\"graph\">" + f.svg + "</div>";
    body += counts_table(f.counts, false);
  }
  if (!unknown_counts.empty()) {
    body += "<h2>" +
            std::string(flows.empty() ? "Keys per flow and recovery point" : "Flows this binary does not know") +
            "</h2>" + counts_table(unknown_counts, true);
  }
  return Layout(ctx, "Flows", body);
}

}  // namespace phasekey::console
