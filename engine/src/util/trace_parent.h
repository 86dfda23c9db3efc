// The W3C Trace Context `traceparent` header (Trace Context Level 1,
// https://www.w3.org/TR/trace-context/): the trace a request belongs to and
// the caller's span in it. The engine stores it with the key and writes its
// trace id in every log line about the key (docs/operations.md).
#ifndef PHASEKEY_SRC_UTIL_TRACE_PARENT_H_
#define PHASEKEY_SRC_UTIL_TRACE_PARENT_H_

#include <optional>
#include <string>
#include <string_view>

namespace phasekey::util {

// A traceparent as understood: every field lowercase hex.
struct TraceParent {
  std::string trace_id;   // 32 digits, not all zero
  std::string parent_id;  // 16 digits, not all zero: the caller's span
  std::string flags;      // 2 digits (bit 0: sampled)

  // The version-00 form, "00-<trace_id>-<parent_id>-<flags>" (55 characters):
  // what the key row stores, and what a version-00 vendor sends on.
  std::string Header() const;
  bool operator==(const TraceParent&) const = default;
};

// Parses a traceparent header value (leading and trailing spaces and tabs
// allowed, as HTTP's optional whitespace). Version 00 must be exactly the
// four fields. A later version (01..fe) is read as the spec says: its first
// four fields in version 00's shape, followed by the end or by '-' and
// anything. Version ff, upper-case digits, an all-zero trace or parent id or
// any other shape: nullopt. The spec asks a receiver to ignore an invalid
// value (start a new trace), never to refuse the request.
std::optional<TraceParent> ParseTraceParent(std::string_view value);

}  // namespace phasekey::util

#endif  // PHASEKEY_SRC_UTIL_TRACE_PARENT_H_
