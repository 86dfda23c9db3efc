// The console's screens and actions (console_impl.h). Reads and actions go
// through the CLI's operator functions (admin/key_admin.h), so the console
// follows the same rules as `phasekey keys retry/release`.
#include <charconv>

#include "admin/key_admin.h"
#include "admin/table.h"
#include "console/console_impl.h"
#include "console/console_queries.h"
#include "console/key_filter_form.h"
#include "console/web.h"
#include "flow/stranded_rows.h"

namespace phasekey::console {
namespace {

constexpr int kPageSize = 50;
constexpr int kAttentionRows = 50;
// AdminStats' window for suspected key regenerations: `phasekey stats`'
// default. The overview shows only its counts by flow and state.
constexpr std::chrono::seconds kRegenerationWindow{600};

std::optional<std::string> NonEmpty(const std::map<std::string, std::string>& m, const std::string& name) {
  auto it = m.find(name);
  if (it == m.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::string Get(const std::map<std::string, std::string>& m, const std::string& name) {
  return NonEmpty(m, name).value_or("");
}

// "<bucket>.<bytes of the account>.<account><key>" (account and key may
// both hold dots, so the account's length says where it ends) into a
// cursor; false when malformed.
bool ParseCursor(const std::string& text, KeysCursor* out) {
  const std::size_t dot1 = text.find('.');
  const std::size_t dot2 = dot1 == std::string::npos ? dot1 : text.find('.', dot1 + 1);
  if (dot2 == std::string::npos) return false;
  const char* b = text.data();
  std::size_t account_size = 0;
  auto r1 = std::from_chars(b, b + dot1, out->bucket);
  auto r2 = std::from_chars(b + dot1 + 1, b + dot2, account_size);
  if (r1.ec != std::errc{} || r1.ptr != b + dot1 || r2.ec != std::errc{} || r2.ptr != b + dot2 || out->bucket < 0 ||
      account_size > text.size() - dot2 - 1) {
    return false;
  }
  out->account = text.substr(dot2 + 1, account_size);
  out->key = text.substr(dot2 + 1 + account_size);
  return true;
}

std::string CursorOf(const nlohmann::json& row) {
  const std::string account = row["account"].get<std::string>();
  return std::to_string(row["bucket"].get<int>()) + "." + std::to_string(account.size()) + "." + account +
         row["key"].get<std::string>();
}

Response Failed(const PageContext& ctx, const Status& s) {
  return Respond(s.code() == StatusCode::kNotFound ? 404 : 500, MessagePage(ctx, "Failed", s.ToString()));
}

}  // namespace

const Flow* ConsoleServer::Impl::FindFlow(const std::string& name) const {
  for (const auto& f : options.flows) {
    if (f->name() == name) return f.get();
  }
  return nullptr;
}

Response ConsoleServer::Impl::Overview(const PageContext& ctx, bool fragment_only) {
  auto summary = ConsoleSummary(options.database_url);
  if (!summary) return Failed(ctx, summary.error());
  auto stats = admin::AdminStats(options.database_url, kRegenerationWindow);
  if (!stats) return Failed(ctx, stats.error());
  auto attention = ConsoleAttention(options.database_url, kAttentionRows);
  if (!attention) return Failed(ctx, attention.error());
  nlohmann::json stranded = nullptr;  // a binary without flows cannot tell
  if (!options.flows.empty()) {
    auto points = FindStrandedKeys(options.database_url, options.flows);
    if (!points) return Failed(ctx, points.error());
    stranded = admin::StrandedRows(*points);
  }
  std::string fragment = OverviewFragment(*summary, (*stats)["by_flow"], *attention, stranded);
  return Respond(200, fragment_only ? fragment : OverviewPage(ctx, fragment));
}

Response ConsoleServer::Impl::Keys(const PageContext& ctx, const std::map<std::string, std::string>& query) {
  KeysQuery q;
  if (std::string why = FilterFromForm(query, &q.filter); !why.empty()) return BadFilter(why);
  if (auto after = NonEmpty(query, "after"); after && !ParseCursor(*after, &q.after)) {
    return Respond(400, MessagePage(ctx, "Bad request", "The page cursor is malformed."));
  }
  q.limit = kPageSize + 1;  // one more tells whether there is a next page
  auto rows = ConsoleKeysPage(options.database_url, q);
  if (!rows) return Failed(ctx, rows.error());
  std::string next;
  if (rows->size() > static_cast<std::size_t>(kPageSize)) {
    rows->erase(rows->end() - 1);
    next = CursorOf(rows->back());
  }
  std::string notice;
  if (auto done = NonEmpty(query, "batch_done")) {
    notice = "Batch " + Get(query, "batch") + " done on " + *done + (*done == "1" ? " key" : " keys") +
             "; recorded in the audit trail.";
  }
  return Respond(200, KeysPage(ctx, q, *rows, next, notice));
}

Response ConsoleServer::Impl::Key(const PageContext& ctx, const std::map<std::string, std::string>& query) {
  const std::string account = Get(query, "account"), key = Get(query, "key");
  auto row = admin::AdminKeyShow(options.database_url, options.buckets, account, key);
  if (!row) return Failed(ctx, row.error());
  KeyView view;
  view.row = std::move(*row);
  view.done = query.count("done") > 0;
  const Flow* flow = FindFlow(view.row["flow"].get<std::string>());
  view.row["provider_keys"] = nlohmann::json::object();
  if (flow == nullptr) {
    view.graph_note = "This binary does not know the flow, so it cannot draw its graph.";
  } else {
    for (const std::string& p : admin::ForeignPhases(*flow)) {
      view.row["provider_keys"][p] = view.row["stable_id"].get<std::string>() + ":" + p;
    }
    auto svg = graphs.Svg(HighlightedDot(*flow, view.row["recovery_point"].get<std::string>()));
    if (svg) {
      view.svg = std::move(*svg);
    } else {
      view.graph_note = svg.error().message();
    }
  }
  auto audit = ConsoleAuditForKey(options.database_url, account, key);
  if (!audit) return Failed(ctx, audit.error());
  view.audit = std::move(*audit);
  return Respond(200, KeyPage(ctx, view));
}

Response ConsoleServer::Impl::Confirm(const PageContext& ctx, const std::map<std::string, std::string>& query) {
  if (ctx.read_only) return Respond(403, MessagePage(ctx, "Refused", "This console is read-only."));
  const std::string action = Get(query, "action");
  if (action != "retry" && action != "retry_verified" && action != "release") {
    return Respond(400, MessagePage(ctx, "Bad request", "No such action."));
  }
  auto row = admin::AdminKeyShow(options.database_url, options.buckets, Get(query, "account"), Get(query, "key"));
  if (!row) return Failed(ctx, row.error());
  if (action == "release" && (*row)["owner_token"].is_null()) {
    return Respond(409, MessagePage(ctx, "Nothing to release", "The key holds no lease."));
  }
  return Respond(200, ConfirmPage(ctx, action, *row));
}

Response ConsoleServer::Impl::Flows(const PageContext& ctx) {
  auto counts = ConsolePhaseCounts(options.database_url);
  if (!counts) return Failed(ctx, counts.error());
  std::vector<FlowView> views;
  nlohmann::json unknown = nlohmann::json::array();
  for (const auto& f : options.flows) {
    FlowView v{f->name(), "", "", nlohmann::json::array()};
    auto svg = graphs.Svg(f->ToDot());
    if (svg) {
      v.svg = std::move(*svg);
    } else {
      v.note = svg.error().message();
    }
    views.push_back(std::move(v));
  }
  for (const auto& r : *counts) {
    bool known = false;
    for (FlowView& v : views) {
      if (v.name != r["flow"].get<std::string>()) continue;
      v.counts.push_back(r);
      known = true;
    }
    if (!known) unknown.push_back(r);
  }
  return Respond(200, FlowsPage(ctx, views, unknown));
}

Response ConsoleServer::Impl::Action(const PageContext& ctx, const std::map<std::string, std::string>& form) {
  if (ctx.read_only) return Respond(403, MessagePage(ctx, "Refused", "This console is read-only."));
  const std::string action = Get(form, "action"), account = Get(form, "account"), key = Get(form, "key");
  const std::string& url = options.database_url;
  // Each action writes its audit row in its own transaction (refusals
  // too): an action whose row cannot be written is not done.
  const admin::Actor actor{ctx.session->operator_name};
  Result<std::string> done = Status::InvalidArgument("no such action");
  if (action == "retry") {
    done = admin::AdminKeyRetry(url, options.buckets, account, key, false, actor);
  } else if (action == "retry_verified") {
    if (Get(form, "verified") != "yes") {
      return Respond(400, MessagePage(ctx, "Refused", "Not confirmed as verified at the provider."));
    }
    done = admin::AdminKeyRetry(url, options.buckets, account, key, true, actor);
  } else if (action == "release") {
    done = admin::AdminKeyRelease(url, options.buckets, account, key, Get(form, "owner_token"), actor);
  } else {
    return Respond(400, MessagePage(ctx, "Bad request", "No such action."));
  }
  if (!done && done.error().code() != StatusCode::kNotFound) {
    return Respond(500, MessagePage(ctx, "Not done", done.error().ToString()));
  }
  return Redirect("/key?account=" + UrlEncode(account) + "&key=" + UrlEncode(key) + "&done=1");
}

Response ConsoleServer::Impl::Reveal(const PageContext& ctx, const std::map<std::string, std::string>& form) {
  if (ctx.read_only) {
    return Respond(403, MessagePage(ctx, "Refused", "This console is read-only: it reveals no stored bodies."));
  }
  // Audited in the transaction that reads the bodies, refusals too: a reveal
  // whose row cannot be written shows nothing.
  auto row = admin::AdminKeyReveal(options.database_url, options.buckets, Get(form, "account"), Get(form, "key"),
                                   *sealer, admin::Actor{ctx.session->operator_name});
  if (!row) {
    const StatusCode code = row.error().code();
    const int status = code == StatusCode::kNotFound ? 404 : code == StatusCode::kFailedPrecondition ? 409 : 500;
    return Respond(status, MessagePage(ctx, "Not revealed", row.error().ToString()));
  }
  return Respond(200, RevealPage(ctx, *row));
}

}  // namespace phasekey::console
