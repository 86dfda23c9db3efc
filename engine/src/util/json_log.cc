#include "util/json_log.h"

#include <unistd.h>

#include <chrono>
#include <ctime>

namespace phasekey {

void LogJson(nlohmann::json entry) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char ts[64];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ms));
  entry["ts"] = ts;
  // Invalid UTF-8 is replaced, never passed through.
  std::string line = entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  [[maybe_unused]] ssize_t n = ::write(2, line.data(), line.size());  // one write: lines never interleave
}

}  // namespace phasekey
