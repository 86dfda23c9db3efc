#include "report/goals.h"

#include <fmt/format.h>

#include <cctype>

namespace phasekey::bench::report {
namespace {

// GitHub's anchor for a heading: lower case, spaces to dashes, other
// punctuation dropped.
std::string Anchor(const std::string& title) {
  std::string a;
  for (unsigned char c : title) {
    if (std::isalnum(c) != 0) {
      a += static_cast<char>(std::tolower(c));
    } else if (c == ' ' || c == '-') {
      a += '-';
    } else if (c >= 0x80) {
      a += static_cast<char>(c);
    }
  }
  return a;
}

}  // namespace

std::string Goals::Render() const {
  int met = 0, missed = 0;
  for (const GoalRow& r : rows_) {
    if (r.met == true) ++met;
    if (r.met == false) ++missed;
  }
  std::string md = fmt::format(
      "## Goals at a glance\n\n"
      "Every speed goal, with this run's figure. Met: {}; missed: {}; not measured or not judged: {}. A missed "
      "goal's last column says what limits it, from the same run's counters; its section has the tables, and "
      "section 8 what each change tried so far bought.\n\n"
      "| figure | goal | this run | status | what limits it |\n|---|---|---|---|---|\n",
      met, missed, static_cast<int>(rows_.size()) - met - missed);
  for (const GoalRow& r : rows_) {
    const std::string status = !r.met   ? (r.measured.empty() ? "not measured" : "not judged")
                               : *r.met ? "met"
                                        : "**missed**";
    md += fmt::format("| [{}](#{}) | {} | {} | {} | {} |\n", r.figure, Anchor(r.section), r.goal,
                      r.measured.empty() ? "-" : r.measured, status, r.met == false ? r.limit : "");
  }
  return md + "\n";
}

}  // namespace phasekey::bench::report
