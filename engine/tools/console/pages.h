// The console's HTML. Every value that comes from the database or the
// request goes through Html() (console/web.h); the pages hold no inline
// script or style. Pure functions of their arguments.
#ifndef PHASEKEY_TOOLS_SRC_CONSOLE_PAGES_H_
#define PHASEKEY_TOOLS_SRC_CONSOLE_PAGES_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "console/console_queries.h"
#include "console/sessions.h"

namespace phasekey::console {

// What every page of a logged-in operator needs.
struct PageContext {
  const Session* session = nullptr;  // null on the login page
  bool read_only = false;
};

// A whole document: the navigation (with a log-out form), `title` and the
// already-escaped `body`.
std::string Layout(const PageContext& ctx, const std::string& title, const std::string& body);
std::string LoginPage(const std::string& error);
// "3h 12m" and the like, from seconds.
std::string Age(long long seconds);
// The link to one key's page (already escaped for an attribute).
std::string KeyHref(const std::string& account, const std::string& key);
// A state as a styled word.
std::string StateBadge(const std::string& state);
// A one-line message page (errors, refusals).
std::string MessagePage(const PageContext& ctx, const std::string& title, const std::string& message);

// The overview's live part: `summary` (ConsoleSummary), `by_flow`
// (AdminStats' by_flow), `attention` (ConsoleAttention) and `stranded`
// (admin::StrandedRows of the binary's flows; null for a binary without
// flows, which shows no such section).
std::string OverviewFragment(const nlohmann::json& summary, const nlohmann::json& by_flow,
                             const nlohmann::json& attention, const nlohmann::json& stranded = nullptr);
std::string OverviewPage(const PageContext& ctx, const std::string& fragment);

// The keys table: `rows` (ConsoleKeysPage, at most one page), the filters
// as given, and the cursor of the next page when there is one. Unless
// read-only, links to the batch actions on the keys the filters match;
// `notice`, when given, says what a batch just did.
std::string KeysPage(const PageContext& ctx, const KeysQuery& query, const nlohmann::json& rows,
                     const std::string& next_cursor, const std::string& notice = "");
// The confirmation of a batch `action` (retry, retry_verified, release) on
// the `count` keys `filter` matches now: a form that posts the filter and
// the count to /keys/batch.
std::string BatchConfirmPage(const PageContext& ctx, const std::string& action, const admin::KeyFilter& filter,
                             long long count);

// One key: `row` (AdminKeyShow plus provider_keys), its audit trail, its
// flow's graph (SVG markup, or why there is none in `graph_note`).
struct KeyView {
  nlohmann::json row;
  nlohmann::json audit;
  std::string svg;
  std::string graph_note;
  bool done = false;  // just after an action: point at the audit trail
};
// The bodies are summarized, never shown; unless read-only, a form offers
// to reveal them (POST /key/reveal).
std::string KeyPage(const PageContext& ctx, const KeyView& view);
// One key's bodies as AdminKeyReveal opened them (masked), answering the
// reveal's POST: never at a URL of its own, so never in history or a link.
std::string RevealPage(const PageContext& ctx, const nlohmann::json& row);
// The confirmation of `action` (retry, retry_verified, release) on `row`.
std::string ConfirmPage(const PageContext& ctx, const std::string& action, const nlohmann::json& row);

struct FlowView {
  std::string name;
  std::string svg;  // empty: see note
  std::string note;
  nlohmann::json counts;  // rows {recovery_point, state, count}
};
// `flows` the binary knows; `unknown_counts` rows of flows it does not.
std::string FlowsPage(const PageContext& ctx, const std::vector<FlowView>& flows, const nlohmann::json& unknown_counts);

}  // namespace phasekey::console

#endif  // PHASEKEY_TOOLS_SRC_CONSOLE_PAGES_H_
