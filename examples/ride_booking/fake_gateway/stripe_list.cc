#include "fake_gateway/stripe_list.h"

#include <algorithm>
#include <optional>

#include "fake_gateway/form.h"

namespace fake_gateway {
namespace {

constexpr int kMaxLimit = 100;

bool Digits(std::string_view text, size_t max) {
  return !text.empty() && text.size() <= max &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Applies one field of the query to *q; a problem when it is not one a list
// takes or its value is malformed.
std::optional<ListProblem> Apply(const std::string& name, const std::string& value, ListQuery* q) {
  if (name == "limit") {
    if (!Digits(value, 3) || std::stoi(value) < 1 || std::stoi(value) > kMaxLimit) {
      return ListProblem{"limit", "limit must be an integer from 1 to 100."};
    }
    q->limit = std::stoi(value);
    return std::nullopt;
  }
  if (name == "starting_after") {
    if (value.empty()) return ListProblem{"starting_after", "starting_after must be an object id."};
    q->starting_after = value;
    return std::nullopt;
  }
  if (name.starts_with("created[") && name.ends_with("]")) {
    if (!Digits(value, 12)) return ListProblem{name, "Invalid integer: " + value};
    const int64_t at = std::stoll(value);
    const std::string op = name.substr(8, name.size() - 9);
    if (op == "gte" || op == "gt") {
      q->created_from = std::max(q->created_from, op == "gt" ? at + 1 : at);
    } else if (op == "lte" || op == "lt") {
      q->created_to = std::min(q->created_to, op == "lt" ? at - 1 : at);
    } else {
      return ListProblem{name, "Received unknown parameter: " + name};
    }
    return std::nullopt;
  }
  return ListProblem{name, "Received unknown parameter: " + name +
                               " (fake_gateway's list takes created[...], limit "
                               "and starting_after)"};
}

}  // namespace

std::variant<ListQuery, ListProblem> ParseListQuery(std::string_view query) {
  const std::optional<FormFields> fields = ParseForm(query);
  if (!fields) return ListProblem{"", "The query string is not valid form encoding."};
  ListQuery q;
  for (const auto& [name, value] : *fields) {
    if (auto problem = Apply(name, value, &q)) return *problem;
  }
  return q;
}

std::variant<ListPage, ListProblem> ListPayments(const std::vector<ChargeRecord>& payments, const ListQuery& query) {
  // Newest first: the ledger's order reversed keeps ties in creation order.
  std::vector<ChargeRecord> listed;
  for (auto it = payments.rbegin(); it != payments.rend(); ++it) {
    if (it->created_at >= query.created_from && it->created_at <= query.created_to) listed.push_back(*it);
  }
  auto from = listed.begin();
  if (!query.starting_after.empty()) {
    from =
        std::find_if(listed.begin(), listed.end(), [&](const ChargeRecord& p) { return p.id == query.starting_after; });
    if (from == listed.end()) {
      return ListProblem{"starting_after", "No such object in this list: '" + query.starting_after + "'", true};
    }
    ++from;
  }
  ListPage page;
  const auto left = static_cast<size_t>(listed.end() - from);
  const auto take = std::min(left, static_cast<size_t>(query.limit));
  page.data.assign(from, from + static_cast<std::ptrdiff_t>(take));
  page.has_more = left > take;
  return page;
}

}  // namespace fake_gateway
