#include "console/key_filter_form.h"

#include <charconv>
#include <optional>
#include <utility>
#include <vector>

#include "console/web.h"

namespace phasekey::console {
namespace {

std::optional<std::string> NonEmpty(const std::map<std::string, std::string>& m, const std::string& name) {
  auto it = m.find(name);
  if (it == m.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

// Seconds as given in `field`: false when not a whole number of seconds.
bool Seconds(const std::string& text, long long* out) {
  const char* end = text.data() + text.size();
  auto r = std::from_chars(text.data(), end, *out);
  return r.ec == std::errc{} && r.ptr == end && *out >= 0;
}

// The filter's fields by name, as text (only those given).
std::vector<std::pair<std::string, std::string>> Fields(const admin::KeyFilter& f) {
  std::vector<std::pair<std::string, std::string>> out;
  auto put = [&](const char* name, const std::optional<std::string>& v) {
    if (v) out.emplace_back(name, *v);
  };
  put("state", f.state);
  put("flow", f.flow);
  put("account", f.account);
  put("recovery_point", f.recovery_point);
  put("error_class", f.error_class);
  if (f.older_than.count() > 0) out.emplace_back("older_than_s", std::to_string(f.older_than.count()));
  if (f.newer_than) out.emplace_back("newer_than_s", std::to_string(f.newer_than->count()));
  return out;
}

std::string Select(const std::string& name, const std::vector<std::string>& values,
                   const std::optional<std::string>& selected) {
  std::string out = "<div><label for=\"" + name + "\">" + name + "</label><select id=\"" + name + "\" name=\"" + name +
                    "\"><option value=\"\">any</option>";
  for (const std::string& v : values) {
    out += "<option value=\"" + Html(v) + "\"" + (selected == v ? " selected" : "") + ">" + Html(v) + "</option>";
  }
  return out + "</select></div>";
}

std::string Input(const std::string& label, const std::string& name, const std::string& value) {
  return "<div><label for=\"" + name + "\">" + label + "</label><input id=\"" + name + "\" name=\"" + name +
         "\" value=\"" + Html(value) + "\"></div>";
}

}  // namespace

std::string FilterFromForm(const std::map<std::string, std::string>& form, admin::KeyFilter* out) {
  *out = admin::KeyFilter{};
  out->state = NonEmpty(form, "state");
  out->flow = NonEmpty(form, "flow");
  out->account = NonEmpty(form, "account");
  out->recovery_point = NonEmpty(form, "recovery_point");
  out->error_class = NonEmpty(form, "error_class");
  long long s = 0;
  if (auto older = NonEmpty(form, "older_than_s")) {
    if (!Seconds(*older, &s)) return "older_than_s '" + *older + "' is not a whole number of seconds";
    out->older_than = std::chrono::seconds(s);
  }
  if (auto newer = NonEmpty(form, "newer_than_s")) {
    if (!Seconds(*newer, &s)) return "newer_than_s '" + *newer + "' is not a whole number of seconds";
    out->newer_than = std::chrono::seconds(s);
  }
  return admin::FilterProblem(*out);
}

std::string FilterQuery(const admin::KeyFilter& f) {
  std::string out;
  for (const auto& [name, value] : Fields(f)) out += "&" + name + "=" + UrlEncode(value);
  return out;
}

std::string FilterHiddenFields(const admin::KeyFilter& f) {
  std::string out;
  for (const auto& [name, value] : Fields(f)) {
    out += "<input type=\"hidden\" name=\"" + name + "\" value=\"" + Html(value) + "\">";
  }
  return out;
}

std::string FilterFormHtml(const admin::KeyFilter& f) {
  return "<form class=\"filters\" method=\"get\" action=\"/keys\">" + Select("state", admin::KeyStates(), f.state) +
         Input("flow", "flow", f.flow.value_or("")) + Input("account", "account", f.account.value_or("")) +
         Input("recovery point", "recovery_point", f.recovery_point.value_or("")) +
         Select("error_class", admin::ErrorClasses(), f.error_class) +
         Input("older than (s)", "older_than_s", f.older_than.count() > 0 ? std::to_string(f.older_than.count()) : "") +
         Input("newer than (s)", "newer_than_s", f.newer_than ? std::to_string(f.newer_than->count()) : "") +
         "<button type=\"submit\">Filter</button></form>";
}

}  // namespace phasekey::console
