// Reading `ride_booking chaos`'s report back in tests: its "by process"
// table (chaos/processes.h) and its hand-over count.
#ifndef PHASEKEY_TESTS_RIDE_BOOKING_CHAOS_OUTPUT_H_
#define PHASEKEY_TESTS_RIDE_BOOKING_CHAOS_OUTPUT_H_

#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace ride_booking::testing {

struct ProcessRow {
  std::string name;
  int kills = 0;
  long long answered = 0, finished = 0;
};

// The rows of the "by process" table, in order.
inline std::vector<ProcessRow> ProcessRows(const std::string& out) {
  static const std::regex kRow(R"(^  ((?:service|worker)(?:-\d+)?)\s+(\d+)\s+(\d+)\s+(\d+)(?:\s.*)?$)");
  std::vector<ProcessRow> rows;
  std::istringstream in(out);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, kRow)) {
      rows.push_back({m[1].str(), std::stoi(m[2].str()), std::stoll(m[3].str()), std::stoll(m[4].str())});
    }
  }
  return rows;
}

// The count on the "started on one process, finished on another" line; -1
// when the report has none.
inline long long HandedOver(const std::string& out) {
  static const std::regex kLine(R"(started on one process, finished on another\s+(\d+))");
  std::smatch m;
  return std::regex_search(out, m, kLine) ? std::stoll(m[1].str()) : -1;
}

}  // namespace ride_booking::testing

#endif  // PHASEKEY_TESTS_RIDE_BOOKING_CHAOS_OUTPUT_H_
