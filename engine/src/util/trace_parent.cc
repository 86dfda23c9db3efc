#include "util/trace_parent.h"

#include <algorithm>

namespace phasekey::util {
namespace {

// Version 00's length: 2 + 1 + 32 + 1 + 16 + 1 + 2.
constexpr std::size_t kVersion00Length = 55;

bool LowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool AllZero(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; });
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string TraceParent::Header() const { return "00-" + trace_id + "-" + parent_id + "-" + flags; }

std::optional<TraceParent> ParseTraceParent(std::string_view value) {
  value = TrimOws(value);
  if (value.size() < kVersion00Length) return std::nullopt;
  const std::string_view version = value.substr(0, 2);
  if (!LowerHex(version) || version == "ff") return std::nullopt;
  // Version 00 is exactly its four fields; a later one may append "-...".
  if (version == "00" ? value.size() != kVersion00Length
                      : value.size() > kVersion00Length && value[kVersion00Length] != '-') {
    return std::nullopt;
  }
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') return std::nullopt;
  TraceParent tp{std::string(value.substr(3, 32)), std::string(value.substr(36, 16)), std::string(value.substr(53, 2))};
  if (!LowerHex(tp.trace_id) || !LowerHex(tp.parent_id) || !LowerHex(tp.flags)) return std::nullopt;
  if (AllZero(tp.trace_id) || AllZero(tp.parent_id)) return std::nullopt;
  return tp;
}

}  // namespace phasekey::util
